//! Flink's derivation of RocksDB memory from a profile: block cache and WriteBufferManager from
//! managed memory (RocksDBMemoryControllerUtils), the budget per column family, the arena
//! block against the WriteBufferManager, and the notes a user should read.

use std::fmt;

use serde::Serialize;

use super::profile::{FLINK_PARTITIONED_BLOOM_BITS, KnobValue, Profile};
use super::target::{Target, TargetOptions};
use super::units::human_bytes;

/// Flink's derivation of RocksDB memory from managed memory, and what it implies.
#[derive(Debug, Clone, Serialize)]
pub struct Derived {
    /// The slot's shared block cache; with `memory.mode: unmanaged`, each column family's own.
    pub block_cache_capacity: u64,
    /// False with `memory.mode: unmanaged`: no shared cache, no WriteBufferManager.
    pub shared: bool,
    /// 0 with `memory.mode: unmanaged` (no WriteBufferManager).
    pub write_buffer_manager_capacity: u64,
    pub state_column_families: usize,
    pub write_buffer_budget_per_column_family: u64,
    /// Managed memory (at this write-buffer ratio) that gives every state column family a full
    /// write buffer: 2 * M * r / 3 >= n * writebuffer.size, rounded up to a MiB.
    pub full_buffer_managed_memory: u64,
    pub arena_block_size: u64,
    pub mutable_limit: u64,
    /// Share of the block cache kept for index and filter blocks.
    pub high_pri_pool_ratio: f64,
    /// Bits per key RocksDB really gets, if a bloom filter is on.
    pub effective_bloom_bits_per_key: Option<f64>,
    /// Things the user should know: silently overridden settings, poor memory configurations.
    pub notes: Vec<String>,
}

impl Profile {
    /// The options the profile's target fixes that no knob sets.
    pub fn target_options(&self) -> TargetOptions {
        TargetOptions::new(
            self.knobs.target,
            self.knobs.write_buffer_size.0,
            self.knobs.use_direct_reads,
        )
    }

