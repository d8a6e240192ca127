//! Test rig for the valstate kinds: a backend opened with a kind's layout, its operator, a
//! memory sink, and the kind's oracle fed the same records.

use tempfile::TempDir;

use super::super::{Context, JobMode, KeyedOperator, Layout, build, layout, oracle, truth};
use crate::backend::{AccessCounters, StateBackend};
use crate::config::job::{JobSpec, OperatorSpec};
use crate::config::workload::ValueSize;
use crate::config::{Profile, Workload};
use crate::durability::delivery::Delivery;
use crate::durability::sink::MemorySink;
use crate::pipeline::oracle::{Oracle, ResultError};
use crate::pipeline::source::{Event, Generator};

/// A backend in a temporary folder. Fields drop in order: the database closes (and flushes)
/// before its folder goes; the other way round its closing flush fails and RocksDB waits a
/// second after a failed background flush, in every test.
pub struct Rig {
    pub backend: StateBackend,
    pub layout: Layout,
    pub workload: Workload,
    pub _dir: TempDir,
}

/// The smoke workload with `job` (YAML of the `job:` section) and `keys` keys.
pub fn workload(job: &str, keys: u64) -> Workload {
    let mut w = Workload::load("smoke").unwrap();
    let spec: OperatorSpec = serde_norway::from_str(job).unwrap();
    spec.validate().unwrap();
    w.spec.job = Some(spec.into());
    w.spec.keys.count = keys;
    w
}

impl Rig {
    pub fn new(job: &str) -> Rig {
        Self::with_workload(workload(job, 50))
    }

    pub fn with_workload(workload: Workload) -> Rig {
        let dir = tempfile::tempdir().unwrap();
        let layout = layout(&workload.operator());
        let profile = Profile::load("flink-default").unwrap();
        let backend = StateBackend::open_for(&dir.path().join("db"), &profile, &layout).unwrap();
        Rig {
            _dir: dir,
            backend,
            layout,
            workload,
        }
    }

    pub fn ctx(&self) -> Context<'_, Delivery> {
        let sink = MemorySink::new(self.workload.result_labels());
        Context::new(
            &self.backend,
            &self.layout,
            Delivery::passthrough(Box::new(sink)),
        )
        .unwrap()
    }

    pub fn op(&self) -> Box<dyn KeyedOperator<'_, Delivery> + '_> {
        build(&self.backend, &self.workload, 0, JobMode::Streaming).unwrap()
    }

    /// Runs `events` (processing time = the largest event time so far; a watermark every 16
    /// records, then the final one), and compares the sink with the oracle at the end.
    pub fn run_against_oracle(&self, events: &[Event]) -> (ResultError, u64) {
        let mut ctx = self.ctx();
        let mut op = self.op();
        let mut truth: Oracle = oracle(&self.workload);
        let mut now = i64::MIN;
        let mut wm = i64::MIN;
        for (i, e) in events.iter().enumerate() {
            now = now.max(e.event_time);
            ctx.set_now(now);
            truth.on_event(e, now);
            op.on_event(e, &mut ctx).unwrap();
            if i % 16 == 15 {
                let w = now - 1_000;
                if w > wm {
                    wm = w;
                    ctx.advance_watermark(op.as_mut(), wm).unwrap();
                    truth.on_watermark(wm);
                }
            }
        }
        ctx.advance_watermark(op.as_mut(), i64::MAX).unwrap();
        let end = truth.all_expired();
        let results = ctx.sink.sink_mut().read_all().unwrap();
        let compared = results.len() as u64;
        (end.compare(results), compared)
    }
}

/// The smoke workload running the chain `jobs` (YAML of each operator) over `keys` keys, with
/// values of 1 to 64 bytes.
pub fn chain_workload(jobs: &[&str], keys: u64) -> Workload {
    let mut w = Workload::load("smoke").unwrap();
    let ops: Vec<OperatorSpec> = jobs
        .iter()
        .map(|j| serde_norway::from_str(j).unwrap())
        .collect();
    w.spec.job = JobSpec::chain(ops);
    w.spec.windows.clear();
    w.spec.timer_state_ttl = None;
    w.spec.keys.count = keys;
    w.spec.value_size = Some(ValueSize::Uniform { min: 1, max: 64 });
    Workload::from_spec(&w.name, &w.source, w.spec).unwrap()
}

