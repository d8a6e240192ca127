//! Failures, checkpoints and savepoints (case studies 4, 5 and 8): each case runs the same
//! workload under several settings and prints what a user must see to choose.

use std::fmt::Write as _;
use std::path::Path;

use super::runs::{one_run, profile};
use crate::config::units::human_bytes;
use crate::config::{Profile, Workload};
use crate::engine::{CheckpointOutcome, FailureSpec, RunOutcome, SavepointFormat};

/// A failure, checkpoint or savepoint case.
pub struct Case {
    pub name: &'static str,
    pub story: &'static str,
    /// Events per run by default.
    pub events: u64,
    run: fn(u64) -> anyhow::Result<(String, bool)>,
    /// At the seed's own size (`--scale production`): live events (None: its own count) and
    /// the folder preloaded bases are kept in.
    pub production: Option<AtSize>,
}

/// A case at the seed's size: live events (None: its own count), the folder of preloaded bases;
/// its table and whether it showed what it must.
type AtSize = fn(Option<u64>, &Path) -> anyhow::Result<(String, bool)>;

pub const CASES: &[Case] = &[
    Case {
        name: "exactly-once",
        story: "case 8: the same two failures under each sink guarantee and reader isolation: duplicates, lost results, result error",
        events: 40_000,
        run: exactly_once,
        production: None,
    },
    Case {
        name: "changelog-uploads",
        story: "case 4: incremental checkpoints spike when compaction rewrites SSTs; the changelog uploads the state changes, evenly",
        events: 300_000,
        run: super::uploads::miniature,
        production: Some(super::uploads::production),
    },
    Case {
        name: "native-savepoint-changelog",
        story: "case 5: a native savepoint with the changelog on stops materialization for good; a canonical one does not",
        events: 200_000,
        run: native_savepoint_changelog,
        production: None,
    },
    Case {
        name: "heap-timers",
        story: "the same job with ROCKSDB and HEAP timers: RocksDB operations per event, and what every checkpoint carries",
        events: 60_000,
        run: super::heap_timers::run,
        production: None,
    },
];

pub fn find(name: &str) -> Option<&'static Case> {
    CASES.iter().find(|c| c.name == name)
}

/// Runs `case` (`events` per run, or its own count) and returns its table and whether it
/// showed what it must: at the seed's size with `production` (the folder of preloaded bases).
pub fn run(
    case: &Case,
    events: Option<u64>,
    production: Option<&Path>,
) -> anyhow::Result<(String, bool)> {
    match (production, case.production) {
        (Some(dir), Some(at_size)) => at_size(events, dir),
        (Some(_), None) => anyhow::bail!("'{}' has no production-size case", case.name),
        (None, _) => (case.run)(events.unwrap_or(case.events)),
    }
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

/// A row of the exactly-once matrix: the profile edits, what must hold. Its label is read from
/// the profile the row runs (`matrix_label`), so it names the settings it ran with.
struct Row {
    edits: Vec<(&'static str, &'static str)>,
    check: Check,
}

/// The matrix's columns for a profile: `execution.checkpointing.mode`, the sink
/// (`sink.delivery-guarantee`, with a transaction timeout other than the default) and what the
/// reader reads (`sink.reader-isolation`, or an idempotent store), by the profile's own values.
fn matrix_label(profile: &Profile) -> String {
    let value = |key: &str| {
        profile
            .knobs
            .values()
            .into_iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| v)
            .unwrap_or_default()
    };
    let mut sink = value("sink.delivery-guarantee");
    let default_timeout = crate::config::profile::Knobs::default().sink_transaction_timeout;
    if profile.knobs.sink_transaction_timeout != default_timeout {
        sink.push_str(&format!(", timeout {}", value("sink.transaction-timeout")));
    }
    let reader = if profile.knobs.sink_idempotent {
        "idempotent store".to_string()
    } else {
        value("sink.reader-isolation")
    };
    format!(
        "{:<13}  {sink:<27}  {reader}",
        value("execution.checkpointing.mode")
    )
}

/// Width of the matrix's label columns.
const LABEL_WIDTH: usize = 60;

fn exactly_once_rows() -> Vec<Row> {
    vec![
        Row {
            edits: vec![
                ("sink.delivery-guarantee", "EXACTLY_ONCE"),
                ("sink.reader-isolation", "read_committed"),
            ],
            check: |o, c| o.result_error.is_exact() && c.delivery.duplicates_seen == 0,
        },
        Row {
            edits: vec![
                ("sink.delivery-guarantee", "EXACTLY_ONCE"),
                ("sink.reader-isolation", "read_uncommitted"),
            ],
            check: |_, c| c.delivery.duplicates_seen > 0,
        },
        Row {
            edits: vec![("sink.delivery-guarantee", "AT_LEAST_ONCE")],
            check: |_, c| c.delivery.duplicates_seen > 0,
        },
        Row {
            edits: vec![
                ("sink.delivery-guarantee", "AT_LEAST_ONCE"),
                ("sink.idempotent", "true"),
            ],
            check: |o, c| {
                o.result_error.is_exact()
                    && c.delivery.duplicates_seen == c.delivery.duplicates_dropped
            },
        },
        Row {
            edits: vec![("sink.delivery-guarantee", "NONE")],
            check: |_, c| c.delivery.duplicates_seen > 0,
        },
        Row {
            edits: vec![
                ("sink.delivery-guarantee", "EXACTLY_ONCE"),
                ("sink.reader-isolation", "read_committed"),
                ("sink.transaction-timeout", "100ms"),
            ],
            check: |o, c| c.delivery.records_lost > 0 && !o.result_error.is_exact(),
        },
        Row {
            edits: vec![
                ("sink.delivery-guarantee", "EXACTLY_ONCE"),
                ("sink.reader-isolation", "read_committed"),
                ("execution.checkpointing.mode", "AT_LEAST_ONCE"),
            ],
            check: |o, _| o.state_error.over > 0 && o.result_error.over > 0,
        },
    ]
}

