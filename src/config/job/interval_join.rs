//! `kind: interval-join`: placeholder until its owner lands the kind (issue 19).

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct IntervalJoinSpec {}

impl IntervalJoinSpec {
    pub fn validate(&self) -> Result<(), String> {
        Err("kind 'interval-join' is not built yet".to_string())
    }

    pub fn result_labels(&self) -> Vec<String> {
        Vec::new()
    }
}
