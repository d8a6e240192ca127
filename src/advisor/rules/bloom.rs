//! No bloom filter while point lookups search SST files: every lookup of a key a file does not
//! hold reads that file's index and data blocks to find out. Two signs, either enough: lookups
//! that read index blocks from storage, or lookups that mostly find nothing (a keep-first dedup
//! of new ids, a join's first sight of a key) while data blocks are read for them: the misses a
//! filter answers without a block. The filter costs no managed memory (it lives in the block
//! cache), so it comes before any memory fix for the same reads (`cache-hit-low`).

use super::Rule;
use crate::advisor::{Change, Evidence, Finding, Input, Severity};
use crate::config::units::human_bytes;
use crate::model::metrics::LevelSample;

pub const RULE: Rule = Rule {
    id: "bloom-off",
    looks_for: "no bloom filter while point lookups read SST blocks for keys that are not there",
    check,
};

/// Index blocks read from storage per lookup above this say lookups search files.
const INDEX_READS_PER_LOOKUP: f64 = 0.05;
const MIN_LOOKUPS: u64 = 1_000;
/// Share of a state's point lookups that find nothing from which they are mostly misses.
const MISS_SHARE: f64 = 0.5;
/// Data-block accesses (block cache hits and misses) per lookup from which the misses reach SST
/// files rather than end in the memtable. Below it, nothing worth saying: the frequency
/// counter's timer state misses 63 % of its lookups at 0.12 data blocks and 5 B each.
const DATA_BLOCKS_PER_LOOKUP: f64 = 0.25;
/// What makes the misses a harm (a warning) rather than worth knowing (info): bytes read from
/// storage per lookup, or data-block accesses per lookup (each a cache lookup, a binary search
/// and a checksum even when cached).
const HARMFUL_BYTES_PER_LOOKUP: f64 = 1024.0;
const HARMFUL_DATA_BLOCKS_PER_LOOKUP: f64 = 0.5;
/// Flink's and RocksDB's usual bloom filter.
const BITS_PER_KEY: f64 = 10.0;

/// RocksDB's LRU cache shards (`GetDefaultCacheShardBits`, which Flink's cache uses: one shard
/// per 512 KiB of capacity, at most 64): a block larger than one shard is never kept.
fn cache_shard_bytes(capacity: u64) -> u64 {
    let mut bits = 0;
    let mut shards = capacity / (512 << 10);
    while shards > 1 && bits < 6 {
        shards >>= 1;
        bits += 1;
    }
    capacity >> bits
}

/// The filter to recommend: a whole-file filter where one file's fits a quarter of a cache
/// shard, else partitioned filters (a small partition per lookup), which Flink builds with a
/// 10-bit bloom. A quarter, not the whole: which shard a block lands in is a hash of its file's
/// cache key, new each time the database opens, so two files' filters share a shard now and
/// then, and must both fit with room for data blocks beside them. At half a shard they did not:
/// the preloaded dedup-ids (4 files of 3.5 M ids, 4.2 MiB filters against 9.3 MiB shards) ran
/// in seconds on most opens and, on one, read a whole filter from storage on every lookup (gdb:
/// `BlockFetcher::ReadBlockContents` under `FullFilterBlockReader::MayMatch`) for over ten
/// minutes (two filters sharing a shard is the likeliest cause, not proven: the run was
/// stopped before RocksDB's cache statistics could tell). With a monolithic filter larger than a shard every lookup would read it whole
/// from storage: case study 2, and worse than no filter (measured: a preloaded dedup with a
/// 13 MiB cache read 65 KiB per lookup without a filter, 1.8 MiB with a whole-file filter and
/// 3.4 KiB with partitioned ones).
pub(crate) fn filter_fix(input: &Input) -> (Vec<Change>, String) {
    let per_file_keys = largest_file_keys(input);
    let filter = (per_file_keys as f64 * BITS_PER_KEY / 8.0) as u64;
    let shard = cache_shard_bytes(input.derived.block_cache_capacity);
    if shard > 0 && filter * 4 > shard {
        (
            vec![
                Change::new("use-bloom-filter", true),
                Change::new("memory.partitioned-index-filters", true),
            ],
            format!(
                "partitioned: one file's whole filter would be about {} against a block-cache shard of {}, more than a quarter: two files' filters in one shard would evict each other",
                human_bytes(filter as f64),
                human_bytes(shard as f64)
            ),
        )
    } else {
        (
            vec![
                Change::new("use-bloom-filter", true),
                Change::new("bloom-filter.bits-per-key", BITS_PER_KEY),
            ],
            format!(
                "whole-file: one file's filter is about {}, within a quarter of a block-cache shard of {}",
                human_bytes(filter as f64),
                human_bytes(shard as f64)
            ),
        )
    }
}