/// Each step of a run (a record, or a watermark with the timers it fires): what the operator
/// emitted, as `(operator's, truth model's)`.
pub type Emissions = Vec<(Vec<Event>, Vec<Event>)>;

impl Rig {
    /// Runs `events` (processing time = the largest event time so far; a watermark every 16
    /// records, then the final one) through the operator and its truth model side by side and
    /// returns what each emitted per step. A watermark step's records are sorted by (time,
    /// key): timers of one time fire in the timer queue's order across keys (RocksDB's key
    /// order, or the heap's), which no downstream result depends on (its state is per key);
    /// a record step's are in emission order.
    pub fn emissions(&self, events: &[Event]) -> Emissions {
        let mut ctx = self.ctx();
        let mut op = self.op();
        let mut model = truth(&self.workload.operator(), &self.workload);
        let mut truths = crate::pipeline::oracle::Truths::default();
        let mut steps = Vec::new();
        let mut now = i64::MIN;
        let mut wm = i64::MIN;
        let mut step = |ctx: &mut Context<'_, Delivery>,
                        model: &mut Box<dyn crate::pipeline::oracle::TruthModel>,
                        sort: bool| {
            let mut got = std::mem::take(&mut ctx.emitted);
            let mut want = Vec::new();
            model.drain_emitted(&mut want);
            if sort {
                got.sort_by_key(|e| (e.event_time, e.user));
                want.sort_by_key(|e| (e.event_time, e.user));
            }
            steps.push((got, want));
        };
        for (i, e) in events.iter().enumerate() {
            now = now.max(e.event_time);
            ctx.set_now(now);
            op.on_event(e, &mut ctx).unwrap();
            model.on_event(e, now, &mut truths);
            step(&mut ctx, &mut model, false);
            let w = now - 1_000;
            if i % 16 == 15 && w > wm {
                wm = w;
                ctx.advance_watermark(op.as_mut(), wm).unwrap();
                model.on_watermark(wm, now, &mut truths);
                step(&mut ctx, &mut model, true);
            }
        }
        ctx.advance_watermark(op.as_mut(), i64::MAX).unwrap();
        model.on_watermark(i64::MAX, now, &mut truths);
        step(&mut ctx, &mut model, true);
        steps
    }
}

/// A chain's operators, as the engine runs them.
struct Chain<'a> {
    ctxs: Vec<Context<'a, Delivery>>,
    stages: Vec<Box<dyn KeyedOperator<'a, Delivery> + 'a>>,
    /// Per operator: records fed to it (a downstream record's `offset`).
    read: Vec<u64>,
}

impl Chain<'_> {
    /// Feeds `batch` to operator `from`, and what each operator emits to the next, in order.
    fn push(&mut self, from: usize, mut batch: Vec<Event>, now: i64) {
        for j in from..self.stages.len() {
            let mut next = Vec::new();
            for mut r in batch {
                if j > 0 {
                    r.offset = self.read[j];
                    r.append_time = now;
                }
                self.read[j] += 1;
                self.stages[j].on_event(&r, &mut self.ctxs[j]).unwrap();
                next.append(&mut self.ctxs[j].emitted);
            }
            batch = next;
        }
    }

    /// Operator by operator: its timers fire, what they emit goes down the chain, then the
    /// watermark follows.
    fn advance(&mut self, watermark: i64, now: i64) {
        for i in 0..self.stages.len() {
            self.ctxs[i]
                .advance_watermark(self.stages[i].as_mut(), watermark)
                .unwrap();
            let batch = std::mem::take(&mut self.ctxs[i].emitted);
            self.push(i + 1, batch, now);
        }
    }
}

