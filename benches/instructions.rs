//! Instruction counts of the hot paths the criterion benches time (`benches/main.rs`), under
//! valgrind's callgrind through gungraun: counts that machine noise does not move, so CI can gate
//! on them. Each bench runs a fixed amount of work on the same inputs as its criterion twin
//! (`benches/main/fixture.rs`); setup (opening RocksDB, warm-up) is not counted.
//!
//! Needs valgrind and `gungraun-runner` of the same version as the `gungraun` dev-dependency:
//! `cargo install gungraun-runner --version 0.20.0`, then
//! `cargo bench --bench instructions` (`-- --save-baseline=NAME`, `-- --baseline=NAME` to
//! compare; `--callgrind-limits='ir=1%'` turns a larger change into exit code 3).

use std::hint::black_box;

use gungraun::{
    Callgrind, EventKind, LibraryBenchmarkConfig, library_benchmark, library_benchmark_group, main,
};
use statebench::backend::StateBackend;
use statebench::backend::serializer::ValueSerializer;
use statebench::durability::sink::{MemorySink, Sink};
use statebench::pipeline::source::Event;

#[path = "main/fixture.rs"]
#[allow(dead_code)] // Shared with benches/main.rs, which uses all of it.
mod fixture;

use fixture::{Db, OracleFeed, Pipeline, Timers, Value};

/// Values encoded or decoded per serializer bench: instructions per value = Ir / 1 000.
const VALUES: usize = 1_000;
/// Events run before an operator bench: state of many users, timers firing.
const OPERATOR_WARM_UP: usize = 2_000;
/// Events per operator bench: instructions per event = Ir / 1 000.
const OPERATOR_EVENTS: usize = 1_000;
/// Timers registered or fired per timer bench.
const TIMERS: usize = 2_000;
/// Events per oracle bench, after as many to warm it up.
const ORACLE_EVENTS: usize = 10_000;
/// Writes per sink bench.
const SINK_WRITES: u64 = 10_000;

// ---- serializers: compact (POJO) against generic (Kryo bytes), per value size ----

struct SerializerCase {
    serializer: ValueSerializer,
    value: Value,
    bytes: Vec<u8>,
}

/// `kind` and `value` index `fixture::KINDS` and `fixture::values()`.
fn serializer_case(kind: usize, value: usize) -> SerializerCase {
    let serializer = fixture::serializer(fixture::KINDS[kind].1);
    let (_, value) = fixture::values().swap_remove(value);
    let mut bytes = Vec::new();
    fixture::encode(&serializer, &value, &mut bytes);
    SerializerCase {
        serializer,
        value,
        bytes,
    }
}

#[library_benchmark]
#[bench::compact_stats_small(serializer_case(0, 0))]
#[bench::generic_stats_small(serializer_case(1, 0))]
#[bench::compact_stats_epoch(serializer_case(0, 1))]
#[bench::generic_stats_epoch(serializer_case(1, 1))]
#[bench::compact_decrement_1w(serializer_case(0, 2))]
#[bench::generic_decrement_1w(serializer_case(1, 2))]
#[bench::compact_decrement_4w(serializer_case(0, 3))]
#[bench::generic_decrement_4w(serializer_case(1, 3))]
#[bench::compact_decrement_16w(serializer_case(0, 4))]
#[bench::generic_decrement_16w(serializer_case(1, 4))]
fn encode(case: SerializerCase) -> Vec<u8> {
    let mut out = case.bytes;
    for _ in 0..VALUES {
        fixture::encode(&case.serializer, black_box(&case.value), &mut out);
    }
    out
}

#[library_benchmark]
#[bench::compact_stats_small(serializer_case(0, 0))]
#[bench::generic_stats_small(serializer_case(1, 0))]
#[bench::compact_stats_epoch(serializer_case(0, 1))]
#[bench::generic_stats_epoch(serializer_case(1, 1))]
#[bench::compact_decrement_1w(serializer_case(0, 2))]
#[bench::generic_decrement_1w(serializer_case(1, 2))]
#[bench::compact_decrement_4w(serializer_case(0, 3))]
#[bench::generic_decrement_4w(serializer_case(1, 3))]
#[bench::compact_decrement_16w(serializer_case(0, 4))]
#[bench::generic_decrement_16w(serializer_case(1, 4))]
fn decode(case: SerializerCase) -> i64 {
    let mut sum = 0;
    for _ in 0..VALUES {
        sum += fixture::decode(&case.serializer, &case.value, black_box(&case.bytes));
    }
    sum
}

library_benchmark_group!(name = serializer, benchmarks = [encode, decode]);

// ---- the operator's step, RocksDB included ----

