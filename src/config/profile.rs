//! RocksDB profiles: the tuning knobs of Flink's RocksDB state backend, with `extends:`
//! inheritance, human units, validation, and Flink's managed-memory derivation.

use std::path::Path;

use serde::{Deserialize, Serialize};

pub use super::derived::Derived;
use super::flink_in::{self, FlinkImport, FlinkValue, FromFlink};
use super::target::Target;
use super::timer_service::TimerFactory;
use super::units::{ByteSize, Millis};
use super::{ConfigError, Origin, locate, parse_yaml};

/// Profiles compiled into the binary, so `statebench run` works from any directory.
pub const BUILTIN: &[(&str, &str)] = &[
    (
        "flink-default",
        include_str!("../../profiles/flink-default.yaml"),
    ),
    (
        "minutes-wbm-starved",
        include_str!("../../profiles/minutes-wbm-starved.yaml"),
    ),
    (
        "minutes-wbm-sized",
        include_str!("../../profiles/minutes-wbm-sized.yaml"),
    ),
    (
        "hours-monolithic-filter",
        include_str!("../../profiles/hours-monolithic-filter.yaml"),
    ),
    (
        "hours-partitioned-filter",
        include_str!("../../profiles/hours-partitioned-filter.yaml"),
    ),
    (
        "hours-levels-default",
        include_str!("../../profiles/hours-levels-default.yaml"),
    ),
    (
        "hours-levels-sized",
        include_str!("../../profiles/hours-levels-sized.yaml"),
    ),
];

/// The bits per key Flink 1.20 forces whenever partitioned index/filters are on
/// (`RocksDBResourceContainer#overwriteFilterIfExist`), whatever `bloom-filter.bits-per-key` says.
pub const FLINK_PARTITIONED_BLOOM_BITS: f64 = 10.0;

/// Block compression for one LSM level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Compression {
    #[serde(alias = "NO_COMPRESSION")]
    None,
    #[serde(alias = "SNAPPY_COMPRESSION")]
    Snappy,
    #[serde(alias = "LZ4_COMPRESSION")]
    Lz4,
    #[serde(alias = "LZ4HC_COMPRESSION")]
    Lz4hc,
    #[serde(alias = "ZSTD_COMPRESSION")]
    Zstd,
    #[serde(alias = "ZLIB_COMPRESSION")]
    Zlib,
    #[serde(alias = "BZLIB2_COMPRESSION")]
    Bzip2,
}

impl Compression {
    /// The name RocksDB writes in its OPTIONS file.
    pub fn rocksdb_name(self) -> &'static str {
        match self {
            Compression::None => "kNoCompression",
            Compression::Snappy => "kSnappyCompression",
            Compression::Lz4 => "kLZ4Compression",
            Compression::Lz4hc => "kLZ4HCCompression",
            Compression::Zstd => "kZSTD",
            Compression::Zlib => "kZlibCompression",
            Compression::Bzip2 => "kBZip2Compression",
        }
    }
}

/// Display of a knob value in the same syntax the YAML accepts.
pub trait KnobValue {
    /// What a value of this type looks like, in a user's words.
    const EXPECTS: &'static str;
    fn show(&self) -> String;
}

impl KnobValue for ByteSize {
    const EXPECTS: &'static str = "a size such as 64mb, 512kb or 1gb";
    fn show(&self) -> String {
        self.to_string()
    }
}
impl KnobValue for bool {
    const EXPECTS: &'static str = "true or false";
    fn show(&self) -> String {
        self.to_string()
    }
}
impl KnobValue for u32 {
    const EXPECTS: &'static str = "a whole number such as 4";
    fn show(&self) -> String {
        self.to_string()
    }
}
impl KnobValue for f64 {
    const EXPECTS: &'static str = "a number such as 0.5";
    fn show(&self) -> String {
        format!("{self}")
    }
}
impl KnobValue for Target {
    const EXPECTS: &'static str = "flink-1.20 or rocksdb-11.8";
    fn show(&self) -> String {
        self.name().to_string()
    }
}
impl KnobValue for Vec<Compression> {
    const EXPECTS: &'static str =
        "a list of none, snappy, lz4, zstd per level, L0 first, such as [none, snappy, lz4]";
    fn show(&self) -> String {
        let names: Vec<String> = self
            .iter()
            .map(|c| format!("{c:?}").to_lowercase())
            .collect();
        format!("[{}]", names.join(", "))
    }
}

impl KnobValue for Millis {
    const EXPECTS: &'static str =
        "a duration such as 500ms, 10s or 2m (0 = off where the knob says so)";
    fn show(&self) -> String {
        self.to_string()
    }
}

/// Flink's `execution.checkpointing.mode`: whether an operator with several inputs aligns
/// the checkpoint barriers (exactly once) or lets the inputs whose barrier came run on past it
/// (at least once: their records after the barrier are replayed after a restore).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum CheckpointingMode {
    #[serde(
        rename = "EXACTLY_ONCE",
        alias = "exactly-once",
        alias = "exactly_once"
    )]
    ExactlyOnce,
    #[serde(
        rename = "AT_LEAST_ONCE",
        alias = "at-least-once",
        alias = "at_least_once"
    )]
    AtLeastOnce,
}

