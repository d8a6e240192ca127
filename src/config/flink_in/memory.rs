//! A slot's RocksDB memory budget from a Flink configuration's memory keys, as Flink finds it
//! (`RocksDBSharedResourcesFactory`): `state.backend.rocksdb.memory.fixed-per-slot`, else the
//! slot's managed memory (derived by `tm_memory` from the TaskManager's keys), else
//! `fixed-per-tm` with `memory.managed: false`; which keys counted and which did not, and why.

use std::collections::BTreeMap;

use super::values::{FlinkValue, FromFlink, SIZE_SYNTAX, expected, parse_flink_size};
use super::{Ignored, Reader};
use crate::config::profile::{FIXED_PER_SLOT_KEY, MemoryMode};
use crate::config::tm_memory::{self, TmMemoryConfig, TmMemoryError};
use crate::config::{ByteSize, ConfigError};

/// The memory keys statebench reads (a slot's RocksDB budget is derived from them).
const FIXED_PER_SLOT: &str = FIXED_PER_SLOT_KEY;
const FIXED_PER_TM: &str = "state.backend.rocksdb.memory.fixed-per-tm";
const USE_MANAGED: &str = "state.backend.rocksdb.memory.managed";
const MANAGED_SIZE: &str = tm_memory::MANAGED_SIZE_KEY;
const MANAGED_FRACTION: &str = tm_memory::MANAGED_FRACTION_KEY;
const PROCESS_SIZE: &str = tm_memory::PROCESS_SIZE_KEY;
const FLINK_SIZE: &str = tm_memory::FLINK_SIZE_KEY;
const SLOTS: &str = tm_memory::SLOTS_KEY;

/// The memory keys, as read: RocksDB's own, and the TaskManager's (`tm_memory` reads those).
#[derive(Default)]
pub(super) struct Memory {
    pub(super) values: BTreeMap<&'static str, (FlinkValue, usize)>,
    /// TaskManager memory keys in file order: (key, value, line).
    pub(super) tm: Vec<(String, FlinkValue, usize)>,
    /// `consumer-weights.<NAME>: weight` (a nested map, which Flink reads as the map's entries).
    pub(super) weight_entries: Vec<(String, FlinkValue, usize)>,
}

/// RocksDB's memory keys, which say where a slot's budget comes from.
pub(super) const ROCKSDB_MEMORY_KEYS: &[&str] = &[FIXED_PER_SLOT, FIXED_PER_TM, USE_MANAGED];

pub(super) fn is_memory_key(key: &str) -> bool {
    ROCKSDB_MEMORY_KEYS.contains(&key) || TmMemoryConfig::is_memory_key(key)
}

/// A slot's managed memory for RocksDB, how it was found, the memory keys that counted and
/// those that were read but did not count (with why).
pub(super) struct MemoryOutcome {
    pub(super) bytes: Option<u64>,
    /// Where the budget lives: managed memory, fixed per slot, or nowhere (unmanaged).
    pub(super) mode: MemoryMode,
    pub(super) explanation: String,
    pub(super) used: Vec<String>,
    pub(super) unused: Vec<Ignored>,
}

