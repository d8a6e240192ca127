//! Every view rendered from a fixture `App` into ratatui's `TestBackend`, at 80x24 and 160x48,
//! compared with reviewed snapshots (insta). Also the keys that drive the views.

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use statebench::backend::metrics::{ColumnFamilyLsm, HitRate, LevelSample};
use statebench::config::{Profile, Workload};
use statebench::durability::checkpoint::{ChangelogStatus, CheckpointRecord};
use statebench::engine::{
    CheckpointSample, EngineCommand, MetricsSnapshot, OptionChange, RunState, SavepointFormat,
};
use statebench::pipeline::oracle::ResultError;
use statebench::tui::app::{Action, App, MarkKind, Target, View};
use statebench::tui::event::Restarted;
use statebench::tui::views;

fn hit(rate: f64) -> HitRate {
    HitRate {
        hits: (rate * 1000.0) as u64,
        misses: 1000 - (rate * 1000.0) as u64,
        rate: Some(rate),
    }
}

/// A plausible snapshot number `i` of a run on `flink-default`, deterministic.
fn snapshot(i: u64, slow: f64) -> MetricsSnapshot {
    let mut s = MetricsSnapshot {
        seq: i,
        elapsed_secs: i as f64 + 1.0,
        interval_secs: 1.0,
        state: RunState::Running,
        events: 11_000 * (i + 1),
        records_processed: 11_000 * (i + 1),
        events_in_interval: (11_000.0 / slow) as u64,
        events_per_sec: 11_000.0 / slow + (i % 5) as f64 * 300.0,
        ..MetricsSnapshot::default()
    };
    s.latency.event_latency.p50_us = 31.3 * slow;
    s.latency.event_latency.p99_us = 99.9 * slow;
    s.latency.event_latency.p999_us = 820.0 * slow;
    s.latency.get_latency.p50_us = 2.1 * slow;
    s.latency.get_latency.p99_us = 8.5 * slow;
    s.latency.get_latency.p999_us = 41.0 * slow;
    s.latency.put_latency.p99_us = 5.5;
    s.latency.put_latency.p999_us = 41.0;
    s.latency.put_latency.max_us = 3_700.0;
    let r = &mut s.rocksdb;
    r.stall.share = if slow > 1.0 { 0.012 } else { 0.0 };
    r.stall.causes.l0_file_count_delays = if slow > 1.0 { 45 } else { 0 };
    r.cache.filter = hit(0.977);
    r.cache.index = hit(0.991);
    r.cache.data = hit(0.936 / slow);
    r.cache.overall = hit(0.95);
    r.lookups.filter_block_reads_per_lookup = 0.013;
    r.lookups.filter_bytes_read_per_lookup = 47.0;
    r.lookups.index_block_reads_per_lookup = 0.007;
    r.lookups.index_bytes_read_per_lookup = 181.0;
    r.memory.wbm_usage = 40 << 20;
    r.memory.wbm_capacity = 85 << 20;
    r.memory.block_cache_usage = 150 << 20;
    r.memory.block_cache_capacity = 213 << 20;
    r.lsm.l0_files = 5 + i % 3;
    r.lsm.active_levels = 2;
    r.lsm.live_sst_bytes = 8 << 20;
    r.lsm.pending_compaction_bytes = 2 << 20;
    r.lsm.flushes = 10 + i;
    r.lsm.compactions = 3 + i / 4;
    r.lsm.running_compactions = 1;
    r.io.write_amplification = 0.81;
    r.lsm.column_families = [
        "window-stats",
        "timer-state",
        "_timer_state/event_user-timers",
    ]
    .iter()
    .enumerate()
    .map(|(n, name)| ColumnFamilyLsm {
        name: name.to_string(),
        levels: vec![
            // The first column family's L0 is being compacted (2 of its 4 files).
            LevelSample {
                level: 0,
                files: 4,
                bytes: 800 << 10,
                score: Some(1.0),
                compacting: if n == 0 { 2 } else { 0 },
            },
            LevelSample {
                level: 1,
                files: 1,
                bytes: 3 << 20,
                score: Some(0.2),
                compacting: 0,
            },
        ],
        memtable_bytes: 514 << 10,
        estimated_keys: 142_000,
    })
    .collect();
    let p = &mut s.pipeline;
    p.watermark = 1_767_225_600_000 + (i as i64) * 36_000;
    p.max_event_time = p.watermark + 2_001;
    p.watermark_lag_ms = 2_001;
    p.processing_time = p.watermark + 2_500;
    p.timers_registered = 40_000 * (i + 1);
    p.timers_fired = 30_000 * (i + 1);
    p.partition_lag = vec![0, 0, 0, 0];
    p.result_error = (i % 10 == 9).then_some(ResultError {
        compared: 79_412,
        ..ResultError::default()
    });
    s
}

fn fixture(compare: bool) -> App {
    let mut app = App::new(
        Workload::load("smoke").unwrap(),
        Profile::load("flink-default").unwrap(),
        compare.then(|| Profile::load("minutes-wbm-sized").unwrap()),
    );
    for i in 0..30 {
        let mut s = snapshot(i, 1.0);
        // A live change appears once, in the snapshot of the interval it happened in.
        if i == 12 {
            s.changes = vec![OptionChange {
                at_secs: 12.5,
                key: "writebuffer.size".into(),
                value: "8mb".into(),
                applied: true,
                detail: "write_buffer_size=8388608 in OPTIONS-000197".into(),
            }];
        }
        app.on_snapshot(Target::A, s);
        if compare {
            app.on_snapshot(Target::B, snapshot(i, 1.6));
        }
    }
    app
}

fn render(app: &App, width: u16, height: u16) -> String {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    terminal.draw(|f| views::render(app, f)).unwrap();
    terminal.backend().to_string()
}

