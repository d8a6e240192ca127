//! A state with a TTL whose expired entries nothing removes: `StateTtlConfig` without
//! `cleanupInRocksdbCompactFilter` (`disableCleanupInBackground()`). Flink then removes an
//! expired value only when the job reads it again (`AbstractTtlDecorator.getWrappedWithTtlCheckAndUpdate`);
//! a key never seen again (a dedup id, a session) stays in RocksDB for good: live SST bytes and
//! keys grow with every key ever seen, not with the keys of the last TTL. Flink's compaction
//! filter (`FlinkCompactionFilter`) drops expired values whenever RocksDB compacts their files.

use super::Rule;
use crate::advisor::{Change, Evidence, Finding, Input, Severity};
use crate::config::units::human_bytes;

pub const RULE: Rule = Rule {
    id: "ttl-without-cleanup",
    looks_for: "a state with a TTL and no compaction-filter cleanup, holding many keys",
    check,
};

/// Keys a TTL state must hold before its growth is worth a finding.
const MIN_KEYS: u64 = 10_000;

fn check(input: &Input) -> Option<Finding> {
    let s = input.summary;
    let cf = s
        .state_column_families
        .iter()
        .filter(|c| c.ttl_ms.is_some() && !c.ttl_compaction_filter)
        .max_by_key(|c| c.estimated_keys)?;
    if cf.estimated_keys < MIN_KEYS {
        return None;
    }
    let ttl = cf.ttl_ms.unwrap_or(0);
    let (from, to) = input.whole_run();
    Some(Finding {
        id: RULE.id,
        severity: Severity::Warning,
        diagnosis: format!(
            "State '{}' has a TTL ({}) but no cleanup in compaction: an expired value leaves RocksDB only when the job reads its key again, so keys never seen again stay for good ({} keys, {} of SST files). Flink's TTL compaction filter drops them whenever their files are compacted.",
            cf.name,
            ttl_text(ttl),
            cf.estimated_keys,
            human_bytes(cf.live_sst_bytes as f64)
        ),
        evidence: vec![
            Evidence::new("state", &cf.name, "-"),
            Evidence::new("TTL cleanup in compaction", "off", "on"),
            Evidence::new(
                "keys held (estimate)",
                cf.estimated_keys,
                format!(">= {MIN_KEYS}"),
            ),
            Evidence::new("live SST bytes", human_bytes(cf.live_sst_bytes as f64), "-"),
        ],
        from_secs: from,
        to_secs: to,
        recommendation: Vec::new(),
        memory_cost: 0,
        job_changes: vec![Change::new("job.cleanup", "compaction")],
        effect: Some(
            "live state holds about the keys of the last TTL, not every key ever seen: compactions drop the expired ones (their files are rewritten anyway); the filter reads the current time every 1,000 entries (query-time-after)".to_string(),
        ),
        alternatives: Vec::new(),
        note: Some(
            "StateTtlConfig.newBuilder(ttl).cleanupInRocksdbCompactFilter(1000) (Flink's default cleanup unless disableCleanupInBackground() is called)".to_string(),
        ),
        cost: None,
        overruled: Vec::new(),
    })
}

/// A TTL in the largest whole unit: "24h", "30m", "90s", "1500ms".
fn ttl_text(ms: i64) -> String {
    match ms {
        m if m > 0 && m % 3_600_000 == 0 => format!("{}h", m / 3_600_000),
        m if m > 0 && m % 60_000 == 0 => format!("{}m", m / 60_000),
        m if m > 0 && m % 1_000 == 0 => format!("{}s", m / 1_000),
        m => format!("{m}ms"),
    }
}

#[cfg(test)]
mod tests {
    use crate::advisor::testing::{Run, profile};
    use crate::model::summary::StateColumnFamily;

    fn run(ttl: Option<i64>, filter: bool, keys: u64) -> Run {
        Run::new(
            profile("flink-default", &[]),
            5,
            |_, _| {},
            |s| {
                s.state_column_families = vec![StateColumnFamily {
                    name: "seen".to_string(),
                    estimated_keys: keys,
                    live_sst_bytes: keys * 14,
                    ttl_ms: ttl,
                    ttl_compaction_filter: filter,
                    ..StateColumnFamily::default()
                }];
            },
        )
    }

    #[test]
    fn a_ttl_state_without_cleanup_recommends_the_compaction_filter() {
        let f = &run(Some(86_400_000), false, 193_669).findings("ttl-without-cleanup")[0];
        assert_eq!(f.job_changes[0].key, "job.cleanup");
        assert_eq!(f.job_changes[0].value, "compaction");
        assert_eq!(f.evidence[2].value, "193669");
    }

    #[test]
    fn cleanup_on_no_ttl_or_few_keys_is_not_a_finding() {
        let day = Some(86_400_000);
        assert!(
            run(day, true, 193_669)
                .findings("ttl-without-cleanup")
                .is_empty()
        );
        assert!(
            run(None, false, 193_669)
                .findings("ttl-without-cleanup")
                .is_empty()
        );
        assert!(
            run(day, false, 9_999)
                .findings("ttl-without-cleanup")
                .is_empty()
        );
    }
}
