//! `kind: dedup`: a KeyedProcessFunction keeping the first (or last) record per key in a
//! ValueState, with Flink's state TTL (docs/jobs.md "dedup").
//!
//! keep-first (`ValueState<Boolean> "seen"`): `if (seen.value() == null) { seen.update(true);
//! out.collect(e); }` — a get, and a put when the key is new (or its value expired: then the TTL
//! decorator's delete comes first; with OnReadAndWrite a live value is rewritten).
//! keep-last (`ValueState<Tuple2<Long, byte[]>> "last"`): `last.update((t, payload));
//! out.collect(e)` — one put per element, never a read.

use std::collections::HashMap;

use super::ttl::{self, Read, ValueCodec};
use super::valgen::{java_hash, payload};
use super::{Context, JobCounters, KeyedOperator, Layout, mix, record};
use crate::backend::keys::CompositeKey;
use crate::backend::{BackendError, Cf, StateAccess, StateBackend};
use crate::config::Workload;
use crate::config::job::dedup::{DedupSpec, Keep, TtlSettings};
use crate::pipeline::PipelineError;
use crate::pipeline::oracle::{TruthModel, Truths};
use crate::pipeline::output::Output;
use crate::pipeline::source::{Event, KeyNames};
use crate::util::hash::FastMap;

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
    cf: &'a Cf,
    /// How the job names a key id (`user-N` or a trace's own key).
    keys: KeyNames,
    keep: Keep,
    codec: ValueCodec,
    key: CompositeKey,
    key_str: String,
    user: Vec<u8>,
    buf: Vec<u8>,
    scratch: Vec<u8>,
    /// Records emitted per key so far (what the sink counts from the output).
    emitted: FastMap<u64, i64>,
    /// Tallies the keys of one in this many (`KeyedOperator::tally_only`; 1: all).
    tally_sample: u64,
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
            keys: KeyNames::of(workload),
            keep: spec.keep,
            codec: ValueCodec::value(ttl),
            key: CompositeKey::default(),
            key_str: String::new(),
            user: Vec::new(),
            buf: Vec::new(),
            scratch: Vec::new(),
            emitted: FastMap::default(),
            tally_sample: 1,
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

