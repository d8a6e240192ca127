//! The value types of the knobs (compression, checkpointing mode, delivery guarantee, isolation
//! level, memory mode, checkpoint kind) and `KnobValue`: how each value is shown, in the syntax
//! the YAML accepts, and what a valid one looks like.

use serde::{Deserialize, Serialize};

use crate::config::target::Target;
use crate::config::units::{ByteSize, Millis};

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
impl KnobValue for i32 {
    const EXPECTS: &'static str = "a whole number such as 5000, or -1 for no limit";
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
    /// `state.backend.rocksdb.memory.managed: false` with no fixed budget: no shared memory at
    /// all. Every column family gets its own block cache of `block.cache-size` and memtables
    /// with no WriteBufferManager, index and filter blocks live in table readers outside any
    /// cache, and the TaskManager reserves none of it.
    #[serde(rename = "unmanaged")]
    Unmanaged,
}

impl MemoryMode {
    /// Whether a slot's RocksDB instances share one block cache and WriteBufferManager.
    pub fn is_shared(self) -> bool {
        self != MemoryMode::Unmanaged
    }
}

impl KnobValue for MemoryMode {
    const EXPECTS: &'static str = "managed, fixed-per-slot or unmanaged";
    fn show(&self) -> String {
        match self {
            MemoryMode::Managed => "managed",
            MemoryMode::FixedPerSlot => "fixed-per-slot",
            MemoryMode::Unmanaged => "unmanaged",
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
