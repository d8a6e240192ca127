//! Failures, checkpoints and savepoints (case studies 4, 5 and 8): each case runs the same
//! workload under several settings and prints what a user must see to choose.

use std::fmt::Write as _;

use crate::config::units::human_bytes;
use crate::config::{Profile, Workload};
use crate::engine::{
    self, CheckpointOutcome, EngineConfig, FailureSpec, RunOutcome, SavepointFormat,
};
use crate::report::checkpoints::{CheckpointSummary, Spread};

/// A failure, checkpoint or savepoint case.
pub struct Case {
    pub name: &'static str,
    pub story: &'static str,
    /// Events per run by default.
    pub events: u64,
    run: fn(u64) -> anyhow::Result<(String, bool)>,
}

pub const CASES: &[Case] = &[
    Case {
        name: "exactly-once",
        story: "case 8: the same two failures under each sink guarantee and reader isolation: duplicates, lost results, result error",
        events: 40_000,
        run: exactly_once,
    },
    Case {
        name: "changelog-uploads",
        story: "case 4: incremental checkpoints spike when compaction rewrites SSTs; the changelog uploads the state changes, evenly",
        events: 300_000,
        run: changelog_uploads,
    },
    Case {
        name: "native-savepoint-changelog",
        story: "case 5: a native savepoint with the changelog on stops materialization for good; a canonical one does not",
        events: 200_000,
        run: native_savepoint_changelog,
    },
];

pub fn find(name: &str) -> Option<&'static Case> {
    CASES.iter().find(|c| c.name == name)
}

/// Runs `case` (`events` per run, or its own count) and returns its table and whether it
/// showed what it must.
pub fn run(case: &Case, events: Option<u64>) -> anyhow::Result<(String, bool)> {
    (case.run)(events.unwrap_or(case.events))
}

/// A profile: flink-default with these edits.
fn profile(name: &str, edits: &[(&str, &str)]) -> anyhow::Result<Profile> {
    let mut p = Profile::load("flink-default")?;
    for (k, v) in edits {
        p = p.edited(k, v)?;
    }
    p.name = name.to_string();
    Ok(p)
}

/// One run on a fresh data directory.
fn one_run(
    workload: &Workload,
    profile: Profile,
    events: u64,
    failures: FailureSpec,
    savepoints: Vec<(u64, SavepointFormat)>,
) -> anyhow::Result<(RunOutcome, CheckpointOutcome)> {
    let dir = tempfile::Builder::new().prefix("statebench-").tempdir()?;
    let mut outcome = engine::run_to_completion(EngineConfig {
        events,
        failures,
        savepoints,
        ..EngineConfig::new(workload.clone(), profile, dir.path())
    })?;
    let checkpoints = outcome
        .checkpoints
        .take()
        .ok_or_else(|| anyhow::anyhow!("the run did not checkpoint"))?;
    Ok((outcome, checkpoints))
}

fn error_text(outcome: &RunOutcome) -> String {
    let e = &outcome.result_error;
    if e.is_exact() {
        format!("exact ({} counts)", e.compared)
    } else {
        format!("{} over, {} under, {} missing", e.over, e.under, e.missing)
    }
}

