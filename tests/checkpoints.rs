//! Checkpoints, restores and the sink's delivery guarantees under failures, end to end.

use proptest::prelude::*;
use statebench::config::{Profile, Workload};
use statebench::engine::{self, EngineConfig, FailureSpec, RestoreFrom, RunOutcome};

/// A profile checkpointing every `interval` in `mode` (full, incremental, changelog), with
/// the sink and reader given as `(key, value)` edits.
fn profile(mode: &str, interval: &str, sink: &[(&str, &str)]) -> Profile {
    let mut p = Profile::load("flink-default")
        .unwrap()
        .edited("execution.checkpointing.interval", interval)
        .unwrap()
        .edited("execution.checkpointing.num-retained", "2")
        .unwrap();
    match mode {
        "full" => {}
        "incremental" => {
            p = p
                .edited("execution.checkpointing.incremental", "true")
                .unwrap()
        }
        "changelog" => {
            p = p
                .edited("state.changelog.enabled", "true")
                .unwrap()
                .edited("state.changelog.periodic-materialize.interval", "300ms")
                .unwrap()
        }
        other => panic!("unknown mode {other}"),
    }
    for (k, v) in sink {
        p = p.edited(k, v).unwrap();
    }
    p
}

/// Every run reads the same log (a shorter run is a prefix of it).
fn workload() -> Workload {
    let mut w = Workload::load("smoke").unwrap();
    w.spec.keys.count = 300;
    w.spec.events = 40_000;
    w
}

fn run(
    profile: Profile,
    events: u64,
    dir: &std::path::Path,
    failures: FailureSpec,
    restore: Option<RestoreFrom>,
) -> RunOutcome {
    engine::run_to_completion(EngineConfig {
        failures,
        restore,
        events,
        ..EngineConfig::new(workload(), profile, dir)
    })
    .unwrap()
}

const EXACTLY_ONCE: &[(&str, &str)] = &[
    ("sink.delivery-guarantee", "EXACTLY_ONCE"),
    ("sink.reader-isolation", "read_committed"),
];
const IDEMPOTENT: &[(&str, &str)] = &[
    ("sink.delivery-guarantee", "AT_LEAST_ONCE"),
    ("sink.idempotent", "true"),
];

proptest! {
    #![proptest_config(ProptestConfig { cases: 6, ..ProptestConfig::default() })]

    /// Whatever the failure points and the checkpoint mode, state and timers rewound with the
    /// source make the results exact, with an exactly-once sink read committed or an
    /// at-least-once sink that dedupes by id.
    #[test]
    fn repeated_failures_leave_no_result_error(
        mode in prop::sample::select(vec!["full", "incremental", "changelog"]),
        idempotent in any::<bool>(),
        points in prop::collection::btree_set(2_000u64..22_000, 1..4),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let sink = if idempotent { IDEMPOTENT } else { EXACTLY_ONCE };
        let failures = FailureSpec { at_events: points.iter().copied().collect(), every: None };
        let outcome = run(profile(mode, "60ms", sink), 24_000, dir.path(), failures, None);
        let c = outcome.checkpoints.as_ref().unwrap();
        prop_assert_eq!(c.restores.len(), points.len());
        // A failure late enough restarts from a checkpoint, not from scratch (one within the
        // first few thousand records can come before the first checkpoint completed: 2,000
        // records took 65 ms once, under the 60 ms interval plus the upload).
        if points.iter().any(|p| *p >= 10_000) {
            prop_assert!(c.restores.iter().any(|r| r.checkpoint.is_some()), "{:?}", c.restores);
        }
        prop_assert!(outcome.result_error.is_exact(), "{mode}: {:?}", outcome.result_error);
        prop_assert!(outcome.state_error.is_exact(), "{mode}: {:?}", outcome.state_error);
        prop_assert!(outcome.result_error.compared > 0);
        if idempotent {
            // Replayed records reach the store again and are dropped by id.
            prop_assert_eq!(c.delivery.duplicates_seen, c.delivery.duplicates_dropped);
        } else {
            prop_assert_eq!(c.delivery.duplicates_seen, 0);
            prop_assert_eq!(c.delivery.records_lost, 0);
        }
    }
}

