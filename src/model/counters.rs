//! What a job counts about itself: its RocksDB operations (in total and per column family), its
//! own counters, the sink's and the delivery's, its source offsets, and how far its results are
//! from the oracle's.

use serde::Serialize;

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

/// Counters the job keeps about itself (carried in checkpoints).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct JobCounters {
    pub events: u64,
    pub increments: u64,
    pub decrements: u64,
    /// Timers that found no timerState entry and so decremented nothing.
    pub missing_decrements: u64,
    /// timerState reads that found an entry whose TTL had expired (returned as null).
    pub expired_timer_state: u64,
    /// Decrements that took a count below zero (more -1 than +1: double firing, a bad restore).
    pub negative_counts: u64,
    /// Records the operator emitted (window results, join pairs, deduplicated records, ...).
    pub emitted: u64,
    /// Records dropped as late (behind the watermark by more than the allowed lateness).
    pub dropped_late: u64,
    /// State values read back expired (state TTL) and so treated as absent.
    pub expired_state: u64,
}

/// What happened to the records, as the reader saw it. Rebuilt from the journal on open: the
/// counts cover the journal's whole history, across restarts.
#[derive(Default, Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct DeliveryCounters {
    /// Records the job wrote.
    pub records_emitted: u64,
    /// Records that reached the reader, duplicates (dropped ones too) included.
    pub records_visible: u64,
    /// Records the reader received whose id it had received before.
    pub duplicates_seen: u64,
    /// Of those, dropped by the idempotent store.
    pub duplicates_dropped: u64,
    /// Transactions with records that committed.
    pub transactions_committed: u64,
    /// Transactions with records that were aborted (recovery).
    pub transactions_aborted: u64,
    /// Transactions dropped by the broker: older than the timeout when they were to commit.
    pub transactions_expired: u64,
    /// Records in aborted transactions (a replay emits them again).
    pub records_aborted: u64,
    /// Records in expired transactions: never visible to read_committed.
    pub records_lost: u64,
    /// Records in transactions neither committed nor aborted yet (open or pre-committed).
    pub pending_records: u64,
    /// Largest time from a transaction's start to its commit, over the records it made visible.
    pub visibility_delay_ms_max: u64,
    /// Sum of the visibility delays of `visibility_delay_records` records (0 for a record
    /// visible when written).
    pub visibility_delay_ms_sum: u64,
    pub visibility_delay_records: u64,
    /// The journal's length.
    pub journal_bytes: u64,
    /// fsyncs of the journal by this process.
    pub journal_syncs: u64,
    /// Bytes of a torn tail dropped when the journal was opened.
    pub journal_torn_bytes: u64,
}

/// How a set of results differs from the oracle.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(default)]
pub struct ResultError {
    /// (user, window) pairs counted higher than the truth.
    pub over: u64,
    /// Pairs counted lower than the truth (but present).
    pub under: u64,
    /// The largest absolute difference of any pair.
    pub max_abs: u64,
    /// Pairs with a true count above zero that the results do not have at all.
    pub missing: u64,
    /// Pairs compared.
    pub compared: u64,
}

impl ResultError {
    pub fn is_exact(&self) -> bool {
        self.over == 0 && self.under == 0 && self.missing == 0
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct SinkCounters {
    pub writes: u64,
    pub bytes: u64,
    /// Round trips (pipeline flushes) to the store.
    pub flushes: u64,
    /// Time spent waiting for the store's round trips, in microseconds.
    pub round_trip_micros: u64,
}

/// (user, window index, count): one result as the store holds it.
pub type Count = (u64, usize, i64);

/// Offsets per partition: the next record each reads (or the first it must not read).
pub type Offsets = Vec<u64>;

impl SinkCounters {
    /// What happened since `base` (an earlier reading of the same store).
    pub fn since(&self, base: &SinkCounters) -> SinkCounters {
        SinkCounters {
            writes: self.writes.saturating_sub(base.writes),
            bytes: self.bytes.saturating_sub(base.bytes),
            flushes: self.flushes.saturating_sub(base.flushes),
            round_trip_micros: self
                .round_trip_micros
                .saturating_sub(base.round_trip_micros),
        }
    }
}
