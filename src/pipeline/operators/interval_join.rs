//! `kind: interval-join`: Flink 1.20's `IntervalJoinOperator` (flink-streaming-java,
//! `org.apache.flink.streaming.api.operators.co`), call for call on RocksDB.
//!
//! Per side a `MapState<Long, List<BufferEntry<T>>>` ("LEFT_BUFFER", "RIGHT_BUFFER": one
//! RocksDB key per (key, timestamp) bucket). Per element (`processElement`): dropped when late
//! (`isLate`: its time is behind the current watermark); else `addToBuffer` (a get of its
//! timestamp's bucket and a put of the bucket with the element appended), an iteration over
//! the other side's whole buffer for the key (`MapState.entries()`: RocksDBMapIterator's
//! batches, a seek each), a pair emitted for every buffered element within the bounds, and a
//! cleanup timer (`registerEventTimeTimer` with the String namespace "CLEANUP_LEFT" or
//! "CLEANUP_RIGHT" in the timer service "CLEANUP_TIMER"). A cleanup timer (`onEventTime`)
//! removes its bucket.
//!
//! The element is the record the Flink parity job maps each trace record to,
//! `Tuple3<String key, Long eventTime, byte[] payload>` (TupleSerializer), the payload
//! `value_size` bytes. Results per key (not Flink state: what the `ProcessJoinFunction` sees):
//! `pairs` and `digest` = wrapping sum of `mix(left time, right time, left size, right size)`.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::{Context, JobCounters, KeyedOperator, Layout, mix, record, splitmix64};
use crate::backend::keys::{self, CompositeKey};
use crate::backend::{BackendError, Cf, StateAccess, StateBackend};
use crate::config::Workload;
use crate::config::job::interval_join::IntervalJoinSpec;
use crate::pipeline::PipelineError;
use crate::pipeline::oracle::{TruthModel, Truths};
use crate::pipeline::output::Output;
use crate::pipeline::source::{Event, KeyNames};
use crate::pipeline::timers::Timer;

/// `IntervalJoinOperator.LEFT_BUFFER` / `RIGHT_BUFFER`: the MapStates' names, so their column
/// families'.
pub const CF_LEFT_BUFFER: &str = "LEFT_BUFFER";
pub const CF_RIGHT_BUFFER: &str = "RIGHT_BUFFER";
/// `CLEANUP_TIMER_NAME`: the timer service (`_timer_state/event_CLEANUP_TIMER`).
pub const TIMER_SERVICE: &str = "CLEANUP_TIMER";
/// `CLEANUP_NAMESPACE_LEFT` / `RIGHT`: the timers' String namespaces.
pub const NAMESPACE_LEFT: &str = "CLEANUP_LEFT";
pub const NAMESPACE_RIGHT: &str = "CLEANUP_RIGHT";

/// `RocksDBMapState.RocksDBMapIterator.CACHE_SIZE_LIMIT`: entries loaded per batch.
pub const MAP_ITERATOR_BATCH: usize = 128;

/// Which input an element came on: `Event.input` 0 is the left (`processElement1`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Side {
    Left,
    Right,
}

impl Side {
    fn of(event: &Event) -> Side {
        if event.input == 0 {
            Side::Left
        } else {
            Side::Right
        }
    }
}

/// The effective (inclusive) bounds and what follows from them for each side, as
/// `IntervalJoinOperator` computes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    /// After inclusivity: `lowerBound` (+1 when exclusive), `upperBound` (-1 when exclusive).
    pub lower: i64,
    pub upper: i64,
}

impl Bounds {
    pub fn new(spec: &IntervalJoinSpec) -> Bounds {
        let (lower, upper) = spec.effective_bounds();
        Bounds { lower, upper }
    }

    /// `processElement1` passes (lower, upper), `processElement2` (-upper, -lower).
    fn relative(&self, side: Side) -> (i64, i64) {
        match side {
            Side::Left => (self.lower, self.upper),
            Side::Right => (self.upper.wrapping_neg(), self.lower.wrapping_neg()),
        }
    }

    /// Whether the other side's bucket at `other` joins an element of `side` at `ts` (Java's
    /// wrapping long arithmetic, as Flink compares).
    fn joins(&self, side: Side, ts: i64, other: i64) -> bool {
        let (lower, upper) = self.relative(side);
        !(other < ts.wrapping_add(lower) || other > ts.wrapping_add(upper))
    }

    /// `cleanupTime`: `ourTimestamp + relativeUpperBound` when that bound is positive.
    fn cleanup_time(&self, side: Side, ts: i64) -> i64 {
        let (_, upper) = self.relative(side);
        if upper > 0 {
            ts.wrapping_add(upper)
        } else {
            ts
        }
    }

    /// `onEventTime`: the bucket a cleanup timer of `side` at `timer` removes.
    fn bucket_of_timer(&self, side: Side, timer: i64) -> i64 {
        match side {
            Side::Left if self.upper > 0 => timer.wrapping_sub(self.upper),
            Side::Left => timer,
            Side::Right if self.lower <= 0 => timer.wrapping_add(self.lower),
            Side::Right => timer,
        }
    }
}

