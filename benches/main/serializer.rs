//! State values encoded and decoded per value: the compact (POJO) serializer against the
//! generic one (Flink's Kryo bytes), for each value size the job writes.

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, Throughput};

use super::fixture::{self, KINDS};

pub fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("serializer");
    group.throughput(Throughput::Elements(1));
    // Nanoseconds per call: a short measurement settles; 20 benches at criterion's default
    // 3 s + 5 s would take minutes.
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(2));
    let mut sizes = Vec::new();
    for (value_name, value) in fixture::values() {
        for (kind_name, kind) in KINDS {
            let s = fixture::serializer(kind);
            let mut out = Vec::with_capacity(256);
            group.bench_function(format!("encode/{kind_name}/{value_name}"), |b| {
                b.iter(|| fixture::encode(&s, black_box(&value), &mut out));
            });
            fixture::encode(&s, &value, &mut out);
            let bytes = out.clone();
            group.bench_function(format!("decode/{kind_name}/{value_name}"), |b| {
                b.iter(|| fixture::decode(&s, &value, black_box(&bytes)));
            });
            sizes.push(format!("{kind_name}/{value_name} {} B", bytes.len()));
        }
    }
    group.finish();
    println!("serializer: value sizes: {}", sizes.join(", "));
}