/// What the matrix shows, below it.
const EXACTLY_ONCE_NOTE: &str = "\n  With execution.checkpointing.mode EXACTLY_ONCE (Flink's default) state is rewound with\n  \
     the offsets, so the job's own counts are exact; what the sink already sent is the question.\n  \
     Read committed, an exactly-once sink shows each result once, up to a checkpoint late; an\n  \
     idempotent store drops the replays by id. A transaction older than its timeout when its\n  \
     checkpoint completes was aborted by the broker: its results are lost. Keep the timeout\n  \
     above checkpoint interval + restart time. With execution.checkpointing.mode AT_LEAST_ONCE\n  \
     an operator with two inputs (here its partitions' halves) does not wait for the second\n  \
     input's barrier (no alignment): the state holds records of the first input past its\n  \
     barrier, and a restore counts them twice — no sink can undo that. (Unaligned checkpoints,\n  \
     execution.checkpointing.unaligned.enabled, are another thing: they stay exactly-once.)";

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
    let mut out = String::new();
    let _ = writeln!(
        out,
        "exactly-once: {events} events of smoke (2,000 users), incremental checkpoints every 200ms, the job killed at {} and {} records\n",
        failures.at_events[0], failures.at_events[1]
    );
    let _ = writeln!(
        out,
        "  {:<LABEL_WIDTH$} {:>8} {:>9} {:>10} {:>9} {:>9}  result error",
        format!("{:<13}  {:<27}  {}", "checkpointing", "sink", "reader"),
        "restores",
        "read 2x",
        "dup. seen",
        "dropped",
        "lost"
    );
    let mut ok = true;
    for row in exactly_once_rows() {
        let mut all = checkpointing.to_vec();
        all.extend(row.edits.iter().copied());
        let mut p = profile("exactly-once", &all)?;
        let label = matrix_label(&p);
        p.name = label.split_whitespace().collect::<Vec<_>>().join(" ");
        eprintln!("running '{}' ...", p.name);
        let (outcome, c) = one_run(&workload, p, events, failures.clone(), Vec::new())?;
        let held = (row.check)(&outcome, &c);
        ok &= held;
        let _ = writeln!(
            out,
            "  {:<LABEL_WIDTH$} {:>8} {:>9} {:>10} {:>9} {:>9}  {}{}",
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
                "  {:<LABEL_WIDTH$} results visible {:.0} ms after they were written on average, {} ms at most",
                "",
                c.delivery.visibility_delay_ms_sum as f64
                    / c.delivery.visibility_delay_records.max(1) as f64,
                c.delivery.visibility_delay_ms_max
            );
        }
    }
    let _ = writeln!(
        out,
        "  checkpointing: execution.checkpointing.mode; sink: sink.delivery-guarantee (and sink.transaction-timeout);\n  reader: sink.reader-isolation, or a store that drops replays by id (sink.idempotent)"
    );
    let _ = writeln!(out, "{EXACTLY_ONCE_NOTE}");
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exactly_once_rows_are_labelled_by_the_settings_they_run_with() {
        let labels: Vec<String> = exactly_once_rows()
            .iter()
            .map(|row| matrix_label(&profile("row", &row.edits).unwrap()))
            .collect();
        for label in &labels {
            assert!(
                label.chars().count() <= LABEL_WIDTH,
                "'{label}' is too wide"
            );
            // Flink's unaligned checkpoints are exactly-once: no row calls AT_LEAST_ONCE
            // checkpointing "unaligned".
            assert!(!label.contains("unaligned"), "'{label}'");
        }
        let columns = |label: &str| -> Vec<String> {
            label
                .split("  ")
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .map(String::from)
                .collect()
        };
        assert_eq!(
            labels.iter().map(|l| columns(l)).collect::<Vec<_>>(),
            [
                ["EXACTLY_ONCE", "EXACTLY_ONCE", "read_committed"],
                ["EXACTLY_ONCE", "EXACTLY_ONCE", "read_uncommitted"],
                ["EXACTLY_ONCE", "AT_LEAST_ONCE", "read_uncommitted"],
                ["EXACTLY_ONCE", "AT_LEAST_ONCE", "idempotent store"],
                ["EXACTLY_ONCE", "NONE", "read_uncommitted"],
                [
                    "EXACTLY_ONCE",
                    "EXACTLY_ONCE, timeout 100ms",
                    "read_committed"
                ],
                ["AT_LEAST_ONCE", "EXACTLY_ONCE", "read_committed"],
            ]
        );
        // The note below the table speaks of unaligned checkpoints only to set them apart.
        assert!(EXACTLY_ONCE_NOTE.contains("unaligned.enabled, are another thing"));
    }
}
