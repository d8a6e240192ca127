//! `state.backend.rocksdb.timer-service.factory` and `.cache-size`: what RocksDB sees with
//! ROCKSDB and HEAP timers, exact results either way (across failures and restores too), and
//! the knobs' errors.

use statebench::config::{Profile, Workload};
use statebench::engine::{self, EngineConfig, FailureSpec, RestoreFrom, RunOutcome};
use statebench::pipeline::timers::HeapTimers;
use statebench::pipeline::timers::raw::{self, RAW_KEYED_STATE};

fn profile(edits: &[(&str, &str)]) -> Profile {
    let mut p = Profile::load("flink-default").unwrap();
    for (k, v) in edits {
        p = p.edited(k, v).unwrap();
    }
    p
}

/// The reference job on few keys: each key group holds many timers at once.
fn workload(keys: u64) -> Workload {
    let mut w = Workload::load("smoke").unwrap();
    w.spec.keys.count = keys;
    w.spec.events = 30_000;
    w
}

fn run(
    w: Workload,
    p: Profile,
    dir: &std::path::Path,
    failures: FailureSpec,
    restore: Option<RestoreFrom>,
) -> RunOutcome {
    engine::run_to_completion(EngineConfig {
        failures,
        restore,
        events: w.spec.events,
        ..EngineConfig::new(w, p, dir)
    })
    .unwrap()
}

/// The column families RocksDB's OPTIONS file of the run lists.
fn column_families(outcome: &RunOutcome) -> Vec<String> {
    let path = outcome.options_file.as_ref().expect("an OPTIONS file");
    let text = std::fs::read_to_string(path).unwrap();
    text.lines()
        .filter_map(|l| l.strip_prefix("[CFOptions \""))
        .map(|l| l.trim_end_matches("\"]").to_string())
        .collect()
}

#[test]
fn heap_timers_take_the_timer_column_families_and_their_operations_out_of_rocksdb() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let none = FailureSpec::default();
    let rocks = run(workload(300), profile(&[]), a.path(), none.clone(), None);
    let heap = run(
        workload(300),
        profile(&[("timer-service.factory", "HEAP")]),
        b.path(),
        none,
        None,
    );
    assert_eq!(
        column_families(&rocks),
        [
            "default",
            "window-stats",
            "timer-state",
            "_timer_state/processing_user-timers",
            "_timer_state/event_user-timers"
        ]
    );
    assert_eq!(
        column_families(&heap),
        ["default", "window-stats", "timer-state"]
    );
    let (r, h) = (
        rocks.snapshots.last().unwrap(),
        heap.snapshots.last().unwrap(),
    );
    // ROCKSDB timers: write batches of timer puts and deletes, seeks to refill the caches.
    assert!(
        r.ops.batch_writes > 0 && r.ops.iterator_seeks > 0,
        "{:?}",
        r.ops
    );
    // HEAP timers: none of that; the job's own state operations are the same.
    assert_eq!(
        (h.ops.batch_writes, h.ops.iterator_seeks),
        (0, 0),
        "{:?}",
        h.ops
    );
    assert_eq!(
        (h.ops.gets, h.ops.puts, h.ops.deletes),
        (r.ops.gets, r.ops.puts, r.ops.deletes)
    );
    assert!(h.ops.total() < r.ops.total());
    // The same timers fire, and the same exact results.
    assert_eq!(r.pipeline.timers_fired, h.pipeline.timers_fired);
    assert!(h.pipeline.timers_fired > 0);
    for o in [&rocks, &heap] {
        assert!(o.result_error.is_exact(), "{:?}", o.result_error);
        assert!(o.state_error.is_exact(), "{:?}", o.state_error);
        assert!(o.result_error.compared > 0);
    }
    assert_eq!(rocks.final_state, heap.final_state);
}

#[test]
fn a_smaller_timer_cache_refills_from_rocksdb_more_often() {
    // 40 keys: each key group's timers outgrow a cache of 8 many times over.
    let seeks = |size: &str| {
        let dir = tempfile::tempdir().unwrap();
        let p = profile(&[("timer-service.cache-size", size)]);
        let o = run(workload(40), p, dir.path(), FailureSpec::default(), None);
        assert!(o.result_error.is_exact(), "{:?}", o.result_error);
        o.snapshots.last().unwrap().ops.iterator_seeks
    };
    let (small, default) = (seeks("8"), seeks("128"));
    assert!(
        small > 2 * default,
        "cache of 8: {small} seeks, of 128: {default}"
    );
}

