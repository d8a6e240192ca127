//! `kind: process`: a KeyedProcessFunction described as data (docs/jobs.md "process"): its
//! states (`ValueState<byte[]>`, `ListState<byte[]>`, `MapState<Long, byte[]>`, each optionally
//! with state TTL) and, per element and per timer, actions drawn with their probabilities from
//! the element's own fields, so a Java job draws the same.
//!
//! RocksDB calls per action, as Flink 1.20's RocksDB states and TTL decorators make them:
//! value get/update/clear: get (+ TTL delete or rewrite) / put / delete; list get: one get
//! (RocksDB resolves the merge operands); list update: a put of the one-element list; append:
//! a merge (`RocksDBListState.add`); map get/put/remove: get / put / delete of the user key;
//! iterate: `RocksDBMapIterator` (a seek per batch of up to 128 entries, then nexts), through
//! `TtlMapState`'s iterator with TTL; map clear: a seek, nexts, and the deletes in write
//! batches of up to 500 (`RocksDBMapState.clear` with `RocksDBWriteBatchWrapper`).

use std::collections::HashMap;

use super::process_map::{clear_map, iterate};
use super::ttl::{self, ValueCodec};
use super::valgen::{fires, first8, java_hash, payload, pick};
use super::{Context, JobCounters, KeyedOperator, Layout, TIMER_RECORD_SIZE, mix, record};
use crate::backend::keys::CompositeKey;
use crate::backend::{BackendError, Cf, StateAccess, StateBackend};
use crate::config::Workload;
use crate::config::job::process::{ActionKind, ProcessSpec, StateKind};
use crate::pipeline::PipelineError;
use crate::pipeline::output::Output;
use crate::pipeline::source::{Event, KeyNames};
use crate::pipeline::timers::Timer;

/// Result slots (`ProcessSpec::result_labels`).
pub(super) const EVENTS: usize = 0;
pub(super) const DIGEST: usize = 1;

/// `RocksDBMapState.RocksDBMapIterator.CACHE_SIZE_LIMIT`.
pub(super) const MAP_ITERATOR_BATCH: usize = 128;
/// `RocksDBWriteBatchWrapper`'s default capacity (entries per batch write).
pub(super) const WRITE_BATCH_CAPACITY: usize = 500;
/// Action ids of on-timer actions start here.
pub(super) const TIMER_ACTION_BASE: i64 = 10_000;

/// A state of the function, resolved from the spec.
#[derive(Debug, Clone)]
pub(super) struct StatePlan {
    pub name: String,
    pub kind: StateKind,
    pub codec: ValueCodec,
    pub size: (u32, u32),
    pub key_space: u64,
}

/// An action, resolved: `id` is what its draws are salted with.
#[derive(Debug, Clone, Copy)]
pub(super) struct ActionPlan {
    pub id: i64,
    pub kind: ActionKind,
    pub state: usize,
    pub p: f64,
    pub entries: u32,
    pub after: i64,
}

/// One context's fields the draws use: (key hash, time, value size or -1 for a timer).
#[derive(Debug, Clone, Copy)]
pub(super) struct Draw {
    pub h: i64,
    pub t: i64,
    pub v: i64,
}

impl ActionPlan {
    pub fn runs(&self, d: Draw) -> bool {
        fires(mix(d.h, d.t, d.v, self.id), self.p)
    }

    pub fn user_key(&self, s: &StatePlan, d: Draw) -> u64 {
        pick(d.h, d.t, d.v, self.id + 1_000_000, s.key_space)
    }

    pub fn size(&self, s: &StatePlan, d: Draw) -> u32 {
        let (min, max) = s.size;
        if min == max {
            return min;
        }
        min + pick(d.h, d.t, d.v, self.id + 2_000_000, u64::from(max - min) + 1) as u32
    }

    pub fn seed(&self, d: Draw) -> i64 {
        mix(d.h, d.t, d.v, self.id + 3_000_000)
    }
}

/// The function's states and actions.
#[derive(Debug, Clone)]
pub(super) struct Plan {
    pub states: Vec<StatePlan>,
    pub on_event: Vec<ActionPlan>,
    pub on_timer: Vec<ActionPlan>,
}

