//! A block cache too small for the working set: a low hit rate while the cache is full.

use super::Rule;
use crate::advisor::{Change, Evidence, Finding, Fix, Input, Severity};
use crate::config::ByteSize;
use crate::config::units::human_bytes;

pub const RULE: Rule = Rule {
    id: "cache-hit-low",
    looks_for: "block cache hit rate below 90 % with the cache full",
    check,
};

const HIT_RATE: f64 = 0.9;
/// The cache counts as full from this share of its capacity.
const FULL: f64 = 0.9;
const MIN_ACCESSES: u64 = 10_000;

fn check(input: &Input) -> Option<Finding> {
    let s = input.summary;
    let rate = s.cache_hit_rate.overall?;
    if rate >= HIT_RATE || s.cache_accesses.overall < MIN_ACCESSES {
        return None;
    }
    let (from, to, samples) = input.when(|m| {
        let mem = &m.rocksdb.memory;
        mem.block_cache_capacity > 0
            && mem.block_cache_usage as f64 >= FULL * mem.block_cache_capacity as f64
    })?;
    let k = &input.profile.knobs;
    // Without a shared budget (memory.mode: unmanaged) each column family has a cache of its
    // own: double that, which no budget bounds.
    let (recommendation, memory_cost, note) = if k.memory_mode.is_shared() {
        let doubled = k.managed_memory.0 * 2;
        (
            Change::new("memory.managed-size", ByteSize(doubled)),
            doubled - k.managed_memory.0,
            "doubling managed memory doubles the cache and the WriteBufferManager; re-run to see how far the hit rate follows",
        )
    } else {
        (
            Change::new("block.cache-size", ByteSize(k.block_cache_size.0 * 2)),
            0,
            "memory.mode unmanaged: every column family's own cache doubles, outside any budget (the TaskManager reserves none of it); memory.mode: managed with memory.managed-size bounds it",
        )
    };
    // Lookups that mostly miss without a filter fill the cache with blocks read to learn a key
    // is not there: the filter (no memory) first, the memory after it has been measured.
    let (recommendation, memory_cost, alternatives, effect, note) =
        match super::bloom::lookups_mostly_miss(input) {
            Some(misses) => (
                super::bloom::filter_fix(input).0,
                0,
                vec![Fix {
                    changes: vec![recommendation],
                    memory_cost,
                    effect: format!("after the filter, if the hit rate stays low: {note}"),
                }],
                Some(format!(
                    "{:.0} % of the lookups find nothing: without a filter each reads index and data blocks to learn it, and those blocks crowd the cache; a bloom filter answers them from the filter block, at no managed memory",
                    100.0 * misses.misses() as f64 / misses.lookups() as f64
                )),
                "the filter first (free), then measure again before adding memory".to_string(),
            ),
            None => (
                vec![recommendation],
                memory_cost,
                Vec::new(),
                None,
                note.to_string(),
            ),
        };
    Some(Finding {
        id: RULE.id,
        severity: Severity::Warning,
        diagnosis: format!(
            "The block cache ({}) is full and hits {:.1} % of lookups: the blocks the job reads do not fit, and every miss goes to storage.",
            human_bytes(input.derived.block_cache_capacity as f64),
            rate * 100.0
        ),
        evidence: vec![
            Evidence::new(
                "block cache hit rate",
                format!("{:.1} % of {}", rate * 100.0, s.cache_accesses.overall),
                format!(">= {:.0} %", HIT_RATE * 100.0),
            ),
            Evidence::new(
                "samples with the cache >= 90 % full",
                format!("{samples} of {}", input.snapshots.len()),
                "-",
            ),
        ],
        from_secs: from,
        to_secs: to,
        recommendation,
        memory_cost,
        job_changes: Vec::new(),
        effect,
        alternatives,
        note: Some(note),
        cost: Some(format!(
            "{:.1} % of {} block-cache lookups read from storage; get latency p99 {:.1} µs",
            (1.0 - rate) * 100.0,
            s.cache_accesses.overall,
            s.p99_get_latency_us
        )),
        overruled: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use crate::advisor::testing::{Run, profile};

    fn run(rate: f64, full: f64) -> Run {
        Run::new(
            profile("flink-default", &[]),
            10,
            |_, s| {
                s.rocksdb.memory.block_cache_capacity = 100 << 20;
                s.rocksdb.memory.block_cache_usage = (full * (100 << 20) as f64) as u64;
            },
            |s| {
                s.cache_hit_rate.overall = Some(rate);
                s.cache_accesses.overall = 1_000_000;
            },
        )
    }

    #[test]
    fn a_full_cache_missing_often_recommends_more_memory() {
        let f = &run(0.62, 0.99).findings("cache-hit-low")[0];
        assert_eq!(f.recommendation[0].value, "512mb");
        assert_eq!(f.memory_cost, 256 << 20);
    }

    #[test]
    fn without_a_shared_budget_the_fix_is_each_column_familys_cache() {
        let unmanaged = Run::new(
            profile(
                "flink-default",
                &[("memory.mode", "unmanaged"), ("block.cache-size", "16mb")],
            ),
            10,
            |_, s| {
                s.rocksdb.memory.block_cache_capacity = 80 << 20;
                s.rocksdb.memory.block_cache_usage = 80 << 20;
            },
            |s| {
                s.cache_hit_rate.overall = Some(0.62);
                s.cache_accesses.overall = 1_000_000;
            },
        );
        let f = &unmanaged.findings("cache-hit-low")[0];
        assert_eq!(f.recommendation[0].key, "block.cache-size");
        assert_eq!(f.recommendation[0].value, "32mb");
        assert_eq!(f.memory_cost, 0);
    }

    #[test]
    fn a_cache_with_room_or_a_good_hit_rate_is_not_a_finding() {
        assert!(run(0.62, 0.5).findings("cache-hit-low").is_empty());
        assert!(run(0.91, 0.99).findings("cache-hit-low").is_empty());
    }
}