/// `(left time, right time, left value size, right value size)` in the result's digest.
fn pair_digest(side: Side, ts: i64, size: u32, other_ts: i64, other_size: u32) -> i64 {
    match side {
        Side::Left => mix(ts, other_ts, i64::from(size), i64::from(other_size)),
        Side::Right => mix(other_ts, ts, i64::from(other_size), i64::from(size)),
    }
}

/// Byte `i` of an element's payload: `(byte) splitmix64(eventTime * 31 + i)`, as the parity
/// job writes it (deterministic, incompressible).
fn payload_byte(event_time: i64, i: u32) -> u8 {
    splitmix64(event_time.wrapping_mul(31).wrapping_add(i64::from(i)) as u64) as u8
}

/// Appends one `BufferEntry<Tuple3<String, Long, byte[]>>` (BufferEntrySerializer: the
/// `hasBeenJoined` boolean, then the element's TupleSerializer: StringValue key, long, then
/// BytePrimitiveArraySerializer's length and bytes).
fn write_entry(out: &mut Vec<u8>, key: &str, event_time: i64, value_size: u32) {
    out.push(0); // hasBeenJoined: false (addToBuffer never sets it)
    keys::write_string(out, key);
    out.extend_from_slice(&event_time.to_be_bytes());
    out.extend_from_slice(&(value_size as i32).to_be_bytes());
    out.extend((0..value_size).map(|i| payload_byte(event_time, i)));
}

fn corrupt(what: &str) -> BackendError {
    BackendError::Corrupt(format!("interval-join buffer value: {what}"))
}

/// `addToBuffer`'s new bucket value from the old one (None: no bucket yet): ListSerializer's
/// count + 1 and the entry appended, behind RocksDBMapState's not-null byte.
fn append_to_bucket(
    old: Option<&[u8]>,
    out: &mut Vec<u8>,
    key: &str,
    event_time: i64,
    value_size: u32,
) -> Result<(), BackendError> {
    out.clear();
    match old {
        None => {
            out.push(0);
            out.extend_from_slice(&1i32.to_be_bytes());
        }
        Some(old) => {
            let count = bucket_len(old)?;
            out.extend_from_slice(old);
            out[1..5].copy_from_slice(&(count + 1).to_be_bytes());
        }
    }
    write_entry(out, key, event_time, value_size);
    Ok(())
}

/// The number of entries of a bucket value.
fn bucket_len(value: &[u8]) -> Result<i32, BackendError> {
    match value {
        [0, a, b, c, d, ..] => Ok(i32::from_be_bytes([*a, *b, *c, *d])),
        [_, ..] => Err(corrupt("null flag set")),
        [] => Err(corrupt("empty")),
    }
}

/// Calls `f(event time, value size)` for each element of a bucket value (what the iteration
/// deserializes of a bucket within the bounds).
fn for_each_element(value: &[u8], mut f: impl FnMut(i64, u32)) -> Result<(), BackendError> {
    let count = bucket_len(value)?;
    let mut rest = &value[5..];
    for _ in 0..count {
        let body = rest.get(1..).ok_or_else(|| corrupt("truncated entry"))?;
        let used = string_len(body).ok_or_else(|| corrupt("bad key string"))?;
        let body = &body[used..];
        let (time, body) = body
            .split_first_chunk::<8>()
            .ok_or_else(|| corrupt("truncated event time"))?;
        let (len, body) = body
            .split_first_chunk::<4>()
            .ok_or_else(|| corrupt("truncated payload length"))?;
        let len = u32::try_from(i32::from_be_bytes(*len)).map_err(|_| corrupt("null payload"))?;
        rest = body
            .get(len as usize..)
            .ok_or_else(|| corrupt("truncated payload"))?;
        f(i64::from_be_bytes(*time), len);
    }
    Ok(())
}

/// Bytes of a `StringValue.writeString` at the start of `bytes`: the length + 1 as a varint,
/// then each UTF-16 unit as a varint.
fn string_len(bytes: &[u8]) -> Option<usize> {
    let mut at = 0;
    let mut varint = || -> Option<u32> {
        let mut value = 0u32;
        for shift in (0..35).step_by(7) {
            let b = *bytes.get(at)?;
            at += 1;
            value |= u32::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Some(value);
            }
        }
        None
    };
    let units = varint()?.checked_sub(1)?;
    for _ in 0..units {
        varint()?;
    }
    Some(at)
}

/// The timestamp (a Long user key) of a buffer's RocksDB key.
fn bucket_time(key: &[u8], prefix_len: usize) -> Result<i64, BackendError> {
    key.get(prefix_len..)
        .and_then(|k| <[u8; 8]>::try_from(k).ok())
        .map(i64::from_be_bytes)
        .ok_or_else(|| corrupt("user key is not a Long"))
}

