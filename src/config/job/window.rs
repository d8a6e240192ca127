//! `kind: window`: placeholder until its owner lands the kind (issue 19).

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct WindowSpec {}

impl WindowSpec {
    pub fn validate(&self) -> Result<(), String> {
        Err("kind 'window' is not built yet".to_string())
    }

    pub fn result_labels(&self) -> Vec<String> {
        Vec::new()
    }
}
