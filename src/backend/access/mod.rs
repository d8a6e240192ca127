//! Counted, timed state access (the job's every RocksDB operation), the changelog of state
//! changes, and the job's operation counters.

use rocksdb::{AsColumnFamilyRef, ColumnFamily, ReadOptions, WriteBatchIteratorCf};

use super::memstore::MemStore;
use super::{BackendError, Batch, Cf, StateBackend, latency, oplog, perf};

mod changelog;

pub use crate::model::counters::{AccessCounters, CfOps, plus_cf_ops};
pub use changelog::{ChangeLog, replay_changelog};

/// Counted, timed state access: every get/put the job does goes through here (each counted,
/// one in four timed: see `latency::TIME_ONE_ACCESS_IN`).
pub struct StateAccess<'a> {
    backend: &'a StateBackend,
    pub counters: AccessCounters,
    /// `counters` per column family, in the order of `StateBackend::column_families` (their
    /// sums are `counters`' fields; batch writes, empty ones and memtable switches are not a
    /// column family's).
    pub column_families: Vec<CfOps>,
    pub latency: latency::LatencyRecorder,
    /// Every operation also goes here, when the run records its state traffic.
    recorder: Option<oplog::OpRecorder>,
    /// With the changelog state backend: every state change since the last checkpoint.
    changelog: Option<ChangeLog>,
    /// The job's column families (`StateBackend::column_families`, in that order): each one's
    /// handle address and RocksDB id, to count operations per column family by index.
    cf_index: CfIndex,
    /// A preload's warm-up: the state lives here, not in RocksDB (see `in_memory`).
    mem: Option<MemStore>,
}

/// Finds a column family's index among the job's from its handle (a few pointer compares: a
/// job has a handful of column families) or from its RocksDB id (write-batch entries).
struct CfIndex {
    handles: Vec<usize>,
    ids: Vec<u32>,
}

impl CfIndex {
    fn new(backend: &StateBackend) -> CfIndex {
        let mut handles = Vec::new();
        let mut ids = Vec::new();
        for name in backend.column_families() {
            // A name the backend lists is one it opened; a missing one would count nowhere.
            if let Ok(cf) = backend.cf(name) {
                handles.push(cf.inner() as usize);
                // SAFETY: `cf` is a live handle of `backend`'s open database.
                ids.push(unsafe {
                    librocksdb_sys::rocksdb_column_family_handle_get_id(cf.inner())
                });
            }
        }
        CfIndex { handles, ids }
    }

    fn of(&self, cf: &ColumnFamily) -> Option<usize> {
        let handle = cf.inner() as usize;
        self.handles.iter().position(|h| *h == handle)
    }

    fn of_id(&self, id: u32) -> Option<usize> {
        self.ids.iter().position(|i| *i == id)
    }
}

/// Counts a write batch's entries per column family.
struct BatchByCf<'a> {
    index: &'a CfIndex,
    ops: &'a mut [CfOps],
    /// The column family of the batch's first entry, and the key and value bytes counted.
    first: Option<usize>,
    bytes: u64,
}

impl BatchByCf<'_> {
    fn entry(&mut self, cf_id: u32, bytes: usize) {
        if let Some(i) = self.index.of_id(cf_id)
            && let Some(ops) = self.ops.get_mut(i)
        {
            ops.batch_entries += 1;
            ops.put_bytes += bytes as u64;
            self.bytes += bytes as u64;
            self.first.get_or_insert(i);
        }
    }
}

/// Applies a write batch to a preload's in-memory state.
struct BatchIntoMemory<'a> {
    index: &'a CfIndex,
    mem: &'a mut MemStore,
}

impl WriteBatchIteratorCf for BatchIntoMemory<'_> {
    fn put_cf(&mut self, cf_id: u32, key: &[u8], value: &[u8]) {
        if let Some(i) = self.index.of_id(cf_id) {
            self.mem.put(i, key, value);
        }
    }

    fn delete_cf(&mut self, cf_id: u32, key: &[u8]) {
        if let Some(i) = self.index.of_id(cf_id) {
            self.mem.delete(i, key);
        }
    }

    fn merge_cf(&mut self, cf_id: u32, key: &[u8], value: &[u8]) {
        if let Some(i) = self.index.of_id(cf_id) {
            self.mem.merge(i, key, value);
        }
    }
}

