//! The Redis sink against a real `redis-server` (Debian's package; `.ci/run` installs it):
//! the counts read back from Redis equal the oracle.

use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use statebench::config::{Profile, Workload};
use statebench::engine::{self, EngineConfig, SinkConfig};

/// A redis-server on a free loopback port, killed when dropped.
struct RedisServer {
    child: Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl RedisServer {
    fn start() -> RedisServer {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let dir = tempfile::tempdir().unwrap();
        let child = Command::new("redis-server")
            .args([
                "--bind",
                "127.0.0.1",
                "--port",
                &port.to_string(),
                "--save",
                "",
                "--appendonly",
                "no",
            ])
            .arg("--dir")
            .arg(dir.path())
            .stdout(Stdio::null())
            .spawn()
            .expect(
                "redis-server must be installed (Debian package redis-server; .ci/run installs it)",
            );
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "redis-server did not start on port {port}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        RedisServer {
            child,
            port,
            _dir: dir,
        }
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn counts_read_back_from_redis_equal_the_oracle() {
    let server = RedisServer::start();
    let url = format!("redis://127.0.0.1:{}", server.port);
    let dir = tempfile::tempdir().unwrap();
    let outcome = engine::run_to_completion(EngineConfig {
        events: 20_000,
        sink: SinkConfig::Redis {
            url: url.clone(),
            prefix: "test-run:".to_string(),
        },
        ..EngineConfig::new(
            Workload::load("smoke").unwrap(),
            Profile::load("flink-default").unwrap(),
            dir.path().to_path_buf(),
        )
    })
    .unwrap();
    assert!(
        outcome.result_error.is_exact(),
        "{:?}",
        outcome.result_error
    );
    assert!(
        outcome.result_error.compared > 10_000,
        "{:?}",
        outcome.result_error
    );
    let sink = outcome.snapshots.last().unwrap().pipeline.sink;
    assert!(sink.writes > 80_000, "{sink:?}");
    // Pipelined: one round trip per PIPELINE_DEPTH writes (plus flushes at the end).
    let depth = statebench::durability::sink::PIPELINE_DEPTH as u64;
    assert!(
        sink.flushes <= sink.writes / depth + 2,
        "pipelined: {sink:?}"
    );

    // Independently of the sink's own reader: the keys are there, one per user x window.
    let mut con = redis::Client::open(url.as_str())
        .unwrap()
        .get_connection()
        .unwrap();
    let keys: u64 = redis::cmd("DBSIZE").query(&mut con).unwrap();
    assert_eq!(keys, outcome.result_error.compared);
    let one: Option<i64> = redis::cmd("GET")
        .arg("test-run:freq:user-0:1m")
        .query(&mut con)
        .unwrap();
    assert!(one.is_some(), "user-0's 1m count is stored");
}

/// Exactly-once into Redis across two injected failures: the transactions commit into Redis
/// only when their checkpoint completes, the aborted ones never reach it.
#[test]
fn exactly_once_into_redis_survives_failures_exactly() {
    let server = RedisServer::start();
    let url = format!("redis://127.0.0.1:{}", server.port);
    let dir = tempfile::tempdir().unwrap();
    let mut profile = Profile::load("flink-default").unwrap();
    for (k, v) in [
        ("execution.checkpointing.interval", "100ms"),
        ("execution.checkpointing.incremental", "true"),
        ("sink.delivery-guarantee", "EXACTLY_ONCE"),
        ("sink.reader-isolation", "read_committed"),
    ] {
        profile = profile.edited(k, v).unwrap();
    }
    let outcome = engine::run_to_completion(EngineConfig {
        events: 20_000,
        sink: SinkConfig::Redis {
            url: url.clone(),
            prefix: "eo:".to_string(),
        },
        failures: engine::FailureSpec {
            at_events: vec![8_000, 15_000],
            every: None,
        },
        ..EngineConfig::new(
            Workload::load("smoke").unwrap(),
            profile,
            dir.path().to_path_buf(),
        )
    })
    .unwrap();
    let c = outcome.checkpoints.unwrap();
    assert_eq!(c.restores.len(), 2);
    assert_eq!(c.delivery.duplicates_seen, 0);
    assert!(
        outcome.result_error.is_exact(),
        "{:?}",
        outcome.result_error
    );
    // What Redis itself holds: one key per user x window, as the oracle counts them.
    let mut con = redis::Client::open(url.as_str())
        .unwrap()
        .get_connection()
        .unwrap();
    let keys: u64 = redis::cmd("DBSIZE").query(&mut con).unwrap();
    assert_eq!(keys, outcome.result_error.compared);
}

#[test]
fn an_unreachable_redis_is_a_clear_error() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dir = tempfile::tempdir().unwrap();
    let err = engine::run_to_completion(EngineConfig {
        events: 100,
        sink: SinkConfig::Redis {
            url: format!("redis://127.0.0.1:{port}"),
            prefix: "x:".to_string(),
        },
        ..EngineConfig::new(
            Workload::load("smoke").unwrap(),
            Profile::load("flink-default").unwrap(),
            dir.path().to_path_buf(),
        )
    })
    .unwrap_err();
    assert!(
        err.to_string()
            .contains("cannot connect to redis://127.0.0.1"),
        "{err}"
    );
}

/// A paced workload, so that a kill lands mid-run (as in tests/kill.rs).
const PACED: &str = include_str!("fixtures/valid/paced-kill.yaml");

const CHECKPOINTING: &str = "\
extends: flink-default
execution.checkpointing.interval: 200ms
execution.checkpointing.num-retained: 2
execution.checkpointing.incremental: true
sink.delivery-guarantee: EXACTLY_ONCE
sink.reader-isolation: read_committed
";

/// The newest completed checkpoint's id in the data directory's store (ids go on across
/// processes).
fn newest_checkpoint(data: &std::path::Path) -> u64 {
    std::fs::read_dir(data.join("checkpoints"))
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .filter_map(|e| {
                    e.file_name()
                        .to_string_lossy()
                        .strip_prefix("chk-")
                        .and_then(|n| n.parse::<u64>().ok())
                })
                .max()
                .unwrap_or(0)
        })
        .unwrap_or(0)
}

