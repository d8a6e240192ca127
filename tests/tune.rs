//! `tune` on case study 1, alone in its test binary: whether the tuned re-run stalls depends on
//! the flush thread keeping up with the writer, which the other tests of a binary (run in
//! parallel threads) would take CPU from. Cargo runs test binaries one after another.
//!
//! The workload is paced at 10,000 events/s: `minutes-wbm-starved` limits flush writes to
//! 3 MB/s (the case study's slow disk), so at full speed whether the tuned re-run stalls at all
//! depends on how fast statebench itself is (at about 15,000 events/s here it sometimes showed
//! one or two memtable slowdowns, 10-150 ms), not on the fix.

use clap::Parser;
use serde_json::Value;
use statebench::cli::Cli;

fn run(args: &[&str]) -> anyhow::Result<()> {
    let mut argv = vec!["statebench"];
    argv.extend_from_slice(args);
    statebench::run(Cli::try_parse_from(argv)?)
}

#[test]
fn tune_applies_the_wbm_fix_within_its_budget_and_proves_it_by_a_re_run() {
    let dir = tempfile::tempdir().unwrap();
    let tuned = dir.path().join("tuned.yaml");
    let proof = dir.path().join("proof.json");
    let workload = dir.path().join("paced.yaml");
    let builtin = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("workloads/ads-minutes.yaml"),
    )
    .unwrap();
    assert!(builtin.contains("\nrate: max\n"));
    std::fs::write(
        &workload,
        builtin.replace("\nrate: max\n", "\nrate: 10000\n"),
    )
    .unwrap();
    run(&[
        "tune",
        "-w",
        &workload.to_string_lossy(),
        "-p",
        "minutes-wbm-starved",
        "--events",
        "60000",
        "--rounds",
        "1",
        "--memory-budget",
        "72mb",
        "-o",
        &tuned.to_string_lossy(),
        "--report",
        &proof.to_string_lossy(),
    ])
    .unwrap();
    // The tuned profile extends the original with the confirmed changes, and loads as such.
    let text = std::fs::read_to_string(&tuned).unwrap();
    assert!(text.contains("extends: minutes-wbm-starved"), "{text}");
    let profile = statebench::config::Profile::load(&tuned.to_string_lossy()).unwrap();
    assert_eq!(profile.knobs.managed_memory.0, 72 << 20);
    let json: Value = serde_json::from_str(&std::fs::read_to_string(&proof).unwrap()).unwrap();
    let round = &json["rounds"][0];
    let wbm = round["applied"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["finding"] == "wbm-budget")
        .unwrap();
    assert_eq!(wbm["kept"], true);
    // The re-run: no WBM finding, fewer flushes, no stall.
    let (before, after) = (&round["before"], &round["after"]);
    let ids = |m: &Value| -> Vec<String> {
        m["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["id"].as_str().unwrap().to_string())
            .collect()
    };
    assert!(ids(before).contains(&"wbm-budget".to_string()));
    assert!(!ids(after).contains(&"wbm-budget".to_string()));
    let flushes = |m: &Value| m["summary"]["flushes"].as_u64().unwrap();
    assert!(
        flushes(after) < flushes(before),
        "{} -> {}",
        flushes(before),
        flushes(after)
    );
    assert_eq!(after["summary"]["stall_micros"], 0);
}
