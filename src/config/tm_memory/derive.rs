//! Flink's derivation of a TaskManager's memory from its configuration, to the byte
//! (`TaskExecutorProcessUtils`, `TaskExecutorFlinkMemoryUtils`, `ProcessMemoryUtils`): the
//! fine-grained sizes, total Flink memory or total process memory first, the rest in Flink's
//! order, with Flink's refusals in its words; `MemorySize#multiply` for every fraction.

use super::syntax::human;
use super::{
    DEFAULT_CONSUMER_WEIGHTS, DEFAULT_FRAMEWORK_HEAP, DEFAULT_FRAMEWORK_OFF_HEAP,
    DEFAULT_MANAGED_FRACTION, DEFAULT_METASPACE, DEFAULT_NETWORK_FRACTION, DEFAULT_NETWORK_MAX,
    DEFAULT_NETWORK_MIN, DEFAULT_OVERHEAD_FRACTION, DEFAULT_OVERHEAD_MAX, DEFAULT_OVERHEAD_MIN,
    DEFAULT_SLOTS, DEFAULT_TASK_OFF_HEAP, FLINK_SIZE_KEY, MANAGED_FRACTION_KEY, MANAGED_SIZE_KEY,
    NETWORK_FRACTION_KEY, OVERHEAD_FRACTION_KEY, PROCESS_SIZE_KEY, TASK_HEAP_KEY, TmMemory,
    TmMemoryConfig, TmMemoryError,
};

impl TmMemoryConfig {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::tm_memory::SLOTS_KEY;

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
