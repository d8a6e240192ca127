//! `statebench trace convert | check` and trace v2 replay, end to end through the same `run`
//! the binary calls (docs/trace.md).

use std::path::{Path, PathBuf};

use clap::Parser;
use statebench::cli::Cli;
use statebench::pipeline::trace::{Trace, TraceSummary};

fn run(args: &[&str]) -> anyhow::Result<()> {
    let mut argv = vec!["statebench"];
    argv.extend_from_slice(args);
    statebench::run(Cli::try_parse_from(argv)?)
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/trace")
        .join(name)
}

fn s(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

const KAFKA: [&str; 12] = [
    "--key",
    "key",
    "--time",
    "timestamp",
    "--time-format",
    "rfc3339",
    "--partition",
    "partition",
    "--payload",
    "value",
    "--input",
    "topic",
];

#[test]
fn a_kafka_dump_converts_to_a_trace_with_every_column() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("orders.csv");
    let jsonl = dir.path().join("orders.jsonl");
    let input = s(&fixture("kafka-dump.jsonl"));
    for out in [&csv, &jsonl] {
        let mut args = vec!["trace", "convert", &input];
        let to = s(out);
        args.extend(["--to", &to]);
        args.extend(KAFKA);
        args.extend(["--input-values", "clicks,impressions"]);
        run(&args).unwrap();
    }
    // RFC 3339 with offsets and fractions to epoch ms (sub-ms digits dropped); payload bytes:
    // a string's UTF-8 length, a JSON object's compact text; a numeric key as its digits.
    assert_eq!(
        std::fs::read_to_string(&csv).unwrap(),
        "key,event_time,partition,value_size,input\n\
         order-7,1767225600250,0,22,0\n\
         order-9,1767225601000,1,22,1\n\
         order-7,1767225599999,0,0,0\n\
         12345,1767225602500,1,6,1\n"
    );
    assert_eq!(
        std::fs::read_to_string(&jsonl)
            .unwrap()
            .lines()
            .nth(1)
            .unwrap(),
        r#"{"key": "order-9", "event_time": 1767225601000, "partition": 1, "value_size": 22, "input": 1}"#
    );
    let a = Trace::load(&csv, 2).unwrap();
    let b = Trace::load(&jsonl, 2).unwrap();
    assert_eq!(a.events, b.events);
    assert_eq!(a.keys, ["order-7", "order-9", "12345"]);
    let e = &a.events[1];
    assert_eq!(
        (
            e.user,
            e.event_time,
            e.partition,
            e.offset,
            e.value_size,
            e.input
        ),
        (1, 1_767_225_601_000, 1, 0, 22, 1)
    );
}

#[test]
fn a_csv_export_with_quotes_epoch_seconds_and_sizes_converts() {
    let dir = tempfile::tempdir().unwrap();
    let export = dir.path().join("export.csv");
    std::fs::write(
        &export,
        "id,\"customer, name\",created_s,bytes,side\r\n\
         \"c,1\",\"Kim, A\",1767225600.5,120,left\r\n\
         c-2,Lee,1767225601,0,right\r\n\
         \"c-3 \"\"vip\"\"\",\"Park\nSeoul\",1767225599.0019,64000,0\r\n",
    )
    .unwrap();
    let out = dir.path().join("trace.jsonl");
    run(&[
        "trace",
        "convert",
        &s(&export),
        "--to",
        &s(&out),
        "--key",
        "id",
        "--time",
        "created_s",
        "--time-format",
        "epoch-s",
        "--value-size",
        "bytes",
        "--input",
        "side",
    ])
    .unwrap();
    assert_eq!(
        std::fs::read_to_string(&out).unwrap(),
        "{\"key\": \"c,1\", \"event_time\": 1767225600500, \"value_size\": 120, \"input\": 0}\n\
         {\"key\": \"c-2\", \"event_time\": 1767225601000, \"value_size\": 0, \"input\": 1}\n\
         {\"key\": \"c-3 \\\"vip\\\"\", \"event_time\": 1767225599001, \"value_size\": 64000, \"input\": 0}\n"
    );
    // Without the partition and input columns, a CSV trace has only what was mapped; a key
    // with a comma cannot go into one.
    let csv = dir.path().join("trace.csv");
    let err = run(&[
        "trace",
        "convert",
        &s(&export),
        "--to",
        &s(&csv),
        "--key",
        "id",
        "--time",
        "created_s",
        "--time-format",
        "epoch-s",
    ])
    .unwrap_err();
    assert!(
        err.to_string().ends_with(
            "export.csv line 2, column 'id' (--key): key 'c,1' has a comma, a quote or a line break, which a CSV trace cannot hold: write JSON Lines (--format jsonl)"
        ),
        "{err}"
    );
    assert!(!csv.exists());
    run(&[
        "trace",
        "convert",
        &s(&export),
        "--to",
        &s(&csv),
        "--key",
        "customer, name",
        "--time",
        "created_s",
        "--time-format",
        "epoch-s",
        "--value-size",
        "bytes",
    ])
    .unwrap_err();
    std::fs::write(&export, "user,ts\nu-1,1767225600000\nu-2,1767225600001\n").unwrap();
    run(&[
        "trace",
        "convert",
        &s(&export),
        "--to",
        &s(&csv),
        "--key",
        "user",
        "--time",
        "ts",
    ])
    .unwrap();
    assert_eq!(
        std::fs::read_to_string(&csv).unwrap(),
        "key,event_time\nu-1,1767225600000\nu-2,1767225600001\n"
    );
}

