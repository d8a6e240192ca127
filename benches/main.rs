//! Criterion benches, one module per area. `cargo bench --bench main` runs them all; a filter
//! picks some (`cargo bench --bench main -- serializer/`). The instruction counts of the same
//! hot paths are in `benches/instructions.rs`.

use criterion::{Criterion, criterion_group, criterion_main};

#[path = "main/fixture.rs"]
mod fixture;
#[path = "main/operator.rs"]
mod operator;
#[path = "main/oracle.rs"]
mod oracle;
#[path = "main/reference_job.rs"]
mod reference_job;
#[path = "main/serializer.rs"]
mod serializer;
#[path = "main/sink.rs"]
mod sink;
#[path = "main/timers.rs"]
mod timers;

fn per_op(c: &mut Criterion) {
    serializer::bench(c);
    operator::bench(c);
    timers::bench(c);
    oracle::bench(c);
    sink::bench(c);
}

fn end_to_end(c: &mut Criterion) {
    reference_job::bench(c);
}

criterion_group!(per_op_benches, per_op);
criterion_group! {
    name = end_to_end_benches;
    config = Criterion::default().sample_size(10);
    targets = end_to_end
}
criterion_main!(per_op_benches, end_to_end_benches);