/// The largest SST file's keys: keys per byte of SST times the average file size of the level
/// with the largest files (a preloaded base is one large file below small L0s). The keys are the
/// states' SST entries (RocksDB's table properties) where the summary has them, at least each
/// state's own key estimate (which deletes cancel).
fn largest_file_keys(input: &Input) -> u64 {
    let Some(m) = input.snapshots.last() else {
        return 0;
    };
    let largest_file = |levels: &[LevelSample]| {
        levels
            .iter()
            .filter(|l| l.files > 0)
            .map(|l| l.bytes / l.files)
            .max()
            .unwrap_or(0)
    };
    let in_largest = |keys: u64, largest: u64, levels: &[LevelSample]| {
        let bytes: u64 = levels.iter().map(|l| l.bytes).sum();
        (keys as f64 * largest as f64 / bytes.max(1) as f64) as u64
    };
    let cfs = &m.rocksdb.lsm.column_families;
    let estimated = cfs
        .iter()
        .map(|c| in_largest(c.estimated_keys, largest_file(&c.levels), &c.levels))
        .max()
        .unwrap_or(0);
    let largest = cfs
        .iter()
        .map(|c| largest_file(&c.levels))
        .max()
        .unwrap_or(0);
    estimated.max(in_largest(
        input.summary.sst_entries,
        largest,
        &m.rocksdb.lsm.levels,
    ))
}

/// Point lookups that mostly find nothing and read data blocks to learn it: per state, never
/// an average another state dilutes.
pub(crate) struct Misses {
    /// The states whose lookups mostly miss, with their lookups and misses.
    pub states: Vec<(String, u64, u64)>,
    pub data_blocks_per_lookup: f64,
}

impl Misses {
    pub fn lookups(&self) -> u64 {
        self.states.iter().map(|s| s.1).sum()
    }

    pub fn misses(&self) -> u64 {
        self.states.iter().map(|s| s.2).sum()
    }

    pub fn evidence(&self) -> Evidence {
        let names: Vec<&str> = self.states.iter().map(|s| s.0.as_str()).collect();
        Evidence::new(
            "lookups that found no value",
            format!(
                "{:.1} % of {} ({})",
                100.0 * self.misses() as f64 / self.lookups() as f64,
                self.lookups(),
                names.join(", ")
            ),
            format!(">= {:.0} %", MISS_SHARE * 100.0),
        )
    }
}

/// Whether the profile has no bloom filter (partitioned filters are bloom filters).
fn no_filter(input: &Input) -> bool {
    let k = &input.profile.knobs;
    !k.use_bloom_filter && !k.partitioned_index_filters
}

/// The states whose lookups mostly miss while data blocks are read, without a filter.
pub(crate) fn lookups_mostly_miss(input: &Input) -> Option<Misses> {
    let s = input.summary;
    if !no_filter(input) || s.gets < MIN_LOOKUPS {
        return None;
    }
    let data_blocks_per_lookup = s.cache_accesses.data as f64 / s.gets as f64;
    if data_blocks_per_lookup < DATA_BLOCKS_PER_LOOKUP {
        return None;
    }
    let states: Vec<(String, u64, u64)> = s
        .state_column_families
        .iter()
        .filter(|c| !c.ops_only && c.ops.gets >= MIN_LOOKUPS)
        .filter(|c| c.ops.get_misses as f64 >= MISS_SHARE * c.ops.gets as f64)
        .map(|c| (c.name.clone(), c.ops.gets, c.ops.get_misses))
        .collect();
    (!states.is_empty()).then_some(Misses {
        states,
        data_blocks_per_lookup,
    })
}

