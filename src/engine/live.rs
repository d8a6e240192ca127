//! The profile a run works with: the one it started on, changed live knob by knob.

use super::snapshot::OptionChange;
use crate::backend::StateBackend;
use crate::config::Profile;
use crate::config::profile::Knob;

/// The run's profile with the live changes applied so far, and the record of every change.
#[derive(Debug, Clone)]
pub struct LiveProfile {
    profile: Profile,
    changes: Vec<OptionChange>,
    /// Changes already handed to a snapshot.
    reported: usize,
}

impl LiveProfile {
    pub fn new(profile: Profile) -> LiveProfile {
        LiveProfile {
            profile,
            changes: Vec::new(),
            reported: 0,
        }
    }

    /// The profile as it stands.
    pub fn profile(&self) -> &Profile {
        &self.profile
    }

    /// Sets `knob` to `value` (YAML syntax) on the open database `backend`, editing the
    /// profile as it stands (so quick successive changes never undo each other), and records
    /// what RocksDB says about it — or why it was refused.
    pub fn apply(
        &mut self,
        backends: &[std::sync::Arc<StateBackend>],
        knob: Knob,
        value: String,
        at_secs: f64,
    ) {
        let result = self
            .profile
            .edited(knob.key(), &value)
            .map_err(|e| e.to_string())
            .and_then(|profile| {
                // Every RocksDB instance of the job (a chain's each) runs with the profile.
                let mut evidence = Vec::new();
                for (i, backend) in backends.iter().enumerate() {
                    let found = backend
                        .apply_live(&profile, knob)
                        .map_err(|e| e.to_string())?;
                    evidence.push(if i == 0 {
                        found
                    } else {
                        format!("operator {i}: {found}")
                    });
                }
                let evidence = evidence.join("; ");
                self.profile = profile;
                Ok(evidence)
            });
        let (applied, detail) = match result {
            Ok(evidence) => (true, evidence),
            Err(e) => (false, e),
        };
        self.changes.push(OptionChange {
            at_secs,
            key: knob.key().to_string(),
            value,
            applied,
            detail,
        });
    }

    /// Changes not yet handed to a snapshot: each change appears in one snapshot only.
    pub fn take_unreported(&mut self) -> Vec<OptionChange> {
        let new = self.changes[self.reported..].to_vec();
        self.reported = self.changes.len();
        new
    }

    /// Every change, oldest first.
    pub fn changes(&self) -> &[OptionChange] {
        &self.changes
    }
}
