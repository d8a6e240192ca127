//! `kind: dedup`: a KeyedProcessFunction keeping the first (or last) record per key in a
//! ValueState, with Flink's state TTL (docs/jobs.md "dedup").
//!
//! keep-first (`ValueState<Boolean> "seen"`): `if (seen.value() == null) { seen.update(true);
//! out.collect(e); }` — a get, and a put when the key is new (or its value expired: then the TTL
//! decorator's delete comes first; with OnReadAndWrite a live value is rewritten).
//! keep-last (`ValueState<Tuple2<Long, byte[]>> "last"`): `last.update((t, payload));
//! out.collect(e)` — one put per element, never a read.

use std::collections::HashMap;

use rocksdb::ColumnFamily;

use super::ttl::{self, Read, ValueCodec};
use super::valgen::{java_hash, payload};
use super::{Context, JobCounters, KeyedOperator, Layout, mix};
use crate::backend::keys::CompositeKey;
use crate::backend::{BackendError, StateAccess, StateBackend};
use crate::config::Workload;
use crate::config::job::dedup::{DedupSpec, Keep, TtlSettings};
use crate::pipeline::PipelineError;
use crate::pipeline::oracle::{TruthModel, Truths};
use crate::pipeline::source::{Event, Generator};

/// Result slots (`DedupSpec::result_labels`).
const EMITTED: usize = 0;
const LAST_TIME: usize = 1;

/// Flink's BooleanSerializer writes `true` as one byte 1.
const TRUE: [u8; 1] = [1];

/// The timer service a KeyedProcessOperator creates in `open()`, whether or not the function
/// registers timers.
pub const TIMER_SERVICE: &str = "user-timers";

/// The state's column family (created in the function's `open()`), then the timer service's.
pub fn layout(spec: &DedupSpec) -> Layout {
    let codec = ValueCodec::value(spec.ttl_settings().ok().flatten());
    Layout::default()
        .state(spec.state_name(), codec.decl(), false)
        .timer_service(TIMER_SERVICE)
}

pub struct Dedup<'a> {
    cf: &'a ColumnFamily,
    key_size: Option<u32>,
    keep: Keep,
    codec: ValueCodec,
    key: CompositeKey,
    key_str: String,
    user: Vec<u8>,
    buf: Vec<u8>,
    scratch: Vec<u8>,
    /// Records emitted per key so far (what the sink counts from the output).
    emitted: HashMap<u64, i64>,
    counters: JobCounters,
}

impl<'a> Dedup<'a> {
    pub fn new(
        spec: &DedupSpec,
        backend: &'a StateBackend,
        workload: &Workload,
    ) -> Result<Self, PipelineError> {
        let ttl = spec.ttl_settings().map_err(BackendError::Setup)?;
        Ok(Dedup {
            cf: backend.cf(spec.state_name())?,
            key_size: workload.spec.keys.size,
            keep: spec.keep,
            codec: ValueCodec::value(ttl),
            key: CompositeKey::default(),
            key_str: String::new(),
            user: Vec::new(),
            buf: Vec::new(),
            scratch: Vec::new(),
            emitted: HashMap::new(),
            counters: JobCounters::default(),
        })
    }

    /// The function's work for one element (the state's current key already set): true when
    /// it emits the element.
    fn process(
        &mut self,
        state: &mut StateAccess,
        event_time: i64,
        value_size: u32,
        now: i64,
    ) -> Result<bool, BackendError> {
        let key = self.key.prefix();
        match self.keep {
            Keep::First => {
                // TtlValueState.value(): RocksDBValueState.value() (a get) through the decorator.
                let seen = ttl::read(
                    state,
                    self.cf,
                    key,
                    &self.codec,
                    now,
                    &mut self.scratch,
                    |_| Ok(()),
                )?;
                match seen {
                    Read::Live(()) => return Ok(false),
                    Read::Expired => self.counters.expired_state += 1,
                    Read::Absent => {}
                }
                // update(true): RocksDBValueState.update, a put of the TtlValue.
                self.codec.encode(now, &TRUE, &mut self.buf);
                state.put(self.cf, key, &self.buf)?;
                Ok(true)
            }
            Keep::Last => {
                // Tuple2<Long, byte[]>: LongSerializer, then BytePrimitiveArraySerializer
                // (length as an int, then the bytes).
                self.user.clear();
                self.user.extend_from_slice(&event_time.to_be_bytes());
                self.user
                    .extend_from_slice(&(value_size as i32).to_be_bytes());
                let seed = mix(
                    java_hash(&self.key_str),
                    event_time,
                    i64::from(value_size),
                    -1,
                );
                payload(seed, value_size as usize, &mut self.user);
                self.codec.encode(now, &self.user, &mut self.buf);
                state.put(self.cf, key, &self.buf)?;
                Ok(true)
            }
        }
    }
}

impl<'a> KeyedOperator<'a> for Dedup<'a> {
    fn on_event(&mut self, event: &Event, ctx: &mut Context<'a>) -> Result<(), PipelineError> {
        Generator::sized_key(event.user, self.key_size, &mut self.key_str);
        self.key.set_key(&self.key_str);
        let now = ctx.now;
        let emit = self.process(&mut ctx.state, event.event_time, event.value_size, now)?;
        self.counters.events += 1;
        if emit {
            self.counters.emitted += 1;
            let n = self.emitted.entry(event.user).or_default();
            *n += 1;
            ctx.sink.write(event.user, EMITTED, *n)?;
            if self.keep == Keep::Last {
                ctx.sink.write(event.user, LAST_TIME, event.event_time)?;
            }
        }
        Ok(())
    }

    fn counters(&self) -> JobCounters {
        self.counters
    }

    fn restore_counters(&mut self, c: JobCounters) {
        self.counters = c;
    }
}

/// The exact model: per key, the last access time of its (live) value.
#[derive(Debug, Clone)]
pub struct DedupTruth {
    keep: Keep,
    ttl: Option<TtlSettings>,
    last_access: HashMap<u64, i64>,
}

impl DedupTruth {
    pub fn new(spec: &DedupSpec) -> Self {
        DedupTruth {
            keep: spec.keep,
            ttl: spec.ttl_settings().ok().flatten(),
            last_access: HashMap::new(),
        }
    }
}

impl TruthModel for DedupTruth {
    fn on_event(&mut self, e: &Event, now: i64, t: &mut Truths) {
        match self.keep {
            Keep::First => {
                let live = match (self.last_access.get(&e.user), self.ttl) {
                    (None, _) => false,
                    (Some(_), None) => true,
                    (Some(&ts), Some(ttl)) => {
                        !crate::backend::ttl_filter::expired(ts, ttl.ttl_ms, now)
                    }
                };
                if live {
                    if self.ttl.is_some_and(|t| t.update_on_read) {
                        self.last_access.insert(e.user, now);
                    }
                } else {
                    self.last_access.insert(e.user, now);
                    t.add(e.user, EMITTED, 1);
                }
            }
            Keep::Last => {
                t.add(e.user, EMITTED, 1);
                t.set(e.user, LAST_TIME, e.event_time);
            }
        }
    }

    fn on_watermark(&mut self, _wm: i64, _now: i64, _t: &mut Truths) {}

    fn boxed_clone(&self) -> Box<dyn TruthModel> {
        Box::new(self.clone())
    }
}