/// `MapState.entries()` of the current key walked to its end, as Flink's
/// `RocksDBMapState.RocksDBMapIterator.loadCache` reads RocksDB: batches of up to
/// [`MAP_ITERATOR_BATCH`] entries, each from a new iterator (default read options). The first
/// seeks to the key's prefix; each later one seeks to the previous batch's last key and steps
/// past it with a `next` (that key is still there: nothing writes during the iteration), and
/// every entry loaded is followed by a `next`. A batch that meets the end of the prefix (also
/// right after its 128th entry) is the last; one that stops at 128 entries is not.
pub fn for_each_map_entry(
    state: &mut StateAccess,
    cf: &Cf,
    prefix: &[u8],
    mut f: impl FnMut(&[u8], &[u8]) -> Result<(), BackendError>,
) -> Result<(), BackendError> {
    let mut last: Vec<u8> = Vec::new();
    let mut more = state.iterate_prefix(cf, prefix, prefix, MAP_ITERATOR_BATCH, |k, v| {
        last.clear();
        last.extend_from_slice(k);
        f(k, v)
    })?;
    let mut seek = Vec::new();
    while more {
        std::mem::swap(&mut seek, &mut last);
        let mut skipped = false;
        // One more than a batch: the first key seen is the one Flink's `next` steps past.
        more = state.iterate_prefix(cf, prefix, &seek, MAP_ITERATOR_BATCH + 1, |k, v| {
            if !skipped {
                skipped = true;
                return Ok(());
            }
            last.clear();
            last.extend_from_slice(k);
            f(k, v)
        })?;
    }
    Ok(())
}

/// The column families, in Flink's creation order: the two MapStates (initializeState), then
/// the timer service (open()).
pub fn layout(_spec: &IntervalJoinSpec) -> Layout {
    Layout::default()
        .state(CF_LEFT_BUFFER, None, false)
        .state(CF_RIGHT_BUFFER, None, false)
        .timer_service(TIMER_SERVICE)
}

pub struct IntervalJoin<'a> {
    left: &'a Cf,
    right: &'a Cf,
    bounds: Bounds,
    /// How the job names a key id (`user-N` or a trace's own key).
    keys: KeyNames,
    key: CompositeKey,
    user: String,
    value: Vec<u8>,
    /// StringSerializer bytes of "CLEANUP_LEFT" and "CLEANUP_RIGHT".
    namespaces: [Vec<u8>; 2],
    /// Per key id: (pairs, digest) so far, what the join function has seen (not Flink state).
    totals: HashMap<u64, (i64, i64)>,
    /// `events`, `emitted` (pairs), `dropped_late`.
    pub counters: JobCounters,
    /// Buckets removed by cleanup timers.
    pub cleanups: u64,
}

impl<'a> IntervalJoin<'a> {
    pub fn new(
        backend: &'a StateBackend,
        workload: &Workload,
        spec: &IntervalJoinSpec,
    ) -> Result<Self, PipelineError> {
        let ns = |name: &str| {
            let mut out = Vec::new();
            keys::write_string(&mut out, name);
            out
        };
        Ok(IntervalJoin {
            left: backend.cf(CF_LEFT_BUFFER)?,
            right: backend.cf(CF_RIGHT_BUFFER)?,
            bounds: Bounds::new(spec),
            keys: KeyNames::of(workload),
            key: CompositeKey::default(),
            user: String::new(),
            value: Vec::new(),
            namespaces: [ns(NAMESPACE_LEFT), ns(NAMESPACE_RIGHT)],
            totals: HashMap::new(),
            counters: JobCounters::default(),
            cleanups: 0,
        })
    }

    fn buffer(&self, side: Side) -> &'a Cf {
        match side {
            Side::Left => self.left,
            Side::Right => self.right,
        }
    }
}

