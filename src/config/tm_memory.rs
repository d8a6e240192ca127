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
//! of configurations, and the unit tests below freeze that table.
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

use std::fmt;

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

    /// The TaskManager's memory, derived as Flink 1.20 derives it; Flink's refusals as errors in
    /// its words.
    pub fn derive(&self) -> Result<TmMemory, TmMemoryError> {
        let overhead_range = RangeFraction::new(
            self.jvm_overhead_min.unwrap_or(DEFAULT_OVERHEAD_MIN),
            self.jvm_overhead_max.unwrap_or(DEFAULT_OVERHEAD_MAX),
            self.jvm_overhead_fraction
                .unwrap_or(DEFAULT_OVERHEAD_FRACTION),
            OVERHEAD_FRACTION_KEY,
        )?;
        // Flink's checks on the network range happen when it is used; its errors are the same.
        let metaspace = self.jvm_metaspace.unwrap_or(DEFAULT_METASPACE);
        let (flink, overhead) = if self.task_heap.is_some() && self.managed_size.is_some() {
            // Both required fine-grained sizes: everything else derives from them.
            let flink = self.derive_fine_grained()?;
            let overhead = self.overhead_derive_from_total_flink(flink.total(), &overhead_range)?;
            (flink, overhead)
        } else if let Some(total_flink) = self.flink_size {
            let flink = self.derive_from_total_flink(total_flink)?;
            let overhead = self.overhead_derive_from_total_flink(total_flink, &overhead_range)?;
            (flink, overhead)
        } else if let Some(process) = self.process_size {
            let overhead = overhead_range.derive(process);
            if metaspace.saturating_add(overhead) > process {
                return Err(TmMemoryError::Invalid(format!(
                    "Sum of configured JVM Metaspace ({}) and JVM Overhead ({}) exceed configured Total Process Memory ({}).",
                    human(metaspace),
                    human(overhead),
                    human(process)
                )));
            }
            let flink = self.derive_from_total_flink(process - metaspace - overhead)?;
            (flink, overhead)
        } else {
            return Err(TmMemoryError::Invalid(format!(
                "Either required fine-grained memory ({TASK_HEAP_KEY} and {MANAGED_SIZE_KEY}), or Total Flink Memory size ({FLINK_SIZE_KEY}), or Total Process Memory size ({PROCESS_SIZE_KEY}) need to be configured explicitly."
            )));
        };
        let weights = self
            .consumer_weights
            .clone()
            .unwrap_or_else(default_weights);
        Ok(TmMemory {
            framework_heap: flink.framework_heap,
            task_heap: flink.task_heap,
            framework_off_heap: flink.framework_off_heap,
            task_off_heap: flink.task_off_heap,
            network: flink.network,
            managed: flink.managed,
            jvm_metaspace: metaspace,
            jvm_overhead: overhead,
            slots: self.slots.unwrap_or(DEFAULT_SLOTS),
            state_backend_share: state_backend_share(&weights),
        })
    }

    fn framework_heap(&self) -> u64 {
        self.framework_heap.unwrap_or(DEFAULT_FRAMEWORK_HEAP)
    }
    fn framework_off_heap(&self) -> u64 {
        self.framework_off_heap
            .unwrap_or(DEFAULT_FRAMEWORK_OFF_HEAP)
    }
    fn task_off_heap(&self) -> u64 {
        self.task_off_heap.unwrap_or(DEFAULT_TASK_OFF_HEAP)
    }

    fn network_range(&self) -> Result<RangeFraction, TmMemoryError> {
        RangeFraction::new(
            self.network_min.unwrap_or(DEFAULT_NETWORK_MIN),
            self.network_max.unwrap_or(DEFAULT_NETWORK_MAX),
            self.network_fraction.unwrap_or(DEFAULT_NETWORK_FRACTION),
            NETWORK_FRACTION_KEY,
        )
    }

    fn managed(&self, total_flink: u64) -> Result<u64, TmMemoryError> {
        Ok(match self.managed_size {
            Some(size) => size,
            None => RangeFraction::new(
                0,
                i64::MAX as u64,
                self.managed_fraction.unwrap_or(DEFAULT_MANAGED_FRACTION),
                MANAGED_FRACTION_KEY,
            )?
            .derive(total_flink),
        })
    }

    /// `TaskExecutorFlinkMemoryUtils#deriveFromRequiredFineGrainedOptions`.
    fn derive_fine_grained(&self) -> Result<FlinkMemory, TmMemoryError> {
        let (Some(task_heap), Some(managed)) = (self.task_heap, self.managed_size) else {
            return Err(TmMemoryError::Invalid(format!(
                "{TASK_HEAP_KEY} and {MANAGED_SIZE_KEY} must both be set"
            )));
        };
        let network = match self.flink_size {
            Some(total) => self.network_left(task_heap, managed, total)?,
            None => self
                .network_range()?
                .derive_inverse(self.without_network(task_heap, managed)?),
        };
        Ok(FlinkMemory {
            framework_heap: self.framework_heap(),
            task_heap,
            framework_off_heap: self.framework_off_heap(),
            task_off_heap: self.task_off_heap(),
            network,
            managed,
        })
    }

    /// Every Flink memory component but the network's.
    fn without_network(&self, task_heap: u64, managed: u64) -> Result<u64, TmMemoryError> {
        sum(&[
            self.framework_heap(),
            self.framework_off_heap(),
            task_heap,
            self.task_off_heap(),
            managed,
        ])
    }

    /// The network memory left in `total` by the other components, checked against its range.
    fn network_left(&self, task_heap: u64, managed: u64, total: u64) -> Result<u64, TmMemoryError> {
        let without_network = self.without_network(task_heap, managed)?;
        if without_network > total {
            return Err(exceeds(self, task_heap, managed, total));
        }
        let network = total - without_network;
        self.check_network(network)?;
        Ok(network)
    }

    /// `TaskExecutorFlinkMemoryUtils#deriveFromTotalFlinkMemory`.
    fn derive_from_total_flink(&self, total: u64) -> Result<FlinkMemory, TmMemoryError> {
        let managed = self.managed(total)?;
        let (task_heap, network) = match self.task_heap {
            // Managed first, the rest is network (checked against its range).
            Some(task_heap) => (task_heap, self.network_left(task_heap, managed, total)?),
            None => {
                let network = self.network_range()?.derive(total);
                let without_task_heap = sum(&[
                    self.framework_heap(),
                    self.framework_off_heap(),
                    self.task_off_heap(),
                    managed,
                    network,
                ])?;
                if without_task_heap > total {
                    return Err(TmMemoryError::Invalid(format!(
                        "Sum of configured Framework Heap Memory ({}), Framework Off-Heap Memory ({}), Task Off-Heap Memory ({}), Managed Memory ({}) and Network Memory ({}) exceed configured Total Flink Memory ({}).",
                        human(self.framework_heap()),
                        human(self.framework_off_heap()),
                        human(self.task_off_heap()),
                        human(managed),
                        human(network),
                        human(total)
                    )));
                }
                (total - without_task_heap, network)
            }
        };
        Ok(FlinkMemory {
            framework_heap: self.framework_heap(),
            task_heap,
            framework_off_heap: self.framework_off_heap(),
            task_off_heap: self.task_off_heap(),
            network,
            managed,
        })
    }

    /// Network memory left over from explicitly set sizes must lie in the network range.
    fn check_network(&self, network: u64) -> Result<(), TmMemoryError> {
        let range = self.network_range()?;
        if network > range.max || network < range.min {
            return Err(TmMemoryError::Invalid(format!(
                "If Total Flink, Task Heap and (or) Managed Memory sizes are explicitly configured then the Network Memory size is the rest of the Total Flink memory after subtracting all other configured types of memory, but the derived Network Memory ({}) is not in configured Network Memory range [{}, {}].",
                human(network),
                human(range.min),
                human(range.max)
            )));
        }
        Ok(())
    }

    /// `ProcessMemoryUtils#deriveJvmMetaspaceAndOverheadFromTotalFlinkMemory`: the overhead.
    fn overhead_derive_from_total_flink(
        &self,
        total_flink: u64,
        range: &RangeFraction,
    ) -> Result<u64, TmMemoryError> {
        let metaspace = self.jvm_metaspace.unwrap_or(DEFAULT_METASPACE);
        let flink_and_metaspace = sum(&[total_flink, metaspace])?;
        match self.process_size {
            Some(process) => {
                if process < flink_and_metaspace {
                    return Err(TmMemoryError::Invalid(format!(
                        "The configured Total Process Memory size ({}) is less than the sum of the derived Total Flink Memory size ({}) and the configured or default JVM Metaspace size ({}).",
                        human(process),
                        human(total_flink),
                        human(metaspace)
                    )));
                }
                let overhead = process - flink_and_metaspace;
                if overhead > range.max || overhead < range.min {
                    return Err(TmMemoryError::Invalid(format!(
                        "Derived JVM Overhead size ({}) is not in configured JVM Overhead range [{}, {}].",
                        human(overhead),
                        human(range.min),
                        human(range.max)
                    )));
                }
                Ok(overhead)
            }
            None => Ok(range.derive_inverse(flink_and_metaspace)),
        }
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

/// The six Flink memory components.
struct FlinkMemory {
    framework_heap: u64,
    task_heap: u64,
    framework_off_heap: u64,
    task_off_heap: u64,
    network: u64,
    managed: u64,
}

impl FlinkMemory {
    fn total(&self) -> u64 {
        self.framework_heap
            + self.task_heap
            + self.framework_off_heap
            + self.task_off_heap
            + self.network
            + self.managed
    }
}

/// Flink's `RangeFraction`: a fraction of a base, capped to `[min, max]`.
struct RangeFraction {
    min: u64,
    max: u64,
    /// The `float` Flink read, widened to `double` as `config.getFloat` returns it.
    fraction: f64,
}

impl RangeFraction {
    fn new(min: u64, max: u64, fraction: f32, key: &str) -> Result<RangeFraction, TmMemoryError> {
        if min > max {
            return Err(TmMemoryError::Invalid(format!(
                "Inconsistently configured {key} ({fraction}) and its min ({}), max ({}) value: min value must be less or equal to max value",
                human(min),
                human(max)
            )));
        }
        if !(0.0..1.0).contains(&fraction) {
            return Err(TmMemoryError::Invalid(format!(
                "Inconsistently configured {key} ({fraction}) and its min ({}), max ({}) value: fraction must be in [0, 1)",
                human(min),
                human(max)
            )));
        }
        Ok(RangeFraction {
            min,
            max,
            fraction: f64::from(fraction),
        })
    }

    fn cap(&self, bytes: u64) -> u64 {
        bytes.clamp(self.min, self.max.max(self.min))
    }

    /// `ProcessMemoryUtils#deriveWithFraction`.
    fn derive(&self, base: u64) -> u64 {
        self.cap(multiply(base, self.fraction))
    }

    /// `ProcessMemoryUtils#deriveWithInverseFraction`: the part that is `fraction` of the whole
    /// that `base` is the rest of.
    fn derive_inverse(&self, base: u64) -> u64 {
        self.cap(multiply(base, self.fraction / (1.0 - self.fraction)))
    }
}

/// Flink's `MemorySize#multiply(double)`: `BigDecimal.valueOf(bytes) *
/// BigDecimal.valueOf(multiplier)` (the double's shortest decimal), truncated toward zero.
pub fn multiply(bytes: u64, multiplier: f64) -> u64 {
    // `{:e}` writes the shortest digits that read back as the same double, as
    // Double.toString does: d.ddddde-N.
    let text = format!("{multiplier:e}");
    let Some((mantissa, exponent)) = text.split_once('e') else {
        return (bytes as f64 * multiplier) as u64;
    };
    let Ok(exponent) = exponent.parse::<i32>() else {
        return (bytes as f64 * multiplier) as u64;
    };
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let Ok(digits) = digits.parse::<u128>() else {
        return (bytes as f64 * multiplier) as u64;
    };
    // value = digits * 10^(exponent - (number of digits after the point))
    let fraction_digits = mantissa.split_once('.').map_or(0, |(_, f)| f.len()) as i32;
    let scale = exponent - fraction_digits;
    let product = u128::from(bytes) * digits;
    let result = if scale >= 0 {
        product.saturating_mul(10u128.saturating_pow(scale as u32))
    } else {
        let divisor = 10u128.checked_pow((-scale) as u32);
        divisor.map_or(0, |d| product / d)
    };
    result.min(u128::from(u64::MAX)) as u64
}

/// A size in Flink's `MemorySize` syntax: a whole number, then optionally a unit (`b`/`bytes`,
/// `k`/`kb`/`kibibytes`, `m`/`mb`/`mebibytes`, `g`/`gb`/`gibibytes`, `t`/`tb`/`tebibytes`, any
/// case, spaces allowed between). A bare number is bytes.
pub fn parse_memory_size(text: &str) -> Result<u64, &'static str> {
    const EXPECTS: &str =
        "a memory size in Flink's syntax: a whole number and a unit, such as 1728m, 4 gb or 512kb";
    let text = text.trim();
    let end = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    if end == 0 {
        return Err(EXPECTS);
    }
    let number: u64 = text[..end].parse().map_err(|_| EXPECTS)?;
    let unit = text[end..].trim().to_ascii_lowercase();
    let factor: u64 = match unit.as_str() {
        "" | "b" | "bytes" => 1,
        "k" | "kb" | "kibibytes" => 1 << 10,
        "m" | "mb" | "mebibytes" => 1 << 20,
        "g" | "gb" | "gibibytes" => 1 << 30,
        "t" | "tb" | "tebibytes" => 1 << 40,
        _ => return Err(EXPECTS),
    };
    number
        .checked_mul(factor)
        .filter(|b| *b <= i64::MAX as u64)
        .ok_or(EXPECTS)
}

