//! The oracle: an exact in-memory model of the true sliding-window counts, to measure how far
//! the job's results are from the truth (an aggregation error is a business error).
//!
//! A user's true count in window `w` at watermark `W` is the number of that user's events seen
//! so far whose event time `t` satisfies `t + w > W`: the job's timer for `t` fires once the
//! watermark reaches `t + w`.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, VecDeque};

use super::source::Event;
use crate::util::bits::BitSet;

mod chain;
pub mod thread;
pub use crate::model::counters::ResultError;
use crate::util::hash::{FastMap, UserIndex};
pub use chain::ChainModel;

/// Whether key `key` is among those a run checking one key in `sample` checks: a deterministic
/// choice by the key's hash, the same for the oracle, the serving store, the preload and every
/// run.
pub fn checked(key: u64, sample: u64) -> bool {
    sample <= 1 || super::operators::splitmix64(key ^ 0x5eed_c4ec_0000_0001).is_multiple_of(sample)
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
    /// Per slot: listed in `changed`.
    marked: BitSet,
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
        if self.marked.insert(slot as usize) {
            self.changed.push(slot);
        }
    }
}

/// Which events each window has yet to expire. An event at `t` leaves window `w` once a
/// watermark at or past `t + w` arrives; `t + w` orders events as `t` does for every window, so
/// one heap of (t, slot) serves the smallest window, and what it expires moves on, in `t`
/// order, to a queue for the next larger window, and so on: one heap push and pop per event
/// instead of one per window.
#[derive(Debug, Clone)]
struct Expiries {
    /// Window indexes from the smallest window to the largest.
    order: Vec<usize>,
    /// The windows' lengths, in `order`.
    lengths: Vec<i64>,
    /// Events the smallest window has not expired.
    heap: BinaryHeap<Reverse<(i64, u32)>>,
    /// `queues[k]`: events window `order[k]` expired and window `order[k + 1]` has not,
    /// sorted by `t`.
    queues: Vec<VecDeque<(i64, u32)>>,
}

impl Expiries {
    fn new(windows: &[i64]) -> Expiries {
        let mut order: Vec<usize> = (0..windows.len()).collect();
        order.sort_by_key(|i| windows[*i]);
        Expiries {
            lengths: order.iter().map(|i| windows[*i]).collect(),
            queues: order.iter().skip(1).map(|_| VecDeque::new()).collect(),
            order,
            heap: BinaryHeap::new(),
        }
    }

    fn push(&mut self, t: i64, slot: u32) {
        if !self.order.is_empty() {
            self.heap.push(Reverse((t, slot)));
        }
    }

    /// Calls `expire(window, slot)` for every event each window expires at `watermark`.
    fn expire(&mut self, watermark: i64, mut expire: impl FnMut(usize, u32)) {
        let Some(&smallest) = self.lengths.first() else {
            return;
        };
        // Smallest first: an event a window expires now is expired now by every smaller one,
        // so it reaches the larger window's queue before that window looks.
        while let Some(Reverse((t, slot))) = self.heap.peek().copied() {
            if t.saturating_add(smallest) > watermark {
                break;
            }
            self.heap.pop();
            expire(self.order[0], slot);
            if let Some(next) = self.queues.first_mut() {
                insert_sorted(next, (t, slot));
            }
        }
        for k in 0..self.queues.len() {
            let length = self.lengths[k + 1];
            while let Some(&(t, slot)) = self.queues[k].front() {
                if t.saturating_add(length) > watermark {
                    break;
                }
                self.queues[k].pop_front();
                expire(self.order[k + 1], slot);
                if let Some(next) = self.queues.get_mut(k + 1) {
                    insert_sorted(next, (t, slot));
                }
            }
        }
    }
}