impl Plan {
    pub fn new(spec: &ProcessSpec) -> Result<Plan, String> {
        spec.validate()?;
        let states = spec
            .states
            .iter()
            .enumerate()
            .map(|(i, s)| StatePlan {
                name: s.name.clone(),
                kind: s.kind,
                codec: match s.kind {
                    StateKind::Map => ValueCodec::map(spec.ttl_of(i)),
                    StateKind::Value | StateKind::List => ValueCodec::value(spec.ttl_of(i)),
                },
                size: s.value_size.bounds(),
                key_space: s.key_space.unwrap_or(1),
            })
            .collect();
        let actions = |list: &[crate::config::job::process::ActionSpec], base: i64| {
            list.iter()
                .enumerate()
                .map(|(i, a)| ActionPlan {
                    id: base + i as i64,
                    kind: a.action,
                    state: a
                        .state
                        .as_deref()
                        .and_then(|n| spec.state_index(n))
                        .unwrap_or(0),
                    p: a.p,
                    entries: a.entries.unwrap_or(0),
                    after: a.after.map_or(0, |m| m.0 as i64),
                })
                .collect()
        };
        Ok(Plan {
            states,
            on_event: actions(&spec.on_event, 0),
            on_timer: actions(&spec.on_timer, TIMER_ACTION_BASE),
        })
    }
}

/// Digest terms (docs/jobs.md "process").
pub(super) mod term {
    use super::mix;

    pub fn value(id: i64, read: Option<(u32, i64)>) -> i64 {
        match read {
            Some((len, f8)) => mix(id, i64::from(len), f8, 1),
            None => mix(id, -1, 0, 1),
        }
    }

    pub fn list_element(id: i64, j: usize, len: u32, f8: i64) -> i64 {
        mix(id, j as i64, i64::from(len), f8)
    }

    pub fn list_empty(id: i64) -> i64 {
        mix(id, -1, 0, 2)
    }

    pub fn map_entry(id: i64, uk: u64, read: Option<(u32, i64)>) -> i64 {
        match read {
            Some((len, f8)) => mix(id, uk as i64, i64::from(len), f8),
            None => mix(id, uk as i64, -1, 0),
        }
    }

    pub fn iterated(id: i64, n: u32) -> i64 {
        mix(id, -2, i64::from(n), 0)
    }
}

/// `[len 4][bytes]` (BytePrimitiveArraySerializer) -> (len, first8).
pub(super) fn read_bytes(user: &[u8]) -> Result<(u32, i64), BackendError> {
    let (len, rest) = user
        .split_first_chunk::<4>()
        .ok_or_else(|| BackendError::Corrupt("a byte[] value without its length".to_string()))?;
    let len = i32::from_be_bytes(*len);
    let bytes = usize::try_from(len)
        .ok()
        .and_then(|l| rest.get(..l))
        .ok_or_else(|| BackendError::Corrupt(format!("a byte[] of {len} bytes")))?;
    Ok((len as u32, first8(bytes)))
}

/// A list's elements (ListDelimitedSerializer: elements joined by one delimiter byte).
fn read_list(mut v: &[u8], mut each: impl FnMut(u32, i64)) -> Result<(), BackendError> {
    while !v.is_empty() {
        let (len, f8) = read_bytes(v)?;
        v = &v[4 + len as usize..];
        each(len, f8);
        if !v.is_empty() {
            v = &v[1..];
        }
    }
    Ok(())
}

/// Scratch buffers.
#[derive(Default)]
pub(super) struct Bufs {
    user: Vec<u8>,
    pub(super) value: Vec<u8>,
    scratch: Vec<u8>,
}

impl Bufs {
    /// The user bytes of a written value: `[len 4][payload]`.
    fn user_value(&mut self, seed: i64, size: u32) {
        self.user.clear();
        self.user.extend_from_slice(&(size as i32).to_be_bytes());
        payload(seed, size as usize, &mut self.user);
    }
}

/// The states' column families in spec order (list states with Flink's merge operator), then
/// the timer service the KeyedProcessOperator creates.
pub fn layout(spec: &ProcessSpec) -> Layout {
    let Ok(plan) = Plan::new(spec) else {
        return Layout::default();
    };
    plan.states
        .iter()
        .fold(Layout::default(), |l, s| {
            l.state(&s.name, s.codec.decl(), s.kind == StateKind::List)
        })
        .timer_service(super::dedup::TIMER_SERVICE)
}

/// The key id of a timer's key (`user-42`, `user-0000042` -> 42; a trace's key: its id).
pub(super) fn key_id(keys: &KeyNames, key: &str) -> Result<u64, PipelineError> {
    keys.id(key)
        .ok_or_else(|| PipelineError::CorruptTimer(format!("timer key '{key}'")))
}