impl<'a, S: Output> KeyedOperator<'a, S> for Dedup<'a> {
    fn on_event(&mut self, event: &Event, ctx: &mut Context<'a, S>) -> Result<(), PipelineError> {
        self.keys.write(event.user, &mut self.key_str);
        self.key.set_key(&self.key_str);
        let now = ctx.now;
        let emit = self.process(&mut ctx.state, event.event_time, event.value_size, now)?;
        self.counters.events += 1;
        if emit {
            // out.collect(e): the input record, its timestamp (TimestampedCollector).
            ctx.emit(record(event.user, event.event_time, event.value_size));
            self.counters.emitted += 1;
            if !crate::pipeline::oracle::checked(event.user, self.tally_sample) {
                return Ok(());
            }
            let n = self.emitted.entry(event.user).or_default();
            *n += 1;
            ctx.write(event.user, EMITTED, *n)?;
            if self.keep == Keep::Last {
                ctx.write(event.user, LAST_TIME, event.event_time)?;
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

    /// The records emitted per key: the downstream count, which Flink keeps in the next
    /// operator's checkpointed state, so a checkpoint carries it.
    fn results_of(&self, keep: &dyn Fn(u64) -> bool) -> Vec<(u64, usize, i64)> {
        let mut out: Vec<(u64, usize, i64)> = self
            .emitted
            .iter()
            .filter(|(key, _)| keep(**key))
            .map(|(key, n)| (*key, EMITTED, *n))
            .collect();
        out.sort_unstable();
        out
    }

    fn tally_only(&mut self, sample: u64) {
        self.tally_sample = sample;
    }

    fn restore_results(&mut self, results: &[(u64, usize, i64)]) {
        self.emitted = results
            .iter()
            .filter(|r| r.1 == EMITTED)
            .map(|r| (r.0, r.2))
            .collect();
    }
}

/// The exact model: per key, the last access time of its (live) value.
#[derive(Debug, Clone)]
pub struct DedupTruth {
    keep: Keep,
    ttl: Option<TtlSettings>,
    last_access: HashMap<u64, i64>,
    /// Records emitted and not drained yet.
    out: Vec<Event>,
}

impl DedupTruth {
    pub fn new(spec: &DedupSpec) -> Self {
        DedupTruth {
            keep: spec.keep,
            ttl: spec.ttl_settings().ok().flatten(),
            last_access: HashMap::new(),
            out: Vec::new(),
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
                    self.out.push(record(e.user, e.event_time, e.value_size));
                }
            }
            Keep::Last => {
                t.add(e.user, EMITTED, 1);
                t.set(e.user, LAST_TIME, e.event_time);
                self.out.push(record(e.user, e.event_time, e.value_size));
            }
        }
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
    use crate::backend::keys::CompositeKey;

    fn key(user: &str) -> Vec<u8> {
        let mut k = CompositeKey::default();
        k.set_key(user);
        k.prefix().to_vec()
    }

    fn ttl_value(ts: i64, user: &[u8]) -> Vec<u8> {
        let mut v = ts.to_be_bytes().to_vec();
        v.extend_from_slice(user);
        v
    }

    #[test]
    fn layout_is_the_state_then_the_timer_service() {
        let rig = Rig::new("{kind: dedup, ttl: 10s}");
        let names = rig.layout.names();
        assert_eq!(names[0], "seen");
        assert!(names[1..].contains(&"_timer_state/processing_user-timers".to_string()));
        assert!(names[1..].contains(&"_timer_state/event_user-timers".to_string()));
        assert_eq!(
            Rig::new("{kind: dedup, keep: last}").layout.names()[0],
            "last"
        );
    }

    #[test]
    fn keep_first_reads_then_writes_a_ttl_value_and_emits_again_after_expiry() {
        let rig = Rig::new("{kind: dedup, ttl: 10s}");
        let mut ctx = rig.ctx();
        let mut op = rig.op();
        let mut step = |now: i64| {
            ctx.set_now(now);
            let before = ctx.state.counters;
            op.on_event(&event(1, now, 30), &mut ctx).unwrap();
            delta(before, ctx.state.counters)
        };
        // New key: a get, then a put of [ts][true].
        assert_eq!(step(1_000), [1, 1, 0, 0, 0, 0, 0]);
        assert_eq!(
            raw(&rig, "seen", &key("user-1")),
            Some(ttl_value(1_000, &[1]))
        );
        // Seen and live: the get alone, nothing emitted.
        assert_eq!(step(10_999), [1, 0, 0, 0, 0, 0, 0]);
        assert_eq!(
            raw(&rig, "seen", &key("user-1")),
            Some(ttl_value(1_000, &[1]))
        );
        // Expired (1,000 + 10,000 <= 11,000): the decorator's delete, then a new put.
        assert_eq!(step(11_000), [1, 1, 1, 0, 0, 0, 0]);
        assert_eq!(
            raw(&rig, "seen", &key("user-1")),
            Some(ttl_value(11_000, &[1]))
        );
        assert_eq!(op.counters().expired_state, 1);
        assert_eq!(op.counters().emitted, 2);
        let results = ctx.sink.sink_mut().read_all().unwrap();
        assert_eq!(results, vec![(1, 0, 2)]);
    }

    #[test]
    fn keep_first_without_ttl_stores_a_plain_boolean() {
        let rig = Rig::new("{kind: dedup}");
        let mut ctx = rig.ctx();
        let mut op = rig.op();
        ctx.set_now(5);
        op.on_event(&event(7, 5, 0), &mut ctx).unwrap();
        op.on_event(&event(7, 6, 0), &mut ctx).unwrap();
        assert_eq!(raw(&rig, "seen", &key("user-7")), Some(vec![1]));
        assert_eq!(ctx.state.counters.gets, 2);
        assert_eq!(ctx.state.counters.puts, 1);
    }

    #[test]
    fn on_read_and_write_renews_a_value_it_reads() {
        let rig = Rig::new("{kind: dedup, ttl: 10s, ttl-update: on-read-and-write}");
        let mut ctx = rig.ctx();
        let mut op = rig.op();
        ctx.set_now(1_000);
        op.on_event(&event(1, 1_000, 0), &mut ctx).unwrap();
        ctx.set_now(9_000);
        let before = ctx.state.counters;
        op.on_event(&event(1, 9_000, 0), &mut ctx).unwrap();
        // The read rewrites the value with the new timestamp.
        assert_eq!(delta(before, ctx.state.counters), [1, 1, 0, 0, 0, 0, 0]);
        assert_eq!(
            raw(&rig, "seen", &key("user-1")),
            Some(ttl_value(9_000, &[1]))
        );
        // So at 11,000 it is still live (9,000 + 10,000 > 11,000): not emitted again.
        ctx.set_now(11_000);
        op.on_event(&event(1, 11_000, 0), &mut ctx).unwrap();
        assert_eq!(op.counters().emitted, 1);
    }

    #[test]
    fn keep_last_writes_every_record_without_reading() {
        let rig = Rig::new("{kind: dedup, keep: last, ttl: 1h}");
        let mut ctx = rig.ctx();
        let mut op = rig.op();
        ctx.set_now(2_000);
        let before = ctx.state.counters;
        op.on_event(&event(3, 1_500, 20), &mut ctx).unwrap();
        op.on_event(&event(3, 1_700, 12), &mut ctx).unwrap();
        assert_eq!(delta(before, ctx.state.counters), [0, 2, 0, 0, 0, 0, 0]);
        let v = raw(&rig, "last", &key("user-3")).unwrap();
        // [ts][event time][length 12][payload of 12 bytes]
        assert_eq!(v.len(), 8 + 8 + 4 + 12);
        assert_eq!(v[..8], 2_000i64.to_be_bytes());
        assert_eq!(v[8..16], 1_700i64.to_be_bytes());
        assert_eq!(v[16..20], 12i32.to_be_bytes());
        let mut results = ctx.sink.sink_mut().read_all().unwrap();
        results.sort();
        assert_eq!(results, vec![(3, 0, 2), (3, 1, 1_700)]);
    }

    #[test]
    fn the_compaction_filter_drops_expired_values() {
        for (cleanup, left) in [("compaction", 10), ("none", 20)] {
            let rig = Rig::new(&format!("{{kind: dedup, ttl: 10s, cleanup: {cleanup}}}"));
            let mut ctx = rig.ctx();
            let mut op = rig.op();
            ctx.set_now(1_000);
            for user in 0..10 {
                op.on_event(&event(user, 1_000, 0), &mut ctx).unwrap();
            }
            ctx.set_now(20_000);
            for user in 10..20 {
                op.on_event(&event(user, 20_000, 0), &mut ctx).unwrap();
            }
            assert_eq!(keys(&rig, "seen").len(), 20);
            // At 25,000 the first ten (1,000 + 10,000) have expired, the others (20,000 +
            // 10,000) have not.
            ctx.set_now(25_000);
            compact(&rig, "seen");
            assert_eq!(keys(&rig, "seen").len(), left, "cleanup: {cleanup}");
        }
    }

    #[test]
    fn results_equal_the_oracle() {
        for job in [
            "{kind: dedup}",
            "{kind: dedup, ttl: 20s}",
            "{kind: dedup, ttl: 20s, ttl-update: on-read-and-write}",
            "{kind: dedup, keep: last, ttl: 20s}",
        ] {
            let rig = Rig::with_workload(workload(job, 200));
            let events = events(&rig.workload, 5_000);
            let (error, compared) = rig.run_against_oracle(&events);
            assert!(error.is_exact(), "{job}: {error:?}");
            assert!(compared >= 150, "{job}: {compared}");
        }
    }
}