/// Appends `item` to a queue sorted by `t`; an item older than the back (an event that came
/// late, after younger ones had moved on) goes to its place.
fn insert_sorted(queue: &mut VecDeque<(i64, u32)>, item: (i64, u32)) {
    if queue.back().is_none_or(|back| back.0 <= item.0) {
        queue.push_back(item);
    } else {
        let at = queue.partition_point(|e| e.0 <= item.0);
        queue.insert(at, item);
    }
}

/// The exact table of true results: per key, one value per result slot (a frequency job's
/// windows; another kind's labels), kept dense so that comparisons read arrays.
#[derive(Debug, Clone, Default)]
pub struct Truths {
    /// Result slots per key.
    n: usize,
    /// Where the model being updated has its slots: `set`, `add` and `get` take the model's own
    /// slot numbering (a chain's operator i writes at its slot base).
    base: usize,
    /// user -> slot: the user's values are `counts[slot * n..][..n]`.
    slots: UserIndex,
    /// slot -> user.
    users: Vec<u64>,
    counts: Vec<i64>,
    /// Present once an incremental comparison has its baseline ([`Oracle::track`]).
    tracker: Option<Tracker>,
}

impl Truths {
    fn new(n: usize) -> Truths {
        Truths {
            n,
            ..Truths::default()
        }
    }

    /// The slot of `user`, created (with zero values) if new.
    pub fn slot(&mut self, user: u64) -> u32 {
        let (slot, new) = self.slots.number(user);
        if new {
            self.users.push(user);
            self.counts.resize(self.counts.len() + self.n, 0);
            if let Some(t) = &mut self.tracker {
                t.got.resize(self.counts.len(), None);
                t.truth.resize(self.counts.len(), 0);
            }
        }
        slot
    }

    /// Adds `delta` to the true value of `user`'s result `index`.
    pub fn add(&mut self, user: u64, index: usize, delta: i64) {
        let slot = self.slot(user);
        self.add_at(slot, self.base + index, delta);
    }

    /// Sets the true value of `user`'s result `index`.
    pub fn set(&mut self, user: u64, index: usize, value: i64) {
        let slot = self.slot(user);
        let index = self.base + index;
        if index < self.n {
            self.counts[slot as usize * self.n + index] = value;
            self.mark(slot);
        }
    }

    /// The true value of `user`'s result `index` (0 when never set).
    pub fn get(&self, user: u64, index: usize) -> i64 {
        self.pair(user, self.base + index)
            .map_or(0, |p| self.counts[p])
    }

    fn add_at(&mut self, slot: u32, index: usize, delta: i64) {
        if index < self.n {
            let p = slot as usize * self.n + index;
            self.counts[p] = self.counts[p].wrapping_add(delta);
            self.mark(slot);
        }
    }

    fn mark(&mut self, slot: u32) {
        if let Some(t) = &mut self.tracker {
            t.mark(slot);
        }
    }

    /// The pair index of (user, index) if the table has the user and the slot exists.
    fn pair(&self, user: u64, index: usize) -> Option<usize> {
        if index >= self.n {
            return None;
        }
        self.slots.get(user).map(|s| s as usize * self.n + index)
    }

    /// A copy without the incremental comparison's baseline.
    fn untracked(&self) -> Truths {
        Truths {
            n: self.n,
            base: 0,
            slots: self.slots.clone(),
            users: self.users.clone(),
            counts: self.counts.clone(),
            tracker: None,
        }
    }
}

/// How one operator kind's true results follow from the records it reads: the model updates
/// the table as Flink's operator would emit, computed from the records, never from RocksDB.
pub trait TruthModel: Send {
    /// Every record the job reads (also one it wrongly skips), with the processing time the
    /// operator sees for it.
    fn on_event(&mut self, event: &Event, now: i64, truths: &mut Truths);
    /// A watermark the operator has been sent (strictly increasing).
    fn on_watermark(&mut self, watermark: i64, now: i64, truths: &mut Truths);
    fn boxed_clone(&self) -> Box<dyn TruthModel>;
    /// Moves the records the operator emitted (for the next operator of a chain) since the
    /// last call into `out`, in the order the operator emits them. None by default.
    fn drain_emitted(&mut self, _out: &mut Vec<Event>) {}
}

