//! Backfill then catch-up, the source's starting offsets and its readers, end to end.

use statebench::config::workload::{CatchUpState, StartingOffsets, WriteCondition};
use statebench::config::{Millis, Profile, Workload};
use statebench::engine::{self, EngineConfig, Phase, RunOutcome};

fn run(workload: Workload) -> RunOutcome {
    let workload = Workload::from_spec("test", "test", workload.spec).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let events = workload.spec.events;
    engine::run_to_completion(EngineConfig {
        events,
        ..EngineConfig::new(
            workload,
            Profile::load("flink-default").unwrap(),
            dir.path().to_path_buf(),
        )
    })
    .unwrap()
}

/// backfill-catchup at a third of its events (same span: sparser, faster).
fn phased() -> Workload {
    let mut w = Workload::load("backfill-catchup").unwrap();
    w.spec.events = 20_000;
    w
}

#[test]
fn a_correct_switch_is_exact_and_each_job_reads_its_own_range() {
    let outcome = run(phased());
    assert!(
        outcome.result_error.is_exact(),
        "{:?}",
        outcome.result_error
    );
    assert!(outcome.state_error.is_exact(), "{:?}", outcome.state_error);
    let [backfill, catch_up] = outcome.jobs.as_slice() else {
        panic!("two jobs: {:?}", outcome.jobs);
    };
    assert_eq!(backfill.phase, Phase::Backfill);
    assert!(backfill.committed);
    assert_eq!(backfill.start, vec![0; 4]);
    // The backfill read the history (10 of 30 minutes), synced it once, and committed its end.
    let history = backfill.end.iter().sum::<u64>();
    assert!((6_000..7_500).contains(&history), "{history}");
    assert_eq!(backfill.records_read, history);
    assert!(backfill.sink_writes > 0);
    // The catch-up rebuilt from the oldest record under its own group and read everything.
    assert_eq!(catch_up.group, "catch-up");
    assert_eq!(catch_up.start, vec![0; 4]);
    assert_eq!(catch_up.records_read, 20_000);
    assert_eq!(catch_up.records_skipped, 0);
    // Before the switch the catch-up writes nothing: fewer writes than a streaming job's.
    let job = outcome.snapshots.last().unwrap().pipeline.job;
    assert!(catch_up.sink_writes < job.increments + job.decrements);
    assert!(catch_up.sink_writes > 0);
}

#[test]
fn a_watermark_write_condition_with_an_idle_partition_blocks_every_write() {
    let mut w = phased();
    w.spec.idle_partitions = vec![3];
    w.spec.idleness = None;
    let phases = w.spec.phases.as_mut().unwrap();
    phases.catch_up_writes = WriteCondition::Watermark;
    let blocked = run(w.clone());
    let written = |o: &RunOutcome| o.jobs[1].sink_writes;
    assert_eq!(
        blocked.snapshots.last().unwrap().pipeline.watermark,
        i64::MIN
    );
    assert_eq!(
        written(&blocked),
        0,
        "the stuck watermark blocked every write"
    );
    assert!(!blocked.result_error.is_exact());
    // The event-time condition keeps writing with the same stuck watermark (nothing expires
    // without a watermark, so its counts are not right either: the idle partition needs
    // idleness; the write condition decides only whether the store hears anything at all).
    w.spec.phases.as_mut().unwrap().catch_up_writes = WriteCondition::EventTime;
    let flowing = run(w);
    assert!(written(&flowing) > 10_000, "{}", written(&flowing));
}

#[test]
fn the_mistakes_show_as_result_error() {
    let mut same_group = phased();
    let p = same_group.spec.phases.as_mut().unwrap();
    p.catch_up_group = p.backfill_group.clone();
    let o = run(same_group);
    assert!(
        o.jobs[1]
            .started_from
            .contains("committed offsets of group 'backfill'")
    );
    assert_eq!(o.jobs[1].start, o.jobs[0].end);
    assert!(o.jobs[1].records_skipped > 0 && o.result_error.over > 0);

    let mut savepoint = phased();
    savepoint.spec.phases.as_mut().unwrap().catch_up_state = CatchUpState::BackfillSavepoint;
    let o = run(savepoint);
    assert!(
        o.result_error.over > 0 && o.state_error.over > 0,
        "{:?}",
        o.state_error
    );
}