pub struct Process<'a> {
    plan: Plan,
    /// How the job names a key id (`user-N` or a trace's own key).
    keys: KeyNames,
    cfs: Vec<&'a Cf>,
    key: CompositeKey,
    key_str: String,
    bufs: Bufs,
    /// (events, digest) per key so far (what the sink sums from the output).
    tally: HashMap<u64, (i64, i64)>,
    counters: JobCounters,
}

impl<'a> Process<'a> {
    pub fn new(
        spec: &ProcessSpec,
        backend: &'a StateBackend,
        workload: &Workload,
    ) -> Result<Self, PipelineError> {
        let plan = Plan::new(spec).map_err(BackendError::Setup)?;
        let cfs = plan
            .states
            .iter()
            .map(|s| backend.cf(&s.name))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Process {
            plan,
            keys: KeyNames::of(workload),
            cfs,
            key: CompositeKey::default(),
            key_str: String::new(),
            bufs: Bufs::default(),
            tally: HashMap::new(),
            counters: JobCounters::default(),
        })
    }

    /// Runs the element's (or the timer's) actions for the current key; returns the digest
    /// term of what they read.
    fn run<S: Output>(
        &mut self,
        ctx: &mut Context<'a, S>,
        on_timer: bool,
        d: Draw,
    ) -> Result<i64, PipelineError> {
        let actions = if on_timer {
            &self.plan.on_timer
        } else {
            &self.plan.on_event
        };
        let mut digest = 0i64;
        for a in actions {
            if !a.runs(d) {
                continue;
            }
            if a.kind == ActionKind::Timer {
                ctx.register_timer(&self.key, d.t.wrapping_add(a.after))?;
                continue;
            }
            let s = &self.plan.states[a.state];
            let cf = self.cfs[a.state];
            let t = exec(
                a,
                s,
                cf,
                &mut self.key,
                &mut self.bufs,
                &mut ctx.state,
                ctx.now,
                d,
            )?;
            digest = digest.wrapping_add(t);
        }
        Ok(digest)
    }

    fn emit<S: Output>(
        &mut self,
        ctx: &mut Context<'a, S>,
        key: u64,
        event: bool,
        term: i64,
    ) -> Result<(), PipelineError> {
        let (events, digest) = self.tally.entry(key).or_default();
        *events += i64::from(event);
        *digest = digest.wrapping_add(term);
        let (events, digest) = (*events, *digest);
        if event {
            ctx.write(key, EVENTS, events)?;
        }
        ctx.write(key, DIGEST, digest)?;
        Ok(())
    }
}

/// One state action (not a timer) for the current key; returns its digest term.
#[allow(clippy::too_many_arguments)]
fn exec(
    a: &ActionPlan,
    s: &StatePlan,
    cf: &Cf,
    key: &mut CompositeKey,
    bufs: &mut Bufs,
    state: &mut StateAccess,
    now: i64,
    d: Draw,
) -> Result<i64, BackendError> {
    let codec = &s.codec;
    match (a.kind, s.kind) {
        (ActionKind::Get, StateKind::Value) => {
            let read = ttl::read(
                state,
                cf,
                key.prefix(),
                codec,
                now,
                &mut bufs.scratch,
                read_bytes,
            )?;
            Ok(term::value(a.id, read.live()))
        }
        (ActionKind::Get, _) => {
            // RocksDBListState.get(): one get; a missing list reads as empty.
            let mut t = 0i64;
            let mut n = 0usize;
            state.get(cf, key.prefix(), |v| {
                read_list(v, |len, f8| {
                    t = t.wrapping_add(term::list_element(a.id, n, len, f8));
                    n += 1;
                })
            })?;
            Ok(if n == 0 { term::list_empty(a.id) } else { t })
        }
        (ActionKind::Update, _) => {
            // ValueState.update(bytes) / ListState.update(List.of(bytes)): one put.
            bufs.user_value(a.seed(d), a.size(s, d));
            codec.encode(now, &bufs.user, &mut bufs.value);
            state.put(cf, key.prefix(), &bufs.value)?;
            Ok(0)
        }
        (ActionKind::Append, _) => {
            bufs.user_value(a.seed(d), a.size(s, d));
            state.merge(cf, key.prefix(), &bufs.user)?;
            Ok(0)
        }
        (ActionKind::MapGet, _) => {
            let uk = a.user_key(s, d);
            let k = key.with_long_user_key(uk as i64);
            let read = ttl::read(state, cf, k, codec, now, &mut bufs.scratch, read_bytes)?;
            Ok(term::map_entry(a.id, uk, read.live()))
        }
        (ActionKind::MapPut, _) => {
            let uk = a.user_key(s, d);
            bufs.user_value(a.seed(d), a.size(s, d));
            codec.encode(now, &bufs.user, &mut bufs.value);
            state.put(cf, key.with_long_user_key(uk as i64), &bufs.value)?;
            Ok(0)
        }
        (ActionKind::MapRemove, _) => {
            let uk = a.user_key(s, d);
            state.delete(cf, key.with_long_user_key(uk as i64))?;
            Ok(0)
        }
        (ActionKind::Iterate, _) => iterate(a, codec, cf, key, bufs, state, now),
        (ActionKind::Clear, StateKind::Map) => {
            clear_map(cf, key.prefix(), state)?;
            Ok(0)
        }
        (ActionKind::Clear, _) => {
            state.delete(cf, key.prefix())?;
            Ok(0)
        }
        (ActionKind::Timer, _) => Ok(0),
    }
}

