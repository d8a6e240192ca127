//! The headless run end to end, through the same `run` the binary calls.

use clap::Parser;
use serde_json::Value;
use statebench::cli::Cli;

fn run(args: &[&str]) -> anyhow::Result<()> {
    let mut argv = vec!["statebench"];
    argv.extend_from_slice(args);
    statebench::run(Cli::try_parse_from(argv)?)
}

/// A headless run's report: its one segment (profile, summary, snapshots).
fn segment(path: &std::path::Path) -> Value {
    let json: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let segments = json["segments"].as_array().unwrap();
    assert_eq!(segments.len(), 1, "a headless run never restarts");
    assert!(json["changed"].as_array().unwrap().is_empty());
    segments[0].clone()
}

#[test]
fn smoke_run_writes_a_report_consistent_with_rocksdbs_statistics() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("r.json");
    let report_arg = report.to_string_lossy().into_owned();
    run(&[
        "run",
        "-w",
        "smoke",
        "-p",
        "minutes-wbm-starved",
        "--events",
        "60000",
        "--quiet",
        "--report",
        &report_arg,
    ])
    .unwrap();
    let whole: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(whole["schema_version"], 2);
    assert_eq!(whole["workload"]["name"], "smoke");
    let json = segment(&report);
    assert_eq!(json["profile"]["name"], "minutes-wbm-starved");
    assert_eq!(json["label"], "minutes-wbm-starved");
    assert!(
        json["option_mismatches"].as_array().unwrap().is_empty(),
        "{}",
        json["option_mismatches"]
    );
    let s = &json["summary"];
    let num = |key: &str| {
        s[key]
            .as_f64()
            .unwrap_or_else(|| panic!("summary.{key} missing: {s}"))
    };
    assert_eq!(num("events"), 60_000.0);
    assert!(num("events_per_sec") > 0.0);
    assert!(num("p99_event_latency_us") > 0.0);
    // Memory beside the budget: the process holds RocksDB's memory and more; the starved
    // profile's WriteBufferManager fills the cache it charges.
    let (rss, rocksdb, budget) = (
        num("process_rss_peak_bytes"),
        num("rocksdb_memory_max_bytes"),
        num("rocksdb_memory_budget_bytes"),
    );
    assert!(budget > 0.0 && rocksdb > 0.0, "{s}");
    assert!(
        rss > rocksdb,
        "peak RSS {rss} below RocksDB's own {rocksdb}"
    );
    // A rate where there were lookups, null where there were none (no bloom filter here: no
    // filter block is ever looked up).
    for key in ["overall", "filter", "index", "data"] {
        let accesses = s["cache_accesses"][key].as_u64().unwrap();
        let rate = &s["cache_hit_rate"][key];
        if accesses == 0 {
            assert!(
                rate.is_null(),
                "cache_hit_rate.{key} = {rate} with no lookups"
            );
        } else {
            let v = rate.as_f64().unwrap();
            assert!((0.0..=1.0).contains(&v), "cache_hit_rate.{key} = {v}");
        }
    }
    assert!(s["cache_hit_rate"]["filter"].is_null());
    assert!(s["cache_hit_rate"]["data"].as_f64().is_some());
    // No bloom filter: no filter block is ever read. Stall time is RocksDB's own ticker.
    assert_eq!(num("filter_block_reads_per_lookup"), 0.0);
    assert_eq!(num("filter_bytes_read_per_lookup"), 0.0);
    let last_tickers = &json["snapshots"].as_array().unwrap().last().unwrap()["rocksdb"]["tickers"];
    assert_eq!(s["stall_micros"], last_tickers["stall_micros"]);
    // The starved profile flushes small memtables: SST files exist and were read from.
    assert!(num("flushes") > 0.0, "no flush in {s}");
    assert!(num("l0_files_max") >= 1.0, "flushes write L0 files: {s}");
    assert!(num("write_amplification") > 0.0);

    // Correct configuration: the job's state equals the oracle's counts.
    for key in ["over", "under", "max_abs", "missing"] {
        assert_eq!(s["result_error"][key], 0, "result_error.{key}");
    }
    assert!(s["result_error"]["compared"].as_u64().unwrap() > 0);

    // The job's own operation counts agree with RocksDB's tickers.
    assert_eq!(
        num("gets"),
        num("rocksdb_keys_read"),
        "every state get is one RocksDB key read"
    );
    // Each event does, per window, 2 gets (stats, timerState) before its 2 puts.
    let windows = whole["workload"]["windows"].as_array().unwrap().len() as f64;
    assert!(num("gets") >= 2.0 * windows * 60_000.0);
    assert!(num("rocksdb_ops_per_event") > 4.0 * windows);

    // Snapshots: one per interval at least, the last one finished, events monotonic.
    let snaps = json["snapshots"].as_array().unwrap();
    assert!(!snaps.is_empty());
    assert_eq!(snaps.last().unwrap()["state"], "finished");
    let events: Vec<f64> = snaps
        .iter()
        .map(|x| x["events"].as_f64().unwrap())
        .collect();
    assert!(events.windows(2).all(|w| w[0] <= w[1]));
    // The OPTIONS file RocksDB wrote is kept beside the report.
    let options = json["rocksdb_options_file"].as_str().unwrap();
    assert!(
        std::fs::read_to_string(options)
            .unwrap()
            .contains("[CFOptions \"window-stats\"]")
    );
}

