//! `kind: frequency`: the field reports' per-user ad frequency counter.

use serde::{Deserialize, Serialize};

use crate::config::units::Millis;

/// The counter's parameters. In a `job:` section they are spelled as in the workload's top
/// level (where older workloads keep them); `serializer:` stays at the top level (it is the
/// workload's, for every kind).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct FrequencySpec {
    /// Sliding windows counted per user, e.g. `[1m, 5m, 10m, 30m]`.
    pub windows: Vec<Millis>,
    /// TTL of the job's timerState (processing time = replay time). None: no TTL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timer_state_ttl: Option<Millis>,
}

impl FrequencySpec {
    pub fn validate(&self) -> Result<(), String> {
        let mut problems = Vec::new();
        if self.windows.is_empty() || self.windows.len() > 16 {
            problems.push(format!(
                "'windows' has {} entries but needs 1 to 16",
                self.windows.len()
            ));
        }
        if self.windows.iter().any(|w| w.0 == 0) {
            problems.push("'windows' contains a zero-length window".to_string());
        }
        let mut sorted = self.windows.clone();
        sorted.sort();
        sorted.dedup();
        if sorted.len() != self.windows.len() {
            problems.push("'windows' contains the same window twice".to_string());
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(problems.join("; "))
        }
    }

    /// One slot per window, labelled as the MapState's user keys (`1m`, `5m`, ...).
    pub fn result_labels(&self) -> Vec<String> {
        self.windows.iter().map(|w| w.to_string()).collect()
    }
}
