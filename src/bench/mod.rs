//! `statebench bench`: a fixed set of short workload × profile cases, measured in counters that
//! machine noise cannot move (or moves little) and in timings relative to a reference case of
//! the same run, compared against a saved baseline. Pure: running the cases is the command's
//! job (`commands::bench`); this module defines the suites, the metrics and the gate.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::config::{ConfigError, Profile};
use crate::summary::Summary;

pub mod overhead;

/// Which cases to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Suite {
    /// Under a minute: the built-in workloads on the case studies' good profiles (what CI
    /// runs). The "before" profiles are left out: their flush timing makes their counters
    /// swing from run to run; run them with --profile to see a configuration caught.
    Ci,
    /// The ci cases on more events, and the case studies' other profiles.
    Full,
    /// statebench's own overhead against its budgets (a few minutes): its CPU share, the run
    /// against a replay of its RocksDB operations, and the cost of metrics sampling.
    Overhead,
}

/// A workload on a profile for a number of events. Its name is what baselines match on, so a
/// case run with `--profile` (the configuration under test) compares with its baseline.
#[derive(Debug, Clone, Copy)]
pub struct Case {
    pub name: &'static str,
    pub workload: &'static str,
    pub profile: &'static str,
    pub events: u64,
    /// Managed memory per slot for this case, whatever the profile's: a block cache smaller
    /// than the case's working set, so that its lookups read from storage on every run.
    pub memory: Option<&'static str>,
}

impl Case {
    /// The case's profile: the configuration under test (`bench --profile`) or the case's own,
    /// with the case's managed memory.
    pub fn profile(&self, under_test: Option<&Profile>) -> Result<Profile, ConfigError> {
        let profile = match under_test {
            Some(p) => p.clone(),
            None => Profile::load(self.profile)?,
        };
        match self.memory {
            Some(size) => profile.edited("memory.managed-size", size),
            None => Ok(profile),
        }
    }

    /// What the case runs, for listings and reports.
    pub fn describe(&self, profile: &str) -> String {
        let memory = self
            .memory
            .map(|m| format!(" with memory.managed-size {m}"))
            .unwrap_or_default();
        format!(
            "{} on {profile}{memory}, {} events",
            self.workload, self.events
        )
    }
}

/// The first case of each suite is the reference its timings are relative to.
const CI: &[Case] = &[
    Case {
        name: "smoke",
        workload: "smoke",
        profile: "flink-default",
        events: 30_000,
        memory: None,
    },
    Case {
        name: "minutes-sized",
        workload: "ads-minutes",
        profile: "minutes-wbm-sized",
        events: 30_000,
        memory: None,
    },
    // A block cache (8 MB of managed memory) smaller than the filter, index and data blocks
    // lookups need, so they read filter partitions from storage on every run: 0.034-0.041
    // blocks and 103-128 B per lookup in 5 runs at 30,000-40,000 events, where the same case
    // with monolithic filters read 8,309 B (tests/bench.rs checks the gate catches that). On
    // the profile's own 32 MB the cache held almost every partition: 0-46 B per lookup, from
    // run to run, which no gate could judge.
    Case {
        name: "hours-filter",
        workload: "ads-hours",
        profile: "hours-partitioned-filter",
        events: 30_000,
        memory: Some("8mb"),
    },
    Case {
        name: "hours-levels",
        workload: "hours-state",
        profile: "hours-levels-sized",
        events: 100_000,
        memory: None,
    },
];

const FULL: &[Case] = &[
    Case {
        name: "smoke",
        workload: "smoke",
        profile: "flink-default",
        events: 100_000,
        memory: None,
    },
    Case {
        name: "minutes-sized",
        workload: "ads-minutes",
        profile: "minutes-wbm-sized",
        events: 150_000,
        memory: None,
    },
    Case {
        name: "hours-filter",
        workload: "ads-hours",
        profile: "hours-partitioned-filter",
        events: 120_000,
        memory: None,
    },
    Case {
        name: "hours-levels",
        workload: "hours-state",
        profile: "hours-levels-sized",
        events: 250_000,
        memory: None,
    },
    Case {
        name: "hours-levels-static",
        workload: "hours-state",
        profile: "hours-levels-default",
        events: 250_000,
        memory: None,
    },
    Case {
        name: "days",
        workload: "ads-days",
        profile: "flink-default",
        events: 150_000,
        memory: None,
    },
];

