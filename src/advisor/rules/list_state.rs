//! A window whose contents are a ListState (a `ProcessWindowFunction` without an incremental
//! function): Flink's `RocksDBListState.add` writes every element as a RocksDB merge operand,
//! and the window's fire reads the whole list back (`RocksDBListState.get`: one point read that
//! makes RocksDB apply every operand and return every element's bytes). An `AggregateFunction`
//! (or `ReduceFunction`) keeps one accumulator per window instead, read-modify-written per
//! element: the fire reads one small value.

use super::Rule;
use crate::advisor::{Evidence, Finding, Input, Severity};
use crate::config::units::human_bytes;

pub const RULE: Rule = Rule {
    id: "list-state-merges",
    looks_for: "a ListState appended per element with merges and read whole when it fires",
    check,
};

/// Merges per record at or above which elements are buffered in a list, not aggregated.
const MERGES_PER_RECORD: f64 = 0.5;
/// Bytes per point read at or above which the reads return whole lists, not single values.
const BYTES_PER_READ: f64 = 128.0;

fn check(input: &Input) -> Option<Finding> {
    let s = input.summary;
    let records = s.records();
    if records == 0 || s.gets == 0 {
        return None;
    }
    // Per state: another state's small reads (a merging window set's, 32 bytes each, read per
    // element) must not dilute the lists' (read once a window). Reports written before reads
    // were counted per state have only the run's totals.
    let per_state = s
        .state_column_families
        .iter()
        .any(|c| c.ops.get_bytes > 0 || c.ops.get_misses > 0);
    let (state, merges, gets, get_bytes) = if per_state {
        s.state_column_families
            .iter()
            .filter(|c| !c.ops_only && c.ops.gets > 0)
            .filter(|c| {
                c.ops.merges as f64 >= MERGES_PER_RECORD * records as f64
                    && c.ops.get_bytes as f64 >= BYTES_PER_READ * c.ops.gets as f64
            })
            .max_by_key(|c| c.ops.merges)
            .map(|c| {
                (
                    Some(c.name.as_str()),
                    c.ops.merges,
                    c.ops.gets,
                    c.ops.get_bytes,
                )
            })?
    } else {
        (None, s.merges, s.gets, s.get_bytes_read)
    };
    let merges_per_record = merges as f64 / records as f64;
    let bytes_per_read = get_bytes as f64 / gets as f64;
    if merges_per_record < MERGES_PER_RECORD || bytes_per_read < BYTES_PER_READ {
        return None;
    }
    let whose = state.map_or_else(String::new, |name| format!(" '{name}'"));
    // The fix is a window's function: a job that says its kinds must run a window (a process
    // function's ListState has no aggregate function to switch to). In a chain, the window's key.
    let kinds = s.kinds();
    let function_key = match kinds.iter().position(|k| *k == "window") {
        Some(i) if kinds.len() > 1 => format!("job[{i}].function"),
        Some(_) => "job.function".to_string(),
        None if kinds.is_empty() => "job.function".to_string(),
        None => return None,
    };
    let per_fire = (s.timers_fired > 0).then(|| get_bytes as f64 / s.timers_fired as f64);
    let (from, to) = input.whole_run();
    let mut evidence = vec![
        Evidence::new(
            "merges per record",
            format!("{merges_per_record:.2}"),
            format!(">= {MERGES_PER_RECORD}"),
        ),
        Evidence::new(
            if state.is_some() {
                "bytes per read of the list state"
            } else {
                "bytes per state read"
            },
            format!("{bytes_per_read:.0}"),
            format!(">= {BYTES_PER_READ:.0}"),
        ),
    ];
    if let Some(b) = per_fire {
        evidence.push(Evidence::new(
            "bytes read per timer fired",
            human_bytes(b),
            "-",
        ));
    }
    Some(Finding {
        id: RULE.id,
        severity: Severity::Warning,
        diagnosis: format!(
            "Every element is appended to the window's ListState{whose} as a RocksDB merge operand ({merges_per_record:.2} merges per record) and the list is read whole, every operand merged, when the window fires ({bytes_per_read:.0} bytes per read of that state, {gets} reads): a ProcessWindowFunction without an incremental function. An AggregateFunction (or ReduceFunction) keeps one accumulator per window instead."
        ),
        evidence,
        from_secs: from,
        to_secs: to,
        recommendation: Vec::new(),
        memory_cost: 0,
        job_changes: vec![crate::advisor::Change::new(&function_key, "aggregate")],
        effect: Some(format!(
            "the fire reads one accumulator instead of the window's elements: bytes read per state read from {bytes_per_read:.0} to about an accumulator's size; no merges (a get and a put per element instead of a merge)"
        )),
        alternatives: Vec::new(),
        note: Some(
            "window(...).aggregate(aggFunction, processWindowFunction) keeps Flink's ProcessWindowFunction for the result; it then sees the one aggregate, not the elements".to_string(),
        ),
        cost: None,
        overruled: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use crate::advisor::testing::{Run, profile};

    fn run(merges: u64, get_bytes: u64) -> Run {
        run_of(&["window"], merges, get_bytes)
    }

    fn run_of(kinds: &[&str], merges: u64, get_bytes: u64) -> Run {
        Run::new(
            profile("flink-default", &[]),
            5,
            |_, _| {},
            |s| {
                s.records_processed = 5_000;
                s.merges = merges;
                s.gets = 5_000;
                s.get_bytes_read = get_bytes;
                s.timers_fired = 2_000;
                s.job = kinds.iter().map(|k| k.to_string()).collect();
            },
        )
    }

    #[test]
    fn merged_lists_read_whole_recommend_an_aggregate_function() {
        // sessions-process's measured shape: 1 merge per record, 184 bytes per read.
        let f = &run(5_000, 5_000 * 184).findings("list-state-merges")[0];
        assert_eq!(f.job_changes[0].key, "job.function");
        assert_eq!(f.job_changes[0].value, "aggregate");
        assert_eq!(f.evidence[0].value, "1.00");
    }

    #[test]
    fn only_a_window_gets_the_aggregate_function() {
        // A process function's ListState: merges and whole reads, but no window to change.
        assert!(
            run_of(&["process"], 5_000, 5_000 * 184)
                .findings("list-state-merges")
                .is_empty()
        );
        // In a chain, the window's own key.
        let f = &run_of(&["dedup", "window"], 5_000, 5_000 * 184).findings("list-state-merges")[0];
        assert_eq!(f.job_changes[0].key, "job[1].function");
        // A summary written with states listed but before kinds were kept: judged by the numbers.
        let mut unknown = run_of(&[], 5_000, 5_000 * 184);
        unknown.summary.state_column_families = vec![Default::default()];
        assert_eq!(unknown.findings("list-state-merges").len(), 1);
        // One written before operator kinds: the frequency counter, which has no window.
        assert!(
            run_of(&[], 5_000, 5_000 * 184)
                .findings("list-state-merges")
                .is_empty()
        );
    }

    #[test]
    fn a_merging_window_sets_small_reads_do_not_dilute_the_lists() {
        // sessions-process over 1 M zipf users: the window contents merged once per element and
        // read whole at 1,000 fires (400 bytes each); the merging window set read 1.38 times
        // per element, 32 bytes each. The run's average is under 128 bytes per read.
        let mut r = run(5_000, 0);
        let cf = |name: &str, merges, gets, get_bytes| crate::model::summary::StateColumnFamily {
            name: name.to_string(),
            ops: crate::model::counters::CfOps {
                merges,
                gets,
                get_bytes,
                ..Default::default()
            },
            ..Default::default()
        };
        r.summary.state_column_families = vec![
            cf("window-contents", 5_000, 1_000, 1_000 * 400),
            cf("merging-window-set", 0, 6_900, 6_900 * 32),
        ];
        r.summary.gets = 7_900;
        r.summary.get_bytes_read = 1_000 * 400 + 6_900 * 32;
        assert!(r.summary.get_bytes_read / r.summary.gets < 128);
        let f = &r.findings("list-state-merges")[0];
        assert!(f.diagnosis.contains("'window-contents'"), "{}", f.diagnosis);
        assert_eq!(f.evidence[1].value, "400");
        // The same lists, small: no finding.
        r.summary.state_column_families[0].ops.get_bytes = 1_000 * 100;
        assert!(r.findings("list-state-merges").is_empty());
    }

    #[test]
    fn an_aggregate_window_or_small_reads_are_not_a_finding() {
        // sessions-aggregate's shape: no merges, 20 bytes per read.
        assert!(run(0, 5_000 * 20).findings("list-state-merges").is_empty());
        // Merges whose lists stay small.
        assert!(
            run(5_000, 5_000 * 127)
                .findings("list-state-merges")
                .is_empty()
        );
        assert!(
            !run(5_000, 5_000 * 128)
                .findings("list-state-merges")
                .is_empty()
        );
    }
}
