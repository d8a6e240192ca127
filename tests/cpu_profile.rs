//! `run --profile-cpu` end to end: bucketed CPU samples in every running snapshot and the
//! summary, and a flamegraph and a pprof protobuf beside the report that read back. One test
//! per process: pprof's sampler is process-wide.

use clap::Parser;
use serde_json::Value;
use statebench::cli::Cli;
use statebench::profiler::protobuf;

#[test]
fn a_profiled_run_writes_buckets_a_flamegraph_and_a_pprof_profile() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("r.json");
    statebench::run(
        Cli::try_parse_from([
            "statebench",
            "run",
            "-w",
            "smoke",
            "--events",
            "8000",
            "--quiet",
            "--profile-cpu",
            "--report",
            &report.to_string_lossy(),
        ])
        .unwrap(),
    )
    .unwrap();

    let json: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let segment = &json["segments"][0];
    let mut profiled = 0;
    for s in segment["snapshots"].as_array().unwrap() {
        let Some(cpu) = s.get("cpu") else { continue };
        profiled += 1;
        let buckets = cpu["buckets"].as_array().unwrap();
        if cpu["samples"].as_u64().unwrap() == 0 {
            continue;
        }
        assert_eq!(buckets.len(), statebench::profiler::Bucket::ALL.len());
        let shares: f64 = buckets.iter().map(|b| b["share"].as_f64().unwrap()).sum();
        assert!((shares - 1.0).abs() < 1e-6, "shares sum to {shares}");
        let samples: u64 = buckets.iter().map(|b| b["samples"].as_u64().unwrap()).sum();
        assert_eq!(samples, cpu["samples"].as_u64().unwrap());
    }
    assert!(profiled > 0, "no snapshot carries CPU samples");

    let summary = &segment["summary"]["cpu"];
    let total = summary["samples"].as_u64().unwrap();
    // A few thousand events keep a core busy for a good part of a second: at 199 Hz, dozens
    // of samples at least.
    assert!(total >= 20, "only {total} samples");
    let engine_work: f64 = ["memtable", "operator", "timers", "serialization"]
        .iter()
        .map(|key| {
            summary["buckets"]
                .as_array()
                .unwrap()
                .iter()
                .find(|b| b["bucket"] == *key)
                .map_or(0.0, |b| b["share"].as_f64().unwrap())
        })
        .sum();
    // The smoke job's CPU is the pipeline writing and reading state, not "other".
    assert!(engine_work > 0.5, "{summary}");

    let svg = std::fs::read_to_string(dir.path().join("r.cpu.svg")).unwrap();
    assert!(
        svg.starts_with("<?xml") && svg.contains("<svg"),
        "not an SVG"
    );
    assert!(svg.contains("statebench run: smoke on flink-default"));
    assert!(
        svg.contains("rocksdb::"),
        "RocksDB's C++ frames are symbolized"
    );

    let pb = std::fs::read(dir.path().join("r.cpu.pb")).unwrap();
    let profile = protobuf::decode(&pb).unwrap();
    assert_eq!(profile.sample_types[0], ("samples".into(), "count".into()));
    let decoded_total: u64 = profile.samples.iter().map(|s| s.values[0]).sum();
    assert_eq!(
        decoded_total, total,
        "the protobuf holds the summary's samples"
    );
    assert!(
        profile.samples.iter().any(|s| s
            .frames
            .iter()
            .any(|f| f.starts_with("rocksdb::MemTable::"))),
        "a smoke run inserts into the memtable"
    );
}
