//! The oracle: an exact in-memory model of the true sliding-window counts, to measure how far
//! the job's results are from the truth (an aggregation error is a business error).
//!
//! A user's true count in window `w` at watermark `W` is the number of that user's events seen
//! so far whose event time `t` satisfies `t + w > W`: the job's timer for `t` fires once the
//! watermark reaches `t + w`.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use serde::Serialize;

/// How a set of results differs from the oracle.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(default)]
pub struct ResultError {
    /// (user, window) pairs counted higher than the truth.
    pub over: u64,
    /// Pairs counted lower than the truth (but present).
    pub under: u64,
    /// The largest absolute difference of any pair.
    pub max_abs: u64,
    /// Pairs with a true count above zero that the results do not have at all.
    pub missing: u64,
    /// Pairs compared.
    pub compared: u64,
}

impl ResultError {
    pub fn is_exact(&self) -> bool {
        self.over == 0 && self.under == 0 && self.missing == 0
    }
}

#[derive(Debug, Clone)]
pub struct Oracle {
    windows: Vec<i64>,
    /// counts[user] = count per window index.
    counts: HashMap<u64, Vec<i64>>,
    /// Per window: (expiry = t + w, user), smallest first.
    expiries: Vec<BinaryHeap<Reverse<(i64, u64)>>>,
}

impl Oracle {
    pub fn new(windows: &[i64]) -> Oracle {
        Oracle {
            windows: windows.to_vec(),
            counts: HashMap::new(),
            expiries: windows.iter().map(|_| BinaryHeap::new()).collect(),
        }
    }

    pub fn on_event(&mut self, user: u64, event_time: i64) {
        let counts = self
            .counts
            .entry(user)
            .or_insert_with(|| vec![0; self.windows.len()]);
        for (i, w) in self.windows.iter().enumerate() {
            counts[i] += 1;
            self.expiries[i].push(Reverse((event_time + w, user)));
        }
    }

    /// Expires every event whose window has passed `watermark`.
    pub fn on_watermark(&mut self, watermark: i64) {
        for (i, heap) in self.expiries.iter_mut().enumerate() {
            while let Some(Reverse((expiry, user))) = heap.peek().copied() {
                if expiry > watermark {
                    break;
                }
                heap.pop();
                if let Some(c) = self.counts.get_mut(&user) {
                    c[i] -= 1;
                }
            }
        }
    }

    /// An oracle over the same windows that has seen nothing: every true count is zero (the
    /// end-of-input truth of a bounded run, once every window has expired).
    pub fn all_expired(&self) -> Oracle {
        Oracle::new(&self.windows)
    }

    /// The true count of `user` in window number `window`.
    pub fn count(&self, user: u64, window: usize) -> i64 {
        self.counts.get(&user).map_or(0, |c| c[window])
    }

    /// Compares `results` (user, window index, count) with the truth. Pairs the oracle has with a
    /// count above zero but `results` lacks are `missing`.
    pub fn compare(&self, results: impl IntoIterator<Item = (u64, usize, i64)>) -> ResultError {
        let mut error = ResultError::default();
        let mut seen: HashMap<(u64, usize), ()> = HashMap::new();
        for (user, window, got) in results {
            seen.insert((user, window), ());
            let truth = self.count(user, window);
            error.compared += 1;
            error.max_abs = error.max_abs.max(got.abs_diff(truth));
            match got.cmp(&truth) {
                std::cmp::Ordering::Greater => error.over += 1,
                std::cmp::Ordering::Less => error.under += 1,
                std::cmp::Ordering::Equal => {}
            }
        }
        for (user, counts) in &self.counts {
            for (window, truth) in counts.iter().enumerate() {
                if *truth > 0 && !seen.contains_key(&(*user, window)) {
                    error.missing += 1;
                    error.compared += 1;
                    error.max_abs = error.max_abs.max(truth.unsigned_abs());
                }
            }
        }
        error
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_expire_when_the_watermark_passes_event_time_plus_window() {
        let mut o = Oracle::new(&[10, 100]);
        o.on_event(1, 0);
        o.on_event(1, 5);
        o.on_event(2, 5);
        o.on_watermark(9);
        assert_eq!((o.count(1, 0), o.count(1, 1)), (2, 2));
        o.on_watermark(10); // 0 + 10 expires
        assert_eq!((o.count(1, 0), o.count(1, 1)), (1, 2));
        o.on_watermark(15);
        assert_eq!((o.count(1, 0), o.count(2, 0), o.count(2, 1)), (0, 0, 1));
    }

    #[test]
    fn compare_finds_over_under_and_missing() {
        let mut o = Oracle::new(&[10]);
        o.on_event(1, 0);
        o.on_event(1, 1);
        o.on_event(2, 0);
        o.on_event(3, 0);
        let e = o.compare([(1, 0, 5), (2, 0, 0), (4, 0, 0)]);
        assert_eq!(
            e,
            ResultError {
                over: 1,
                under: 1,
                max_abs: 3,
                missing: 1,
                compared: 4
            }
        );
        assert!(!e.is_exact());
        assert!(o.compare([(1, 0, 2), (2, 0, 1), (3, 0, 1)]).is_exact());
    }
}