/// The frequency counter's model: a user's count in window `w` at watermark `W` is the number
/// of their events seen whose time `t` has `t + w > W`.
#[derive(Debug, Clone)]
struct FrequencyModel {
    windows: Vec<i64>,
    /// Every event's (t, slot) until the largest window has expired it.
    expiries: Expiries,
}

enum Model {
    Frequency(FrequencyModel),
    Other(Box<dyn TruthModel>),
}

impl Clone for Model {
    fn clone(&self) -> Model {
        match self {
            Model::Frequency(f) => Model::Frequency(f.clone()),
            Model::Other(m) => Model::Other(m.boxed_clone()),
        }
    }
}

impl std::fmt::Debug for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Model::Frequency(m) => m.fmt(f),
            Model::Other(_) => f.write_str("TruthModel"),
        }
    }
}

#[derive(Debug, Clone)]
pub struct Oracle {
    table: Truths,
    model: Model,
    /// The processing time of the last record seen.
    now: i64,
}

impl Oracle {
    /// The frequency counter's oracle over `windows`.
    pub fn new(windows: &[i64]) -> Oracle {
        Oracle {
            table: Truths::new(windows.len()),
            model: Model::Frequency(FrequencyModel {
                windows: windows.to_vec(),
                expiries: Expiries::new(windows),
            }),
            now: i64::MIN,
        }
    }

    /// The oracle of another kind: `slots` results per key, kept by `model`.
    pub fn with_model(slots: usize, model: Box<dyn TruthModel>) -> Oracle {
        Oracle {
            table: Truths::new(slots),
            model: Model::Other(model),
            now: i64::MIN,
        }
    }

    pub fn on_event(&mut self, event: &Event, now: i64) {
        self.now = now;
        match &mut self.model {
            Model::Frequency(f) => {
                let slot = self.table.slot(event.user);
                let n = f.windows.len();
                for count in &mut self.table.counts[slot as usize * n..][..n] {
                    *count += 1;
                }
                f.expiries.push(event.event_time, slot);
                self.table.mark(slot);
            }
            Model::Other(m) => m.on_event(event, now, &mut self.table),
        }
    }

    /// Moves the truth to `watermark` (a frequency job: expires every event whose window has
    /// passed it).
    pub fn on_watermark(&mut self, watermark: i64) {
        match &mut self.model {
            Model::Frequency(f) => {
                let table = &mut self.table;
                f.expiries
                    .expire(watermark, |window, slot| table.add_at(slot, window, -1));
            }
            Model::Other(m) => m.on_watermark(watermark, self.now, &mut self.table),
        }
    }

    /// The truth at the end of a bounded input, once the final watermark has fired every
    /// timer (a frequency job: every count zero).
    pub fn all_expired(&self) -> Oracle {
        match &self.model {
            Model::Frequency(f) => Oracle::new(&f.windows),
            Model::Other(_) => {
                let mut end = Oracle {
                    table: self.table.untracked(),
                    model: self.model.clone(),
                    now: self.now,
                };
                end.on_watermark(i64::MAX);
                end
            }
        }
    }

    /// The true count of `user` in window (result slot) number `window`.
    pub fn count(&self, user: u64, window: usize) -> i64 {
        self.table.get(user, window)
    }