/// A size in Flink's syntax that reads back exactly: the largest unit that divides it.
pub fn format_memory_size(bytes: u64) -> String {
    for (unit, factor) in [
        ("tb", 1u64 << 40),
        ("gb", 1 << 30),
        ("mb", 1 << 20),
        ("kb", 1 << 10),
    ] {
        if bytes != 0 && bytes.is_multiple_of(factor) {
            return format!("{}{unit}", bytes / factor);
        }
    }
    format!("{bytes}b")
}

const FRACTION_EXPECTS: &str = "a fraction such as 0.4 (Flink reads it as a float)";

fn parse_fraction(text: &str) -> Option<f32> {
    text.trim().parse::<f32>().ok().filter(|f| f.is_finite())
}

fn parse_weights(text: &str) -> Option<Vec<(String, u32)>> {
    let mut weights = Vec::new();
    for pair in text.split(',').filter(|p| !p.trim().is_empty()) {
        let (consumer, weight) = pair.split_once(':')?;
        let consumer = consumer.trim().to_ascii_uppercase();
        if !["OPERATOR", "STATE_BACKEND", "PYTHON", "DATAPROC"].contains(&consumer.as_str()) {
            return None;
        }
        weights.push((consumer, weight.trim().parse().ok()?));
    }
    (!weights.is_empty()).then_some(weights)
}

