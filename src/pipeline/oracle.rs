//! The oracle: an exact in-memory model of the true sliding-window counts, to measure how far
//! the job's results are from the truth (an aggregation error is a business error).
//!
//! A user's true count in window `w` at watermark `W` is the number of that user's events seen
//! so far whose event time `t` satisfies `t + w > W`: the job's timer for `t` fires once the
//! watermark reaches `t + w`.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};

use serde::Serialize;

use super::hash::FastMap;

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

/// What one (user, window) pair adds to a [`ResultError`]: `got` is the results' value (None:
/// the results lack the pair), `truth` the oracle's count.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Contribution {
    over: u64,
    under: u64,
    missing: u64,
    compared: u64,
    abs: u64,
}

impl Contribution {
    fn of(got: Option<i64>, truth: i64) -> Contribution {
        match got {
            Some(got) => Contribution {
                over: u64::from(got > truth),
                under: u64::from(got < truth),
                missing: 0,
                compared: 1,
                abs: got.abs_diff(truth),
            },
            None if truth > 0 => Contribution {
                missing: 1,
                compared: 1,
                abs: truth.unsigned_abs(),
                ..Contribution::default()
            },
            None => Contribution::default(),
        }
    }
}

/// A [`ResultError`] kept up to date pair by pair: contributions are added and taken back, and
/// the nonzero differences are kept as a multiset so the largest is known after a removal.
#[derive(Debug, Clone, Default)]
struct RunningError {
    over: u64,
    under: u64,
    missing: u64,
    compared: u64,
    /// Nonzero absolute differences -> how many pairs have them.
    diffs: BTreeMap<u64, u64>,
}

impl RunningError {
    fn add(&mut self, c: Contribution) {
        self.over += c.over;
        self.under += c.under;
        self.missing += c.missing;
        self.compared += c.compared;
        if c.abs > 0 {
            *self.diffs.entry(c.abs).or_default() += 1;
        }
    }

    fn remove(&mut self, c: Contribution) {
        self.over -= c.over;
        self.under -= c.under;
        self.missing -= c.missing;
        self.compared -= c.compared;
        if c.abs > 0
            && let Some(n) = self.diffs.get_mut(&c.abs)
        {
            *n -= 1;
            if *n == 0 {
                self.diffs.remove(&c.abs);
            }
        }
    }

    fn error(&self) -> ResultError {
        ResultError {
            over: self.over,
            under: self.under,
            max_abs: self.diffs.last_key_value().map_or(0, |(d, _)| *d),
            missing: self.missing,
            compared: self.compared,
        }
    }
}

/// The state of an incremental comparison: what every pair looked like at the last one, and
/// the users whose true counts moved since.
#[derive(Debug, Clone, Default)]
struct Tracker {
    /// Per pair (`slot * windows + window`): the results' value at the last comparison.
    got: Vec<Option<i64>>,
    /// Per pair: the true count at the last comparison.
    truth: Vec<i64>,
    /// Per slot: listed in `changed` (or about to be).
    marked: Vec<bool>,
    /// Slots whose true counts, or whose results, changed since the last comparison.
    changed: Vec<u32>,
    error: RunningError,
    /// Results for a window the job does not have (a corrupt store): no slot holds them.
    strays: FastMap<(u64, usize), i64>,
}

impl Tracker {
    /// The running error with the stray results added.
    fn error(&self) -> ResultError {
        if self.strays.is_empty() {
            return self.error.error();
        }
        let mut error = self.error.clone();
        for got in self.strays.values() {
            error.add(Contribution::of(Some(*got), 0));
        }
        error.error()
    }

    fn mark(&mut self, slot: u32) {
        let marked = &mut self.marked[slot as usize];
        if !*marked {
            *marked = true;
            self.changed.push(slot);
        }
    }
}

#[derive(Debug, Clone)]
pub struct Oracle {
    windows: Vec<i64>,
    /// user -> slot: the user's counts are `counts[slot * windows.len()..][..windows.len()]`.
    slots: FastMap<u64, u32>,
    /// slot -> user.
    users: Vec<u64>,
    counts: Vec<i64>,
    /// Per window: (expiry = t + w, slot), smallest first.
    expiries: Vec<BinaryHeap<Reverse<(i64, u32)>>>,
    /// Present once an incremental comparison has its baseline ([`Oracle::track`]).
    tracker: Option<Tracker>,
}

impl Oracle {
    pub fn new(windows: &[i64]) -> Oracle {
        Oracle {
            windows: windows.to_vec(),
            slots: FastMap::default(),
            users: Vec::new(),
            counts: Vec::new(),
            expiries: windows.iter().map(|_| BinaryHeap::new()).collect(),
            tracker: None,
        }
    }

