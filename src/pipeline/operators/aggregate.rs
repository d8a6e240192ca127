//! `kind: aggregate`: a keyed running aggregate (docs/jobs.md "aggregate").
//!
//! - `function: reduce`: Flink's `StreamGroupedReduceOperator` over
//!   `Tuple3<String key, Long count, Long sum>` elements `(key, 1, valueSize)`: ValueState
//!   `"_op_state"`; per element `value()` (a get), `update(reduced or the element)` (a put),
//!   emit the new value.
//! - `function: aggregate`: a KeyedProcessFunction with `ValueState<Tuple2<Long, Long>> "acc"`
//!   (count, sum), optionally with state TTL: `value()`, `update(acc + element)`, emit — what
//!   SQL's GroupAggFunction does per element (its value() and update() on "accState"), with
//!   DataStream serializers.

use std::collections::HashMap;

use super::ttl::{self, Read, ValueCodec};
use super::{ACCUMULATOR_SIZE, Context, JobCounters, KeyedOperator, Layout, record};
use crate::backend::keys::{CompositeKey, write_string};
use crate::backend::{BackendError, Cf, StateAccess, StateBackend};
use crate::config::Workload;
use crate::config::job::aggregate::{AggregateFunction, AggregateSpec};
use crate::config::job::dedup::TtlSettings;
use crate::pipeline::PipelineError;
use crate::pipeline::oracle::{TruthModel, Truths};
use crate::pipeline::output::Output;
use crate::pipeline::source::{Event, KeyNames};

/// Result slots (`AggregateSpec::result_labels`).
const COUNT: usize = 0;
const SUM: usize = 1;

/// reduce: StreamGroupedReduceOperator's one state and no timer service; aggregate: the
/// accumulator, then the timer service its KeyedProcessOperator creates.
pub fn layout(spec: &AggregateSpec) -> Layout {
    let codec = ValueCodec::value(spec.ttl_settings().ok().flatten());
    let layout = Layout::default().state(spec.state_name(), codec.decl(), false);
    match spec.function {
        AggregateFunction::Reduce => layout,
        AggregateFunction::Aggregate => layout.timer_service(super::dedup::TIMER_SERVICE),
    }
}

pub struct Aggregate<'a> {
    cf: &'a Cf,
    /// How the job names a key id (`user-N` or a trace's own key).
    keys: KeyNames,
    function: AggregateFunction,
    codec: ValueCodec,
    key: CompositeKey,
    key_str: String,
    user: Vec<u8>,
    buf: Vec<u8>,
    scratch: Vec<u8>,
    counters: JobCounters,
}

/// Reads the trailing (count, sum) longs of an accumulator's bytes.
fn decode_acc(user: &[u8]) -> Result<(i64, i64), BackendError> {
    let n = user.len();
    let tail = user
        .get(n.saturating_sub(16)..)
        .filter(|t| t.len() == 16)
        .ok_or_else(|| BackendError::Corrupt(format!("an accumulator of {n} bytes")))?;
    let mut c = [0u8; 8];
    let mut s = [0u8; 8];
    c.copy_from_slice(&tail[..8]);
    s.copy_from_slice(&tail[8..]);
    Ok((i64::from_be_bytes(c), i64::from_be_bytes(s)))
}

impl<'a> Aggregate<'a> {
    pub fn new(
        spec: &AggregateSpec,
        backend: &'a StateBackend,
        workload: &Workload,
    ) -> Result<Self, PipelineError> {
        let ttl = spec.ttl_settings().map_err(BackendError::Setup)?;
        Ok(Aggregate {
            cf: backend.cf(spec.state_name())?,
            keys: KeyNames::of(workload),
            function: spec.function,
            codec: ValueCodec::value(ttl),
            key: CompositeKey::default(),
            key_str: String::new(),
            user: Vec::new(),
            buf: Vec::new(),
            scratch: Vec::new(),
            counters: JobCounters::default(),
        })
    }

    /// One element of value size `value_size` for the current key: the new (count, sum).
    fn process(
        &mut self,
        state: &mut StateAccess,
        value_size: u32,
        now: i64,
    ) -> Result<(i64, i64), BackendError> {
        let key = self.key.prefix();
        let current = ttl::read(
            state,
            self.cf,
            key,
            &self.codec,
            now,
            &mut self.scratch,
            decode_acc,
        )?;
        if current == Read::Expired {
            self.counters.expired_state += 1;
        }
        let (count, sum) = current.live().unwrap_or((0, 0));
        let acc = (count + 1, sum + i64::from(value_size));
        self.user.clear();
        if self.function == AggregateFunction::Reduce {
            // Tuple3<String, Long, Long> through TupleSerializer: the key (StringSerializer)
            // first; reduce keeps the first element's key.
            write_string(&mut self.user, &self.key_str);
        }
        self.user.extend_from_slice(&acc.0.to_be_bytes());
        self.user.extend_from_slice(&acc.1.to_be_bytes());
        self.codec.encode(now, &self.user, &mut self.buf);
        state.put(self.cf, key, &self.buf)?;
        Ok(acc)
    }
}