impl WriteBatchIteratorCf for BatchByCf<'_> {
    fn put_cf(&mut self, cf_id: u32, key: &[u8], value: &[u8]) {
        self.entry(cf_id, key.len() + value.len());
    }

    fn delete_cf(&mut self, cf_id: u32, key: &[u8]) {
        self.entry(cf_id, key.len());
    }

    fn merge_cf(&mut self, cf_id: u32, key: &[u8], value: &[u8]) {
        self.entry(cf_id, key.len() + value.len());
    }
}

impl<'a> StateAccess<'a> {
    pub fn new(backend: &'a StateBackend) -> Self {
        let cf_index = CfIndex::new(backend);
        StateAccess {
            backend,
            counters: AccessCounters::default(),
            column_families: vec![CfOps::default(); cf_index.handles.len()],
            cf_index,
            latency: latency::LatencyRecorder::default(),
            recorder: None,
            changelog: None,
            mem: None,
        }
    }

    /// State access whose state lives in memory, not in `backend`'s RocksDB (a preload's
    /// warm-up: `MemStore`); `backend` only names the column families. Counted as RocksDB's.
    pub fn in_memory(backend: &'a StateBackend) -> Self {
        let mut access = StateAccess::new(backend);
        access.mem = Some(MemStore::new(access.cf_index.handles.len()));
        access
    }

    /// The in-memory state (None: this access works on RocksDB).
    pub fn memory(&self) -> Option<&MemStore> {
        self.mem.as_ref()
    }

    pub fn memory_mut(&mut self) -> Option<&mut MemStore> {
        self.mem.as_mut()
    }

    /// Takes the in-memory state, leaving an empty one (None: this access works on RocksDB).
    pub fn take_memory(&mut self) -> Option<MemStore> {
        let fresh = MemStore::new(self.cf_index.handles.len());
        self.mem.as_mut().map(|m| std::mem::replace(m, fresh))
    }

    /// The in-memory state and `cf`'s index in it; None when this access works on RocksDB.
    fn mem_at(
        &mut self,
        cf: &ColumnFamily,
    ) -> Result<Option<(usize, &mut MemStore)>, BackendError> {
        let Some(mem) = &mut self.mem else {
            return Ok(None);
        };
        let at = self
            .cf_index
            .of(cf)
            .ok_or_else(|| BackendError::MissingColumnFamily(format!("{:p}", cf.inner())))?;
        Ok(Some((at, mem)))
    }

    /// Column family `cf`'s counters (`cf` an index into `StateBackend::column_families`).
    fn cf(&mut self, cf: Option<usize>) -> Option<&mut CfOps> {
        cf.and_then(|i| self.column_families.get_mut(i))
    }

    /// Logs every state change from now on (the changelog state backend).
    pub fn enable_changelog(&mut self) {
        self.changelog.get_or_insert_with(ChangeLog::default);
    }

    /// The state changes since the last call; None without the changelog.
    pub fn take_changelog(&mut self) -> Option<Vec<u8>> {
        self.changelog.as_mut().map(ChangeLog::take)
    }

    /// Bytes of state changes logged so far.
    pub fn changelog_bytes(&self) -> Option<u64> {
        self.changelog.as_ref().map(|c| c.total_bytes)
    }

    /// Records every operation from now on (`statebench run --record-ops`).
    pub fn record_to(&mut self, recorder: oplog::OpRecorder) {
        self.recorder = Some(recorder);
    }

    /// Marks where the job's timed span begins or ends in the recording, if there is one.
    pub fn mark(&mut self, mark: oplog::Mark) -> Result<(), BackendError> {
        match &mut self.recorder {
            Some(r) => r.mark(mark),
            None => Ok(()),
        }
    }

    /// Ends the recording, if there is one, writing out what is buffered.
    pub fn finish_recording(&mut self) -> Result<(), BackendError> {
        match self.recorder.take() {
            Some(r) => r.finish(),
            None => Ok(()),
        }
    }

