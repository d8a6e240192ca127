//! `tune` on case study 1 without a memory budget, alone in its test binary: whether the tuned re-run stalls depends on
//! the flush thread keeping up with the writer, which the other tests of a binary (run in
//! parallel threads) would take CPU from. Cargo runs test binaries one after another.
//!
//! The workload is paced at 8,000 events/s: `minutes-wbm-starved` limits flush writes to
//! 3 MB/s (the case study's slow disk), so at full speed whether the tuned re-run stalls at all
//! depends on how fast statebench itself is (at about 15,000 events/s here it sometimes showed
//! one or two memtable slowdowns, 10-150 ms; at 10,000 a CI run once stalled 0.45 s), not on
//! the fix.

use clap::Parser;
use serde_json::Value;
use statebench::cli::Cli;

fn run(args: &[&str]) -> anyhow::Result<()> {
    let mut argv = vec!["statebench"];
    argv.extend_from_slice(args);
    statebench::run(Cli::try_parse_from(argv)?)
}

/// `ads-minutes` paced at 8,000 events/s, in `dir`.
fn paced_workload(dir: &std::path::Path) -> std::path::PathBuf {
    let workload = dir.join("paced.yaml");
    let builtin = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("workloads/ads-minutes.yaml"),
    )
    .unwrap();
    assert!(builtin.contains("\nrate: max\n"));
    std::fs::write(
        &workload,
        builtin.replace("\nrate: max\n", "\nrate: 8000\n"),
    )
    .unwrap();
    workload
}

#[test]
fn tune_without_a_memory_budget_removes_the_stalls_with_no_extra_memory() {
    let dir = tempfile::tempdir().unwrap();
    let tuned = dir.path().join("tuned.yaml");
    let proof = dir.path().join("proof.json");
    let workload = paced_workload(dir.path());
    run(&[
        "tune",
        "-w",
        &workload.to_string_lossy(),
        "-p",
        "minutes-wbm-starved",
        "--events",
        "30000",
        "--rounds",
        "2",
        "-o",
        &tuned.to_string_lossy(),
        "--report",
        &proof.to_string_lossy(),
    ])
    .unwrap();
    // The tuned profile extends the original with the confirmed changes, and loads as such:
    // the same managed memory, and the write buffers within the WriteBufferManager's budget
    // (a larger write-buffer ratio, or smaller buffers: both wbm-budget fixes run at the rate,
    // the choice between them is CPU per event's).
    let text = std::fs::read_to_string(&tuned).unwrap();
    assert!(text.contains("extends: minutes-wbm-starved"), "{text}");
    let profile = statebench::config::Profile::load(&tuned.to_string_lossy()).unwrap();
    assert_eq!(profile.knobs.managed_memory.0, 18 << 20);
    assert!(
        profile.knobs.write_buffer_ratio > 0.25 || profile.knobs.write_buffer_size.0 < 4 << 20,
        "{text}"
    );
    let json: Value = serde_json::from_str(&std::fs::read_to_string(&proof).unwrap()).unwrap();
    // Round 1: the candidates from the findings, each measured on the scorecard against the
    // start; the one kept is a wbm-budget fix that costs no memory.
    let round = &json["rounds"][0];
    let tried = round["tried"].as_array().unwrap();
    let chosen = &tried[round["chosen"].as_u64().unwrap() as usize];
    assert_eq!(chosen["finding"], "wbm-budget", "{chosen}");
    assert_eq!(chosen["memory_cost"], 0);
    assert_eq!(chosen["kept"], true, "{}", chosen["verdict"]);
    // The fix over the memory budget was refused without a run, saying what it needs.
    let over: Vec<&Value> = tried
        .iter()
        .filter(|t| t["verdict"].as_str().unwrap().contains("over the budget"))
        .collect();
    assert!(
        over.iter()
            .all(|t| t["runs"] == 0 && t["memory_cost"].as_u64().unwrap() > 0),
        "{over:?}"
    );
    // Every candidate that ran has its scorecard and every figure judged against the base.
    for t in tried.iter().filter(|t| t["runs"].as_u64().unwrap() > 0) {
        let figures: Vec<&str> = t["deltas"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["figure"].as_str().unwrap())
            .collect();
        assert!(
            figures.contains(&"p999") && figures.contains(&"write-amp"),
            "{figures:?}"
        );
        assert!(t["measured"]["scorecard"]["scores"].is_array(), "{t}");
    }
    let ids = |m: &Value| -> Vec<String> {
        m["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["id"].as_str().unwrap().to_string())
            .collect()
    };
    assert!(ids(&round["base"]).contains(&"wbm-budget".to_string()));
    let base_stall = round["base"]["summary"]["stall_micros"].as_u64().unwrap();
    assert!(base_stall > 0);
    // The tuned profile: the wbm-budget finding gone, and its stalls cut to under a quarter of
    // the base's (at 8,000 events/s here: 3.4-3.6 s to none, run alone). Not "none": in a
    // full `.ci/run`, after tests that wrote gigabytes, the final run stalled 0.44 s of the
    // base's 3.44 s (and 0.45 s at 10,000 events/s): one memtable flush behind the 3 MB/s
    // disk. The 1 MB write buffers tune picks leave little room there (see the issue notes).
    let last = &json["final"];
    let final_stall = last["summary"]["stall_micros"].as_u64().unwrap();
    assert!(
        final_stall * 4 < base_stall,
        "stalls {base_stall} µs -> {final_stall} µs, findings left: {:?}",
        ids(last)
    );
    assert!(
        !ids(last).contains(&"wbm-budget".to_string()),
        "{:?}",
        ids(last)
    );
    // The whole tune stayed within its runs.
    assert!(json["runs"].as_u64().unwrap() <= 12, "{}", json["runs"]);
}

/// `tune` on smoke with `extra` arguments, which must fail: its error.
fn refused(extra: &[&str]) -> String {
    let mut args = vec!["tune", "-w", "smoke", "-p", "flink-default"];
    args.extend_from_slice(extra);
    run(&args).unwrap_err().to_string()
}

#[test]
fn a_figure_not_allowed_is_refused_by_name_and_min_task_heap_needs_a_taskmanager() {
    let err = refused(&["--allow", "p999,lattency"]);
    assert!(
        err.contains("unknown figure 'lattency'") && err.contains("valid: events-per-sec"),
        "{err}"
    );
    // A built-in profile has no TaskManager: refused before any run.
    let err = refused(&["--min-task-heap", "512mb"]);
    assert!(
        err.contains("--min-task-heap needs a TaskManager") && err.contains("flink-default"),
        "{err}"
    );
}