fn smoke(events: u64) -> Workload {
    let mut w = Workload::load("smoke").unwrap();
    w.spec.events = events;
    w.spec.event_time.span = Millis(events * 36); // smoke's pace
    w
}

#[test]
fn latest_reads_only_what_is_written_after_the_deploy_and_stays_exact() {
    let mut w = smoke(20_000);
    w.spec.source.deployed_at = Some(Millis(360_000)); // 10000 records in
    w.spec.source.starting_offsets = StartingOffsets::Latest;
    let o = run(w);
    assert_eq!(o.jobs[0].records_read, 10_000);
    assert_eq!(o.jobs[0].start.iter().sum::<u64>(), 10_000);
    assert_eq!(
        o.jobs[0].records_skipped, 0,
        "latest is the job's own choice, not a skip"
    );
    assert!(o.result_error.is_exact(), "{:?}", o.result_error);
}

#[test]
fn more_readers_than_partitions_need_idleness() {
    let mut w = smoke(10_000);
    w.spec.source.readers = Some(6);
    let stuck = run(w.clone());
    let last = stuck.snapshots.last().unwrap();
    assert_eq!(last.pipeline.watermark, i64::MIN);
    assert_eq!(last.pipeline.timers_fired, 0);
    w.spec.idleness = Some(Millis(60_000));
    let fixed = run(w);
    let last = fixed.snapshots.last().unwrap();
    assert!(last.pipeline.watermark > i64::MIN);
    assert_eq!(last.pipeline.idle_readers, 2);
    assert!(fixed.result_error.is_exact());
}

#[test]
fn a_bounded_source_ends_its_readers_without_partitions_too() {
    let mut w = smoke(10_000);
    w.spec.source.readers = Some(6);
    w.spec.bounded_end_delay = Some(Millis(1_000));
    let o = run(w);
    let last = o.snapshots.last().unwrap();
    // "No more splits" ends the two readers without a partition: the maximum watermark gets
    // through and every timer fires.
    assert_eq!(last.pipeline.watermark, i64::MAX);
    assert_eq!(last.pipeline.next_timer, None);
    assert!(o.result_error.is_exact(), "{:?}", o.result_error);
}

#[test]
fn a_timestamp_start_resolves_against_the_log_at_deploy() {
    let mut w = smoke(20_000);
    w.spec.source.deployed_at = Some(Millis(540_000)); // 15000 records written
    w.spec.source.starting_offsets = StartingOffsets::Timestamp;
    w.spec.source.starting_timestamp = Some(Millis(180_000)); // 5000 records in
    let o = run(w.clone());
    assert_eq!(o.jobs[0].start.iter().sum::<u64>(), 5_000);
    assert_eq!(o.jobs[0].records_read, 15_000);
    // A timestamp not yet written at deploy would start at the log's end: refused, with why.
    w.spec.source.starting_timestamp = Some(Millis(600_000));
    let err = Workload::from_spec("t", "t.yaml", w.spec)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("'source.starting-timestamp' (10m) is after 'source.deployed-at' (9m)"),
        "{err}"
    );
}

#[test]
fn a_backfill_cut_short_neither_commits_nor_starts_the_catch_up() {
    let mut w = Workload::load("backfill-catchup").unwrap();
    w.spec.events = 2_000_000; // far more history than a few milliseconds can read
    w.spec.event_time.span = Millis(30 * 60_000);
    let w = Workload::from_spec("test", "test", w.spec).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let o = engine::run_to_completion(EngineConfig {
        events: 2_000_000,
        duration: Some(std::time::Duration::from_millis(300)),
        ..EngineConfig::new(
            w,
            Profile::load("flink-default").unwrap(),
            dir.path().to_path_buf(),
        )
    })
    .unwrap();
    assert_eq!(o.jobs.len(), 1, "{:?}", o.jobs);
    assert_eq!(o.jobs[0].phase, Phase::Backfill);
    assert!(!o.jobs[0].committed);
    assert!(!o.stopped_early, "--duration is a bound, not a stop");
    assert!(
        !o.fresh_state,
        "the comparison with the oracle does not apply"
    );
}
