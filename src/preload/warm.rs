//! `warm`: the block cache after the clone as a job that has run for days holds it. Such a
//! job's cache holds the blocks its latest lookups read (the least recently used went first);
//! so the keys of the history's last records are looked up again, oldest first, in every
//! state, through RocksDB itself. Without `warm` the cache starts empty, as after a restore.

use std::collections::VecDeque;
use std::time::Instant;

use super::PreloadError;
use crate::backend::StateBackend;
use crate::backend::keys::CompositeKey;
use crate::config::Workload;
use crate::model::layout::CfRole;
use crate::pipeline::operators;
use crate::pipeline::source::KeyNames;

/// Records of the history's end whose keys a warm cache is read with: more blocks than a
/// block cache of a few GiB holds (a lookup reads one data block, 4 KiB by Flink's default),
/// in a few seconds.
pub const WARM_RECORDS: usize = 1 << 20;

/// The keys (user ids) of the last records read, in the log's order.
pub struct Tail {
    users: VecDeque<u64>,
    capacity: usize,
}

impl Tail {
    pub fn new(capacity: usize) -> Tail {
        Tail {
            users: VecDeque::with_capacity(capacity.min(WARM_RECORDS)),
            capacity,
        }
    }

    pub fn push(&mut self, user: u64) {
        if self.capacity == 0 {
            return;
        }
        if self.users.len() == self.capacity {
            self.users.pop_front();
        }
        self.users.push_back(user);
    }

    fn len(&self) -> usize {
        self.users.len()
    }
}

/// What warming did: the records whose keys were looked up, the lookups (one per record and
/// state), and how long it took.
#[derive(Debug, Clone, Copy, Default)]
pub struct Warmed {
    pub records: u64,
    pub lookups: u64,
    pub secs: f64,
}

/// Looks up the keys of `tail`, oldest first, in each of the job's states on `backends` (each
/// operator's database, in chain order: a record keeps its key down a chain).
pub fn warm<B: std::ops::Deref<Target = StateBackend>>(
    backends: &[B],
    workload: &Workload,
    tail: &Tail,
) -> Result<Warmed, PreloadError> {
    let t = Instant::now();
    let names = KeyNames::of(workload);
    let (mut name, mut key) = (String::new(), CompositeKey::default());
    let mut lookups = 0;
    let specs = workload.operators();
    let states = backends.iter().zip(&specs).flat_map(|(backend, spec)| {
        operators::layout(spec)
            .cfs
            .into_iter()
            .filter(|c| matches!(c.role, CfRole::State { .. }))
            .map(move |c| (backend, c))
    });
    for (backend, decl) in states {
        let mut users = tail.users.iter();
        let mut seen = 0u64;
        lookups += backend.warm_cache(&decl.name, |out| {
            let Some(user) = users.next() else {
                return false;
            };
            seen += 1;
            // A stop asked for (Ctrl-C) ends the warming; the run's own stop follows.
            if seen.is_multiple_of(super::CANCEL_EVERY) && super::check_cancel().is_err() {
                return false;
            }
            names.write(*user, &mut name);
            // The key as a state without a namespace holds it (a ValueState's whole key); a
            // state with namespaces (windows) has its entries right after it.
            key.set_key(&name);
            out.extend_from_slice(key.prefix());
            true
        })?;
        if super::check_cancel().is_err() {
            break;
        }
    }
    Ok(Warmed {
        records: tail.len() as u64,
        lookups,
        secs: t.elapsed().as_secs_f64(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tail_keeps_the_last_records_in_order() {
        let mut tail = Tail::new(3);
        for user in 1..=5 {
            tail.push(user);
        }
        assert_eq!(tail.users, [3, 4, 5]);
        let mut none = Tail::new(0);
        none.push(1);
        assert_eq!(none.len(), 0);
    }
}
