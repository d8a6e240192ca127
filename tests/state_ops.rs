//! Operations per state: each column family's counts in the summary add up to the job's.

use statebench::config::{Profile, Workload};
use statebench::engine::{self, EngineConfig, FailureSpec};
use statebench::summary::Summary;

/// The summary's per-state operations against its totals, field by field.
fn check(name: &str, events: u64, fail: bool) {
    let workload = Workload::load(name).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let profile = Profile::load("flink-default")
        .unwrap()
        .edited("execution.checkpointing.interval", "50ms")
        .unwrap();
    let failures = if fail {
        FailureSpec {
            at_events: vec![events / 2],
            ..FailureSpec::default()
        }
    } else {
        FailureSpec::default()
    };
    let outcome = engine::run_to_completion(EngineConfig {
        events,
        failures,
        ..EngineConfig::new(workload, profile, dir.path())
    })
    .unwrap();
    let s = Summary::new(&outcome);
    let ops = outcome.snapshots.last().unwrap().ops;
    assert!(!s.state_column_families.is_empty(), "{name}");
    let sum = |f: &dyn Fn(&statebench::backend::CfOps) -> u64| {
        s.state_column_families
            .iter()
            .map(|c| f(&c.ops))
            .sum::<u64>()
    };
    let pairs = [
        ("gets", s.gets, sum(&|o| o.gets)),
        ("puts", s.puts, sum(&|o| o.puts)),
        ("deletes", s.deletes, sum(&|o| o.deletes)),
        ("merges", s.merges, sum(&|o| o.merges)),
        (
            "batch entries",
            ops.batch_entries,
            sum(&|o| o.batch_entries),
        ),
        ("seeks", s.iterator_seeks, sum(&|o| o.iterator_seeks)),
        ("nexts", s.iterator_nexts, sum(&|o| o.iterator_nexts)),
        ("bytes", ops.put_bytes, sum(&|o| o.put_bytes)),
    ];
    for (what, total, per_state) in pairs {
        assert_eq!(total, per_state, "{name} (failure: {fail}): {what}");
    }
    assert!(ops.total() > 0, "{name}: no operations");
    if fail {
        assert!(
            s.records_replayed > 0 || s.records_processed > s.events,
            "{name}: no restore"
        );
    }
}

#[test]
fn per_state_operations_sum_to_the_job_totals() {
    check("process-example", 4_000, false);
    check("sessions-process", 4_000, false);
    check("interval-join", 4_000, false);
}

#[test]
fn per_state_operations_sum_to_the_job_totals_across_a_restore() {
    check("process-example", 4_000, true);
    check("smoke", 4_000, true);
}
