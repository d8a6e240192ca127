//! `run --record-ops` for every operator kind: the log names the kind's column families and
//! holds every state operation it issued (merges and map iterations too), so that replaying it
//! on a fresh database issues exactly the run's operations, count for count.

use statebench::backend::AccessCounters;
use statebench::backend::oplog::{self, ReplayStats};
use statebench::config::{Profile, Workload};
use statebench::engine::{self, EngineConfig};

/// Runs `workload` for `events` with `profile`, recording; replays the log with `profile`.
/// Returns the run's counters, the replay's, and the recorded column families.
fn record_and_replay(
    workload: &str,
    profile: &Profile,
    events: u64,
) -> (AccessCounters, ReplayStats, Vec<String>) {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("ops.log");
    let outcome = engine::run_to_completion(EngineConfig {
        events,
        record_ops: Some(log.clone()),
        ..EngineConfig::new(
            Workload::load(workload).unwrap(),
            profile.clone(),
            dir.path().join("data"),
        )
    })
    .unwrap_or_else(|e| panic!("{workload}: {e}"));
    assert!(outcome.result_error.is_exact(), "{workload}: not exact");
    let ops = outcome.snapshots.last().expect("a run samples").ops;
    let stats = oplog::replay(&log, &dir.path().join("replay"), profile).unwrap();
    let names = oplog::recorded_layout(&log).unwrap().names();
    (ops, stats, names)
}

/// The replay's counts, as the run counts them.
fn as_counted(s: &ReplayStats) -> [(&'static str, u64); 9] {
    [
        ("gets", s.gets),
        ("puts", s.puts),
        ("deletes", s.deletes),
        ("merges", s.merges),
        ("batch_writes", s.batches - s.empty_batches),
        ("empty_batch_writes", s.empty_batches),
        ("batch_entries", s.batch_entries),
        ("iterator_seeks", s.scans + s.iterations),
        ("iterator_nexts", s.iterator_nexts),
    ]
}

fn counted(o: &AccessCounters) -> [(&'static str, u64); 9] {
    [
        ("gets", o.gets),
        ("puts", o.puts),
        ("deletes", o.deletes),
        ("merges", o.merges),
        ("batch_writes", o.batch_writes),
        ("empty_batch_writes", o.empty_batch_writes),
        ("batch_entries", o.batch_entries),
        ("iterator_seeks", o.iterator_seeks),
        ("iterator_nexts", o.iterator_nexts),
    ]
}

fn flink_default() -> Profile {
    Profile::load("flink-default").unwrap()
}

/// Records `workload`, replays it, and checks the replay issued the run's operations; returns
/// them and the recorded column families.
fn replays_exactly(workload: &str, profile: &Profile) -> (AccessCounters, Vec<String>) {
    let (run, replay, names) = record_and_replay(workload, profile, 4_000);
    assert_eq!(as_counted(&replay), counted(&run), "{workload}");
    assert!(run.total() > 4_000, "{workload}: {run:?}");
    (run, names)
}

#[test]
fn dedup_with_ttl_replays_its_value_state() {
    let (ops, names) = replays_exactly("dedup-24h", &flink_default());
    assert!(ops.gets > 0 && ops.puts > 0, "{ops:?}");
    assert!(
        names.iter().any(|n| !n.starts_with("_timer_state/")),
        "{names:?}"
    );
}

#[test]
fn aggregate_replays_its_read_modify_writes() {
    let (ops, _) = replays_exactly("running-aggregate", &flink_default());
    assert!(ops.gets > 0 && ops.puts > 0, "{ops:?}");
}

#[test]
fn process_window_replays_its_list_merges_and_timers() {
    let (ops, names) = replays_exactly("sessions-process", &flink_default());
    assert!(ops.merges > 0 && ops.batch_writes > 0, "{ops:?}");
    assert!(
        names.iter().any(|n| n.starts_with("_timer_state/event_")),
        "{names:?}"
    );
}

#[test]
fn aggregate_window_replays_its_window_state() {
    let (ops, _) = replays_exactly("sessions-aggregate", &flink_default());
    assert!(
        ops.gets > 0 && ops.puts > 0 && ops.batch_writes > 0,
        "{ops:?}"
    );
}

#[test]
fn interval_join_replays_its_buffer_iterations() {
    let (ops, _) = replays_exactly("interval-join", &flink_default());
    assert!(ops.iterator_seeks > 0 && ops.iterator_nexts > 0, "{ops:?}");
}

#[test]
fn process_function_replays_its_value_and_map_states() {
    let (ops, names) = replays_exactly("process-example", &flink_default());
    assert!(ops.gets > 0 && ops.puts > 0, "{ops:?}");
    assert!(names.len() >= 3, "{names:?}");
}

#[test]
fn frequency_replays_from_its_timer_service_start() {
    let (run, replay, names) = record_and_replay("smoke", &flink_default(), 4_000);
    // The run's check of its final state (one scan of window-stats) comes after its last
    // sample: in the log, not in the run's counters.
    let mut expected = counted(&run);
    expected[7].1 += 1;
    assert_eq!(as_counted(&replay), expected);
    // The timer service's start: an empty batch and a scan per key group of each queue.
    assert!(
        run.empty_batch_writes > 0 && run.batch_writes > 0,
        "{run:?}"
    );
    let smoke = Workload::load("smoke").unwrap();
    assert_eq!(
        names,
        statebench::pipeline::operators::layout(&smoke.operator()).names()
    );
}

#[test]
fn heap_timers_record_the_state_traffic_rocksdb_sees() {
    let heap = flink_default()
        .edited("timer-service.factory", "HEAP")
        .unwrap();
    let (ops, names) = replays_exactly("sessions-process", &heap);
    // No timer queue in RocksDB: no batches, no timer column families in the log.
    assert_eq!(ops.batch_writes, 0, "{ops:?}");
    assert!(ops.merges > 0, "{ops:?}");
    assert!(
        !names.iter().any(|n| n.starts_with("_timer_state/")),
        "{names:?}"
    );
}

#[test]
fn a_run_that_checkpoints_is_refused_rather_than_left_unrecorded() {
    let dir = tempfile::tempdir().unwrap();
    let profile = flink_default()
        .edited("execution.checkpointing.interval", "100ms")
        .unwrap();
    let Err(err) = engine::run_to_completion(EngineConfig {
        events: 1_000,
        record_ops: Some(dir.path().join("ops.log")),
        ..EngineConfig::new(Workload::load("smoke").unwrap(), profile, dir.path())
    }) else {
        panic!("a checkpointing run with --record-ops ran");
    };
    let err = err.to_string();
    assert!(err.contains("--record-ops"), "{err}");
}