/// Every bad export is refused with the file, the line, the column and what is valid, exit
/// code 2, and the trace it would have replaced untouched (nothing half-written, no temporary
/// file left behind).
#[test]
fn bad_exports_are_refused_with_where_and_what_is_valid() {
    let csv_map = ["--key", "k", "--time", "t"];
    let cases: &[(&str, &[&str], &str)] = &[
        (
            "k,x\na,1\n",
            &csv_map,
            "in.txt: column 't' (--time) is not in the CSV header; its columns are: k, x",
        ),
        (
            "k,t,t\na,1,2\n",
            &csv_map,
            "in.txt: column 't' (--time) is in the CSV header 2 times",
        ),
        (
            "k,t\na,1\nb\n",
            &csv_map,
            "in.txt line 3: 1 fields, but the header has 2",
        ),
        (
            "k,t\na,1\n\"b,2\n",
            &csv_map,
            "in.txt line 3: a quoted field is not closed",
        ),
        (
            "k,t\na,noon\n",
            &csv_map,
            "in.txt line 2, column 't' (--time): 'noon' is not epoch milliseconds (an integer such as 1767225600000)",
        ),
        (
            "k,t\na,2026-01-01T00:00:00Z\n",
            &csv_map,
            "is not epoch milliseconds (an integer such as 1767225600000); it is an RFC 3339 time: pass --time-format rfc3339",
        ),
        (
            "k,t\na,1767225600\n",
            &["--key", "k", "--time", "t", "--time-format", "rfc3339"],
            "line 2, column 't' (--time): '1767225600' is not an RFC 3339 time (such as 2026-01-01T00:00:00.250Z or 2026-01-01T09:00:00+09:00); it is a number",
        ),
        (
            "k,t\na,1.5e9\n",
            &["--key", "k", "--time", "t", "--time-format", "epoch-s"],
            "'1.5e9' is not epoch seconds (such as 1767225600 or 1767225600.25)",
        ),
        (
            "k,t\n,1\n",
            &csv_map,
            "line 2, column 'k' (--key): is empty (every record needs a key)",
        ),
        (
            "k,t,p\na,1,-1\n",
            &["--key", "k", "--time", "t", "--partition", "p"],
            "line 2, column 'p' (--partition): '-1' is not a partition number (a non-negative integer)",
        ),
        (
            "k,t,p\na,1,4294967296\n",
            &["--key", "k", "--time", "t", "--partition", "p"],
            "partition 4294967296 is too large",
        ),
        (
            "k,t,v\na,1,1kb\n",
            &["--key", "k", "--time", "t", "--value-size", "v"],
            "line 2, column 'v' (--value-size): '1kb' is not a value size in bytes (a non-negative integer)",
        ),
        (
            "k,t,v\na,1,67108865\n",
            &["--key", "k", "--time", "t", "--value-size", "v"],
            "value_size 67108865 is over the largest a trace may give, 67108864 bytes (64 MiB)",
        ),
        (
            "k,t,i\na,1,2\n",
            &["--key", "k", "--time", "t", "--input", "i"],
            "line 2, column 'i' (--input): '2' is not an input: 0 or left (the first), 1 or right (the second); map your own values with --input-values LEFT,RIGHT",
        ),
        (
            "k,t,i\na,1,views\n",
            &[
                "--key",
                "k",
                "--time",
                "t",
                "--input",
                "i",
                "--input-values",
                "clicks,imps",
            ],
            "'views' is neither 'clicks' (the left input) nor 'imps' (the right input)",
        ),
        ("k,t\n", &csv_map, "in.txt has no records to convert"),
        ("", &csv_map, "in.txt has no records to convert"),
        (
            "{\"k\": \"a\", \"t\": 1}\n{\"k\": \"b\", \"t\": 2\n",
            &csv_map,
            "in.txt line 2: not JSON: EOF while parsing an object",
        ),
        (
            "{\"k\": \"a\", \"t\": 1}\n[1, 2]\n",
            &csv_map,
            "in.txt line 2: [1,2] is not a JSON object (JSON Lines: one object per line)",
        ),
        (
            "{\"k\": \"a\"}\n",
            &csv_map,
            "in.txt line 1, column 't' (--time): the line has no such field (its fields: k)",
        ),
        (
            "{\"k\": null, \"t\": 1}\n",
            &csv_map,
            "in.txt line 1, column 'k' (--key): is null",
        ),
        (
            "{\"k\": {\"id\": 1}, \"t\": 1}\n",
            &csv_map,
            "column 'k' (--key): {\"id\":1} is not a key (a string or a number)",
        ),
        (
            "{\"k\": \"a\", \"t\": 1.5}\n",
            &csv_map,
            "column 't' (--time): 1.5 is not epoch milliseconds",
        ),
        (
            "{\"k\": \"a\", \"t\": -1}\n",
            &csv_map,
            "column 't' (--time): -1 is not epoch milliseconds",
        ),
        (
            "{\"k\": \"a\", \"t\": 9223372036854775807}\n",
            &csv_map,
            "column 't' (--time): event_time 9223372036854775807 is out of range",
        ),
        (
            "{\"k\": \"a\", \"t\": 1, \"v\": null}\n",
            &["--key", "k", "--time", "t", "--payload", "v"],
            "column 'v' (--payload): is null",
        ),
        (
            "{\"k\": \"#1\", \"t\": 1}\n",
            &csv_map,
            "key '#1' has a '#' or '{' first (a comment or a JSON line in a trace), which a CSV trace cannot hold",
        ),
    ];
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.txt");
    let out = dir.path().join("out.csv");
    for (text, mapping, expected) in cases {
        std::fs::write(&input, text).unwrap();
        std::fs::write(&out, "kept\n").unwrap();
        let mut args = vec!["trace", "convert"];
        let (i, o) = (s(&input), s(&out));
        args.extend([i.as_str(), "--to", o.as_str()]);
        args.extend(mapping.iter());
        let err = run(&args).unwrap_err();
        assert!(err.to_string().contains(expected), "{text:?}: {err}");
        assert_eq!(statebench::exit_code(&err), 2, "{text:?}");
        assert_eq!(std::fs::read_to_string(&out).unwrap(), "kept\n", "{text:?}");
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            2,
            "no temporary file left"
        );
    }
    // An export that is not UTF-8 (a Latin-1 one, say) is named, not half-read.
    std::fs::write(&input, b"k,t\ncaf\xe9,1\n").unwrap();
    let (i, o) = (s(&input), s(&out));
    let err = run(&[
        "trace", "convert", &i, "--to", &o, "--key", "k", "--time", "t",
    ])
    .unwrap_err();
    assert!(
        err.to_string().contains("cannot read") && err.to_string().contains("valid UTF-8"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "kept\n");
    let err = run(&["trace", "check", &i]).unwrap_err();
    assert!(
        err.to_string().starts_with("cannot read trace") && err.to_string().contains("in.txt"),
        "{err}"
    );
    assert_eq!(statebench::exit_code(&err), 2);
    let missing = dir.path().join("nope.csv");
    let err = run(&[
        "trace",
        "convert",
        &s(&missing),
        "--to",
        &s(&out),
        "--key",
        "k",
        "--time",
        "t",
    ])
    .unwrap_err();
    assert!(
        err.to_string().contains("cannot read") && err.to_string().contains("nope.csv"),
        "{err}"
    );
    let err = run(&[
        "trace",
        "convert",
        &s(&input),
        "--to",
        "/nonexistent-dir/t.csv",
        "--key",
        "k",
        "--time",
        "t",
    ])
    .unwrap_err();
    assert!(
        err.to_string()
            .contains("directory /nonexistent-dir does not exist"),
        "{err}"
    );
    // The command line: one size column, --input-values with --input, two different values.
    for (args, expected) in [
        (
            vec!["--value-size", "v", "--payload", "p"],
            "cannot be used with",
        ),
        (vec!["--input-values", "a,b"], "--input <COL>"),
        (
            vec!["--input", "i", "--input-values", "a"],
            "expected two different values separated by a comma",
        ),
        (
            vec!["--input", "i", "--input-values", "a,a"],
            "expected two different values",
        ),
        (
            vec!["--time-format", "iso"],
            "possible values: epoch-ms, epoch-s, rfc3339",
        ),
    ] {
        let mut argv = vec![
            "trace", "convert", "in.csv", "--to", "out.csv", "--key", "k", "--time", "t",
        ];
        argv.extend(args);
        let err = run(&argv).unwrap_err();
        assert!(err.to_string().contains(expected), "{argv:?}: {err}");
    }
}

