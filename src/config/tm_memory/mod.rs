//! A TaskManager's memory as Flink 1.20 derives it from its configuration
//! (`TaskExecutorProcessUtils`, `ProcessMemoryUtils`, `TaskExecutorFlinkMemoryUtils`): framework
//! and task heap, framework and task off-heap, network, managed memory, JVM metaspace and JVM
//! overhead, from `taskmanager.memory.process.size`, `taskmanager.memory.flink.size` or the
//! fine-grained sizes, with Flink's defaults for every key not set; and what a slot's RocksDB gets
//! of the managed memory (`taskmanager.numberOfTaskSlots`, the consumer weights).
//!
//! The arithmetic is Flink's to the byte: fractions are read as `float` and multiplied as
//! `BigDecimal.valueOf(double)` (the double's shortest decimal), truncated toward zero, as
//! `MemorySize#multiply` does; `parity/tm_memory_check.py` (run by `parity/export-check`)
//! compares it with Flink's own calculator (`BashJavaUtils GET_TM_RESOURCE_PARAMS`) for a table
//! of configurations, and the unit tests of `derive` freeze that table.
//!
//! Here: the keys, Flink's defaults, the configuration as read ([`TmMemoryConfig`], set key by
//! key in Flink's syntax) and the memory derived from it ([`TmMemory`]); Flink's arithmetic is in
//! `derive`, its value syntax (sizes, fractions, consumer weights) in `syntax`.
//!
//! ```
//! use statebench::config::tm_memory::TmMemoryConfig;
//! let config = TmMemoryConfig::from_pairs([
//!     ("taskmanager.memory.process.size", "4gb"),
//!     ("taskmanager.numberOfTaskSlots", "4"),
//! ])
//! .unwrap();
//! let memory = config.derive().unwrap();
//! assert_eq!(memory.total_process(), 4 << 30);
//! // 0.4 of total Flink memory, divided among 4 slots; a streaming job's RocksDB gets all of it.
//! assert_eq!(memory.state_backend_per_slot(), memory.managed / 4);
//! ```

mod derive;
mod syntax;

use std::fmt;

pub use derive::multiply;
use syntax::{FRACTION_EXPECTS, human, parse_fraction, parse_weights};
pub use syntax::{format_memory_size, parse_memory_size};

/// `taskmanager.numberOfTaskSlots`.
pub const SLOTS_KEY: &str = "taskmanager.numberOfTaskSlots";
pub const PROCESS_SIZE_KEY: &str = "taskmanager.memory.process.size";
pub const FLINK_SIZE_KEY: &str = "taskmanager.memory.flink.size";
pub const FRAMEWORK_HEAP_KEY: &str = "taskmanager.memory.framework.heap.size";
pub const FRAMEWORK_OFF_HEAP_KEY: &str = "taskmanager.memory.framework.off-heap.size";
pub const TASK_HEAP_KEY: &str = "taskmanager.memory.task.heap.size";
pub const TASK_OFF_HEAP_KEY: &str = "taskmanager.memory.task.off-heap.size";
pub const MANAGED_SIZE_KEY: &str = "taskmanager.memory.managed.size";
pub const MANAGED_FRACTION_KEY: &str = "taskmanager.memory.managed.fraction";
pub const CONSUMER_WEIGHTS_KEY: &str = "taskmanager.memory.managed.consumer-weights";
pub const NETWORK_MIN_KEY: &str = "taskmanager.memory.network.min";
pub const NETWORK_MAX_KEY: &str = "taskmanager.memory.network.max";
pub const NETWORK_FRACTION_KEY: &str = "taskmanager.memory.network.fraction";
pub const METASPACE_KEY: &str = "taskmanager.memory.jvm-metaspace.size";
pub const OVERHEAD_MIN_KEY: &str = "taskmanager.memory.jvm-overhead.min";
pub const OVERHEAD_MAX_KEY: &str = "taskmanager.memory.jvm-overhead.max";
pub const OVERHEAD_FRACTION_KEY: &str = "taskmanager.memory.jvm-overhead.fraction";

/// Deprecated keys Flink 1.20 still reads as the current ones (their fallback keys).
const FALLBACK_KEYS: &[(&str, &str)] = &[
    ("taskmanager.memory.size", MANAGED_SIZE_KEY),
    ("taskmanager.network.memory.min", NETWORK_MIN_KEY),
    ("taskmanager.network.memory.max", NETWORK_MAX_KEY),
    ("taskmanager.network.memory.fraction", NETWORK_FRACTION_KEY),
];