#[test]
fn at_least_once_read_uncommitted_counts_the_duplicates_a_failure_makes() {
    let dir = tempfile::tempdir().unwrap();
    let sink = &[("sink.delivery-guarantee", "AT_LEAST_ONCE")];
    let failures = FailureSpec {
        at_events: vec![15_000],
        every: None,
    };
    let outcome = run(
        profile("incremental", "100ms", sink),
        30_000,
        dir.path(),
        failures,
        None,
    );
    let c = outcome.checkpoints.unwrap();
    let replayed = c.restores[0].records_replayed;
    assert!(replayed > 0, "the failure came after a checkpoint");
    // Every replayed record's results reached the reader a second time: one per window.
    let windows = workload().spec.windows.len() as u64;
    assert!(
        c.delivery.duplicates_seen >= replayed,
        "{} duplicates for {replayed} records read twice",
        c.delivery.duplicates_seen
    );
    assert!(c.delivery.duplicates_seen <= replayed * windows * 2);
    // The store upserts counts: the final view is exact all the same.
    assert!(outcome.result_error.is_exact());
}

#[test]
fn a_transaction_timeout_below_the_checkpoint_interval_loses_results() {
    let dir = tempfile::tempdir().unwrap();
    let sink = &[
        ("sink.delivery-guarantee", "EXACTLY_ONCE"),
        ("sink.reader-isolation", "read_committed"),
        ("sink.transaction-timeout", "50ms"),
    ];
    let outcome = run(
        profile("full", "300ms", sink),
        30_000,
        dir.path(),
        FailureSpec::default(),
        None,
    );
    let c = outcome.checkpoints.unwrap();
    assert!(c.delivery.transactions_expired > 0);
    assert!(c.delivery.records_lost > 0);
    assert!(
        !outcome.result_error.is_exact(),
        "lost results must show as result error"
    );
}

#[test]
fn committed_offsets_and_checkpoints_outlive_the_run_and_restore_latest_resumes() {
    let dir = tempfile::tempdir().unwrap();
    let p = profile("incremental", "100ms", EXACTLY_ONCE);
    let first = run(p.clone(), 20_000, dir.path(), FailureSpec::default(), None);
    assert!(first.result_error.is_exact());
    let broker: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("broker.json")).unwrap()).unwrap();
    let committed: u64 = broker["statebench"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o.as_u64().unwrap())
        .sum();
    // The final checkpoint committed everything the job read.
    assert_eq!(committed, 20_000);
    // Resume from the final checkpoint and read on to 40,000: exact against a truth rebuilt
    // from the log.
    let second = run(
        p,
        40_000,
        dir.path(),
        FailureSpec::default(),
        Some(RestoreFrom::Latest),
    );
    assert_eq!(second.checkpoints.as_ref().unwrap().restores.len(), 1);
    assert!(second.result_error.is_exact(), "{:?}", second.result_error);
    assert!(second.state_error.is_exact(), "{:?}", second.state_error);
    assert_eq!(second.jobs[0].records_skipped, 0);
}

#[test]
fn at_least_once_checkpointing_double_counts_the_fast_input_after_a_restore() {
    let run_with = |mode: &str| {
        let dir = tempfile::tempdir().unwrap();
        let p = profile("incremental", "100ms", EXACTLY_ONCE)
            .edited("execution.checkpointing.mode", mode)
            .unwrap();
        let failures = FailureSpec {
            at_events: vec![20_000],
            every: None,
        };
        run(p, 30_000, dir.path(), failures, None)
    };
    let aligned = run_with("EXACTLY_ONCE");
    assert!(aligned.state_error.is_exact(), "{:?}", aligned.state_error);
    assert!(aligned.result_error.is_exact());
    // The first input's records past its barrier are in the state and replayed after the
    // restore: the job's own counts are too high, and so are the results.
    let at_least_once = run_with("AT_LEAST_ONCE");
    assert!(
        at_least_once.state_error.over > 0,
        "{:?}",
        at_least_once.state_error
    );
    assert_eq!(
        at_least_once.state_error.under, 0,
        "{:?}",
        at_least_once.state_error
    );
    assert!(at_least_once.result_error.over > 0);
}

