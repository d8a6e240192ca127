//! Chained operators end to end: each operator its own RocksDB instance on the slot's shared
//! block cache and WriteBufferManager, records flowing from one to the next, and every instance
//! checkpointed, restored and savepointed together.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

mod common;

use serde_json::Value;
use statebench::config::{Profile, Workload};
use statebench::engine::{self, EngineConfig, FailureSpec, RestoreFrom, RunOutcome};

/// dedup (keep-first, TTL) -> session windows with an aggregate function, keyed by the same key.
const CHAIN: &str = "\
description: dedup then session windows (a chain of two operators)
keys:
  count: 1500
  distribution: zipf
  zipf-exponent: 0.8
partitions: 2
rate: max
event-time:
  span: 2h
  out-of-orderness: 5s
value-size:
  min: 50
  max: 200
job:
  - kind: dedup
    keep: first
    ttl: 10m
  - kind: window
    assigner: session
    gap: 5m
    function: aggregate
serializer: compact
events: 20000
bounded-end-delay: 0s
seed: 7
";

/// The chain the durability tests restore: dedup keeping the last record (every record goes on)
/// without a state TTL, paced so that checkpoints complete between failures. (A dedup TTL
/// restored in a new process counts over in a single operator too: an open issue of its own.)
fn durable_chain() -> String {
    CHAIN
        .replace("    keep: first\n    ttl: 10m\n", "    keep: last\n")
        .replace("rate: max", "rate: 40000")
}

fn workload(dir: &Path, text: &str) -> Workload {
    let path = dir.join("chain.yaml");
    std::fs::write(&path, text).unwrap();
    Workload::load(path.to_str().unwrap()).unwrap()
}

fn profile(edits: &[(&str, &str)]) -> Profile {
    let mut p = Profile::load("flink-default").unwrap();
    for (k, v) in edits {
        p = p.edited(k, v).unwrap();
    }
    p
}

const INCREMENTAL: &[(&str, &str)] = &[
    ("execution.checkpointing.interval", "20ms"),
    ("execution.checkpointing.num-retained", "2"),
    ("execution.checkpointing.incremental", "true"),
    ("sink.delivery-guarantee", "EXACTLY_ONCE"),
    ("sink.reader-isolation", "read_committed"),
];
const FULL: &[(&str, &str)] = &[
    ("execution.checkpointing.interval", "20ms"),
    ("execution.checkpointing.num-retained", "2"),
    ("sink.delivery-guarantee", "EXACTLY_ONCE"),
    ("sink.reader-isolation", "read_committed"),
];

fn run(
    w: Workload,
    p: Profile,
    data: &Path,
    events: u64,
    failures: FailureSpec,
    restore: Option<RestoreFrom>,
) -> RunOutcome {
    engine::run_to_completion(EngineConfig {
        events,
        failures,
        restore,
        ..EngineConfig::new(w, p, data)
    })
    .unwrap()
}

/// Every `key: 0x...` pointer in a RocksDB LOG (the objects an instance was opened with).
fn log_pointers(db: &Path, key: &str) -> Vec<String> {
    let log = std::fs::read_to_string(db.join("LOG")).unwrap();
    let mut found: Vec<String> = log
        .lines()
        .filter_map(|l| l.split_once(key))
        // The key itself, not a longer one ending with it (`no_block_cache: 0`).
        .filter(|(before, _)| before.is_empty() || before.ends_with(' '))
        .map(|(_, v)| v.trim().to_string())
        .collect();
    found.sort();
    found.dedup();
    found
}

fn column_families(db: &Path) -> Vec<String> {
    let newest = std::fs::read_dir(db)
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().to_string())
        .filter(|n| n.starts_with("OPTIONS-"))
        .max_by_key(|n| n["OPTIONS-".len()..].parse::<u64>().unwrap())
        .unwrap();
    std::fs::read_to_string(db.join(newest))
        .unwrap()
        .lines()
        .filter_map(|l| l.strip_prefix("[CFOptions \""))
        .map(|l| l.trim_end_matches("\"]").to_string())
        .filter(|n| n != "default")
        .collect()
}

fn assert_exact(outcome: &RunOutcome) {
    assert!(
        outcome.result_error.is_exact(),
        "{:?}",
        outcome.result_error
    );
    assert!(outcome.result_error.compared > 0);
    if let Some(end) = &outcome.end_of_input_error {
        assert!(end.is_exact(), "{end:?}");
    }
}

