//! The event-time timer service per timer: registration (cache, write batch of 500 to RocksDB)
//! and firing (poll in timestamp order across key groups, delete, refill from RocksDB).

use std::cell::OnceCell;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput};

use super::fixture::{Db, Timers};

/// Timers registered before a round of firing: one per user of `smoke`, as a watermark that
/// passes a second of event time fires them.
const ROUND: u64 = 20_000;

pub fn bench(c: &mut Criterion) {
    // Opened on first use, so a filter that skips these benches skips opening RocksDB too.
    let db = OnceCell::new();
    let mut timers = None;
    let mut group = c.benchmark_group("timers");
    group.throughput(Throughput::Elements(1));
    group.bench_function("register", |b| {
        let timers = timers.get_or_insert_with(|| Timers::new(&db.get_or_init(Db::open).backend));
        b.iter_custom(|iters| {
            let start = Instant::now();
            timers.register(iters as usize);
            let elapsed = start.elapsed();
            timers.fire_all();
            elapsed
        });
    });
    group.bench_function("fire", |b| {
        let timers = timers.get_or_insert_with(|| Timers::new(&db.get_or_init(Db::open).backend));
        b.iter_custom(|iters| {
            let mut elapsed = Duration::ZERO;
            let mut left = iters;
            while left > 0 {
                let n = left.min(ROUND);
                timers.register(n as usize);
                let start = Instant::now();
                let fired = timers.fire_all();
                elapsed += start.elapsed();
                assert_eq!(fired, n, "every registered timer fires");
                left -= n;
            }
            elapsed
        });
    });
    group.finish();
}
