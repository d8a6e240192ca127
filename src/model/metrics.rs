//! The metric values RocksDB reports about itself, as plain data: tickers, block-cache hit
//! rates, stall causes, lookups' block reads, memory, the LSM's shape per column family, and the
//! job's operation counters. The backend samples them; snapshots, the summary, the advisor and
//! the UI read them.

use serde::{Deserialize, Serialize};

use super::counters::CfOps;

/// RocksDB's cumulative tickers that statebench reads.
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq, Eq, serde::Deserialize)]
#[serde(default)]
pub struct Tickers {
    pub block_cache_hit: u64,
    pub block_cache_miss: u64,
    pub filter_hit: u64,
    pub filter_miss: u64,
    pub index_hit: u64,
    pub index_miss: u64,
    pub data_hit: u64,
    pub data_miss: u64,
    pub bloom_useful: u64,
    pub bloom_full_positive: u64,
    pub bloom_full_true_positive: u64,
    pub keys_read: u64,
    pub keys_written: u64,
    /// Iterator seeks and nexts RocksDB counted (NUMBER_DB_SEEK / NUMBER_DB_NEXT; a Next is
    /// counted when its iterator is dropped).
    pub iterator_seeks: u64,
    pub iterator_nexts: u64,
    pub bytes_written: u64,
    pub bytes_read: u64,
    pub flush_write_bytes: u64,
    pub compact_write_bytes: u64,
    pub compact_read_bytes: u64,
    /// Entries a compaction filter dropped (COMPACTION_KEY_DROP_USER: Flink's TTL filter's).
    #[serde(default)]
    pub compaction_filter_drops: u64,
    pub stall_micros: u64,
    pub memtable_hit: u64,
    pub memtable_miss: u64,
    pub flushes: u64,
    pub compactions: u64,
    /// Internal entries iterators stepped over without returning them: tombstones and older
    /// versions of a key (`rocksdb.number.iter.skip`), and iterator steps
    /// (`rocksdb.number.db.next`).
    pub iter_skips: u64,
    pub db_nexts: u64,
    /// Flushes the WriteBufferManager forced (RocksDB's flush reason, from an event listener:
    /// its statistics do not say why), and the memtable data (keys and values) they wrote.
    pub wbm_flushes: u64,
    pub wbm_flush_data_bytes: u64,
}

impl Tickers {
    /// Field by field sum: the counts of a database reopened in the same run on top of those of
    /// its earlier openings.
    pub fn plus(&self, o: &Tickers) -> Tickers {
        self.zip(o, |a, b| a + b)
    }

    /// Field by field difference (none below zero): the counts since `o` was read.
    pub fn minus(&self, o: &Tickers) -> Tickers {
        self.zip(o, u64::saturating_sub)
    }

    fn zip(&self, o: &Tickers, op: impl Fn(u64, u64) -> u64) -> Tickers {
        Tickers {
            block_cache_hit: op(self.block_cache_hit, o.block_cache_hit),
            block_cache_miss: op(self.block_cache_miss, o.block_cache_miss),
            filter_hit: op(self.filter_hit, o.filter_hit),
            filter_miss: op(self.filter_miss, o.filter_miss),
            index_hit: op(self.index_hit, o.index_hit),
            index_miss: op(self.index_miss, o.index_miss),
            data_hit: op(self.data_hit, o.data_hit),
            data_miss: op(self.data_miss, o.data_miss),
            bloom_useful: op(self.bloom_useful, o.bloom_useful),
            bloom_full_positive: op(self.bloom_full_positive, o.bloom_full_positive),
            bloom_full_true_positive: op(self.bloom_full_true_positive, o.bloom_full_true_positive),
            keys_read: op(self.keys_read, o.keys_read),
            keys_written: op(self.keys_written, o.keys_written),
            iterator_seeks: op(self.iterator_seeks, o.iterator_seeks),
            iterator_nexts: op(self.iterator_nexts, o.iterator_nexts),
            bytes_written: op(self.bytes_written, o.bytes_written),
            bytes_read: op(self.bytes_read, o.bytes_read),
            flush_write_bytes: op(self.flush_write_bytes, o.flush_write_bytes),
            compact_write_bytes: op(self.compact_write_bytes, o.compact_write_bytes),
            compact_read_bytes: op(self.compact_read_bytes, o.compact_read_bytes),
            compaction_filter_drops: op(self.compaction_filter_drops, o.compaction_filter_drops),
            stall_micros: op(self.stall_micros, o.stall_micros),
            memtable_hit: op(self.memtable_hit, o.memtable_hit),
            memtable_miss: op(self.memtable_miss, o.memtable_miss),
            flushes: op(self.flushes, o.flushes),
            compactions: op(self.compactions, o.compactions),
            iter_skips: op(self.iter_skips, o.iter_skips),
            db_nexts: op(self.db_nexts, o.db_nexts),
            wbm_flushes: op(self.wbm_flushes, o.wbm_flushes),
            wbm_flush_data_bytes: op(self.wbm_flush_data_bytes, o.wbm_flush_data_bytes),
        }
    }
}

