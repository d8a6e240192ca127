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

use rocksdb::ColumnFamily;

use super::ttl::{self, Read, ValueCodec};
use super::{Context, JobCounters, KeyedOperator, Layout};
use crate::backend::keys::{CompositeKey, write_string};
use crate::backend::{BackendError, StateAccess, StateBackend};
use crate::config::Workload;
use crate::config::job::aggregate::{AggregateFunction, AggregateSpec};
use crate::config::job::dedup::TtlSettings;
use crate::pipeline::PipelineError;
use crate::pipeline::oracle::{TruthModel, Truths};
use crate::pipeline::source::{Event, Generator};

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
    cf: &'a ColumnFamily,
    key_size: Option<u32>,
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
            key_size: workload.spec.keys.size,
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

impl<'a> KeyedOperator<'a> for Aggregate<'a> {
    fn on_event(&mut self, event: &Event, ctx: &mut Context<'a>) -> Result<(), PipelineError> {
        Generator::sized_key(event.user, self.key_size, &mut self.key_str);
        self.key.set_key(&self.key_str);
        let now = ctx.now;
        let (count, sum) = self.process(&mut ctx.state, event.value_size, now)?;
        self.counters.events += 1;
        self.counters.emitted += 1;
        ctx.sink.write(event.user, COUNT, count)?;
        ctx.sink.write(event.user, SUM, sum)?;
        Ok(())
    }

    fn counters(&self) -> JobCounters {
        self.counters
    }

    fn restore_counters(&mut self, c: JobCounters) {
        self.counters = c;
    }
}

/// The exact model: per key, (count, sum, last write time).
#[derive(Debug, Clone)]
pub struct AggregateTruth {
    ttl: Option<TtlSettings>,
    acc: HashMap<u64, (i64, i64, i64)>,
}

impl AggregateTruth {
    pub fn new(spec: &AggregateSpec) -> Self {
        AggregateTruth {
            ttl: spec.ttl_settings().ok().flatten(),
            acc: HashMap::new(),
        }
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
    }

    fn on_watermark(&mut self, _wm: i64, _now: i64, _t: &mut Truths) {}

    fn boxed_clone(&self) -> Box<dyn TruthModel> {
        Box::new(self.clone())
    }
}