#[test]
fn every_view_renders_at_80x24_and_160x48() {
    for (view, compare) in [
        (View::Dashboard, false),
        (View::Lsm, false),
        (View::Profile, false),
        (View::Compare, true),
    ] {
        let mut app = fixture(compare);
        app.view = view;
        for (w, h) in [(80, 24), (160, 48)] {
            let name = format!("{}_{w}x{h}", view.title().replace('/', "").to_lowercase());
            insta::assert_snapshot!(name, render(&app, w, h));
        }
    }
}

#[test]
fn help_and_small_terminals_render() {
    let mut app = fixture(false);
    app.help = true;
    insta::assert_snapshot!("help_80x24", render(&app, 80, 24));
    insta::assert_snapshot!("help_160x48", render(&app, 160, 48));
    app.help = false;
    // Below 80x24 the essentials still show, and nothing panics down to a tiny terminal.
    insta::assert_snapshot!("compact_60x12", render(&app, 60, 12));
    for (w, h) in [(1, 1), (10, 3), (79, 23), (20, 40)] {
        render(&app, w, h);
    }
}

/// The text of a rendered screen without the panels' borders and padding: what a reader
/// sees, each panel line by line.
fn words(screen: &str) -> String {
    screen
        .lines()
        .flat_map(|l| l.trim_matches('"').split('│'))
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn the_help_overlay_shows_every_key_in_full_or_says_what_is_cut() {
    let mut app = fixture(false);
    app.help = true;
    let note = "live knobs apply at once; numbered marks show them on the chart";
    for (w, h) in [(160, 48), (80, 24)] {
        let screen = words(&render(&app, w, h));
        assert!(screen.contains(note), "{w}x{h}:\n{screen}");
        for (key, what) in views::help::KEYS {
            assert!(
                screen.contains(&format!("{key:<12} {what}")),
                "{w}x{h}: '{key}' cut:\n{screen}"
            );
        }
        assert!(!screen.contains("more lines"), "{w}x{h}:\n{screen}");
    }
    // Narrower: the descriptions wrap (every word is there); shorter: the last line says how
    // many lines are hidden and how to see them.
    let narrow = words(&render(&app, 50, 40));
    assert!(
        narrow.contains("fail the job: restart from the\nlast checkpoint"),
        "{narrow}"
    );
    assert!(!narrow.contains("more lines"), "{narrow}");
    let short = render(&app, 80, 12);
    assert!(
        short.contains("… 7 more lines: enlarge the terminal"),
        "{short}"
    );
}

#[test]
fn the_stall_panel_says_which_time_each_number_is_of() {
    let mut app = fixture(false);
    let mut s = snapshot(30, 1.0);
    // Two thirds of the last interval stalled; at the sample's moment RocksDB was not.
    s.rocksdb.stall.share = 0.669;
    s.rocksdb.stall.causes.memtable_limit_stops = 3;
    app.on_snapshot(Target::A, s);
    let wide = render(&app, 160, 48);
    assert!(
        wide.contains("66.9% of interval stalled · now: not stalled"),
        "{wide}"
    );
    assert!(
        wide.contains("run delay/stop L0 0/0 mem 0/3 pend 0/0"),
        "{wide}"
    );
    let narrow = render(&app, 80, 24);
    assert!(
        narrow.contains("66.9% of interval · now: not stalled"),
        "{narrow}"
    );
    for screen in [wide, narrow] {
        assert!(!screen.contains("of time stalled"), "{screen}");
    }
}

#[test]
fn a_cache_never_looked_up_reads_n_a_and_a_rate_of_few_lookups_says_how_few() {
    let mut app = fixture(false);
    let mut s = snapshot(30, 1.0);
    // No filter block looked up (null in the JSON); the index looked up twice, both misses
    // (RocksDB opening a new file), which is not an index that always misses.
    s.rocksdb.cache.filter = HitRate::default();
    s.rocksdb.cache.index = HitRate::new(0, 2);
    app.on_snapshot(Target::A, s);
    let json = serde_json::to_value(app.a.history.back().unwrap()).unwrap();
    assert!(json["rocksdb"]["cache"]["filter"]["rate"].is_null());
    for (w, h) in [(80, 24), (160, 48)] {
        let screen = render(&app, w, h);
        let line = |label: &str| {
            screen
                .lines()
                .find(|l| l.contains(&format!("│{label:<7}")))
                .unwrap_or_else(|| panic!("no {label} gauge:\n{screen}"))
                .to_string()
        };
        assert!(line("filter").contains(" n/a "), "{w}x{h}:\n{screen}");
        assert!(!line("filter").contains('%'), "{w}x{h}:\n{screen}");
        assert!(line("index").contains(" 0.0% of 2"), "{w}x{h}:\n{screen}");
        // Many lookups: the rate alone, as before.
        assert!(line("data").contains(" 93.6% "), "{w}x{h}:\n{screen}");
    }
}

/// A run on `minutes-wbm-starved` whose snapshots show its trouble: the WriteBufferManager
/// full while memtables stay small, and 10 % of the running time stalled at the L0 trigger.
fn starved_fixture() -> App {
    let mut app = App::new(
        Workload::load("smoke").unwrap(),
        Profile::load("minutes-wbm-starved").unwrap(),
        None,
    );
    for i in 0..30 {
        let mut s = snapshot(i, 1.0);
        let r = &mut s.rocksdb;
        r.memory.wbm_capacity = 3 << 20;
        r.memory.wbm_usage = 3 << 20;
        r.memory.memtable_bytes = 600 << 10;
        r.stall.micros = 100_000;
        r.stall.share = 0.1;
        r.stall.causes.l0_file_count_delays = 40 * (i + 1);
        r.tickers.stall_micros = 100_000 * (i + 1);
        app.on_snapshot(Target::A, s);
    }
    app
}

#[test]
fn the_advisor_view_shows_live_findings_and_applies_a_fix() {
    let mut app = starved_fixture();
    app.update(key(KeyCode::Char('5')));
    assert_eq!(app.view, View::Advisor);
    let ids: Vec<&str> = app.a.findings.iter().map(|f| f.id).collect();
    assert_eq!(ids[..2], ["wbm-budget", "write-stalls"], "{ids:?}");
    for (w, h) in [(80, 24), (160, 48)] {
        insta::assert_snapshot!(format!("advisor_{w}x{h}"), render(&app, w, h));
    }
    // wbm-budget's fix costs no memory (a larger write-buffer ratio and a write buffer that
    // fits the budget per state) and is live: a applies it at once.
    match app.update(key(KeyCode::Char('a'))).as_slice() {
        [
            Action::Send(Target::A, EngineCommand::Apply { knob, value }),
            Action::Send(
                Target::A,
                EngineCommand::Apply {
                    knob: k2,
                    value: v2,
                },
            ),
        ] => {
            assert_eq!(
                (knob.key(), value.as_str()),
                ("memory.write-buffer-ratio", "0.5")
            );
            assert_eq!((k2.key(), v2.as_str()), ("writebuffer.size", "2mb"));
        }
        other => panic!("{other:?}"),
    }
    assert!(!app.status.contains("managed memory"), "{}", app.status);
    // write-stalls at the L0 trigger: more background threads, which needs a reopen: it asks,
    // and y restarts on the fixed profile.
    app.update(key(KeyCode::Down));
    assert!(app.update(key(KeyCode::Char('a'))).is_empty());
    assert!(app.status.contains("needs a reopen"), "{}", app.status);
    match app.update(key(KeyCode::Char('y'))).as_slice() {
        [Action::Restart(profile, label)] => {
            assert_eq!(profile.knobs.background_jobs, 4);
            assert_eq!(label, "thread.num=4");
        }
        other => panic!("{other:?}"),
    }
    // n keeps the running profile.
    app.update(key(KeyCode::Char('a')));
    assert!(app.update(key(KeyCode::Char('n'))).is_empty());
    assert!(app.status.contains("not applied"), "{}", app.status);
}

/// Snapshot `i` of a run on flink-default whose writes stall on the memtable limit (300 ms a
/// second) while `stalling`, with RocksDB's cumulative counters as the engine reports them.
fn stalling_snapshot(i: u64, stalled_so_far: u64, stalling: bool) -> MetricsSnapshot {
    let mut s = snapshot(i, 1.0);
    let r = &mut s.rocksdb;
    r.stall.micros = if stalling { 300_000 } else { 0 };
    r.stall.share = if stalling { 0.3 } else { 0.0 };
    r.stall.causes = Default::default();
    r.stall.causes.memtable_limit_stops = stalled_so_far;
    r.tickers.stall_micros = stalled_so_far * 300_000;
    s
}

#[test]
fn a_fix_is_judged_on_the_intervals_after_it_and_never_applied_twice_on_old_evidence() {
    let mut app = App::new(
        Workload::load("smoke").unwrap(),
        Profile::load("flink-default").unwrap(),
        None,
    );
    let mut stalled = 0;
    for i in 0..10 {
        stalled += 1;
        app.on_snapshot(Target::A, stalling_snapshot(i, stalled, true));
    }
    app.update(key(KeyCode::Char('5')));
    let at = |app: &App, id: &str| app.a.findings.iter().position(|f| f.id == id);
    app.editor.finding = at(&app, "write-stalls").expect("write-stalls found");
    let sent = app.update(key(KeyCode::Char('a')));
    match sent.as_slice() {
        [Action::Send(Target::A, EngineCommand::Apply { knob, value })] => {
            assert_eq!((knob.key(), value.as_str()), ("writebuffer.count", "3"));
        }
        other => panic!("{other:?}"),
    }
    // Pressed again before RocksDB confirmed it: refused.
    assert!(app.update(key(KeyCode::Char('a'))).is_empty());
    assert!(app.status.contains("on its way"), "{}", app.status);
    // The change goes in at 10.5 s and the stalls end with it.
    let mut s = stalling_snapshot(10, stalled, false);
    s.changes = vec![OptionChange {
        at_secs: 10.5,
        key: "writebuffer.count".into(),
        value: "3".into(),
        applied: true,
        detail: "max_write_buffer_number=3".into(),
    }];
    app.on_snapshot(Target::A, s);
    assert_eq!(app.a.profile.knobs.max_write_buffer_number, 3);
    // Too few intervals after it to judge: no finding, and nothing to apply again.
    for i in 11..15 {
        assert!(app.a.findings.is_empty(), "{:?}", app.a.findings);
        assert!(app.a.judging.is_some());
        assert!(app.update(key(KeyCode::Char('a'))).is_empty());
        app.on_snapshot(Target::A, stalling_snapshot(i, stalled, false));
    }
    // Five clean intervals after it: the stalls before the change are not a finding any more,
    // so writebuffer.count is not offered 4.
    app.on_snapshot(Target::A, stalling_snapshot(15, stalled, false));
    assert!(app.a.judging.is_none());
    assert_eq!(at(&app, "write-stalls"), None, "{:?}", app.a.findings);
    // Had the stalls gone on, the run after the change would show them: renewed evidence,
    // and the next step is offered.
    for i in 16..22 {
        stalled += 1;
        app.on_snapshot(Target::A, stalling_snapshot(i, stalled, true));
    }
    let i = at(&app, "write-stalls").expect("the stalls after the change are a finding");
    assert!(app.a.findings[i].from_secs > 10.5);
    assert_eq!(app.a.findings[i].recommendation[0].value, "4");
    app.editor.finding = i;
    assert_eq!(
        app.update(key(KeyCode::Char('a'))).len(),
        1,
        "{}",
        app.status
    );
}

fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

#[test]
fn keys_switch_views_edit_knobs_and_quit() {
    let mut app = fixture(false);
    for (k, view) in [
        ('2', View::Lsm),
        ('3', View::Profile),
        ('4', View::Compare),
        ('1', View::Dashboard),
    ] {
        app.update(key(KeyCode::Char(k)));
        assert_eq!(app.view, view);
    }
    assert!(app.marks.iter().any(|m| m.label == "writebuffer.size=8mb"));
    // Live knob: Enter, type, Enter -> an Apply command for engine A with the edited profile.
    app.update(key(KeyCode::Char('3')));
    let row = |name: &str| {
        statebench::config::profile::KNOBS
            .iter()
            .position(|k| k.key == name)
            .unwrap()
    };
    while app.editor.selected < row("writebuffer.count") {
        app.update(key(KeyCode::Down));
    }
    app.update(key(KeyCode::Enter));
    assert_eq!(app.editor.input.as_deref(), Some("2"));
    app.update(key(KeyCode::Backspace));
    app.update(key(KeyCode::Char('4')));
    let actions = app.update(key(KeyCode::Enter));
    match actions.as_slice() {
        [Action::Send(Target::A, EngineCommand::Apply { knob, value })] => {
            assert_eq!((knob.key(), value.as_str()), ("writebuffer.count", "4"));
        }
        other => panic!("{other:?}"),
    }
    // A bad value is refused in the UI with the reason, nothing is sent.
    app.update(key(KeyCode::Enter));
    app.update(key(KeyCode::Char('x')));
    assert!(app.update(key(KeyCode::Enter)).is_empty());
    assert!(app.status.contains("not applied"), "{}", app.status);
    // A knob that needs a reopen asks first; y restarts on the new profile.
    while app.editor.selected < row("block.blocksize") {
        app.update(key(KeyCode::Down));
    }
    while app.editor.selected > row("block.blocksize") {
        app.update(key(KeyCode::Up));
    }
    app.update(key(KeyCode::Enter));
    for _ in 0..3 {
        app.update(key(KeyCode::Backspace));
    }
    for c in "16kb".chars() {
        app.update(key(KeyCode::Char(c)));
    }
    assert!(app.update(key(KeyCode::Enter)).is_empty());
    assert!(app.status.contains("needs a reopen"), "{}", app.status);
    match app.update(key(KeyCode::Char('y'))).as_slice() {
        [Action::Restart(profile, label)] => {
            assert_eq!(profile.knobs.block_size.0, 16 << 10);
            assert_eq!(label, "block.blocksize=16kb");
        }
        other => panic!("{other:?}"),
    }
    // s asks for a format: f saves as Flink configuration; any other key cancels.
    assert!(app.update(key(KeyCode::Char('s'))).is_empty());
    assert!(app.status.contains("y YAML, f Flink"), "{}", app.status);
    match app.update(key(KeyCode::Char('f'))).as_slice() {
        [Action::Save(statebench::export::Format::Flink)] => {}
        other => panic!("{other:?}"),
    }
    app.update(key(KeyCode::Char('s')));
    assert!(app.update(key(KeyCode::Char('x'))).is_empty());
    assert_eq!(app.status, "not saved");
    // p pauses, q quits.
    match app.update(key(KeyCode::Char('p'))).as_slice() {
        [Action::Pause] => {}
        other => panic!("{other:?}"),
    }
    app.update(key(KeyCode::Char('1')));
    assert!(matches!(
        app.update(key(KeyCode::Char('q'))).as_slice(),
        [Action::Quit]
    ));
}

#[test]
fn a_restart_continues_the_time_axis_and_is_marked_where_it_happened() {
    let mut app = fixture(false);
    let before = app.a.now_secs();
    assert_eq!(before, 30.0);
    // The engine's outcome has one live change more than its snapshots brought (its last
    // snapshot did not reach the TUI before the restart): it is marked all the same.
    let seen = OptionChange {
        at_secs: 12.5,
        key: "writebuffer.size".into(),
        value: "8mb".into(),
        applied: true,
        detail: String::new(),
    };
    let unseen = OptionChange {
        at_secs: 29.5,
        key: "writebuffer.count".into(),
        value: "4".into(),
        ..seen.clone()
    };
    app.on_restart(
        Restarted {
            profile: Profile::load("flink-default").unwrap(),
            at_secs: before,
            changes: vec![seen, unseen],
        },
        "block.blocksize=16kb".into(),
    );
    assert_eq!(app.marks.len(), 3, "{:?}", app.marks);
    assert_eq!(app.marks[1].label, "writebuffer.count=4");
    // The new engine's clock starts again at zero; the axis does not.
    app.on_snapshot(Target::A, snapshot(0, 1.0));
    assert_eq!(app.a.now_secs(), before + 1.0);
    let mark = app.marks.last().unwrap();
    assert_eq!(
        (mark.at_secs, mark.label.as_str()),
        (before, "restart block.blocksize=16kb")
    );
    let screen = render(&app, 80, 24);
    let lines: Vec<&str> = screen.lines().collect();
    // The legend names each numbered mark; the row above it places them.
    let legend = lines
        .iter()
        .position(|l| l.contains("3:restart block.blocksize=16kb"))
        .unwrap_or_else(|| panic!("no legend, or the restart not named in it:\n{screen}"));
    // At 80 columns not every name fits: the restart is named (the rate's break is read by
    // it), the live changes are counted; at 160 all are named.
    assert!(
        lines[legend].contains("3:restart block.blocksize=16kb +2 more"),
        "{screen}"
    );
    let wide = render(&app, 160, 48);
    assert!(
        wide.contains(
            "1:writebuffer.size=8mb 2:writebuffer.count=4 3:restart block.blocksize=16kb"
        ),
        "{wide}"
    );
    // The live change at 12.5 s, and the second one and the restart under the old run's last
    // sample (chart column 29, the restart's number drawn over the change's), not at the start
    // of the axis.
    let columns: Vec<(usize, char)> = lines[legend - 1]
        .chars()
        .skip(2) // the quote and the panel's border
        .take(36)
        .enumerate()
        .filter(|(_, c)| c.is_ascii_digit())
        .collect();
    assert_eq!(columns, [(12, '1'), (29, '3')], "{screen}");
}

#[test]
fn a_failure_is_marked_and_always_named_in_the_legend() {
    let mut app = fixture(false);
    for i in 30..40 {
        let mut s = snapshot(i, 1.0);
        s.pipeline.checkpoints = Some(CheckpointSample {
            restarts: u64::from(i >= 35),
            ..CheckpointSample::default()
        });
        if i == 32 {
            s.changes = ["writebuffer.count=3", "writebuffer.count=4"]
                .iter()
                .map(|kv| {
                    let (key, value) = kv.split_once('=').unwrap();
                    OptionChange {
                        at_secs: 32.5,
                        key: key.into(),
                        value: value.into(),
                        applied: true,
                        detail: String::new(),
                    }
                })
                .collect();
        }
        app.on_snapshot(Target::A, s);
    }
    let failure = app
        .marks
        .iter()
        .find(|m| m.kind == MarkKind::Restart)
        .unwrap_or_else(|| panic!("no mark for the failure: {:?}", app.marks));
    assert_eq!(
        (failure.label.as_str(), failure.at_secs),
        ("failed, restored", 36.0)
    );
    // Four marks; at 80 columns the failure is named and the three live changes counted.
    let screen = render(&app, 80, 24);
    assert!(screen.contains("4:failed, restored +3 more"), "{screen}");
    // At 160 the names that fit are named, in order, and the failure all the same.
    let wide = render(&app, 160, 48);
    assert!(
        wide.contains("1:writebuffer.size=8mb 2:writebuffer.count=3 4:failed, restored +1 more"),
        "{wide}"
    );
}

#[test]
fn marks_that_scrolled_out_of_the_chart_are_not_drawn_at_its_edge() {
    let mut app = fixture(false);
    // 100 more samples: the chart (36 columns at 80x24) shows only the newest.
    for i in 30..130 {
        app.on_snapshot(Target::A, snapshot(i, 1.0));
    }
    let screen = render(&app, 80, 24);
    assert!(screen.contains("(1 earlier out of view)"), "{screen}");
    assert!(!screen.contains("1:writebuffer"), "{screen}");
}

#[test]
fn ab_scheduler_runs_one_side_at_a_time_and_pause_stops_both() {
    use statebench::tui::engines::Scheduler;
    use std::time::{Duration, Instant};
    let t0 = Instant::now();
    let slice = Duration::from_secs(2);
    let mut s = Scheduler::new(slice, t0);
    let names = |cmds: Vec<(Target, EngineCommand)>| -> Vec<String> {
        cmds.into_iter()
            .map(|(t, c)| format!("{t:?} {c:?}"))
            .collect()
    };
    assert!(s.tick(t0 + Duration::from_secs(1), false, false).is_empty());
    assert_eq!(
        names(s.tick(t0 + slice, false, false)),
        ["A Pause", "B Resume"]
    );
    assert_eq!(s.active(), Target::B);
    // The user pauses: both stop; resuming continues only B, with a fresh slice.
    assert_eq!(names(s.pause()), ["A Pause", "B Pause"]);
    assert!(s.tick(t0 + slice * 5, false, false).is_empty());
    let back = t0 + slice * 6;
    assert_eq!(names(s.resume(back)), ["B Resume"]);
    assert!(
        s.tick(back + Duration::from_secs(1), false, false)
            .is_empty()
    );
    assert_eq!(
        names(s.tick(back + slice, false, false)),
        ["B Pause", "A Resume"]
    );
    // B finishes: A runs alone from then on.
    assert!(s.tick(back + slice * 2, false, true).is_empty());
    assert_eq!(s.active(), Target::A);
    let mut s = Scheduler::new(slice, t0);
    assert_eq!(names(s.tick(t0, true, false)), ["B Resume"]);
    assert!(s.tick(t0 + slice * 3, true, false).is_empty());
}

#[test]
fn ab_scheduler_paces_the_faster_side_to_the_same_events() {
    use statebench::tui::engines::Scheduler;
    use std::time::{Duration, Instant};
    let t0 = Instant::now();
    let slice = Duration::from_secs(2);
    let mut s = Scheduler::new(slice, t0);
    // A read 20,000 events in its slice: B's turn.
    s.set_positions(20_000, 0);
    assert_eq!(s.tick(t0 + slice, false, false).len(), 2);
    assert_eq!(s.active(), Target::B);
    // B, slower, is still behind A after its slice: it keeps the machine.
    s.set_positions(20_000, 12_000);
    assert!(s.tick(t0 + slice * 2, false, false).is_empty());
    assert_eq!(s.active(), Target::B);
    // Past A: A's turn again.
    s.set_positions(20_000, 24_000);
    assert_eq!(s.tick(t0 + slice * 3, false, false).len(), 2);
    assert_eq!(s.active(), Target::A);
}

#[test]
fn the_ab_table_compares_both_sides_at_the_same_events() {
    // A at 11,000 events a second, B at 16,000: B ran ahead (as at 28 s: 59,584 against
    // 88,112). The table reads both up to A's position, and says so.
    let mut app = App::new(
        Workload::load("smoke").unwrap(),
        Profile::load("flink-default").unwrap(),
        Some(Profile::load("minutes-wbm-sized").unwrap()),
    );
    for i in 0..10 {
        let mut a = snapshot(i, 1.0);
        a.events = 11_000 * (i + 1);
        a.records_processed = a.events;
        a.events_in_interval = 11_000;
        a.rocksdb.lsm.flushes = i + 1;
        app.on_snapshot(Target::A, a);
        let mut b = snapshot(i, 1.0);
        b.events = 16_000 * (i + 1);
        b.records_processed = b.events;
        b.events_in_interval = 16_000;
        b.rocksdb.lsm.flushes = (i + 1) * (i + 1);
        app.on_snapshot(Target::B, b);
    }
    let range = app.common_range().unwrap();
    assert_eq!((range.from, range.to), (0, 110_000));
    assert_eq!(range.read, (110_000, 160_000));
    // B's snapshots up to 110,000 events: six (96,000 is its last at or before).
    assert_eq!(range.b.len(), 6);
    assert_eq!(range.at, (110_000, 96_000));
    app.view = View::Compare;
    let screen = render(&app, 160, 48);
    assert!(
        screen.contains("events 0–110000 on both sides (A has read 110000, B 160000"),
        "{screen}"
    );
    // Flushes per 10K events at the compared position: A 10 in 110,000, B 36 in 96,000 (not
    // B's 100 in 160,000: 6.25).
    assert!(!screen.contains("6.25"), "{screen}");
    assert!(
        screen.contains("0.91") && screen.contains("3.75"),
        "{screen}"
    );
}

#[test]
fn ab_slices_are_repeats_and_a_difference_within_their_spread_is_not_called() {
    // Four slices each, one running interval per slice and a paused one between: A's slices
    // run at 10-14K events/s, B's at 12-13K (within A's spread) or 20-21K (outside it).
    let table = |b_rates: [u64; 4]| {
        let mut app = App::new(
            Workload::load("smoke").unwrap(),
            Profile::load("flink-default").unwrap(),
            Some(Profile::load("minutes-wbm-sized").unwrap()),
        );
        let (mut ea, mut eb) = (0, 0);
        for (i, (ra, rb)) in [10_000u64, 12_000, 13_000, 14_000]
            .into_iter()
            .zip(b_rates)
            .enumerate()
        {
            let i = i as u64;
            for (target, rate, events) in [(Target::A, ra, &mut ea), (Target::B, rb, &mut eb)] {
                *events += rate;
                let mut s = snapshot(2 * i, 1.0);
                s.events = *events;
                s.events_in_interval = rate;
                app.on_snapshot(target, s);
                let mut p = snapshot(2 * i + 1, 1.0);
                p.state = RunState::Paused;
                p.events = *events;
                p.events_in_interval = 0;
                app.on_snapshot(target, p);
            }
        }
        app.view = View::Compare;
        render(&app, 160, 48)
    };
    let close = table([12_500, 12_000, 13_000, 12_800]);
    let row = |screen: &str| {
        screen
            .lines()
            .find(|l| l.contains("events/s"))
            .unwrap()
            .to_string()
    };
    assert!(row(&close).contains("≈"), "{close}");
    assert!(row(&close).contains("±"), "{close}");
    let apart = table([20_000, 21_000, 20_500, 20_800]);
    assert!(!row(&apart).contains("≈"), "{apart}");
}

/// A CPU sample of `n` samples in the shape of case study 2's hours app: mostly filter-block
/// reads (their checksum first), some compaction and memtable, a little of statebench's own.
fn cpu_sample(n: u64) -> statebench::profiler::CpuSample {
    use statebench::profiler::{CpuProfile, Stack};
    let stack = |thread: &str, frames: &[&str]| {
        Stack::new(thread, frames.iter().map(|f| (*f).into()).collect())
    };
    CpuProfile::from_stacks([
        (
            stack(
                "statebench-engi",
                &[
                    "XXH3_64bits",
                    "rocksdb::VerifyBlockChecksum",
                    "rocksdb::BlockFetcher::ReadBlockContents",
                    "rocksdb::FullFilterBlockReader::MayMatch",
                ],
            ),
            n * 45 / 100,
        ),
        (
            stack(
                "statebench-engi",
                &[
                    "pread64",
                    "rocksdb::BlockFetcher::ReadBlockContents",
                    "rocksdb::FullFilterBlockReader::MayMatch",
                ],
            ),
            n * 30 / 100,
        ),
        (
            stack("rocksdb:low", &["rocksdb::CompactionJob::Run"]),
            n * 10 / 100,
        ),
        (
            stack("statebench-engi", &["rocksdb::MemTable::Add"]),
            n * 10 / 100,
        ),
        (
            stack(
                "statebench-engi",
                &["statebench::pipeline::oracle::Oracle::on_event"],
            ),
            n * 5 / 100,
        ),
    ])
    .sample()
}

#[test]
fn the_cpu_view_shows_the_buckets_and_top_frames_or_how_to_turn_it_on() {
    let mut app = fixture(false);
    app.view = View::Cpu;
    insta::assert_snapshot!("cpu_off_80x24", render(&app, 80, 24));
    let mut app = App::new(
        Workload::load("smoke").unwrap(),
        Profile::load("flink-default").unwrap(),
        None,
    );
    for i in 0..30 {
        let mut s = snapshot(i, 1.0);
        s.cpu = Some(cpu_sample(200));
        app.on_snapshot(Target::A, s);
    }
    app.update(key(KeyCode::Char('6')));
    assert_eq!(app.view, View::Cpu);
    let (recent, secs, run) = views::cpu::recent_and_run(&app.a).unwrap();
    // The live window is the newest five one-second snapshots; the run is all thirty.
    assert_eq!((recent.samples, secs), (1_000, 5.0));
    assert_eq!(run.samples, 6_000);
    for (w, h) in [(80, 24), (160, 48)] {
        insta::assert_snapshot!(format!("cpu_{w}x{h}"), render(&app, w, h));
    }
}

/// A checkpoint record `id` of `kind`: 1 MiB of new data (flushed, or logged), unless `spike`
/// (8 MiB, mostly rewritten by compactions or materialized) or `failed`.
fn checkpoint(id: u64, kind: &str, spike: bool, failed: bool) -> CheckpointRecord {
    let mib = 1u64 << 20;
    let rewritten = if spike { 7 * mib } else { 0 };
    let record = CheckpointRecord {
        id,
        kind: kind.into(),
        started_at_secs: id as f64,
        sync_ms: 2.5,
        async_ms: 120.0,
        bytes: if failed { 0 } else { mib + rewritten },
        files: if spike { 9 } else { 2 },
        reused_files: 14,
        failed: failed.then(|| "timeout after 600 s".to_string()),
        ..CheckpointRecord::default()
    };
    // A changelog checkpoint's log, and its materialization; another's new SST files.
    if kind == "changelog" {
        CheckpointRecord {
            changelog_bytes: mib,
            materialized_bytes: rewritten,
            materialization_id: Some(id / 5),
            ..record
        }
    } else {
        CheckpointRecord {
            new_flush_bytes: mib,
            new_compaction_bytes: rewritten,
            ..record
        }
    }
}

/// The `fixture` run with checkpointing (interval 1s, `kind`): a checkpoint every second
/// snapshot (each record arrives twice), the 5th a compaction spike, the 9th failed, and
/// `edit` applied to every sample.
fn checkpointing_fixture(kind: &str, edit: impl Fn(u64, &mut CheckpointSample)) -> App {
    let mut profile = Profile::load("flink-default")
        .unwrap()
        .edited("execution.checkpointing.interval", "1s")
        .unwrap();
    if kind == "changelog" {
        profile = profile.edited("state.changelog.enabled", "true").unwrap();
    } else {
        profile = profile
            .edited("execution.checkpointing.incremental", "true")
            .unwrap();
    }
    let mut app = App::new(Workload::load("smoke").unwrap(), profile, None);
    let mut history: Vec<CheckpointRecord> = Vec::new();
    for i in 0..30 {
        let id = i / 2 + 1;
        if history.last().is_none_or(|c| c.id != id) {
            history.push(checkpoint(id, kind, id == 5, id == 9));
        }
        let mut c = CheckpointSample {
            kind: kind.into(),
            completed: history.iter().filter(|c| c.failed.is_none()).count() as u64,
            failed: history.iter().filter(|c| c.failed.is_some()).count() as u64,
            last: history.last().cloned(),
            bytes_uploaded: history.iter().map(|c| c.bytes).sum(),
            ..CheckpointSample::default()
        };
        edit(i, &mut c);
        let mut s = snapshot(i, 1.0);
        s.pipeline.checkpoints = Some(c);
        app.on_snapshot(Target::A, s);
    }
    app
}

#[test]
fn the_dashboard_shows_the_checkpoint_timeline_restarts_and_delivery() {
    let app = checkpointing_fixture("incremental", |i, c| {
        c.restarts = u64::from(i >= 20);
        c.last_restore_ms = (i >= 20).then_some(45.0);
        c.delivery.duplicates_seen = 12;
        c.delivery.records_lost = 3;
        c.delivery.visibility_delay_ms_max = 1_200;
    });
    // One entry per checkpoint although each came in two snapshots.
    let ids: Vec<u64> = app.a.checkpoints.iter().map(|c| c.id).collect();
    assert_eq!(ids, (1..=15).collect::<Vec<_>>());
    // The restart was announced when its snapshot came.
    assert_eq!(
        app.status,
        "restarted from its last completed checkpoint (restore 45 ms)"
    );
    for (w, h) in [(80, 24), (160, 48)] {
        let screen = render(&app, w, h);
        insta::assert_snapshot!(format!("dashboard_checkpoints_{w}x{h}"), screen);
        // 1 MiB checkpoints, the 8 MiB spike, the failed one, newest on the right.
        assert!(
            screen.contains("sizes ▂▂▂▂█▂▂▂×▂▂▂▂▂▂ max 8.0 MiB"),
            "{screen}"
        );
        assert!(screen.contains("incremental 14 ok 1 failed"), "{screen}");
        assert!(
            screen.contains("restarts 1, last restore 45.0ms"),
            "{screen}"
        );
        assert!(
            screen.contains("dup 12 seen, 3 lost, visible ≤ 1.20s"),
            "{screen}"
        );
        assert!(!screen.contains("checkpoints: off"), "{screen}");
    }
    // The spike was rewritten data (compaction): yellow; the failed one a red ×.
    let mut terminal = Terminal::new(TestBackend::new(80, 24)).unwrap();
    terminal.draw(|f| views::render(&app, f)).unwrap();
    let buffer = terminal.backend().buffer();
    let width = buffer.area.width as usize;
    let at = buffer
        .content()
        .chunks(width)
        .find_map(|row| {
            // One cell per symbol: find "sizes " by cells, not bytes.
            let symbols: Vec<&str> = row.iter().map(|c| c.symbol()).collect();
            let label = ["s", "i", "z", "e", "s", " "];
            let column = symbols.windows(6).position(|w| w == label)? + label.len();
            Some(row[column..column + 15].to_vec())
        })
        .expect("a timeline row");
    use ratatui::style::Color;
    let colors: Vec<Color> = at.iter().map(|c| c.fg).collect();
    let mut expected = vec![Color::Cyan; 15];
    expected[4] = Color::Yellow;
    expected[8] = Color::Red;
    assert_eq!(colors, expected);
    // The newest checkpoint and why it was the size it was.
    let wide = render(&app, 160, 48);
    assert!(
        wide.contains("#15 1.0 MiB sync 2.5ms async 120.0ms, 2 files +14 reused"),
        "{wide}"
    );
    assert!(
        wide.contains("new SST: flush 1.0 MiB, compaction 0 B"),
        "{wide}"
    );
    // The rest of the dashboard is all there at 160x48.
    for panel in [
        "Reads from storage",
        "Memory (WBM",
        "┌ LSM",
        "┌ Checkpoints",
    ] {
        assert!(wide.contains(panel), "{panel}:\n{wide}");
    }
}

#[test]
fn a_failed_checkpoint_and_a_stuck_materialization_are_called_out() {
    let app = checkpointing_fixture("changelog", |i, c| {
        // A native savepoint at sample 20: the materialization is stuck from then on.
        c.savepoints = u64::from(i >= 20);
        c.changelog = Some(ChangelogStatus {
            materialization_id: Some(3),
            materialization_lag_secs: if i >= 20 { (i - 19) as f64 } else { 0.4 },
            changelog_bytes: 5 << 20,
            skipped: if i >= 20 { 3 } else { 0 },
            next_id: 4,
            last_confirmed: 3,
        });
        // The last record is the 15th; make the newest the failed one instead.
        if i == 29 {
            c.last = Some(checkpoint(16, "changelog", false, true));
            c.failed += 1;
        }
    });
    assert_eq!(app.a.checkpoints.len(), 16);
    for (w, h) in [(80, 24), (160, 48)] {
        let screen = render(&app, w, h);
        insta::assert_snapshot!(format!("dashboard_changelog_{w}x{h}"), screen);
        assert!(
            screen.contains(" WARNING  3 materializations skipped"),
            "{screen}"
        );
        assert!(
            screen.contains("#16 FAILED: timeout after 600 s"),
            "{screen}"
        );
        // Two failed checkpoints on the timeline.
        assert!(screen.contains("×▂▂▂▂▂▂×"), "{screen}");
    }
    let wide = render(&app, 160, 48);
    assert!(
        wide.contains("materialization #3 lag 10.0 s, log 5.0 MiB"),
        "{wide}"
    );
    assert!(wide.contains("restarts 0, savepoints 1"), "{wide}");
    // What the reader saw without transactions: no delay.
    assert!(
        wide.contains("dup 0 seen, 0 lost, visible at once"),
        "{wide}"
    );
}

#[test]
fn without_checkpoints_the_dashboard_says_how_to_turn_them_on() {
    let app = fixture(false);
    let screen = render(&app, 160, 48);
    assert!(
        screen.contains("checkpoints: off (no checkpoint interval)"),
        "{screen}"
    );
    assert!(!screen.contains("Checkpoints"), "{screen}");
}

fn shift(c: char) -> KeyEvent {
    KeyEvent::new(KeyCode::Char(c), KeyModifiers::SHIFT)
}

#[test]
fn f_s_and_n_send_a_failure_and_savepoints_to_the_side_shown() {
    let mut app = checkpointing_fixture("incremental", |_, _| {});
    match app.update(shift('F')).as_slice() {
        [Action::Send(Target::A, EngineCommand::InjectFailure)] => {}
        other => panic!("{other:?}"),
    }
    assert!(app.status.starts_with("failure injected"), "{}", app.status);
    for (c, format) in [
        ('S', SavepointFormat::Canonical),
        ('N', SavepointFormat::Native),
    ] {
        match app.update(shift(c)).as_slice() {
            [Action::Send(Target::A, EngineCommand::Savepoint(f))] => assert_eq!(*f, format),
            other => panic!("{c}: {other:?}"),
        }
        assert_eq!(app.status, format!("{} savepoint requested", format.name()));
    }
    // While a knob is being edited the letters are typed, not sent.
    app.update(key(KeyCode::Char('3')));
    app.update(key(KeyCode::Enter));
    assert!(app.update(shift('F')).is_empty());
    assert!(app.editor.input.as_deref().unwrap().ends_with('F'));
    app.update(key(KeyCode::Esc));
    // Without checkpoints a failure would end the run: refused, and said why.
    let mut app = fixture(false);
    assert!(app.update(shift('F')).is_empty());
    assert!(
        app.status.contains("set execution.checkpointing.interval"),
        "{}",
        app.status
    );
    // A savepoint needs no checkpointing.
    assert!(matches!(
        app.update(shift('S')).as_slice(),
        [Action::Send(
            Target::A,
            EngineCommand::Savepoint(SavepointFormat::Canonical)
        )]
    ));
    // A/B: the side `b` shows gets it, and the status says which.
    let mut app = fixture(true);
    app.update(key(KeyCode::Char('b')));
    match app.update(shift('N')).as_slice() {
        [Action::Send(Target::B, EngineCommand::Savepoint(SavepointFormat::Native))] => {}
        other => panic!("{other:?}"),
    }
    assert_eq!(app.status, "B: native savepoint requested");
    // The help overlay lists the keys.
    app.help = true;
    let help = render(&app, 80, 24);
    assert!(
        help.contains("fail the job: restart from the last checkpoint"),
        "{help}"
    );
    assert!(
        help.contains("take a canonical / native savepoint"),
        "{help}"
    );
}

/// The dashboard after an `F` (here `--fail-at`, the same restart): its run average is the
/// records processed over the running time, replays included, as the summary's; no interval
/// reads zero while the job re-reads the records since its checkpoint.
#[test]
fn after_a_failure_the_dashboard_rate_is_the_summarys() {
    use statebench::engine::{self, EngineConfig, FailureSpec};
    use statebench::summary::Summary;
    let mut workload = Workload::load("smoke").unwrap();
    workload.spec.keys.count = 300;
    workload.spec.events = 30_000;
    // Short intervals: several samples on each side of a failure.
    workload.spec.sample_interval = statebench::config::Millis(100);
    let profile = Profile::load("flink-default")
        .unwrap()
        .edited("execution.checkpointing.interval", "100ms")
        .unwrap()
        .edited("execution.checkpointing.incremental", "true")
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let outcome = engine::run_to_completion(EngineConfig {
        failures: FailureSpec {
            at_events: vec![12_000, 24_000],
            every: None,
        },
        ..EngineConfig::new(workload.clone(), profile.clone(), dir.path())
    })
    .unwrap();
    let summary = Summary::new(&outcome);
    assert!(summary.records_replayed > 0, "{summary:?}");
    let mut app = App::new(workload, profile, None);
    for s in &outcome.snapshots {
        app.on_snapshot(Target::A, s.clone());
    }
    let avg = app.focused().running_throughput();
    let ratio = avg / summary.events_per_sec;
    assert!(
        (0.95..1.05).contains(&ratio),
        "dashboard run average {avg:.0} ev/s, summary {:.0} ev/s",
        summary.events_per_sec
    );
    // What the dashboard draws is that number.
    let screen = render(&app, 160, 48);
    let shown = format!("run avg {} ev/s", views::rate(avg));
    assert!(screen.contains(&shown), "{shown} not in\n{screen}");
    assert!(
        screen.contains("restarts 2") && screen.contains(" replayed"),
        "{screen}"
    );
}