impl<'a, S: Output> KeyedOperator<'a, S> for Aggregate<'a> {
    fn on_event(&mut self, event: &Event, ctx: &mut Context<'a, S>) -> Result<(), PipelineError> {
        self.keys.write(event.user, &mut self.key_str);
        self.key.set_key(&self.key_str);
        let now = ctx.now;
        let (count, sum) = self.process(&mut ctx.state, event.value_size, now)?;
        self.counters.events += 1;
        self.counters.emitted += 1;
        // reduce: StreamGroupedReduceOperator.processElement's
        // `output.collect(element.replace(newValue))`; aggregate: the function's
        // `out.collect(acc)` (KeyedProcessOperator's TimestampedCollector): the input's
        // timestamp either way.
        let size = emitted_size(self.function, &self.key_str);
        ctx.emit(record(event.user, event.event_time, size));
        ctx.write(event.user, COUNT, count)?;
        ctx.write(event.user, SUM, sum)?;
        Ok(())
    }

    fn counters(&self) -> JobCounters {
        self.counters
    }

    fn restore_counters(&mut self, c: JobCounters) {
        self.counters = c;
    }
}

/// Bytes of the record the operator emits per element: the reduced `Tuple3<String, Long,
/// Long>` (reduce) or the `Tuple2<Long, Long>` accumulator (aggregate).
fn emitted_size(function: AggregateFunction, key: &str) -> u32 {
    match function {
        AggregateFunction::Reduce => super::reduced_tuple_size(key),
        AggregateFunction::Aggregate => ACCUMULATOR_SIZE,
    }
}

/// The exact model: per key, (count, sum, last write time).
#[derive(Debug, Clone)]
pub struct AggregateTruth {
    ttl: Option<TtlSettings>,
    acc: HashMap<u64, (i64, i64, i64)>,
    function: AggregateFunction,
    keys: KeyNames,
    key_str: String,
    /// Records emitted and not drained yet.
    out: Vec<Event>,
}

impl AggregateTruth {
    pub fn new(spec: &AggregateSpec) -> Self {
        AggregateTruth {
            ttl: spec.ttl_settings().ok().flatten(),
            acc: HashMap::new(),
            function: spec.function,
            keys: KeyNames::Generated { size: None },
            key_str: String::new(),
            out: Vec::new(),
        }
    }

    /// The model of a workload whose key ids are named by `keys` (the emitted records' sizes
    /// depend on the key strings).
    pub fn with_keys(mut self, keys: KeyNames) -> Self {
        self.keys = keys;
        self
    }
}

impl TruthModel for AggregateTruth {
    fn on_event(&mut self, e: &Event, now: i64, t: &mut Truths) {
        let entry = self.acc.entry(e.user).or_insert((0, 0, now));
        if let Some(ttl) = self.ttl
            && entry.0 > 0
            && crate::backend::ttl_filter::expired(entry.2, ttl.ttl_ms, now)
        {
            // An expired accumulator reads as null: the aggregate restarts.
            *entry = (0, 0, now);
        }
        entry.0 += 1;
        entry.1 += i64::from(e.value_size);
        entry.2 = now;
        t.set(e.user, COUNT, entry.0);
        t.set(e.user, SUM, entry.1);
        self.keys.write(e.user, &mut self.key_str);
        let size = emitted_size(self.function, &self.key_str);
        self.out.push(record(e.user, e.event_time, size));
    }

    fn on_watermark(&mut self, _wm: i64, _now: i64, _t: &mut Truths) {}

    fn boxed_clone(&self) -> Box<dyn TruthModel> {
        Box::new(self.clone())
    }