impl<'a, S: Output> KeyedOperator<'a, S> for Process<'a> {
    fn on_event(&mut self, event: &Event, ctx: &mut Context<'a, S>) -> Result<(), PipelineError> {
        self.keys.write(event.user, &mut self.key_str);
        self.key.set_key(&self.key_str);
        let d = Draw {
            h: java_hash(&self.key_str),
            t: event.event_time,
            v: i64::from(event.value_size),
        };
        let term = self.run(ctx, false, d)?;
        self.counters.events += 1;
        // out.collect(value): the input record at its timestamp (docs/jobs.md "process").
        ctx.emit(record(event.user, event.event_time, event.value_size));
        self.emit(ctx, event.user, true, term)
    }

    fn on_timer(&mut self, timer: &Timer, ctx: &mut Context<'a, S>) -> Result<(), PipelineError> {
        self.key.set_key(&timer.key);
        let d = Draw {
            h: java_hash(&timer.key),
            t: timer.timestamp,
            v: -1,
        };
        let term = self.run(ctx, true, d)?;
        let id = key_id(&self.keys, &timer.key)?;
        // onTimer's out.collect(timestamp): one record at the timer's time
        // (KeyedProcessOperator.onEventTime: setAbsoluteTimestamp(timer.getTimestamp())).
        ctx.emit(record(id, timer.timestamp, TIMER_RECORD_SIZE));
        self.emit(ctx, id, false, term)
    }

    fn counters(&self) -> JobCounters {
        self.counters
    }

    fn restore_counters(&mut self, c: JobCounters) {
        self.counters = c;
    }

    /// Events and digest per key: downstream sums, which Flink keeps in the next operator's
    /// checkpointed state, so a checkpoint carries them.
    fn results_of(&self, keep: &dyn Fn(u64) -> bool) -> Vec<(u64, usize, i64)> {
        let mut out: Vec<(u64, usize, i64)> = self
            .tally
            .iter()
            .filter(|(key, _)| keep(**key))
            .flat_map(|(key, (events, digest))| [(*key, EVENTS, *events), (*key, DIGEST, *digest)])
            .collect();
        out.sort_unstable();
        out
    }

    fn restore_results(&mut self, results: &[(u64, usize, i64)]) {
        self.tally.clear();
        for &(key, slot, value) in results {
            let tally = self.tally.entry(key).or_default();
            if slot == EVENTS {
                tally.0 = value;
            } else if slot == DIGEST {
                tally.1 = value;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::kit::{Rig, compact, delta, event, events, keys, raw, workload};
    use super::*;

    fn key(user: &str) -> CompositeKey {
        let mut k = CompositeKey::default();
        k.set_key(user);
        k
    }

    /// One action at p = 1 on states v (value), l (list), m (map, 300 user keys).
    fn rig(states_extra: &str, actions: &str) -> Rig {
        Rig::new(&format!(
            "{{kind: process, states: [{{name: v, type: value, value-size: 10{states_extra}}}, \
             {{name: l, type: list, value-size: 6}}, \
             {{name: m, type: map, value-size: 3, key-space: 300{states_extra}}}], \
             on-event: [{actions}]}}"
        ))
    }

    #[test]
    fn each_action_makes_flinks_rocksdb_calls() {
        let cases = [
            ("{action: get, state: v}", [1, 0, 0, 0, 0, 0, 0]),
            ("{action: update, state: v}", [0, 1, 0, 0, 0, 0, 0]),
            ("{action: clear, state: v}", [0, 0, 1, 0, 0, 0, 0]),
            ("{action: get, state: l}", [1, 0, 0, 0, 0, 0, 0]),
            ("{action: update, state: l}", [0, 1, 0, 0, 0, 0, 0]),
            ("{action: append, state: l}", [0, 0, 0, 1, 0, 0, 0]),
            ("{action: map-get, state: m}", [1, 0, 0, 0, 0, 0, 0]),
            ("{action: map-put, state: m}", [0, 1, 0, 0, 0, 0, 0]),
            ("{action: map-remove, state: m}", [0, 0, 1, 0, 0, 0, 0]),
            // An empty map: the seek finds nothing.
            (
                "{action: iterate, state: m, entries: 5}",
                [0, 0, 0, 0, 1, 0, 0],
            ),
            ("{action: clear, state: m}", [0, 0, 0, 0, 1, 0, 0]),
        ];
        for (action, want) in cases {
            let rig = rig("", action);
            let mut ctx = rig.ctx();
            let mut op = rig.op();
            let before = ctx.state.counters;
            op.on_event(&event(1, 100, 0), &mut ctx).unwrap();
            assert_eq!(delta(before, ctx.state.counters), want, "{action}");
        }
    }

    #[test]
    fn values_have_flinks_bytes() {
        let rig = rig(
            ", ttl: 1h",
            "{action: update, state: v}, {action: append, state: l}, {action: map-put, state: m}",
        );
        let mut ctx = rig.ctx();
        let mut op = rig.op();
        ctx.set_now(7_000);
        op.on_event(&event(1, 100, 0), &mut ctx).unwrap();
        op.on_event(&event(1, 200, 0), &mut ctx).unwrap();
        let mut k = key("user-1");
        // ValueState<byte[]> with TTL: [ts][length][bytes].
        let v = raw(&rig, "v", k.prefix()).unwrap();
        assert_eq!(v[..8], 7_000i64.to_be_bytes());
        assert_eq!(v[8..12], 10i32.to_be_bytes());
        assert_eq!(v.len(), 8 + 4 + 10);
        // ListState<byte[]>: the two appends joined by the merge operator's ','.
        let l = raw(&rig, "l", k.prefix()).unwrap();
        assert_eq!(l.len(), 2 * (4 + 6) + 1);
        assert_eq!(l[10], b',');
        assert_eq!(l[..4], 6i32.to_be_bytes());
        // MapState<Long, byte[]> with TTL: [not null][ts][length][bytes] under key + user key.
        let m = keys(&rig, "m");
        assert!(!m.is_empty());
        let uk_key = &m[0];
        assert_eq!(uk_key.len(), k.prefix().len() + 8);
        let v = raw(&rig, "m", uk_key).unwrap();
        assert_eq!(v[0], 0);
        assert_eq!(v[1..9], 7_000i64.to_be_bytes());
        assert_eq!(v[9..13], 3i32.to_be_bytes());
    }

    #[test]
    fn iteration_loads_entries_in_batches_of_128() {
        let rig = Rig::new(
            "{kind: process, states: [{name: m, type: map, value-size: 3, key-space: 1000}], \
             on-event: [{action: iterate, state: m, entries: 200}]}",
        );
        let mut ctx = rig.ctx();
        let mut op = rig.op();
        let cf = rig.backend.cf("m").unwrap();
        let mut k = key("user-1");
        for uk in 0..300i64 {
            let mut v = vec![0];
            v.extend_from_slice(&3i32.to_be_bytes());
            v.extend_from_slice(b"abc");
            ctx.state.put(cf, k.with_long_user_key(uk), &v).unwrap();
        }
        let before = ctx.state.counters;
        op.on_event(&event(1, 100, 0), &mut ctx).unwrap();
        // Batch 1: a seek and 128 entries (a next each); batch 2: a seek to the 128th entry,
        // a next past it, and 128 more.
        assert_eq!(
            delta(before, ctx.state.counters),
            [0, 0, 0, 0, 2, 1 + 128 + 128, 0]
        );
    }

    #[test]
    fn a_ttl_map_iteration_deletes_expired_entries_and_a_clear_batches_deletes() {
        let rig = Rig::new(
            "{kind: process, states: [{name: m, type: map, value-size: 3, key-space: 1000, \
             ttl: 10s}], on-event: [{action: iterate, state: m, entries: 3}, \
             {action: clear, state: m, p: 0}]}",
        );
        let mut ctx = rig.ctx();
        let mut op = rig.op();
        let cf = rig.backend.cf("m").unwrap();
        let mut k = key("user-1");
        for (uk, ts) in [
            (0i64, 0i64),
            (1, 20_000),
            (2, 0),
            (3, 20_000),
            (4, 20_000),
            (5, 0),
        ] {
            let mut v = vec![0];
            v.extend_from_slice(&ts.to_be_bytes());
            v.extend_from_slice(&3i32.to_be_bytes());
            v.extend_from_slice(b"abc");
            ctx.state.put(cf, k.with_long_user_key(uk), &v).unwrap();
        }
        ctx.set_now(25_000);
        let before = ctx.state.counters;
        op.on_event(&event(1, 100, 0), &mut ctx).unwrap();
        // One batch of all 6; reading 3 live entries (1, 3, 4) removes 0 and 2 on the way.
        assert_eq!(delta(before, ctx.state.counters), [0, 0, 2, 0, 1, 6, 0]);
        assert_eq!(keys(&rig, "m").len(), 4);
        // RocksDBMapState.clear: a seek, a next per entry, the deletes in one batch.
        let before = ctx.state.counters;
        clear_map(cf, k.prefix(), &mut ctx.state).unwrap();
        assert_eq!(delta(before, ctx.state.counters), [0, 0, 0, 0, 1, 4, 4]);
        assert!(keys(&rig, "m").is_empty());
    }

    #[test]
    fn the_compaction_filter_reads_a_map_values_timestamp_after_its_null_flag() {
        let rig = rig(
            ", ttl: 10s",
            "{action: map-put, state: m}, {action: update, state: v}",
        );
        let mut ctx = rig.ctx();
        let mut op = rig.op();
        ctx.set_now(1_000);
        for user in 0..20 {
            op.on_event(&event(user, 100, 0), &mut ctx).unwrap();
        }
        ctx.set_now(30_000);
        for user in 20..30 {
            op.on_event(&event(user, 100, 0), &mut ctx).unwrap();
        }
        ctx.set_now(35_000);
        compact(&rig, "m");
        compact(&rig, "v");
        assert_eq!(keys(&rig, "m").len(), 10);
        assert_eq!(keys(&rig, "v").len(), 10);
    }

    #[test]
    fn timers_fire_the_on_timer_actions() {
        let rig = Rig::new(
            "{kind: process, states: [{name: l, type: list, value-size: 4}], \
             on-event: [{action: append, state: l}, {action: timer, after: 1m}], \
             on-timer: [{action: get, state: l}, {action: clear, state: l}]}",
        );
        let mut ctx = rig.ctx();
        let mut op = rig.op();
        op.on_event(&event(1, 1_000, 0), &mut ctx).unwrap();
        op.on_event(&event(1, 2_000, 0), &mut ctx).unwrap();
        let before = ctx.state.counters;
        ctx.advance_watermark(op.as_mut(), 62_000).unwrap();
        // The timer at 61,000 read the list (a get) and cleared it (a delete); the one at
        // 62,000 read it empty and deleted again.
        let d = delta(before, ctx.state.counters);
        assert_eq!((d[0], d[2]), (2, 2));
        assert!(keys(&rig, "l").is_empty());
    }

    const EXAMPLE: &str = "{kind: process, states: [\
        {name: profile, type: value, value-size: 40, ttl: 20s}, \
        {name: recent, type: list, value-size: {min: 4, max: 30}}, \
        {name: counters, type: map, value-size: {min: 1, max: 12}, key-space: 20, ttl: 30s, \
         ttl-update: on-read-and-write}], \
        on-event: [{action: get, state: profile}, {action: update, state: profile, p: 0.3}, \
        {action: append, state: recent, p: 0.5}, {action: map-get, state: counters}, \
        {action: map-put, state: counters, p: 0.6}, {action: map-remove, state: counters, p: 0.1}, \
        {action: iterate, state: counters, entries: 5, p: 0.2}, \
        {action: clear, state: profile, p: 0.02}, {action: timer, after: 20s, p: 0.2}], \
        on-timer: [{action: get, state: recent}, {action: clear, state: recent, p: 0.5}, \
        {action: iterate, state: counters, entries: 30}, {action: clear, state: counters, p: 0.1}]}";

    #[test]
    fn results_equal_the_oracle() {
        let rig = Rig::with_workload(workload(EXAMPLE, 100));
        let events = events(&rig.workload, 5_000);
        let (error, compared) = rig.run_against_oracle(&events);
        assert!(error.is_exact(), "{error:?}");
        assert!(compared >= 150, "{compared}");
    }
}
