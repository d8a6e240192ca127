//! Inputs shared by the criterion benches (`benches/main.rs`) and the instruction-count benches
//! (`benches/instructions.rs`), so both measure the same work on the same data.

use statebench::backend::keys::CompositeKey;
use statebench::backend::serializer::{Decrement, Stats, ValueSerializer};
use statebench::backend::{CF_TIMERS, StateAccess, StateBackend};
use statebench::config::workload::SerializerKind;
use statebench::config::{Profile, Workload};
use statebench::durability::delivery::Delivery;
use statebench::durability::sink::MemorySink;
use statebench::engine::WATERMARK_EVERY_EVENTS;
use statebench::pipeline::operators::{self, Context, FrequencyJob, KeyedOperator};
use statebench::pipeline::oracle::Oracle;
use statebench::pipeline::source::{Event, Generator};
use statebench::pipeline::timers::RocksDbTimers;
use statebench::pipeline::watermark::BoundedOutOfOrderness;

/// Sixteen window labels, by window index: the largest Decrement a job of 16 windows writes.
pub const LABELS: [&str; 16] = [
    "1s", "2s", "5s", "10s", "30s", "1m", "2m", "5m", "10m", "15m", "30m", "1h", "2h", "6h", "12h",
    "1d",
];

pub const KINDS: [(&str, SerializerKind); 2] = [
    ("compact", SerializerKind::Compact),
    ("generic", SerializerKind::Generic),
];

pub fn serializer(kind: SerializerKind) -> ValueSerializer {
    ValueSerializer::new(kind, &LABELS)
}

/// A state value of each size the job writes: Stats with small numbers and with epoch-ms
/// timestamps (Kryo's varints make these differ in size; the POJO bytes do not), and timerState
/// Decrements of 1, 4 and 16 windows.
pub enum Value {
    Stats(Stats),
    Decrement(Decrement),
}

pub fn values() -> Vec<(&'static str, Value)> {
    let decrement = |n: u8| {
        Value::Decrement(Decrement {
            windows: (0..n).map(|w| (w, 1 + u32::from(w))).collect(),
        })
    };
    vec![
        (
            "stats-small",
            Value::Stats(Stats {
                count: 3,
                first_event_time: 1,
                last_event_time: 2,
            }),
        ),
        (
            "stats-epoch",
            Value::Stats(Stats {
                count: 3,
                first_event_time: 1_767_225_600_000,
                last_event_time: 1_767_225_660_000,
            }),
        ),
        ("decrement-1w", decrement(1)),
        ("decrement-4w", decrement(4)),
        ("decrement-16w", decrement(16)),
    ]
}

/// Encodes `value` into `out` (cleared first).
pub fn encode(s: &ValueSerializer, value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Stats(stats) => s.encode_stats(stats, out),
        Value::Decrement(d) => s
            .encode_decrement(d, out)
            .expect("every window has a label"),
    }
}

/// Decodes bytes that `encode` wrote for a value of `value`'s type; returns a number that
/// depends on the decoded value, so the decoding cannot be optimized away.
pub fn decode(s: &ValueSerializer, value: &Value, bytes: &[u8]) -> i64 {
    match value {
        Value::Stats(_) => s.decode_stats(bytes).expect("valid Stats").count,
        Value::Decrement(_) => s
            .decode_decrement(bytes)
            .expect("valid Decrement")
            .windows
            .len() as i64,
    }
}

/// The `smoke` workload (20 000 uniform users, windows 1m, 5m, 10m, 30m) in `kind`.
pub fn workload(kind: SerializerKind) -> Workload {
    let mut workload = Workload::load("smoke").expect("built-in workload 'smoke'");
    workload.spec.serializer = kind;
    workload
}

/// `smoke`'s events, without end.
pub fn stream() -> Generator {
    Generator::new(&workload(SerializerKind::Compact))
}

/// The first `n` events of `smoke`.
pub fn events(n: usize) -> Vec<Event> {
    stream().take(n).collect()
}

/// A RocksDB state backend with the `flink-default` profile in a temporary directory.
pub struct Db {
    /// Removed when dropped.
    pub _dir: tempfile::TempDir,
    pub backend: StateBackend,
}

impl Db {
    pub fn open() -> Db {
        let dir = tempfile::tempdir().expect("temporary directory");
        let profile = Profile::load("flink-default").expect("built-in profile 'flink-default'");
        let backend = StateBackend::open(dir.path(), &profile).expect("open RocksDB");
        Db { _dir: dir, backend }
    }
}

/// The reference job as the engine drives it, minus the source and the oracle: per event,
/// processing time moves on, the operator runs (+1 per window in RocksDB, timerState, a timer,
/// a write to the in-process sink), and every `WATERMARK_EVERY_EVENTS` events the watermark
/// advances and fires the due timers (the -1s).
pub struct Pipeline<'a> {
    pub ctx: Context<'a, Delivery>,
    pub job: FrequencyJob<'a>,
    watermark: BoundedOutOfOrderness,
    events: Generator,
    processed: u64,
}

