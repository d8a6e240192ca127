//! A suite's results: what each case measured (timings as ratios to the reference case), the
//! file `--save-baseline` writes, the dashboard file, and the results as lines for people.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use super::metrics::{Better, Kind, METRICS};
use super::{Case, Suite};
use crate::summary::Summary;

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

pub(super) fn number(v: f64) -> String {
    if v == v.trunc() && v.abs() < 1e12 {
        format!("{v:.0}")
    } else if v.abs() >= 100.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.4}")
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    pub(in crate::suites) fn results(values: &[(&str, f64)]) -> Results {
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
