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
    fn byte_strings_of_different_lengths_differ() {
        assert_ne!(hash(b"ab".as_slice()), hash(b"ab\0".as_slice()));
        assert_ne!(hash("user-1"), hash("user-10"));
        let map: FastMap<String, u32> = (0..1000).map(|i| (format!("user-{i}"), i)).collect();
        assert_eq!(map.get("user-777"), Some(&777));
    }
}