#[test]
fn a_non_empty_data_dir_is_refused_without_reuse() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("something"), "x").unwrap();
    let data = dir.path().to_string_lossy().into_owned();
    let err = run(&["run", "--events", "100", "--quiet", "--data-dir", &data]).unwrap_err();
    assert!(
        err.to_string().contains("is not empty; pass --reuse"),
        "{err}"
    );
    assert_eq!(statebench::exit_code(&err), 2);
}

#[test]
fn reuse_continues_on_existing_state() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("db").to_string_lossy().into_owned();
    let report = dir.path().join("r.json");
    let report_arg = report.to_string_lossy().into_owned();
    run(&[
        "run",
        "--events",
        "2000",
        "--quiet",
        "--data-dir",
        &data,
        "--report",
        &report_arg,
    ])
    .unwrap();
    let first = segment(&report);
    assert_eq!(first["summary"]["result_error_applies"], true);
    // flink-default on a small job: no advice for its own sake.
    assert_eq!(first["findings"], serde_json::json!([]));
    run(&[
        "run",
        "--events",
        "2000",
        "--quiet",
        "--data-dir",
        &data,
        "--reuse",
        "--report",
        &report_arg,
    ])
    .unwrap();
    let second = segment(&report);
    // The second run continued on the first run's state: the oracle's counts do not apply.
    assert_eq!(second["summary"]["result_error_applies"], false);
    assert!(second["summary"]["gets"].as_u64().unwrap() > 0);
}

#[test]
fn bad_input_is_an_error_with_exit_code_two_and_no_report() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("r.json");
    let report_arg = report.to_string_lossy().into_owned();
    let err = run(&[
        "run",
        "-p",
        "tests/fixtures/invalid/profile-unknown-key.yaml",
        "--report",
        &report_arg,
    ])
    .unwrap_err();
    assert!(
        err.to_string().contains("did you mean 'writebuffer.size'"),
        "{err}"
    );
    assert_eq!(statebench::exit_code(&err), 2);
    assert!(!report.exists(), "no report for a run that never started");
    let err = run(&["run", "-w", "no-such-workload"]).unwrap_err();
    assert!(
        err.to_string()
            .contains("workload 'no-such-workload' not found"),
        "{err}"
    );
    let err = run(&["run", "--report", "/nonexistent-dir/r.json"]).unwrap_err();
    assert!(err.to_string().contains("does not exist"), "{err}");
}

#[test]
fn a_trace_replays_to_the_oracles_counts() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("trace.json");
    let report_arg = report.to_string_lossy().into_owned();
    run(&[
        "run",
        "-w",
        "tests/fixtures/valid/trace-workload.yaml",
        "--quiet",
        "--report",
        &report_arg,
    ])
    .unwrap();
    let json = segment(&report);
    let s = &json["summary"];
    assert_eq!(s["events"], 3000);
    assert_eq!(s["result_error"]["over"], 0);
    assert_eq!(s["result_error"]["under"], 0);
    assert_eq!(s["result_error"]["missing"], 0);
    let last = json["snapshots"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    // Bounded: the final maximum watermark fired every timer.
    assert_eq!(last["pipeline"]["watermark"], i64::MAX);
    assert!(last["pipeline"]["timers_fired"].as_u64().unwrap() > 0);
}