impl KnobValue for CheckpointingMode {
    const EXPECTS: &'static str = "EXACTLY_ONCE or AT_LEAST_ONCE";
    fn show(&self) -> String {
        match self {
            CheckpointingMode::ExactlyOnce => "EXACTLY_ONCE",
            CheckpointingMode::AtLeastOnce => "AT_LEAST_ONCE",
        }
        .to_string()
    }
}

/// The sink's delivery guarantee (Flink's `DeliveryGuarantee`, as KafkaSink takes it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum DeliveryGuarantee {
    /// Writes go out as they come; nothing is flushed at a checkpoint.
    #[serde(rename = "NONE", alias = "none")]
    None,
    /// Every write before a checkpoint's barrier is flushed before the checkpoint completes.
    #[serde(
        rename = "AT_LEAST_ONCE",
        alias = "at-least-once",
        alias = "at_least_once"
    )]
    AtLeastOnce,
    /// Two-phase commit: a transaction per checkpoint, pre-committed at its barrier and
    /// committed when it completes.
    #[serde(
        rename = "EXACTLY_ONCE",
        alias = "exactly-once",
        alias = "exactly_once"
    )]
    ExactlyOnce,
}

impl KnobValue for DeliveryGuarantee {
    const EXPECTS: &'static str = "NONE, AT_LEAST_ONCE or EXACTLY_ONCE";
    fn show(&self) -> String {
        match self {
            DeliveryGuarantee::None => "NONE",
            DeliveryGuarantee::AtLeastOnce => "AT_LEAST_ONCE",
            DeliveryGuarantee::ExactlyOnce => "EXACTLY_ONCE",
        }
        .to_string()
    }
}

/// What the downstream reader of the results sees (Kafka's consumer `isolation.level`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum IsolationLevel {
    #[serde(rename = "read_committed", alias = "read-committed")]
    ReadCommitted,
    #[serde(rename = "read_uncommitted", alias = "read-uncommitted")]
    ReadUncommitted,
}

impl KnobValue for IsolationLevel {
    const EXPECTS: &'static str = "read_committed or read_uncommitted";
    fn show(&self) -> String {
        match self {
            IsolationLevel::ReadCommitted => "read_committed",
            IsolationLevel::ReadUncommitted => "read_uncommitted",
        }
        .to_string()
    }
}

/// How Flink gives a slot's RocksDB its memory (`memory.mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum MemoryMode {
    /// Flink's default: RocksDB takes `memory.managed-size` out of the slot's managed memory
    /// (`taskmanager.memory.managed.size` / `numberOfTaskSlots`, times the state backend's
    /// consumer weight).
    #[serde(rename = "managed")]
    Managed,
    /// `state.backend.rocksdb.memory.fixed-per-slot`: a fixed amount per slot *outside* managed
    /// memory, which the TaskManager's task off-heap memory must then cover.
    #[serde(rename = "fixed-per-slot")]
    FixedPerSlot,
}

impl KnobValue for MemoryMode {
    const EXPECTS: &'static str = "managed or fixed-per-slot";
    fn show(&self) -> String {
        match self {
            MemoryMode::Managed => "managed",
            MemoryMode::FixedPerSlot => "fixed-per-slot",
        }
        .to_string()
    }
}

/// How a checkpoint holds the state, from the profile's Flink keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CheckpointKind {
    /// Every key of every state, written out (`execution.checkpointing.incremental: false`).
    Full,
    /// RocksDB's own files; only SST files the store lacks are uploaded.
    Incremental,
    /// Every state change logged; a checkpoint uploads the log since the last one and a
    /// periodic materialization snapshots the state (`state.changelog.enabled: true`).
    Changelog,
}

impl CheckpointKind {
    pub fn name(self) -> &'static str {
        match self {
            CheckpointKind::Full => "full",
            CheckpointKind::Incremental => "incremental",
            CheckpointKind::Changelog => "changelog",
        }
    }
}

/// Whether and how a knob changes an open database.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Live {
    /// Needs a reopen: the run restarts on the new profile.
    No,
    /// Resizes the shared block cache and WriteBufferManager (Flink's managed memory split).
    Memory,
    /// Column-family options set with SetOptions (`backend::options_file::cf_options` rows).
    ColumnFamily,
}

/// What one knob is: its YAML key, the Flink key it maps to (if Flink has one), whether it can
/// change on an open database, and what it does.
#[derive(Debug)]
pub struct KnobInfo {
    pub knob: Knob,
    pub key: &'static str,
    pub flink_key: Option<&'static str>,
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
        self.key.starts_with("sink.") || self.key.starts_with("checkpoint.")
    }
}