    /// The job's processing time (ms), for the TTL compaction filter.
    pub fn set_processing_time(&mut self, now: i64) {
        if let Some(r) = &mut self.recorder {
            r.now(now);
        }
        self.backend.set_processing_time(now);
    }

    /// Point lookup; `f` sees the value while it is pinned (Flink deserializes right away).
    pub fn get<T>(
        &mut self,
        cf: &Cf,
        key: &[u8],
        f: impl FnOnce(&[u8]) -> Result<T, BackendError>,
    ) -> Result<Option<T>, BackendError> {
        let cf = cf.raw();
        if let Some(r) = &mut self.recorder {
            r.get(cf, key)?;
        }
        if let Some((at, mem)) = self.mem_at(cf)? {
            let found = mem.get(at, key);
            let size = found.map(|v| v.len());
            let value = found.map(f).transpose();
            self.counters.gets += 1;
            if let Some(c) = self.column_families.get_mut(at) {
                c.count_get(size);
            }
            return value;
        }
        let start = self.latency.start_sampled();
        let value = self
            .backend
            .db
            .get_pinned_cf_opt(cf, key, &self.backend.read_opts)?;
        self.latency.stop_sampled(latency::Op::Get, start);
        self.counters.gets += 1;
        if let Some(c) = self.cf(self.cf_index.of(cf)) {
            c.count_get(value.as_ref().map(|v| v.len()));
        }
        value.map(|v| f(&v)).transpose()
    }

    /// What FRocksDB 6.20 does at the start of every write (see `SharedMemory`).
    fn before_write(&mut self) {
        if self.backend.before_write() {
            self.counters.pending_flush_switches += 1;
        }
    }

    pub fn put(&mut self, cf: &Cf, key: &[u8], value: &[u8]) -> Result<(), BackendError> {
        let cf = cf.raw();
        if let Some(r) = &mut self.recorder {
            r.put(cf, key, value)?;
        }
        if let Some(log) = &mut self.changelog {
            log.current.put_cf(cf, key, value);
        }
        if let Some((at, m)) = self.mem_at(cf)? {
            m.put(at, key, value);
        } else {
            let start = self.latency.start_sampled();
            self.before_write();
            self.backend
                .db
                .put_cf_opt(cf, key, value, &self.backend.write_opts)?;
            self.latency.stop_sampled(latency::Op::Put, start);
        }
        self.counters.puts += 1;
        self.counters.put_bytes += (key.len() + value.len()) as u64;
        if let Some(c) = self.cf(self.cf_index.of(cf)) {
            c.puts += 1;
            c.put_bytes += (key.len() + value.len()) as u64;
        }
        Ok(())
    }

    pub fn delete(&mut self, cf: &Cf, key: &[u8]) -> Result<(), BackendError> {
        let cf = cf.raw();
        if let Some(r) = &mut self.recorder {
            r.delete(cf, key)?;
        }
        if let Some(log) = &mut self.changelog {
            log.current.delete_cf(cf, key);
        }
        if let Some((at, m)) = self.mem_at(cf)? {
            m.delete(at, key);
        } else {
            let start = self.latency.start_sampled();
            self.before_write();
            self.backend
                .db
                .delete_cf_opt(cf, key, &self.backend.write_opts)?;
            self.latency.stop_sampled(latency::Op::Put, start);
        }
        self.counters.deletes += 1;
        if let Some(c) = self.cf(self.cf_index.of(cf)) {
            c.deletes += 1;
        }
        Ok(())
    }

    /// RocksDB merge of `value` into `key` (Flink's ListState `add`: the merge operator joins
    /// the operands with ',' when the value is read).
    pub fn merge(&mut self, cf: &Cf, key: &[u8], value: &[u8]) -> Result<(), BackendError> {
        let cf = cf.raw();
        if let Some(r) = &mut self.recorder {
            r.merge(cf, key, value)?;
        }
        if let Some(log) = &mut self.changelog {
            log.current.merge_cf(cf, key, value);
        }
        if let Some((at, m)) = self.mem_at(cf)? {
            m.merge(at, key, value);
        } else {
            let start = self.latency.start_sampled();
            self.before_write();
            self.backend
                .db
                .merge_cf_opt(cf, key, value, &self.backend.write_opts)?;
            self.latency.stop_sampled(latency::Op::Put, start);
        }
        self.counters.merges += 1;
        self.counters.put_bytes += (key.len() + value.len()) as u64;
        if let Some(c) = self.cf(self.cf_index.of(cf)) {
            c.merges += 1;
            c.put_bytes += (key.len() + value.len()) as u64;
        }
        Ok(())
    }

