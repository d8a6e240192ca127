//! The serving store per write: the in-process sink, and a real Redis server (pipelined) when
//! one answers at `STATEBENCH_BENCH_REDIS` (default `redis://127.0.0.1:6379`); skipped if not.

use criterion::{Criterion, Throughput};
use statebench::durability::sink::{MemorySink, RedisSink, Sink};

use super::fixture;

/// The bench's keys in Redis, removed when it is done.
const PREFIX: &str = "statebench-bench:";

/// Distinct users written (the `smoke` workload's).
const USERS: u64 = 20_000;

pub fn bench(c: &mut Criterion) {
    let labels: Vec<String> =
        fixture::workload(statebench::config::workload::SerializerKind::Compact).window_labels();
    let mut group = c.benchmark_group("sink");
    group.throughput(Throughput::Elements(1));
    let mut memory = MemorySink::new(labels.clone());
    bench_writes(&mut group, "memory", &mut memory);

    let url = std::env::var("STATEBENCH_BENCH_REDIS")
        .unwrap_or_else(|_| "redis://127.0.0.1:6379".to_string());
    match RedisSink::connect(&url, PREFIX, labels) {
        Ok(mut redis) => {
            bench_writes(&mut group, "redis", &mut redis);
            remove_keys(&url);
        }
        Err(e) => println!("sink/redis: skipped ({e})"),
    }
    group.finish();
}

/// Upserts of counts, user by user and window by window, as the job writes them.
fn bench_writes(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    name: &str,
    sink: &mut dyn Sink,
) {
    let mut i: u64 = 0;
    group.bench_function(format!("write/{name}"), |b| {
        b.iter(|| {
            let user = i % USERS;
            let window = (i / USERS % 4) as usize;
            i += 1;
            sink.write(user, window, (i % 97) as i64)
                .expect("sink write");
        });
    });
    sink.flush().expect("sink flush");
}

/// Deletes the keys the bench wrote (and nothing else: the server may hold other data).
fn remove_keys(url: &str) {
    let mut con = redis::Client::open(url)
        .and_then(|c| c.get_connection())
        .expect("Redis connection");
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("{PREFIX}*"))
        .query(&mut con)
        .expect("Redis KEYS");
    for chunk in keys.chunks(1_000) {
        redis::cmd("DEL")
            .arg(chunk)
            .query::<()>(&mut con)
            .expect("Redis DEL");
    }
}
