//! A growable set of small indexes, one bit each: per-row flags of the oracle and the
//! in-process sink, small enough to stay in cache where a `Vec<bool>` of a million rows would
//! not.

#[derive(Debug, Clone, Default)]
pub struct BitSet {
    words: Vec<u64>,
}

impl BitSet {
    /// Sets bit `i`; returns whether it was clear.
    #[inline]
    pub fn insert(&mut self, i: usize) -> bool {
        let (word, bit) = (i / 64, 1u64 << (i % 64));
        if word >= self.words.len() {
            self.words.resize(word + 1, 0);
        }
        let was_clear = self.words[word] & bit == 0;
        self.words[word] |= bit;
        was_clear
    }

    #[inline]
    pub fn remove(&mut self, i: usize) {
        if let Some(w) = self.words.get_mut(i / 64) {
            *w &= !(1u64 << (i % 64));
        }
    }

    #[inline]
    pub fn contains(&self, i: usize) -> bool {
        self.words
            .get(i / 64)
            .is_some_and(|w| w & (1u64 << (i % 64)) != 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits_are_set_cleared_and_read_independently() {
        let mut b = BitSet::default();
        assert!(!b.contains(1_000));
        assert!(b.insert(1_000));
        assert!(!b.insert(1_000), "already set");
        assert!(b.insert(63) && b.insert(64) && b.insert(0));
        assert!(b.contains(63) && b.contains(64) && b.contains(0) && b.contains(1_000));
        assert!(!b.contains(65) && !b.contains(999));
        b.remove(64);
        b.remove(5_000); // past the end: nothing to clear
        assert!(!b.contains(64) && b.contains(63));
    }
}
