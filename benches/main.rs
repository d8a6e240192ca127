//! Criterion benches. `cargo bench --bench main` (add `-- reference_job` to pick one).

use criterion::{Criterion, criterion_group, criterion_main};

#[path = "main/reference_job.rs"]
mod reference_job;

fn benches(c: &mut Criterion) {
    reference_job::bench(c);
}

criterion_group! {
    name = statebench_benches;
    config = Criterion::default().sample_size(10);
    targets = benches
}
criterion_main!(statebench_benches);
