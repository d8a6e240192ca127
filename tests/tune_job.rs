//! `tune` on a job whose fix is in the job itself: session windows with a ProcessWindowFunction
//! (every element a ListState merge operand, each session's list read whole when it fires).
//! The aggregate function is tried as a job change, measured on the same scorecard, reported
//! apart and never written into the tuned profile. Its own binary: its runs must not share the
//! CPU with `tests/tune.rs`'s.

use clap::Parser;
use serde_json::Value;
use statebench::cli::Cli;

#[test]
fn a_job_change_is_measured_and_reported_apart_never_in_the_profile() {
    let dir = tempfile::tempdir().unwrap();
    let tuned = dir.path().join("tuned.yaml");
    let proof = dir.path().join("proof.json");
    statebench::run(
        Cli::try_parse_from([
            "statebench",
            "tune",
            "-w",
            "sessions-process",
            "-p",
            "flink-default",
            "--rounds",
            "1",
            "-o",
            &tuned.to_string_lossy(),
            "--report",
            &proof.to_string_lossy(),
        ])
        .unwrap(),
    )
    .unwrap();
    let json: Value = serde_json::from_str(&std::fs::read_to_string(&proof).unwrap()).unwrap();
    let tried = json["rounds"][0]["tried"].as_array().unwrap();
    let job: Vec<&Value> = tried.iter().filter(|t| t["kind"] == "job").collect();
    assert_eq!(job.len(), 1, "{tried:?}");
    let job = job[0];
    assert_eq!(job["finding"], "list-state-merges");
    assert_eq!(job["changes"][0], "job.function: aggregate");
    assert_eq!(job["runs"], 1);
    assert_eq!(
        job["kept"], false,
        "a job change is never kept in the profile"
    );
    // Measured on the scorecard: the aggregate's run read less per state get than the list's
    // (one accumulator instead of every element), which the scorecard's figures reflect.
    let before = &json["start"]["summary"];
    let after = &job["measured"]["summary"];
    let per_get = |s: &Value| s["get_bytes_read"].as_f64().unwrap() / s["gets"].as_f64().unwrap();
    assert!(
        per_get(after) * 4.0 < per_get(before),
        "{} -> {}",
        per_get(before),
        per_get(after)
    );
    let deltas = job["deltas"].as_array().unwrap();
    assert!(
        deltas.iter().any(|d| d["figure"] == "events-per-sec"),
        "{deltas:?}"
    );
    assert!(
        job["verdict"].as_str().unwrap().starts_with("events/s "),
        "{}",
        job["verdict"]
    );
    // The profile: nothing of the job in it (written only if a profile change was kept).
    if let Ok(text) = std::fs::read_to_string(&tuned) {
        assert!(
            !text.contains("job") && !text.contains("aggregate"),
            "{text}"
        );
    }
    assert!(
        json["tuned"]
            .as_array()
            .unwrap()
            .iter()
            .all(|k| !k.as_str().unwrap().contains("job"))
    );
}