macro_rules! knobs {
    ($( #[doc = $doc:literal] $variant:ident $field:ident : $ty:ty = $default:expr, $key:literal, $flink:expr, $live:expr; )*) => {
        /// A knob of a profile.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Knob {
            $( #[doc = $doc] $variant, )*
        }

        impl Knob {
            /// What this knob is (its row of `KNOBS`).
            pub fn info(self) -> &'static KnobInfo {
                // KNOBS lists every variant in declaration order: the index is in range.
                &KNOBS[self as usize]
            }

            pub fn key(self) -> &'static str {
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
        pub const KNOBS: &[KnobInfo] = &[ $( KnobInfo { knob: Knob::$variant, key: $key, flink_key: $flink, live: $live, doc: $doc, expects: <$ty as KnobValue>::EXPECTS, from_flink: <$ty as FromFlink>::from_flink }, )* ];

        impl ProfileSpec {
            /// Fills every knob this spec leaves unset from `parent`.
            fn inherit(self, parent: ProfileSpec) -> ProfileSpec {
                ProfileSpec {
                    extends: parent.extends,
                    // A description says what this file is for: the parent's would mislabel it.
                    description: self.description,
                    $( $field: self.$field.or(parent.$field), )*
                }
            }

            /// The knobs this spec sets.
            fn set_knobs(&self) -> Vec<Knob> {
                let mut set = Vec::new();
                $( if self.$field.is_some() { set.push(Knob::$variant); } )*
                set
            }

            fn resolve(self) -> Knobs {
                let defaults = Knobs::default();
                Knobs { $( $field: self.$field.unwrap_or(defaults.$field), )* }
            }
        }

        impl ProfileSpec {
            fn from_knobs(knobs: &Knobs) -> ProfileSpec {
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
    ManagedMemory managed_memory: ByteSize = ByteSize(64 << 20), "memory.managed-size", Some("state.backend.rocksdb.memory.fixed-per-slot"), Live::Memory;
    /// Share of managed memory for memtables (WriteBufferManager); the rest is block cache.
    WriteBufferRatio write_buffer_ratio: f64 = 0.5, "memory.write-buffer-ratio", Some("state.backend.rocksdb.memory.write-buffer-ratio"), Live::Memory;
    /// Share of the block cache kept for index and filter blocks (Flink builds its LRU cache with it).
    HighPrioPoolRatio high_prio_pool_ratio: f64 = 0.1, "memory.high-prio-pool-ratio", Some("state.backend.rocksdb.memory.high-prio-pool-ratio"), Live::No;
    /// Two-level index and partitioned bloom filters (Flink forces a 10-bit bloom with them).
    PartitionedIndexFilters partitioned_index_filters: bool = false, "memory.partitioned-index-filters", Some("state.backend.rocksdb.memory.partitioned-index-filters"), Live::No;
    /// Size of one memtable per column family.
    WriteBufferSize write_buffer_size: ByteSize = ByteSize(64 << 20), "writebuffer.size", Some("state.backend.rocksdb.writebuffer.size"), Live::ColumnFamily;
    /// Maximum memtables per column family (active + immutable).
    MaxWriteBufferNumber max_write_buffer_number: u32 = 2, "writebuffer.count", Some("state.backend.rocksdb.writebuffer.count"), Live::ColumnFamily;
    /// Immutable memtables merged into one flush.
    MinWriteBufferNumberToMerge min_write_buffer_number_to_merge: u32 = 1, "writebuffer.number-to-merge", Some("state.backend.rocksdb.writebuffer.number-to-merge"), Live::No;
    /// Bloom filter on the SST files of every state.
    UseBloomFilter use_bloom_filter: bool = false, "use-bloom-filter", Some("state.backend.rocksdb.use-bloom-filter"), Live::No;
    /// Bloom bits per key (ignored by Flink when partitioned index/filters are on).
    BloomBitsPerKey bloom_bits_per_key: f64 = 10.0, "bloom-filter.bits-per-key", Some("state.backend.rocksdb.bloom-filter.bits-per-key"), Live::No;
    /// Data block size.
    BlockSize block_size: ByteSize = ByteSize(4 << 10), "block.blocksize", Some("state.backend.rocksdb.block.blocksize"), Live::No;
    /// Partition size of partitioned index and filter blocks.
    MetadataBlockSize metadata_block_size: ByteSize = ByteSize(4 << 10), "block.metadata-blocksize", Some("state.backend.rocksdb.block.metadata-blocksize"), Live::No;
    /// O_DIRECT for user reads: no page cache behind the block cache.
    UseDirectReads use_direct_reads: bool = false, "use-direct-reads", None, Live::No;
    /// O_DIRECT for flush and compaction I/O.
    UseDirectIoForFlushAndCompaction use_direct_io_for_flush_and_compaction: bool = false, "use-direct-io-for-flush-and-compaction", None, Live::No;
    /// Target size of an SST file at level 1.
    TargetFileSizeBase target_file_size_base: ByteSize = ByteSize(64 << 20), "compaction.level.target-file-size-base", Some("state.backend.rocksdb.compaction.level.target-file-size-base"), Live::ColumnFamily;
    /// Target size of level 1 (the base level).
    MaxBytesForLevelBase max_bytes_for_level_base: ByteSize = ByteSize(256 << 20), "compaction.level.max-size-level-base", Some("state.backend.rocksdb.compaction.level.max-size-level-base"), Live::ColumnFamily;
    /// Size ratio between adjacent levels.
    MaxBytesForLevelMultiplier max_bytes_for_level_multiplier: f64 = 10.0, "compaction.level.multiplier", None, Live::ColumnFamily;
    /// Size levels from the bottom up (level_compaction_dynamic_level_bytes).
    DynamicLevelBytes dynamic_level_bytes: bool = false, "compaction.level.use-dynamic-size", Some("state.backend.rocksdb.compaction.level.use-dynamic-size"), Live::No;
    /// Compression per level, L0 first; the last entry applies to all deeper levels.
    CompressionPerLevel compression_per_level: Vec<Compression> = vec![Compression::Snappy], "compression.per.level", Some("state.backend.rocksdb.compression.per.level"), Live::No;
    /// Background flush + compaction threads (max_background_jobs).
    BackgroundJobs background_jobs: u32 = 2, "thread.num", Some("state.backend.rocksdb.thread.num"), Live::No;
    /// L0 file count at which writes are slowed down.
    Level0SlowdownWritesTrigger level0_slowdown_writes_trigger: u32 = 20, "compaction.level0-slowdown-writes-trigger", None, Live::ColumnFamily;
    /// L0 file count at which writes stop.
    Level0StopWritesTrigger level0_stop_writes_trigger: u32 = 36, "compaction.level0-stop-writes-trigger", None, Live::ColumnFamily;
    /// Pending compaction bytes at which writes are slowed down.
    SoftPendingCompactionBytesLimit soft_pending_compaction_bytes_limit: ByteSize = ByteSize(64 << 30), "compaction.soft-pending-compaction-bytes-limit", None, Live::ColumnFamily;
    /// Pending compaction bytes at which writes stop.
    HardPendingCompactionBytesLimit hard_pending_compaction_bytes_limit: ByteSize = ByteSize(256 << 30), "compaction.hard-pending-compaction-bytes-limit", None, Live::ColumnFamily;
    /// Flush + compaction write bandwidth per second (RocksDB's rate limiter): a slot's share of the disk; 0 = unlimited.
    IoRateLimit io_rate_limit: ByteSize = ByteSize(0), "io.rate-limit-per-sec", None, Live::No;
    /// Stop automatic compactions: L0 grows without bound (RocksDB then skips the L0 and pending-bytes stall conditions): a live experiment.
    DisableAutoCompactions disable_auto_compactions: bool = false, "compaction.disable-auto-compactions", None, Live::ColumnFamily;
    /// Where timers live: ROCKSDB (column families, a cache per key group) or HEAP (no RocksDB work; in checkpoints as raw keyed state).
    TimerServiceFactory timer_service_factory: TimerFactory = TimerFactory::RocksDb, "timer-service.factory", Some("state.backend.rocksdb.timer-service.factory"), Live::No;
    /// ROCKSDB timers: the smallest timers of each key group cached in memory (RocksDBCachingPriorityQueueSet).
    TimerServiceCacheSize timer_service_cache_size: u32 = 128, "timer-service.cache-size", Some("state.backend.rocksdb.timer-service.cache-size"), Live::No;
    /// Time between two checkpoints (wall clock); 0 = checkpointing off, Flink's default (the key unset).
    CheckpointInterval checkpoint_interval: Millis = Millis(0), "execution.checkpointing.interval", Some("execution.checkpointing.interval"), Live::No;
    /// Least time from one checkpoint's end to the next one's start.
    CheckpointMinPause checkpoint_min_pause: Millis = Millis(0), "execution.checkpointing.min-pause", Some("execution.checkpointing.min-pause"), Live::No;
    /// A checkpoint not complete after this long is declared failed.
    CheckpointTimeout checkpoint_timeout: Millis = Millis(600_000), "execution.checkpointing.timeout", Some("execution.checkpointing.timeout"), Live::No;
    /// Barrier alignment for operators with several inputs: EXACTLY_ONCE (aligned) or AT_LEAST_ONCE.
    CheckpointingMode checkpointing_mode: CheckpointingMode = CheckpointingMode::ExactlyOnce, "execution.checkpointing.mode", Some("execution.checkpointing.mode"), Live::No;
    /// Completed checkpoints kept in the checkpoint store (their shared files with them).
    CheckpointsRetained checkpoints_retained: u32 = 1, "execution.checkpointing.num-retained", Some("execution.checkpointing.num-retained"), Live::No;
    /// Checkpoint RocksDB's files (only new SST files uploaded) instead of writing every key.
    IncrementalCheckpoints incremental_checkpoints: bool = false, "execution.checkpointing.incremental", Some("execution.checkpointing.incremental"), Live::No;
    /// Log every state change: a checkpoint uploads the log since the last one; state is materialized periodically.
    ChangelogEnabled changelog_enabled: bool = false, "state.changelog.enabled", Some("state.changelog.enabled"), Live::No;
    /// Time between two materializations of the changelog backend's state (which truncate the log).
    ChangelogMaterializeInterval changelog_materialize_interval: Millis = Millis(600_000), "state.changelog.periodic-materialize.interval", Some("state.changelog.periodic-materialize.interval"), Live::No;
    /// Upload bandwidth to the checkpoint store (HDFS/S3 stand-in), per second; 0 = unlimited.
    CheckpointUploadRate checkpoint_upload_rate: ByteSize = ByteSize(0), "checkpoint.upload-rate-per-sec", None, Live::No;
    /// The sink's delivery guarantee (KafkaSink's): NONE, AT_LEAST_ONCE or EXACTLY_ONCE (two-phase commit).
    SinkDeliveryGuarantee sink_delivery_guarantee: DeliveryGuarantee = DeliveryGuarantee::None, "sink.delivery-guarantee", None, Live::No;
    /// An EXACTLY_ONCE sink's transaction older than this when its checkpoint completes was aborted by the broker: its results are lost (Kafka's broker caps it at 15 minutes by default).
    SinkTransactionTimeout sink_transaction_timeout: Millis = Millis(900_000), "sink.transaction-timeout", None, Live::No;
    /// The serving store drops a result whose record id it already holds (an idempotent, deduplicating sink).
    SinkIdempotent sink_idempotent: bool = false, "sink.idempotent", None, Live::No;
    /// What the downstream reader sees: read_committed (committed transactions only) or read_uncommitted (Kafka's default).
    SinkReaderIsolation sink_reader_isolation: IsolationLevel = IsolationLevel::ReadUncommitted, "sink.reader-isolation", None, Live::No;
    /// Whose RocksDB to reproduce: flink-1.20 (FRocksDB 6.20.3's effective options: arena, cache high-priority pool, checksum, format, TTL filter) or rocksdb-11.8 (RocksDB's own defaults, to measure the difference).
    Target target: Target = Target::Flink120, "target", None, Live::No;
    /// How Flink provides memory.managed-size: managed (a slot's managed memory, Flink's default) or fixed-per-slot (outside managed memory: the TaskManager's off-heap memory must cover it). Exports only; RocksDB gets the same cache and WriteBufferManager either way.
    MemoryMode memory_mode: MemoryMode = MemoryMode::Managed, "memory.mode", None, Live::No;
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
    pub fn effective_bloom_bits_per_key(&self) -> Option<f64> {
        self.use_bloom_filter
            .then_some(if self.partitioned_index_filters {
                FLINK_PARTITIONED_BLOOM_BITS
            } else {
                self.bloom_bits_per_key
            })
    }
}

/// An effective, validated profile.
#[derive(Debug, Clone, Serialize)]
pub struct Profile {
    pub name: String,
    /// Where it was loaded from (a path, or `built-in 'name'`), and its `extends` chain.
    pub source: String,
    pub extends_chain: Vec<String>,
    pub description: Option<String>,
    pub knobs: Knobs,
    /// The knobs this profile sets itself or inherits from a profile other than
    /// `flink-default`, in knob-table order. Every other knob has Flink's default value
    /// (`flink-default` names each RocksDB knob with it), which an export leaves to Flink.
    #[serde(skip)]
    pub set_knobs: Vec<Knob>,
    /// When the file was a Flink configuration: what was read, derived and ignored.
    #[serde(skip)]
    pub flink_import: Option<FlinkImport>,
}

impl Profile {
    /// Loads a profile by path or built-in name, following `extends:`. A Flink configuration
    /// (`config.yaml`, `flink-conf.yaml`, or Flink's keys) is read as a profile that extends
    /// `flink-default` (see `flink_in`).
    pub fn load(name: &str) -> Result<Profile, ConfigError> {
        let in_folder = flink_conf_in_folder(name)?;
        let name = in_folder.as_deref().unwrap_or(name);
        let (origin, text) = locate("profile", name, BUILTIN)?;
        let (mut spec, flink_import) = read_spec(&origin, &text)?;
        let mut set = if is_flink_default(&origin, &text) {
            Vec::new()
        } else {
            spec.set_knobs()
        };
        let name = origin.name();
        let mut chain = vec![name.clone()];
        // Cycles are found by where each profile comes from: a file named like a built-in it
        // extends is not a cycle.
        let mut seen = vec![origin.to_string()];
        let mut parent_origin = origin.clone();
        // A Flink configuration's unset keys are Flink's defaults: the built-in, never a file
        // of that name next to it.
        let mut builtin_parent = flink_import.is_some();
        while let Some(parent) = spec.extends.clone() {
            let parent_ref = if builtin_parent {
                parent.clone()
            } else {
                resolve_relative(&parent_origin, &parent)
            };
            let (porigin, ptext) =
                locate("profile", &parent_ref, BUILTIN).map_err(|e| match e {
                    ConfigError::NotFound { available, .. } => ConfigError::Invalid {
                        origin: parent_origin.to_string(),
                        message: format!(
                            "extends: profile '{parent}' not found (built-in: {available})"
                        ),
                    },
                    other => other,
                })?;
            let pname = porigin.name();
            if seen.contains(&porigin.to_string()) || chain.len() > 16 {
                chain.push(pname);
                return Err(ConfigError::Cycle(chain.join(" -> ")));
            }
            chain.push(pname);
            seen.push(porigin.to_string());
            let (pspec, pimport) = read_spec(&porigin, &ptext)?;
            builtin_parent = pimport.is_some();
            if !is_flink_default(&porigin, &ptext) {
                set.extend(pspec.set_knobs());
            }
            spec = spec.inherit(pspec);
            parent_origin = porigin;
        }
        let profile = Profile {
            name,
            source: origin.to_string(),
            extends_chain: chain[1..].to_vec(),
            description: spec.description.clone(),
            knobs: spec.resolve(),
            flink_import,
            set_knobs: Vec::new(),
        };
        // A knob with a value other than flink-default's is the profile's own even where no
        // file names it (a profile that does not extend flink-default gets the built-in
        // defaults, e.g. 64mb of managed memory).
        set.extend(profile.differences_from_flink_default());
        let profile = Profile {
            set_knobs: in_table_order(&set),
            ..profile
        };
        profile.validate().map_err(|message| ConfigError::Invalid {
            origin: origin.to_string(),
            message: match &profile.flink_import {
                Some(_) => in_flink_words(&message),
                None => message,
            },
        })?;
        Ok(profile)
    }

    /// This profile with knob `key` set to `value` (YAML syntax, e.g. `8mb`), validated as a
    /// profile file would be.
    pub fn edited(&self, key: &str, value: &str) -> Result<Profile, ConfigError> {
        let origin = super::Origin::File(std::path::PathBuf::from(format!("edit of '{key}'")));
        let Some(info) = KNOBS.iter().find(|k| k.key == key) else {
            return Err(ConfigError::Invalid {
                origin: origin.to_string(),
                message: format!("unknown knob '{key}'"),
            });
        };
        let text = format!("{key}: {value}\n");
        // A value of the wrong kind is refused in the knob's words, not the YAML parser's.
        let spec: ProfileSpec = parse_yaml(&text, &origin).map_err(|_| ConfigError::Invalid {
            origin: origin.to_string(),
            message: format!("'{key}' must be {}, not '{value}'", info.expects),
        })?;
        let current = ProfileSpec::from_knobs(&self.knobs);
        let mut profile = self.clone();
        profile.knobs = spec.inherit(current).resolve();
        let mut set = profile.set_knobs.clone();
        set.push(info.knob);
        profile.set_knobs = in_table_order(&set);
        profile.validate().map_err(|message| ConfigError::Invalid {
            origin: origin.to_string(),
            message,
        })?;
        Ok(profile)
    }

    /// The knobs whose values differ from `flink-default`'s, in knob-table order.
    fn differences_from_flink_default(&self) -> Vec<Knob> {
        let Ok(default) = flink_default_knobs() else {
            // flink-default is compiled in and its loading tested: every knob counts as set
            // if it ever failed to parse.
            return KNOBS.iter().map(|k| k.knob).collect();
        };
        self.knobs
            .values()
            .into_iter()
            .zip(default.values())
            .zip(KNOBS)
            .filter(|(((_, here), (_, there)), _)| here != there)
            .map(|(_, info)| info.knob)
            .collect()
    }

    /// Whether the profile sets `knob` (itself or through a parent other than
    /// `flink-default`): false means the knob has Flink's default value.
    pub fn sets(&self, knob: Knob) -> bool {
        self.set_knobs.contains(&knob)
    }

    /// The knobs whose values differ from `from`'s: (key, value in `from`, value here).
    pub fn knob_differences(&self, from: &Profile) -> Vec<(&'static str, String, String)> {
        from.knobs
            .values()
            .into_iter()
            .zip(self.knobs.values())
            .filter(|((_, old), (_, new))| old != new)
            .map(|((key, old), (_, new))| (key, old, new))
            .collect()
    }

    /// The profile as one YAML file: `extends: flink-default`, the knobs it sets, and every
    /// other knob as a comment with its value (Flink's default, which `flink-default` gives).
    /// It loads back as the same profile, setting the same knobs.
    pub fn to_yaml(&self, description: &str) -> String {
        let mut out = format!(
            "description: {}\nextends: {FLINK_DEFAULT}\n",
            serde_json::to_string(description).unwrap_or_default()
        );
        let mut defaults = Vec::new();
        for ((key, value), info) in self.knobs.values().into_iter().zip(KNOBS) {
            if self.sets(info.knob) {
                out.push_str(&format!("{key}: {value}\n"));
            } else {
                defaults.push(format!("# {key}: {value}\n"));
            }
        }
        if !defaults.is_empty() {
            out.push_str("# Flink's defaults (from flink-default), not set by this profile:\n");
            out.extend(defaults);
        }
        out
    }

    /// The profile a report recorded: its `knobs` object (knobs a report lacks, from an older
    /// build, take their defaults), validated as a profile file is.
    pub fn from_report(
        name: &str,
        knobs: &serde_json::Value,
        origin: &str,
    ) -> Result<Profile, ConfigError> {
        let spec: ProfileSpec =
            serde_json::from_value(knobs.clone()).map_err(|e| ConfigError::Invalid {
                origin: origin.to_string(),
                message: format!("the profile's knobs: {e}"),
            })?;
        Profile::from_knobs(name, spec.resolve()).map_err(|e| match e {
            ConfigError::Invalid { message, .. } => ConfigError::Invalid {
                origin: origin.to_string(),
                message,
            },
            other => other,
        })
    }

    /// A profile from knobs built in code (tests, live tuning): it sets the knobs whose values
    /// differ from `flink-default`'s.
    pub fn from_knobs(name: &str, knobs: Knobs) -> Result<Profile, ConfigError> {
        let mut profile = Profile {
            name: name.to_string(),
            source: "in-memory".to_string(),
            extends_chain: Vec::new(),
            description: None,
            knobs,
            flink_import: None,
            set_knobs: Vec::new(),
        };
        profile.set_knobs = profile.differences_from_flink_default();
        profile.validate().map_err(|message| ConfigError::Invalid {
            origin: name.to_string(),
            message,
        })?;
        Ok(profile)
    }

    /// Rejects combinations RocksDB or Flink would refuse, silently fix, or make meaningless.
    fn validate(&self) -> Result<(), String> {
        let k = &self.knobs;
        let mut problems = Vec::new();
        if !(k.write_buffer_ratio > 0.0 && k.write_buffer_ratio < 1.0) {
            problems.push(format!(
                "'memory.write-buffer-ratio' is {} but must be between 0 and 1 (exclusive); Flink's default is 0.5",
                k.write_buffer_ratio
            ));
        }
        if !(k.high_prio_pool_ratio > 0.0 && k.high_prio_pool_ratio < 1.0) {
            problems.push(format!(
                "'memory.high-prio-pool-ratio' is {} but must be between 0 and 1 (exclusive); Flink's default is 0.1",
                k.high_prio_pool_ratio
            ));
        }
        // RocksDBMemoryConfiguration#validate: the memtables' share of the cache they are
        // charged to (2r / (3 - r)) and the high-priority pool must leave room for data blocks.
        let memtable_share = 2.0 * k.write_buffer_ratio / (3.0 - k.write_buffer_ratio);
        if memtable_share + k.high_prio_pool_ratio >= 1.0 {
            problems.push(format!(
                "'memory.write-buffer-ratio' {} with 'memory.high-prio-pool-ratio' {} leaves no block cache for data: Flink refuses it (2r/(3-r) + ratio must stay below 1)",
                k.write_buffer_ratio, k.high_prio_pool_ratio
            ));
        }
        if k.checkpoint_interval.0 > 0 && k.checkpoint_interval.0 < 10 {
            problems.push(format!(
                "'execution.checkpointing.interval' is {} but must be 0 (off) or at least 10ms, as Flink requires",
                k.checkpoint_interval
            ));
        }
        if k.checkpoint_timeout.0 < 10 {
            problems.push(format!(
                "'execution.checkpointing.timeout' is {} but must be at least 10ms",
                k.checkpoint_timeout
            ));
        }
        if k.checkpoints_retained < 1 {
            problems.push(
                "'execution.checkpointing.num-retained' is 0 but must be at least 1".to_string(),
            );
        }
        if k.changelog_enabled && k.changelog_materialize_interval.0 == 0 {
            problems.push(
                "'state.changelog.periodic-materialize.interval' must be above 0 with 'state.changelog.enabled: true'"
                    .to_string(),
            );
        }
        problems.extend(super::timer_service::validate(k));
        if k.sink_transaction_timeout.0 == 0 {
            problems.push("'sink.transaction-timeout' must be above 0".to_string());
        }
        if k.partitioned_index_filters && !k.use_bloom_filter {
            problems.push(
                "'memory.partitioned-index-filters: true' needs 'use-bloom-filter: true': there is no filter to partition"
                    .to_string(),
            );
        }
        if k.managed_memory.0 < (1 << 20) {
            problems.push(format!(
                "'memory.managed-size' is {} but must be at least 1mb",
                k.managed_memory
            ));
        }
        if k.write_buffer_size.0 < (64 << 10) {
            problems.push(format!(
                "'writebuffer.size' is {} but must be at least 64kb",
                k.write_buffer_size
            ));
        }
        if k.max_write_buffer_number < 2 {
            problems.push(format!(
                "'writebuffer.count' is {} but must be at least 2 (RocksDB raises smaller values to 2)",
                k.max_write_buffer_number
            ));
        }
        if k.min_write_buffer_number_to_merge < 1
            || k.min_write_buffer_number_to_merge >= k.max_write_buffer_number
        {
            problems.push(format!(
                "'writebuffer.number-to-merge' is {} but must be at least 1 and less than 'writebuffer.count' ({})",
                k.min_write_buffer_number_to_merge, k.max_write_buffer_number
            ));
        }
        if !(k.bloom_bits_per_key >= 1.0 && k.bloom_bits_per_key <= 100.0) {
            problems.push(format!(
                "'bloom-filter.bits-per-key' is {} but must be between 1 and 100",
                k.bloom_bits_per_key
            ));
        }
        for (key, size) in [
            ("block.blocksize", k.block_size),
            ("block.metadata-blocksize", k.metadata_block_size),
        ] {
            if size.0 < 256 || size.0 > (256 << 20) {
                problems.push(format!(
                    "'{key}' is {size} but must be between 256b and 256mb"
                ));
            }
        }
        if k.target_file_size_base.0 < (64 << 10) {
            problems.push(format!(
                "'compaction.level.target-file-size-base' is {} but must be at least 64kb",
                k.target_file_size_base
            ));
        }
        if k.max_bytes_for_level_base.0 < k.target_file_size_base.0 {
            problems.push(format!(
                "'compaction.level.max-size-level-base' ({}) is smaller than 'compaction.level.target-file-size-base' ({}): level 1 could not hold one file",
                k.max_bytes_for_level_base, k.target_file_size_base
            ));
        }
        if k.max_bytes_for_level_multiplier <= 1.0 {
            problems.push(format!(
                "'compaction.level.multiplier' is {} but must be greater than 1",
                k.max_bytes_for_level_multiplier
            ));
        }
        if k.compression_per_level.is_empty() || k.compression_per_level.len() > 7 {
            problems.push(format!(
                "'compression.per.level' has {} entries but needs 1 to 7 (one per level, the last repeats)",
                k.compression_per_level.len()
            ));
        }
        if k.background_jobs < 1 || k.background_jobs > 64 {
            problems.push(format!(
                "'thread.num' is {} but must be between 1 and 64",
                k.background_jobs
            ));
        }
        if k.level0_slowdown_writes_trigger > k.level0_stop_writes_trigger {
            problems.push(format!(
                "'compaction.level0-slowdown-writes-trigger' ({}) is above 'compaction.level0-stop-writes-trigger' ({}): writes would stop before they slow down",
                k.level0_slowdown_writes_trigger, k.level0_stop_writes_trigger
            ));
        }
        if k.level0_slowdown_writes_trigger < 2 {
            problems.push(format!(
                "'compaction.level0-slowdown-writes-trigger' is {} but must be at least 2",
                k.level0_slowdown_writes_trigger
            ));
        }
        if k.soft_pending_compaction_bytes_limit > k.hard_pending_compaction_bytes_limit {
            problems.push(format!(
                "'compaction.soft-pending-compaction-bytes-limit' ({}) is above 'compaction.hard-pending-compaction-bytes-limit' ({})",
                k.soft_pending_compaction_bytes_limit, k.hard_pending_compaction_bytes_limit
            ));
        }
        if k.io_rate_limit.0 != 0 && k.io_rate_limit.0 < (64 << 10) {
            problems.push(format!(
                "'io.rate-limit-per-sec' is {} but must be 0 (unlimited) or at least 64kb",
                k.io_rate_limit
            ));
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(problems.join("; "))
        }
    }
}

/// A profile file's spec, or a Flink configuration's (which extends `flink-default`) with
/// what reading it found.
fn read_spec(
    origin: &Origin,
    text: &str,
) -> Result<(ProfileSpec, Option<FlinkImport>), ConfigError> {
    if let Some((format, detected_by)) = flink_in::detect(origin, text) {
        let (yaml, import) = flink_in::read(origin, text, format, detected_by)?;
        let mut spec: ProfileSpec = if yaml.is_empty() {
            ProfileSpec::default()
        } else {
            parse_yaml(&yaml, origin)?
        };
        spec.extends = Some("flink-default".to_string());
        spec.description = Some(format!("Flink configuration {origin}"));
        return Ok((spec, Some(import)));
    }
    if text
        .lines()
        .all(|l| l.trim().is_empty() || l.trim_start().starts_with('#'))
    {
        return Err(ConfigError::Invalid {
            origin: origin.to_string(),
            message: "the profile is empty: write 'extends: flink-default' for Flink's defaults, then the knobs that differ".to_string(),
        });
    }
    Ok((parse_yaml(text, origin)?, None))
}

/// A folder given as a profile is Flink's configuration folder: its `config.yaml`, else its
/// `flink-conf.yaml` (the order Flink 1.19 and 1.20 look in).
fn flink_conf_in_folder(name: &str) -> Result<Option<String>, ConfigError> {
    let dir = Path::new(name);
    if !dir.is_dir() {
        return Ok(None);
    }
    ["config.yaml", "flink-conf.yaml"]
        .iter()
        .map(|f| dir.join(f))
        .find(|p| p.is_file())
        .map(|p| Some(p.to_string_lossy().into_owned()))
        .ok_or_else(|| ConfigError::Invalid {
            origin: dir.display().to_string(),
            message: "a folder with neither a config.yaml nor a flink-conf.yaml in it: give a profile file, a Flink configuration file or folder, or a built-in profile's name".to_string(),
        })
}

/// A validation message about a Flink configuration, with Flink's keys for the knobs'.
fn in_flink_words(message: &str) -> String {
    let mut out = message.to_string();
    for info in KNOBS {
        let flink = match (info.knob, info.flink_key) {
            (Knob::ManagedMemory, _) => "managed memory per slot".to_string(),
            (_, Some(key)) => key.to_string(),
            (_, None) => format!("{}{}", super::flink::FACTORY_PREFIX, info.key),
        };
        out = out.replace(&format!("'{}'", info.key), &format!("'{flink}'"));
    }
    out
}

/// The built-in profile whose knobs are Flink's defaults.
pub const FLINK_DEFAULT: &str = "flink-default";

/// Whether a profile text is `flink-default`'s: the built-in, or a copy of its file.
fn is_flink_default(origin: &Origin, text: &str) -> bool {
    matches!(origin, Origin::Builtin(name) if *name == FLINK_DEFAULT)
        || BUILTIN
            .iter()
            .any(|(name, builtin)| *name == FLINK_DEFAULT && *builtin == text)
}

/// `flink-default`'s knobs.
fn flink_default_knobs() -> Result<Knobs, ConfigError> {
    let (origin, text) = locate("profile", FLINK_DEFAULT, BUILTIN)?;
    let spec: ProfileSpec = parse_yaml(&text, &origin)?;
    Ok(spec.resolve())
}

/// `knobs` without repeats, in knob-table order.
fn in_table_order(knobs: &[Knob]) -> Vec<Knob> {
    KNOBS
        .iter()
        .map(|k| k.knob)
        .filter(|k| knobs.contains(k))
        .collect()
}

/// `extends: x` in a file is looked up next to that file first, then among the built-ins.
fn resolve_relative(origin: &Origin, parent: &str) -> String {
    if let Origin::File(path) = origin {
        let dir = path.parent().unwrap_or(Path::new("."));
        let itself = std::fs::canonicalize(path).ok();
        for candidate in [dir.join(parent), dir.join(format!("{parent}.yaml"))] {
            // A file cannot extend itself: `extends: flink-default` in a saved
            // `flink-default.yaml` means the built-in.
            if candidate.is_file() && std::fs::canonicalize(&candidate).ok() != itself {
                return candidate.to_string_lossy().into_owned();
            }
        }
    }
    parent.to_string()
}
