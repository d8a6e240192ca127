//! The engine thread: snapshots out, commands in.

use std::time::Duration;

use statebench::config::profile::Knob;
use statebench::config::{Millis, Profile, Workload};
use statebench::engine::{self, EngineCommand, EngineConfig, RunState};

fn config(dir: &std::path::Path, events: u64) -> EngineConfig {
    let mut workload = Workload::load("smoke").unwrap();
    workload.spec.sample_interval = Millis(100);
    EngineConfig {
        events,
        ..EngineConfig::new(
            workload,
            Profile::load("minutes-wbm-starved").unwrap(),
            dir.to_path_buf(),
        )
    }
}

/// The first snapshot `accept` takes, within 30 s (panics otherwise: no test waits forever).
fn wait_for(
    snapshots: &std::sync::mpsc::Receiver<Box<statebench::engine::MetricsSnapshot>>,
    what: &str,
    accept: impl Fn(&statebench::engine::MetricsSnapshot) -> bool,
) -> statebench::engine::MetricsSnapshot {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let s = snapshots
            .recv_timeout(left)
            .unwrap_or_else(|e| panic!("no snapshot {what} within 30 s: {e}"));
        if accept(&s) {
            return *s;
        }
    }
}

#[test]
fn pause_resume_and_stop_are_obeyed_and_snapshots_flow() {
    let dir = tempfile::tempdir().unwrap();
    let handle = engine::spawn(config(dir.path(), u64::MAX)).unwrap();
    let first = handle
        .snapshots
        .recv_timeout(Duration::from_secs(30))
        .unwrap();
    assert_eq!(first.state, RunState::Running);
    handle.commands.send(EngineCommand::Pause).unwrap();
    // Snapshots keep coming while paused, and the event count stands still.
    let paused = wait_for(&handle.snapshots, "while paused", |s| {
        s.state == RunState::Paused
    });
    let again = handle
        .snapshots
        .recv_timeout(Duration::from_secs(30))
        .unwrap();
    assert_eq!(again.state, RunState::Paused);
    assert_eq!(again.events, paused.events, "no events while paused");
    handle.commands.send(EngineCommand::Resume).unwrap();
    // After the resume the run goes on from where it stood.
    let resumed = wait_for(&handle.snapshots, "with new events after the resume", |s| {
        s.state == RunState::Running && s.events > paused.events
    });
    assert!(resumed.events_in_interval > 0);
    handle.commands.send(EngineCommand::Stop).unwrap();
    let events = handle.snapshots.iter().last().map(|s| s.events);
    let outcome = handle.join().unwrap();
    assert!(outcome.stopped_early);
    let last = outcome.snapshots.last().unwrap();
    assert_eq!(last.state, RunState::Finished);
    assert_eq!(Some(last.events), events);
    // Snapshots are numbered without gaps in the outcome, even if a reader missed some.
    for (i, s) in outcome.snapshots.iter().enumerate() {
        assert_eq!(s.seq, i as u64);
    }
}

#[test]
fn a_run_processes_exactly_the_requested_events_and_counts_match_rocksdb() {
    let dir = tempfile::tempdir().unwrap();
    let outcome = engine::run_to_completion(config(dir.path(), 20_000)).unwrap();
    assert!(!outcome.stopped_early);
    assert!(
        outcome.option_mismatches.is_empty(),
        "{:?}",
        outcome.option_mismatches
    );
    let last = outcome.snapshots.last().unwrap();
    assert_eq!(last.events, 20_000);
    assert_eq!(last.pipeline.job.events, 20_000);
    let workload = &config(dir.path(), 0).workload;
    let windows = workload.spec.windows.len() as u64;
    assert_eq!(last.pipeline.job.increments, 20_000 * windows);
    // Every get the job issued is a key RocksDB read.
    assert_eq!(last.ops.gets, last.rocksdb.tickers.keys_read);
    // Per event and window: stats get + timerState get; per fired timer: timerState get + stats gets.
    assert!(last.ops.gets >= 2 * windows * 20_000);
    // The emitted watermark trails the newest event by at least the out-of-orderness bound
    // plus 1 ms, and by less than that plus the event time of one emission period (events
    // advance event time evenly over the workload's span).
    let bound = workload.spec.event_time.out_of_orderness.0 as i64 + 1;
    let period_ms = (engine::WATERMARK_EVERY_EVENTS * workload.spec.event_time.span.0
        / workload.spec.events) as i64
        + 1;
    assert!(
        (bound..=bound + period_ms).contains(&last.pipeline.watermark_lag_ms),
        "{}",
        last.pipeline.watermark_lag_ms
    );
    assert!(last.pipeline.timers_fired > 0);
    // Sampled comparisons of the store with the oracle happened during the run, all exact.
    let sampled: Vec<_> = outcome
        .snapshots
        .iter()
        .filter_map(|s| s.pipeline.result_error)
        .collect();
    // The final snapshot always compares; a run of more than 10 samples compared on the way.
    let expected = 1 + usize::from(outcome.snapshots.len() > 10);
    assert!(
        sampled.len() >= expected,
        "{} comparisons in {} samples",
        sampled.len(),
        outcome.snapshots.len()
    );
    assert!(sampled.iter().all(|e| e.is_exact()), "{sampled:?}");
    // The state the job left equals the oracle's exact sliding-window counts.
    assert!(
        outcome.result_error.is_exact(),
        "{:?}",
        outcome.result_error
    );
    assert!(
        outcome.result_error.compared > 1_000,
        "{:?}",
        outcome.result_error
    );
}