/// Memory keys statebench does not derive from (Flink's legacy ones): refused, not ignored,
/// since the result would silently differ from Flink's.
const UNSUPPORTED_KEYS: &[(&str, &str)] = &[
    (
        "taskmanager.heap.size",
        "the legacy heap size; use taskmanager.memory.process.size",
    ),
    (
        "taskmanager.heap.mb",
        "the legacy heap size; use taskmanager.memory.process.size",
    ),
    (
        "taskmanager.network.numberOfBuffers",
        "the legacy network buffer count; use taskmanager.memory.network.min/max",
    ),
];

/// Flink 1.20's defaults (`TaskManagerOptions`).
const DEFAULT_FRAMEWORK_HEAP: u64 = 128 << 20;
const DEFAULT_FRAMEWORK_OFF_HEAP: u64 = 128 << 20;
const DEFAULT_TASK_OFF_HEAP: u64 = 0;
const DEFAULT_MANAGED_FRACTION: f32 = 0.4;
const DEFAULT_NETWORK_MIN: u64 = 64 << 20;
const DEFAULT_NETWORK_MAX: u64 = i64::MAX as u64;
const DEFAULT_NETWORK_FRACTION: f32 = 0.1;
const DEFAULT_METASPACE: u64 = 256 << 20;
const DEFAULT_OVERHEAD_MIN: u64 = 192 << 20;
const DEFAULT_OVERHEAD_MAX: u64 = 1 << 30;
const DEFAULT_OVERHEAD_FRACTION: f32 = 0.1;
const DEFAULT_SLOTS: u32 = 1;

/// A managed-memory consumer's weight (`taskmanager.memory.managed.consumer-weights`).
pub const DEFAULT_CONSUMER_WEIGHTS: &[(&str, u32)] =
    &[("OPERATOR", 70), ("STATE_BACKEND", 70), ("PYTHON", 30)];

/// Why a configuration cannot be derived: a value Flink would not parse, or sizes Flink refuses.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TmMemoryError {
    #[error("'{key}: {value}': {expects}")]
    BadValue {
        key: String,
        value: String,
        expects: &'static str,
    },
    #[error("'{key}' is {why}")]
    Unsupported { key: String, why: &'static str },
    /// Flink refuses the combination (its `IllegalConfigurationException`, in its words).
    #[error("{0}")]
    Invalid(String),
}

/// The TaskManager memory keys of a Flink configuration; `None` = not set (Flink's default).
/// Sizes in bytes, fractions as Flink reads them (a `float`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TmMemoryConfig {
    pub process_size: Option<u64>,
    pub flink_size: Option<u64>,
    pub framework_heap: Option<u64>,
    pub framework_off_heap: Option<u64>,
    pub task_heap: Option<u64>,
    pub task_off_heap: Option<u64>,
    pub managed_size: Option<u64>,
    pub managed_fraction: Option<f32>,
    pub network_min: Option<u64>,
    pub network_max: Option<u64>,
    pub network_fraction: Option<f32>,
    pub jvm_metaspace: Option<u64>,
    pub jvm_overhead_min: Option<u64>,
    pub jvm_overhead_max: Option<u64>,
    pub jvm_overhead_fraction: Option<f32>,
    pub slots: Option<u32>,
    /// `(consumer, weight)` pairs, e.g. `[("STATE_BACKEND", 70), ...]`.
    pub consumer_weights: Option<Vec<(String, u32)>>,
}

/// The TaskManager's memory as Flink derives it, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct TmMemory {
    pub framework_heap: u64,
    pub task_heap: u64,
    pub framework_off_heap: u64,
    pub task_off_heap: u64,
    pub network: u64,
    pub managed: u64,
    pub jvm_metaspace: u64,
    pub jvm_overhead: u64,
    /// `taskmanager.numberOfTaskSlots` (Flink's default 1).
    pub slots: u32,
    /// The state backend's share of a slot's managed memory in a streaming job whose only
    /// managed-memory consumer is the state backend: its weight over the weights of the
    /// consumers it shares the slot with (1.0 with Flink's default weights), rounded down to
    /// four decimals as Flink's `ManagedMemoryUtils` does.
    pub state_backend_share: f64,
}

