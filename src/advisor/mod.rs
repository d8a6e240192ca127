//! The advisor: from a run's snapshots, summary and effective profile (with Flink's derived
//! memory numbers), what is wrong and the profile change that fixes it. Pure: no RocksDB, no
//! printing. Each rule is one file of `rules/` and one entry of `rules::RULES`.

pub mod resolve;
pub(crate) mod rules;

use serde::Serialize;

use crate::config::Profile;
use crate::config::profile::Derived;
use crate::model::snapshot::MetricsSnapshot;
use crate::model::summary::Summary;

pub use resolve::{CostClass, Overruled};
pub use rules::RULES;

/// What the advisor reads: one run (or one segment of it).
pub struct Input<'a> {
    pub profile: &'a Profile,
    pub derived: &'a Derived,
    pub summary: &'a Summary,
    pub snapshots: &'a [MetricsSnapshot],
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Worth knowing; nothing measured is hurt by it.
    Info,
    /// Costs throughput, memory or I/O.
    Warning,
    /// Stalls writes or multiplies reads: what the field reports lost weeks to.
    Critical,
}

/// One measured value behind a finding, and the threshold it crossed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Evidence {
    pub metric: String,
    pub value: String,
    pub threshold: String,
}

/// A profile key and the value the recommendation gives it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Change {
    pub key: String,
    pub value: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    /// Stable name of the rule (`wbm-budget`, `filter-reads`, ...).
    pub id: &'static str,
    pub severity: Severity,
    /// The diagnosis, in a sentence a Flink engineer reads.
    pub diagnosis: String,
    pub evidence: Vec<Evidence>,
    /// Seconds into the run of the first and last snapshot that show it (the whole run for a
    /// configuration finding).
    pub from_secs: f64,
    pub to_secs: f64,
    /// The profile delta that fixes it (empty: nothing in the profile does).
    pub recommendation: Vec<Change>,
    /// Managed memory the recommendation adds, bytes (0: none).
    pub memory_cost: u64,
    /// Workload keys the fix changes in the job itself, not in the profile (the serializer).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub job_changes: Vec<Change>,
    /// How to deploy it where a profile key alone does not (an options factory, a workload).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// What the recommendation is predicted to do, by Flink's formulas, where a rule can say.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub effect: Option<String>,
    /// Other fixes, in the order to try them after the recommendation (what costs no memory
    /// first), each with its cost and predicted effect.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub alternatives: Vec<Fix>,
    /// What the finding costs the job, as measured (what its severity rests on), or why it
    /// could not be measured and what to run to measure it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost: Option<String>,
    /// Fixes of this finding that another finding's value for the same knob overruled
    /// (`resolve`), with which and why.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub overruled: Vec<Overruled>,
}

/// One way to fix a finding: profile changes (none: a change to the job or its deployment,
/// said in `effect`), the managed memory they add, and what they are predicted to do.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Fix {
    pub changes: Vec<Change>,
    pub memory_cost: u64,
    pub effect: String,
}

/// Every finding the rules make for `input`, most severe and cheapest fix first, one value per
/// knob across them (`resolve`).
pub fn advise(input: &Input) -> Vec<Finding> {
    let mut findings: Vec<Finding> = RULES
        .iter()
        .filter_map(|rule| (rule.check)(input))
        .collect();
    resolve::resolve(&mut findings, &rule_order());
    findings
}

/// The rules' ids in `RULES` order: the resolver's last tie-break.
pub fn rule_order() -> Vec<&'static str> {
    RULES.iter().map(|r| r.id).collect()
}

impl Finding {
    /// What the recommendation costs (a finding without one: a change to the job).
    pub fn cost_class(&self) -> CostClass {
        if self.recommendation.is_empty() && !self.job_changes.is_empty() {
            return CostClass::Job;
        }
        CostClass::of(&self.recommendation, self.memory_cost)
    }
}

impl Input<'_> {
    /// Seconds of the first and last snapshot for which `shows` holds, and how many do.
    pub fn when(&self, shows: impl Fn(&MetricsSnapshot) -> bool) -> Option<(f64, f64, usize)> {
        let hits: Vec<f64> = self
            .snapshots
            .iter()
            .filter(|s| shows(s))
            .map(|s| s.elapsed_secs)
            .collect();
        Some((*hits.first()?, *hits.last()?, hits.len()))
    }

    /// The whole run: its first and last snapshot.
    pub fn whole_run(&self) -> (f64, f64) {
        let first = self.snapshots.first().map_or(0.0, |s| s.elapsed_secs);
        let last = self.snapshots.last().map_or(0.0, |s| s.elapsed_secs);
        (first, last)
    }
}

impl Evidence {
    pub fn new(metric: &str, value: impl ToString, threshold: impl ToString) -> Evidence {
        Evidence {
            metric: metric.to_string(),
            value: value.to_string(),
            threshold: threshold.to_string(),
        }
    }
}

impl Change {
    pub fn new(key: &str, value: impl ToString) -> Change {
        Change {
            key: key.to_string(),
            value: value.to_string(),
        }
    }

    /// `key<sep>value` for each change, joined by ", " (`sep` ": " reads as YAML, "=" as a
    /// label).
    pub fn list(changes: &[Change], sep: &str) -> String {
        changes
            .iter()
            .map(|c| format!("{}{sep}{}", c.key, c.value))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

#[cfg(test)]
pub(crate) mod testing {
    //! Synthetic runs for the rules' tests.

    use super::*;
    use crate::model::snapshot::RunState;

    /// A run of `n` one-second running snapshots of `profile`, each made by `shape(i, s)`.
    pub struct Run {
        pub profile: Profile,
        pub derived: Derived,
        pub summary: Summary,
        pub snapshots: Vec<MetricsSnapshot>,
    }

    impl Run {
        pub fn new(
            profile: Profile,
            n: u64,
            shape: impl Fn(u64, &mut MetricsSnapshot),
            summary: impl FnOnce(&mut Summary),
        ) -> Run {
            let snapshots: Vec<MetricsSnapshot> = (0..n)
                .map(|i| {
                    let mut s = MetricsSnapshot {
                        seq: i,
                        elapsed_secs: (i + 1) as f64,
                        interval_secs: 1.0,
                        state: RunState::Running,
                        events: 1_000 * (i + 1),
                        events_in_interval: 1_000,
                        events_per_sec: 1_000.0,
                        ..MetricsSnapshot::default()
                    };
                    shape(i, &mut s);
                    s
                })
                .collect();
            let mut sum = Summary {
                events: 1_000 * n,
                processing_secs: n as f64,
                events_per_sec: 1_000.0,
                ..Summary::default()
            };
            summary(&mut sum);
            Run {
                derived: profile.derived(crate::model::layout::frequency_data_column_families()),
                profile,
                summary: sum,
                snapshots,
            }
        }

        pub fn findings(&self, id: &str) -> Vec<Finding> {
            advise(&Input {
                profile: &self.profile,
                derived: &self.derived,
                summary: &self.summary,
                snapshots: &self.snapshots,
            })
            .into_iter()
            .filter(|f| f.id == id)
            .collect()
        }
    }

    pub fn profile(name: &str, edits: &[(&str, &str)]) -> Profile {
        edits
            .iter()
            .fold(Profile::load(name).unwrap(), |p, (k, v)| {
                p.edited(k, v).unwrap()
            })
    }
}