fn check(input: &Input) -> Option<Finding> {
    let s = input.summary;
    if !no_filter(input) || s.lookups.max(s.gets) < MIN_LOOKUPS {
        return None;
    }
    let misses = lookups_mostly_miss(input);
    let index_reads =
        s.lookups >= MIN_LOOKUPS && s.index_block_reads_per_lookup >= INDEX_READS_PER_LOOKUP;
    if misses.is_none() && !index_reads {
        return None;
    }
    let (from, to) = if index_reads {
        let (from, to, _) = input
            .when(|m| m.rocksdb.lookups.index_block_reads_per_lookup >= INDEX_READS_PER_LOOKUP)
            .unwrap_or((0.0, 0.0, 0));
        if to > 0.0 {
            (from, to)
        } else {
            input.whole_run()
        }
    } else {
        input.whole_run()
    };
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
    let (recommendation, form) = filter_fix(input);
    let mut evidence = Vec::new();
    let why = match &misses {
        Some(m) => {
            evidence.push(m.evidence());
            evidence.push(Evidence::new(
                "data-block accesses per lookup",
                format!(
                    "{:.2} ({} in all)",
                    m.data_blocks_per_lookup, s.cache_accesses.data
                ),
                format!(">= {DATA_BLOCKS_PER_LOOKUP}"),
            ));
            format!(
                "{:.0} % of the point lookups find nothing, and each reads {:.2} data blocks to learn it",
                100.0 * m.misses() as f64 / m.lookups() as f64,
                m.data_blocks_per_lookup
            )
        }
        None => format!(
            "{:.2} index blocks read from storage per lookup",
            s.index_block_reads_per_lookup
        ),
    };
    evidence.push(Evidence::new(
        "index blocks read per lookup",
        format!("{:.3}", s.index_block_reads_per_lookup),
        if misses.is_some() {
            "-".to_string()
        } else {
            format!("< {INDEX_READS_PER_LOOKUP}")
        },
    ));
    evidence.push(Evidence::new(
        "bytes read per lookup",
        human_bytes(s.bytes_read_per_lookup),
        "-",
    ));
    evidence.push(Evidence::new("keys in the LSM (estimate)", keys, "-"));
    let data_blocks = s.cache_accesses.data as f64 / s.gets.max(1) as f64;
    let harmful = index_reads
        || s.bytes_read_per_lookup >= HARMFUL_BYTES_PER_LOOKUP
        || data_blocks >= HARMFUL_DATA_BLOCKS_PER_LOOKUP;
    let severity = if harmful {
        Severity::Warning
    } else {
        Severity::Info
    };
    Some(Finding {
        id: RULE.id,
        severity,
        diagnosis: format!(
            "Without a bloom filter each point lookup searches SST files that do not hold its key: {why}. A {BITS_PER_KEY}-bit filter answers most of those misses from about {} of filters, with no managed memory added.",
            human_bytes(filter_bytes as f64)
        ),
        evidence,
        from_secs: from,
        to_secs: to,
        recommendation,
        // The filters live in the block cache: no new memory, a share of the cache.
        memory_cost: 0,
        job_changes: Vec::new(),
        effect: Some(
            "a lookup of a key a file does not hold reads the file's filter (cached) instead of its index and data blocks: fewer data-block accesses and bytes read per lookup; about 1 % false positives at 10 bits".to_string(),
        ),
        alternatives: Vec::new(),
        note: Some(format!(
            "filters take about {} of the block cache; {form}",
            human_bytes(filter_bytes as f64)
        )),
        cost: Some(format!(
            "{} read from storage per lookup, {data_blocks:.2} data-block accesses per lookup{}{}",
            human_bytes(s.bytes_read_per_lookup),
            if harmful {
                ""
            } else {
                " (a warning from 1 KiB or 0.5 data blocks per lookup: little to gain here)"
            },
            if s.p99_get_latency_us > 0.0 {
                format!(", get latency p99 {:.1} µs", s.p99_get_latency_us)
            } else {
                String::new()
            }
        )),
        overruled: Vec::new(),
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

    /// A keep-first dedup of new ids: `misses` of 10,000 lookups of one state find nothing, with
    /// `data` data-block accesses in all, and no index block read from storage (all cached).
    fn dedup(edits: &[(&str, &str)], misses: u64, data: u64) -> Run {
        Run::new(
            profile("flink-default", edits),
            10,
            |_, _| {},
            |s| {
                s.lookups = 10_000;
                s.gets = 10_000;
                s.index_block_reads_per_lookup = 0.0;
                s.cache_accesses.data = data;
                s.state_column_families = vec![crate::model::summary::StateColumnFamily {
                    name: "dedup-seen".to_string(),
                    ops: crate::model::counters::CfOps {
                        gets: 10_000,
                        get_misses: misses,
                        ..Default::default()
                    },
                    ..Default::default()
                }];
            },
        )
    }

    #[test]
    fn lookups_that_mostly_miss_while_reading_data_blocks_recommend_a_filter() {
        // The dedup's shape: index blocks all cached (the old rule saw nothing).
        let f = &dedup(&[], 9_900, 9_000).findings("bloom-off")[0];
        assert_eq!(f.recommendation[0].key, "use-bloom-filter");
        assert_eq!(f.memory_cost, 0);
        assert!(
            f.evidence[0]
                .value
                .starts_with("99.0 % of 10000 (dedup-seen)"),
            "{:?}",
            f.evidence
        );
        // Mostly found, or misses that read no data block (the memtable answers): no finding.
        assert_eq!(f.severity, crate::advisor::Severity::Warning);
        // Misses that read few data blocks, all cached: worth knowing, no harm.
        let f = &dedup(&[], 9_900, 3_000).findings("bloom-off")[0];
        assert_eq!(f.severity, crate::advisor::Severity::Info);
        assert!(dedup(&[], 4_000, 9_000).findings("bloom-off").is_empty());
        assert!(dedup(&[], 9_900, 2_000).findings("bloom-off").is_empty());
        assert!(
            dedup(&[("use-bloom-filter", "true")], 9_900, 9_000)
                .findings("bloom-off")
                .is_empty()
        );
    }

    #[test]
    fn a_filter_too_large_for_a_cache_shard_is_recommended_partitioned() {
        assert_eq!(super::cache_shard_bytes(13 << 20), (13 << 20) / 16);
        assert_eq!(super::cache_shard_bytes(1 << 30), (1 << 30) / 64);
        assert_eq!(super::cache_shard_bytes(256 << 10), 256 << 10);
        let with_file = |managed: &str, keys: u64| {
            let mut r = dedup(&[("memory.managed-size", managed)], 9_900, 9_000);
            // One large file in L1 below four small ones in L0.
            let last = r.snapshots.last_mut().unwrap();
            last.rocksdb.lsm.column_families = vec![crate::model::metrics::ColumnFamilyLsm {
                estimated_keys: keys + keys / 25,
                levels: vec![
                    crate::model::metrics::LevelSample {
                        level: 0,
                        files: 4,
                        bytes: 4 << 20,
                        ..Default::default()
                    },
                    crate::model::metrics::LevelSample {
                        level: 1,
                        files: 1,
                        bytes: 100 << 20,
                        ..Default::default()
                    },
                ],
                ..Default::default()
            }];
            r.findings("bloom-off")[0].recommendation.clone()
        };
        // 2 M keys in one file: a 2.4 MiB filter; 16 MB of managed memory: 16 shards of 0.8 MiB.
        let small = with_file("16mb", 2_000_000);
        assert!(
            small
                .iter()
                .any(|c| c.key == "memory.partitioned-index-filters"),
            "{small:?}"
        );
        // A 4-slot, 8 GB TaskManager's 711.7 MiB a slot: 64 shards of 9.3 MiB; 3.5 M keys a
        // file make a 4.2 MiB filter, under half a shard but over a quarter.
        let borderline = with_file("712mb", 3_500_000);
        assert!(
            borderline
                .iter()
                .any(|c| c.key == "memory.partitioned-index-filters"),
            "{borderline:?}"
        );
        // 256 MB: 64 shards of 3.3 MiB hold a 0.24 MiB filter of 200 K keys.
        let large = with_file("256mb", 200_000);
        assert!(
            large
                .iter()
                .all(|c| c.key != "memory.partitioned-index-filters"),
            "{large:?}"
        );
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
