//! The operator's step per event on RocksDB (`flink-default`): +1 per window (get, deserialize,
//! serialize, put), timerState, a timer, a sink write, and every 64 events a watermark that
//! fires the due timers (the -1s), after a warm-up that gives state and timers a running job's
//! shape. Both serializers.

use std::cell::OnceCell;
use std::time::Instant;

use criterion::{Criterion, Throughput};

use super::fixture::{self, Db, KINDS, Pipeline};

/// Events run before measuring: state of every user, timers firing.
const WARM_UP_EVENTS: usize = 50_000;

pub fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("operator");
    group.throughput(Throughput::Elements(1));
    for (kind_name, kind) in KINDS {
        // Opened on first use, so a filter that skips this bench skips the warm-up too.
        let db = OnceCell::new();
        let mut pipeline = None;
        group.bench_function(format!("step/{kind_name}"), |b| {
            let pipeline = pipeline.get_or_insert_with(|| {
                let db: &Db = db.get_or_init(Db::open);
                let mut p = Pipeline::new(&db.backend, &fixture::workload(kind));
                p.warm_up(WARM_UP_EVENTS);
                p
            });
            b.iter_custom(|iters| {
                let events = pipeline.next_events(iters as usize);
                let start = Instant::now();
                for event in &events {
                    pipeline.step(event);
                }
                start.elapsed()
            });
        });
        if let Some(pipeline) = &pipeline {
            let events = pipeline.job.counters.events.max(1);
            let ops = pipeline.ctx.state.counters;
            let per_event = |n: u64| n as f64 / events as f64;
            println!(
                "operator/step/{kind_name}: {:.2} gets, {:.2} puts, {:.2} deletes, {:.3} timer batches per event ({events} events)",
                per_event(ops.gets),
                per_event(ops.puts),
                per_event(ops.deletes),
                per_event(ops.batch_writes),
            );
        }
    }
    group.finish();
}