#[test]
fn a_chain_runs_exact_on_two_instances_sharing_one_cache_and_write_buffer_manager() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let p = profile(&[]);
    let outcome = run(
        workload(tmp.path(), CHAIN),
        p.clone(),
        &data,
        20_000,
        FailureSpec::default(),
        None,
    );
    assert_exact(&outcome);
    // Each operator's figures: the window reads what the dedup emits, nothing else.
    let ops = &outcome.operators;
    assert_eq!(ops.len(), 2, "{ops:?}");
    assert_eq!(
        (ops[0].kind.as_str(), ops[1].kind.as_str()),
        ("dedup", "window")
    );
    assert_eq!(ops[0].events_in, 20_000);
    assert!(ops[0].emitted > 0 && ops[0].emitted < 20_000, "{ops:?}");
    assert_eq!(ops[1].events_in, ops[0].emitted, "{ops:?}");
    assert!(ops[1].ops.total() > 0, "{ops:?}");
    let last = outcome.snapshots.last().unwrap();
    assert_eq!(last.ops.total(), ops[0].ops.total() + ops[1].ops.total());

    // Two RocksDB instances, each with its own operator's column families.
    let (db0, db1) = (data.join("db"), data.join("db-op1"));
    let (cfs0, cfs1) = (column_families(&db0), column_families(&db1));
    assert!(cfs0.iter().any(|c| c == "seen"), "{cfs0:?}");
    assert!(cfs1.iter().any(|c| c == "window-contents"), "{cfs1:?}");
    assert!(
        cfs0.iter()
            .all(|c| !cfs1.contains(c) || c.starts_with("_timer_state"))
    );
    assert!(!cfs0.iter().any(|c| c == "window-contents"), "{cfs0:?}");
    // The same block cache and WriteBufferManager (RocksDB's LOG names the objects each
    // instance was opened with), sized for the slot as for a single instance.
    let cache = log_pointers(&db0, "block_cache: ");
    assert_eq!(cache.len(), 1, "{cache:?}");
    assert_eq!(cache, log_pointers(&db1, "block_cache: "));
    let wbm = log_pointers(&db0, "Options.write_buffer_manager: ");
    assert_eq!(wbm.len(), 1, "{wbm:?}");
    assert_eq!(wbm, log_pointers(&db1, "Options.write_buffer_manager: "));
    let capacity = p.derived(1).block_cache_capacity.to_string();
    for db in [&db0, &db1] {
        assert_eq!(log_pointers(db, "capacity : "), vec![capacity.clone()]);
    }
    // The summary's per-state lines name their operator; the metrics hold both instances.
    let cfs = &last.rocksdb.lsm.column_families;
    assert!(
        cfs.iter().any(|c| c.name == "seen" && c.operator == 0),
        "{cfs:?}"
    );
    assert!(
        cfs.iter()
            .any(|c| c.name == "window-contents" && c.operator == 1)
    );
    assert_eq!(
        last.rocksdb.memory.block_cache_capacity.to_string(),
        capacity
    );
}

#[test]
fn a_chain_restored_after_injected_failures_is_exact_incremental() {
    restored_after_failures(INCREMENTAL, tempfile::tempdir().unwrap().path());
}

#[test]
fn a_chain_restored_after_injected_failures_is_exact_full() {
    restored_after_failures(FULL, tempfile::tempdir().unwrap().path());
}

/// HEAP timers (the session window's, operator 1's) leave RocksDB and go into each
/// checkpoint as that operator's raw keyed state, in its `op1/`; restored from there, every
/// window still fires once.
#[test]
fn a_chain_with_heap_timers_restored_after_injected_failures_is_exact() {
    let heap = [INCREMENTAL, &[("timer-service.factory", "HEAP")]].concat();
    let tmp = tempfile::tempdir().unwrap();
    let chk = restored_after_failures(&heap, tmp.path());
    let raw = chk.join("op1").join("timers.raw-keyed-state");
    assert!(
        std::fs::metadata(&raw).unwrap().len() > 0,
        "{}",
        raw.display()
    );
}

