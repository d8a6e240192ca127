//! The oracle: its part of every event (count +1 per window, expiry queued; the watermark
//! expiring counts every 64 events), and a comparison of a whole sink with the truth.

use std::time::Instant;

use criterion::{BatchSize, Criterion, Throughput};

use super::fixture::{self, OracleFeed};

/// Events the oracle has seen before its comparison is measured.
const COMPARE_EVENTS: usize = 100_000;

pub fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("oracle");
    group.throughput(Throughput::Elements(1));
    let mut feed = OracleFeed::new();
    let mut stream = fixture::stream();
    group.bench_function("on_event", |b| {
        b.iter_custom(|iters| {
            let events: Vec<_> = stream.by_ref().take(iters as usize).collect();
            let start = Instant::now();
            feed.feed(&events);
            start.elapsed()
        });
    });

    let mut feed = OracleFeed::new();
    feed.feed(&fixture::events(COMPARE_EVENTS));
    let results = fixture::exact_results(&feed.oracle);
    group.throughput(Throughput::Elements(results.len() as u64));
    group.bench_function("compare", |b| {
        b.iter_batched(
            || results.clone(),
            |results| {
                let error = feed.oracle.compare(results);
                assert!(error.is_exact());
                error
            },
            BatchSize::LargeInput,
        );
    });
    group.finish();
    println!(
        "oracle/compare: {} (user, window) pairs per comparison",
        results.len()
    );
}