    /// Compares `results` (user, window index, count) with the truth. Pairs the oracle has with a
    /// count above zero but `results` lacks are `missing`.
    pub fn compare(&self, results: impl IntoIterator<Item = (u64, usize, i64)>) -> ResultError {
        let mut error = RunningError::default();
        // Per pair: seen in `results`.
        let mut seen = vec![false; self.table.counts.len()];
        for (user, window, got) in results {
            let truth = match self.table.pair(user, window) {
                Some(p) => {
                    seen[p] = true;
                    self.table.counts[p]
                }
                None => 0,
            };
            error.add(Contribution::of(Some(got), truth));
        }
        for (p, truth) in self.table.counts.iter().enumerate() {
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
            got: vec![None; self.table.counts.len()],
            ..Tracker::default()
        };
        // Results for users the oracle has not seen get a slot, so every pair has a place.
        for (user, window, got) in all {
            if window >= self.table.n {
                tracker.strays.insert((user, window), got);
                continue;
            }
            let slot = self.table.slot(user) as usize;
            tracker.got.resize(self.table.counts.len(), None);
            tracker.got[slot * self.table.n + window] = Some(got);
        }
        tracker.truth = self.table.counts.clone();
        for (got, truth) in tracker.got.iter().zip(&tracker.truth) {
            tracker.error.add(Contribution::of(*got, *truth));
        }
        let error = tracker.error();
        self.table.tracker = Some(tracker);
        error
    }

    /// Whether a baseline for [`Oracle::compare_changes`] exists.
    pub fn is_tracking(&self) -> bool {
        self.table.tracker.is_some()
    }

    /// The comparison [`Oracle::compare`] would make of the results, given only the pairs that
    /// changed in them since the last comparison (with their values now); the true counts that
    /// changed meanwhile the oracle knows itself. None without a baseline ([`Oracle::track`]).
    pub fn compare_changes(
        &mut self,
        changes: impl IntoIterator<Item = (u64, usize, i64)>,
    ) -> Option<ResultError> {
        self.table.tracker.as_ref()?;
        let n = self.table.n;
        let mut updates = Vec::new();
        for (user, window, got) in changes {
            if window >= n {
                if let Some(t) = &mut self.table.tracker {
                    t.strays.insert((user, window), got);
                }
                continue;
            }
            let slot = self.table.slot(user);
            updates.push((slot as usize * n + window, got));
            if let Some(t) = &mut self.table.tracker {
                t.mark(slot);
            }
        }
        let t = self.table.tracker.as_mut()?;
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
            t.marked.remove(slot as usize);
            for p in slot as usize * n..(slot as usize + 1) * n {
                t.truth[p] = self.table.counts[p];
                t.error.add(Contribution::of(t.got[p], t.truth[p]));
            }
        }
        Some(t.error())
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn ev(user: u64, event_time: i64) -> Event {
        Event {
            user,
            event_time,
            partition: 0,
            offset: 0,
            append_time: event_time,
            value_size: 0,
            input: 0,
        }
    }

    #[test]
    fn counts_expire_when_the_watermark_passes_event_time_plus_window() {
        let mut o = Oracle::new(&[10, 100]);
        o.on_event(&ev(1, 0), 0);
        o.on_event(&ev(1, 5), 0);
        o.on_event(&ev(2, 5), 0);
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
        o.on_event(&ev(1, 0), 0);
        o.on_event(&ev(1, 1), 0);
        o.on_event(&ev(2, 0), 0);
        o.on_event(&ev(3, 0), 0);
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
            6 => (0u64..40, 0usize..5, -2i64..8)
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

    use crate::durability::sink::{MemorySink, Sink};
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]
        /// The incremental comparison (a full read once, then only what changed) gives what a
        /// full comparison gives, and both give what the first oracle gave, after every step.
        #[test]
        fn incremental_comparison_equals_a_full_one(
            steps in proptest::collection::vec(step(), 1..300),
        ) {
            // Not in length order: the oracle sorts them itself.
            let windows = [50, 10, 200, 50];
            let mut oracle = Oracle::new(&windows);
            // Four windows: writes to a fifth are the store's overflow.
            let mut sink = MemorySink::new(["a", "b", "c", "d"].map(String::from).to_vec());
            let mut events = Vec::new();
            let mut watermarks = Vec::new();
            let mut watermark = 0;
            let mut compares = 0;
            for step in steps {
                match step {
                    Step::Event { user, time } => {
                        oracle.on_event(&ev(user, time), 0);
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