#[test]
fn a_timer_state_ttl_shorter_than_the_longest_window_leaves_counts_too_high() {
    // The seed's trap: the timer fires, its timerState entry has expired, the decrement is
    // skipped, and the count stays too high. A TTL above the longest window is exact.
    let run = |ttl: &str| {
        let dir = tempfile::tempdir().unwrap();
        // 30,000 events: 18 minutes of event time, past the 10-minute windows' first fires.
        let mut config = config(dir.path(), 30_000);
        // The trap is in the job, not in RocksDB: the default profile, without the starved
        // profile's flush storm.
        config.profile = Profile::load("flink-default").unwrap();
        config.workload.spec.timer_state_ttl = Millis::parse(ttl);
        engine::run_to_completion(config).unwrap()
    };
    let broken = run("5m");
    let job = broken.snapshots.last().unwrap().pipeline.job;
    assert!(
        job.expired_timer_state > 0 && job.missing_decrements > 0,
        "{job:?}"
    );
    assert!(broken.result_error.over > 0, "{:?}", broken.result_error);
    assert_eq!(
        broken.result_error.under, 0,
        "expired decrements only ever leave counts high"
    );
    let fixed = run("1h");
    assert!(fixed.result_error.is_exact(), "{:?}", fixed.result_error);
    assert_eq!(
        fixed
            .snapshots
            .last()
            .unwrap()
            .pipeline
            .job
            .expired_timer_state,
        0
    );
}

#[test]
fn a_bounded_source_ends_with_the_maximum_watermark_unless_idleness_drops_it() {
    let run = |idleness: &str| {
        let dir = tempfile::tempdir().unwrap();
        let mut config = config(dir.path(), 20_000);
        // The source is read to its end: the workload's whole log is the 20 K events.
        config.workload.spec.events = 20_000;
        config.workload.spec.bounded_end_delay = Millis::parse("2s");
        config.workload.spec.idleness = Millis::parse(idleness);
        engine::run_to_completion(config).unwrap()
    };
    let fixed = run("60s");
    let last = fixed.snapshots.last().unwrap().pipeline.clone();
    assert_eq!(
        last.watermark,
        i64::MAX,
        "every partition's final watermark got through"
    );
    assert_eq!(last.next_timer, None, "every timer fired");
    assert!(fixed.result_error.is_exact(), "{:?}", fixed.result_error);
    let broken = run("1s");
    let last = broken.snapshots.last().unwrap().pipeline.clone();
    assert!(
        last.watermark < i64::MAX,
        "the final watermark is dropped: stuck at {}",
        last.watermark
    );
    assert_eq!(last.dropped_final_watermarks, 4);
    assert!(last.next_timer.is_some(), "timers stay pending");
}

#[test]
fn a_run_started_paused_waits_and_its_paused_time_is_not_processing_time() {
    let dir = tempfile::tempdir().unwrap();
    let handle = engine::spawn(EngineConfig {
        start_paused: true,
        ..config(dir.path(), 5_000)
    })
    .unwrap();
    // Paused before the first event: snapshots come, no event is read.
    let paused = wait_for(&handle.snapshots, "while paused", |s| {
        s.state == RunState::Paused
    });
    assert_eq!(paused.events, 0);
    std::thread::sleep(Duration::from_millis(600));
    handle.commands.send(EngineCommand::Resume).unwrap();
    let outcome = handle.finish().unwrap();
    let last = outcome.snapshots.last().unwrap();
    assert_eq!(last.events, 5_000);
    // The run's wall time includes the pause; its processing time does not.
    let paused_secs: f64 = outcome
        .snapshots
        .iter()
        .filter(|s| s.state == RunState::Paused)
        .map(|s| s.interval_secs)
        .sum();
    assert!(paused_secs >= 0.5, "{paused_secs}");
    assert!(
        outcome.processing_secs <= last.elapsed_secs - 0.5,
        "processing {} of {} s wall",
        outcome.processing_secs,
        last.elapsed_secs
    );
}

#[test]
fn a_live_change_is_recorded_once_in_the_snapshot_of_its_interval() {
    let dir = tempfile::tempdir().unwrap();
    let handle = engine::spawn(config(dir.path(), u64::MAX)).unwrap();
    wait_for(&handle.snapshots, "running", |s| s.events > 0);
    handle
        .commands
        .send(EngineCommand::Apply {
            knob: Knob::MaxWriteBufferNumber,
            value: "4".into(),
        })
        .unwrap();
    wait_for(&handle.snapshots, "with the change", |s| {
        !s.changes.is_empty()
    });
    // A few more samples, then stop.
    wait_for(&handle.snapshots, "after the change", |s| {
        s.changes.is_empty()
    });
    handle.commands.send(EngineCommand::Stop).unwrap();
    let outcome = handle.finish().unwrap();
    let with_change: Vec<_> = outcome
        .snapshots
        .iter()
        .filter(|s| !s.changes.is_empty())
        .collect();
    assert_eq!(with_change.len(), 1, "one snapshot carries the change");
    let change = &with_change[0].changes[0];
    assert_eq!(
        (change.key.as_str(), change.value.as_str()),
        ("writebuffer.count", "4")
    );
    assert!(change.applied, "{change:?}");
    // The outcome keeps every change, and the profile as it ended.
    assert_eq!(outcome.changes.len(), 1);
    assert_eq!(outcome.profile.knobs.max_write_buffer_number, 4);
    assert!(change.at_secs <= with_change[0].elapsed_secs);
}