/// Every key of Redis database `db` as (key without its prefix, value), and the prefixes.
fn redis_contents(
    url: &str,
) -> (
    std::collections::BTreeMap<String, i64>,
    std::collections::BTreeSet<String>,
) {
    let mut con = redis::Client::open(url).unwrap().get_connection().unwrap();
    let keys: Vec<String> = redis::cmd("KEYS").arg("*").query(&mut con).unwrap();
    let mut contents = std::collections::BTreeMap::new();
    let mut prefixes = std::collections::BTreeSet::new();
    for key in keys {
        let at = key.find("freq:").expect("a count's key");
        prefixes.insert(key[..at].to_string());
        let value: i64 = redis::cmd("GET").arg(&key).query(&mut con).unwrap();
        contents.insert(key[at..].to_string(), value);
    }
    (contents, prefixes)
}

/// kill -9 three times, each time `--restore latest` on the same data directory into the same
/// Redis: a restored job is the same job, so one prefix holds the results, and every key in it
/// equals what a run that never failed writes.
#[test]
fn kill_9_three_times_and_restore_keeps_one_prefix_equal_to_the_truth() {
    use std::process::{Command, Stdio};
    let server = RedisServer::start();
    let url = format!("redis://127.0.0.1:{}/0", server.port);
    let tmp = tempfile::tempdir().unwrap();
    let workload = tmp.path().join("w.yaml");
    let profile = tmp.path().join("p.yaml");
    std::fs::write(&workload, PACED).unwrap();
    std::fs::write(&profile, CHECKPOINTING).unwrap();
    let data = tmp.path().join("data");
    let bin = env!("CARGO_BIN_EXE_statebench");
    let run = |data: &std::path::Path, url: &str, extra: &[&str]| {
        let mut c = Command::new(bin);
        c.args(["run", "-w", workload.to_str().unwrap(), "-p"])
            .arg(&profile)
            .arg("--data-dir")
            .arg(data)
            .args(["--quiet", "--sink", url])
            .args(extra);
        c
    };
    for round in 0..3 {
        let before = newest_checkpoint(&data);
        let extra: &[&str] = if round == 0 {
            &[]
        } else {
            &["--restore", "latest"]
        };
        let mut child = run(&data, &url, extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Two checkpoints of this process's own, then a kill between checkpoints.
        let deadline = Instant::now() + Duration::from_secs(60);
        while newest_checkpoint(&data) < before + 2 {
            assert!(
                Instant::now() < deadline,
                "round {round}: no checkpoints in 60 s"
            );
            assert!(
                child.try_wait().unwrap().is_none(),
                "round {round}: the run ended before it could be killed"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        std::thread::sleep(Duration::from_millis(150));
        child.kill().unwrap(); // SIGKILL
        assert!(!child.wait().unwrap().success());
    }
    let report = tmp.path().join("r.json");
    let last = run(
        &data,
        &url,
        &["--restore", "latest", "--report", report.to_str().unwrap()],
    )
    .output()
    .unwrap();
    assert!(
        last.status.success(),
        "{}",
        String::from_utf8_lossy(&last.stderr)
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let summary = &json["segments"][0]["summary"];
    assert_eq!(summary["result_error_applies"], true);
    for field in ["over", "under", "missing"] {
        assert_eq!(
            summary["result_error"][field], 0,
            "{}",
            summary["result_error"]
        );
    }

    // One prefix: the one the data directory's job chose at its first start.
    let (restored, prefixes) = redis_contents(&url);
    let job: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(data.join("job.json")).unwrap()).unwrap();
    assert_eq!(
        prefixes.into_iter().collect::<Vec<_>>(),
        vec![job["sink_prefix"].as_str().unwrap().to_string()]
    );
    assert_eq!(
        summary["result_error"]["compared"].as_u64().unwrap(),
        restored.len() as u64
    );
    // The truth, independently: the same log through a job that never failed (another Redis
    // database, a prefix given), key for key.
    let truth_url = format!("redis://127.0.0.1:{}/1", server.port);
    let unpaced = tmp.path().join("unpaced.yaml");
    std::fs::write(&unpaced, PACED.replace("rate: 15000\n", "")).unwrap();
    let out = Command::new(bin)
        .args(["run", "-w", unpaced.to_str().unwrap(), "-p"])
        .arg(&profile)
        .args(["--quiet", "--sink", &truth_url, "--sink-prefix", "truth:"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (truth, truth_prefixes) = redis_contents(&truth_url);
    assert_eq!(
        truth_prefixes.into_iter().collect::<Vec<_>>(),
        vec!["truth:"]
    );
    assert!(truth.len() > 1_000, "{} keys", truth.len());
    let differ: Vec<_> = truth
        .iter()
        .filter(|(k, v)| restored.get(*k) != Some(*v))
        .take(5)
        .collect();
    assert!(
        differ.is_empty() && truth.len() == restored.len(),
        "{differ:?}"
    );

    // Another prefix on this job is refused before anything runs.
    let out = run(
        &data,
        &url,
        &["--restore", "latest", "--sink-prefix", "other:"],
    )
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(2), "a usage error");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--sink-prefix 'other:' conflicts with"),
        "{err}"
    );
}