#[test]
fn check_sums_up_a_trace_and_checks_partitions() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.csv");
    std::fs::write(
        &trace,
        "key,event_time,partition,value_size,input\n\
         a,1000,1,10,0\n\
         b,3000,,30,1\n\
         a,1500,2,,right\n\
         c,2900,1,20,0\n\
         b,4000\n",
    )
    .unwrap();
    let summary = TraceSummary::of(&trace).unwrap();
    assert_eq!(
        serde_json::to_value(&summary).unwrap(),
        serde_json::json!({
            "events": 5, "keys": 3, "first_event_time": 1000, "min_event_time": 1000,
            "max_event_time": 4000, "max_out_of_orderness": 1500, "out_of_order_events": 2,
            "inputs": [3, 2], "partitions": {"1": 2, "2": 1}, "unpartitioned": 2,
            "value_sizes": 3, "min_value_size": 10, "max_value_size": 30, "total_value_size": 60
        })
    );
    run(&["trace", "check", &s(&trace), "--partitions", "3"]).unwrap();
    let err = run(&["trace", "check", &s(&trace), "--partitions", "2"]).unwrap_err();
    assert!(
        err.to_string()
            .ends_with("t.csv line 4: partition 2 but the workload has 2 (0..1)"),
        "{err}"
    );
    assert_eq!(statebench::exit_code(&err), 2);
    // The binary prints it for people.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_statebench"))
        .args(["trace", "check", &s(&trace)])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    for line in [
        "  events          5",
        "  keys            3",
        "  event time      1970-01-01T00:00:01.000Z .. 1970-01-01T00:00:04.000Z (3.000 s); the first event at 1970-01-01T00:00:01.000Z",
        "  out of order    2 of 5 events (40.0 %), at most 1500 ms behind the newest before them",
        "  inputs          left 3, right 2",
        "  partitions      1: 2, 2: 1 (3 given); 2 without one (keyed by key)",
        "  value sizes     3 given: min 10, mean 20.0, max 30 bytes; 60 bytes in all",
    ] {
        assert!(text.contains(line), "{line}\n{text}");
    }
}