#[test]
fn heap_timers_are_exact_across_failures_with_every_checkpoint_kind() {
    for (mode, edits) in [
        ("full", vec![]),
        (
            "incremental",
            vec![("execution.checkpointing.incremental", "true")],
        ),
        (
            "changelog",
            vec![
                ("state.changelog.enabled", "true"),
                ("state.changelog.periodic-materialize.interval", "300ms"),
            ],
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let mut all = vec![
            ("timer-service.factory", "HEAP"),
            ("execution.checkpointing.interval", "60ms"),
            ("sink.delivery-guarantee", "EXACTLY_ONCE"),
            ("sink.reader-isolation", "read_committed"),
        ];
        all.extend(edits);
        let failures = FailureSpec {
            at_events: vec![9_000, 21_000],
            every: None,
        };
        let o = run(workload(300), profile(&all), dir.path(), failures, None);
        let c = o.checkpoints.as_ref().unwrap();
        assert_eq!(c.restores.len(), 2, "{mode}");
        assert!(
            c.restores.iter().all(|r| r.checkpoint.is_some()),
            "{mode}: every failure restarts from a checkpoint: {:?}",
            c.restores
        );
        // Every completed checkpoint carries the heap timers as raw keyed state.
        assert!(c.history.iter().any(|h| h.failed.is_none()));
        // Each timer fired exactly once: a timer fired twice decrements twice (a count below
        // zero, results too low), one lost never decrements (results too high).
        let job = o.snapshots.last().unwrap().pipeline.job;
        assert_eq!(
            (job.negative_counts, job.missing_decrements),
            (0, 0),
            "{mode}"
        );
        assert!(o.result_error.is_exact(), "{mode}: {:?}", o.result_error);
        assert!(o.state_error.is_exact(), "{mode}: {:?}", o.state_error);
        assert!(o.result_error.compared > 0);
    }
}

#[test]
fn heap_checkpoints_hold_the_pending_timers_as_raw_keyed_state_and_rocksdb_ones_none() {
    let raw_files = |factory: &str| {
        let dir = tempfile::tempdir().unwrap();
        let p = profile(&[
            ("timer-service.factory", factory),
            ("execution.checkpointing.interval", "60ms"),
            ("execution.checkpointing.num-retained", "3"),
            ("execution.checkpointing.incremental", "true"),
        ]);
        let o = run(workload(300), p, dir.path(), FailureSpec::default(), None);
        let c = o.checkpoints.unwrap();
        let mut out = Vec::new();
        for h in c.history.iter().filter(|h| h.failed.is_none()) {
            let chk = dir.path().join("checkpoints").join(format!("chk-{}", h.id));
            if chk.exists() {
                let raw = std::fs::metadata(chk.join(RAW_KEYED_STATE))
                    .map(|m| m.len())
                    .ok();
                out.push((h.bytes, raw));
            }
        }
        assert!(!out.is_empty());
        out
    };
    assert!(raw_files("ROCKSDB").iter().all(|(_, raw)| raw.is_none()));
    // Flink's per key group headers alone (no timer pending).
    let headers = raw::snapshot(&HeapTimers::new("user-timers")).len() as u64;
    let heap = raw_files("HEAP");
    for (bytes, raw) in &heap {
        let raw = raw.expect("every HEAP checkpoint holds its raw keyed state");
        // Uploaded with the checkpoint: its bytes count it.
        assert!(raw >= headers && *bytes >= raw, "{bytes} {raw} {headers}");
    }
    assert!(
        heap.iter().any(|(_, raw)| raw.unwrap() > headers + 10_000),
        "timers pending at a barrier are in its checkpoint: {heap:?}"
    );
}

#[test]
fn a_checkpoint_restored_with_the_other_timer_factory_is_an_error_naming_the_knob() {
    let dir = tempfile::tempdir().unwrap();
    let with = |factory: &str| {
        profile(&[
            ("timer-service.factory", factory),
            ("execution.checkpointing.interval", "60ms"),
        ])
    };
    let _ = run(
        workload(300),
        with("HEAP"),
        dir.path(),
        FailureSpec::default(),
        None,
    );
    let w = workload(300);
    let events = w.spec.events;
    let err = engine::run_to_completion(EngineConfig {
        restore: Some(RestoreFrom::Latest),
        events,
        ..EngineConfig::new(w, with("ROCKSDB"), dir.path())
    })
    .expect_err("a HEAP checkpoint restored with ROCKSDB timers fails")
    .to_string();
    assert!(
        err.contains("timer-service.factory: HEAP") && err.contains("ROCKSDB"),
        "{err}"
    );
}

#[test]
fn bad_timer_knobs_are_errors_naming_the_key_and_what_is_valid() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("timers.yaml");
    std::fs::write(
        &file,
        "extends: flink-default\ntimer-service.factory: HEAPS\n",
    )
    .unwrap();
    let err = Profile::load(file.to_str().unwrap())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("key 'timer-service.factory'")
            && err.contains("HEAPS")
            && err.contains("`ROCKSDB`")
            && err.contains("`HEAP`"),
        "{err}"
    );
    std::fs::write(
        &file,
        "extends: flink-default\ntimer-service.cache-size: 0\n",
    )
    .unwrap();
    let err = Profile::load(file.to_str().unwrap())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("'timer-service.cache-size' is 0") && err.contains("at least 1"),
        "{err}"
    );
    // Flink's keys, in any case as Flink reads enums.
    std::fs::write(
        &file,
        "state.backend.rocksdb.timer-service.factory: heap\nstate.backend.rocksdb.timer-service.cache-size: 64\n",
    )
    .unwrap();
    let p = Profile::load(file.to_str().unwrap()).unwrap();
    assert_eq!(
        p.knobs.timer_service_factory,
        statebench::config::timer_service::TimerFactory::Heap
    );
    assert_eq!(p.knobs.timer_service_cache_size, 64);
}