#[test]
fn restore_latest_without_a_checkpoint_is_a_usage_error_that_creates_nothing() {
    use clap::Parser;
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let cli = statebench::cli::Cli::try_parse_from([
        "statebench",
        "run",
        "--restore",
        "latest",
        "--data-dir",
        data.to_str().unwrap(),
        "--quiet",
    ])
    .unwrap();
    let err = statebench::run(cli).unwrap_err();
    assert_eq!(statebench::exit_code(&err), 2);
    assert!(
        format!("{err:#}").contains("holds no completed checkpoint"),
        "{err:#}"
    );
    assert!(!data.exists(), "nothing is created for a refused restore");
}

#[test]
fn savepoints_taken_during_uploads_break_nothing_and_a_restore_from_one_is_exact() {
    use statebench::engine::SavepointFormat;
    let dir = tempfile::tempdir().unwrap();
    // Uploads paced so that a checkpoint is nearly always under way when a savepoint comes.
    let p = profile("incremental", "50ms", EXACTLY_ONCE)
        .edited("checkpoint.upload-rate-per-sec", "20mb")
        .unwrap();
    let first = engine::run_to_completion(EngineConfig {
        events: 20_000,
        savepoints: vec![
            (8_000, SavepointFormat::Canonical),
            (16_000, SavepointFormat::Native),
        ],
        ..EngineConfig::new(workload(), p.clone(), dir.path())
    })
    .unwrap();
    let c = first.checkpoints.unwrap();
    assert_eq!(c.savepoints.len(), 2, "{:?}", c.savepoints);
    let failed: Vec<_> = c.history.iter().filter(|r| r.failed.is_some()).collect();
    assert!(failed.is_empty(), "{failed:?}");
    assert!(first.result_error.is_exact());
    // From the canonical savepoint, read on to 30,000: state and results exact.
    let savepoint = std::path::PathBuf::from(&c.savepoints[0].path);
    let second = run(
        p,
        30_000,
        dir.path(),
        FailureSpec::default(),
        Some(RestoreFrom::Dir(savepoint)),
    );
    assert!(second.state_error.is_exact(), "{:?}", second.state_error);
    assert!(second.result_error.is_exact(), "{:?}", second.result_error);
}

#[test]
fn a_canonical_savepoint_is_larger_than_the_live_ssts_it_was_taken_from() {
    use statebench::engine::SavepointFormat;
    let dir = tempfile::tempdir().unwrap();
    // Incremental checkpoints flush the memtables: the live SSTs hold nearly all the state.
    let outcome = engine::run_to_completion(EngineConfig {
        events: 30_000,
        savepoints: vec![(24_000, SavepointFormat::Canonical)],
        ..EngineConfig::new(
            workload(),
            profile("incremental", "100ms", EXACTLY_ONCE),
            dir.path(),
        )
    })
    .unwrap();
    let c = outcome.checkpoints.unwrap();
    let sp = &c.savepoints[0];
    // Snappy-compressed SSTs against every key uncompressed.
    assert!(
        sp.bytes > sp.live_sst_bytes,
        "canonical {} B, live SST {} B",
        sp.bytes,
        sp.live_sst_bytes
    );
    assert!(std::path::Path::new(&sp.path).join("_metadata").is_file());
}