    /// Iterates `cf` from `seek_to` (which starts with `prefix`) over the keys that start with
    /// `prefix`, calling `each(key, value)` for up to `limit` of them; true when more follow.
    /// One seek, then one next per entry, as a RocksDB iterator does (Flink's map iteration).
    pub fn iterate_prefix(
        &mut self,
        cf: &Cf,
        prefix: &[u8],
        seek_to: &[u8],
        limit: usize,
        mut each: impl FnMut(&[u8], &[u8]) -> Result<(), BackendError>,
    ) -> Result<bool, BackendError> {
        let cf = cf.raw();
        if let Some(r) = &mut self.recorder {
            r.iterate(cf, prefix, seek_to, limit)?;
        }
        let at = self.cf_index.of(cf);
        self.counters.iterator_seeks += 1;
        if let Some(c) = self.cf(at) {
            c.iterator_seeks += 1;
        }
        if let Some((index, mem)) = self.mem_at(cf)? {
            let (seen, more) = mem.scan(index, prefix, seek_to, limit, each)?;
            self.counters.iterator_nexts += seen;
            if let Some(c) = self.cf(at) {
                c.iterator_nexts += seen;
            }
            return Ok(more);
        }
        let mut iter = self
            .backend
            .db
            .raw_iterator_cf_opt(cf, ReadOptions::default());
        iter.seek(seek_to);
        let mut seen = 0;
        while iter.valid() {
            let (Some(key), Some(value)) = (iter.key(), iter.value()) else {
                break;
            };
            if !key.starts_with(prefix) {
                break;
            }
            if seen == limit {
                return Ok(true);
            }
            each(key, value)?;
            seen += 1;
            iter.next();
            self.counters.iterator_nexts += 1;
            if let Some(c) = self.cf(at) {
                c.iterator_nexts += 1;
            }
        }
        iter.status()?;
        Ok(false)
    }

    /// Adds a put to `batch`, to be written with it by [`StateAccess::write_batch`]; on a
    /// preload's in-memory state (nothing recorded or logged) applied at once instead, as
    /// writing the batch would apply it: a timer queue's writes built a RocksDB batch only to
    /// read it back into memory (a quarter of `ads-days`' timer registrations' CPU).
    pub fn batch_put(&mut self, batch: &mut Batch, cf: &Cf, key: &[u8], value: &[u8]) {
        match self.applies_batches_at_once(cf) {
            Some((at, mem)) => {
                mem.put(at, key, value);
                self.counters.batch_entries += 1;
            }
            None => batch.put_cf(cf, key, value),
        }
    }

    /// A delete for `batch`, as [`StateAccess::batch_put`] adds a put.
    pub fn batch_delete(&mut self, batch: &mut Batch, cf: &Cf, key: &[u8]) {
        match self.applies_batches_at_once(cf) {
            Some((at, mem)) => {
                mem.delete(at, key);
                self.counters.batch_entries += 1;
            }
            None => batch.delete_cf(cf, key),
        }
    }

    /// The in-memory state and `cf`'s index in it, where a batch's writes apply at once:
    /// nothing records or logs whole batches.
    fn applies_batches_at_once(&mut self, cf: &Cf) -> Option<(usize, &mut MemStore)> {
        if self.recorder.is_some() || self.changelog.is_some() {
            return None;
        }
        let at = self.cf_index.of(cf.raw())?;
        self.mem.as_mut().map(|m| (at, m))
    }

