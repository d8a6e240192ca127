//! The key strings a job keys its records by, the one place every operator (and every oracle
//! model that depends on a key's text) gets them from: an event carries a key id
//! (`Event::user`), and the job's `keyBy` key is either a generated `user-N` (padded to the
//! workload's `keys.size`) or, when a trace is replayed, the trace's own key string.
//!
//! Flink then serializes that String with its `StringSerializer` and groups it by its
//! `hashCode` (`backend::keys`), so a trace's key bytes, key groups and key order in RocksDB
//! are those of the traffic it was recorded from.

use std::sync::Arc;

use super::Generator;
use crate::config::Workload;
pub use crate::model::trace_keys::TraceKeys;

/// How a job names the key of a key id.
#[derive(Debug, Clone)]
pub enum KeyNames {
    /// Generated keys: `user-N`, zero-padded to `size` bytes when the workload gives one.
    Generated { size: Option<u32> },
    /// A trace's own keys.
    Trace(Arc<TraceKeys>),
}

impl KeyNames {
    /// The workload's key names: its trace's keys when one was loaded (`commands::Job::load`
    /// attaches them), generated ones otherwise.
    pub fn of(workload: &Workload) -> KeyNames {
        match &workload.trace_keys {
            Some(keys) => KeyNames::Trace(Arc::clone(keys)),
            None => KeyNames::Generated {
                size: workload.spec.keys.size,
            },
        }
    }

    /// Writes the key string of id `id` into `out` (cleared first).
    pub fn write(&self, id: u64, out: &mut String) {
        match self {
            KeyNames::Generated { size } => Generator::sized_key(id, *size, out),
            KeyNames::Trace(keys) => match keys.name(id) {
                Some(name) => {
                    out.clear();
                    out.push_str(name);
                }
                // Every event of a trace carries an id the trace numbered (Trace::load), and
                // records an operator emits keep their input's: no id is out of range. Were
                // one, it gets a generated key of its own rather than another key's.
                None => Generator::sized_key(id, None, out),
            },
        }
    }

    /// The key string of id `id`.
    pub fn name(&self, id: u64) -> String {
        let mut out = String::new();
        self.write(id, &mut out);
        out
    }

    /// The key id of a key string (a timer's key read back from its timer key): None for a key
    /// this job never names.
    pub fn id(&self, key: &str) -> Option<u64> {
        match self {
            KeyNames::Generated { .. } => key.strip_prefix("user-")?.parse().ok(),
            KeyNames::Trace(keys) => keys.id(key),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_keys_are_user_n_as_always_and_map_back() {
        let plain = KeyNames::Generated { size: None };
        assert_eq!(plain.name(42), "user-42");
        assert_eq!(plain.id("user-42"), Some(42));
        let sized = KeyNames::Generated { size: Some(12) };
        assert_eq!(sized.name(42), "user-0000042");
        assert_eq!(sized.id("user-0000042"), Some(42));
        assert_eq!(sized.id("u-42"), None);
    }

    #[test]
    fn trace_keys_are_the_traces_own_strings_and_map_back() {
        let keys = KeyNames::Trace(Arc::new(TraceKeys::new(vec![
            "3f2b8c1e-9d4a-4e7b-8a6f-0c5d2e1b7a94".to_string(),
            "注文-7".to_string(),
            "user-0".to_string(),
        ])));
        assert_eq!(keys.name(0), "3f2b8c1e-9d4a-4e7b-8a6f-0c5d2e1b7a94");
        assert_eq!(keys.name(1), "注文-7");
        // A trace key that looks generated is still the trace's: id 2, not 0.
        assert_eq!(keys.id("user-0"), Some(2));
        assert_eq!(keys.id("注文-7"), Some(1));
        assert_eq!(keys.id("user-1"), None);
        let mut out = String::from("stale");
        keys.write(2, &mut out);
        assert_eq!(out, "user-0");
    }
}