/// Hits and misses in one interval and the resulting rate (None when there were no accesses).
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq, serde::Deserialize)]
#[serde(default)]
pub struct HitRate {
    pub hits: u64,
    pub misses: u64,
    pub rate: Option<f64>,
}

impl HitRate {
    pub fn new(hits: u64, misses: u64) -> HitRate {
        let total = hits + misses;
        HitRate {
            hits,
            misses,
            rate: (total > 0).then(|| hits as f64 / total as f64),
        }
    }
}

#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq, serde::Deserialize)]
#[serde(default)]
pub struct CacheHitRates {
    pub overall: HitRate,
    pub filter: HitRate,
    pub index: HitRate,
    pub data: HitRate,
}

impl CacheHitRates {
    pub fn from_tickers(t: &Tickers) -> CacheHitRates {
        CacheHitRates {
            overall: HitRate::new(t.block_cache_hit, t.block_cache_miss),
            filter: HitRate::new(t.filter_hit, t.filter_miss),
            index: HitRate::new(t.index_hit, t.index_miss),
            data: HitRate::new(t.data_hit, t.data_miss),
        }
    }
}

/// Write stall counts by cause, from cfstats' "Write Stall (count)" summed over column families.
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq, Eq, serde::Deserialize)]
#[serde(default)]
pub struct StallCauses {
    pub memtable_limit_delays: u64,
    pub memtable_limit_stops: u64,
    pub l0_file_count_delays: u64,
    pub l0_file_count_stops: u64,
    pub pending_compaction_bytes_delays: u64,
    pub pending_compaction_bytes_stops: u64,
}

impl StallCauses {
    pub fn plus(&self, o: &StallCauses) -> StallCauses {
        StallCauses {
            memtable_limit_delays: self.memtable_limit_delays + o.memtable_limit_delays,
            memtable_limit_stops: self.memtable_limit_stops + o.memtable_limit_stops,
            l0_file_count_delays: self.l0_file_count_delays + o.l0_file_count_delays,
            l0_file_count_stops: self.l0_file_count_stops + o.l0_file_count_stops,
            pending_compaction_bytes_delays: self.pending_compaction_bytes_delays
                + o.pending_compaction_bytes_delays,
            pending_compaction_bytes_stops: self.pending_compaction_bytes_stops
                + o.pending_compaction_bytes_stops,
        }
    }

    pub fn total(&self) -> u64 {
        self.memtable_limit_delays
            + self.memtable_limit_stops
            + self.l0_file_count_delays
            + self.l0_file_count_stops
            + self.pending_compaction_bytes_delays
            + self.pending_compaction_bytes_stops
    }
}

#[derive(Debug, Clone, Default, Serialize, PartialEq, serde::Deserialize)]
#[serde(default)]
pub struct StallSample {
    /// Microseconds writers were stalled in this interval (StallMicros ticker).
    pub micros: u64,
    /// Share of the interval's wall time spent stalled.
    pub share: f64,
    /// Cumulative stall counts by cause.
    pub causes: StallCauses,
    pub write_stopped: bool,
    /// Delayed write rate in bytes/s while slowed down (0 when not).
    pub delayed_write_rate: u64,
}