    /// The slot of `user`, created (with zero counts) if new.
    fn slot(&mut self, user: u64) -> u32 {
        let next = self.users.len() as u32;
        let slot = *self.slots.entry(user).or_insert(next);
        if slot == next {
            self.users.push(user);
            self.counts
                .resize(self.counts.len() + self.windows.len(), 0);
            if let Some(t) = &mut self.tracker {
                t.got.resize(self.counts.len(), None);
                t.truth.resize(self.counts.len(), 0);
                t.marked.push(false);
            }
        }
        slot
    }

    pub fn on_event(&mut self, user: u64, event_time: i64) {
        let slot = self.slot(user);
        let n = self.windows.len();
        let base = slot as usize * n;
        for (i, w) in self.windows.iter().enumerate() {
            self.counts[base + i] += 1;
            self.expiries[i].push(Reverse((event_time + w, slot)));
        }
        if let Some(t) = &mut self.tracker {
            t.mark(slot);
        }
    }

    /// Expires every event whose window has passed `watermark`.
    pub fn on_watermark(&mut self, watermark: i64) {
        let n = self.windows.len();
        for (i, heap) in self.expiries.iter_mut().enumerate() {
            while let Some(Reverse((expiry, slot))) = heap.peek().copied() {
                if expiry > watermark {
                    break;
                }
                heap.pop();
                self.counts[slot as usize * n + i] -= 1;
                if let Some(t) = &mut self.tracker {
                    t.mark(slot);
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
        self.pair(user, window).map_or(0, |p| self.counts[p])
    }

    /// The pair index of (user, window) if the oracle has the user and the window exists.
    fn pair(&self, user: u64, window: usize) -> Option<usize> {
        if window >= self.windows.len() {
            return None;
        }
        self.slots
            .get(&user)
            .map(|s| *s as usize * self.windows.len() + window)
    }

    /// Compares `results` (user, window index, count) with the truth. Pairs the oracle has with a
    /// count above zero but `results` lacks are `missing`.
    pub fn compare(&self, results: impl IntoIterator<Item = (u64, usize, i64)>) -> ResultError {
        let mut error = RunningError::default();
        // Per pair: seen in `results`.
        let mut seen = vec![false; self.counts.len()];
        for (user, window, got) in results {
            let truth = match self.pair(user, window) {
                Some(p) => {
                    seen[p] = true;
                    self.counts[p]
                }
                None => 0,
            };
            error.add(Contribution::of(Some(got), truth));
        }
        for (p, truth) in self.counts.iter().enumerate() {
            if !seen[p] {
                error.add(Contribution::of(None, *truth));
            }
        }
        error.error()
    }

    /// Compares `all` — every (user, window index, count) the results hold, each pair once — with
    /// the truth, as [`Oracle::compare`] does, and keeps what it saw: later comparisons of the
    /// same results need only the pairs that changed ([`Oracle::compare_changes`]).
    pub fn track(&mut self, all: impl IntoIterator<Item = (u64, usize, i64)>) -> ResultError {
        let mut tracker = Tracker {
            got: vec![None; self.counts.len()],
            ..Tracker::default()
        };
        // Results for users the oracle has not seen get a slot, so every pair has a place.
        for (user, window, got) in all {
            if window >= self.windows.len() {
                tracker.strays.insert((user, window), got);
                continue;
            }
            let slot = self.slot(user) as usize;
            tracker.got.resize(self.counts.len(), None);
            tracker.got[slot * self.windows.len() + window] = Some(got);
        }
        tracker.truth = self.counts.clone();
        tracker.marked = vec![false; self.users.len()];
        for (got, truth) in tracker.got.iter().zip(&tracker.truth) {
            tracker.error.add(Contribution::of(*got, *truth));
        }
        let error = tracker.error();
        self.tracker = Some(tracker);
        error
    }

    /// Whether a baseline for [`Oracle::compare_changes`] exists.
    pub fn is_tracking(&self) -> bool {
        self.tracker.is_some()
    }

    /// The comparison [`Oracle::compare`] would make of the results, given only the pairs that
    /// changed in them since the last comparison (with their values now); the true counts that
    /// changed meanwhile the oracle knows itself. None without a baseline ([`Oracle::track`]).
    pub fn compare_changes(
        &mut self,
        changes: impl IntoIterator<Item = (u64, usize, i64)>,
    ) -> Option<ResultError> {
        self.tracker.as_ref()?;
        let n = self.windows.len();
        let mut updates = Vec::new();
        for (user, window, got) in changes {
            if window >= n {
                if let Some(t) = &mut self.tracker {
                    t.strays.insert((user, window), got);
                }
                continue;
            }
            let slot = self.slot(user);
            updates.push((slot as usize * n + window, got));
            if let Some(t) = &mut self.tracker {
                t.mark(slot);
            }
        }
        let t = self.tracker.as_mut()?;
        // Take back what every changed slot contributed last time...
        for &slot in &t.changed {
            for p in slot as usize * n..(slot as usize + 1) * n {
                t.error.remove(Contribution::of(t.got[p], t.truth[p]));
            }
        }
        for (p, got) in updates {
            t.got[p] = Some(got);
        }
        // ...and add what it contributes now.
        for slot in std::mem::take(&mut t.changed) {
            t.marked[slot as usize] = false;
            for p in slot as usize * n..(slot as usize + 1) * n {
                t.truth[p] = self.counts[p];
                t.error.add(Contribution::of(t.got[p], t.truth[p]));
            }
        }
        Some(t.error())
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

    /// One step of a random history.
    #[derive(Debug, Clone)]
    enum Step {
        Event {
            user: u64,
            time: i64,
        },
        /// Moves the watermark up by this much.
        Watermark(i64),
        /// The job writes a count to the store (windows past the job's included: a corrupt one).
        Write {
            user: u64,
            window: usize,
            count: i64,
        },
        Compare,
    }

    fn step() -> impl Strategy<Value = Step> {
        prop_oneof![
            6 => (0u64..30, 0i64..400).prop_map(|(user, time)| Step::Event { user, time }),
            2 => (1i64..80).prop_map(Step::Watermark),
            6 => (0u64..40, 0usize..4, -2i64..8)
                .prop_map(|(user, window, count)| Step::Write { user, window, count }),
            1 => Just(Step::Compare),
        ]
    }

    /// The comparison as the first oracle wrote it: the truth from the history itself (an
    /// event counts in window `w` until a watermark at or past `t + w` arrives after it),
    /// and a set of the pairs seen.
    fn reference(
        windows: &[i64],
        events: &[(u64, i64, usize)],
        watermarks: &[i64],
        results: &[(u64, usize, i64)],
    ) -> ResultError {
        let mut truth: std::collections::HashMap<(u64, usize), i64> = Default::default();
        for &(user, time, arrived_before) in events {
            for (i, w) in windows.iter().enumerate() {
                let expired = watermarks[arrived_before..]
                    .iter()
                    .any(|wm| *wm >= time + w);
                if !expired {
                    *truth.entry((user, i)).or_default() += 1;
                }
            }
        }
        let mut error = ResultError::default();
        let mut seen = std::collections::HashSet::new();
        for &(user, window, got) in results {
            seen.insert((user, window));
            let t = truth.get(&(user, window)).copied().unwrap_or(0);
            error.compared += 1;
            error.max_abs = error.max_abs.max(got.abs_diff(t));
            error.over += u64::from(got > t);
            error.under += u64::from(got < t);
        }
        for (pair, t) in &truth {
            if *t > 0 && !seen.contains(pair) {
                error.missing += 1;
                error.compared += 1;
                error.max_abs = error.max_abs.max(t.unsigned_abs());
            }
        }
        error
    }

    use crate::pipeline::sink::{MemorySink, Sink};
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]
        /// The incremental comparison (a full read once, then only what changed) gives what a
        /// full comparison gives, and both give what the first oracle gave, after every step.
        #[test]
        fn incremental_comparison_equals_a_full_one(
            steps in proptest::collection::vec(step(), 1..300),
        ) {
            let windows = [10, 50, 200];
            let mut oracle = Oracle::new(&windows);
            // Three windows: writes to a fourth are the store's overflow.
            let mut sink = MemorySink::new(["a", "b", "c"].map(String::from).to_vec());
            let mut events = Vec::new();
            let mut watermarks = Vec::new();
            let mut watermark = 0;
            let mut compares = 0;
            for step in steps {
                match step {
                    Step::Event { user, time } => {
                        oracle.on_event(user, time);
                        events.push((user, time, watermarks.len()));
                    }
                    Step::Watermark(by) => {
                        watermark += by;
                        oracle.on_watermark(watermark);
                        watermarks.push(watermark);
                    }
                    Step::Write { user, window, count } => sink.write(user, window, count).unwrap(),
                    Step::Compare => {
                        let all = sink.read_all().unwrap();
                        let full = oracle.compare(all.iter().copied());
                        prop_assert_eq!(full, reference(&windows, &events, &watermarks, &all));
                        let incremental = if oracle.is_tracking() {
                            let changes = sink.read_changes().unwrap().unwrap();
                            oracle.compare_changes(changes).unwrap()
                        } else {
                            sink.read_changes().unwrap();
                            oracle.track(sink.read_all().unwrap())
                        };
                        prop_assert_eq!(incremental, full, "comparison {}", compares);
                        compares += 1;
                    }
                }
            }
        }
    }
}