/// The overhead suite's one case: the workload and profile the budget was set on.
const OVERHEAD: &[Case] = &[Case {
    name: "overhead",
    workload: "ads-minutes",
    profile: "flink-default",
    events: 100_000,
    memory: None,
}];

impl Suite {
    pub fn cases(self) -> &'static [Case] {
        match self {
            Suite::Ci => CI,
            Suite::Full => FULL,
            Suite::Overhead => OVERHEAD,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Suite::Ci => "ci",
            Suite::Full => "full",
            Suite::Overhead => "overhead",
        }
    }
}

/// Counters gate by default; timings (relative to the reference case) only when asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Counter,
    Timing,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Better {
    Lower,
    Higher,
}

/// A measured value of a case and how far it may move the wrong way before it is a regression:
/// beyond `--max-regression` and beyond `noise` (relative: what run-to-run variation moves it
/// by here, flush timing for the flush-driven counters) and `slack` (absolute: near-zero
/// baselines).
pub struct Metric {
    pub name: &'static str,
    pub unit: &'static str,
    pub kind: Kind,
    pub better: Better,
    pub noise: f64,
    pub slack: f64,
    read: fn(&Summary) -> f64,
}

pub const METRICS: &[Metric] = &[
    Metric {
        name: "rocksdb ops / event",
        unit: "ops",
        kind: Kind::Counter,
        better: Better::Lower,
        noise: 0.0,
        slack: 0.0,
        read: |s| s.rocksdb_ops_per_event,
    },
    Metric {
        name: "gets / event",
        unit: "ops",
        kind: Kind::Counter,
        better: Better::Lower,
        noise: 0.0,
        slack: 0.0,
        read: |s| per_event(s.gets as f64, s),
    },
    Metric {
        name: "puts / event",
        unit: "ops",
        kind: Kind::Counter,
        better: Better::Lower,
        noise: 0.0,
        slack: 0.0,
        read: |s| per_event(s.puts as f64, s),
    },
    Metric {
        name: "deletes / event",
        unit: "ops",
        kind: Kind::Counter,
        better: Better::Lower,
        noise: 0.0,
        slack: 0.0,
        read: |s| per_event(s.deletes as f64, s),
    },
    Metric {
        name: "bytes written / event",
        unit: "bytes",
        kind: Kind::Counter,
        better: Better::Lower,
        noise: 0.0,
        slack: 0.0,
        read: |s| per_event(s.user_bytes_written as f64, s),
    },
    Metric {
        name: "result error (keys)",
        unit: "keys",
        kind: Kind::Counter,
        better: Better::Lower,
        noise: 0.0,
        slack: 0.0,
        read: |s| {
            let e = &s.result_error;
            (e.over + e.under + e.missing) as f64
        },
    },
    Metric {
        name: "write amplification",
        unit: "x",
        kind: Kind::Counter,
        better: Better::Lower,
        noise: 0.5,
        slack: 0.2,
        read: |s| s.write_amplification,
    },
    Metric {
        name: "flushes",
        unit: "flushes",
        kind: Kind::Counter,
        better: Better::Lower,
        noise: 0.5,
        slack: 5.0,
        read: |s| s.flushes as f64,
    },
    Metric {
        name: "write stalls",
        unit: "ms",
        kind: Kind::Counter,
        better: Better::Lower,
        noise: 1.5,
        slack: 500.0,
        read: |s| s.stall_micros as f64 / 1000.0,
    },
    Metric {
        name: "bytes read / event",
        unit: "bytes",
        kind: Kind::Counter,
        better: Better::Lower,
        noise: 2.0,
        slack: 64.0,
        read: |s| per_event(s.bytes_read_per_lookup * s.lookups as f64, s),
    },
    Metric {
        name: "bytes read / lookup",
        unit: "bytes",
        kind: Kind::Counter,
        better: Better::Lower,
        noise: 1.0,
        slack: 64.0,
        read: |s| s.bytes_read_per_lookup,
    },
    Metric {
        name: "filter blocks read / lookup",
        unit: "blocks",
        kind: Kind::Counter,
        better: Better::Lower,
        noise: 1.0,
        slack: 0.01,
        read: |s| s.filter_block_reads_per_lookup,
    },
    Metric {
        name: "filter bytes read / lookup",
        unit: "bytes",
        kind: Kind::Counter,
        better: Better::Lower,
        noise: 1.0,
        slack: 256.0,
        read: |s| s.filter_bytes_read_per_lookup,
    },
    Metric {
        name: "events/s vs reference",
        unit: "ratio",
        kind: Kind::Timing,
        better: Better::Higher,
        noise: 0.15,
        slack: 0.0,
        // Filled in relative to the reference case (`Results::relate`).
        read: |s| s.events_per_sec,
    },
    Metric {
        name: "p99 event latency vs reference",
        unit: "ratio",
        kind: Kind::Timing,
        better: Better::Lower,
        noise: 0.3,
        slack: 0.0,
        read: |s| s.p99_event_latency_us,
    },
];