/// Block reads per point lookup on the operator thread (perf context), in one interval.
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq, serde::Deserialize)]
#[serde(default)]
pub struct LookupSample {
    pub lookups: u64,
    pub filter_block_reads: u64,
    pub index_block_reads: u64,
    pub filter_bytes_read: u64,
    pub index_bytes_read: u64,
    pub data_bytes_read: u64,
    pub bytes_read: u64,
    pub filter_block_reads_per_lookup: f64,
    pub index_block_reads_per_lookup: f64,
    pub filter_bytes_read_per_lookup: f64,
    pub index_bytes_read_per_lookup: f64,
    pub bytes_read_per_lookup: f64,
}

#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq, serde::Deserialize)]
#[serde(default)]
pub struct BloomSample {
    /// Lookups a bloom filter answered "not here" (saved a data block read).
    pub useful: u64,
    pub full_positive: u64,
    pub full_true_positive: u64,
}

#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq, serde::Deserialize)]
#[serde(default)]
pub struct MemorySample {
    /// `memory.mode: unmanaged`: no shared budget; the block cache figures sum every column
    /// family's own cache, and memtables are not charged to them.
    pub unshared: bool,
    pub memtable_bytes: u64,
    pub wbm_usage: u64,
    pub wbm_capacity: u64,
    /// Includes the memtables the WriteBufferManager charges to the cache (not when unshared).
    pub block_cache_usage: u64,
    pub block_cache_capacity: u64,
    pub block_cache_pinned: u64,
    /// `rocksdb.estimate-table-readers-mem`, summed over column families: index and filter
    /// blocks held outside the block cache (with Flink's managed memory they are in it, and
    /// this stays small).
    pub table_readers_bytes: u64,
    /// The whole process's memory: what a container limit sees.
    pub process: ProcessMemory,
}

impl MemorySample {
    /// RocksDB's own memory accounting: the block cache (with the memtables the
    /// WriteBufferManager charges to it, or beside it when unshared) and the table readers.
    pub fn rocksdb_bytes(&self) -> u64 {
        let memtables = if self.unshared {
            self.memtable_bytes
        } else {
            0
        };
        self.block_cache_usage + memtables + self.table_readers_bytes
    }
}

