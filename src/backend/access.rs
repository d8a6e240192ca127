//! Counted, timed state access (the job's every RocksDB operation), the changelog of state
//! changes, and the job's operation counters.

use rocksdb::{ColumnFamily, ReadOptions, WriteBatch};

use super::{BackendError, StateBackend, latency, oplog, perf};

/// Counted, timed state access: every get/put the job does goes through here (each counted,
/// one in four timed: see `latency::TIME_ONE_ACCESS_IN`).
pub struct StateAccess<'a> {
    backend: &'a StateBackend,
    pub counters: AccessCounters,
    pub latency: latency::LatencyRecorder,
    /// Every operation also goes here, when the run records its state traffic.
    recorder: Option<oplog::OpRecorder>,
    /// With the changelog state backend: every state change since the last checkpoint.
    changelog: Option<ChangeLog>,
}

/// State changes logged for the changelog state backend (Flink's DSTL): each entry is a RocksDB
/// write batch as RocksDB serializes it (column family ids are creation order, the same in a
/// restored database), with a u32 length before it. Puts and deletes gather in one batch until
/// the next timer batch or the checkpoint that takes the log.
#[derive(Default)]
pub struct ChangeLog {
    current: WriteBatch,
    segment: Vec<u8>,
    /// Bytes logged since the log was enabled.
    pub total_bytes: u64,
}

impl ChangeLog {
    fn seal(&mut self) {
        if !self.current.is_empty() {
            let batch = std::mem::take(&mut self.current);
            self.push(batch.data());
        }
    }

    fn push(&mut self, data: &[u8]) {
        self.segment
            .extend_from_slice(&(data.len() as u32).to_le_bytes());
        self.segment.extend_from_slice(data);
        self.total_bytes += 4 + data.len() as u64;
    }

    /// The changes logged since the last call.
    pub fn take(&mut self) -> Vec<u8> {
        self.seal();
        std::mem::take(&mut self.segment)
    }
}

/// Applies a changelog segment (see [`ChangeLog`]) to `backend`; returns the batches applied.
pub fn replay_changelog(backend: &StateBackend, segment: &[u8]) -> Result<u64, BackendError> {
    let mut rest = segment;
    let mut batches = 0;
    while !rest.is_empty() {
        let Some((len, tail)) = rest.split_first_chunk::<4>() else {
            return Err(BackendError::Changelog(format!(
                "{} stray bytes at the end of a segment",
                rest.len()
            )));
        };
        let len = u32::from_le_bytes(*len) as usize;
        if tail.len() < len {
            return Err(BackendError::Changelog(format!(
                "an entry of {len} bytes with {} left",
                tail.len()
            )));
        }
        let (data, next) = tail.split_at(len);
        backend
            .db
            .write_opt(WriteBatch::from_data(data), &backend.write_opts)?;
        batches += 1;
        rest = next;
    }
    Ok(batches)
}

/// RocksDB operations issued by the job (cumulative).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct AccessCounters {
    pub gets: u64,
    pub puts: u64,
    pub deletes: u64,
    /// Write batches committed (the timer service batches its writes like Flink's).
    pub batch_writes: u64,
    /// Empty batches written before timer-queue scans (as Flink's batch wrapper does).
    pub empty_batch_writes: u64,
    /// Entries written through batches (puts + deletes).
    pub batch_entries: u64,
    pub iterator_seeks: u64,
    /// Iterator steps after a seek (map iteration).
    pub iterator_nexts: u64,
    /// RocksDB merges (a ListState's appends).
    pub merges: u64,
    /// Bytes of keys and values the job handed to RocksDB in puts.
    pub put_bytes: u64,
    /// Memtables switched before a write because FRocksDB 6.20's WriteBufferManager would
    /// switch a column family whose flush is pending (RocksDB 11 skips it); target flink-1.20.
    pub pending_flush_switches: u64,
}

impl AccessCounters {
    /// The state operations a job issued: gets, puts, deletes and batched writes (what
    /// "RocksDB ops per event" counts).
    pub fn total(&self) -> u64 {
        self.gets + self.puts + self.deletes + self.merges + self.batch_entries
    }

    /// Field by field sum: a restarted job's operations on top of its earlier attempts'.
    pub fn plus(&self, o: &AccessCounters) -> AccessCounters {
        AccessCounters {
            gets: self.gets + o.gets,
            puts: self.puts + o.puts,
            deletes: self.deletes + o.deletes,
            batch_writes: self.batch_writes + o.batch_writes,
            empty_batch_writes: self.empty_batch_writes + o.empty_batch_writes,
            batch_entries: self.batch_entries + o.batch_entries,
            iterator_seeks: self.iterator_seeks + o.iterator_seeks,
            iterator_nexts: self.iterator_nexts + o.iterator_nexts,
            merges: self.merges + o.merges,
            put_bytes: self.put_bytes + o.put_bytes,
            pending_flush_switches: self.pending_flush_switches + o.pending_flush_switches,
        }
    }
}