fn default_weights() -> Vec<(String, u32)> {
    DEFAULT_CONSUMER_WEIGHTS
        .iter()
        .map(|(c, w)| ((*c).to_string(), *w))
        .collect()
}

/// The state backend's share of a slot in a streaming job with no other managed-memory
/// consumer (`ManagedMemoryUtils#getFractionRoundedDown`: four decimals, rounded down). The
/// legacy `DATAPROC` weight stands for both OPERATOR and STATE_BACKEND when neither is given.
fn state_backend_share(weights: &[(String, u32)]) -> f64 {
    let weight = |name: &str| weights.iter().find(|(c, _)| c == name).map(|(_, w)| *w);
    let state_backend = weight("STATE_BACKEND")
        .or_else(|| weight("DATAPROC"))
        .unwrap_or(0);
    // Only the state backend declares managed memory in the slot: its weight over the sum of
    // the declared consumers' weights is its own over itself, 1 (0 with weight 0: Flink then
    // gives RocksDB no managed memory).
    if state_backend == 0 { 0.0 } else { 1.0 }
}

fn sum(parts: &[u64]) -> Result<u64, TmMemoryError> {
    parts
        .iter()
        .try_fold(0u64, |acc, p| acc.checked_add(*p))
        .ok_or_else(|| TmMemoryError::Invalid("memory sizes add up beyond 8 EiB".to_string()))
}

