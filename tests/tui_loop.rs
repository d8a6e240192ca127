//! The TUI's event loop end to end on ratatui's `TestBackend`: real engines on `smoke`, keys
//! sent through the one event channel as the key reader sends them, snapshots from the engines.

use std::sync::mpsc::{self, Sender};
use std::time::{Duration, Instant};

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use statebench::config::profile::KNOBS;
use statebench::config::{Millis, Profile, Workload};
use statebench::engine::RunState;
use statebench::report::Report;
use statebench::tui::app::App;
use statebench::tui::engines::{Engines, Settings};
use statebench::tui::event::Event;
use statebench::tui::{LoopEnd, event_loop};

fn settings() -> Settings {
    let mut workload = Workload::load("smoke").unwrap();
    workload.spec.sample_interval = Millis(100);
    Settings {
        workload,
        events: 100_000_000,
        duration: None,
        trace: None,
        slice: Duration::from_millis(400),
        cpu: None,
        failures: Default::default(),
        savepoints: Vec::new(),
    }
}

fn key(code: KeyCode) -> Event {
    Event::Key(KeyEvent::new(code, KeyModifiers::NONE))
}

/// Sends each batch of keys at its time (seconds after the start), on a thread of its own.
fn type_later(events: &Sender<Event>, script: Vec<(f64, Vec<Event>)>) {
    let events = events.clone();
    std::thread::spawn(move || {
        let start = Instant::now();
        for (at, keys) in script {
            let due = Duration::from_secs_f64(at);
            std::thread::sleep(due.saturating_sub(start.elapsed()));
            for k in keys {
                if events.send(k).is_err() {
                    return;
                }
            }
        }
    });
}

/// Keys that select knob `name` from the top of the profile view, then type `value` over the
/// current one and press Enter.
fn edit(name: &str, value: &str, from_row: usize) -> (usize, Vec<Event>) {
    let row = KNOBS.iter().position(|k| k.key == name).unwrap();
    let mut keys: Vec<Event> = (from_row..row).map(|_| key(KeyCode::Down)).collect();
    keys.push(key(KeyCode::Enter));
    keys.extend((0..12).map(|_| key(KeyCode::Backspace)));
    keys.extend(value.chars().map(|c| key(KeyCode::Char(c))));
    keys.push(key(KeyCode::Enter));
    (row, keys)
}

/// Runs the event loop on a `width`x`height` TestBackend until it ends; returns the screen.
fn run_loop(
    app: &mut App,
    engines: &mut Engines,
    events: (&Sender<Event>, &mpsc::Receiver<Event>),
    width: u16,
    height: u16,
) -> String {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    let (tx, rx) = events;
    let ended = event_loop(
        &mut terminal,
        app,
        engines,
        rx,
        tx,
        Duration::from_millis(50),
    )
    .unwrap();
    assert_eq!(ended, LoopEnd::Quit);
    terminal.backend().to_string()
}

#[test]
fn a_live_change_then_a_restart_make_two_segments_each_with_its_own_profile() {
    let (tx, rx) = mpsc::channel();
    let profile = Profile::load("flink-default").unwrap();
    let mut engines =
        Engines::start(settings(), &profile, None, tx.clone(), Instant::now()).unwrap();
    let mut app = App::new(settings().workload, profile, None);
    let (row, live) = edit("writebuffer.count", "4", 0);
    let mut profile_view = vec![key(KeyCode::Char('3'))];
    profile_view.extend(live);
    let (_, mut restart) = edit("block.blocksize", "16kb", row);
    restart.push(key(KeyCode::Char('y')));
    type_later(
        &tx,
        vec![
            (1.0, profile_view),
            (2.5, restart),
            (4.5, vec![key(KeyCode::Char('1'))]),
            (5.0, vec![key(KeyCode::Char('q'))]),
            // No test waits forever: if q did not end the loop, this does, and fails it.
            (60.0, vec![Event::Signal]),
        ],
    );
    let shown = run_loop(&mut app, &mut engines, (&tx, &rx), 120, 40);
    // The loop drew the dashboard of the restarted run, its throughput from its own snapshots.
    assert!(shown.contains("Throughput — flink-default"), "{shown}");
    assert!(app.a.running_throughput() > 0.0);
    assert!(
        app.marks.iter().any(|m| m.label.starts_with("restart")),
        "{:?}",
        app.marks
    );

    let finished = engines.finish(None);
    assert!(finished.failures.is_empty(), "{:?}", finished.failures);
    let segments = finished.a;
    assert!(finished.b.is_none());
    assert_eq!(segments.len(), 2, "one segment per engine run");
    let workload = settings().workload;
    let report = Report::new(&workload, &segments);
    let (first, second) = (&report.segments[0], &report.segments[1]);
    // The first segment ran on flink-default with the live change applied; its change is in it.
    assert_eq!(first.began, "start");
    assert_eq!(first.profile.knobs.max_write_buffer_number, 4);
    assert_eq!(first.profile.knobs.block_size.0, 4 << 10);
    assert_eq!(first.label, "flink-default (edited: writebuffer.count=4)");
    assert_eq!(first.changes.len(), 1);
    assert!(first.changes[0].applied, "{:?}", first.changes[0]);
    // The second began at the restart, on the edited profile (the live change carried over).
    assert_eq!(second.began, "restart on block.blocksize=16kb");
    assert!(second.began_at_secs > 0.0);
    assert_eq!(second.profile.knobs.block_size.0, 16 << 10);
    assert_eq!(second.profile.knobs.max_write_buffer_number, 4);
    assert!(second.changes.is_empty());
    // Each summary is its own run's: both processed events, from empty state.
    for s in [first, second] {
        assert!(s.summary.events > 0, "{}", s.label);
        assert!(s.summary.result_error_applies, "{}", s.label);
        assert_eq!(s.snapshots.last().unwrap().state, RunState::Finished);
    }
    assert_eq!(report.changed.len(), 2, "{:?}", report.changed);
    assert!(report.changed[0].contains("writebuffer.count = 4 live, applied"));
    assert!(report.changed[1].contains("restart on block.blocksize=16kb"));
}

