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
    let depth = statebench::pipeline::sink::PIPELINE_DEPTH as u64;
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
