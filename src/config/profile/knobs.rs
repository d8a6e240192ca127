//! The knob table: every knob a profile may set, with its YAML key, how it is set in a Flink job
//! (its Flink key, an options factory's call, the job's code), its default, whether it can
//! change on an open database and what it does. One `knobs!` row per knob; the enum `Knob`, the
//! file's `ProfileSpec`, the effective `Knobs` and the table `KNOBS` are all generated from it.
//! The RocksDB options each knob sets are the rows of `options` that name it.

use serde::{Deserialize, Serialize};

use super::values::{
    CheckpointKind, CheckpointingMode, Compression, DeliveryGuarantee, IsolationLevel, KnobValue,
    MemoryMode,
};
use crate::config::flink_in::{FlinkValue, FromFlink};
use crate::config::target::Target;
use crate::config::timer_service::TimerFactory;
use crate::config::units::{ByteSize, Millis};

/// The bits per key Flink 1.20 forces whenever partitioned index/filters are on
/// (`RocksDBResourceContainer#overwriteFilterIfExist`), whatever `bloom-filter.bits-per-key` says.
pub const FLINK_PARTITIONED_BLOOM_BITS: f64 = 10.0;

/// Managed memory's Flink key (a slot's budget outside managed memory, `memory.mode:
/// fixed-per-slot`), from the knob table.
pub const FIXED_PER_SLOT_KEY: &str = match Knob::ManagedMemory.info().set_by {
    SetBy::Flink(key) => key,
    _ => panic!("memory.managed-size has a Flink key"),
};

/// Whether and how a knob changes an open database.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Live {
    /// Needs a reopen: the run restarts on the new profile.
    No,
    /// Resizes the shared block cache and WriteBufferManager (Flink's managed memory split).
    Memory,
    /// Column-family options set with SetOptions (the knob's `CFOptions` rows of `options`).
    ColumnFamily,
}