    fn drain_emitted(&mut self, out: &mut Vec<Event>) {
        out.append(&mut self.out);
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::kit::{Rig, compact, delta, event, events, keys, raw, workload};
    use crate::backend::keys::{CompositeKey, write_string};

    fn key(user: &str) -> Vec<u8> {
        let mut k = CompositeKey::default();
        k.set_key(user);
        k.prefix().to_vec()
    }

    fn longs(a: i64, b: i64) -> Vec<u8> {
        [a.to_be_bytes(), b.to_be_bytes()].concat()
    }

    #[test]
    fn layouts() {
        assert_eq!(Rig::new("{kind: aggregate}").layout.names(), ["_op_state"]);
        let names = Rig::new("{kind: aggregate, function: aggregate}")
            .layout
            .names();
        assert_eq!(names[0], "acc");
        assert_eq!(
            names.len(),
            3,
            "the KeyedProcessOperator's timer service: {names:?}"
        );
    }

    #[test]
    fn reduce_reads_and_writes_the_reduced_tuple_per_element() {
        let rig = Rig::new("{kind: aggregate}");
        let mut ctx = rig.ctx();
        let mut op = rig.op();
        for (i, size) in [10u32, 32, 5].into_iter().enumerate() {
            let before = ctx.state.counters;
            op.on_event(&event(4, i as i64, size), &mut ctx).unwrap();
            assert_eq!(delta(before, ctx.state.counters), [1, 1, 0, 0, 0, 0, 0]);
        }
        // Tuple3<String, Long, Long>: the key, the count, the sum.
        let mut want = Vec::new();
        write_string(&mut want, "user-4");
        want.extend_from_slice(&longs(3, 47));
        assert_eq!(raw(&rig, "_op_state", &key("user-4")), Some(want));
        let mut results = ctx.sink.sink_mut().read_all().unwrap();
        results.sort();
        assert_eq!(results, vec![(4, 0, 3), (4, 1, 47)]);
    }

    #[test]
    fn an_expired_accumulator_restarts_the_aggregate() {
        let rig = Rig::new("{kind: aggregate, function: aggregate, ttl: 10s}");
        let mut ctx = rig.ctx();
        let mut op = rig.op();
        ctx.set_now(1_000);
        op.on_event(&event(2, 1_000, 8), &mut ctx).unwrap();
        assert_eq!(
            raw(&rig, "acc", &key("user-2")),
            Some([1_000i64.to_be_bytes().to_vec(), longs(1, 8)].concat())
        );
        ctx.set_now(5_000);
        op.on_event(&event(2, 5_000, 2), &mut ctx).unwrap();
        ctx.set_now(15_000);
        let before = ctx.state.counters;
        op.on_event(&event(2, 15_000, 6), &mut ctx).unwrap();
        // get, the decorator's delete of the expired accumulator, the put of a new one
        assert_eq!(delta(before, ctx.state.counters), [1, 1, 1, 0, 0, 0, 0]);
        assert_eq!(
            raw(&rig, "acc", &key("user-2")),
            Some([15_000i64.to_be_bytes().to_vec(), longs(1, 6)].concat())
        );
        let mut results = ctx.sink.sink_mut().read_all().unwrap();
        results.sort();
        assert_eq!(results, vec![(2, 0, 1), (2, 1, 6)]);
        // On read and write: the renewal and the update are two puts.
        let rig = Rig::new(
            "{kind: aggregate, function: aggregate, ttl: 10s, ttl-update: on-read-and-write}",
        );
        let mut ctx = rig.ctx();
        let mut op = rig.op();
        op.on_event(&event(2, 0, 8), &mut ctx).unwrap();
        let before = ctx.state.counters;
        op.on_event(&event(2, 1, 8), &mut ctx).unwrap();
        assert_eq!(delta(before, ctx.state.counters), [1, 2, 0, 0, 0, 0, 0]);
    }

    #[test]
    fn the_compaction_filter_drops_expired_accumulators() {
        let rig = Rig::new("{kind: aggregate, function: aggregate, ttl: 10s}");
        let mut ctx = rig.ctx();
        let mut op = rig.op();
        ctx.set_now(1_000);
        for user in 0..5 {
            op.on_event(&event(user, 1_000, 3), &mut ctx).unwrap();
        }
        ctx.set_now(8_000);
        op.on_event(&event(9, 8_000, 3), &mut ctx).unwrap();
        ctx.set_now(12_000);
        compact(&rig, "acc");
        assert_eq!(keys(&rig, "acc"), vec![key("user-9")]);
    }

    #[test]
    fn results_equal_the_oracle() {
        for job in [
            "{kind: aggregate}",
            "{kind: aggregate, function: aggregate}",
            "{kind: aggregate, function: aggregate, ttl: 20s}",
            "{kind: aggregate, function: aggregate, ttl: 20s, ttl-update: on-read-and-write}",
        ] {
            let mut w = workload(job, 200);
            w.spec.value_size = Some(serde_norway::from_str("{min: 1, max: 300}").unwrap());
            let rig = Rig::with_workload(w);
            let events = events(&rig.workload, 5_000);
            assert!(events.iter().any(|e| e.value_size > 1));
            let (error, compared) = rig.run_against_oracle(&events);
            assert!(error.is_exact(), "{job}: {error:?}");
            assert!(compared >= 300, "{job}: {compared}");
        }
    }
}
