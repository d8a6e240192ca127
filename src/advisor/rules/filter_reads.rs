//! Filter blocks read from storage on point lookups: monolithic filters that do not stay in
//! the block cache (too large for it, or for one cache shard), read whole for every lookup
//! that misses them — the hours app's 96 % CPU (case study 2).

use super::Rule;
use crate::advisor::{Change, Evidence, Finding, Input, Severity};
use crate::config::units::human_bytes;
use crate::model::cpu::Bucket;

pub const RULE: Rule = Rule {
    id: "filter-reads",
    looks_for: "filter bytes read from storage per point lookup with monolithic filters",
    check,
};

/// Filter bytes read per lookup above this are a finding (a partitioned filter reads one
/// partition of a few KiB, and rarely: tens of bytes per lookup).
const BYTES_PER_LOOKUP: f64 = 1024.0;
/// Above this, critical.
const CRITICAL_BYTES_PER_LOOKUP: f64 = 16.0 * 1024.0;
/// Lookups below this many say too little.
const MIN_LOOKUPS: u64 = 1_000;

fn check(input: &Input) -> Option<Finding> {
    let s = input.summary;
    let k = &input.profile.knobs;
    if k.partitions_index_filters() || s.lookups < MIN_LOOKUPS {
        return None;
    }
    let per_lookup = s.filter_bytes_read_per_lookup;
    if per_lookup < BYTES_PER_LOOKUP {
        return None;
    }
    let (from, to, _) = input.when(|m| {
        m.rocksdb.lookups.lookups > 0
            && m.rocksdb.lookups.filter_bytes_read_per_lookup >= BYTES_PER_LOOKUP
    })?;
    let direct = k.use_direct_reads;
    Some(Finding {
        id: RULE.id,
        severity: if per_lookup >= CRITICAL_BYTES_PER_LOOKUP {
            Severity::Critical
        } else {
            Severity::Warning
        },
        diagnosis: format!(
            "Point lookups read {} of bloom filter from storage each: the SSTs' whole-file filters do not stay in the block cache{}. Partitioned index and filters read one small partition instead.",
            human_bytes(per_lookup),
            if direct {
                ", and with direct reads no page cache catches them"
            } else {
                ""
            }
        ),
        evidence: vec![
            Evidence::new(
                "filter bytes read per lookup",
                human_bytes(per_lookup),
                format!("< {}", human_bytes(BYTES_PER_LOOKUP)),
            ),
            Evidence::new(
                "filter blocks read per lookup",
                format!("{:.4}", s.filter_block_reads_per_lookup),
                "-",
            ),
            Evidence::new(
                "filter block cache hit rate",
                s.cache_hit_rate
                    .filter
                    .map_or("n/a".to_string(), |r| format!("{:.1} %", r * 100.0)),
                "-",
            ),
            Evidence::new("state get p99", format!("{:.0} µs", s.p99_get_latency_us), "-"),
        ]
        .into_iter()
        // With --profile-cpu: what the reads cost the process (case study 2's 96 %).
        .chain(s.cpu.as_ref().map(|cpu| {
            Evidence::new(
                "CPU in filter-block reads (profiler)",
                format!(
                    "{:.1} % of {} samples",
                    cpu.share(Bucket::FilterBlockReads) * 100.0,
                    cpu.samples
                ),
                "-",
            )
        }))
        .collect(),
        from_secs: from,
        to_secs: to,
        recommendation: vec![Change::new("memory.partitioned-index-filters", true)],
        memory_cost: 0,
        job_changes: Vec::new(),
        effect: None,
        alternatives: Vec::new(),
        note: (k.bloom_bits_per_key != crate::config::profile::FLINK_PARTITIONED_BLOOM_BITS)
            .then(|| {
                format!(
                    "with partitioned filters Flink 1.20 uses {} bits per key whatever bloom-filter.bits-per-key says",
                    crate::config::profile::FLINK_PARTITIONED_BLOOM_BITS
                )
            }),
        cost: None,
        overruled: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use crate::advisor::testing::{Run, profile};

    fn run(name: &str, per_lookup: f64) -> Run {
        Run::new(
            profile(name, &[]),
            10,
            |_, s| {
                s.rocksdb.lookups.lookups = 10_000;
                s.rocksdb.lookups.filter_bytes_read_per_lookup = per_lookup;
            },
            |s| {
                s.lookups = 100_000;
                s.filter_bytes_read_per_lookup = per_lookup;
            },
        )
    }

    #[test]
    fn monolithic_filters_read_per_lookup_recommend_partitioned_ones() {
        // The seed's hours app: about 55 KB of filter per lookup.
        let f = &run("hours-monolithic-filter", 54_903.0).findings("filter-reads")[0];
        assert_eq!(f.severity, crate::advisor::Severity::Critical);
        assert_eq!(f.recommendation[0].key, "memory.partitioned-index-filters");
        assert_eq!(f.recommendation[0].value, "true");
        // The profile asks for 14 bits: Flink's override is said.
        assert!(
            f.note.as_deref().unwrap().contains("10 bits"),
            "{:?}",
            f.note
        );
    }

    #[test]
    fn a_cpu_profile_is_cited_as_evidence() {
        use crate::profiler::{CpuProfile, Stack};
        let sample = CpuProfile::from_stacks([
            (
                Stack::new(
                    "statebench-engi",
                    vec![
                        "rocksdb::VerifyBlockChecksum".into(),
                        "FullFilterBlockReader::MayMatch".into(),
                    ],
                ),
                96,
            ),
            (Stack::new("rocksdb:low", vec!["memcpy".into()]), 4),
        ])
        .sample();
        let profiled = Run::new(
            profile("hours-monolithic-filter", &[]),
            10,
            |_, s| {
                s.rocksdb.lookups.lookups = 10_000;
                s.rocksdb.lookups.filter_bytes_read_per_lookup = 54_903.0;
            },
            |s| {
                s.lookups = 100_000;
                s.filter_bytes_read_per_lookup = 54_903.0;
                s.cpu = Some(sample);
            },
        );
        let f = &profiled.findings("filter-reads")[0];
        let cpu = f
            .evidence
            .iter()
            .find(|e| e.metric.starts_with("CPU in filter-block reads"))
            .expect("the profiler's share is evidence");
        assert_eq!(cpu.value, "96.0 % of 100 samples");
        // Without a profile, no such line.
        let plain = &run("hours-monolithic-filter", 54_903.0).findings("filter-reads")[0];
        assert!(plain.evidence.iter().all(|e| !e.metric.starts_with("CPU")));
    }

    #[test]
    fn a_few_hundred_bytes_per_lookup_or_partitioned_filters_are_not_a_finding() {
        assert!(
            run("hours-monolithic-filter", 1000.0)
                .findings("filter-reads")
                .is_empty()
        );
        assert!(
            run("hours-partitioned-filter", 54_903.0)
                .findings("filter-reads")
                .is_empty()
        );
    }
}
