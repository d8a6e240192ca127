//! RocksDB's memory beyond the managed memory it was given: what gets Flink containers killed.
//! A TaskManager reserves managed memory for RocksDB and nothing else for it; whatever RocksDB
//! holds beyond it (memtables the WriteBufferManager let grow past its limit, blocks pinned
//! beyond the cache's capacity, table readers outside the cache) comes out of the JVM overhead
//! (`taskmanager.memory.jvm-overhead.*`: 10 % of the process, at least 192 MiB by default),
//! which the JVM's own native memory shares. Beyond it the container is over its limit.

use super::Rule;
use crate::advisor::{Change, Evidence, Finding, Input, Severity};
use crate::config::units::human_bytes;

pub const RULE: Rule = Rule {
    id: "memory-overshoot",
    looks_for: "RocksDB's own memory accounting above its managed budget",
    check,
};

/// Beyond this share of the budget, the overshoot is a finding.
const SHARE: f64 = 0.10;
/// Flink's default `taskmanager.memory.jvm-overhead.min`: the least native headroom a
/// TaskManager has; an overshoot this large (per slot) takes all of it.
const JVM_OVERHEAD_MIN: u64 = 192 << 20;

fn check(input: &Input) -> Option<Finding> {
    let s = input.summary;
    if s.rocksdb_memory_unbudgeted {
        return unbudgeted(input);
    }
    let budget = s.rocksdb_memory_budget_bytes;
    let used = s.rocksdb_memory_max_bytes;
    if budget == 0 || used as f64 <= budget as f64 * (1.0 + SHARE) {
        return None;
    }
    let over = used - budget;
    let (from, to, samples) = input.when(|m| {
        let mem = &m.rocksdb.memory;
        mem.block_cache_capacity > 0
            && (mem.block_cache_usage + mem.table_readers_bytes) as f64
                > mem.block_cache_capacity as f64 * (1.0 + SHARE)
    })?;
    let severity = if over >= JVM_OVERHEAD_MIN {
        Severity::Critical
    } else {
        Severity::Warning
    };
    Some(Finding {
        id: RULE.id,
        severity,
        diagnosis: format!(
            "RocksDB held {} against its managed budget of {}: {} more than the TaskManager reserved for it. That memory comes out of the JVM overhead (at least 192 MiB by default, shared with the JVM's own native memory), per slot; beyond it the container exceeds its limit and is killed.",
            human_bytes(used as f64),
            human_bytes(budget as f64),
            human_bytes(over as f64)
        ),
        evidence: vec![
            Evidence::new(
                "RocksDB's memory at its peak (block cache with the memtables charged to it, table readers)",
                human_bytes(used as f64),
                format!(
                    "<= {} (the budget + {:.0} %)",
                    human_bytes(budget as f64 * (1.0 + SHARE)),
                    SHARE * 100.0
                ),
            ),
            Evidence::new(
                "over the budget",
                human_bytes(over as f64),
                format!(
                    "< {} (jvm-overhead.min)",
                    human_bytes(JVM_OVERHEAD_MIN as f64)
                ),
            ),
            Evidence::new(
                "samples over the budget",
                format!("{samples} of {}", input.snapshots.len()),
                "0",
            ),
            Evidence::new(
                "process RSS at its peak",
                human_bytes(s.process_rss_peak_bytes as f64),
                "-",
            ),
        ],
        from_secs: from,
        to_secs: to,
        recommendation: Vec::new(),
        memory_cost: 0,
        job_changes: Vec::new(),
        effect: None,
        alternatives: Vec::new(),
        note: Some(format!(
            "no profile key bounds this: raise taskmanager.memory.jvm-overhead.min (and .max) by at least {} per slot of the TaskManager, or find what grows past the cache (memtables beyond the WriteBufferManager's limit, pinned blocks, table readers)",
            human_bytes(over as f64)
        )),
        cost: None,
        overruled: Vec::new(),
    })
}