impl<'a, S: Output> KeyedOperator<'a, S> for IntervalJoin<'a> {
    /// `IntervalJoinOperator.processElement`.
    fn on_event(&mut self, event: &Event, ctx: &mut Context<'a, S>) -> Result<(), PipelineError> {
        self.counters.events += 1;
        let side = Side::of(event);
        let ts = event.event_time;
        // isLate: `timestamp < internalTimerService.currentWatermark()`: dropped untouched.
        if ts < ctx.watermark {
            self.counters.dropped_late += 1;
            return Ok(());
        }
        self.keys.write(event.user, &mut self.user);
        self.key.set_key(&self.user);

        // addToBuffer: `buffer.get(timestamp)`, the element added, `buffer.put(timestamp, ..)`.
        let ours = self.buffer(side);
        let (value, user) = (&mut self.value, &self.user);
        let bucket = self.key.with_long_user_key(ts);
        let found = ctx.state.get(ours, bucket, |old| {
            append_to_bucket(Some(old), value, user, ts, event.value_size)
        })?;
        if found.is_none() {
            append_to_bucket(None, value, user, ts, event.value_size)?;
        }
        ctx.state.put(ours, bucket, value)?;

        // for (bucket : otherBuffer.entries()): skip buckets out of bounds, else collect() a
        // pair with every element of the bucket.
        let bounds = self.bounds;
        let size = event.value_size;
        let (mut pairs, mut digest) = (0i64, 0i64);
        let prefix_len = self.key.prefix().len();
        let other_buffer = self.buffer(other(side));
        let emitted = &mut ctx.emitted;
        for_each_map_entry(&mut ctx.state, other_buffer, self.key.prefix(), |k, v| {
            let other_ts = bucket_time(k, prefix_len)?;
            if !bounds.joins(side, ts, other_ts) {
                return Ok(());
            }
            for_each_element(v, |_, other_size| {
                pairs += 1;
                digest = digest.wrapping_add(pair_digest(side, ts, size, other_ts, other_size));
                // IntervalJoinOperator.collect: setAbsoluteTimestamp(max(left, right)).
                emitted.push(pair_record(event.user, ts, size, other_ts, other_size));
            })
        })?;
        if pairs > 0 {
            self.counters.emitted += pairs as u64;
            let total = self.totals.entry(event.user).or_default();
            total.0 += pairs;
            total.1 = total.1.wrapping_add(digest);
            let (p, d) = *total;
            ctx.write(event.user, 0, p)?;
            ctx.write(event.user, 1, d)?;
        }

        // internalTimerService.registerEventTimeTimer(CLEANUP_LEFT | CLEANUP_RIGHT, cleanupTime)
        let namespace = match side {
            Side::Left => &self.namespaces[0],
            Side::Right => &self.namespaces[1],
        };
        self.key.set_namespace(namespace);
        ctx.register_timer(&self.key, bounds.cleanup_time(side, ts))?;
        Ok(())
    }

    /// `IntervalJoinOperator.onEventTime`: `leftBuffer.remove(..)` / `rightBuffer.remove(..)`.
    fn on_timer(&mut self, timer: &Timer, ctx: &mut Context<'a, S>) -> Result<(), PipelineError> {
        let side = if timer.namespace == self.namespaces[0] {
            Side::Left
        } else if timer.namespace == self.namespaces[1] {
            Side::Right
        } else {
            return Err(PipelineError::CorruptTimer(format!(
                "interval-join timer of key '{}' with namespace {:02x?}: Flink's \"Invalid namespace\"",
                timer.key, timer.namespace
            )));
        };
        self.key.set_key(&timer.key);
        let bucket = self.bounds.bucket_of_timer(side, timer.timestamp);
        let buffer = self.buffer(side);
        ctx.state
            .delete(buffer, self.key.with_long_user_key(bucket))?;
        self.cleanups += 1;
        Ok(())
    }

    fn counters(&self) -> JobCounters {
        self.counters
    }

    fn restore_counters(&mut self, counters: JobCounters) {
        self.counters = counters;
    }

    /// The per-key totals (what a downstream aggregation would hold in Flink state).
    fn results_of(&self, keep: &dyn Fn(u64) -> bool) -> Vec<(u64, usize, i64)> {
        let mut out: Vec<(u64, usize, i64)> = self
            .totals
            .iter()
            .filter(|(key, _)| keep(**key))
            .flat_map(|(key, (pairs, digest))| [(*key, 0, *pairs), (*key, 1, *digest)])
            .collect();
        out.sort_unstable();
        out
    }

    fn restore_results(&mut self, results: &[(u64, usize, i64)]) {
        self.totals.clear();
        for &(key, slot, value) in results {
            let total = self.totals.entry(key).or_default();
            match slot {
                0 => total.0 = value,
                _ => total.1 = value,
            }
        }
    }
}

fn other(side: Side) -> Side {
    match side {
        Side::Left => Side::Right,
        Side::Right => Side::Left,
    }
}

/// The exact results, computed from the records alone: the operator's logic over in-memory
/// buffers and timers (no RocksDB), so a wrong state access shows as a result error.
#[derive(Debug, Clone)]
pub struct JoinTruth {
    bounds: Bounds,
    watermark: i64,
    /// Per (key, side): bucket time -> value sizes of its elements.
    buffers: HashMap<(u64, Side), BTreeMap<i64, Vec<u32>>>,
    /// Cleanup timers: (time, key, side), each once, as a timer service keeps them.
    timers: BTreeSet<(i64, u64, Side)>,
    /// Pairs emitted and not drained yet.
    out: Vec<Event>,
}

/// The record of a pair: the key's, at the later of the two times, carrying both values.
fn pair_record(key: u64, ts: i64, size: u32, other_ts: i64, other_size: u32) -> Event {
    record(key, ts.max(other_ts), size.saturating_add(other_size))
}

impl JoinTruth {
    pub fn new(spec: &IntervalJoinSpec) -> JoinTruth {
        JoinTruth {
            bounds: Bounds::new(spec),
            watermark: i64::MIN,
            buffers: HashMap::new(),
            timers: BTreeSet::new(),
            out: Vec::new(),
        }
    }

    /// An element read: its pairs as `(pairs, digest)` added to the key's results, or None
    /// when it is late or joins nothing.
    pub fn element(&mut self, e: &Event) -> Option<(i64, i64)> {
        let side = Side::of(e);
        let ts = e.event_time;
        if ts < self.watermark {
            return None;
        }
        self.buffers
            .entry((e.user, side))
            .or_default()
            .entry(ts)
            .or_default()
            .push(e.value_size);
        let (mut pairs, mut digest) = (0i64, 0i64);
        if let Some(others) = self.buffers.get(&(e.user, other(side))) {
            for (&other_ts, sizes) in others {
                if self.bounds.joins(side, ts, other_ts) {
                    for &size in sizes {
                        self.out
                            .push(pair_record(e.user, ts, e.value_size, other_ts, size));
                        pairs += 1;
                        digest = digest.wrapping_add(pair_digest(
                            side,
                            ts,
                            e.value_size,
                            other_ts,
                            size,
                        ));
                    }
                }
            }
        }
        self.timers
            .insert((self.bounds.cleanup_time(side, ts), e.user, side));
        (pairs > 0).then_some((pairs, digest))
    }