/// What must hold of a run.
type Check = fn(&RunOutcome, &CheckpointOutcome) -> bool;
/// A row of the exactly-once matrix: label, sink edits, what must hold.
type Row = (&'static str, Vec<(&'static str, &'static str)>, Check);

fn exactly_once(events: u64) -> anyhow::Result<(String, bool)> {
    let mut workload = Workload::load("smoke")?;
    workload.spec.keys.count = 2_000;
    workload.spec.events = events;
    let failures = FailureSpec {
        at_events: vec![events * 3 / 8, events * 3 / 4],
        every: None,
    };
    let checkpointing = [
        ("execution.checkpointing.interval", "200ms"),
        ("execution.checkpointing.incremental", "true"),
    ];
    let rows: [Row; 7] = [
        (
            "EXACTLY_ONCE, read_committed",
            vec![
                ("sink.delivery-guarantee", "EXACTLY_ONCE"),
                ("sink.reader-isolation", "read_committed"),
            ],
            |o, c| o.result_error.is_exact() && c.delivery.duplicates_seen == 0,
        ),
        (
            "EXACTLY_ONCE, read_uncommitted",
            vec![
                ("sink.delivery-guarantee", "EXACTLY_ONCE"),
                ("sink.reader-isolation", "read_uncommitted"),
            ],
            |_, c| c.delivery.duplicates_seen > 0,
        ),
        (
            "AT_LEAST_ONCE, read_uncommitted",
            vec![("sink.delivery-guarantee", "AT_LEAST_ONCE")],
            |_, c| c.delivery.duplicates_seen > 0,
        ),
        (
            "AT_LEAST_ONCE, idempotent store",
            vec![
                ("sink.delivery-guarantee", "AT_LEAST_ONCE"),
                ("sink.idempotent", "true"),
            ],
            |o, c| {
                o.result_error.is_exact()
                    && c.delivery.duplicates_seen == c.delivery.duplicates_dropped
            },
        ),
        ("NONE", vec![("sink.delivery-guarantee", "NONE")], |_, c| {
            c.delivery.duplicates_seen > 0
        }),
        (
            "EXACTLY_ONCE, read_committed, timeout 100ms",
            vec![
                ("sink.delivery-guarantee", "EXACTLY_ONCE"),
                ("sink.reader-isolation", "read_committed"),
                ("sink.transaction-timeout", "100ms"),
            ],
            |o, c| c.delivery.records_lost > 0 && !o.result_error.is_exact(),
        ),
        (
            "EXACTLY_ONCE, read_committed, barriers unaligned",
            vec![
                ("sink.delivery-guarantee", "EXACTLY_ONCE"),
                ("sink.reader-isolation", "read_committed"),
                ("execution.checkpointing.mode", "AT_LEAST_ONCE"),
            ],
            |o, _| o.state_error.over > 0 && o.result_error.over > 0,
        ),
    ];
    let mut out = String::new();
    let _ = writeln!(
        out,
        "exactly-once: {events} events of smoke (2,000 users), incremental checkpoints every 200ms, the job killed at {} and {} records\n",
        failures.at_events[0], failures.at_events[1]
    );
    let _ = writeln!(
        out,
        "  {:<50} {:>8} {:>9} {:>10} {:>9} {:>9}  result error",
        "sink, reader", "restores", "read 2x", "dup. seen", "dropped", "lost"
    );
    let mut ok = true;
    for (label, edits, check) in rows {
        let mut all = checkpointing.to_vec();
        all.extend(edits);
        eprintln!("running '{label}' ...");
        let (outcome, c) = one_run(
            &workload,
            profile(label, &all)?,
            events,
            failures.clone(),
            Vec::new(),
        )?;
        let held = check(&outcome, &c);
        ok &= held;
        let _ = writeln!(
            out,
            "  {:<50} {:>8} {:>9} {:>10} {:>9} {:>9}  {}{}",
            label,
            c.restores.len(),
            c.restores.iter().map(|r| r.records_replayed).sum::<u64>(),
            c.delivery.duplicates_seen,
            c.delivery.duplicates_dropped,
            c.delivery.records_lost,
            error_text(&outcome),
            if held { "" } else { "   <- not as expected" }
        );
        if c.delivery.visibility_delay_ms_max > 0 {
            let _ = writeln!(
                out,
                "  {:<50} results visible {:.0} ms after they were written on average, {} ms at most",
                "",
                c.delivery.visibility_delay_ms_sum as f64
                    / c.delivery.visibility_delay_records.max(1) as f64,
                c.delivery.visibility_delay_ms_max
            );
        }
    }
    let _ = writeln!(
        out,
        "\n  With aligned barriers state is rewound with the offsets, so the job's own counts are exact; what\n  \
         the sink already sent is the question. Read committed, an exactly-once sink shows each\n  \
         result once, up to a checkpoint late; an idempotent store drops the replays by id. A\n  \
         transaction older than its timeout when its checkpoint completes was aborted by the broker:\n  \
         its results are lost. Keep the timeout above checkpoint interval + restart time. With\n  \
         execution.checkpointing.mode AT_LEAST_ONCE the barriers of the job's two inputs (its\n  \
         partitions' halves) are not aligned: the state holds records of the first input past its\n  \
         barrier, and a restore counts them twice — no sink can undo that."
    );
    Ok((out, ok))
}

fn changelog_uploads(events: u64) -> anyhow::Result<(String, bool)> {
    let mut workload = Workload::load("ads-days")?;
    workload.spec.events = events;
    let base = [
        ("execution.checkpointing.interval", "1s"),
        ("execution.checkpointing.num-retained", "3"),
    ];
    let mut incremental = base.to_vec();
    incremental.push(("execution.checkpointing.incremental", "true"));
    let mut changelog = incremental.clone();
    changelog.push(("state.changelog.enabled", "true"));
    changelog.push(("state.changelog.periodic-materialize.interval", "10s"));
    let mut out = String::new();
    let _ = writeln!(
        out,
        "changelog-uploads: {events} events of ads-days (windows 1d, 3d, 7d), a checkpoint every second\n"
    );
    let _ = writeln!(
        out,
        "  {:<12} {:>12} {:>12} {:>12} {:>9} {:>10} {:>14}  state changes per checkpoint",
        "mode", "upload p50", "p99", "max", "p99/p50", "sync p99", "materialized"
    );
    let mut ratios = Vec::new();
    for (label, edits) in [("incremental", incremental), ("changelog", changelog)] {
        eprintln!("running '{label}' ...");
        let (outcome, c) = one_run(
            &workload,
            profile(label, &edits)?,
            events,
            FailureSpec::default(),
            Vec::new(),
        )?;
        let s = CheckpointSummary::new(&c, outcome.processing_secs);
        let changes = c
            .history
            .iter()
            .filter(|r| r.failed.is_none() && r.materialized_bytes == 0)
            .map(|r| r.bytes as f64)
            .collect::<Vec<_>>();
        let per_checkpoint = if label == "changelog" && !changes.is_empty() {
            format!(
                "{} logged (= its upload)",
                human_bytes(changes.iter().sum::<f64>() / changes.len() as f64)
            )
        } else {
            format!(
                "{} of SSTs flushed, {} compacted",
                human_bytes(s.new_flush_bytes as f64 / s.completed.max(1) as f64),
                human_bytes(s.new_compaction_bytes as f64 / s.completed.max(1) as f64)
            )
        };
        ratios.push(s.upload_bytes.tail_ratio());
        let up: &Spread = &s.upload_bytes;
        let _ = writeln!(
            out,
            "  {:<12} {:>12} {:>12} {:>12} {:>8.1}x {:>8.0}ms {:>14}  {}",
            label,
            human_bytes(up.p50),
            human_bytes(up.p99),
            human_bytes(up.max),
            up.tail_ratio(),
            s.sync_ms.p99,
            human_bytes(s.materialized_bytes as f64),
            per_checkpoint
        );
    }
    let ok = ratios.len() == 2 && ratios[0] >= 3.0 && ratios[1] * 2.0 <= ratios[0];
    let _ = writeln!(
        out,
        "\n  An incremental checkpoint uploads every SST file new since the last one: after a compaction\n  \
         that is most of the state again, however little changed. The changelog uploads what changed\n  \
         since the last checkpoint; its materializations (every 10 s here, counted apart as Flink\n  \
         reports them) upload the state in the background.{}",
        if ok {
            ""
        } else {
            "\n  NOT REPRODUCED: the incremental p99/p50 should be 3x or more and twice the changelog's."
        }
    );
    Ok((out, ok))
}

fn native_savepoint_changelog(events: u64) -> anyhow::Result<(String, bool)> {
    let mut workload = Workload::load("smoke")?;
    workload.spec.events = events;
    let edits = [
        ("execution.checkpointing.interval", "300ms"),
        ("execution.checkpointing.incremental", "true"),
        ("state.changelog.enabled", "true"),
        ("state.changelog.periodic-materialize.interval", "1s"),
    ];
    let at = events / 4;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "native-savepoint-changelog: {events} events of smoke, changelog on (materialize every 1s), a savepoint after {at} records\n"
    );
    let _ = writeln!(
        out,
        "  {:<10} {:>14} {:>16} {:>10} {:>18} {:>20}",
        "savepoint", "size", "vs live SST", "skipped", "materializations", "log since the last"
    );
    let mut ok = true;
    for format in [SavepointFormat::Canonical, SavepointFormat::Native] {
        eprintln!("running with a {} savepoint ...", format.name());
        let (_, c) = one_run(
            &workload,
            profile(format.name(), &edits)?,
            events,
            FailureSpec::default(),
            vec![(at, format)],
        )?;
        let sp = c.savepoints.first();
        let status = c.changelog.unwrap_or_default();
        let after: Vec<u64> = c
            .history
            .iter()
            .filter(|r| {
                r.materialized_bytes > 0 && sp.is_some_and(|s| r.started_at_secs > s.at_secs)
            })
            .map(|r| r.id)
            .collect();
        let held = match format {
            SavepointFormat::Canonical => status.skipped == 0 && !after.is_empty(),
            SavepointFormat::Native => status.skipped > 0 && after.is_empty(),
        };
        ok &= held;
        let _ = writeln!(
            out,
            "  {:<10} {:>14} {:>15.2}x {:>10} {:>18} {:>20}{}",
            format.name(),
            sp.map_or("-".to_string(), |s| human_bytes(s.bytes as f64)),
            sp.map_or(0.0, |s| s.bytes as f64 / s.live_sst_bytes.max(1) as f64),
            status.skipped,
            format!("{} after it", after.len()),
            human_bytes(status.changelog_bytes as f64),
            if held { "" } else { "   <- not as expected" }
        );
    }
    let _ = writeln!(
        out,
        "\n  A native savepoint materializes into the savepoint and takes the next materialization id;\n  \
         savepoints get no checkpoint-complete notification, so that id is never confirmed and Flink\n  \
         skips every later materialization: the log grows until a restart. Use CANONICAL savepoints\n  \
         with the changelog on (they are also the larger: uncompressed, every key)."
    );
    Ok((out, ok))
}
