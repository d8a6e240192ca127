//! The bench gate end to end: a baseline passes against itself, a degraded configuration is
//! caught by the counters, and bad input is a usage error.

use clap::Parser;
use serde_json::Value;
use statebench::cli::Cli;

fn run(args: &[&str]) -> anyhow::Result<()> {
    let mut argv = vec!["statebench"];
    argv.extend_from_slice(args);
    statebench::run(Cli::try_parse_from(argv)?)
}

#[test]
fn a_baseline_passes_against_itself_and_a_starved_write_buffer_manager_is_caught() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("b.json");
    let dash = dir.path().join("dash.json");
    let base_s = base.to_str().unwrap();
    run(&[
        "bench",
        "--case",
        "minutes-sized",
        "--save-baseline",
        base_s,
        "--json",
        dash.to_str().unwrap(),
    ])
    .unwrap();
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(&base).unwrap()).unwrap();
    assert_eq!(saved["cases"][0]["case"], "minutes-sized");
    assert_eq!(saved["cases"][0]["values"]["result error (keys)"], 0.0);
    let dashboard: Value = serde_json::from_str(&std::fs::read_to_string(&dash).unwrap()).unwrap();
    assert!(
        dashboard
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["name"] == "minutes-sized / rocksdb ops / event")
    );

    run(&["bench", "--case", "minutes-sized", "--baseline", base_s]).unwrap();

    // The same case on the starved profile: forced small flushes and write stops.
    let err = run(&[
        "bench",
        "--case",
        "minutes-sized",
        "-p",
        "minutes-wbm-starved",
        "--baseline",
        base_s,
    ])
    .unwrap_err();
    assert!(err.to_string().contains("regressed"), "{err}");
    assert_eq!(statebench::exit_code(&err), 1);
}

/// The operator kinds' ci cases against their committed baseline entries: counters exact (the
/// gate passes), results exact, and each kind's RocksDB calls as the baseline has them.
#[test]
fn the_operator_kinds_ci_cases_pass_against_the_committed_baseline() {
    let baseline = concat!(env!("CARGO_MANIFEST_DIR"), "/bench/ci-baseline.json");
    run(&[
        "bench",
        "--case",
        "dedup,aggregate,process,window-sessions,interval-join",
        "--baseline",
        baseline,
    ])
    .unwrap();
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(baseline).unwrap()).unwrap();
    let case = |name: &str| {
        saved["cases"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["case"] == name)
            .unwrap_or_else(|| panic!("no {name} in the baseline"))
            .clone()
    };
    // A session window's ListState: one merge per element; the join iterates its buffers.
    assert_eq!(case("window-sessions")["values"]["merges / event"], 1.0);
    assert!(
        case("interval-join")["values"]["iterator steps / event"]
            .as_f64()
            .unwrap()
            > 1.0
    );
    for name in [
        "dedup",
        "aggregate",
        "process",
        "window-sessions",
        "interval-join",
    ] {
        assert_eq!(case(name)["values"]["result error (keys)"], 0.0, "{name}");
    }
}

#[test]
fn the_hours_filter_case_reads_filter_blocks_and_catches_monolithic_filters() {
    // The case is there to catch a filter regression (partitioned filters lost, bigger
    // partitions, a bloom filter not applied): it must read filter blocks from storage on every
    // run (on the profile's own 32 MB of memory it read 0-46 B per lookup from run to run, so a
    // regression could leave it at 0), and the gate must flag monolithic filters.
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("b.json");
    let base_arg = base.to_str().unwrap();
    run(&[
        "bench",
        "--case",
        "hours-filter",
        "--save-baseline",
        base_arg,
    ])
    .unwrap();
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(&base).unwrap()).unwrap();
    let values = &saved["cases"][0]["values"];
    let blocks = values["filter blocks read / lookup"].as_f64().unwrap();
    let bytes = values["filter bytes read / lookup"].as_f64().unwrap();
    // Measured in 5 runs: 0.034-0.041 blocks and 103-128 B per lookup.
    assert!(blocks >= 0.01, "filter blocks read per lookup {blocks}");
    assert!(bytes >= 30.0, "filter bytes read per lookup {bytes}");
    // The same case with the filters monolithic (case study 2's "before"): 8,309 B per lookup.
    let err = run(&[
        "bench",
        "--case",
        "hours-filter",
        "-p",
        "hours-monolithic-filter",
        "--baseline",
        base_arg,
    ])
    .unwrap_err();
    assert!(err.to_string().contains("regressed"), "{err}");
}

#[test]
fn bad_baselines_unknown_cases_and_thresholds_are_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, "{\"not\": \"a baseline\"}").unwrap();
    for (args, says) in [
        (
            vec!["bench", "--baseline", bad.to_str().unwrap()],
            "is not a statebench bench baseline",
        ),
        (
            vec!["bench", "--baseline", "/no/such/baseline.json"],
            "cannot read the baseline",
        ),
        (
            vec!["bench", "--case", "no-such-case"],
            "available: smoke, minutes-sized",
        ),
        (
            vec!["bench", "--max-regression=-3"],
            "give a percentage of 0 or more",
        ),
        (
            vec![
                "bench",
                "--suite",
                "overhead",
                "--baseline",
                bad.to_str().unwrap(),
            ],
            "judged against its budgets",
        ),
        (
            vec!["bench", "--suite", "overhead", "--rounds", "0"],
            "give at least 1",
        ),
        (
            vec!["bench", "--suite", "preload", "--timings"],
            "not a baseline",
        ),
    ] {
        let err = run(&args).unwrap_err();
        assert!(format!("{err:#}").contains(says), "{args:?}: {err:#}");
        assert_eq!(statebench::exit_code(&err), 2, "{args:?}");
    }
}

#[test]
fn compare_reads_two_reports() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.json");
    let b = dir.path().join("b.json");
    for (path, profile) in [(&a, "flink-default"), (&b, "minutes-wbm-sized")] {
        run(&[
            "run",
            "-q",
            "--events",
            "3000",
            "-p",
            profile,
            "--report",
            path.to_str().unwrap(),
        ])
        .unwrap();
    }
    run(&["compare", a.to_str().unwrap(), b.to_str().unwrap()]).unwrap();
    let err = run(&["compare", a.to_str().unwrap(), "/no/such.json"]).unwrap_err();
    assert_eq!(statebench::exit_code(&err), 2);
}
