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
/// Share of the job's CPU spent stepping over skipped entries from which the skipping is harm
/// worth a write-path change (more flushes and compactions): a twentieth of the CPU.
const HARMFUL_SKIP_SHARE: f64 = 0.05;

/// What the skipping costs: the share of CPU in state iterators (the profiler's `DBIter`
/// samples) times the share of the entries they stepped over that were skipped.
struct Harm {
    severity: Severity,
    cost: String,
}

fn harm(input: &Input, skips: u64, steps: u64) -> Harm {
    let iteration = input
        .summary
        .cpu
        .as_ref()
        .and_then(|cpu| cpu.iteration_share());
    let Some(iteration) = iteration else {
        return Harm {
            severity: Severity::Info,
            cost: "not measured: no CPU profile was taken, so what the skipping costs is unknown; `statebench run ... --profile-cpu` measures the CPU share in state iterators (this finding is a warning from 5 % of the CPU spent skipping)".to_string(),
        };
    };
    let skipped = skips as f64 / (skips + steps).max(1) as f64;
    let skipping = iteration * skipped;
    let severity = if skipping >= HARMFUL_SKIP_SHARE {
        Severity::Warning
    } else {
        Severity::Info
    };
    let judged = if severity == Severity::Warning {
        "worth a smaller write buffer's extra flushes and compactions"
    } else {
        "too little to pay for a smaller write buffer's extra flushes and compactions"
    };
    Harm {
        severity,
        cost: format!(
            "state iterators took {:.1} % of the CPU, {:.0} % of the entries they stepped over were skipped: about {:.1} % of the CPU spent skipping (threshold {:.0} %), {judged}",
            iteration * 100.0,
            skipped * 100.0,
            skipping * 100.0,
            HARMFUL_SKIP_SHARE * 100.0
        ),
    }
}

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
    let Harm { severity, cost } = harm(input, s.iterator_skips, steps);
    let (from, to) = input.whole_run();
    Some(Finding {
        id: RULE.id,
        severity,
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
            "tombstones leave the memtable at each (smaller) flush and compactions of the small files drop them: fewer entries skipped per record (measured on interval-join, 64 MB -> 1 MB: 177 -> 71), for many more flushes and compactions and a higher write amplification: take it only where the skipping costs more CPU than they do (`statebench tune` weighs both); a narrower join bound does not help (it removes entries sooner: 285 per record at -30s..30s)".to_string(),
        ),
        alternatives: Vec::new(),
        note: None,
        cost: Some(cost),
        overruled: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use crate::advisor::Severity;
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
    fn skipping_without_a_cpu_profile_is_info_and_says_how_to_measure_it() {
        let f = &run(5_000 * 177, "64mb").findings("iterator-tombstones")[0];
        assert_eq!(f.severity, Severity::Info);
        assert!(
            f.cost.as_deref().unwrap().contains("--profile-cpu"),
            "{:?}",
            f.cost
        );
    }

    #[test]
    fn skipping_is_a_warning_only_when_the_cpu_it_takes_is_measured_above_five_percent() {
        // 177 skips per record against 10 seeks + nexts: 95 % of the entries stepped over.
        let with_iteration = |iterating: u64| {
            let mut r = run(5_000 * 177, "64mb");
            r.summary.cpu = Some(crate::model::cpu::CpuSample {
                samples: 1_000,
                iteration_samples: iterating,
                ..crate::model::cpu::CpuSample::default()
            });
            r.findings("iterator-tombstones")[0].clone()
        };
        // 6 % of the CPU in iterators: about 5.7 % skipping.
        let f = with_iteration(60);
        assert_eq!(f.severity, Severity::Warning, "{:?}", f.cost);
        // 5 % in iterators: 4.7 % skipping, under the threshold: info.
        let f = with_iteration(50);
        assert_eq!(f.severity, Severity::Info, "{:?}", f.cost);
        assert!(f.cost.unwrap().contains("too little"));
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