    /// Flink's memory math for `state_column_families` states sharing one WriteBufferManager.
    pub fn derived(&self, state_column_families: usize) -> Derived {
        let k = &self.knobs;
        let m = k.managed_memory.0 as f64;
        let r = k.write_buffer_ratio;
        // RocksDBMemoryControllerUtils: cache = (3 - r) * M / 3, WBM = 2 * M * r / 3.
        let shared = k.memory_mode.is_shared();
        let (cache, wbm) = if shared {
            (((3.0 - r) * m / 3.0) as u64, (2.0 * m * r / 3.0) as u64)
        } else {
            (k.block_cache_size.0, 0)
        };
        let per_cf = if shared {
            wbm / state_column_families.max(1) as u64
        } else {
            k.write_buffer_size.0
        };
        // Flink's arena-block-size check: the arena block (write_buffer_size / 8 rounded up to
        // 4 KB under Flink 1.20) must fit in the mutable limit (7/8 of the WriteBufferManager),
        // or RocksDB flushes constantly.
        let arena = self.target_options().arena_block_size;
        let mutable_limit = wbm * 7 / 8;
        let mut notes = Vec::new();
        if !shared {
            let memtables = k.write_buffer_size.0 * u64::from(k.max_write_buffer_number);
            notes.push(format!(
                "memory.mode unmanaged: no budget bounds RocksDB and the TaskManager reserves none for it (its managed memory goes unused, memory.managed-size is not applied); each column family has its own block cache of {} and up to {} of memtables ({} x {}), so the {state_column_families} state column families alone may hold {}, plus every SST file's index and filter blocks outside any cache, which grow with the state",
                human_bytes(cache as f64),
                human_bytes(memtables as f64),
                k.max_write_buffer_number,
                human_bytes(k.write_buffer_size.0 as f64),
                human_bytes(((cache + memtables) * state_column_families as u64) as f64),
            ));
        }
        if shared && arena > mutable_limit {
            notes.push(format!(
                "arena block size {} exceeds the WriteBufferManager's mutable limit {}: Flink warns 'RocksDB will flush memtable constantly' — raise managed memory or write-buffer ratio",
                human_bytes(arena as f64),
                human_bytes(mutable_limit as f64)
            ));
        }
        // What Flink's check misses: every memtable holding more than the arena's 2 KB inline
        // block is charged at least one whole arena block.
        let charged = arena * state_column_families as u64;
        if shared && arena <= mutable_limit && charged > mutable_limit {
            notes.push(format!(
                "{state_column_families} state column families with data hold at least {} of arena blocks ({state_column_families} x {}), above the WriteBufferManager's mutable limit {}: it forces a flush whenever every state has written since its last flush, long before memtables fill",
                human_bytes(charged as f64),
                human_bytes(arena as f64),
                human_bytes(mutable_limit as f64)
            ));
        }
        // What would give every state a full write buffer: 2 * M * r / 3 >= n * size.
        let needed = 3.0 * state_column_families as f64 * k.write_buffer_size.0 as f64 / 2.0;
        let full_buffer_managed_memory = ((needed / r).ceil() as u64).div_ceil(1 << 20) << 20;
        if shared && per_cf < k.write_buffer_size.0 {
            let memory_fix = full_buffer_managed_memory as f64;
            let ratio_fix = needed / m;
            // Flink refuses a ratio whose memtables and high-priority pool fill the cache.
            let ratio_ok = ratio_fix < 1.0
                && 2.0 * ratio_fix / (3.0 - ratio_fix) + k.high_prio_pool_ratio < 1.0;
            let fix = if ratio_ok {
                format!(
                    "memory.managed-size {} (at ratio {r}) or memory.write-buffer-ratio {:.2} would give each a full buffer",
                    human_bytes(memory_fix),
                    (ratio_fix * 100.0).ceil() / 100.0
                )
            } else {
                format!(
                    "memory.managed-size {} (at ratio {r}) would give each a full buffer",
                    human_bytes(memory_fix)
                )
            };
            notes.push(format!(
                "each of the {state_column_families} state column families gets about {} of WriteBufferManager budget, less than writebuffer.size {}: the WBM forces small flushes before memtables fill (case study 1); {fix}",
                human_bytes(per_cf as f64),
                human_bytes(k.write_buffer_size.0 as f64)
            ));
        }
        if shared && self.sets(super::profile::Knob::BlockCacheSize) {
            notes.push(format!(
                "block.cache-size {} is not applied: with a shared budget (memory.mode {}) Flink replaces every column family's cache by the slot's; it counts with memory.mode unmanaged",
                k.block_cache_size,
                k.memory_mode.show()
            ));
        }
        if !shared && k.partitioned_index_filters {
            notes.push(
                "memory.partitioned-index-filters is not applied: Flink partitions index and filters only with a shared budget (memory.mode managed or fixed-per-slot); statebench does the same".to_string(),
            );
        }
        let effective_bloom = k.effective_bloom_bits_per_key();
        if k.use_bloom_filter
            && k.partitioned_index_filters
            && k.bloom_bits_per_key != FLINK_PARTITIONED_BLOOM_BITS
        {
            notes.push(format!(
                "bloom-filter.bits-per-key {} is not applied: with partitioned index/filters Flink 1.20 replaces the filter with a {}-bit bloom filter (case study 2); statebench does the same",
                k.bloom_bits_per_key, FLINK_PARTITIONED_BLOOM_BITS
            ));
        }
        if k.target != Target::Flink120 {
            notes.push(format!(
                "target {}: RocksDB's own defaults, not Flink's (e.g. arena block {}): numbers will differ from a Flink job's",
                k.target.name(),
                human_bytes(arena as f64),
            ));
        }
        Derived {
            shared,
            block_cache_capacity: cache,
            write_buffer_manager_capacity: wbm,
            state_column_families,
            write_buffer_budget_per_column_family: per_cf,
            full_buffer_managed_memory,
            arena_block_size: arena,
            high_pri_pool_ratio: k.high_prio_pool_ratio,
            mutable_limit,
            effective_bloom_bits_per_key: effective_bloom,
            notes,
        }
    }
}