#[test]
fn a_malformed_trace_stops_the_run_before_anything_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("r.json");
    let data = dir.path().join("db");
    let (report_arg, data_arg) = (
        report.to_string_lossy().into_owned(),
        data.to_string_lossy().into_owned(),
    );
    let err = run(&[
        "run",
        "-w",
        "tests/fixtures/invalid/trace-malformed-workload.yaml",
        "--report",
        &report_arg,
        "--data-dir",
        &data_arg,
    ])
    .unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("malformed.jsonl line 6:"), "{msg}");
    assert!(msg.contains("expected"), "says what is valid: {msg}");
    assert_eq!(statebench::exit_code(&err), 2);
    assert!(!report.exists() && !data.exists(), "nothing half-done");
}

/// A run of nothing is refused before anything starts, with why, for every command that runs
/// (the binary exits with clap's usage code 2).
#[test]
fn zero_events_or_zero_time_is_refused_with_why() {
    for args in [
        vec!["run", "--events", "0"],
        vec!["tui", "--events", "0"],
        vec!["reproduce", "ttl-too-short", "--events", "0"],
        vec!["run", "--duration", "0s"],
    ] {
        let mut argv = vec!["statebench"];
        argv.extend_from_slice(&args);
        let err = Cli::try_parse_from(argv).unwrap_err();
        let text = err.to_string();
        assert!(text.contains("measures nothing"), "{args:?}: {text}");
        assert!(
            text.contains(args[args.len() - 2]),
            "{args:?} names the flag: {text}"
        );
        assert_eq!(err.exit_code(), 2, "{args:?}");
    }
}

#[test]
fn listing_profiles_of_a_folder_that_does_not_exist_is_an_error() {
    let err = run(&["profiles", "list", "--dir", "/nonexistent/profiles"]).unwrap_err();
    assert!(err.to_string().contains("is not a folder"), "{err}");
    assert_eq!(statebench::exit_code(&err), 2);
}

/// A data directory another run holds is a usage error that says so, once.
#[test]
fn a_data_dir_in_use_is_refused_with_why() {
    let dir = tempfile::tempdir().unwrap();
    let profile = statebench::config::Profile::load("flink-default").unwrap();
    let holder = statebench::backend::StateBackend::open(&dir.path().join("db"), &profile).unwrap();
    let data = dir.path().to_string_lossy().into_owned();
    let err = run(&[
        "run",
        "--events",
        "100",
        "--quiet",
        "--data-dir",
        &data,
        "--reuse",
    ])
    .unwrap_err();
    let text = format!("{err:#}");
    assert!(text.contains("is in use by another run"), "{text}");
    assert_eq!(text.matches("LOCK").count(), 1, "said once: {text}");
    assert_eq!(statebench::exit_code(&err), 2);
    drop(holder);
}

#[test]
fn a_data_dir_under_a_missing_folder_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("no-such-folder").join("db");
    let data_arg = data.to_string_lossy().into_owned();
    let err = run(&["run", "--events", "100", "--quiet", "--data-dir", &data_arg]).unwrap_err();
    assert!(err.to_string().contains("does not exist"), "{err}");
    assert_eq!(statebench::exit_code(&err), 2);
    assert!(!data.exists(), "nothing created");
}