impl<'a> StateAccess<'a> {
    pub fn new(backend: &'a StateBackend) -> Self {
        StateAccess {
            backend,
            counters: AccessCounters::default(),
            latency: latency::LatencyRecorder::default(),
            recorder: None,
            changelog: None,
        }
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
        cf: &ColumnFamily,
        key: &[u8],
        f: impl FnOnce(&[u8]) -> Result<T, BackendError>,
    ) -> Result<Option<T>, BackendError> {
        if let Some(r) = &mut self.recorder {
            r.get(cf, key)?;
        }
        let start = self.latency.start_sampled();
        let value = self
            .backend
            .db
            .get_pinned_cf_opt(cf, key, &self.backend.read_opts)?;
        self.latency.stop_sampled(latency::Op::Get, start);
        self.counters.gets += 1;
        value.map(|v| f(&v)).transpose()
    }

    /// What FRocksDB 6.20 does at the start of every write (see `SharedMemory`).
    fn before_write(&mut self) {
        if self.backend.before_write() {
            self.counters.pending_flush_switches += 1;
        }
    }

    pub fn put(&mut self, cf: &ColumnFamily, key: &[u8], value: &[u8]) -> Result<(), BackendError> {
        if let Some(r) = &mut self.recorder {
            r.put(cf, key, value)?;
        }
        if let Some(log) = &mut self.changelog {
            log.current.put_cf(cf, key, value);
        }
        let start = self.latency.start_sampled();
        self.before_write();
        self.backend
            .db
            .put_cf_opt(cf, key, value, &self.backend.write_opts)?;
        self.latency.stop_sampled(latency::Op::Put, start);
        self.counters.puts += 1;
        self.counters.put_bytes += (key.len() + value.len()) as u64;
        Ok(())
    }

    pub fn delete(&mut self, cf: &ColumnFamily, key: &[u8]) -> Result<(), BackendError> {
        if let Some(r) = &mut self.recorder {
            r.delete(cf, key)?;
        }
        if let Some(log) = &mut self.changelog {
            log.current.delete_cf(cf, key);
        }
        let start = self.latency.start_sampled();
        self.before_write();
        self.backend
            .db
            .delete_cf_opt(cf, key, &self.backend.write_opts)?;
        self.latency.stop_sampled(latency::Op::Put, start);
        self.counters.deletes += 1;
        Ok(())
    }

    /// RocksDB merge of `value` into `key` (Flink's ListState `add`: the merge operator joins
    /// the operands with ',' when the value is read).
    pub fn merge(
        &mut self,
        cf: &ColumnFamily,
        key: &[u8],
        value: &[u8],
    ) -> Result<(), BackendError> {
        if let Some(r) = &mut self.recorder {
            r.merge(cf, key, value)?;
        }
        if let Some(log) = &mut self.changelog {
            log.current.merge_cf(cf, key, value);
        }
        let start = self.latency.start_sampled();
        self.before_write();
        self.backend
            .db
            .merge_cf_opt(cf, key, value, &self.backend.write_opts)?;
        self.latency.stop_sampled(latency::Op::Put, start);
        self.counters.merges += 1;
        self.counters.put_bytes += (key.len() + value.len()) as u64;
        Ok(())
    }

    /// Iterates `cf` from `seek_to` (which starts with `prefix`) over the keys that start with
    /// `prefix`, calling `each(key, value)` for up to `limit` of them; true when more follow.
    /// One seek, then one next per entry, as a RocksDB iterator does (Flink's map iteration).
    pub fn iterate_prefix(
        &mut self,
        cf: &ColumnFamily,
        prefix: &[u8],
        seek_to: &[u8],
        limit: usize,
        mut each: impl FnMut(&[u8], &[u8]) -> Result<(), BackendError>,
    ) -> Result<bool, BackendError> {
        if let Some(r) = &mut self.recorder {
            r.iterate(cf, prefix, seek_to, limit)?;
        }
        self.counters.iterator_seeks += 1;
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
        }
        iter.status()?;
        Ok(false)
    }

    /// Writes `batch`, even an empty one (Flink's batch wrapper does, and RocksDB counts it:
    /// a write, 12 header bytes, a WriteBufferManager check); empty writes are counted apart.
    pub fn write_batch(&mut self, batch: WriteBatch) -> Result<(), BackendError> {
        if let Some(r) = &mut self.recorder {
            r.batch(&batch)?;
        }
        if let Some(log) = &mut self.changelog
            && !batch.is_empty()
        {
            log.seal();
            log.push(batch.data());
        }
        if batch.is_empty() {
            self.before_write();
            self.backend.db.write_opt(batch, &self.backend.write_opts)?;
            self.counters.empty_batch_writes += 1;
            return Ok(());
        }
        let entries = batch.len() as u64;
        let bytes = batch.size_in_bytes() as u64;
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
        cf: &ColumnFamily,
        mut f: impl FnMut(&[u8], &[u8]) -> Result<(), BackendError>,
    ) -> Result<(), BackendError> {
        if let Some(r) = &mut self.recorder {
            r.for_each(cf)?;
        }
        let _not_a_lookup = perf::Suspended::new();
        self.counters.iterator_seeks += 1;
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
        cf: &ColumnFamily,
        prefix: &[u8],
        seek_to: &[u8],
        limit: usize,
        mut each: impl FnMut(&[u8]),
    ) -> Result<bool, BackendError> {
        if let Some(r) = &mut self.recorder {
            r.scan(cf, prefix, seek_to, limit)?;
        }
        let _not_a_lookup = perf::Suspended::new();
        self.counters.iterator_seeks += 1;
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