#[test]
fn a_b_runs_both_sides_in_turn_and_shows_each_labelled() {
    let (tx, rx) = mpsc::channel();
    let a = Profile::load("flink-default").unwrap();
    let b = Profile::load("minutes-wbm-sized").unwrap();
    let mut engines = Engines::start(settings(), &a, Some(&b), tx.clone(), Instant::now()).unwrap();
    let mut app = App::new(settings().workload, a, Some(b));
    // Several slices each, then pause (both stop), show B, quit.
    type_later(
        &tx,
        vec![
            (3.0, vec![key(KeyCode::Char('p'))]),
            (3.5, vec![key(KeyCode::Char('b'))]),
            (4.0, vec![key(KeyCode::Char('q'))]),
            (60.0, vec![Event::Signal]),
        ],
    );
    let shown = run_loop(&mut app, &mut engines, (&tx, &rx), 160, 48);
    // Both sides ran and each keeps its own last running interval while the other runs.
    for side in [&app.a, app.b.as_ref().unwrap()] {
        let last = side.last_running().unwrap();
        assert!(last.events_per_sec > 0.0, "{}", side.profile.name);
    }
    assert!(
        shown.contains("Throughput — B: minutes-wbm-sized"),
        "{shown}"
    );
    assert!(shown.contains("PAUSED"), "{shown}");
    let finished = engines.finish(None);
    assert!(finished.failures.is_empty(), "{:?}", finished.failures);
    let (a, b) = (finished.a, finished.b.unwrap());
    assert_eq!(a.len(), 1);
    assert!(a[0].outcome.snapshots.last().unwrap().events > 0);
    assert!(b.outcome.snapshots.last().unwrap().events > 0);
    assert_eq!(b.started_on.name, "minutes-wbm-sized");
}

#[test]
fn f_fails_the_job_and_s_takes_a_savepoint_which_the_dashboard_then_shows() {
    let (tx, rx) = mpsc::channel();
    let profile = Profile::load("flink-default")
        .unwrap()
        .edited("execution.checkpointing.interval", "200ms")
        .unwrap()
        .edited("execution.checkpointing.incremental", "true")
        .unwrap();
    let mut engines =
        Engines::start(settings(), &profile, None, tx.clone(), Instant::now()).unwrap();
    let mut app = App::new(settings().workload, profile, None);
    let shift = |c| Event::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::SHIFT));
    type_later(
        &tx,
        vec![
            // Checkpoints have completed by then: the job restarts from one.
            (1.5, vec![shift('F')]),
            (3.0, vec![shift('S')]),
            (4.5, vec![key(KeyCode::Char('q'))]),
            (60.0, vec![Event::Signal]),
        ],
    );
    let shown = run_loop(&mut app, &mut engines, (&tx, &rx), 160, 48);
    let sample = app
        .a
        .last()
        .and_then(|s| s.pipeline.checkpoints.clone())
        .expect("checkpoint samples");
    assert_eq!((sample.restarts, sample.savepoints), (1, 1), "{sample:?}");
    assert!(sample.completed > 0, "{sample:?}");
    // The timeline holds each checkpoint once, in order.
    let ids: Vec<u64> = app.a.checkpoints.iter().map(|c| c.id).collect();
    assert!(
        !ids.is_empty() && ids.windows(2).all(|w| w[0] < w[1]),
        "{ids:?}"
    );
    assert!(shown.contains("┌ Checkpoints"), "{shown}");
    assert!(shown.contains("restarts 1, last restore"), "{shown}");
    assert!(shown.contains("savepoints 1"), "{shown}");
    let finished = engines.finish(None);
    assert!(finished.failures.is_empty(), "{:?}", finished.failures);
    let outcome = &finished.a[0].outcome;
    let c = outcome.checkpoints.as_ref().unwrap();
    assert_eq!(c.restores.len(), 1);
    assert_eq!(c.restores[0].cause, "injected failure");
    assert!(c.restores[0].checkpoint.is_some(), "{:?}", c.restores[0]);
    assert_eq!(c.savepoints.len(), 1);
    assert_eq!(c.savepoints[0].format, "canonical");
}