#[test]
fn the_flink_export_writes_the_timer_keys_flink_reads_back() {
    use statebench::export::{self, FlinkVersion};
    let dir = tempfile::tempdir().unwrap();
    let p = profile(&[
        ("timer-service.factory", "HEAP"),
        ("timer-service.cache-size", "64"),
    ]);
    for version in [FlinkVersion::V1_20, FlinkVersion::V2] {
        let text = export::flink_for(&p, version);
        assert!(
            text.contains("state.backend.rocksdb.timer-service.factory: HEAP")
                && text.contains("state.backend.rocksdb.timer-service.cache-size: 64"),
            "{text}"
        );
        let sub = dir.path().join(version.name());
        std::fs::create_dir_all(&sub).unwrap();
        let path = sub.join("config.yaml");
        std::fs::write(&path, &text).unwrap();
        let back = Profile::load(&path.to_string_lossy()).unwrap();
        assert_eq!(back.knobs, p.knobs, "{text}");
    }
}

#[test]
fn a_restore_from_a_savepoint_of_heap_timers_is_exact() {
    use statebench::engine::SavepointFormat;
    for format in [SavepointFormat::Canonical, SavepointFormat::Native] {
        let dir = tempfile::tempdir().unwrap();
        let p = profile(&[
            ("timer-service.factory", "HEAP"),
            ("execution.checkpointing.interval", "100ms"),
            ("sink.delivery-guarantee", "EXACTLY_ONCE"),
            ("sink.reader-isolation", "read_committed"),
        ]);
        let first = engine::run_to_completion(EngineConfig {
            events: 12_000,
            savepoints: vec![(8_000, format)],
            ..EngineConfig::new(workload(300), p.clone(), dir.path())
        })
        .unwrap();
        let c = first.checkpoints.unwrap();
        let savepoint = std::path::PathBuf::from(&c.savepoints[0].path);
        assert!(savepoint.join(RAW_KEYED_STATE).exists(), "{format:?}");
        let second = run(
            workload(300),
            p,
            dir.path(),
            FailureSpec::default(),
            Some(RestoreFrom::Dir(savepoint)),
        );
        assert!(
            second.state_error.is_exact(),
            "{format:?}: {:?}",
            second.state_error
        );
        assert!(
            second.result_error.is_exact(),
            "{format:?}: {:?}",
            second.result_error
        );
    }
}
