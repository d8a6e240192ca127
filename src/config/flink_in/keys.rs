//! Flink's keys, as `parity/flink-keys` extracted them from Flink 1.20.1's and 2.0.0's jars:
//! which keys Flink has, the current key of each deprecated one, and why a key the reader does
//! not apply is ignored (not Flink's, with the nearest key that is; or not applied by statebench).

use std::collections::{HashMap, HashSet};
use std::sync::OnceLock;

use crate::config::flink::FACTORY_PREFIX;
use crate::config::profile::{KNOBS, Knob};
use crate::config::{edit_distance, nearest};

/// Flink's keys as `parity/flink-keys` extracted them from each release's `flink-dist` jar.
const KEYS_1_20: &str = include_str!("../flink-1.20.1-keys.txt");
const KEYS_2_0: &str = include_str!("../flink-2.0.0-keys.txt");

/// Key families the key lists hold whole: a key in them that neither list has is not Flink's.
const COVERED_FAMILIES: &[&str] = &[
    "state.backend.rocksdb.",
    "state.changelog.",
    "state.checkpoints.",
    "state.savepoints.",
    "execution.checkpointing.",
    "taskmanager.memory.",
];

/// Keys that change what RocksDB does but that statebench does not apply, and what it does
/// instead: said next to the key in the list of ignored keys. (No knob's Flink key: those are
/// applied.)
const NOT_APPLIED: &[(&str, &str)] = &[
    (
        "state.backend.rocksdb.predefined-options",
        "statebench applies DEFAULT; set the options it changes as keys",
    ),
    (
        "state.backend.rocksdb.options-factory",
        "statebench cannot run a Java factory; it reads the statebench.* keys the export writes for one",
    ),
    (
        "state.backend.rocksdb.compaction.style",
        "statebench compacts by LEVEL, Flink's default",
    ),
    (
        "state.backend.rocksdb.compaction.filter.query-time-after-num-entries",
        "statebench's TTL compaction filter has Flink's default, 1000",
    ),
    (
        "state.backend.rocksdb.compaction.filter.periodic-compaction-time",
        "statebench's TTL compaction filter has Flink's default, 30 days",
    ),
    (
        "state.backend.rocksdb.write-batch-size",
        "statebench writes state one key at a time",
    ),
];

/// Flink's keys (both releases): every key, and the current key of each deprecated one.
pub(super) struct KeyLists {
    known: HashSet<&'static str>,
    sorted: Vec<&'static str>,
    pub(super) deprecated: HashMap<&'static str, &'static str>,
}

pub(super) fn key_lists() -> &'static KeyLists {
    static LISTS: OnceLock<KeyLists> = OnceLock::new();
    LISTS.get_or_init(|| {
        let mut known = HashSet::new();
        let mut deprecated = HashMap::new();
        for line in KEYS_1_20
            .lines()
            .chain(KEYS_2_0.lines())
            .filter(|l| !l.starts_with('#'))
        {
            let mut fields = line.split('\t');
            let (Some(key), Some(_class), Some(kind)) =
                (fields.next(), fields.next(), fields.next())
            else {
                continue;
            };
            known.insert(key);
            if let Some(current) = kind.strip_prefix("deprecated of ") {
                deprecated.entry(key).or_insert(current);
            }
        }
        let mut sorted: Vec<&'static str> = known.iter().copied().collect();
        sorted.sort_unstable();
        KeyLists {
            known,
            sorted,
            deprecated,
        }
    })
}

/// Whether Flink 1.20.1 or 2.0.0 has `key` (the families the key lists cover).
pub fn is_flink_key(key: &str) -> bool {
    key_lists().known.contains(key)
}

/// Why a key is ignored, when there is more to say: Flink does not know it (with the nearest
/// key it does know), or it changes RocksDB in a way statebench does not apply.
pub(super) fn why_ignored(key: &str) -> Option<String> {
    if let Some((_, why)) = NOT_APPLIED.iter().find(|(k, _)| *k == key) {
        return Some((*why).to_string());
    }
    let lists = key_lists();
    if lists.known.contains(key) {
        return None;
    }
    // A profile's own short key in a Flink file.
    if let Some(flink) = Knob::from_key(key).and_then(|k| k.info().flink_key) {
        return Some(format!("a statebench profile key; Flink's is {flink}"));
    }
    if let Some(flink) = KNOBS
        .iter()
        .find(|i| i.flink_key.is_none() && i.key == key)
        .map(|i| format!("{FACTORY_PREFIX}{}", i.key))
    {
        return Some(format!(
            "a statebench profile key; in a Flink file write {flink}"
        ));
    }
    let covered = COVERED_FAMILIES.iter().any(|f| key.starts_with(f));
    match nearest(key, &lists.sorted) {
        Some(n) if covered || close(key, n) => {
            Some(format!("not a Flink 1.20/2.0 key: did you mean {n}?"))
        }
        _ if covered => Some("not a Flink 1.20/2.0 key".to_string()),
        _ => None,
    }
}

/// Outside the families the key lists hold whole, only a near miss is called a typo.
fn close(key: &str, candidate: &str) -> bool {
    edit_distance(key, candidate) <= 2
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_not_applied_is_no_knobs() {
        for (key, _) in NOT_APPLIED {
            assert!(!KNOBS.iter().any(|i| i.flink_key == Some(key)), "{key}");
        }
    }

    #[test]
    fn keys_outside_the_lists_families_are_flagged_only_when_close() {
        assert_eq!(why_ignored("jobmanager.rpc.address"), None);
        assert_eq!(why_ignored("execution.checkpointing.dir"), None);
        assert!(
            why_ignored("writebuffer.size")
                .unwrap()
                .contains("state.backend.rocksdb.writebuffer.size")
        );
    }
}