fn per_event(v: f64, s: &Summary) -> f64 {
    if s.records() == 0 {
        0.0
    } else {
        v / s.records() as f64
    }
}

/// What one case measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaseResult {
    pub case: String,
    pub workload: String,
    pub profile: String,
    pub events: u64,
    /// Metric name → value (timings already relative to the reference case).
    pub values: BTreeMap<String, f64>,
    /// Absolute events/s and p99 (µs), for people; not gated.
    pub events_per_sec: f64,
    pub p99_event_latency_us: f64,
}

/// A suite's results: what `--save-baseline` writes and `--baseline` reads.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Results {
    pub schema_version: u32,
    pub suite: Suite,
    pub statebench_version: String,
    pub cases: Vec<CaseResult>,
}

pub const SCHEMA_VERSION: u32 = 1;

impl CaseResult {
    pub fn new(case: &Case, profile: &str, summary: &Summary) -> CaseResult {
        CaseResult {
            case: case.name.to_string(),
            workload: case.workload.to_string(),
            profile: profile.to_string(),
            events: summary.events,
            values: METRICS
                .iter()
                .map(|m| (m.name.to_string(), (m.read)(summary)))
                .collect(),
            events_per_sec: summary.events_per_sec,
            p99_event_latency_us: summary.p99_event_latency_us,
        }
    }
}

impl Results {
    /// The suite's cases, their timings turned into ratios to the first (reference) case.
    pub fn new(suite: Suite, mut cases: Vec<CaseResult>) -> Results {
        let reference: BTreeMap<String, f64> =
            cases.first().map(|c| c.values.clone()).unwrap_or_default();
        for c in &mut cases {
            for m in METRICS.iter().filter(|m| m.kind == Kind::Timing) {
                let r = reference.get(m.name).copied().unwrap_or(0.0);
                if let Some(v) = c.values.get_mut(m.name) {
                    *v = if r > 0.0 { *v / r } else { 0.0 };
                }
            }
        }
        Results {
            schema_version: SCHEMA_VERSION,
            suite,
            statebench_version: env!("CARGO_PKG_VERSION").to_string(),
            cases,
        }
    }

    /// The results in github-action-benchmark's "customSmallerIsBetter" format (a list of
    /// {name, unit, value, extra}), the one most CI benchmark dashboards ingest. Its files have
    /// one direction, so throughput goes in as time per event relative to the reference case.
    pub fn dashboard(&self) -> serde_json::Value {
        let mut entries = Vec::new();
        for c in &self.cases {
            for m in METRICS {
                let Some(&v) = c.values.get(m.name) else {
                    continue;
                };
                let (name, value) = match m.better {
                    Better::Lower => (m.name, v),
                    Better::Higher if v > 0.0 => ("time / event vs reference", 1.0 / v),
                    Better::Higher => continue,
                };
                entries.push(serde_json::json!({
                    "name": format!("{} / {name}", c.case),
                    "unit": m.unit,
                    "value": value,
                    "extra": format!("{} on {}, {} events", c.workload, c.profile, c.events),
                }));
            }
        }
        serde_json::Value::Array(entries)
    }
}

/// How the gate judges.
#[derive(Debug, Clone, Copy)]
pub struct Gate {
    /// Percent a metric may get worse beyond its noise before it is a regression.
    pub max_regression_pct: f64,
    pub timings: bool,
}

/// One metric of one case against its baseline.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub case: String,
    pub metric: &'static str,
    pub baseline: Option<f64>,
    pub now: f64,
    /// How far it may move the wrong way (in its units) before it is a regression.
    pub allowed: Option<f64>,
    pub verdict: Verdict,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Ok,
    Better,
    Regression,
    /// A timing while timings are not gated, or a case or metric the baseline lacks.
    NotGated,
}