    /// The watermark moved: every cleanup timer at or before it removes its bucket.
    pub fn advance(&mut self, watermark: i64) {
        self.watermark = self.watermark.max(watermark);
        while let Some(&(time, key, side)) = self.timers.first() {
            if time > self.watermark {
                break;
            }
            self.timers.pop_first();
            let bucket = self.bounds.bucket_of_timer(side, time);
            if let Some(buffer) = self.buffers.get_mut(&(key, side)) {
                buffer.remove(&bucket);
                if buffer.is_empty() {
                    self.buffers.remove(&(key, side));
                }
            }
        }
    }

    /// Buckets buffered, both sides (for tests).
    pub fn buckets(&self) -> usize {
        self.buffers.values().map(BTreeMap::len).sum()
    }
}

impl TruthModel for JoinTruth {
    fn on_event(&mut self, event: &Event, _now: i64, truths: &mut Truths) {
        if let Some((pairs, digest)) = self.element(event) {
            truths.add(event.user, 0, pairs);
            let sum = truths.get(event.user, 1).wrapping_add(digest);
            truths.set(event.user, 1, sum);
        }
    }

    fn on_watermark(&mut self, watermark: i64, _now: i64, _truths: &mut Truths) {
        self.advance(watermark);
    }

    fn boxed_clone(&self) -> Box<dyn TruthModel> {
        Box::new(self.clone())
    }