/// A trace in the new format (value sizes, inputs, empty partition fields) replays to the same
/// exact results as the same events in the old format, with result error 0.
#[test]
fn a_v2_trace_replays_as_its_old_form_does() {
    let dir = tempfile::tempdir().unwrap();
    let old = std::fs::read_to_string(fixture("ads-sample.csv")).unwrap();
    let mut v2 = String::from("key,event_time,partition,value_size,input\n");
    for (i, line) in old.lines().skip(1).enumerate() {
        let f: Vec<&str> = line.split(',').collect();
        v2.push_str(&format!(
            "{},{},{},{},0\n",
            f[0],
            f[1],
            f.get(2).unwrap_or(&""),
            i % 300
        ));
    }
    let v2_path = dir.path().join("v2.csv");
    std::fs::write(&v2_path, v2).unwrap();
    let workload = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/valid/trace-workload.yaml"),
    )
    .unwrap();
    let mut seen = Vec::new();
    for (name, trace) in [("old", fixture("ads-sample.csv")), ("v2", v2_path.clone())] {
        let w = dir.path().join(format!("{name}.yaml"));
        std::fs::write(
            &w,
            workload.replace("../trace/ads-sample.jsonl", &s(&trace)),
        )
        .unwrap();
        let report = dir.path().join(format!("{name}.json"));
        run(&["run", "-w", &s(&w), "--quiet", "--report", &s(&report)]).unwrap();
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
        let summary = &json["segments"][0]["summary"];
        assert_eq!(summary["events"], 3000, "{name}");
        for k in ["over", "under", "missing"] {
            assert_eq!(summary["result_error"][k], 0, "{name} {k}");
        }
        let same: Vec<serde_json::Value> = [
            "gets",
            "puts",
            "deletes",
            "user_bytes_written",
            "timers_fired",
            "rocksdb_keys_read",
            "rocksdb_keys_written",
            "sink",
            "result_error",
        ]
        .iter()
        .map(|k| summary[*k].clone())
        .collect();
        seen.push(same);
    }
    assert!(seen[0][0].as_u64().unwrap() > 3000, "{:?}", seen[0]);
    assert_eq!(seen[0], seen[1]);
}
