//! `statebench flink run`'s refusals, which need no Flink: a cluster that is down or runs
//! another version (exit 3), a workload it cannot run, a missing distribution (exit 2), each
//! before anything is built or written. The run itself is in parity/flink-run (it needs a JDK
//! and Flink's jars).

use std::io::{Read, Write};
use std::net::TcpListener;

use clap::Parser;
use statebench::cli::Cli;

/// `flink run -w WORKLOAD -p flink-default --work WORK` plus `args`: its error's text and exit
/// code.
fn refused(work: &str, workload: &str, args: &[&str]) -> (String, u8) {
    let mut argv = vec!["statebench", "flink", "run", "-w", workload];
    argv.extend_from_slice(&["-p", "flink-default"]);
    argv.extend_from_slice(&["--work", work]);
    argv.extend_from_slice(args);
    let err = statebench::run(Cli::try_parse_from(argv).unwrap()).unwrap_err();
    (format!("{err:#}"), statebench::exit_code(&err))
}

/// A server that answers every request with `body` (HTTP 200), as many times as asked.
fn answering(body: &'static str) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut s) = stream else { return };
            let (mut seen, mut buf) = (Vec::new(), [0u8; 1024]);
            while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
                match s.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => seen.extend_from_slice(&buf[..n]),
                }
            }
            let _ = write!(
                s,
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            );
        }
    });
    format!("http://127.0.0.1:{port}")
}

#[test]
fn a_cluster_that_is_down_or_runs_another_flink_is_a_rest_error() {
    let work = tempfile::tempdir().unwrap();
    let w = work.path().join("w").to_string_lossy().into_owned();
    let closed = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let (text, code) = refused(
        &w,
        "ads-minutes",
        &["--cluster", &format!("http://127.0.0.1:{closed}")],
    );
    assert!(
        text.contains("cannot reach") && text.contains("is the cluster running"),
        "{text}"
    );
    assert_eq!(code, 3);
    let old = answering(r#"{"flink-version": "1.18.1", "flink-revision": "x"}"#);
    let (text, code) = refused(&w, "ads-minutes", &["--cluster", &old]);
    assert!(
        text.contains("runs Flink 1.18.1") && text.contains("1.20.x"),
        "{text}"
    );
    assert_eq!(code, 3);
    // A Flink 1.20 whose slots are taken: the job would wait for them.
    let busy = answering(r#"{"flink-version": "1.20.1", "slots-total": 1, "slots-available": 0}"#);
    let (text, code) = refused(&w, "ads-minutes", &["--cluster", &busy]);
    assert!(
        text.contains("has 0 free task slots of 1") && text.contains("--parallelism 2 needs 2"),
        "{text}"
    );
    assert_eq!(code, 2);
    // A trace whose keys Flink's job could not read back (its trace is CSV).
    let trace = work.path().join("t.jsonl");
    std::fs::write(
        &trace,
        "{\"key\": \"a,b\", \"event_time\": 1767225600000}\n{\"key\": \"c\", \"event_time\": 1767225601000}\n",
    )
    .unwrap();
    let yaml = work.path().join("t.yaml");
    std::fs::write(&yaml, "partitions: 2\nwindows: [1m]\ntrace: t.jsonl\n").unwrap();
    let (text, code) = refused(&w, yaml.to_str().unwrap(), &[]);
    assert!(
        text.contains("the key \"a,b\"") && text.contains("cannot read back"),
        "{text}"
    );
    assert_eq!(code, 2);
    assert!(!work.path().join("w").exists(), "nothing written");
}

#[test]
fn what_it_cannot_run_is_refused_with_why_before_anything_is_written() {
    let work = tempfile::tempdir().unwrap();
    let w = work.path().join("w").to_string_lossy().into_owned();
    // A chain of operators.
    let (text, code) = refused(&w, "dedup-then-sessions", &[]);
    assert!(
        text.contains("a chain of operators") && text.contains("parity/run-kinds"),
        "{text}"
    );
    assert_eq!(code, 2);
    // More subtasks than the embedded cluster's slots.
    let (text, code) = refused(&w, "ads-minutes", &["--parallelism", "3"]);
    assert!(text.contains("needs 3 slots"), "{text}");
    assert_eq!(code, 2);
    // A subtask the keyed operator does not have.
    let (text, code) = refused(&w, "ads-minutes", &["--subtask", "2"]);
    assert!(text.contains("subtasks are 0 to 1"), "{text}");
    assert_eq!(code, 2);
    // No distribution where it was said to be.
    let missing = work.path().join("no-flink").to_string_lossy().into_owned();
    let (text, code) = refused(&w, "ads-minutes", &["--flink-dist", &missing]);
    assert!(
        text.contains("no Flink 1.20 distribution") && text.contains("no-flink"),
        "{text}"
    );
    assert_eq!(code, 2);
    assert!(!work.path().join("w").exists(), "nothing written");
}