impl fmt::Display for Derived {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.shared {
            writeln!(
                f,
                "  block cache capacity      {:>10}   per column family (block.cache-size), no shared budget",
                human_bytes(self.block_cache_capacity as f64)
            )?;
            writeln!(
                f,
                "  memtables per column f.   {:>10}   writebuffer.size, no WriteBufferManager",
                human_bytes(self.write_buffer_budget_per_column_family as f64)
            )?;
            for note in &self.notes {
                writeln!(f, "  note: {note}")?;
            }
            return Ok(());
        }
        writeln!(
            f,
            "  block cache capacity      {:>10}   (3 - r) * M / 3",
            human_bytes(self.block_cache_capacity as f64)
        )?;
        writeln!(
            f,
            "  write buffer manager      {:>10}   2 * M * r / 3, costed to the cache, no stall",
            human_bytes(self.write_buffer_manager_capacity as f64)
        )?;
        writeln!(
            f,
            "  budget per column family  {:>10}   WBM / {} state column families",
            human_bytes(self.write_buffer_budget_per_column_family as f64),
            self.state_column_families
        )?;
        writeln!(
            f,
            "  arena block size          {:>10}   must not exceed mutable limit {}",
            human_bytes(self.arena_block_size as f64),
            human_bytes(self.mutable_limit as f64)
        )?;
        writeln!(
            f,
            "  high-priority pool        {:>10}   of the block cache for index and filter blocks",
            self.high_pri_pool_ratio
        )?;
        match self.effective_bloom_bits_per_key {
            Some(bits) => writeln!(
                f,
                "  bloom filter              {bits:>10}   bits per key in effect"
            )?,
            None => writeln!(f, "  bloom filter              {:>10}", "off")?,
        }
        for note in &self.notes {
            writeln!(f, "  note: {note}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ByteSize;
    use crate::config::profile::Knobs;

    #[test]
    fn flink_memory_math_matches_case_study_one() {
        let mut knobs = Knobs {
            managed_memory: ByteSize(500 << 20),
            write_buffer_ratio: 0.25,
            ..Knobs::default()
        };
        let before = Profile::from_knobs("before", knobs.clone())
            .unwrap()
            .derived(5);
        // WBM = 2 * 500 * 0.25 / 3 = 83.3 MB, about 16 MB per column family for 5 states.
        assert_eq!(
            before.write_buffer_manager_capacity,
            (2.0 * 500.0 * 0.25 / 3.0 * 1048576.0) as u64
        );
        assert_eq!(before.write_buffer_budget_per_column_family / (1 << 20), 16);
        assert!(
            before
                .notes
                .iter()
                .any(|n| n.contains("forces small flushes"))
        );
        knobs.managed_memory = ByteSize(1200 << 20);
        knobs.write_buffer_ratio = 0.5;
        let after = Profile::from_knobs("after", knobs).unwrap().derived(5);
        assert!(after.write_buffer_budget_per_column_family > 64 << 20);
        assert_eq!(
            after.block_cache_capacity,
            (2.5 * 1200.0 / 3.0 * 1048576.0) as u64
        );
    }

    #[test]
    fn partitioned_filters_force_ten_bits_and_say_so() {
        let knobs = Knobs {
            use_bloom_filter: true,
            partitioned_index_filters: true,
            bloom_bits_per_key: 14.0,
            ..Knobs::default()
        };
        let derived = Profile::from_knobs("p", knobs).unwrap().derived(3);
        assert_eq!(derived.effective_bloom_bits_per_key, Some(10.0));
        assert!(
            derived
                .notes
                .iter()
                .any(|n| n.contains("14 is not applied"))
        );
    }

    #[test]
    fn arena_check_flags_a_write_buffer_too_big_for_the_wbm() {
        let knobs = Knobs {
            managed_memory: ByteSize(4 << 20),
            write_buffer_ratio: 0.1,
            write_buffer_size: ByteSize(64 << 20),
            ..Knobs::default()
        };
        let derived = Profile::from_knobs("tiny", knobs).unwrap().derived(3);
        assert_eq!(derived.arena_block_size, 8 << 20);
        assert!(
            derived
                .notes
                .iter()
                .any(|n| n.contains("flush memtable constantly"))
        );
    }

    /// The budget warning says what would lift it: minutes-wbm-starved's seed numbers (M 18 MB,
    /// r 0.25, 4 MB buffers, 3 states) need M = 3 * 3 * 4 / (2 * 0.25) = 72 MB.
    #[test]
    fn the_budget_warning_names_the_memory_that_would_fix_it() {
        let knobs = Knobs {
            managed_memory: ByteSize(18 << 20),
            write_buffer_ratio: 0.25,
            write_buffer_size: ByteSize(4 << 20),
            ..Knobs::default()
        };
        let derived = Profile::from_knobs("starved", knobs).unwrap().derived(3);
        let note = derived
            .notes
            .iter()
            .find(|n| n.contains("less than writebuffer.size"))
            .expect("the budget warning");
        assert!(
            note.contains("memory.managed-size 72.0 MiB (at ratio 0.25)"),
            "{note}"
        );
        // r = 3 * 3 * 4 / (2 * 18) = 1.0: no ratio can do it.
        assert!(!note.contains("memory.write-buffer-ratio"), "{note}");
    }

    /// 64 MB of managed memory (the parity check's profile): one 8 MiB arena block passes
    /// Flink's check against the 18.7 MiB mutable limit, three do not — the forced flushes that
    /// parity measured in Flink (about 5,000 on its trace).
    #[test]
    fn three_arena_blocks_over_the_mutable_limit_are_flagged() {
        let note = |managed: u64| {
            let knobs = Knobs {
                managed_memory: ByteSize(managed << 20),
                ..Knobs::default()
            };
            Profile::from_knobs("m", knobs)
                .unwrap()
                .derived(3)
                .notes
                .into_iter()
                .find(|n| n.contains("arena blocks"))
        };
        let flagged = note(64).expect("64 MB is flagged");
        assert!(flagged.contains("24.0 MiB"), "{flagged}");
        assert!(flagged.contains("18.7 MiB"), "{flagged}");
        // 128 MB: a 37.3 MiB mutable limit holds three 8 MiB blocks.
        assert_eq!(note(128), None);
    }
}