impl Reader<'_> {
    fn size(&self, mem: &Memory, key: &str) -> Result<Option<u64>, ConfigError> {
        mem.values
            .get(key)
            .map(|(v, line)| {
                v.scalar()
                    .ok()
                    .and_then(parse_flink_size)
                    .ok_or_else(|| self.bad(key, *line, expected(v, SIZE_SYNTAX)))
            })
            .transpose()
    }

    /// The TaskManager memory keys, parsed as Flink parses them; legacy keys `tm_memory` does
    /// not derive from come back apart (key, line, why).
    #[allow(clippy::type_complexity)]
    fn tm_config(
        &self,
        mem: &Memory,
    ) -> Result<(TmMemoryConfig, Vec<(String, usize, String)>), ConfigError> {
        let mut config = TmMemoryConfig::default();
        let mut legacy = Vec::new();
        let mut weights: Vec<String> = Vec::new();
        let mut weights_line = 0;
        for (key, value, line) in &mem.tm {
            let text = match value {
                FlinkValue::List(items) if key == tm_memory::CONSUMER_WEIGHTS_KEY => {
                    items.join(",")
                }
                other => other
                    .scalar()
                    .map_err(|m| self.bad(key, *line, format!("{m} where Flink expects a value")))?
                    .to_string(),
            };
            if key == tm_memory::CONSUMER_WEIGHTS_KEY {
                weights.push(text);
                weights_line = *line;
                continue;
            }
            match config.set(key, &text) {
                Ok(_) => {}
                Err(TmMemoryError::BadValue { value, expects, .. }) => {
                    return Err(self.bad(
                        key,
                        *line,
                        format!("invalid value '{value}': Flink expects {expects}"),
                    ));
                }
                Err(TmMemoryError::Unsupported { why, .. }) => {
                    legacy.push((key.clone(), *line, why.to_string()));
                }
                Err(TmMemoryError::Invalid(message)) => {
                    return Err(self.bad(key, *line, message));
                }
            }
        }
        for (name, value, line) in &mem.weight_entries {
            weights.push(format!("{name}:{}", value.show()));
            weights_line = *line;
        }
        if !weights.is_empty() {
            let key = tm_memory::CONSUMER_WEIGHTS_KEY;
            let text = weights.join(",");
            config.set(key, &text).map_err(|e| match e {
                TmMemoryError::BadValue { value, expects, .. } => self.bad(
                    key,
                    weights_line,
                    format!("invalid value '{value}': Flink expects {expects}"),
                ),
                other => self.bad(key, weights_line, other.to_string()),
            })?;
        }
        Ok((config, legacy))
    }

    pub(super) fn memory(&self, mem: &Memory) -> Result<MemoryOutcome, ConfigError> {
        let line_of = |key: &str| {
            mem.values
                .get(key)
                .map(|(_, l)| *l)
                .or_else(|| mem.tm.iter().find(|(k, _, _)| k == key).map(|(_, _, l)| *l))
                .unwrap_or(0)
        };
        let (tm, legacy) = self.tm_config(mem)?;
        let slots = u64::from(tm.slots.unwrap_or(1));
        let use_managed = match mem.values.get(USE_MANAGED) {
            Some((v, line)) => {
                <bool as FromFlink>::from_flink(v).map_err(|m| self.bad(USE_MANAGED, *line, m))?
                    == "true"
            }
            None => true,
        };
        let fixed_slot = self.size(mem, FIXED_PER_SLOT)?;
        let fixed_tm = self.size(mem, FIXED_PER_TM)?;
        // The keys read, but for the RocksDB budget found another way.
        let tm_keys: Vec<String> = mem
            .tm
            .iter()
            .map(|(k, _, _)| k.clone())
            .chain(
                (!mem.weight_entries.is_empty())
                    .then(|| tm_memory::CONSUMER_WEIGHTS_KEY.to_string()),
            )
            .collect();
        let unused_because = |keys: &[String], why: &str| -> Vec<Ignored> {
            keys.iter()
                .map(|k| Ignored {
                    key: k.clone(),
                    why: Some(why.to_string()),
                })
                .collect()
        };
        let slots_said = if tm.slots.is_some() {
            format!("{slots} slot(s) ({SLOTS})")
        } else {
            "1 slot (Flink's default taskmanager.numberOfTaskSlots)".to_string()
        };
        // RocksDBSharedResourcesFactory#from: fixed-per-slot first, then managed memory, then
        // fixed-per-tm; without any of them each column family gets its own cache.
        if let Some(bytes) = fixed_slot {
            let mut others: Vec<String> = tm_keys.clone();
            others.extend(
                [FIXED_PER_TM, USE_MANAGED]
                    .iter()
                    .filter(|k| mem.values.contains_key(**k))
                    .map(|k| k.to_string()),
            );
            return Ok(MemoryOutcome {
                bytes: Some(bytes),
                mode: MemoryMode::FixedPerSlot,
                explanation: format!(
                    "{} from {FIXED_PER_SLOT} (memory outside managed memory, which the TaskManager's off-heap budget must cover; in Flink it takes precedence over managed memory)",
                    ByteSize(bytes)
                ),
                used: vec![FIXED_PER_SLOT.to_string()],
                unused: others
                    .iter()
                    .map(|k| Ignored {
                        key: k.clone(),
                        why: Some(if k == tm_memory::TASK_OFF_HEAP_KEY {
                            "the off-heap memory that must cover fixed-per-slot; RocksDB is measured with fixed-per-slot".to_string()
                        } else {
                            "fixed-per-slot is set: RocksDB's budget is outside managed memory".to_string()
                        }),
                    })
                    .collect(),
            });
        }
        if !use_managed {
            if let Some(tm_bytes) = fixed_tm {
                let per_slot = tm_bytes / slots;
                let others: Vec<String> = tm_keys
                    .iter()
                    .filter(|k| k.as_str() != SLOTS)
                    .cloned()
                    .collect();
                return Ok(MemoryOutcome {
                    bytes: Some(per_slot),
                    mode: MemoryMode::FixedPerSlot,
                    explanation: format!(
                        "{} = {FIXED_PER_TM} {} / {slots_said}: with {USE_MANAGED}: false Flink shares one budget among all slots of the TaskManager; statebench runs one slot with an equal share, so a slot that would use more than its share in Flink is measured with less",
                        ByteSize(per_slot),
                        ByteSize(tm_bytes),
                    ),
                    used: [FIXED_PER_TM, USE_MANAGED, SLOTS]
                        .iter()
                        .filter(|k| mem.values.contains_key(**k) || tm_keys.iter().any(|t| t == *k))
                        .map(|k| k.to_string())
                        .collect(),
                    unused: unused_because(
                        &others,
                        "state.backend.rocksdb.memory.managed is false: RocksDB does not use managed memory",
                    ),
                });
            }
            // RocksDBSharedResourcesFactory finds no shared resources: every column family gets
            // its own cache (block.cache-size) and memtables with no WriteBufferManager.
            return Ok(MemoryOutcome {
                bytes: None,
                mode: MemoryMode::Unmanaged,
                explanation: format!(
                    "none: with {USE_MANAGED}: false and neither {FIXED_PER_SLOT} nor {FIXED_PER_TM} set, Flink gives RocksDB no budget: every column family gets its own block cache (state.backend.rocksdb.block.cache-size) and memtables with no WriteBufferManager (memory.mode: unmanaged)"
                ),
                used: vec![USE_MANAGED.to_string()],
                unused: unused_because(
                    &tm_keys,
                    "state.backend.rocksdb.memory.managed is false: RocksDB does not use managed memory",
                ),
            });
        }
        let mut unused = Vec::new();
        if mem.values.contains_key(FIXED_PER_TM) {
            unused.push(Ignored {
                key: FIXED_PER_TM.to_string(),
                why: Some("used only with state.backend.rocksdb.memory.managed: false".to_string()),
            });
        }
        // ManagedMemoryUtils: STATE_BACKEND's weight, else the older DATAPROC's; unnamed is 0.
        if let Some(weights) = &tm.consumer_weights {
            let weight = |name: &str| weights.iter().find(|(c, _)| c == name).map(|(_, w)| *w);
            if weight("STATE_BACKEND").or(weight("DATAPROC")).unwrap_or(0) == 0 {
                return Err(self.bad(
                    tm_memory::CONSUMER_WEIGHTS_KEY,
                    line_of(tm_memory::CONSUMER_WEIGHTS_KEY).max(
                        mem.weight_entries.last().map_or(0, |(_, _, l)| *l),
                    ),
                    "gives the state backend (STATE_BACKEND, or DATAPROC) no weight: Flink would give RocksDB no managed memory; give STATE_BACKEND a weight above 0 (Flink's default is OPERATOR:70,STATE_BACKEND:70,PYTHON:30)".to_string(),
                ));
            }
        }
        let share = "the state backend is the only managed-memory consumer of statebench's job (a streaming job: no Python, no batch operators), so it gets all of the slot's managed memory";
        let derives =
            tm.process_size.is_some() || tm.flink_size.is_some() || tm.task_heap.is_some();
        if derives {
            // The TaskManager's memory as Flink derives it (it refuses what Flink refuses).
            let derived = tm.derive().map_err(|e| {
                let key = [PROCESS_SIZE, FLINK_SIZE, MANAGED_SIZE]
                    .into_iter()
                    .find(|k| tm_keys.iter().any(|t| t == k))
                    .unwrap_or(PROCESS_SIZE);
                self.bad(
                    key,
                    line_of(key),
                    format!("Flink refuses this TaskManager memory configuration: {e}"),
                )
            })?;
            let per_slot = derived.state_backend_per_slot();
            let how = if tm.managed_size.is_some() {
                format!("{MANAGED_SIZE} {}", ByteSize(derived.managed))
            } else {
                format!(
                    "managed memory {} ({MANAGED_FRACTION} {} of total Flink memory {}{})",
                    ByteSize(derived.managed),
                    tm.managed_fraction
                        .map_or("0.4 (Flink's default)".to_string(), |f| f.to_string()),
                    ByteSize(derived.total_flink()),
                    if tm.flink_size.is_some() {
                        String::new()
                    } else {
                        format!(
                            ", derived from {PROCESS_SIZE} {}",
                            ByteSize(derived.total_process())
                        )
                    }
                )
            };
            unused.extend(legacy.iter().map(|(k, _, why)| Ignored {
                key: k.clone(),
                why: Some(format!(
                    "{why}; statebench does not derive memory from it, the other memory keys count"
                )),
            }));
            return Ok(MemoryOutcome {
                bytes: Some(per_slot),
                mode: MemoryMode::Managed,
                explanation: format!("{} = {how} / {slots_said}; {share}", ByteSize(per_slot)),
                used: tm_keys,
                unused,
            });
        }
        if let Some(size) = tm.managed_size {
            let per_slot = size / slots;
            let (used, not_needed): (Vec<String>, Vec<String>) =
                tm_keys.into_iter().partition(|k| {
                    [MANAGED_SIZE, SLOTS, tm_memory::CONSUMER_WEIGHTS_KEY].contains(&k.as_str())
                });
            unused.extend(unused_because(
                &not_needed,
                "no TaskManager size (process, Flink or task heap) is set to derive from, and managed memory is given",
            ));
            unused.extend(legacy.iter().map(|(k, _, why)| Ignored {
                key: k.clone(),
                why: Some(why.clone()),
            }));
            return Ok(MemoryOutcome {
                bytes: Some(per_slot),
                mode: MemoryMode::Managed,
                explanation: format!(
                    "{} = {MANAGED_SIZE} {} / {slots_said}; {share}",
                    ByteSize(per_slot),
                    ByteSize(size)
                ),
                used,
                unused,
            });
        }
        if let Some((key, line, why)) = legacy.first() {
            return Err(self.bad(
                key,
                *line,
                format!(
                    "{key} is {why}: statebench does not derive memory from it; set {MANAGED_SIZE} (or {PROCESS_SIZE}) and {SLOTS}"
                ),
            ));
        }
        if !tm_keys.is_empty() {
            return Err(self.bad(
                &tm_keys[0],
                line_of(&tm_keys[0]),
                format!(
                    "managed memory cannot be derived from the TaskManager keys given: set {MANAGED_SIZE}, or the TaskManager's {PROCESS_SIZE} or {FLINK_SIZE} for {MANAGED_FRACTION} to apply to"
                ),
            ));
        }
        Ok(MemoryOutcome {
            bytes: None,
            mode: MemoryMode::Managed,
            explanation: "no TaskManager memory key is set: flink-default's 256mb (a TaskManager with 1 GB of managed memory and 4 slots); set taskmanager.memory.managed.size and taskmanager.numberOfTaskSlots for your cluster's".to_string(),
            used: Vec::new(),
            unused,
        })
    }
}