/// `memory.mode: unmanaged`: the TaskManager reserves nothing for RocksDB, so all of its memory
/// comes out of the JVM overhead. A finding once it holds a tenth of jvm-overhead.min; critical
/// at all of it.
fn unbudgeted(input: &Input) -> Option<Finding> {
    let s = input.summary;
    let used = s.rocksdb_memory_max_bytes;
    let floor = (JVM_OVERHEAD_MIN as f64 * SHARE) as u64;
    if used < floor {
        return None;
    }
    let (from, to, samples) = input.when(|m| m.rocksdb.memory.rocksdb_bytes() >= floor)?;
    let k = &input.profile.knobs;
    let severity = if used >= JVM_OVERHEAD_MIN {
        Severity::Critical
    } else {
        Severity::Warning
    };
    let last = input.snapshots.last().map(|m| m.rocksdb.memory);
    let readers = last.map_or(0, |m| m.table_readers_bytes);
    Some(Finding {
        id: RULE.id,
        severity,
        diagnosis: format!(
            "RocksDB held {} with no budget at all (memory.mode: unmanaged, Flink's state.backend.rocksdb.memory.managed: false): the TaskManager reserves none of it, so all of it comes out of the JVM overhead (at least 192 MiB by default, shared with the JVM's own native memory), per slot, while the slot's managed memory goes unused. Each column family's cache ({}) and memtables (up to {} x {}) are bounded; the table readers' index and filter blocks ({} at the end) grow with the state.",
            human_bytes(used as f64),
            human_bytes(k.block_cache_size.0 as f64),
            k.max_write_buffer_number,
            human_bytes(k.write_buffer_size.0 as f64),
            human_bytes(readers as f64),
        ),
        evidence: vec![
            Evidence::new(
                "RocksDB's memory at its peak (block caches, memtables, table readers)",
                human_bytes(used as f64),
                format!(
                    "< {} (a tenth of jvm-overhead.min)",
                    human_bytes(floor as f64)
                ),
            ),
            Evidence::new(
                "index and filter blocks outside any cache (table readers)",
                human_bytes(readers as f64),
                "0 with a shared budget (they are cached, and charged)",
            ),
            Evidence::new(
                "samples over that",
                format!("{samples} of {}", input.snapshots.len()),
                "0",
            ),
            Evidence::new(
                "process RSS at its peak",
                human_bytes(s.process_rss_peak_bytes as f64),
                "-",
            ),
        ],
        from_secs: from,
        to_secs: to,
        recommendation: vec![Change::new("memory.mode", "managed")],
        memory_cost: 0,
        job_changes: Vec::new(),
        effect: None,
        alternatives: Vec::new(),
        note: Some(format!(
            "memory.mode: managed (Flink's default, state.backend.rocksdb.memory.managed: true) bounds RocksDB by the slot's managed memory, with index and filter blocks in the cache; size it with memory.managed-size (at least the {} RocksDB held here)",
            human_bytes(used as f64)
        )),
        cost: None,
        overruled: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use crate::advisor::Severity;
    use crate::advisor::testing::{Run, profile};

    fn run(budget: u64, used: u64) -> Run {
        Run::new(
            profile("flink-default", &[]),
            10,
            |_, s| {
                s.rocksdb.memory.block_cache_capacity = budget;
                s.rocksdb.memory.block_cache_usage = used;
            },
            |s| {
                s.rocksdb_memory_budget_bytes = budget;
                s.rocksdb_memory_max_bytes = used;
                s.process_rss_peak_bytes = used + (50 << 20);
            },
        )
    }

    #[test]
    fn memory_beyond_the_budget_is_a_finding_and_beyond_the_jvm_overhead_critical() {
        let f = &run(100 << 20, 150 << 20).findings("memory-overshoot")[0];
        assert_eq!(f.severity, Severity::Warning);
        assert!(f.note.as_deref().unwrap().contains("50.0 MiB"), "{f:?}");
        let f = &run(512 << 20, 800 << 20).findings("memory-overshoot")[0];
        assert_eq!(f.severity, Severity::Critical);
    }

    #[test]
    fn memory_within_the_budget_or_its_margin_is_not() {
        assert!(
            run(100 << 20, 100 << 20)
                .findings("memory-overshoot")
                .is_empty()
        );
        assert!(
            run(100 << 20, 109 << 20)
                .findings("memory-overshoot")
                .is_empty()
        );
    }
}
