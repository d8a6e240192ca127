//! A reader that closes statebench's output early (`statebench advise r.json --json | head -c
//! 1500`): every command ends quietly, with the shell's status for a closed pipe (141) and
//! nothing on stderr, instead of panicking with "failed printing to stdout: Broken pipe".

use std::io::Read as _;
use std::path::Path;
use std::process::{Command, Output, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_statebench");

/// Runs statebench with `args` into a pipe whose reader is already gone: the first write
/// meets EPIPE whatever the output's size.
fn into_closed_pipe(args: &[&str]) -> Output {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let child = Command::new(BIN)
        .args(args)
        .stdin(Stdio::null())
        .stdout(writer)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.wait_with_output().unwrap()
}

fn assert_quiet(args: &[&str], out: &Output) {
    assert_eq!(
        out.status.code(),
        Some(141),
        "statebench {}: {:?}, stderr: {}",
        args.join(" "),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    // A run's progress lines go to stderr; nothing else may (no panic, no "error:").
    let unexpected: Vec<&str> = stderr
        .lines()
        .filter(|l| !l.starts_with('[') && !l.starts_with("running '"))
        .collect();
    assert!(
        unexpected.is_empty(),
        "statebench {}: stderr {stderr}",
        args.join(" ")
    );
}

/// A small run's JSON report, for the commands that read one.
fn report(dir: &Path) -> String {
    let path = dir.join("r.json");
    let out = Command::new(BIN)
        .args(["run", "-w", "smoke", "--events", "3000", "-q", "--report"])
        .arg(&path)
        .stdout(Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    path.to_str().unwrap().to_string()
}

#[test]
fn every_command_ends_quietly_when_its_output_is_closed() {
    let dir = tempfile::tempdir().unwrap();
    let r = report(dir.path());
    let commands: Vec<Vec<&str>> = vec![
        vec!["advise", &r, "--json"],
        vec!["advise", &r],
        vec!["compare", &r, &r, "--all"],
        vec!["export", "-p", "flink-default", "--format", "flink"],
        vec![
            "export",
            "-p",
            "hours-partitioned-filter",
            "--format",
            "rocksdb-options",
        ],
        vec!["profiles", "list"],
        vec!["profiles", "show", "flink-default", "--derived"],
        vec!["workloads", "list"],
        vec!["workloads", "show", "smoke"],
        vec!["reproduce"],
        vec!["bench", "--list"],
        vec!["run", "-w", "smoke", "--events", "2000", "-q"],
    ];
    for args in &commands {
        assert_quiet(args, &into_closed_pipe(args));
    }
}

#[test]
fn a_reader_that_takes_a_few_bytes_and_goes_ends_the_command_quietly() {
    // As `| head -c 100`: the reader reads, then closes. Whether statebench is still writing
    // then depends on timing (these outputs fit a pipe's 64 KiB buffer); either way it must end
    // without a word on stderr. The closed-before-the-first-write test above is the
    // deterministic one.
    let args = ["profiles", "show", "flink-default", "--derived"];
    for args in [
        &args[..],
        &[
            "export",
            "-p",
            "flink-default",
            "--format",
            "rocksdb-options",
        ],
    ] {
        let mut child = Command::new(BIN)
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut first = [0u8; 100];
        let mut stdout = child.stdout.take().unwrap();
        stdout.read_exact(&mut first).unwrap();
        drop(stdout);
        let out = child.wait_with_output().unwrap();
        // The output may have fit the pipe before the reader left: then it finished (0).
        assert!(
            matches!(out.status.code(), Some(0) | Some(141)),
            "{:?}",
            out.status
        );
        assert!(
            out.stderr.is_empty(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn an_open_output_still_gets_everything_and_status_0() {
    let out = Command::new(BIN)
        .args(["profiles", "list"])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("flink-default"));
}

#[test]
fn a_write_that_fails_otherwise_is_an_error_not_a_quiet_end() {
    // A full disk behind `>`: the export must not end with status 0 and half a config.
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let out = Command::new(BIN)
        .args(["export", "-p", "flink-default", "--format", "flink"])
        .stdout(full)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{:?}", out.status);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("error: cannot write the export to standard output"),
        "{stderr}"
    );
}
