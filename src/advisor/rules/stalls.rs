//! Write stalls and slowdowns, by cause: too many memtables waiting to flush, too many L0
//! files, too many bytes waiting for compaction.

use super::Rule;
use crate::advisor::{Change, Evidence, Finding, Input, Severity};

pub const RULE: Rule = Rule {
    id: "write-stalls",
    looks_for: "stalled or stopped writes (RocksDB's StallMicros and stall counts), by cause",
    check,
};

/// Stall time above this share of running time is a finding.
const SHARE: f64 = 0.01;
/// Above this share it is critical.
const CRITICAL_SHARE: f64 = 0.05;

fn check(input: &Input) -> Option<Finding> {
    let s = input.summary;
    let running_micros = s.processing_secs * 1e6;
    if running_micros <= 0.0 {
        return None;
    }
    let share = s.stall_micros as f64 / running_micros;
    if share < SHARE {
        return None;
    }
    let (from, to, _) =
        input.when(|m| m.rocksdb.stall.micros > 0 || m.rocksdb.stall.write_stopped)?;
    let c = &s.stall_counts;
    let k = &input.profile.knobs;
    let memtable = c.memtable_limit_delays + c.memtable_limit_stops;
    let l0 = c.l0_file_count_delays + c.l0_file_count_stops;
    let pending = c.pending_compaction_bytes_delays + c.pending_compaction_bytes_stops;
    // The dominant cause decides the fix.
    let (cause, recommendation, note) = if memtable >= l0 && memtable >= pending {
        (
            "memtables waiting to flush reached writebuffer.count",
            vec![Change::new("writebuffer.count", k.max_write_buffer_number + 1)],
            Some("each extra memtable slot lets writes go on while one flushes; if the WriteBufferManager forces the flushes, fix its budget per state first (wbm-budget)".to_string()),
        )
    } else if l0 >= pending {
        (
            "L0 files reached the slowdown/stop trigger: compaction out of L0 falls behind",
            vec![Change::new("thread.num", k.background_jobs + 2)],
            Some("more background threads compact L0 sooner; fewer, larger flushes (a larger WriteBufferManager) make fewer L0 files".to_string()),
        )
    } else {
        (
            "bytes waiting for compaction reached the soft/hard limit",
            vec![Change::new("thread.num", k.background_jobs + 2)],
            None,
        )
    };
    Some(Finding {
        id: RULE.id,
        severity: if share >= CRITICAL_SHARE {
            Severity::Critical
        } else {
            Severity::Warning
        },
        diagnosis: format!(
            "Writes stalled {:.1} % of the running time: {cause}.",
            share * 100.0
        ),
        evidence: vec![
            Evidence::new(
                "stall time / running time",
                format!("{:.1} %", share * 100.0),
                format!("< {:.0} %", SHARE * 100.0),
            ),
            Evidence::new(
                "delays/stops: memtable, L0, pending compaction",
                format!(
                    "{}/{}, {}/{}, {}/{}",
                    c.memtable_limit_delays,
                    c.memtable_limit_stops,
                    c.l0_file_count_delays,
                    c.l0_file_count_stops,
                    c.pending_compaction_bytes_delays,
                    c.pending_compaction_bytes_stops
                ),
                "0",
            ),
            Evidence::new(
                "put latency p99 / max",
                format!(
                    "{:.1} µs / {:.0} µs",
                    s.p99_put_latency_us, s.max_put_latency_us
                ),
                "-",
            ),
        ],
        from_secs: from,
        to_secs: to,
        recommendation,
        memory_cost: 0,
        job_changes: Vec::new(),
        effect: None,
        alternatives: Vec::new(),
        note,
        cost: None,
        overruled: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use crate::advisor::testing::{Run, profile};

    fn run(stall_share: f64, memtable_stops: u64, l0_delays: u64) -> Run {
        Run::new(
            profile("flink-default", &[]),
            10,
            |i, s| s.rocksdb.stall.micros = if i > 4 { 1 } else { 0 },
            |s| {
                s.stall_micros = (stall_share * s.processing_secs * 1e6) as u64;
                s.stall_counts.memtable_limit_stops = memtable_stops;
                s.stall_counts.l0_file_count_delays = l0_delays;
            },
        )
    }

    #[test]
    fn stalls_are_found_with_the_fix_for_their_cause() {
        let f = &run(0.3, 950, 10).findings("write-stalls")[0];
        assert_eq!(f.severity, crate::advisor::Severity::Critical);
        assert_eq!(f.recommendation[0].key, "writebuffer.count");
        assert_eq!(f.recommendation[0].value, "3");
        assert_eq!((f.from_secs, f.to_secs), (6.0, 10.0));
        let f = &run(0.02, 0, 45).findings("write-stalls")[0];
        assert_eq!(f.severity, crate::advisor::Severity::Warning);
        assert_eq!(f.recommendation[0].key, "thread.num");
        assert_eq!(f.recommendation[0].value, "4");
    }

    #[test]
    fn stalls_under_one_percent_of_running_time_are_not_a_finding() {
        assert!(run(0.009, 3, 0).findings("write-stalls").is_empty());
        assert!(run(0.0, 0, 0).findings("write-stalls").is_empty());
    }
}
