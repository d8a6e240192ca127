//! No bloom filter while point lookups search SST files: every lookup of a key a file does not
//! hold reads that file's index and data blocks to find out.

use super::Rule;
use crate::advisor::{Change, Evidence, Finding, Input, Severity};
use crate::config::units::human_bytes;

pub const RULE: Rule = Rule {
    id: "bloom-off",
    looks_for: "no bloom filter while point lookups read SST index blocks",
    check,
};

/// Index blocks read from storage per lookup above this say lookups search files.
const INDEX_READS_PER_LOOKUP: f64 = 0.05;
const MIN_LOOKUPS: u64 = 1_000;
/// Flink's and RocksDB's usual bloom filter.
const BITS_PER_KEY: f64 = 10.0;

fn check(input: &Input) -> Option<Finding> {
    let s = input.summary;
    if input.profile.knobs.use_bloom_filter || s.lookups < MIN_LOOKUPS {
        return None;
    }
    if s.index_block_reads_per_lookup < INDEX_READS_PER_LOOKUP {
        return None;
    }
    let (from, to, _) =
        input.when(|m| m.rocksdb.lookups.index_block_reads_per_lookup >= INDEX_READS_PER_LOOKUP)?;
    // The filters' size: bits per key over the keys the LSM holds, charged to the block cache.
    let keys: u64 = input
        .snapshots
        .last()
        .map(|m| {
            m.rocksdb
                .lsm
                .column_families
                .iter()
                .map(|c| c.estimated_keys)
                .sum()
        })
        .unwrap_or(0);
    let filter_bytes = (keys as f64 * BITS_PER_KEY / 8.0) as u64;
    Some(Finding {
        id: RULE.id,
        severity: Severity::Warning,
        diagnosis: format!(
            "Without a bloom filter each point lookup searches SST files that do not hold its key: {:.2} index blocks read from storage per lookup. A {BITS_PER_KEY}-bit filter answers most of those misses from about {} of filters.",
            s.index_block_reads_per_lookup,
            human_bytes(filter_bytes as f64)
        ),
        evidence: vec![
            Evidence::new(
                "index blocks read per lookup",
                format!("{:.3}", s.index_block_reads_per_lookup),
                format!("< {INDEX_READS_PER_LOOKUP}"),
            ),
            Evidence::new(
                "bytes read per lookup",
                human_bytes(s.bytes_read_per_lookup),
                "-",
            ),
            Evidence::new("keys in the LSM (estimate)", keys, "-"),
        ],
        from_secs: from,
        to_secs: to,
        recommendation: vec![
            Change::new("use-bloom-filter", true),
            Change::new("bloom-filter.bits-per-key", BITS_PER_KEY),
        ],
        // The filters live in the block cache: no new memory, a share of the cache.
        memory_cost: 0,
        job_changes: Vec::new(),
        effect: None,
        alternatives: Vec::new(),
        note: Some(format!(
            "filters take about {} of the block cache",
            human_bytes(filter_bytes as f64)
        )),
    })
}

#[cfg(test)]
mod tests {
    use crate::advisor::testing::{Run, profile};

    fn run(edits: &[(&str, &str)], index_reads: f64) -> Run {
        Run::new(
            profile("flink-default", edits),
            10,
            |_, s| s.rocksdb.lookups.index_block_reads_per_lookup = index_reads,
            |s| {
                s.lookups = 100_000;
                s.index_block_reads_per_lookup = index_reads;
            },
        )
    }

    #[test]
    fn lookups_searching_files_without_a_filter_recommend_one() {
        let f = &run(&[], 0.4).findings("bloom-off")[0];
        assert_eq!(f.recommendation[0].key, "use-bloom-filter");
        assert_eq!(f.recommendation[1].value, "10");
    }

    #[test]
    fn few_index_reads_or_a_filter_already_on_are_not_a_finding() {
        assert!(run(&[], 0.04).findings("bloom-off").is_empty());
        assert!(
            run(&[("use-bloom-filter", "true")], 0.4)
                .findings("bloom-off")
                .is_empty()
        );
    }
}