    /// Writes `batch`, even an empty one (Flink's batch wrapper does, and RocksDB counts it:
    /// a write, 12 header bytes, a WriteBufferManager check); empty writes are counted apart.
    pub fn write_batch(&mut self, batch: Batch) -> Result<(), BackendError> {
        let batch = batch.0;
        if let Some(r) = &mut self.recorder {
            r.batch(&batch)?;
        }
        if let Some(log) = &mut self.changelog
            && !batch.is_empty()
        {
            log.seal();
            log.push(batch.data());
        }
        if let Some(mem) = &mut self.mem {
            let entries = batch.len() as u64;
            batch.iterate_cf(&mut BatchIntoMemory {
                index: &self.cf_index,
                mem,
            });
            if entries == 0 {
                self.counters.empty_batch_writes += 1;
            } else {
                self.counters.batch_writes += 1;
                self.counters.batch_entries += entries;
            }
            return Ok(());
        }
        if batch.is_empty() {
            self.before_write();
            self.backend.db.write_opt(batch, &self.backend.write_opts)?;
            self.counters.empty_batch_writes += 1;
            return Ok(());
        }
        let entries = batch.len() as u64;
        let bytes = batch.size_in_bytes() as u64;
        let mut by_cf = BatchByCf {
            index: &self.cf_index,
            ops: &mut self.column_families,
            first: None,
            bytes: 0,
        };
        batch.iterate_cf(&mut by_cf);
        if let Some(c) = by_cf.first.and_then(|i| by_cf.ops.get_mut(i)) {
            c.put_bytes += bytes.saturating_sub(by_cf.bytes);
        }
        let start = self.latency.start();
        self.before_write();
        self.backend.db.write_opt(batch, &self.backend.write_opts)?;
        self.latency.stop(latency::Op::BatchWrite, start);
        self.counters.batch_writes += 1;
        self.counters.batch_entries += entries;
        self.counters.put_bytes += bytes;
        Ok(())
    }

    /// Calls `f` with every key and value of `cf`, in key order (a full scan, not a lookup).
    pub fn for_each(
        &mut self,
        cf: &Cf,
        mut f: impl FnMut(&[u8], &[u8]) -> Result<(), BackendError>,
    ) -> Result<(), BackendError> {
        let cf = cf.raw();
        if let Some(r) = &mut self.recorder {
            r.for_each(cf)?;
        }
        let _not_a_lookup = perf::Suspended::new();
        self.counters.iterator_seeks += 1;
        if let Some(c) = self.cf(self.cf_index.of(cf)) {
            c.iterator_seeks += 1;
        }
        if let Some((index, mem)) = self.mem_at(cf)? {
            for (k, v) in mem.range_from(index, &[]) {
                f(k, v)?;
            }
            return Ok(());
        }
        let mut iter = self.backend.db.raw_iterator_cf(cf);
        iter.seek_to_first();
        while iter.valid() {
            if let (Some(k), Some(v)) = (iter.key(), iter.value()) {
                f(k, v)?;
            }
            iter.next();
        }
        Ok(iter.status()?)
    }