fn bad(key: &str, value: &str, expects: &'static str) -> TmMemoryError {
    TmMemoryError::BadValue {
        key: key.to_string(),
        value: value.to_string(),
        expects,
    }
}

fn exceeds(config: &TmMemoryConfig, task_heap: u64, managed: u64, total: u64) -> TmMemoryError {
    TmMemoryError::Invalid(format!(
        "Sum of configured Framework Heap Memory ({}), Framework Off-Heap Memory ({}), Task Heap Memory ({}), Task Off-Heap Memory ({}) and Managed Memory ({}) exceed configured Total Flink Memory ({}).",
        human(config.framework_heap()),
        human(config.framework_off_heap()),
        human(task_heap),
        human(config.task_off_heap()),
        human(managed),
        human(total)
    ))
}

/// A size as people read it (`1.69 GiB`).
fn human(bytes: u64) -> String {
    let units = ["bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < units.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} bytes")
    } else {
        format!("{value:.3} {}", units[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn derive(pairs: &[(&str, &str)]) -> TmMemory {
        TmMemoryConfig::from_pairs(pairs.iter().copied())
            .unwrap()
            .derive()
            .unwrap()
    }

    #[test]
    fn multiply_is_flinks_big_decimal_of_the_float_fraction() {
        // 0.4f is 0.4000000059604645 as a double: Flink's 1.25 GiB * 0.4 is 8 bytes above 512 MiB.
        assert_eq!(multiply(1_342_177_280, f64::from(0.4f32)), 536_870_920);
        assert_eq!(multiply(1_342_177_280, f64::from(0.1f32)), 134_217_730);
        assert_eq!(multiply(1000, 0.5), 500);
        assert_eq!(multiply(3, 1.0 / 3.0), 0);
    }

    #[test]
    fn memory_sizes_parse_as_flink_parses_them() {
        assert_eq!(parse_memory_size("1728m"), Ok(1728 << 20));
        assert_eq!(parse_memory_size("4 gb"), Ok(4 << 30));
        assert_eq!(parse_memory_size("512"), Ok(512));
        assert_eq!(parse_memory_size("64 MEBIBYTES"), Ok(64 << 20));
        assert!(parse_memory_size("1.5g").is_err());
        assert!(parse_memory_size("lots").is_err());
        assert_eq!(format_memory_size(72 << 20), "72mb");
        assert_eq!(format_memory_size(536_870_920), "536870920b");
        assert_eq!(format_memory_size(0), "0b");
    }

    #[test]
    fn nothing_to_derive_from_is_flinks_error() {
        let err = TmMemoryConfig::default().derive().unwrap_err();
        assert!(err.to_string().contains(PROCESS_SIZE_KEY), "{err}");
        let err = TmMemoryConfig::from_pairs([("taskmanager.heap.size", "1g")]).unwrap_err();
        assert!(err.to_string().contains("legacy"), "{err}");
        let err = TmMemoryConfig::from_pairs([(PROCESS_SIZE_KEY, "1.5g")]).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("'taskmanager.memory.process.size: 1.5g': a memory size"),
            "{err}"
        );
    }

    /// A configuration: (Flink key, value) pairs.
    type Setting = &'static [(&'static str, &'static str)];

    /// Each row: the configuration, then what Flink 1.20.1's calculator (`BashJavaUtils
    /// GET_TM_RESOURCE_PARAMS`, run by `parity/tm_memory_check.py --flink-only`) printed for
    /// it: framework heap, task heap, framework off-heap, task off-heap, network, managed,
    /// metaspace, overhead.
    #[rustfmt::skip]
    pub(crate) const FLINK_TABLE: &[(Setting, [u64; 8])] = &[
    (&[("taskmanager.memory.process.size", "1728m"), ("taskmanager.numberOfTaskSlots", "4")], [134217728, 402653174, 134217728, 0, 134217730, 536870920, 268435456, 201326592]),
    (&[("taskmanager.memory.process.size", "4g"), ("taskmanager.memory.managed.fraction", "0.5"), ("taskmanager.numberOfTaskSlots", "4")], [134217728, 1170378581, 134217728, 0, 359703515, 1798517552, 268435456, 429496736]),
    (&[("taskmanager.memory.process.size", "8g"), ("taskmanager.memory.managed.size", "3g"), ("taskmanager.numberOfTaskSlots", "4")], [134217728, 3226594159, 134217728, 0, 746250577, 3221225472, 268435456, 858993472]),
    (&[("taskmanager.memory.flink.size", "2g"), ("taskmanager.numberOfTaskSlots", "2")], [134217728, 805306352, 134217728, 0, 214748368, 858993472, 268435456, 268435460]),
    (&[("taskmanager.memory.task.heap.size", "1g"), ("taskmanager.memory.managed.size", "2g")], [134217728, 1073741824, 134217728, 0, 387740109, 2147483648, 268435456, 460648506]),
    (&[("taskmanager.memory.process.size", "16g"), ("taskmanager.memory.jvm-overhead.max", "2g"), ("taskmanager.memory.jvm-overhead.fraction", "0.15"), ("taskmanager.memory.jvm-metaspace.size", "512m"), ("taskmanager.memory.network.fraction", "0.15"), ("taskmanager.memory.network.min", "128m"), ("taskmanager.memory.network.max", "2g"), ("taskmanager.numberOfTaskSlots", "8")], [134217728, 6281389584, 134217728, 0, 2147483648, 5798205936, 536870912, 2147483648]),
    (&[("taskmanager.memory.process.size", "1g")], [134217728, 26843542, 134217728, 0, 67108864, 241591914, 268435456, 201326592]),
    (&[("taskmanager.memory.process.size", "6g"), ("taskmanager.memory.flink.size", "5g")], [134217728, 2415919064, 134217728, 0, 536870920, 2147483680, 268435456, 805306368]),
    (&[("taskmanager.memory.process.size", "3000m"), ("taskmanager.memory.task.off-heap.size", "512m"), ("taskmanager.memory.framework.off-heap.size", "256m"), ("taskmanager.memory.managed.fraction", "0.35"), ("taskmanager.numberOfTaskSlots", "3")], [134217728, 469971774, 268435456, 536870912, 256271977, 896951893, 268435456, 314572804]),
    (&[("taskmanager.memory.process.size", "32g"), ("taskmanager.numberOfTaskSlots", "16")], [134217728, 16240344842, 134217728, 0, 3301756158, 13207024632, 268435456, 1073741824]),
    (&[("taskmanager.memory.flink.size", "4g"), ("taskmanager.memory.task.heap.size", "1g")], [134217728, 1073741824, 134217728, 0, 1234803072, 1717986944, 268435456, 507044758]),
    (&[("taskmanager.memory.process.size", "2g"), ("taskmanager.memory.size", "700m"), ("taskmanager.network.memory.fraction", "0.2")], [134217728, 329001199, 134217728, 0, 332859969, 734003200, 268435456, 214748368]),
    ];

    #[test]
    fn the_derivation_equals_flinks_calculator() {
        for (config, expected) in FLINK_TABLE {
            let m = derive(config);
            let got = [
                m.framework_heap,
                m.task_heap,
                m.framework_off_heap,
                m.task_off_heap,
                m.network,
                m.managed,
                m.jvm_metaspace,
                m.jvm_overhead,
            ];
            assert_eq!(&got, expected, "{config:?}");
        }
    }

    #[test]
    fn flinks_default_1728m_process() {
        let m = derive(&[(PROCESS_SIZE_KEY, "1728m"), (SLOTS_KEY, "4")]);
        assert_eq!(m.managed, 536_870_920);
        assert_eq!(m.network, 134_217_730);
        assert_eq!(m.task_heap, 402_653_174);
        assert_eq!(m.jvm_overhead, 192 << 20);
        assert_eq!(m.total_process(), 1728 << 20);
        assert_eq!(m.managed_per_slot(), 134_217_730);
        assert_eq!(m.state_backend_per_slot(), 134_217_730);
    }
}