/// Runs the durable chain with two injected failures under `edits`: exact, restored from a
/// checkpoint at least once, in folder `tmp`. Returns the newest checkpoint's folder.
fn restored_after_failures(edits: &[(&str, &str)], tmp: &Path) -> PathBuf {
    let data = tmp.join("data");
    let outcome = run(
        workload(tmp, &durable_chain()),
        profile(edits),
        &data,
        20_000,
        FailureSpec {
            at_events: vec![7_000, 15_000],
            every: None,
        },
        None,
    );
    assert_exact(&outcome);
    let c = outcome.checkpoints.as_ref().unwrap();
    assert_eq!(c.restores.len(), 2);
    assert!(
        c.restores.iter().any(|r| r.checkpoint.is_some()),
        "{:?}",
        c.restores
    );
    assert_eq!(c.delivery.duplicates_seen, 0);
    // Operator 1's files are in each checkpoint's op1/.
    let store = data.join("checkpoints");
    let chk = std::fs::read_dir(&store)
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with("chk-"))
        .max()
        .unwrap();
    let op1: Vec<String> = std::fs::read_dir(chk.join("op1"))
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().to_string())
        .collect();
    assert!(
        op1.iter()
            .any(|n| n.starts_with("MANIFEST") || n == "state.full"),
        "{op1:?}"
    );
    let meta: Value =
        serde_json::from_str(&std::fs::read_to_string(chk.join("_metadata")).unwrap()).unwrap();
    let operators = meta["job"]["operators"].as_array().unwrap();
    assert_eq!(operators.len(), 1, "{meta}");
    assert_eq!(operators[0]["index"], 1);
    assert!(operators[0]["records_in"].as_u64().unwrap() > 0, "{meta}");
    chk
}

#[test]
fn a_savepoint_of_a_chain_restores_exact_canonical_and_native() {
    savepoints_restore_exact(&[]);
}

#[test]
fn a_savepoint_of_a_chain_with_heap_timers_restores_exact() {
    savepoints_restore_exact(&[("timer-service.factory", "HEAP")]);
}

fn savepoints_restore_exact(edits: &[(&str, &str)]) {
    use statebench::engine::SavepointFormat;
    let heap = !edits.is_empty();
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let w = workload(tmp.path(), &durable_chain());
    let p = profile(edits);
    let first = engine::run_to_completion(EngineConfig {
        events: 12_000,
        savepoints: vec![
            (5_000, SavepointFormat::Canonical),
            (9_000, SavepointFormat::Native),
        ],
        ..EngineConfig::new(w.clone(), p.clone(), &data)
    })
    .unwrap();
    let c = first.checkpoints.unwrap();
    assert_eq!(c.savepoints.len(), 2, "{:?}", c.savepoints);
    for sp in &c.savepoints {
        let path = PathBuf::from(&sp.path);
        assert!(path.join("op1").is_dir(), "{}", path.display());
        assert_eq!(
            path.join("op1/timers.raw-keyed-state").exists(),
            heap,
            "{}",
            path.display()
        );
        let again = run(
            w.clone(),
            p.clone(),
            &data,
            20_000,
            FailureSpec::default(),
            Some(RestoreFrom::Dir(path)),
        );
        assert_exact(&again);
        assert_eq!(again.operators.len(), 2);
        assert!(again.operators[1].events_in > 0);
    }
}

#[test]
fn a_chain_checkpoint_does_not_restore_into_a_single_operator_job() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    run(
        workload(tmp.path(), &durable_chain()),
        profile(INCREMENTAL),
        &data,
        8_000,
        FailureSpec::default(),
        None,
    );
    let single = durable_chain().replace(
        "  - kind: window\n    assigner: session\n    gap: 5m\n    function: aggregate\n",
        "",
    );
    let err = engine::run_to_completion(EngineConfig {
        events: 10_000,
        restore: Some(RestoreFrom::Latest),
        ..EngineConfig::new(workload(tmp.path(), &single), profile(INCREMENTAL), &data)
    })
    .err()
    .unwrap()
    .to_string();
    assert!(
        err.contains("state of 2 operator(s); the workload's job has 1"),
        "{err}"
    );
}

