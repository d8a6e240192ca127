//! The job's RocksDB operation counters: in total and per column family.

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

/// Operations per column family (`StateAccess::column_families`): the job's `a` and `b`
/// (a restarted job's attempts), column family by column family.
pub fn plus_cf_ops(a: &[CfOps], b: &[CfOps]) -> Vec<CfOps> {
    (0..a.len().max(b.len()))
        .map(|i| {
            let at = |c: &[CfOps]| c.get(i).copied().unwrap_or_default();
            at(a).plus(&at(b))
        })
        .collect()
}

/// RocksDB operations on one column family (cumulative): `StateAccess::column_families`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct CfOps {
    pub gets: u64,
    pub puts: u64,
    pub deletes: u64,
    pub merges: u64,
    /// Write-batch entries (puts, deletes, merges) into this column family.
    pub batch_entries: u64,
    pub iterator_seeks: u64,
    pub iterator_nexts: u64,
    /// Bytes written: keys and values of puts and merges, and the write batches' bytes (a
    /// batch's header and record framing go to the column family of its first entry).
    pub put_bytes: u64,
    /// Bytes of the values point lookups returned (a ListState's `get`: the whole list, every
    /// merge operand applied).
    pub get_bytes: u64,
    /// Point lookups that found no value: the reads a bloom filter can answer without a data
    /// block.
    pub get_misses: u64,
}

impl CfOps {
    /// One point lookup, and the size of the value it found (`None`: not found).
    pub fn count_get(&mut self, found: Option<usize>) {
        self.gets += 1;
        match found {
            Some(len) => self.get_bytes += len as u64,
            None => self.get_misses += 1,
        }
    }

    /// The state operations (`AccessCounters::total` of this column family).
    pub fn total(&self) -> u64 {
        self.gets + self.puts + self.deletes + self.merges + self.batch_entries
    }

    /// Field by field sum.
    pub fn plus(&self, o: &CfOps) -> CfOps {
        CfOps {
            gets: self.gets + o.gets,
            puts: self.puts + o.puts,
            deletes: self.deletes + o.deletes,
            merges: self.merges + o.merges,
            batch_entries: self.batch_entries + o.batch_entries,
            iterator_seeks: self.iterator_seeks + o.iterator_seeks,
            iterator_nexts: self.iterator_nexts + o.iterator_nexts,
            put_bytes: self.put_bytes + o.put_bytes,
            get_bytes: self.get_bytes + o.get_bytes,
            get_misses: self.get_misses + o.get_misses,
        }
    }

    /// Field by field `self - before` (at least 0): the operations of an interval.
    pub fn since(&self, before: &CfOps) -> CfOps {
        CfOps {
            gets: self.gets.saturating_sub(before.gets),
            puts: self.puts.saturating_sub(before.puts),
            deletes: self.deletes.saturating_sub(before.deletes),
            merges: self.merges.saturating_sub(before.merges),
            batch_entries: self.batch_entries.saturating_sub(before.batch_entries),
            iterator_seeks: self.iterator_seeks.saturating_sub(before.iterator_seeks),
            iterator_nexts: self.iterator_nexts.saturating_sub(before.iterator_nexts),
            put_bytes: self.put_bytes.saturating_sub(before.put_bytes),
            get_bytes: self.get_bytes.saturating_sub(before.get_bytes),
            get_misses: self.get_misses.saturating_sub(before.get_misses),
        }
    }
}