impl TmMemoryConfig {
    /// Every key [`TmMemoryConfig::set`] reads (current names; the deprecated fallback keys
    /// `taskmanager.memory.size` and `taskmanager.network.memory.*` are read too).
    pub const KEYS: &'static [&'static str] = &[
        PROCESS_SIZE_KEY,
        FLINK_SIZE_KEY,
        FRAMEWORK_HEAP_KEY,
        FRAMEWORK_OFF_HEAP_KEY,
        TASK_HEAP_KEY,
        TASK_OFF_HEAP_KEY,
        MANAGED_SIZE_KEY,
        MANAGED_FRACTION_KEY,
        CONSUMER_WEIGHTS_KEY,
        NETWORK_MIN_KEY,
        NETWORK_MAX_KEY,
        NETWORK_FRACTION_KEY,
        METASPACE_KEY,
        OVERHEAD_MIN_KEY,
        OVERHEAD_MAX_KEY,
        OVERHEAD_FRACTION_KEY,
        SLOTS_KEY,
    ];

    /// Whether `key` is one this module reads (or refuses as legacy).
    pub fn is_memory_key(key: &str) -> bool {
        Self::KEYS.contains(&key)
            || FALLBACK_KEYS.iter().any(|(k, _)| *k == key)
            || UNSUPPORTED_KEYS.iter().any(|(k, _)| *k == key)
    }

    /// Sets Flink key `key` to `value`, written in Flink's syntax (`1728m`, `4 gb`, `0.4`,
    /// `OPERATOR:70,STATE_BACKEND:70`). `Ok(false)`: not a TaskManager memory key (left alone).
    pub fn set(&mut self, key: &str, value: &str) -> Result<bool, TmMemoryError> {
        let key = FALLBACK_KEYS
            .iter()
            .find(|(old, _)| *old == key)
            .map_or(key, |(_, new)| new);
        if let Some((_, why)) = UNSUPPORTED_KEYS.iter().find(|(k, _)| *k == key) {
            return Err(TmMemoryError::Unsupported {
                key: key.to_string(),
                why,
            });
        }
        let size = || parse_memory_size(value).map_err(|expects| bad(key, value, expects));
        let fraction = || parse_fraction(value).ok_or_else(|| bad(key, value, FRACTION_EXPECTS));
        match key {
            PROCESS_SIZE_KEY => self.process_size = Some(size()?),
            FLINK_SIZE_KEY => self.flink_size = Some(size()?),
            FRAMEWORK_HEAP_KEY => self.framework_heap = Some(size()?),
            FRAMEWORK_OFF_HEAP_KEY => self.framework_off_heap = Some(size()?),
            TASK_HEAP_KEY => self.task_heap = Some(size()?),
            TASK_OFF_HEAP_KEY => self.task_off_heap = Some(size()?),
            MANAGED_SIZE_KEY => self.managed_size = Some(size()?),
            MANAGED_FRACTION_KEY => self.managed_fraction = Some(fraction()?),
            NETWORK_MIN_KEY => self.network_min = Some(size()?),
            NETWORK_MAX_KEY => self.network_max = Some(size()?),
            NETWORK_FRACTION_KEY => self.network_fraction = Some(fraction()?),
            METASPACE_KEY => self.jvm_metaspace = Some(size()?),
            OVERHEAD_MIN_KEY => self.jvm_overhead_min = Some(size()?),
            OVERHEAD_MAX_KEY => self.jvm_overhead_max = Some(size()?),
            OVERHEAD_FRACTION_KEY => self.jvm_overhead_fraction = Some(fraction()?),
            SLOTS_KEY => {
                let slots: u32 = value
                    .trim()
                    .parse()
                    .ok()
                    .filter(|n| *n >= 1)
                    .ok_or_else(|| bad(key, value, "a whole number of slots, at least 1"))?;
                self.slots = Some(slots);
            }
            CONSUMER_WEIGHTS_KEY => {
                self.consumer_weights = Some(
                    parse_weights(value)
                        .ok_or_else(|| bad(key, value, "CONSUMER:weight pairs separated by commas, such as OPERATOR:70,STATE_BACKEND:70,PYTHON:30"))?,
                );
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// The memory keys among `pairs` (a flat Flink configuration: key, value); every other key
    /// is skipped.
    pub fn from_pairs<'a>(
        pairs: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<TmMemoryConfig, TmMemoryError> {
        let mut config = TmMemoryConfig::default();
        for (key, value) in pairs {
            config.set(key, value)?;
        }
        Ok(config)
    }

    /// The configuration as Flink keys and values in Flink's syntax (set keys only).
    pub fn to_pairs(&self) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        let sizes = [
            (PROCESS_SIZE_KEY, self.process_size),
            (FLINK_SIZE_KEY, self.flink_size),
            (FRAMEWORK_HEAP_KEY, self.framework_heap),
            (FRAMEWORK_OFF_HEAP_KEY, self.framework_off_heap),
            (TASK_HEAP_KEY, self.task_heap),
            (TASK_OFF_HEAP_KEY, self.task_off_heap),
            (MANAGED_SIZE_KEY, self.managed_size),
            (NETWORK_MIN_KEY, self.network_min),
            (NETWORK_MAX_KEY, self.network_max),
            (METASPACE_KEY, self.jvm_metaspace),
            (OVERHEAD_MIN_KEY, self.jvm_overhead_min),
            (OVERHEAD_MAX_KEY, self.jvm_overhead_max),
        ];
        for (key, value) in sizes {
            if let Some(bytes) = value {
                out.push((key, format_memory_size(bytes)));
            }
        }
        for (key, value) in [
            (MANAGED_FRACTION_KEY, self.managed_fraction),
            (NETWORK_FRACTION_KEY, self.network_fraction),
            (OVERHEAD_FRACTION_KEY, self.jvm_overhead_fraction),
        ] {
            if let Some(f) = value {
                out.push((key, format!("{f}")));
            }
        }
        if let Some(weights) = &self.consumer_weights {
            let text: Vec<String> = weights.iter().map(|(c, w)| format!("{c}:{w}")).collect();
            out.push((CONSUMER_WEIGHTS_KEY, text.join(",")));
        }
        if let Some(slots) = self.slots {
            out.push((SLOTS_KEY, slots.to_string()));
        }
        out
    }
}

impl TmMemory {
    /// Total Flink memory: heap, off-heap, network and managed.
    pub fn total_flink(&self) -> u64 {
        self.framework_heap
            + self.task_heap
            + self.framework_off_heap
            + self.task_off_heap
            + self.network
            + self.managed
    }

    /// Total process memory: Flink memory, JVM metaspace and JVM overhead.
    pub fn total_process(&self) -> u64 {
        self.total_flink() + self.jvm_metaspace + self.jvm_overhead
    }

    /// `-Xmx`/`-Xms`: framework and task heap.
    pub fn jvm_heap(&self) -> u64 {
        self.framework_heap + self.task_heap
    }

    /// `-XX:MaxDirectMemorySize`: framework and task off-heap, and network.
    pub fn jvm_direct(&self) -> u64 {
        self.framework_off_heap + self.task_off_heap + self.network
    }

    /// Managed memory of one slot: the TaskManager's divided by its slots (Flink's default slot
    /// profile, `ResourceProfile#divide`, rounded down).
    pub fn managed_per_slot(&self) -> u64 {
        self.managed / u64::from(self.slots.max(1))
    }

    /// Task off-heap memory of one slot, rounded down as [`TmMemory::managed_per_slot`].
    pub fn task_off_heap_per_slot(&self) -> u64 {
        self.task_off_heap / u64::from(self.slots.max(1))
    }

    /// What a slot's RocksDB gets with `state.backend.rocksdb.memory.managed: true` (Flink's
    /// default) in a streaming job whose only managed-memory consumer is the state backend: the
    /// slot's managed memory times the state backend's share (`MemoryManager#computeMemorySize`:
    /// rounded down).
    pub fn state_backend_per_slot(&self) -> u64 {
        (self.managed_per_slot() as f64 * self.state_backend_share).floor() as u64
    }

    /// `(Flink key, bytes)` for every derived size, as `BashJavaUtils GET_TM_RESOURCE_PARAMS`
    /// prints them (`-D key=<bytes>b`), then the totals under their keys.
    pub fn flink_sizes(&self) -> Vec<(&'static str, u64)> {
        vec![
            (FRAMEWORK_HEAP_KEY, self.framework_heap),
            (TASK_HEAP_KEY, self.task_heap),
            (FRAMEWORK_OFF_HEAP_KEY, self.framework_off_heap),
            (TASK_OFF_HEAP_KEY, self.task_off_heap),
            (NETWORK_MIN_KEY, self.network),
            (NETWORK_MAX_KEY, self.network),
            (MANAGED_SIZE_KEY, self.managed),
            (METASPACE_KEY, self.jvm_metaspace),
            (OVERHEAD_MIN_KEY, self.jvm_overhead),
            (OVERHEAD_MAX_KEY, self.jvm_overhead),
            (FLINK_SIZE_KEY, self.total_flink()),
            (PROCESS_SIZE_KEY, self.total_process()),
        ]
    }
}

impl fmt::Display for TmMemory {
    /// Flink's own "Final TaskExecutor Memory configuration" tree, sizes with their bytes.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let rows: [(&str, u64); 13] = [
            ("Total Process Memory", self.total_process()),
            ("  Total Flink Memory", self.total_flink()),
            ("    Total JVM Heap Memory", self.jvm_heap()),
            ("      Framework", self.framework_heap),
            ("      Task", self.task_heap),
            (
                "    Total Off-heap Memory",
                self.total_flink() - self.jvm_heap(),
            ),
            ("      Managed", self.managed),
            ("      Total JVM Direct Memory", self.jvm_direct()),
            ("        Framework", self.framework_off_heap),
            ("        Task", self.task_off_heap),
            ("        Network", self.network),
            ("  JVM Metaspace", self.jvm_metaspace),
            ("  JVM Overhead", self.jvm_overhead),
        ];
        for (name, bytes) in rows {
            writeln!(f, "{name:<31} {:>11} ({bytes} bytes)", human(bytes))?;
        }
        Ok(())
    }
}

fn bad(key: &str, value: &str, expects: &'static str) -> TmMemoryError {
    TmMemoryError::BadValue {
        key: key.to_string(),
        value: value.to_string(),
        expects,
    }
}
