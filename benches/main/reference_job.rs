//! Events/s of the reference job (the engine end to end, RocksDB included) on `smoke`.

use std::time::Duration;

use criterion::{BatchSize, Criterion, Throughput};
use statebench::config::{Profile, Workload};
use statebench::engine::{self, EngineConfig};

const EVENTS: u64 = 50_000;

pub fn bench(c: &mut Criterion) {
    let workload = Workload::load("smoke").expect("built-in workload");
    let profile = Profile::load("flink-default").expect("built-in profile");
    let mut group = c.benchmark_group("reference_job");
    group.throughput(Throughput::Elements(EVENTS));
    group.measurement_time(Duration::from_secs(30));
    let mut ops_per_event = None;
    group.bench_function("smoke_flink_default", |b| {
        b.iter_batched(
            || tempfile::tempdir().expect("temporary directory"),
            |dir| {
                let outcome = engine::run_to_completion(EngineConfig {
                    events: EVENTS,
                    ..EngineConfig::new(workload.clone(), profile.clone(), dir.path().to_path_buf())
                })
                .expect("run");
                let summary = statebench::summary::Summary::new(&outcome);
                ops_per_event = Some((
                    summary.rocksdb_ops_per_event,
                    summary.gets,
                    summary.puts,
                    summary.deletes,
                    summary.batch_writes,
                ));
                dir
            },
            BatchSize::PerIteration,
        );
    });
    group.finish();
    if let Some((per_event, gets, puts, deletes, batches)) = ops_per_event {
        println!(
            "reference_job/smoke_flink_default: {per_event:.2} RocksDB operations per event ({gets} gets, {puts} puts, {deletes} deletes, {batches} timer write batches per {EVENTS} events)"
        );
    }
}