#[test]
fn kill_9_of_a_chain_then_restore_latest_is_exact() {
    let tmp = tempfile::tempdir().unwrap();
    let workload = tmp.path().join("w.yaml");
    std::fs::write(
        &workload,
        durable_chain()
            .replace("rate: 40000", "rate: 8000")
            .replace("events: 20000", "events: 30000"),
    )
    .unwrap();
    let profile_file = tmp.path().join("p.yaml");
    let mut text = "extends: flink-default\n".to_string();
    for (k, v) in INCREMENTAL {
        text.push_str(&format!("{k}: {v}\n"));
    }
    std::fs::write(&profile_file, text).unwrap();
    let data = tmp.path().join("data");
    let report = tmp.path().join("r.json");
    let bin = env!("CARGO_BIN_EXE_statebench");
    let args = |extra: &[&str]| {
        let mut a: Vec<String> = ["run", "-w"]
            .iter()
            .map(|s| s.to_string())
            .chain([workload.display().to_string()])
            .chain(["-p".to_string(), profile_file.display().to_string()])
            .chain(["--data-dir".to_string(), data.display().to_string()])
            .chain(["--quiet".to_string()])
            .collect();
        a.extend(extra.iter().map(|s| s.to_string()));
        a
    };
    let mut child = Command::new(bin)
        .args(args(&[]))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    common::kill_once_checkpointed(&mut child, &data, Duration::from_millis(100));
    let restored = Command::new(bin)
        .args(args(&[
            "--restore",
            "latest",
            "--report",
            report.to_str().unwrap(),
        ]))
        .output()
        .unwrap();
    assert!(
        restored.status.success(),
        "{}",
        String::from_utf8_lossy(&restored.stderr)
    );
    let json: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let summary = &json["segments"][0]["summary"];
    assert_eq!(summary["result_error_applies"], true);
    let error = &summary["result_error"];
    for field in ["over", "under", "missing"] {
        assert_eq!(error[field], 0, "{field}: {error}");
    }
    assert!(error["compared"].as_u64().unwrap() > 0);
    let c = &summary["checkpoints"];
    assert_eq!(c["restarts"], 1, "{c}");
    assert_eq!(c["delivery"]["duplicates_seen"], 0, "{c}");
    assert!(
        summary["jobs"][0]["started_from"]
            .as_str()
            .unwrap()
            .starts_with("checkpoint "),
        "{}",
        summary["jobs"][0]
    );
    let ops = summary["operators"].as_array().unwrap();
    assert_eq!(ops.len(), 2, "{summary}");
    assert_eq!(ops[1]["kind"], "window");
    // The report's text names the chain's operators.
    let text = String::from_utf8_lossy(&restored.stdout);
    assert!(text.contains("operator 1 (window)"), "{text}");
    assert!(text.contains("op1 state 'window-contents'"), "{text}");
}

/// Flushes RocksDB ran in the instance at `db` (its LOG), but those at shutdown.
fn flushes(db: &Path) -> usize {
    std::fs::read_to_string(db.join("LOG"))
        .unwrap()
        .matches("\"flush_reason\": \"")
        .count()
        - std::fs::read_to_string(db.join("LOG"))
            .unwrap()
            .matches("\"flush_reason\": \"Shut down\"")
            .count()
}

#[test]
fn the_instance_that_writes_most_flushes_most_on_the_shared_write_buffer_manager() {
    // Tumbling windows (the heavy writer) -> a running aggregate of their results (a light one,
    // written in bursts when windows fire), on 64 MB of managed memory: the shared
    // WriteBufferManager is over its limit most of the time. In Flink 1.20 (parity, one slot)
    // the window's instance flushes 29 times, the aggregate's 2: each operator runs in its own
    // task thread, so the window's writes go on while the aggregate works through a burst, and
    // the window, writing most, is the one that finds the WriteBufferManager over its limit.
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let text = "\
description: tumbling windows then a running aggregate
keys:
  count: 500
partitions: 1
event-time:
  span: 2h
  out-of-orderness: 3s
events: 8000
bounded-end-delay: 0s
job:
  - kind: window
    assigner: tumbling
    size: 10m
    function: reduce
  - kind: aggregate
    function: aggregate
";
    let outcome = run(
        workload(tmp.path(), text),
        profile(&[("memory.managed-size", "64mb")]),
        &data,
        8_000,
        FailureSpec::default(),
        None,
    );
    assert_exact(&outcome);
    let (window, aggregate) = (flushes(&data.join("db")), flushes(&data.join("db-op1")));
    assert!(window > 0, "the window's instance never flushed");
    // Measured here, 12 runs at this commit and 12 at the one before: the aggregate's instance
    // flushed 10-23 times against the window's 42-80, the same spread at both; its tail
    // reaches 24-30 (against 47-50), which failed the earlier gate of half as many in 3 of 27
    // CI and local runs. What the test guards against is the reversed order (aggregate 150,
    // window 34, when the chain ran each operator to the end of its burst).
    assert!(
        aggregate < window,
        "the aggregate's instance flushed {aggregate} times, the window's {window}"
    );
}
