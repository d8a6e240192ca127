//! A replayed trace's own key strings, carried by its workload: plain data the pipeline's key
//! names (`pipeline::source::KeyNames`) read.

use std::collections::HashMap;

/// A trace's own key strings by key id (ids are dense, in order of first appearance, as
/// `pipeline::trace::Trace::load` numbers them), and the way back from a key to its id.
pub struct TraceKeys {
    names: Vec<String>,
    ids: HashMap<String, u64>,
}

impl TraceKeys {
    /// `names[id]` is the key string of id `id`. Names are distinct (a trace numbers each
    /// distinct key once); should one repeat, its first id is the one a key maps back to.
    pub fn new(names: Vec<String>) -> TraceKeys {
        let mut ids = HashMap::with_capacity(names.len());
        for (id, name) in names.iter().enumerate() {
            ids.entry(name.clone()).or_insert(id as u64);
        }
        TraceKeys { names, ids }
    }

    /// The key string of id `id` (None: no key of the trace has this id).
    pub fn name(&self, id: u64) -> Option<&str> {
        self.names
            .get(usize::try_from(id).ok()?)
            .map(String::as_str)
    }

    /// The id of key string `key` (None: the trace has no such key).
    pub fn id(&self, key: &str) -> Option<u64> {
        self.ids.get(key).copied()
    }

    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }
}

/// A trace's keys are many: a workload's debug print names how many, not each.
impl std::fmt::Debug for TraceKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TraceKeys({} keys)", self.names.len())
    }
}