    fn drain_emitted(&mut self, out: &mut Vec<Event>) {
        out.append(&mut self.out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::AccessCounters;
    use crate::config::Profile;
    use crate::config::job::OperatorSpec;
    use crate::durability::delivery::Delivery;
    use crate::durability::sink::MemorySink;
    use crate::pipeline::oracle::Oracle;
    use crate::pipeline::source::Generator;
    use crate::pipeline::watermark::WatermarkValve;

    fn workload(job: &str) -> Workload {
        let mut w = Workload::load("interval-join").unwrap();
        w.spec.job = Some(
            serde_norway::from_str::<crate::config::job::OperatorSpec>(job)
                .unwrap()
                .into(),
        );
        w
    }

    fn join_spec(w: &Workload) -> IntervalJoinSpec {
        match w.operator() {
            OperatorSpec::IntervalJoin(j) => j,
            other => panic!("not a join: {other:?}"),
        }
    }

    /// An event of key `user-<user>` on `input` (its partition too: one partition per input).
    fn event(user: u64, time: i64, value_size: u32, input: u8) -> Event {
        Event {
            user,
            event_time: time,
            partition: u32::from(input),
            offset: 0,
            append_time: time,
            value_size,
            input,
        }
    }

    /// State calls of one step: (gets, puts, deletes, seeks, nexts).
    type Calls = (u64, u64, u64, u64, u64);

    fn calls(after: &AccessCounters, before: &AccessCounters) -> Calls {
        (
            after.gets - before.gets,
            after.puts - before.puts,
            after.deletes - before.deletes,
            after.iterator_seeks - before.iterator_seeks,
            after.iterator_nexts - before.iterator_nexts,
        )
    }

    struct Outcome {
        /// Per element ("L <user>@<time>"), then per forwarded watermark ("W <time>"), the
        /// state calls it made.
        steps: Vec<(String, Calls)>,
        /// What the sink holds: (user, slot, value), sorted.
        results: Vec<(u64, usize, i64)>,
        /// The sink equals the oracle.
        exact: bool,
        counters: JobCounters,
        /// RocksDB keys left in LEFT_BUFFER and RIGHT_BUFFER after the end of input.
        keys_left: usize,
        /// Buckets the model still holds after the end of input.
        truth_buckets_left: usize,
    }

    struct Forward {
        last: i64,
        steps: Vec<(String, Calls)>,
    }

    impl Forward {
        /// The engine's `emit_watermark`: forwards `wm` to the operator and the oracle if it moved.
        fn watermark<'a>(
            &mut self,
            wm: i64,
            ctx: &mut Context<'a, Delivery>,
            op: &mut (dyn KeyedOperator<'a, Delivery> + 'a),
            oracle: &mut Oracle,
        ) {
            if wm > self.last {
                self.last = wm;
                let before = ctx.state.counters;
                ctx.advance_watermark(op, wm).unwrap();
                self.steps
                    .push((format!("W {wm}"), calls(&ctx.state.counters, &before)));
                oracle.on_watermark(wm);
            }
        }
    }

    /// Runs `events` through the operator as the engine does (one partition per input, every
    /// `every` events the minimum over the inputs' bounded out-of-orderness, forwarded when it
    /// moved, then the end-of-input watermark), and through the oracle beside it.
    fn run(w: &Workload, events: &[Event], every: usize) -> Outcome {
        run_restarting(w, events, every, None)
    }

    /// [`run`], with the operator replaced at element `restart` by a new one that goes on
    /// from the old one's counters and results (its state and timers stay in RocksDB), as a
    /// restore from a checkpoint taken there does.
    fn run_restarting(
        w: &Workload,
        events: &[Event],
        every: usize,
        restart: Option<usize>,
    ) -> Outcome {
        let dir = tempfile::tempdir().unwrap();
        let profile = Profile::load("flink-default").unwrap();
        let spec = w.operator();
        let layout = super::super::layout(&spec);
        let backend = StateBackend::open_for(dir.path(), &profile, &layout).unwrap();
        let sink = Delivery::passthrough(Box::new(MemorySink::new(spec.result_labels())));
        let mut ctx = Context::new(&backend, &layout, sink).unwrap();
        let mut op = super::super::build(&backend, w, 0, super::super::JobMode::Streaming).unwrap();
        let mut oracle = super::super::oracle(w);
        let ooo = w.spec.event_time.out_of_orderness.0 as i64;
        let mut valve = WatermarkValve::new(2, ooo, None, 0);
        let mut forward = Forward {
            last: i64::MIN,
            steps: Vec::new(),
        };
        for (i, e) in events.iter().enumerate() {
            if restart == Some(i) {
                let (counters, results) = (op.counters(), op.results_snapshot());
                op = super::super::build(&backend, w, 0, super::super::JobMode::Streaming).unwrap();
                op.restore_counters(counters);
                op.restore_results(&results);
            }
            oracle.on_event(e, e.append_time);
            let before = ctx.state.counters;
            op.on_event(e, &mut ctx).unwrap();
            let side = if e.input == 0 { 'L' } else { 'R' };
            forward.steps.push((
                format!("{side} {}@{}", e.user, e.event_time),
                calls(&ctx.state.counters, &before),
            ));
            valve.on_record(usize::from(e.input), e.event_time, e.append_time);
            if (i + 1) % every == 0 {
                let wm = valve.advance(e.append_time);
                forward.watermark(wm, &mut ctx, op.as_mut(), &mut oracle);
            }
        }
        forward.watermark(i64::MAX, &mut ctx, op.as_mut(), &mut oracle);
        ctx.flush_timers().unwrap();
        let mut results = ctx.sink.sink_mut().read_all().unwrap();
        results.sort();
        let exact = oracle.compare(results.iter().copied()).is_exact();
        let mut keys_left = 0;
        for cf in [CF_LEFT_BUFFER, CF_RIGHT_BUFFER] {
            ctx.state
                .for_each(backend.cf(cf).unwrap(), |_, _| {
                    keys_left += 1;
                    Ok(())
                })
                .unwrap();
        }
        let mut truth = JoinTruth::new(&join_spec(w));
        for e in events {
            truth.element(e);
        }
        truth.advance(i64::MAX);
        Outcome {
            steps: forward.steps,
            results,
            exact,
            counters: op.counters(),
            keys_left,
            truth_buckets_left: truth.buckets(),
        }
    }

    /// The hand-made trace the Flink 1.20.1 job replayed (keys a = 0, b = 1; out-of-orderness
    /// 1 s; a watermark every 3 events), its per-element RocksDB tickers and results recorded
    /// there with per-element Statistics deltas.
    fn hand_trace() -> Vec<Event> {
        vec![
            event(0, 10_000, 3, 0),
            event(0, 12_000, 5, 1),
            event(0, 10_000, 0, 0),
            event(0, 9_000, 2, 1),
            event(1, 50_000, 1, 1),
            event(0, 30_000, 4, 0),
            event(0, 16_000, 1, 1),
        ]
    }

    fn hand_workload(
        lower: i64,
        upper: i64,
        lower_inclusive: bool,
        upper_inclusive: bool,
    ) -> Workload {
        let mut w = workload(&format!(
            "kind: interval-join\nlower: {lower}\nupper: {upper}\nlower-inclusive: {lower_inclusive}\nupper-inclusive: {upper_inclusive}\n"
        ));
        w.spec.event_time.out_of_orderness = crate::config::Millis(1_000);
        w
    }

    #[test]
    fn every_element_does_flinks_rocksdb_calls() {
        let out = run(&hand_workload(-5_000, 10_000, true, true), &hand_trace(), 3);
        let steps: Vec<(&str, Calls)> = out.steps.iter().map(|(s, c)| (s.as_str(), *c)).collect();
        // Flink: per element keys read (the bucket's get), keys written (its put), seeks and
        // nexts of the other buffer's iteration; per watermark the buckets deleted.
        assert_eq!(
            steps,
            [
                ("L 0@10000", (1, 1, 0, 1, 0)), // an empty right buffer: one seek
                ("R 0@12000", (1, 1, 0, 1, 1)),
                ("L 0@10000", (1, 1, 0, 1, 1)), // the same bucket, read and rewritten
                ("W 8999", (0, 0, 0, 0, 0)),    // min(left 10000, right 12000) - 1 s - 1
                ("R 0@9000", (1, 1, 0, 1, 1)),  // not late: 9000 >= 8999
                ("R 1@50000", (1, 1, 0, 1, 0)),
                ("L 0@30000", (1, 1, 0, 1, 2)),
                ("W 28999", (0, 0, 3, 0, 0)), // cleanups of L@10000, R@12000, R@9000
                ("R 0@16000", (0, 0, 0, 0, 0)), // late: dropped untouched
                ("W 9223372036854775807", (0, 0, 2, 0, 0)),
            ]
        );
        // Flink's PairDigest for key a: 4 pairs, digest -455939824985087536.
        assert_eq!(out.results, [(0, 0, 4), (0, 1, -455_939_824_985_087_536)]);
        assert!(out.exact);
        assert_eq!(out.counters.events, 7);
        assert_eq!(out.counters.emitted, 4);
        assert_eq!(out.counters.dropped_late, 1);
        assert_eq!((out.keys_left, out.truth_buckets_left), (0, 0));
    }

    #[test]
    fn bounds_and_their_inclusivity_are_flinks() {
        // (lower, upper, lower inclusive, upper inclusive) -> key a's (pairs, digest) in Flink.
        for (lower, upper, li, ui, expected) in [
            // Only right elements after their left one join: R@12000 with both L@10000.
            (
                1_000,
                3_000,
                true,
                true,
                Some((2, -3_283_445_566_855_570_653)),
            ),
            // (12000, 13000]: R@12000 excluded.
            (2_000, 3_000, false, true, None),
            // Only right elements before: R@9000 with both L@10000 (R@12000 excluded).
            (
                -3_000,
                2_000,
                true,
                false,
                Some((2, 2_827_505_741_870_483_117)),
            ),
            (
                -1_000,
                -1_000,
                true,
                true,
                Some((2, 2_827_505_741_870_483_117)),
            ),
            (0, 0, true, true, None),
        ] {
            let out = run(&hand_workload(lower, upper, li, ui), &hand_trace(), 3);
            let got = match out.results.as_slice() {
                [] => None,
                [(0, 0, p), (0, 1, d)] => Some((*p, *d)),
                other => panic!("{other:?}"),
            };
            assert_eq!(got, expected, "bounds {lower}..{upper} ({li}, {ui})");
            assert!(out.exact, "bounds {lower}..{upper}");
            // The calls per element do not depend on the bounds: every bucket is visited.
            let per_element: Vec<Calls> = out
                .steps
                .iter()
                .filter(|(s, _)| !s.starts_with('W'))
                .map(|(_, c)| *c)
                .collect();
            assert_eq!(per_element[5], (1, 1, 0, 1, 2));
            assert_eq!(out.keys_left, 0);
        }
    }

    #[test]
    fn map_iteration_loads_batches_of_128_as_flinks_iterator() {
        // Flink 1.20.1: 300 buckets -> 3 seeks, 302 nexts (128, 1 + 128, 1 + 44); exactly
        // 128 -> 1 seek, 128 nexts (the batch meets the prefix's end); 127 -> 1 seek, 127.
        let mut events = Vec::new();
        for (user, buckets) in [(0u64, 300i64), (1, 128), (2, 127)] {
            events.extend((1..=buckets).map(|i| event(user, i * 1_000, 1, 0)));
            events.push(event(user, if user == 0 { 150_000 } else { 5_000 }, 2, 1));
        }
        let mut w = hand_workload(-5_000, 10_000, true, true);
        w.spec.event_time.out_of_orderness = crate::config::Millis(1 << 40);
        let out = run(&w, &events, 100_000);
        let rights: Vec<(&str, Calls)> = out
            .steps
            .iter()
            .filter(|(s, _)| s.starts_with('R'))
            .map(|(s, c)| (s.as_str(), *c))
            .collect();
        assert_eq!(
            rights,
            [
                ("R 0@150000", (1, 1, 0, 3, 302)),
                ("R 1@5000", (1, 1, 0, 1, 128)),
                ("R 2@5000", (1, 1, 0, 1, 127)),
            ]
        );
        // Flink: k 16 pairs, m and n 10 each.
        let pairs: Vec<(u64, i64)> = out
            .results
            .iter()
            .filter(|r| r.1 == 0)
            .map(|r| (r.0, r.2))
            .collect();
        assert_eq!(pairs, [(0, 16), (1, 10), (2, 10)]);
        assert!(out.exact);
        assert_eq!(out.keys_left, 0);
    }

    #[test]
    fn oracle_equals_operator_on_generated_runs() {
        for job in [
            "kind: interval-join\nlower: -2m\nupper: 5m\n",
            // Only later right elements join; exclusive bounds.
            "kind: interval-join\nlower: 10s\nupper: 2m\nlower-inclusive: false\nupper-inclusive: false\n",
            // Only earlier right elements join; few on the right.
            "kind: interval-join\nlower: -3m\nupper: -1s\nright-share: 0.2\n",
            "kind: interval-join\nlower: 0s\nupper: 0s\n",
        ] {
            let mut w = workload(job);
            w.spec.events = 6_000;
            w.spec.keys.count = 300;
            w.spec.event_time.late_fraction = 0.01;
            w.spec.partitions = 2;
            let events: Vec<Event> = Generator::new(&w).take(6_000).collect();
            let out = run(&w, &events, 64);
            assert!(out.exact, "{job}");
            assert!(out.counters.dropped_late > 0, "{job}: late elements");
            assert_eq!(out.counters.events, 6_000);
            if !job.contains("upper: 0s") {
                assert!(
                    out.counters.emitted > 100,
                    "{job}: {} pairs",
                    out.counters.emitted
                );
            }
            // The end of input fires every cleanup timer: nothing stays buffered.
            assert_eq!((out.keys_left, out.truth_buckets_left), (0, 0), "{job}");
            let deletes: u64 = out.steps.iter().map(|(_, c)| c.2).sum();
            assert!(deletes > 0);
        }
    }

    #[test]
    fn a_timer_of_another_namespace_is_an_error() {
        let w = hand_workload(0, 1_000, true, true);
        let dir = tempfile::tempdir().unwrap();
        let profile = Profile::load("flink-default").unwrap();
        let spec = join_spec(&w);
        let layout = layout(&spec);
        let backend = StateBackend::open_for(dir.path(), &profile, &layout).unwrap();
        let sink = Delivery::passthrough(Box::new(MemorySink::new(spec.result_labels())));
        let mut ctx = Context::new(&backend, &layout, sink).unwrap();
        let mut op = IntervalJoin::new(&backend, &w, &spec).unwrap();
        let timer = Timer {
            timestamp: 5,
            key: "user-1".to_string(),
            namespace: vec![keys::VOID_NAMESPACE],
        };
        let err = op.on_timer(&timer, &mut ctx).unwrap_err().to_string();
        assert!(err.contains("Invalid namespace"), "{err}");
    }

    #[test]
    fn buffer_values_have_flinks_layout() {
        let mut v = Vec::new();
        append_to_bucket(None, &mut v, "k", 7, 3).unwrap();
        let entry = |size: u8| {
            let mut e = vec![0, 2, b'k'];
            e.extend_from_slice(&7i64.to_be_bytes());
            e.extend_from_slice(&i32::from(size).to_be_bytes());
            e.extend((0..u32::from(size)).map(|i| payload_byte(7, i)));
            e
        };
        assert_eq!(v, [&[0, 0, 0, 0, 1][..], &entry(3)].concat());
        let old = v.clone();
        append_to_bucket(Some(&old), &mut v, "k", 7, 0).unwrap();
        assert_eq!(v, [&[0, 0, 0, 0, 2][..], &entry(3), &entry(0)].concat());
        let mut seen = Vec::new();
        for_each_element(&v, |t, size| seen.push((t, size))).unwrap();
        assert_eq!(seen, [(7, 3), (7, 0)]);
        assert!(for_each_element(&v[..v.len() - 1], |_, _| {}).is_err());
        assert!(append_to_bucket(Some(&[1]), &mut v, "k", 7, 0).is_err());
        // Flink's payload byte: (byte) splitmix64(eventTime * 31 + i).
        assert_eq!(payload_byte(7, 1), splitmix64(7 * 31 + 1) as u8);
    }

    #[test]
    fn random_join_specs_keep_the_oracle_exact() {
        use rand::rngs::SmallRng;
        use rand::{RngExt, SeedableRng};
        let mut rng = SmallRng::seed_from_u64(19);
        let mut runs = 0;
        while runs < 8 {
            let lower = rng.random_range(-180_000i64..=60_000);
            let upper = lower + rng.random_range(0i64..=240_000);
            let job = format!(
                "kind: interval-join\nlower: {lower}\nupper: {upper}\nlower-inclusive: {}\nupper-inclusive: {}\nright-share: {:.2}\n",
                rng.random::<bool>(),
                rng.random::<bool>(),
                rng.random_range(0.1..0.9),
            );
            let mut w = workload(&job);
            if join_spec(&w).validate().is_err() {
                continue;
            }
            w.spec.events = 3_000;
            w.spec.keys.count = rng.random_range(20..400);
            w.spec.partitions = rng.random_range(2..6);
            w.spec.seed = rng.random();
            w.spec.event_time.out_of_orderness = crate::config::Millis(rng.random_range(0..10_000));
            w.spec.event_time.late_fraction = rng.random_range(0.0..0.03);
            let events: Vec<Event> = Generator::new(&w).take(3_000).collect();
            let out = run(&w, &events, 64);
            assert!(out.exact, "{job} {:?}", w.spec.keys);
            assert_eq!((out.keys_left, out.truth_buckets_left), (0, 0), "{job}");
            runs += 1;
        }
    }

    #[test]
    fn a_restored_operator_goes_on_from_its_results() {
        let mut w = workload("kind: interval-join\nlower: -2m\nupper: 5m\n");
        w.spec.keys.count = 100;
        w.spec.partitions = 2;
        let events: Vec<Event> = Generator::new(&w).take(4_000).collect();
        let whole = run(&w, &events, 64);
        let restored = run_restarting(&w, &events, 64, Some(2_000));
        assert!(restored.exact);
        assert_eq!(restored.results, whole.results);
        assert_eq!(restored.counters, whole.counters);
    }
}
