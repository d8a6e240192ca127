//! The field reports' configuration traps, each run broken and
//! fixed side by side on a small workload, with the numbers that tell them apart.

use std::fmt::Write as _;

use anyhow::Context as _;

use crate::config::workload::CatchUpState;
use crate::config::{Millis, Profile, Workload};
use crate::engine::{self, EngineConfig, RunOutcome};
use crate::pipeline::oracle::ResultError;

/// A trap: how to break the workload, how to fix it, and what proves the contrast.
pub struct Scenario {
    pub name: &'static str,
    pub story: &'static str,
    /// The built-in workload both sides start from, and the events each side reads by default.
    pub base: &'static str,
    pub events: u64,
    broken: fn(&mut Workload),
    fixed: fn(&mut Workload),
    reproduced: fn(&Row, &Row) -> bool,
}

/// What one side of a scenario measured.
#[derive(Debug, Clone)]
pub struct Row {
    pub label: String,
    pub watermark: i64,
    pub next_timer: Option<i64>,
    pub expired_timer_state: u64,
    pub missing_decrements: u64,
    pub dropped_final_watermarks: u64,
    /// The serving store against the oracle.
    pub result: ResultError,
    /// The job's final state against the oracle.
    pub state: ResultError,
    /// Bounded runs: the store against the end-of-input truth.
    pub end_of_input: Option<ResultError>,
    /// Where the last job started reading, and how many records it skipped that a correct
    /// job would have read.
    pub started_from: String,
    pub skipped: u64,
}

impl Row {
    fn new(label: &str, outcome: &RunOutcome) -> Row {
        let p = outcome
            .snapshots
            .last()
            .map(|s| s.pipeline.clone())
            .unwrap_or_default();
        Row {
            label: label.to_string(),
            watermark: p.watermark,
            next_timer: p.next_timer,
            expired_timer_state: p.job.expired_timer_state,
            missing_decrements: p.job.missing_decrements,
            dropped_final_watermarks: p.dropped_final_watermarks,
            result: outcome.result_error,
            state: outcome.state_error,
            end_of_input: outcome.end_of_input_error,
            started_from: outcome
                .jobs
                .last()
                .map(|j| format!("the {} read from {}", j.phase.name(), j.started_from))
                .unwrap_or_default(),
            skipped: outcome.jobs.iter().map(|j| j.records_skipped).sum(),
        }
    }

    fn exact(&self) -> bool {
        self.result.is_exact()
    }
}

fn set(spec_field: &mut Option<Millis>, text: &str) {
    *spec_field = Millis::parse(text);
}

pub const SCENARIOS: &[Scenario] = &[
    Scenario {
        name: "ttl-too-short",
        base: "smoke",
        events: 60_000,
        story: "timerState TTL (5m) shorter than the longest window (30m): the timer fires, reads null, skips the decrement, counts stay too high; fixed: TTL 1h",
        broken: |w| set(&mut w.spec.timer_state_ttl, "5m"),
        fixed: |w| set(&mut w.spec.timer_state_ttl, "1h"),
        reproduced: |b, f| {
            b.result.over > 0
                && b.expired_timer_state > 0
                && f.exact()
                && f.expired_timer_state == 0
        },
    },
    Scenario {
        name: "idle-partition",
        base: "smoke",
        events: 60_000,
        story: "partition 3 gets no records and the source has no idleness: the watermark never moves, no timer ever fires; fixed: withIdleness(60s)",
        broken: |w| {
            w.spec.idle_partitions = vec![3];
            w.spec.idleness = None;
        },
        fixed: |w| {
            w.spec.idle_partitions = vec![3];
            set(&mut w.spec.idleness, "60s");
        },
        reproduced: |b, f| b.watermark == i64::MIN && f.watermark > i64::MIN && f.exact(),
    },
    Scenario {
        name: "idleness-too-short",
        base: "smoke",
        events: 60_000,
        story: "bounded source, idleness 1s, partitions report their end 2s after their last record: they are idle by then and the valve drops their final maximum watermark; fixed: withIdleness(60s)",
        broken: |w| {
            set(&mut w.spec.bounded_end_delay, "2s");
            set(&mut w.spec.idleness, "1s");
        },
        fixed: |w| {
            set(&mut w.spec.bounded_end_delay, "2s");
            set(&mut w.spec.idleness, "60s");
        },
        reproduced: |b, f| {
            b.dropped_final_watermarks > 0
                && b.watermark < i64::MAX
                && b.next_timer.is_some()
                && b.end_of_input.is_some_and(|e| e.over > 0)
                && f.watermark == i64::MAX
                && f.next_timer.is_none()
                && f.exact()
                && f.end_of_input.is_some_and(|e| e.is_exact())
        },
    },
    Scenario {
        name: "same-consumer-group",
        base: "backfill-catchup",
        events: 60_000,
        story: "the catch-up uses the backfill's consumer group: the backfill committed its end offsets, so the catch-up starts at the switch and silently skips the history it should rebuild; users active only before the switch keep their backfill counts forever; fixed: a group of its own",
        broken: |w| {
            if let Some(p) = &mut w.spec.phases {
                p.catch_up_group = p.backfill_group.clone();
            }
        },
        fixed: |w| {
            if let Some(p) = &mut w.spec.phases {
                p.catch_up_group = "catch-up".to_string();
            }
        },
        reproduced: |b, f| b.skipped > 0 && b.result.over > 0 && f.skipped == 0 && f.exact(),
    },
    Scenario {
        name: "backfill-savepoint",
        base: "backfill-catchup",
        events: 60_000,
        story: "the catch-up restores the backfill's savepoint instead of rebuilding its state: the backfill registered no timers, so the history's counts never decrease; fixed: fresh state rebuilt from the log",
        broken: |w| {
            if let Some(p) = &mut w.spec.phases {
                p.catch_up_state = CatchUpState::BackfillSavepoint;
            }
        },
        fixed: |w| {
            if let Some(p) = &mut w.spec.phases {
                p.catch_up_state = CatchUpState::Fresh;
            }
        },
        reproduced: |b, f| b.result.over > 0 && b.state.over > 0 && f.exact() && f.state.is_exact(),
    },
];