#[test]
fn a_savepoint_is_taken_once_though_a_restart_reads_its_point_again() {
    use statebench::engine::SavepointFormat;
    let dir = tempfile::tempdir().unwrap();
    let outcome = engine::run_to_completion(EngineConfig {
        events: 20_000,
        savepoints: vec![(11_900, SavepointFormat::Canonical)],
        failures: FailureSpec {
            at_events: vec![12_000],
            every: None,
        },
        ..EngineConfig::new(
            workload(),
            // No checkpoint completes before the failure: the job restarts from the start.
            profile("incremental", "10s", EXACTLY_ONCE),
            dir.path(),
        )
    })
    .unwrap();
    let c = outcome.checkpoints.unwrap();
    assert_eq!(c.restores.len(), 1);
    // The restart reads the savepoint's point again; the savepoint is not taken twice.
    assert!(c.restores[0].records_replayed >= 11_900, "{:?}", c.restores);
    assert_eq!(c.savepoints.len(), 1, "{:?}", c.savepoints);
    assert!(outcome.result_error.is_exact());
}

/// After failures every rate divides like by like: the records processed, replayed ones
/// included, over the running time of every attempt; RocksDB's operations (the job's and
/// RocksDB's own counters, which start again on each reopened database) over those records.
#[test]
fn rates_after_failures_count_every_attempt_and_the_replayed_records() {
    use statebench::engine::RunState;
    use statebench::summary::Summary;
    let p = profile("incremental", "100ms", EXACTLY_ONCE);
    let clean_dir = tempfile::tempdir().unwrap();
    let clean = Summary::new(&run(
        p.clone(),
        30_000,
        clean_dir.path(),
        FailureSpec::default(),
        None,
    ));
    assert_eq!(
        (clean.records_processed, clean.records_replayed),
        (30_000, 0)
    );
    let dir = tempfile::tempdir().unwrap();
    let failures = FailureSpec {
        at_events: vec![12_000, 24_000],
        every: None,
    };
    let outcome = run(p, 30_000, dir.path(), failures, None);
    let failed = Summary::new(&outcome);
    let restores = &outcome.checkpoints.as_ref().unwrap().restores;
    assert_eq!(restores.len(), 2);
    let replayed: u64 = restores.iter().map(|r| r.records_replayed).sum();
    assert!(replayed > 0, "{restores:?}");
    // The job's position is the log's 30,000; it processed those and the replayed ones.
    assert_eq!(failed.events, 30_000);
    assert_eq!(failed.records_replayed, replayed);
    assert_eq!(failed.records_processed, 30_000 + replayed);
    let job = &failed.jobs[0];
    assert_eq!(
        (job.records_read, job.records_replayed, job.records_before),
        (30_000 + replayed, replayed, 0)
    );
    // The snapshots' intervals hold the same work in the same time as the summary.
    let running: Vec<_> = outcome
        .snapshots
        .iter()
        .filter(|s| s.state != RunState::Paused)
        .collect();
    let in_intervals: u64 = running.iter().map(|s| s.events_in_interval).sum();
    assert_eq!(in_intervals, failed.records_processed);
    let secs: f64 = running.iter().map(|s| s.interval_secs).sum();
    assert!(
        (secs - failed.processing_secs).abs() < 0.05 * secs + 0.1,
        "the summary's {:.2} s against the intervals' {secs:.2} s",
        failed.processing_secs
    );
    assert!(
        (failed.events_per_sec * failed.processing_secs - failed.records_processed as f64).abs()
            < 1.0
    );
    // A replayed record costs what it cost the first time.
    let ratio = failed.rocksdb_ops_per_event / clean.rocksdb_ops_per_event;
    assert!(
        (0.95..1.05).contains(&ratio),
        "ops per event {:.2} after failures, {:.2} without",
        failed.rocksdb_ops_per_event,
        clean.rocksdb_ops_per_event
    );
    // RocksDB's own counters hold every opening's work, not only the last one's.
    let written = |s: &Summary| s.rocksdb_keys_written as f64 / s.records_processed as f64;
    let ratio = written(&failed) / written(&clean);
    assert!(
        (0.9..1.1).contains(&ratio),
        "RocksDB keys written per record {:.2} after failures, {:.2} without",
        written(&failed),
        written(&clean)
    );
}
