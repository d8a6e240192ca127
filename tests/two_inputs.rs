//! An interval join with two real inputs reads them as Flink 1.20.1's two-input task does:
//! statebench against what Flink's own `IntervalJoinOperator` did in a `TwoInputStreamTask` on
//! the same trace (tests/fixtures/two-inputs, measured by parity/run-kinds, three Flink runs
//! alike): every key's pairs and digest, every RocksDB call, iterator seeks and nexts, exact.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

const FIXTURE: &str = "tests/fixtures/two-inputs";

/// What one statebench run of `workload` did: its results (key, label) -> value, and its
/// state calls.
struct Run {
    results: BTreeMap<(String, String), i64>,
    ops: serde_json::Value,
}

fn run(workload: &Path) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let (report, counts) = (dir.path().join("r.json"), dir.path().join("c.csv"));
    let out = Command::new(env!("CARGO_BIN_EXE_statebench"))
        .args(["run", "-q", "-w"])
        .arg(workload)
        .args([
            "-p",
            "parity/profiles/flink-default-64mb.yaml",
            "--data-dir",
        ])
        .arg(dir.path().join("data"))
        .arg("--report")
        .arg(&report)
        .arg("--final-counts")
        .arg(&counts)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(report).unwrap()).unwrap();
    let segment = report["segments"].as_array().unwrap().last().unwrap();
    let last = segment["snapshots"].as_array().unwrap().last().unwrap();
    Run {
        results: results(&counts),
        ops: last["ops"].clone(),
    }
}

/// `key,label,value` lines.
fn results(path: &Path) -> BTreeMap<(String, String), i64> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with("key,"))
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            ((f[0].to_string(), f[1].to_string()), f[2].parse().unwrap())
        })
        .collect()
}

fn flink(variant: &str) -> serde_json::Value {
    let text = std::fs::read_to_string(format!("{FIXTURE}/flink-counts.json")).unwrap();
    serde_json::from_str::<serde_json::Value>(&text).unwrap()[variant].clone()
}

/// `variant`'s run equals Flink's: results, and state calls per kind.
fn equals_flink(variant: &str) -> Run {
    let run = run(Path::new(&format!("{FIXTURE}/{variant}.yaml")));
    let expected = results(Path::new(&format!("{FIXTURE}/flink-{variant}.csv")));
    let differ: Vec<_> = expected
        .iter()
        .filter(|(k, v)| run.results.get(*k) != Some(v))
        .take(5)
        .collect();
    assert!(
        differ.is_empty() && run.results.len() == expected.len(),
        "{variant}: {} results against Flink's {}; first that differ (Flink's): {differ:?}",
        run.results.len(),
        expected.len()
    );
    let f = flink(variant);
    for (ours, theirs) in [
        ("gets", "gets"),
        ("puts", "puts"),
        ("deletes", "deletes"),
        ("iterator_seeks", "iterator_seeks"),
        ("iterator_nexts", "iterator_nexts"),
    ] {
        assert_eq!(run.ops[ours], f[theirs], "{variant}: {ours}");
    }
    run
}

#[test]
fn a_source_per_input_reads_as_flinks_two_input_task() {
    equals_flink("two-sources");
}

#[test]
fn one_source_split_in_two_reads_as_flinks_two_input_task() {
    equals_flink("one-source");
}

/// The order matters: read in the log's order (the join keeping up, `read: arrival`), the
/// same trace does less iteration than Flink's backed-up task did.
#[test]
fn the_logs_order_is_not_what_a_backed_up_task_reads() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(format!("{FIXTURE}/two-sources.yaml"))
        .unwrap()
        .replace("read: alternate", "read: arrival");
    let workload = dir.path().join("arrival.yaml");
    std::fs::write(&workload, text).unwrap();
    std::fs::copy(
        format!("{FIXTURE}/trace-join-3x.csv"),
        dir.path().join("trace-join-3x.csv"),
    )
    .unwrap();
    let arrival = run(&workload);
    let nexts = arrival.ops["iterator_nexts"].as_u64().unwrap();
    let flinks = flink("two-sources")["iterator_nexts"].as_u64().unwrap();
    assert!(
        nexts < flinks,
        "arrival order: {nexts} iterator nexts, Flink's two-input task {flinks}"
    );
}