pub fn find(name: &str) -> Option<&'static Scenario> {
    SCENARIOS.iter().find(|s| s.name == name)
}

/// Runs both sides of `scenario` on `events` events of its base workload (None: the base's
/// own); returns the rows and whether the contrast reproduced.
pub fn run(scenario: &Scenario, events: Option<u64>) -> anyhow::Result<(Row, Row, bool)> {
    let profile = Profile::load("flink-default")?;
    let mut base = Workload::load(scenario.base)?;
    let events = events.unwrap_or(scenario.events);
    // `events` is the whole log (a bounded source ends there), at the base's event-time pace.
    let span = base.spec.event_time.span.0 as f64 * events as f64 / base.spec.events as f64;
    base.spec.event_time.span = Millis(span as u64);
    base.spec.events = events;
    let mut rows = Vec::new();
    for (label, change) in [("broken", scenario.broken), ("fixed", scenario.fixed)] {
        let mut workload = base.clone();
        change(&mut workload);
        let workload = Workload::from_spec(&workload.name, &workload.source, workload.spec)?;
        let dir = tempfile::Builder::new()
            .prefix("statebench-reproduce-")
            .tempdir()?;
        let outcome = engine::run_to_completion(EngineConfig {
            events,
            ..EngineConfig::new(workload, profile.clone(), dir.path().to_path_buf())
        })
        .with_context(|| format!("{} ({label}) failed", scenario.name))?;
        rows.push(Row::new(label, &outcome));
    }
    let fixed = rows.pop().context("two runs")?;
    let broken = rows.pop().context("two runs")?;
    let ok = (scenario.reproduced)(&broken, &fixed);
    Ok((broken, fixed, ok))
}

fn show_watermark(wm: i64, start: i64) -> String {
    match wm {
        i64::MIN => "never advanced".to_string(),
        i64::MAX => "max (end of input)".to_string(),
        wm => {
            let ms = wm.saturating_sub(start).max(0);
            let (h, m, sec) = (ms / 3_600_000, ms / 60_000 % 60, ms % 60_000);
            format!("start + {h}h{m:02}m{:04.1}s", sec as f64 / 1000.0)
        }
    }
}

/// The side-by-side table.
pub fn render(scenario: &Scenario, broken: &Row, fixed: &Row, reproduced: bool) -> String {
    let start = crate::config::workload::DEFAULT_EVENT_TIME_START as i64;
    let mut out = String::new();
    let _ = writeln!(out, "{}: {}\n", scenario.name, scenario.story);
    let _ = writeln!(out, "  {:<34} {:>22} {:>22}", "", "broken", "fixed");
    // One row: a label, and the same reading of each side.
    let mut row = |label: &str, read: &dyn Fn(&Row) -> String| {
        let (b, f) = (read(broken), read(fixed));
        let _ = writeln!(out, "  {label:<34} {b:>22} {f:>22}");
    };
    let counts = |e: &ResultError| format!("{}/{}/{}", e.over, e.under, e.missing);
    row("final watermark", &|r| show_watermark(r.watermark, start));
    row("earliest pending timer", &|r| {
        r.next_timer
            .map_or("none".to_string(), |t| show_watermark(t, start))
    });
    row("final max watermarks dropped", &|r| {
        r.dropped_final_watermarks.to_string()
    });
    row("expired timerState reads", &|r| {
        r.expired_timer_state.to_string()
    });
    row("timers without a decrement", &|r| {
        r.missing_decrements.to_string()
    });
    row("history records not read", &|r| r.skipped.to_string());
    row("result error over/under/missing", &|r| counts(&r.result));
    row("state error over/under/missing", &|r| counts(&r.state));
    if broken.end_of_input.is_some() || fixed.end_of_input.is_some() {
        row("vs end-of-input truth", &|r| {
            r.end_of_input.as_ref().map_or("-".to_string(), counts)
        });
    }
    row("max |count error|", &|r| r.result.max_abs.to_string());
    row("counts compared", &|r| r.result.compared.to_string());
    if broken.skipped > 0 || fixed.skipped > 0 {
        let _ = writeln!(out, "\n  broken: {}", broken.started_from);
        let _ = writeln!(out, "  fixed:  {}", fixed.started_from);
    }
    let _ = writeln!(
        out,
        "\n  {}",
        if reproduced {
            "reproduced: the broken configuration goes wrong, the fixed one is exact"
        } else {
            "NOT reproduced: the contrast did not show"
        }
    );
    out
}
