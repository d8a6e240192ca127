//! A fast hasher for the pipeline's hot in-memory maps, whose keys are small integers
//! (user ids, window indexes) that no adversary chooses.
//!
//! The standard library's SipHash resists hash flooding, which costs about as much as the
//! table work itself on a `u64` key; here it was a visible share of statebench's own CPU.
//! This one is a multiply-and-fold: each word is xored into the state, which is multiplied by
//! an odd constant (2^64 / golden ratio, Knuth's multiplicative hashing); `finish` folds the
//! high half, where the product mixes every input bit, into the low bits hashbrown indexes with.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

/// 2^64 / φ, rounded to odd.
const MULTIPLIER: u64 = 0x9e37_79b9_7f4a_7c15;

#[derive(Debug, Default, Clone, Copy)]
pub struct FastHasher(u64);

impl FastHasher {
    #[inline]
    fn mix(&mut self, word: u64) {
        self.0 = (self.0 ^ word).wrapping_mul(MULTIPLIER);
    }
}

impl Hasher for FastHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            self.mix(u64::from_le_bytes(word));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut word = [0u8; 8];
            word[..rest.len()].copy_from_slice(rest);
            // The length keeps "ab" and "ab\0" apart.
            self.mix(u64::from_le_bytes(word) ^ ((rest.len() as u64) << 56));
        }
    }

    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.mix(u64::from(i));
    }

    #[inline]
    fn write_u16(&mut self, i: u16) {
        self.mix(u64::from(i));
    }

    #[inline]
    fn write_u32(&mut self, i: u32) {
        self.mix(u64::from(i));
    }

    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.mix(i);
    }

    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.mix(i as u64);
    }

    #[inline]
    fn finish(&self) -> u64 {
        self.0 ^ (self.0 >> 32)
    }
}

pub type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<FastHasher>>;
pub type FastSet<K> = HashSet<K, BuildHasherDefault<FastHasher>>;

/// Users below this id are looked up in a plain array (4 bytes per id up to the largest seen:
/// at most 64 MiB); larger ids in a hash map.
const DENSE_USERS: u64 = 1 << 24;

/// Numbers users in the order they are first seen (0, 1, 2, ...). The generator's users are
/// ids below the workload's key count, so most lookups index an array: one memory access
/// where a hash map's control bytes and bucket were two cache misses per lookup (the sink's
/// and the oracle's largest costs). Numbers are `u32`: its callers' per-user counts would fill
/// hundreds of GiB before 2^32 - 1 users.
#[derive(Debug, Clone)]
pub struct UserIndex {
    /// Per user id below `dense_below`: its number, or `u32::MAX` when not seen.
    dense: Vec<u32>,
    sparse: FastMap<u64, u32>,
    seen: u32,
    /// `DENSE_USERS`, or 0 where every id goes to the hash map ([`UserIndex::sparse`]).
    dense_below: u64,
}

impl Default for UserIndex {
    fn default() -> Self {
        UserIndex {
            dense: Vec::new(),
            sparse: FastMap::default(),
            seen: 0,
            dense_below: DENSE_USERS,
        }
    }
}

impl UserIndex {
    /// An index of a few users with ids spread over a wide range (one key in N of millions):
    /// every id in the hash map, where the array would grow to the largest id at 4 bytes per
    /// id (up to 64 MiB, zeroed, per index: most of a preload's system time when every batch
    /// of key groups made one).
    pub fn sparse() -> Self {
        UserIndex {
            dense_below: 0,
            ..UserIndex::default()
        }
    }

    /// The number of `user`, and whether it was new (numbered now).
    #[inline]
    pub fn number(&mut self, user: u64) -> (u32, bool) {
        let next = self.seen;
        let slot = if user < self.dense_below {
            let at = user as usize;
            if at >= self.dense.len() {
                // Grows to twice the largest id so far, so growing costs O(1) per id.
                let len = (at + 1).max(2 * self.dense.len()).min(DENSE_USERS as usize);
                self.dense.resize(len, u32::MAX);
            }
            let slot = &mut self.dense[at];
            if *slot == u32::MAX {
                *slot = next;
            }
            *slot
        } else {
            *self.sparse.entry(user).or_insert(next)
        };
        let new = slot == next;
        if new {
            self.seen += 1;
        }
        (slot, new)
    }

    /// The number of `user` if it has one.
    pub fn get(&self, user: u64) -> Option<u32> {
        if user < self.dense_below {
            self.dense
                .get(user as usize)
                .copied()
                .filter(|n| *n != u32::MAX)
        } else {
            self.sparse.get(&user).copied()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::{BuildHasher, Hash};

    fn hash<T: Hash>(v: T) -> u64 {
        BuildHasherDefault::<FastHasher>::default().hash_one(v)
    }

    #[test]
    fn sequential_ids_spread_over_the_low_bits_a_table_indexes_with() {
        // 4096 consecutive user ids (and pairs with a window index) into 4096 buckets: a hash
        // that left the low bits weak would pile them into a few.
        for windows in [1usize, 4] {
            let mut buckets = vec![0u32; 4096];
            for user in 0..4096u64 / windows as u64 {
                for w in 0..windows {
                    buckets[(hash((user, w)) & 4095) as usize] += 1;
                }
            }
            let fullest = buckets.iter().max().copied().unwrap_or(0);
            assert!(fullest <= 8, "{fullest} keys in one bucket");
            // The top 7 bits (hashbrown's tag) differ too.
            let tags: FastSet<u64> = (0..256u64).map(|u| hash(u) >> 57).collect();
            assert!(tags.len() > 100, "{} distinct tags", tags.len());
        }
    }

    #[test]
    fn users_are_numbered_in_order_of_first_sight_small_ids_and_large_alike() {
        for mut index in [UserIndex::default(), UserIndex::sparse()] {
            let users = [5u64, DENSE_USERS + 3, 0, 5, u64::MAX, DENSE_USERS - 1, 0];
            let numbers: Vec<(u32, bool)> = users.iter().map(|u| index.number(*u)).collect();
            assert_eq!(
                numbers,
                [
                    (0, true),
                    (1, true),
                    (2, true),
                    (0, false),
                    (3, true),
                    (4, true),
                    (2, false)
                ]
            );
            assert_eq!(index.get(DENSE_USERS + 3), Some(1));
            assert_eq!(index.get(DENSE_USERS - 1), Some(4));
            assert_eq!(index.get(6), None);
            assert_eq!(index.get(1 << 40), None);
        }
        // The sparse index holds no array, however large the ids.
        let mut sparse = UserIndex::sparse();
        sparse.number(DENSE_USERS - 1);
        assert!(sparse.dense.is_empty());
    }

    #[test]
    fn byte_strings_of_different_lengths_differ() {
        assert_ne!(hash(b"ab".as_slice()), hash(b"ab\0".as_slice()));
        assert_ne!(hash("user-1"), hash("user-10"));
        let map: FastMap<String, u32> = (0..1000).map(|i| (format!("user-{i}"), i)).collect();
        assert_eq!(map.get("user-777"), Some(&777));
    }
}