#[test]
fn the_report_carries_the_advisors_findings_and_advise_reads_it_back() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("starved.json");
    let report_arg = report.to_string_lossy().into_owned();
    // Case study 1's profile: the WriteBufferManager starves every state.
    run(&[
        "run",
        "-w",
        "ads-minutes",
        "-p",
        "minutes-wbm-starved",
        "--events",
        "30000",
        "--quiet",
        "--report",
        &report_arg,
    ])
    .unwrap();
    let json = segment(&report);
    // RocksDB names why it flushed: nearly every flush was the WriteBufferManager's, of
    // memtables far below the 4 MiB write buffer (the rule reads this, not only its samples).
    let summary = &json["summary"];
    let (flushes, forced) = (
        summary["flushes"].as_u64().unwrap(),
        summary["wbm_flushes"].as_u64().unwrap(),
    );
    assert!(
        forced >= 10 && 2 * forced >= flushes,
        "{forced} of {flushes}"
    );
    assert!(summary["wbm_flush_data_bytes"].as_u64().unwrap() / forced < 1 << 20);
    let ids: Vec<&str> = json["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["id"].as_str().unwrap())
        .collect();
    assert!(ids.contains(&"wbm-budget"), "{ids:?}");
    let wbm = json["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "wbm-budget")
        .unwrap();
    // What costs no memory first: the write-buffer ratio and a write buffer within the budget;
    // more managed memory (54 MiB) last.
    assert_eq!(wbm["recommendation"][0]["key"], "memory.write-buffer-ratio");
    assert_eq!(wbm["memory_cost"], 0);
    let last = wbm["alternatives"].as_array().unwrap().last().unwrap();
    assert_eq!(last["changes"][0]["key"], "memory.managed-size");
    assert_eq!(last["memory_cost"], 54 << 20);
    // Offline, from the file alone.
    run(&["advise", &report_arg]).unwrap();
    run(&["advise", &report_arg, "--json"]).unwrap();
    // A file that is not a report is a usage error naming it.
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, "{}").unwrap();
    let err = run(&["advise", &bad.to_string_lossy()]).unwrap_err();
    assert_eq!(statebench::exit_code(&err), 2);
    assert!(err.to_string().contains("bad.json"), "{err}");
}

#[test]
fn tune_finds_nothing_to_change_on_a_healthy_profile_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let tuned = dir.path().join("tuned.yaml");
    run(&[
        "tune",
        "-w",
        "smoke",
        "-p",
        "flink-default",
        "--events",
        "20000",
        "-o",
        &tuned.to_string_lossy(),
    ])
    .unwrap();
    assert!(!tuned.exists(), "no advice for its own sake");
}

/// flink-default on ads-days: Flink's 256 MiB give each of the 3 states 28.4 MiB of WBM budget
/// against 64 MiB write buffers, so from about 100 K events the WBM cuts memtables short. No
/// write stalls: nothing measured is hurt, so at most an info, and nothing asks for memory
/// first (before: a warning recommending memory.managed-size 576mb, +320 MiB per slot).
#[test]
fn a_wbm_budget_that_stalls_nothing_makes_no_warning_and_costs_no_memory() {
    let dir = tempfile::tempdir().unwrap();
    for events in ["60000", "120000"] {
        let report = dir.path().join(format!("days-{events}.json"));
        let report_arg = report.to_string_lossy().into_owned();
        run(&[
            "run",
            "-w",
            "ads-days",
            "-p",
            "flink-default",
            "--events",
            events,
            "--quiet",
            "--report",
            &report_arg,
        ])
        .unwrap();
        let json = segment(&report);
        assert_eq!(json["summary"]["stall_micros"], 0);
        for f in json["findings"].as_array().unwrap() {
            assert_eq!(f["severity"], "info", "{events} events: {f}");
            assert_eq!(f["memory_cost"], 0, "{events} events: {f}");
        }
    }
}

#[test]
fn a_bad_or_misplaced_sink_prefix_is_refused_before_anything_is_created() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let data_arg = data.to_string_lossy().into_owned();
    for (sink, prefix, says) in [
        ("memory", "ads:", "applies to a Redis sink"),
        ("redis://127.0.0.1:1", "ads *", "' ' is not allowed"),
        ("redis://127.0.0.1:1", "", "empty"),
    ] {
        let err = run(&[
            "run",
            "--events",
            "100",
            "--quiet",
            "--data-dir",
            &data_arg,
            "--sink",
            sink,
            "--sink-prefix",
            prefix,
        ])
        .unwrap_err();
        assert!(err.to_string().contains(says), "{prefix}: {err}");
        assert_eq!(statebench::exit_code(&err), 2);
        assert!(!data.exists(), "nothing created");
    }
}
