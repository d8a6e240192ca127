//! A `kill -9` of the real binary mid-run, then `--restore latest` on the same data directory:
//! nothing committed is lost, nothing is counted twice in a read_committed view.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

const WORKLOAD: &str = "\
description: smoke, paced so that a kill lands mid-run
keys:
  count: 2000
  distribution: uniform
partitions: 4
rate: 15000
event-time:
  span: 1h
  out-of-orderness: 2s
windows: [1m, 5m, 10m, 30m]
serializer: compact
events: 60000
seed: 1
";

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

fn completed_checkpoints(dir: &std::path::Path) -> usize {
    std::fs::read_dir(dir.join("checkpoints"))
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .filter(|e| {
                    let name = e.file_name().to_string_lossy().to_string();
                    name.starts_with("chk-") && !name.ends_with(".inprogress")
                })
                .count()
        })
        .unwrap_or(0)
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
    let deadline = Instant::now() + Duration::from_secs(60);
    while completed_checkpoints(&data) < 2 || !data.join("broker.json").exists() {
        assert!(Instant::now() < deadline, "no checkpoint completed in 60 s");
        assert!(
            child.try_wait().unwrap().is_none(),
            "the run ended before it could be killed"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(150));
    child.kill().unwrap(); // SIGKILL
    let status = child.wait().unwrap();
    assert!(!status.success());

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
