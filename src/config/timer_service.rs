//! The timer service knobs: where Flink's RocksDB state backend keeps timers
//! (`state.backend.rocksdb.timer-service.factory`) and how many of each key group's timers the
//! RocksDB queue caches in memory (`state.backend.rocksdb.timer-service.cache-size`).

use serde::{Deserialize, Serialize};

use super::flink_in::{FlinkValue, FromFlink};
use super::profile::{KnobValue, Knobs};

/// Flink's `EmbeddedRocksDBStateBackend.PriorityQueueStateType`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum TimerFactory {
    /// Timers in RocksDB (`RocksDBPriorityQueueSetFactory`): a column family per queue, a
    /// cache of the smallest timers per key group. Flink's default since 1.10.
    #[serde(rename = "ROCKSDB", alias = "rocksdb")]
    RocksDb,
    /// Timers on the JVM heap (`HeapPriorityQueueSetFactory`): no RocksDB work at all for
    /// them; checkpoints write them as raw keyed state.
    #[serde(rename = "HEAP", alias = "heap")]
    Heap,
}

impl TimerFactory {
    pub fn name(self) -> &'static str {
        match self {
            TimerFactory::RocksDb => "ROCKSDB",
            TimerFactory::Heap => "HEAP",
        }
    }
}

impl KnobValue for TimerFactory {
    const EXPECTS: &'static str = "ROCKSDB or HEAP";
    fn show(&self) -> String {
        self.name().to_string()
    }
}

impl FromFlink for TimerFactory {
    /// Flink reads enum options in any case (`ConfigurationUtils#convertToEnum`).
    fn from_flink(value: &FlinkValue) -> Result<String, String> {
        match value.scalar().map(str::to_ascii_uppercase).as_deref() {
            Ok(v @ ("ROCKSDB" | "HEAP")) => Ok(v.to_string()),
            Ok(other) => Err(format!(
                "invalid value '{other}': Flink expects ROCKSDB or HEAP"
            )),
            Err(got) => Err(format!("{got} where Flink expects ROCKSDB or HEAP")),
        }
    }
}

/// What the profile's timer knobs forbid (Flink's own checks).
pub fn validate(k: &Knobs) -> Vec<String> {
    let mut problems = Vec::new();
    // RocksDBPriorityQueueSetFactory's constructor: checkArgument(cacheSize > 0).
    if k.timer_service_cache_size == 0 {
        problems.push(
            "'timer-service.cache-size' is 0 but must be at least 1 (Flink's RocksDBPriorityQueueSetFactory refuses 0); Flink's default is 128"
                .to_string(),
        );
    }
    problems
}