/// A RocksDB backend for one bench process: leaked, so the pipeline that borrows it can be
/// handed from setup to the bench. Its directory goes with `dir` in the teardown.
fn leaked_backend() -> (tempfile::TempDir, &'static StateBackend) {
    let Db { _dir: dir, backend } = Db::open();
    (dir, Box::leak(Box::new(backend)))
}

struct OperatorCase {
    _dir: tempfile::TempDir,
    pipeline: Pipeline<'static>,
    events: Vec<Event>,
}

fn operator_case(kind: usize) -> OperatorCase {
    let (dir, backend) = leaked_backend();
    let mut pipeline = Pipeline::new(backend, &fixture::workload(fixture::KINDS[kind].1));
    pipeline.warm_up(OPERATOR_WARM_UP);
    let events = pipeline.next_events(OPERATOR_EVENTS);
    OperatorCase {
        _dir: dir,
        pipeline,
        events,
    }
}

#[library_benchmark(teardown = drop)]
#[bench::compact(operator_case(0))]
#[bench::generic(operator_case(1))]
fn operator_step(mut case: OperatorCase) -> OperatorCase {
    for event in &case.events {
        case.pipeline.step(black_box(event));
    }
    case
}

library_benchmark_group!(name = operator, benchmarks = [operator_step]);

// ---- the timer service ----

struct TimersCase {
    _dir: tempfile::TempDir,
    timers: Timers<'static>,
}

/// The timer service with `registered` timers waiting.
fn timers_case(registered: usize) -> TimersCase {
    let (dir, backend) = leaked_backend();
    let mut timers = Timers::new(backend);
    timers.register(registered);
    TimersCase { _dir: dir, timers }
}

#[library_benchmark(teardown = drop)]
#[bench::register(timers_case(0))]
fn timers_register(mut case: TimersCase) -> TimersCase {
    case.timers.register(TIMERS);
    case
}

#[library_benchmark(teardown = drop)]
#[bench::fire(timers_case(TIMERS))]
fn timers_fire(mut case: TimersCase) -> TimersCase {
    assert_eq!(case.timers.fire_all(), TIMERS as u64);
    case
}

library_benchmark_group!(name = timers, benchmarks = [timers_register, timers_fire]);

// ---- the oracle ----

/// An oracle warmed up on `ORACLE_EVENTS` events, and the next `ORACLE_EVENTS`.
fn oracle_case() -> (OracleFeed, Vec<Event>) {
    let mut events = fixture::events(2 * ORACLE_EVENTS);
    let next = events.split_off(ORACLE_EVENTS);
    let mut feed = OracleFeed::new();
    feed.feed(&events);
    (feed, next)
}

#[library_benchmark]
#[bench::on_event(oracle_case())]
fn oracle_on_event((mut feed, events): (OracleFeed, Vec<Event>)) -> OracleFeed {
    feed.feed(black_box(&events));
    feed
}

/// An oracle that has seen `ORACLE_EVENTS` events, and what a correct sink holds for it.
fn compare_case() -> (OracleFeed, Vec<(u64, usize, i64)>) {
    let mut feed = OracleFeed::new();
    feed.feed(&fixture::events(ORACLE_EVENTS));
    let results = fixture::exact_results(&feed.oracle);
    (feed, results)
}

#[library_benchmark]
#[bench::exact_sink(compare_case())]
fn oracle_compare((feed, results): (OracleFeed, Vec<(u64, usize, i64)>)) -> u64 {
    let error = feed.oracle.compare(black_box(results));
    assert!(error.is_exact());
    error.compared
}

library_benchmark_group!(
    name = oracle,
    benchmarks = [oracle_on_event, oracle_compare]
);

// ---- the in-process sink ----

fn memory_sink() -> MemorySink {
    MemorySink::new(
        fixture::workload(statebench::config::workload::SerializerKind::Compact).window_labels(),
    )
}

#[library_benchmark]
#[bench::memory(memory_sink())]
fn sink_write(mut sink: MemorySink) -> MemorySink {
    for i in 0..SINK_WRITES {
        sink.write(i % 2_500, (i % 4) as usize, (i % 97) as i64)
            .expect("in-process write");
    }
    sink
}

library_benchmark_group!(name = sink, benchmarks = [sink_write]);

main!(
    // Instructions are the count to gate on; without the cache simulation (L1/LL/RAM hits,
    // estimated cycles) callgrind runs about five times faster here.
    config = LibraryBenchmarkConfig::default()
        .tool(Callgrind::with_args(["--cache-sim=no"]).format([EventKind::Ir]));
    library_benchmark_groups = serializer, operator, timers, oracle, sink
);