    /// Calls `each` with up to `limit` keys of `cf` that start with `prefix`, in key order, from
    /// `seek_to` on (`seek_to` must itself start with `prefix`); true when more follow. Block
    /// reads of this scan are kept out of the per-lookup perf counters.
    pub fn scan_prefix(
        &mut self,
        cf: &Cf,
        prefix: &[u8],
        seek_to: &[u8],
        limit: usize,
        mut each: impl FnMut(&[u8]),
    ) -> Result<bool, BackendError> {
        let cf = cf.raw();
        if let Some(r) = &mut self.recorder {
            r.scan(cf, prefix, seek_to, limit)?;
        }
        let _not_a_lookup = perf::Suspended::new();
        self.counters.iterator_seeks += 1;
        if let Some(c) = self.cf(self.cf_index.of(cf)) {
            c.iterator_seeks += 1;
        }
        if let Some((at, mem)) = self.mem_at(cf)? {
            let (_, more) = mem.scan(at, prefix, seek_to, limit, |k, _| {
                each(k);
                Ok::<(), BackendError>(())
            })?;
            return Ok(more);
        }
        let mut iter = self.backend.db.raw_iterator_cf(cf);
        iter.seek(seek_to);
        let mut seen = 0;
        while iter.valid() {
            let Some(key) = iter.key() else { break };
            if !key.starts_with(prefix) {
                break;
            }
            if seen == limit {
                return Ok(true);
            }
            each(key);
            seen += 1;
            iter.next();
        }
        iter.status()?;
        Ok(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Profile;
    use crate::model::layout::Layout;

    const VALUES: &str = "values";
    const LIST: &str = "list";
    const TIMERS: &str = "_timer_state/event_user-timers";

    /// Every counted field of the job's totals against the sum over its column families.
    fn sums(c: &AccessCounters, per_cf: &[CfOps]) -> [(u64, u64); 8] {
        let all = per_cf.iter().fold(CfOps::default(), |a, b| a.plus(b));
        [
            (c.gets, all.gets),
            (c.puts, all.puts),
            (c.deletes, all.deletes),
            (c.merges, all.merges),
            (c.batch_entries, all.batch_entries),
            (c.iterator_seeks, all.iterator_seeks),
            (c.iterator_nexts, all.iterator_nexts),
            (c.put_bytes, all.put_bytes),
        ]
    }

    #[test]
    fn operations_are_counted_per_column_family_and_sum_to_the_totals() {
        let dir = tempfile::tempdir().unwrap();
        let profile = Profile::load("flink-default").unwrap();
        // A value state, a list state (appended with merges) and a timer service.
        let layout = Layout::default()
            .state(VALUES, None, false)
            .state(LIST, None, true)
            .timer_service("user-timers");
        let backend = StateBackend::open_for(&dir.path().join("db"), &profile, &layout).unwrap();
        let names = backend.column_families().to_vec();
        let at = |name: &str| names.iter().position(|n| n == name).unwrap();
        let mut state = StateAccess::new(&backend);
        let values = backend.cf(VALUES).unwrap();
        let list = backend.cf(LIST).unwrap();
        let timers = backend.cf(TIMERS).unwrap();
        for i in 0..10u32 {
            let key = i.to_be_bytes();
            state.get(values, &key, |v| Ok(v.len())).unwrap();
            state.put(values, &key, b"value").unwrap();
        }
        state.delete(values, &3u32.to_be_bytes()).unwrap();
        state.merge(list, b"k", b"a").unwrap();
        state.merge(list, b"k", b"b").unwrap();
        state.get(list, b"k", |v| Ok(v.len())).unwrap();
        // A batch over two column families, and an empty one (no column family's).
        let mut batch = Batch::default();
        batch.put_cf(timers, b"t1", []);
        batch.put_cf(timers, b"t2", []);
        batch.delete_cf(timers, b"t0");
        batch.put_cf(list, b"x", b"yz");
        state.write_batch(batch).unwrap();
        state.write_batch(Batch::default()).unwrap();
        state.scan_prefix(timers, b"t", b"t", 10, |_| {}).unwrap();
        state
            .iterate_prefix(values, b"", b"", 4, |_, _| Ok(()))
            .unwrap();
        state.for_each(list, |_, _| Ok(())).unwrap();

        let c = &state.counters;
        let per_cf = &state.column_families;
        assert_eq!(per_cf.len(), names.len());
        for (total, sum) in sums(c, per_cf) {
            assert_eq!(total, sum);
        }
        let values_ops = per_cf[at(VALUES)];
        assert_eq!(
            (values_ops.gets, values_ops.puts, values_ops.deletes),
            (10, 10, 1)
        );
        assert_eq!(
            (values_ops.iterator_seeks, values_ops.iterator_nexts),
            (1, 4)
        );
        assert_eq!(values_ops.put_bytes, 10 * 9);
        let list_ops = per_cf[at(LIST)];
        assert_eq!(
            (
                list_ops.merges,
                list_ops.gets,
                list_ops.batch_entries,
                list_ops.iterator_seeks
            ),
            (2, 1, 1, 1)
        );
        let timer_ops = per_cf[at(TIMERS)];
        assert_eq!((timer_ops.batch_entries, timer_ops.iterator_seeks), (3, 1));
        assert_eq!(c.total(), per_cf.iter().map(CfOps::total).sum::<u64>());

        // A restarted attempt's counters add column family by column family.
        let twice = plus_cf_ops(per_cf, per_cf);
        for (total, sum) in sums(&c.plus(c), &twice) {
            assert_eq!(total, sum);
        }
        assert_eq!(twice[at(TIMERS)].batch_entries, 6);
        assert_eq!(plus_cf_ops(&[], per_cf), per_cf.to_vec());
    }
}
