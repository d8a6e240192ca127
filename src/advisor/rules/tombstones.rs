//! Iteration that walks tombstones: a map state whose entries are put and removed one by one
//! (Flink's `IntervalJoinOperator` buffers, one entry per timestamp removed by its cleanup
//! timer) and iterated per element (`RocksDBMapState.iterator`: a seek on the key's prefix,
//! then nexts). A removed entry leaves its put and its tombstone in the memtable, and the
//! tombstone in every file until a compaction drops it; each seek and next steps over all of
//! them (`rocksdb.number.iter.skip`). A smaller write buffer flushes them out of the memtable
//! sooner, and compactions of the small files drop them.

use super::Rule;
use crate::advisor::{Change, Evidence, Finding, Input, Severity};
use crate::config::units::human_bytes;

pub const RULE: Rule = Rule {
    id: "iterator-tombstones",
    looks_for: "map iteration stepping over many deleted entries per record",
    check,
};

/// Internal entries skipped per record at or above which iteration is mostly tombstones.
const SKIPS_PER_RECORD: f64 = 20.0;
/// The recommended write buffer (measured on interval-join: skips per element 177 -> 71).
const SMALL_WRITE_BUFFER: u64 = 1 << 20;

fn check(input: &Input) -> Option<Finding> {
    let s = input.summary;
    let records = s.records();
    if records == 0 || s.iterator_seeks == 0 || s.deletes == 0 {
        return None;
    }
    let skips_per_record = s.iterator_skips as f64 / records as f64;
    if skips_per_record < SKIPS_PER_RECORD {
        return None;
    }
    let current = input.profile.knobs.write_buffer_size.0;
    if current <= SMALL_WRITE_BUFFER {
        return None;
    }
    let steps = s.iterator_seeks + s.iterator_nexts;
    // Whose entries they are: an interval join's buffers when the job runs one (or does not say).
    let whose = if s.runs("interval-join") == Some(false) {
        "a map state's entries put and removed one by one"
    } else {
        "entries put and removed one by one (an interval join's buffers, removed per timestamp by its cleanup timers)"
    };
    let (from, to) = input.whole_run();
    Some(Finding {
        id: RULE.id,
        severity: Severity::Warning,
        diagnosis: format!(
            "Map iteration steps over {skips_per_record:.0} deleted or overwritten entries per record ({:.1} per seek or next it returns from): {whose} leave their tombstones in the {} memtable and in files until a compaction drops them, and every seek on the key walks them.",
            s.iterator_skips as f64 / steps as f64,
            human_bytes(current as f64)
        ),
        evidence: vec![
            Evidence::new(
                "entries skipped per record",
                format!("{skips_per_record:.0}"),
                format!(">= {SKIPS_PER_RECORD:.0}"),
            ),
            Evidence::new("iterator seeks + nexts", steps, "-"),
            Evidence::new("deletes", s.deletes, "> 0"),
        ],
        from_secs: from,
        to_secs: to,
        recommendation: vec![Change::new("writebuffer.size", "1mb")],
        memory_cost: 0,
        job_changes: Vec::new(),
        effect: Some(
            "tombstones leave the memtable at each (smaller) flush and compactions of the small files drop them: fewer entries skipped per record (measured on interval-join, 64 MB -> 1 MB: 177 -> 71), for more flushes and compactions; a narrower join bound does not help (it removes entries sooner: 285 per record at -30s..30s)".to_string(),
        ),
        alternatives: Vec::new(),
        note: None,
    })
}

#[cfg(test)]
mod tests {
    use crate::advisor::testing::{Run, profile};

    fn run(skips: u64, write_buffer: &str) -> Run {
        Run::new(
            profile("flink-default", &[("writebuffer.size", write_buffer)]),
            5,
            |_, _| {},
            |s| {
                s.records_processed = 5_000;
                s.iterator_seeks = 5_000;
                s.iterator_nexts = 45_000;
                s.deletes = 4_500;
                s.iterator_skips = skips;
            },
        )
    }

    #[test]
    fn iteration_over_tombstones_recommends_a_smaller_write_buffer() {
        // interval-join's measured shape: 177 entries skipped per element.
        let f = &run(5_000 * 177, "64mb").findings("iterator-tombstones")[0];
        assert_eq!(f.recommendation[0].key, "writebuffer.size");
        assert_eq!(f.recommendation[0].value, "1mb");
        assert_eq!(f.evidence[0].value, "177");
    }

    #[test]
    fn the_diagnosis_names_an_interval_joins_buffers_only_when_the_job_runs_one() {
        let diagnosis = |kinds: &[&str]| {
            let mut r = run(5_000 * 177, "64mb");
            r.summary.job = kinds.iter().map(|k| k.to_string()).collect();
            r.findings("iterator-tombstones")[0].diagnosis.clone()
        };
        assert!(diagnosis(&["interval-join"]).contains("interval join's buffers"));
        assert!(diagnosis(&["interval-join", "aggregate"]).contains("interval join's buffers"));
        let process = diagnosis(&["process"]);
        assert!(!process.contains("interval join"), "{process}");
        assert!(process.contains("a map state's entries"), "{process}");
    }

    #[test]
    fn few_skips_or_a_small_write_buffer_are_not_a_finding() {
        assert!(
            run(5_000 * 19, "64mb")
                .findings("iterator-tombstones")
                .is_empty()
        );
        assert!(
            !run(5_000 * 20, "64mb")
                .findings("iterator-tombstones")
                .is_empty()
        );
        assert!(
            run(5_000 * 177, "1mb")
                .findings("iterator-tombstones")
                .is_empty()
        );
    }
}