/// Every metric of every case of `now` against `baseline`.
pub fn compare(baseline: &Results, now: &Results, gate: Gate) -> Vec<Row> {
    let mut rows = Vec::new();
    for c in &now.cases {
        let base = baseline.cases.iter().find(|b| b.case == c.case);
        for m in METRICS {
            let Some(&value) = c.values.get(m.name) else {
                continue;
            };
            let before = base.and_then(|b| b.values.get(m.name).copied());
            let max = gate.max_regression_pct / 100.0;
            let verdict = match before {
                None => Verdict::NotGated,
                Some(_) if m.kind == Kind::Timing && !gate.timings => Verdict::NotGated,
                Some(b) => judge(m, b, value, max),
            };
            rows.push(Row {
                case: c.case.clone(),
                metric: m.name,
                baseline: before,
                now: value,
                allowed: before.map(|b| allowance(m, b, max)),
                verdict,
            });
        }
    }
    rows
}

fn judge(m: &Metric, before: f64, now: f64, max: f64) -> Verdict {
    // How much worse, in the metric's units (positive: worse).
    let worse = match m.better {
        Better::Lower => now - before,
        Better::Higher => before - now,
    };
    let allowed = allowance(m, before, max);
    if worse > allowed && worse > 1e-9 {
        Verdict::Regression
    } else if -worse > allowed && -worse > 1e-9 {
        Verdict::Better
    } else {
        Verdict::Ok
    }
}

/// How far `m` may move the wrong way from `before`: the larger of the threshold and its noise,
/// relative, or its slack, absolute.
fn allowance(m: &Metric, before: f64, max: f64) -> f64 {
    (before.abs() * max.max(m.noise)).max(m.slack)
}

/// The comparison as a table for a CI log; rows that did not move are left out unless `all`.
pub fn render(rows: &[Row], all: bool) -> String {
    let shown: Vec<&Row> = rows
        .iter()
        .filter(|r| all || (r.verdict != Verdict::Ok && r.verdict != Verdict::NotGated))
        .collect();
    if shown.is_empty() {
        return String::new();
    }
    let mut out = format!(
        "  {:<20} {:<32} {:>14} {:>14} {:>9} {:>12}  {}\n",
        "case", "metric", "baseline", "now", "change", "allowed", "verdict"
    );
    for r in shown {
        let change = match r.baseline {
            Some(b) if b != 0.0 => format!("{:+.1}%", (r.now - b) / b.abs() * 100.0),
            Some(_) if r.now == 0.0 => "0".to_string(),
            Some(_) => "new".to_string(),
            None => "-".to_string(),
        };
        let verdict = match r.verdict {
            Verdict::Ok => "ok",
            Verdict::Better => "better",
            Verdict::Regression => "REGRESSION",
            Verdict::NotGated => "not gated",
        };
        let _ = writeln!(
            out,
            "  {:<20} {:<32} {:>14} {:>14} {:>9} {:>12}  {verdict}",
            r.case,
            r.metric,
            r.baseline.map_or("-".to_string(), number),
            number(r.now),
            change,
            r.allowed
                .map_or("-".to_string(), |a| format!("±{}", number(a)))
        );
    }
    out
}

/// The results alone (no baseline), one line per case.
pub fn render_results(results: &Results) -> String {
    let mut out = String::new();
    for c in &results.cases {
        let _ = writeln!(
            out,
            "  {:<20} {} on {}, {} events: {:.0} events/s, p99 {:.0} µs",
            c.case, c.workload, c.profile, c.events, c.events_per_sec, c.p99_event_latency_us
        );
        for m in METRICS {
            if let Some(v) = c.values.get(m.name) {
                let _ = writeln!(out, "      {:<32} {}", m.name, number(*v));
            }
        }
    }
    out
}