/// How a knob is set in a Flink job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetBy {
    /// Flink's configuration key.
    Flink(&'static str),
    /// The call a RocksDBOptionsFactory makes (RocksJava): Flink's configuration has no key.
    Factory(&'static str),
    /// Where the job's code or its deployment makes it (the sink, the checkpoint storage), not
    /// Flink's configuration.
    Job(&'static str),
    /// Flink's memory keys (`state.backend.rocksdb.memory.managed`, `fixed-per-slot`), which
    /// the export writes with managed memory.
    MemoryKeys,
    /// statebench's own: which RocksDB it imitates.
    Statebench,
}

impl SetBy {
    /// Flink's configuration key, if Flink has one.
    pub const fn flink_key(self) -> Option<&'static str> {
        match self {
            SetBy::Flink(key) => Some(key),
            _ => None,
        }
    }
}

/// What one knob is: its YAML key, how a Flink job sets it (the Flink key it maps to, if Flink
/// has one), whether it can change on an open database, and what it does.
#[derive(Debug)]
pub struct KnobInfo {
    pub knob: Knob,
    pub key: &'static str,
    /// `set_by`'s Flink key.
    pub flink_key: Option<&'static str>,
    pub set_by: SetBy,
    pub live: Live,
    pub doc: &'static str,
    /// What a valid value looks like.
    pub expects: &'static str,
    /// Its value in Flink's syntax (a Flink configuration's) as the profile writes it.
    pub from_flink: fn(&FlinkValue) -> Result<String, String>,
}

impl KnobInfo {
    pub fn is_live(&self) -> bool {
        self.live != Live::No
    }

    /// A setting of the job's sink or of the checkpoint store, not of RocksDB or Flink's
    /// configuration: deployed with the job's code, never by an options factory.
    pub fn is_job_setting(&self) -> bool {
        matches!(self.set_by, SetBy::Job(_))
    }
}

macro_rules! knobs {
    ($( #[doc = $doc:literal] $variant:ident $field:ident : $ty:ty = $default:expr, $key:literal, $set:expr, $live:expr; )*) => {
        /// A knob of a profile.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Knob {
            $( #[doc = $doc] $variant, )*
        }

        impl Knob {
            /// What this knob is (its row of `KNOBS`).
            pub const fn info(self) -> &'static KnobInfo {
                // KNOBS lists every variant in declaration order: the index is in range.
                &KNOBS[self as usize]
            }

            pub const fn key(self) -> &'static str {
                self.info().key
            }

            /// The knob whose YAML key is `key`.
            pub fn from_key(key: &str) -> Option<Knob> {
                KNOBS.iter().find(|k| k.key == key).map(|k| k.knob)
            }
        }

        /// A profile file as written: every knob optional, so `extends:` can fill the gaps.
        #[derive(Debug, Clone, Default, Deserialize)]
        #[serde(deny_unknown_fields)]
        pub struct ProfileSpec {
            /// Name or path of the profile this one starts from.
            pub extends: Option<String>,
            pub description: Option<String>,
            $( #[serde(rename = $key)] pub $field: Option<$ty>, )*
        }

        /// The effective value of every knob.
        #[derive(Debug, Clone, PartialEq, Serialize)]
        pub struct Knobs {
            $( #[serde(rename = $key)] pub $field: $ty, )*
        }

        impl Default for Knobs {
            fn default() -> Self {
                Knobs { $( $field: $default, )* }
            }
        }

        /// Every knob a profile may set, in file order.
        pub const KNOBS: &[KnobInfo] = &[ $( KnobInfo { knob: Knob::$variant, key: $key, flink_key: $set.flink_key(), set_by: $set, live: $live, doc: $doc, expects: <$ty as KnobValue>::EXPECTS, from_flink: <$ty as FromFlink>::from_flink }, )* ];

        impl ProfileSpec {
            /// Fills every knob this spec leaves unset from `parent`.
            pub(super) fn inherit(self, parent: ProfileSpec) -> ProfileSpec {
                ProfileSpec {
                    extends: parent.extends,
                    // A description says what this file is for: the parent's would mislabel it.
                    description: self.description,
                    $( $field: self.$field.or(parent.$field), )*
                }
            }

            /// The knobs this spec sets.
            pub(super) fn set_knobs(&self) -> Vec<Knob> {
                let mut set = Vec::new();
                $( if self.$field.is_some() { set.push(Knob::$variant); } )*
                set
            }

            pub(super) fn resolve(self) -> Knobs {
                let defaults = Knobs::default();
                Knobs { $( $field: self.$field.unwrap_or(defaults.$field), )* }
            }
        }

        impl ProfileSpec {
            pub(super) fn from_knobs(knobs: &Knobs) -> ProfileSpec {
                ProfileSpec {
                    extends: None,
                    description: None,
                    $( $field: Some(knobs.$field.clone()), )*
                }
            }
        }

        impl Knobs {
            /// `(key, value)` for every knob, values in YAML syntax.
            pub fn values(&self) -> Vec<(&'static str, String)> {
                vec![ $( ($key, self.$field.show()), )* ]
            }
        }
    };
}

knobs! {
    /// Managed memory per slot shared by the block cache and the WriteBufferManager.
    ManagedMemory managed_memory: ByteSize = ByteSize(64 << 20), "memory.managed-size", SetBy::Flink("state.backend.rocksdb.memory.fixed-per-slot"), Live::Memory;
    /// Share of managed memory for memtables (WriteBufferManager); the rest is block cache.
    WriteBufferRatio write_buffer_ratio: f64 = 0.5, "memory.write-buffer-ratio", SetBy::Flink("state.backend.rocksdb.memory.write-buffer-ratio"), Live::Memory;
    /// Share of the block cache kept for index and filter blocks (Flink builds its LRU cache with it).
    HighPrioPoolRatio high_prio_pool_ratio: f64 = 0.1, "memory.high-prio-pool-ratio", SetBy::Flink("state.backend.rocksdb.memory.high-prio-pool-ratio"), Live::No;
    /// Each column family's own block cache with memory.mode: unmanaged (Flink's default 8 MB); with a shared budget Flink replaces it by the slot's cache.
    BlockCacheSize block_cache_size: ByteSize = ByteSize(8 << 20), "block.cache-size", SetBy::Flink("state.backend.rocksdb.block.cache-size"), Live::No;
    /// Two-level index and partitioned bloom filters (Flink forces a 10-bit bloom with them).
    PartitionedIndexFilters partitioned_index_filters: bool = false, "memory.partitioned-index-filters", SetBy::Flink("state.backend.rocksdb.memory.partitioned-index-filters"), Live::No;
    /// Size of one memtable per column family.
    WriteBufferSize write_buffer_size: ByteSize = ByteSize(64 << 20), "writebuffer.size", SetBy::Flink("state.backend.rocksdb.writebuffer.size"), Live::ColumnFamily;
    /// Maximum memtables per column family (active + immutable).
    MaxWriteBufferNumber max_write_buffer_number: u32 = 2, "writebuffer.count", SetBy::Flink("state.backend.rocksdb.writebuffer.count"), Live::ColumnFamily;
    /// Immutable memtables merged into one flush.
    MinWriteBufferNumberToMerge min_write_buffer_number_to_merge: u32 = 1, "writebuffer.number-to-merge", SetBy::Flink("state.backend.rocksdb.writebuffer.number-to-merge"), Live::No;
    /// Bloom filter on the SST files of every state.
    UseBloomFilter use_bloom_filter: bool = false, "use-bloom-filter", SetBy::Flink("state.backend.rocksdb.use-bloom-filter"), Live::No;
    /// Bloom bits per key (ignored by Flink when partitioned index/filters are on).
    BloomBitsPerKey bloom_bits_per_key: f64 = 10.0, "bloom-filter.bits-per-key", SetBy::Flink("state.backend.rocksdb.bloom-filter.bits-per-key"), Live::No;
    /// Data block size.
    BlockSize block_size: ByteSize = ByteSize(4 << 10), "block.blocksize", SetBy::Flink("state.backend.rocksdb.block.blocksize"), Live::No;
    /// Partition size of partitioned index and filter blocks.
    MetadataBlockSize metadata_block_size: ByteSize = ByteSize(4 << 10), "block.metadata-blocksize", SetBy::Flink("state.backend.rocksdb.block.metadata-blocksize"), Live::No;
    /// O_DIRECT for user reads: no page cache behind the block cache.
    UseDirectReads use_direct_reads: bool = false, "use-direct-reads", SetBy::Factory("DBOptions.setUseDirectReads"), Live::No;
    /// O_DIRECT for flush and compaction I/O.
    UseDirectIoForFlushAndCompaction use_direct_io_for_flush_and_compaction: bool = false, "use-direct-io-for-flush-and-compaction", SetBy::Factory("DBOptions.setUseDirectIoForFlushAndCompaction"), Live::No;
    /// Target size of an SST file at level 1.
    TargetFileSizeBase target_file_size_base: ByteSize = ByteSize(64 << 20), "compaction.level.target-file-size-base", SetBy::Flink("state.backend.rocksdb.compaction.level.target-file-size-base"), Live::ColumnFamily;
    /// Target size of level 1 (the base level).
    MaxBytesForLevelBase max_bytes_for_level_base: ByteSize = ByteSize(256 << 20), "compaction.level.max-size-level-base", SetBy::Flink("state.backend.rocksdb.compaction.level.max-size-level-base"), Live::ColumnFamily;
    /// Size ratio between adjacent levels.
    MaxBytesForLevelMultiplier max_bytes_for_level_multiplier: f64 = 10.0, "compaction.level.multiplier", SetBy::Factory("ColumnFamilyOptions.setMaxBytesForLevelMultiplier"), Live::ColumnFamily;
    /// Size levels from the bottom up (level_compaction_dynamic_level_bytes).
    DynamicLevelBytes dynamic_level_bytes: bool = false, "compaction.level.use-dynamic-size", SetBy::Flink("state.backend.rocksdb.compaction.level.use-dynamic-size"), Live::No;
    /// Compression per level, L0 first; the last entry applies to all deeper levels.
    CompressionPerLevel compression_per_level: Vec<Compression> = vec![Compression::Snappy], "compression.per.level", SetBy::Flink("state.backend.rocksdb.compression.per.level"), Live::No;
    /// Background flush + compaction threads (max_background_jobs).
    BackgroundJobs background_jobs: u32 = 2, "thread.num", SetBy::Flink("state.backend.rocksdb.thread.num"), Live::No;
    /// SST files RocksDB keeps open, each with its table reader (max_open_files; -1: every file, Flink's default). A closed file is opened again on its next read, its index and filter read again unless the block cache holds them.
    MaxOpenFiles max_open_files: i32 = -1, "files.open", SetBy::Flink("state.backend.rocksdb.files.open"), Live::No;
    /// L0 file count at which writes are slowed down.
    Level0SlowdownWritesTrigger level0_slowdown_writes_trigger: u32 = 20, "compaction.level0-slowdown-writes-trigger", SetBy::Factory("ColumnFamilyOptions.setLevel0SlowdownWritesTrigger"), Live::ColumnFamily;
    /// L0 file count at which writes stop.
    Level0StopWritesTrigger level0_stop_writes_trigger: u32 = 36, "compaction.level0-stop-writes-trigger", SetBy::Factory("ColumnFamilyOptions.setLevel0StopWritesTrigger"), Live::ColumnFamily;
    /// Pending compaction bytes at which writes are slowed down.
    SoftPendingCompactionBytesLimit soft_pending_compaction_bytes_limit: ByteSize = ByteSize(64 << 30), "compaction.soft-pending-compaction-bytes-limit", SetBy::Factory("ColumnFamilyOptions.setSoftPendingCompactionBytesLimit"), Live::ColumnFamily;
    /// Pending compaction bytes at which writes stop.
    HardPendingCompactionBytesLimit hard_pending_compaction_bytes_limit: ByteSize = ByteSize(256 << 30), "compaction.hard-pending-compaction-bytes-limit", SetBy::Factory("ColumnFamilyOptions.setHardPendingCompactionBytesLimit"), Live::ColumnFamily;
    /// Flush + compaction write bandwidth per second (RocksDB's rate limiter): a slot's share of the disk; 0 = unlimited.
    IoRateLimit io_rate_limit: ByteSize = ByteSize(0), "io.rate-limit-per-sec", SetBy::Factory("DBOptions.setRateLimiter(new RateLimiter(bytesPerSecond))"), Live::No;
    /// Stop automatic compactions: L0 grows without bound (RocksDB then skips the L0 and pending-bytes stall conditions): a live experiment.
    DisableAutoCompactions disable_auto_compactions: bool = false, "compaction.disable-auto-compactions", SetBy::Factory("ColumnFamilyOptions.setDisableAutoCompactions"), Live::ColumnFamily;
    /// Where timers live: ROCKSDB (column families, a cache per key group) or HEAP (no RocksDB work; in checkpoints as raw keyed state).
    TimerServiceFactory timer_service_factory: TimerFactory = TimerFactory::RocksDb, "timer-service.factory", SetBy::Flink("state.backend.rocksdb.timer-service.factory"), Live::No;
    /// ROCKSDB timers: the smallest timers of each key group cached in memory (RocksDBCachingPriorityQueueSet).
    TimerServiceCacheSize timer_service_cache_size: u32 = 128, "timer-service.cache-size", SetBy::Flink("state.backend.rocksdb.timer-service.cache-size"), Live::No;
    /// Time between two checkpoints (wall clock); 0 = checkpointing off, Flink's default (the key unset).
    CheckpointInterval checkpoint_interval: Millis = Millis(0), "execution.checkpointing.interval", SetBy::Flink("execution.checkpointing.interval"), Live::No;
    /// Least time from one checkpoint's end to the next one's start.
    CheckpointMinPause checkpoint_min_pause: Millis = Millis(0), "execution.checkpointing.min-pause", SetBy::Flink("execution.checkpointing.min-pause"), Live::No;
    /// A checkpoint not complete after this long is declared failed.
    CheckpointTimeout checkpoint_timeout: Millis = Millis(600_000), "execution.checkpointing.timeout", SetBy::Flink("execution.checkpointing.timeout"), Live::No;
    /// Barrier alignment for operators with several inputs: EXACTLY_ONCE (aligned) or AT_LEAST_ONCE.
    CheckpointingMode checkpointing_mode: CheckpointingMode = CheckpointingMode::ExactlyOnce, "execution.checkpointing.mode", SetBy::Flink("execution.checkpointing.mode"), Live::No;
    /// Completed checkpoints kept in the checkpoint store (their shared files with them).
    CheckpointsRetained checkpoints_retained: u32 = 1, "execution.checkpointing.num-retained", SetBy::Flink("execution.checkpointing.num-retained"), Live::No;
    /// Checkpoint RocksDB's files (only new SST files uploaded) instead of writing every key.
    IncrementalCheckpoints incremental_checkpoints: bool = false, "execution.checkpointing.incremental", SetBy::Flink("execution.checkpointing.incremental"), Live::No;
    /// Log every state change: a checkpoint uploads the log since the last one; state is materialized periodically.
    ChangelogEnabled changelog_enabled: bool = false, "state.changelog.enabled", SetBy::Flink("state.changelog.enabled"), Live::No;
    /// Time between two materializations of the changelog backend's state (which truncate the log).
    ChangelogMaterializeInterval changelog_materialize_interval: Millis = Millis(600_000), "state.changelog.periodic-materialize.interval", SetBy::Flink("state.changelog.periodic-materialize.interval"), Live::No;
    /// Upload bandwidth to the checkpoint store (HDFS/S3 stand-in), per second; 0 = unlimited.
    CheckpointUploadRate checkpoint_upload_rate: ByteSize = ByteSize(0), "checkpoint.upload-rate-per-sec", SetBy::Job("the bandwidth to the checkpoint storage (HDFS/S3)"), Live::No;
    /// The sink's delivery guarantee (KafkaSink's): NONE, AT_LEAST_ONCE or EXACTLY_ONCE (two-phase commit).
    SinkDeliveryGuarantee sink_delivery_guarantee: DeliveryGuarantee = DeliveryGuarantee::None, "sink.delivery-guarantee", SetBy::Job("KafkaSink.builder().setDeliveryGuarantee(DeliveryGuarantee.…)"), Live::No;
    /// An EXACTLY_ONCE sink's transaction older than this when its checkpoint completes was aborted by the broker: its results are lost (Kafka's broker caps it at 15 minutes by default).
    SinkTransactionTimeout sink_transaction_timeout: Millis = Millis(900_000), "sink.transaction-timeout", SetBy::Job("the producer's transaction.timeout.ms (at most the broker's transaction.max.timeout.ms)"), Live::No;
    /// The serving store drops a result whose record id it already holds (an idempotent, deduplicating sink).
    SinkIdempotent sink_idempotent: bool = false, "sink.idempotent", SetBy::Job("an upserting sink keyed by record id (dedupe on write)"), Live::No;
    /// What the downstream reader sees: read_committed (committed transactions only) or read_uncommitted (Kafka's default).
    SinkReaderIsolation sink_reader_isolation: IsolationLevel = IsolationLevel::ReadUncommitted, "sink.reader-isolation", SetBy::Job("the downstream consumers' isolation.level"), Live::No;
    /// Whose RocksDB to reproduce: flink-1.20 (FRocksDB 6.20.3's effective options: arena, cache high-priority pool, checksum, format, TTL filter) or rocksdb-11.8 (RocksDB's own defaults, to measure the difference).
    Target target: Target = Target::Flink120, "target", SetBy::Statebench, Live::No;
    /// How Flink provides RocksDB's memory: managed (memory.managed-size of the slot's managed memory, Flink's default), fixed-per-slot (memory.managed-size outside managed memory: the TaskManager's off-heap memory must cover it; RocksDB gets the same cache and WriteBufferManager) or unmanaged (state.backend.rocksdb.memory.managed: false: a block cache of block.cache-size per column family, memtables with no WriteBufferManager, index and filters outside any cache, no budget).
    MemoryMode memory_mode: MemoryMode = MemoryMode::Managed, "memory.mode", SetBy::MemoryKeys, Live::No;
}

/// Whether RocksDB can change knob `key` on an open database (SetOptions, the cache's and the
/// WriteBufferManager's capacity); every other knob needs a reopen.
pub fn is_live(key: &str) -> bool {
    Knob::from_key(key).is_some_and(|k| k.info().is_live())
}

impl Knobs {
    /// Compression of LSM level `level`: the list's entry, or its last one for deeper levels.
    pub fn compression_for_level(&self, level: usize) -> Compression {
        self.compression_per_level
            .get(level)
            .or(self.compression_per_level.last())
            .copied()
            .unwrap_or(Compression::Snappy)
    }

    /// How checkpoints hold the state, or None when checkpointing is off.
    pub fn checkpoint_kind(&self) -> Option<CheckpointKind> {
        (self.checkpoint_interval.0 > 0).then_some(if self.changelog_enabled {
            CheckpointKind::Changelog
        } else if self.incremental_checkpoints {
            CheckpointKind::Incremental
        } else {
            CheckpointKind::Full
        })
    }

    /// Bloom bits per key RocksDB really gets: Flink forces 10 with partitioned index/filters.
    /// Whether Flink partitions index and filters: only with a shared budget.
    pub fn partitions_index_filters(&self) -> bool {
        self.partitioned_index_filters && self.memory_mode.is_shared()
    }

    pub fn effective_bloom_bits_per_key(&self) -> Option<f64> {
        self.use_bloom_filter
            .then_some(if self.partitions_index_filters() {
                FLINK_PARTITIONED_BLOOM_BITS
            } else {
                self.bloom_bits_per_key
            })
    }
}