/// A chain run through its operators directly, as the engine runs it: one backend per
/// operator, each operator's emitted records (numbered per operator, stamped with processing
/// time) fed to the next right after the record or watermark that produced them, then the
/// watermark (every 16 records, then the final one). Returns the results against the chain's
/// oracle at the end, the results' count, and the records each operator read.
pub fn run_chain(workload: &Workload, events: &[Event]) -> (ResultError, u64, Vec<u64>) {
    let ops = workload.operators();
    let profile = Profile::load("flink-default").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let layouts: Vec<Layout> = ops.iter().map(layout).collect();
    let backends: Vec<StateBackend> = layouts
        .iter()
        .enumerate()
        .map(|(i, l)| {
            StateBackend::open_for(&dir.path().join(format!("db{i}")), &profile, l).unwrap()
        })
        .collect();
    let bases = workload.slot_bases();
    let mut chain = Chain {
        ctxs: backends
            .iter()
            .zip(&layouts)
            .zip(&bases)
            .map(|((b, l), base)| {
                let sink = MemorySink::new(workload.result_labels());
                Context::new(b, l, Delivery::passthrough(Box::new(sink)))
                    .unwrap()
                    .with_slot_base(*base)
            })
            .collect(),
        stages: backends
            .iter()
            .enumerate()
            .map(|(i, b)| build(b, workload, i, JobMode::Streaming).unwrap())
            .collect(),
        read: vec![0; ops.len()],
    };
    let mut truth: Oracle = oracle(workload);
    let mut now = i64::MIN;
    let mut wm = i64::MIN;
    for (i, e) in events.iter().enumerate() {
        now = now.max(e.event_time);
        for c in &mut chain.ctxs {
            c.set_now(now);
        }
        truth.on_event(e, now);
        chain.push(0, vec![*e], now);
        let w = now - 1_000;
        if i % 16 == 15 && w > wm {
            wm = w;
            chain.advance(wm, now);
            truth.on_watermark(wm);
        }
    }
    chain.advance(i64::MAX, now);
    let end = truth.all_expired();
    let mut results = Vec::new();
    for c in &mut chain.ctxs {
        results.extend(c.sink.sink_mut().read_all().unwrap());
    }
    let compared = results.len() as u64;
    (end.compare(results), compared, chain.read)
}

/// A record of key `user` at `t` with a value of `size` bytes.
pub fn event(user: u64, t: i64, size: u32) -> Event {
    Event {
        user,
        event_time: t,
        partition: 0,
        offset: 0,
        append_time: t,
        value_size: size,
        input: 0,
    }
}

/// The generator's first `n` records of `workload`.
pub fn events(workload: &Workload, n: usize) -> Vec<Event> {
    Generator::new(workload).take(n).collect()
}

/// What one call did to RocksDB: (gets, puts, deletes, merges, seeks, nexts, batch entries).
pub fn delta(before: AccessCounters, after: AccessCounters) -> [u64; 7] {
    [
        after.gets - before.gets,
        after.puts - before.puts,
        after.deletes - before.deletes,
        after.merges - before.merges,
        after.iterator_seeks - before.iterator_seeks,
        after.iterator_nexts - before.iterator_nexts,
        after.batch_entries - before.batch_entries,
    ]
}

/// The raw RocksDB value of `key` in column family `cf`.
pub fn raw(rig: &Rig, cf: &str, key: &[u8]) -> Option<Vec<u8>> {
    let cf = rig.backend.cf(cf).unwrap();
    rig.backend.db().get_cf(cf, key).unwrap()
}

/// Flushes `cf` and compacts it whole (RocksDB's manual compaction runs the TTL filter).
pub fn compact(rig: &Rig, cf: &str) {
    let handle = rig.backend.cf(cf).unwrap();
    rig.backend.db().flush_cf(handle).unwrap();
    rig.backend
        .db()
        .compact_range_cf(handle, None::<&[u8]>, None::<&[u8]>);
}

/// Every key of `cf`.
pub fn keys(rig: &Rig, cf: &str) -> Vec<Vec<u8>> {
    let handle = rig.backend.cf(cf).unwrap();
    rig.backend
        .db()
        .iterator_cf(handle, rocksdb::IteratorMode::Start)
        .map(|kv| kv.unwrap().0.to_vec())
        .collect()
}
