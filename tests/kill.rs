//! A `kill -9` of the real binary mid-run, then `--restore latest` on the same data directory:
//! nothing committed is lost, nothing is counted twice in a read_committed view.

use std::process::{Command, Stdio};
use std::time::Duration;

mod common;

use serde_json::Value;

const WORKLOAD: &str = include_str!("fixtures/valid/paced-kill.yaml");

fn profile(mode_edits: &str) -> String {
    format!(
        "extends: flink-default\n\
         execution.checkpointing.interval: 200ms\n\
         execution.checkpointing.num-retained: 2\n\
         sink.delivery-guarantee: EXACTLY_ONCE\n\
         sink.reader-isolation: read_committed\n\
         {mode_edits}"
    )
}

fn kill_then_restore(mode_edits: &str) {
    let tmp = tempfile::tempdir().unwrap();
    let workload = tmp.path().join("w.yaml");
    let profile_file = tmp.path().join("p.yaml");
    std::fs::write(&workload, WORKLOAD).unwrap();
    std::fs::write(&profile_file, profile(mode_edits)).unwrap();
    let data = tmp.path().join("data");
    let report = tmp.path().join("r.json");
    let bin = env!("CARGO_BIN_EXE_statebench");
    let args = |extra: &[&str]| {
        let mut a: Vec<String> = [
            "run",
            "-w",
            workload.to_str().unwrap(),
            "-p",
            profile_file.to_str().unwrap(),
            "--data-dir",
            data.to_str().unwrap(),
            "--quiet",
        ]
        .iter()
        .map(|s| s.to_string())
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
    // Kill once a few checkpoints completed, well before the 4 s the run would take.
    common::kill_once_checkpointed(&mut child, &data, Duration::from_millis(150));
    // How far the killed process got, as it marked it.
    let mark: u64 = std::fs::read_to_string(data.join("progress"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();

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
    let error = &summary["result_error"];
    assert_eq!(summary["result_error_applies"], true);
    for field in ["over", "under", "missing"] {
        assert_eq!(error[field], 0, "{field}: {error}");
    }
    assert!(error["compared"].as_u64().unwrap() > 0);
    let c = &summary["checkpoints"];
    assert_eq!(c["restarts"], 1, "{c}");
    assert_eq!(c["delivery"]["duplicates_seen"], 0, "{c}");
    assert_eq!(c["delivery"]["records_lost"], 0, "{c}");
    // The restored run read on from the checkpoint, not from the start.
    let jobs = &summary["jobs"][0];
    assert!(
        jobs["started_from"]
            .as_str()
            .unwrap()
            .starts_with("checkpoint "),
        "{jobs}"
    );
    // Offsets committed at the end cover the whole log.
    let broker: Value =
        serde_json::from_str(&std::fs::read_to_string(data.join("broker.json")).unwrap()).unwrap();
    let committed: u64 = broker["statebench"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o.as_u64().unwrap())
        .sum();
    assert_eq!(committed, 60_000);

    // The restored process's rates are its own work over its own time: the records it read
    // (from the checkpoint's offsets on, the killed process's last ones again) and RocksDB's
    // operations for them, as in a run that never failed.
    let read = jobs["records_read"].as_u64().unwrap();
    let before = jobs["records_before"].as_u64().unwrap();
    let replayed = jobs["records_replayed"].as_u64().unwrap();
    assert_eq!(summary["events"], 60_000);
    assert_eq!(before + read, 60_000, "{jobs}");
    assert_eq!(summary["records_processed"].as_u64().unwrap(), read);
    assert_eq!(summary["records_replayed"].as_u64().unwrap(), replayed);
    // Killed 150 ms after a checkpoint completed, and its barrier was earlier still: the
    // records since are read again, as many as the killed process's mark says it had read.
    assert!(replayed > 0 && replayed < read, "{jobs}");
    assert_eq!(replayed, mark - before, "marked {mark}: {jobs}");
    assert_eq!(c["records_replayed"].as_u64().unwrap(), replayed, "{c}");
    let secs = summary["processing_secs"].as_f64().unwrap();
    let rate = summary["events_per_sec"].as_f64().unwrap();
    assert!(
        (rate * secs - read as f64).abs() < 1.0,
        "{rate} ev/s x {secs} s"
    );
    let ops_per_event = summary["rocksdb_ops_per_event"].as_f64().unwrap();
    let reference = reference_ops_per_event(tmp.path(), &profile_file);
    let ratio = ops_per_event / reference;
    assert!(
        (0.9..1.1).contains(&ratio),
        "ops per event {ops_per_event:.2} after the restore, {reference:.2} in a run that never failed"
    );

    // The whole job, both processes: the killed one's work up to its last checkpoint (what the
    // checkpoint recorded) and the restored one's, replays included. Each record is in the
    // tally once (the killed process's work after the checkpoint is lost with it, and read
    // again here), so its rates compare with a run that never failed.
    let job = &summary["whole_job"];
    assert_eq!(job["processes"], 2, "{job}");
    assert_eq!(job["records_processed"], 60_000, "{job}");
    assert_eq!(job["records_replayed"].as_u64().unwrap(), replayed, "{job}");
    let job_secs = job["processing_secs"].as_f64().unwrap();
    assert!(job_secs > secs, "the killed process ran too: {job}");
    let job_rate = job["events_per_sec"].as_f64().unwrap();
    assert!((job_rate * job_secs - 60_000.0).abs() < 1.0, "{job}");
    let job_ops = job["rocksdb_ops_per_event"].as_f64().unwrap() / reference;
    assert!(
        (0.95..1.05).contains(&job_ops),
        "the whole job's ops per event are {job_ops:.3} of a run that never failed: {job}"
    );
}

/// RocksDB operations per event of the workload run to its end without a failure (unpaced: the
/// pace changes the time, not the operations).
fn reference_ops_per_event(tmp: &std::path::Path, profile_file: &std::path::Path) -> f64 {
    let workload = tmp.join("unpaced.yaml");
    std::fs::write(&workload, WORKLOAD.replace("rate: 15000\n", "")).unwrap();
    let report = tmp.join("reference.json");
    let out = Command::new(env!("CARGO_BIN_EXE_statebench"))
        .args(["run", "-w", workload.to_str().unwrap(), "-p"])
        .arg(profile_file)
        .args(["--quiet", "--report", report.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    json["segments"][0]["summary"]["rocksdb_ops_per_event"]
        .as_f64()
        .unwrap()
}

#[test]
fn kill_9_then_restore_latest_loses_nothing_and_counts_nothing_twice_incremental() {
    kill_then_restore("execution.checkpointing.incremental: true\n");
}

#[test]
fn kill_9_then_restore_latest_loses_nothing_and_counts_nothing_twice_changelog() {
    kill_then_restore(
        "state.changelog.enabled: true\nstate.changelog.periodic-materialize.interval: 600ms\n",
    );
}

#[test]
fn kill_9_then_restore_latest_loses_nothing_and_counts_nothing_twice_heap_timers() {
    // The timers live on the heap and come back from the checkpoint's raw keyed state.
    kill_then_restore("timer-service.factory: HEAP\nexecution.checkpointing.incremental: true\n");
}