fn number(v: f64) -> String {
    if v == v.trunc() && v.abs() < 1e12 {
        format!("{v:.0}")
    } else if v.abs() >= 100.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.4}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn results(values: &[(&str, f64)]) -> Results {
        Results::new(
            Suite::Ci,
            vec![CaseResult {
                case: "smoke".to_string(),
                workload: "smoke".to_string(),
                profile: "flink-default".to_string(),
                events: 1_000,
                values: values.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
                events_per_sec: 1.0,
                p99_event_latency_us: 1.0,
            }],
        )
    }

    fn verdict(before: &[(&str, f64)], now: &[(&str, f64)], metric: &str, gate: Gate) -> Verdict {
        compare(&results(before), &results(now), gate)
            .into_iter()
            .find(|r| r.metric == metric)
            .map(|r| r.verdict)
            .unwrap()
    }

    const GATE: Gate = Gate {
        max_regression_pct: 5.0,
        timings: false,
    };

    #[test]
    fn exact_counters_gate_at_the_threshold() {
        let ops = "rocksdb ops / event";
        assert_eq!(
            verdict(&[(ops, 30.0)], &[(ops, 31.4)], ops, GATE),
            Verdict::Ok
        );
        assert_eq!(
            verdict(&[(ops, 30.0)], &[(ops, 31.6)], ops, GATE),
            Verdict::Regression
        );
        assert_eq!(
            verdict(&[(ops, 30.0)], &[(ops, 20.0)], ops, GATE),
            Verdict::Better
        );
        // Any result error where there was none.
        let err = "result error (keys)";
        assert_eq!(
            verdict(&[(err, 0.0)], &[(err, 1.0)], err, GATE),
            Verdict::Regression
        );
    }

    #[test]
    fn flush_driven_counters_get_their_noise_and_near_zero_values_their_slack() {
        let f = "flushes";
        // 50 % noise: 12 -> 17 is noise, 12 -> 197 (a starved WriteBufferManager) is not.
        assert_eq!(verdict(&[(f, 12.0)], &[(f, 17.0)], f, GATE), Verdict::Ok);
        assert_eq!(
            verdict(&[(f, 12.0)], &[(f, 197.0)], f, GATE),
            Verdict::Regression
        );
        let stall = "write stalls";
        assert_eq!(
            verdict(&[(stall, 0.0)], &[(stall, 200.0)], stall, GATE),
            Verdict::Ok
        );
        assert_eq!(
            verdict(&[(stall, 0.0)], &[(stall, 8_000.0)], stall, GATE),
            Verdict::Regression
        );
    }

    #[test]
    fn timings_gate_only_when_asked_and_higher_is_better_for_throughput() {
        let eps = "events/s vs reference";
        let m = METRICS.iter().find(|m| m.name == eps).unwrap();
        // 15 % noise allowance: 0.9 of the baseline ratio is noise, 0.8 is not.
        assert_eq!(judge(m, 1.0, 0.8, 0.05), Verdict::Regression);
        assert_eq!(judge(m, 1.0, 0.9, 0.05), Verdict::Ok);
        assert_eq!(judge(m, 1.0, 1.3, 0.05), Verdict::Better);
        // Without --timings a timing is shown, not judged.
        let row = compare(&results(&[(eps, 1.0)]), &results(&[(eps, 1.0)]), GATE);
        assert_eq!(row[0].verdict, Verdict::NotGated);
        let timed = Gate {
            timings: true,
            ..GATE
        };
        let row = compare(&results(&[(eps, 1.0)]), &results(&[(eps, 1.0)]), timed);
        assert_eq!(row[0].verdict, Verdict::Ok);
    }

    #[test]
    fn timings_are_relative_to_the_first_case() {
        let case = |name: &str, eps: f64| CaseResult {
            case: name.to_string(),
            workload: "smoke".to_string(),
            profile: "flink-default".to_string(),
            events: 1,
            values: [("events/s vs reference".to_string(), eps)].into(),
            events_per_sec: eps,
            p99_event_latency_us: 1.0,
        };
        let r = Results::new(Suite::Ci, vec![case("a", 2_000.0), case("b", 500.0)]);
        assert_eq!(r.cases[0].values["events/s vs reference"], 1.0);
        assert_eq!(r.cases[1].values["events/s vs reference"], 0.25);
    }

    #[test]
    fn the_dashboard_file_is_smaller_is_better_throughout() {
        let r = results(&[("flushes", 3.0), ("events/s vs reference", 2.0)]);
        let d = r.dashboard();
        assert_eq!(d[0]["name"], "smoke / flushes");
        assert_eq!(d[0]["value"], 3.0);
        // The reference case's own throughput ratio is 1: time per event 1.
        assert_eq!(d[1]["name"], "smoke / time / event vs reference");
        assert_eq!(d[1]["value"], 1.0);
    }
}