#[derive(Debug, Clone, Default, Serialize, PartialEq, serde::Deserialize)]
#[serde(default)]
pub struct LevelSample {
    pub level: u32,
    pub files: u64,
    pub bytes: u64,
    /// RocksDB's compaction score (cfstats; above 1 the level is due for compaction). Per
    /// column family only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub score: Option<f64>,
    /// Files of the level being compacted now (cfstats' "2/1": 1 of 2). RocksDB's L0 score
    /// counts only the others, so it drops while L0 compacts.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub compacting: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

pub(super) fn is_zero_usize(n: &usize) -> bool {
    *n == 0
}

#[derive(Debug, Clone, Default, Serialize, PartialEq, serde::Deserialize)]
#[serde(default)]
pub struct ColumnFamilyLsm {
    pub name: String,
    /// The operator whose RocksDB instance holds it (0 for a single operator).
    #[serde(skip_serializing_if = "is_zero_usize")]
    pub operator: usize,
    pub levels: Vec<LevelSample>,
    pub memtable_bytes: u64,
    pub estimated_keys: u64,
    /// The state's TTL (ms), if it has one, and whether Flink's compaction filter cleans it.
    pub ttl_ms: Option<i64>,
    pub ttl_compaction_filter: bool,
    /// The job's cumulative operations on this column family (`AccessCounters`'s, every
    /// attempt of the job in this process).
    pub ops: CfOps,
    /// A column family that holds no data (a processing-time timer queue nothing registers in),
    /// listed for the operations on it alone: not one of the states sharing the WBM.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub ops_only: bool,
}

#[derive(Debug, Clone, Default, Serialize, PartialEq, serde::Deserialize)]
#[serde(default)]
pub struct LsmSample {
    /// Files and bytes per level, summed over column families (levels with files only).
    pub levels: Vec<LevelSample>,
    pub column_families: Vec<ColumnFamilyLsm>,
    /// The most L0 files of any column family (the number the L0 triggers look at).
    pub l0_files: u64,
    /// Levels that hold files, L0 included, in the fullest column family.
    pub active_levels: u32,
    pub live_sst_bytes: u64,
    pub pending_compaction_bytes: u64,
    pub running_flushes: u64,
    pub running_compactions: u64,
    /// Cumulative completed flushes and compactions.
    pub flushes: u64,
    pub compactions: u64,
}

#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq, serde::Deserialize)]
#[serde(default)]
pub struct IoSample {
    /// Cumulative bytes the job wrote (RocksDB's BytesWritten).
    pub user_bytes_written: u64,
    pub flush_bytes_written: u64,
    pub compaction_bytes_written: u64,
    pub compaction_bytes_read: u64,
    /// (flush + compaction bytes written) / user bytes written, cumulative.
    pub write_amplification: f64,
}

/// Everything RocksDB said about itself in one interval.
#[derive(Debug, Clone, Default, Serialize, PartialEq, serde::Deserialize)]
#[serde(default)]
pub struct RocksDbSample {
    pub stall: StallSample,
    /// Block cache hit rates in this interval.
    pub cache: CacheHitRates,
    pub lookups: LookupSample,
    pub bloom: BloomSample,
    pub memory: MemorySample,
    pub lsm: LsmSample,
    pub io: IoSample,
    /// Cumulative tickers, for cross-checks against the job's own counters.
    pub tickers: Tickers,
    /// Bloom bits per key measured in window-stats' SST files (None: no SSTs or no filter).
    pub measured_bloom_bits_per_key: Option<f64>,
}

impl RocksDbSample {
    /// The sample with each column family's operations: `ops[i]` are those on `names[i]`
    /// (`StateAccess::column_families` and `StateBackend::column_families`). A column family
    /// that holds no data but was operated on (a scanned empty timer queue) is listed after the
    /// others, `ops_only`, so that the listed operations are all of the job's.
    /// `operator`: the chain's operator whose instance holds them (0 for a single operator).
    pub fn with_state_ops(
        mut self,
        operator: usize,
        names: &[String],
        ops: &[CfOps],
    ) -> RocksDbSample {
        for (name, o) in names.iter().zip(ops) {
            let cfs = &mut self.lsm.column_families;
            match cfs
                .iter_mut()
                .find(|c| c.operator == operator && c.name == *name)
            {
                Some(cf) => cf.ops = *o,
                None if *o != CfOps::default() => cfs.push(ColumnFamilyLsm {
                    operator,
                    name: name.clone(),
                    ops: *o,
                    ops_only: true,
                    ..ColumnFamilyLsm::default()
                }),
                None => {}
            }
        }
        self
    }
}

/// Latency percentiles in microseconds.
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq, serde::Deserialize)]
#[serde(default)]
pub struct Percentiles {
    pub count: u64,
    pub p50_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub max_us: f64,
}

/// Percentiles per kind of operation.
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq, serde::Deserialize)]
#[serde(default)]
pub struct Latencies {
    pub event_latency: Percentiles,
    pub get_latency: Percentiles,
    pub put_latency: Percentiles,
    pub batch_write_latency: Percentiles,
}

/// Resident memory now, bytes (0 where the system does not say). Not the kernel's `VmHWM`: that
/// peak lasts the process's lifetime, so a second run in one process (bench cases, reproduce's
/// fixed side, a restarted TUI run) would inherit the first one's; a run's peak is the largest
/// of its own samples.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(default)]
pub struct ProcessMemory {
    /// `VmRSS`.
    pub rss_bytes: u64,
}
