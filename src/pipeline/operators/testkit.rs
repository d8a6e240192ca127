//! Test rig for the valstate kinds: a backend opened with a kind's layout, its operator, a
//! memory sink, and the kind's oracle fed the same records.

use tempfile::TempDir;

use super::{Context, JobMode, KeyedOperator, Layout, build, layout, oracle};
use crate::backend::{AccessCounters, StateBackend};
use crate::config::job::OperatorSpec;
use crate::config::{Profile, Workload};
use crate::durability::delivery::Delivery;
use crate::durability::sink::MemorySink;
use crate::pipeline::oracle::{Oracle, ResultError};
use crate::pipeline::source::{Event, Generator};

pub struct Rig {
    pub _dir: TempDir,
    pub backend: StateBackend,
    pub layout: Layout,
    pub workload: Workload,
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

    pub fn ctx(&self) -> Context<'_> {
        let sink = MemorySink::new(self.workload.result_labels());
        Context::new(
            &self.backend,
            &self.layout,
            Delivery::passthrough(Box::new(sink)),
        )
        .unwrap()
    }

    pub fn op(&self) -> Box<dyn KeyedOperator<'_> + '_> {
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