impl<'a> Pipeline<'a> {
    pub fn new(backend: &'a StateBackend, workload: &Workload) -> Pipeline<'a> {
        let sink = Box::new(MemorySink::new(workload.window_labels()));
        let layout = operators::layout(&workload.operator());
        let ctx =
            Context::new(backend, &layout, Delivery::passthrough(sink)).expect("operator context");
        let job = FrequencyJob::new(backend, workload).expect("job");
        Pipeline {
            ctx,
            job,
            watermark: BoundedOutOfOrderness::new(
                workload.spec.event_time.out_of_orderness.0 as i64,
            ),
            events: Generator::new(workload),
            processed: 0,
        }
    }

    /// The next `n` events of the workload's endless stream.
    pub fn next_events(&mut self, n: usize) -> Vec<Event> {
        self.events.by_ref().take(n).collect()
    }

    /// One event through the job, as `JobRunner::step` does it.
    pub fn step(&mut self, event: &Event) {
        self.ctx.set_now(event.append_time);
        self.job.on_event(event, &mut self.ctx).expect("on_event");
        self.watermark.on_event(event.event_time);
        self.processed += 1;
        if self.processed.is_multiple_of(WATERMARK_EVERY_EVENTS) {
            self.ctx
                .advance_watermark(&mut self.job, self.watermark.current())
                .expect("advance watermark");
        }
    }

    /// Runs `n` events: the job's state and timers reach the shape of a running job.
    pub fn warm_up(&mut self, n: usize) {
        for event in self.next_events(n) {
            self.step(&event);
        }
    }
}

/// The timer service alone, on its own column family: timers of the workload's users at
/// increasing timestamps, as the job registers them (`eventTime + window`).
pub struct Timers<'a> {
    pub state: StateAccess<'a>,
    pub service: RocksDbTimers<'a>,
    keys: Vec<CompositeKey>,
    next: usize,
    next_timestamp: i64,
}

impl<'a> Timers<'a> {
    pub fn new(backend: &'a StateBackend) -> Timers<'a> {
        let mut state = StateAccess::new(backend);
        let cf = backend.cf(CF_TIMERS).expect("timers column family");
        let service = RocksDbTimers::open(cf, &mut state).expect("timer service");
        let users = workload(SerializerKind::Compact).spec.keys.count;
        let keys = (0..users)
            .map(|user| {
                let mut key = CompositeKey::default();
                let mut name = String::new();
                Generator::user_key(user, &mut name);
                key.set_key(&name);
                key
            })
            .collect();
        Timers {
            state,
            service,
            keys,
            next: 0,
            next_timestamp: 1_767_225_600_000,
        }
    }

    /// Registers `n` timers, each for the next user (round robin) one millisecond after the last.
    pub fn register(&mut self, n: usize) {
        for _ in 0..n {
            let key = &self.keys[self.next];
            self.next = (self.next + 1) % self.keys.len();
            self.service
                .register(&mut self.state, key, self.next_timestamp)
                .expect("register timer");
            self.next_timestamp += 1;
        }
    }

    /// Fires every registered timer; returns how many fired.
    pub fn fire_all(&mut self) -> u64 {
        let mut fired = 0;
        while self
            .service
            .poll_due(&mut self.state, i64::MAX)
            .expect("poll timer")
            .is_some()
        {
            fired += 1;
        }
        fired
    }
}

/// The oracle as the engine feeds it: every event, and the watermark every
/// `WATERMARK_EVERY_EVENTS` events.
pub struct OracleFeed {
    pub oracle: Oracle,
    watermark: BoundedOutOfOrderness,
    seen: u64,
}

impl OracleFeed {
    /// An empty oracle over `smoke`'s windows.
    pub fn new() -> OracleFeed {
        let spec = workload(SerializerKind::Compact).spec;
        let windows: Vec<i64> = spec.windows.iter().map(|w| w.0 as i64).collect();
        OracleFeed {
            oracle: Oracle::new(&windows),
            watermark: BoundedOutOfOrderness::new(spec.event_time.out_of_orderness.0 as i64),
            seen: 0,
        }
    }

    pub fn feed(&mut self, events: &[Event]) {
        for e in events {
            self.oracle.on_event(e, e.append_time);
            self.watermark.on_event(e.event_time);
            self.seen += 1;
            if self.seen.is_multiple_of(WATERMARK_EVERY_EVENTS) {
                self.oracle.on_watermark(self.watermark.current());
            }
        }
    }
}

/// What a correct sink holds for `oracle` over `smoke`: every (user, window, count) with a
/// count above zero, as `Oracle::compare` receives a sink's contents.
pub fn exact_results(oracle: &Oracle) -> Vec<(u64, usize, i64)> {
    let spec = workload(SerializerKind::Compact).spec;
    let windows = spec.windows.len();
    (0..spec.keys.count)
        .flat_map(|user| (0..windows).map(move |w| (user, w)))
        .map(|(user, w)| (user, w, oracle.count(user, w)))
        .filter(|(_, _, count)| *count > 0)
        .collect()
}
