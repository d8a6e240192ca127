//! The synthetic event generator: users drawn from the workload's key distribution, event time
//! advancing at a fixed pace with bounded out-of-orderness, records keyed into partitions; or a
//! recorded trace replayed in its order.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};
use rand_distr::{Distribution as _, Exp, LogNormal, Zipf};

use crate::config::Workload;
use crate::config::job::OperatorSpec;
use crate::config::workload::Distribution;
use crate::config::workload::inputs::Delay;
pub use crate::model::event::Event;

enum KeySampler {
    Uniform(u64),
    Zipf(Zipf<f64>),
    HotSet { hot: u64, total: u64, traffic: f64 },
}

impl KeySampler {
    fn sample(&self, rng: &mut SmallRng) -> u64 {
        match self {
            KeySampler::Uniform(n) => rng.random_range(0..*n),
            // Zipf yields ranks 1..=n; rank 1 is the hottest user.
            KeySampler::Zipf(z) => (z.sample(rng) as u64).saturating_sub(1),
            KeySampler::HotSet {
                hot,
                total,
                traffic,
            } => {
                if rng.random::<f64>() < *traffic {
                    rng.random_range(0..*hot)
                } else {
                    rng.random_range(*hot..*total)
                }
            }
        }
    }
}

/// Deterministic for a given workload and seed.
pub struct Generator {
    rng: SmallRng,
    keys: KeySampler,
    start: i64,
    step: f64,
    out_of_orderness: i64,
    /// Share of events that arrive later than the out-of-orderness bound allows.
    late_fraction: f64,
    /// Partitions that carry records (all but the workload's idle ones).
    live_partitions: Vec<u32>,
    offsets: Vec<u64>,
    next_index: u64,
    /// Value sizes, drawn from their own stream so that a workload without values generates
    /// exactly the events it always did.
    value_size: Option<(u32, u32)>,
    seed: u64,
    /// A join's two inputs (None: one input, every event on input 0).
    inputs: Option<Box<Inputs>>,
}

/// The inputs of a join (`job.kind: interval-join`): each event's input is drawn from its own
/// stream (so the other draws stay those of a one-input job), and each input has partitions of
/// its own, so its own watermark. With the workload's `inputs:`, each input's value sizes are
/// its own, and the second input's records may follow the first's keys.
struct Inputs {
    right_share: f64,
    /// Live partitions of the left (0) and the right (1) input.
    live: [Vec<u32>; 2],
    /// Each input's value sizes (None: the workload's).
    value_size: [Option<(u32, u32)>; 2],
    follow: Option<Follow>,
}

/// The second input following the first: each first-input record at time t gets, unless it is
/// unmatched, one record of its key at t + a delay; and records of keys of its own.
struct Follow {
    unmatched: f64,
    own: f64,
    delay: DelayDraw,
    /// Its own draws (matched or not, the delay, its own keys), apart from the first input's.
    rng: SmallRng,
    /// Records waiting for their time, the earliest first.
    pending: BinaryHeap<Reverse<(i64, u64, u64)>>,
    /// Records scheduled so far (their tie-break: scheduled first, written first).
    scheduled: u64,
    /// First-input records so far: they set the log's pace.
    firsts: u64,
    /// The next key of its own: ids from the workload's key count up.
    next_own_key: u64,
}

/// A delay's distribution, built once, and its bounds in milliseconds.
struct DelayDraw {
    shape: DelayShape,
    min: f64,
    max: f64,
}

enum DelayShape {
    Uniform,
    /// `min` plus this.
    Exponential(Exp<f64>),
    LogNormal(LogNormal<f64>),
}

impl DelayDraw {
    fn new(delay: &Delay) -> DelayDraw {
        let (min, max) = delay.bounds();
        // Validation keeps the parameters valid; should one not be, the delay is uniform.
        let shape = match *delay {
            Delay::Uniform { .. } => None,
            Delay::Exponential { mean, .. } => Exp::new(1.0 / mean.0 as f64)
                .ok()
                .map(DelayShape::Exponential),
            Delay::Lognormal { median, sigma, .. } => LogNormal::new((median.0 as f64).ln(), sigma)
                .ok()
                .map(DelayShape::LogNormal),
        };
        DelayDraw {
            shape: shape.unwrap_or(DelayShape::Uniform),
            min: min as f64,
            max: max as f64,
        }
    }

    /// A delay in milliseconds within the bounds: redrawn outside them, and clamped should the
    /// distribution keep missing them.
    fn draw(&self, rng: &mut SmallRng) -> i64 {
        let (min, max) = (self.min, self.max);
        let once = |rng: &mut SmallRng| match &self.shape {
            DelayShape::Uniform if max > min => rng.random_range(min..=max),
            DelayShape::Uniform => min,
            DelayShape::Exponential(e) => min + e.sample(rng),
            DelayShape::LogNormal(l) => l.sample(rng),
        };
        let ms = (0..64)
            .map(|_| once(rng))
            .find(|d| (min..=max).contains(d))
            .unwrap_or_else(|| once(rng).clamp(min, max));
        ms.round() as i64
    }
}

impl Inputs {
    fn new(workload: &Workload) -> Option<Box<Inputs>> {
        let spec = &workload.spec;
        let Some(OperatorSpec::IntervalJoin(join)) = spec.job.as_ref().map(|j| j.first()) else {
            return None;
        };
        let live = |range: std::ops::Range<u32>| -> Vec<u32> {
            let live: Vec<u32> = range
                .clone()
                .filter(|p| !spec.idle_partitions.contains(p))
                .collect();
            // Validation leaves each input a live partition; should one have none, its
            // records still go to its own partitions.
            if live.is_empty() {
                range.collect()
            } else {
                live
            }
        };
        let given = spec.inputs.as_deref().unwrap_or_default();
        let (left, right) =
            join.input_partitions(spec.partitions, given.first().map(|i| i.partitions));
        let value_size = |i: usize| {
            given
                .get(i)
                .and_then(|input| input.value_size)
                .map(|v| v.bounds())
        };
        let follow = given
            .get(1)
            .and_then(|i| i.follows.as_ref())
            .map(|f| Follow {
                unmatched: f.unmatched,
                own: f.own,
                delay: DelayDraw::new(&f.delay),
                rng: SmallRng::seed_from_u64(spec.seed ^ 0x510e_527f_ade6_82d1),
                pending: BinaryHeap::new(),
                scheduled: 0,
                firsts: 0,
                next_own_key: spec.keys.count,
            });
        Some(Box::new(Inputs {
            right_share: if given.is_empty() {
                join.right_share
            } else {
                crate::config::workload::inputs::right_share(given)
            },
            live: [live(left), live(right)],
            value_size: [value_size(0), value_size(1)],
            follow,
        }))
    }
}

impl Generator {
    pub fn new(workload: &Workload) -> Generator {
        let spec = &workload.spec;
        let n = spec.keys.count.max(1);
        let keys = match spec.keys.distribution {
            Distribution::Uniform => KeySampler::Uniform(n),
            Distribution::Zipf => match Zipf::new(n as f64, spec.keys.zipf_exponent.unwrap_or(1.0))
            {
                Ok(z) => KeySampler::Zipf(z),
                // Validation guarantees a positive exponent; fall back rather than panic.
                Err(_) => KeySampler::Uniform(n),
            },
            Distribution::HotSet => {
                let hot = ((n as f64 * spec.keys.hot_keys.unwrap_or(0.01)) as u64)
                    .clamp(1, n.saturating_sub(1).max(1));
                KeySampler::HotSet {
                    hot,
                    total: n.max(hot + 1),
                    traffic: spec.keys.hot_traffic.unwrap_or(0.9),
                }
            }
        };
        let inputs = Inputs::new(workload);
        // Following, the first input's records set the pace: each brings its followers.
        let per_first = inputs
            .as_ref()
            .and_then(|i| i.follow.as_ref())
            .map_or(1.0, |f| 1.0 + (1.0 - f.unmatched) + f.own);
        Generator {
            rng: SmallRng::seed_from_u64(spec.seed),
            keys,
            start: spec.event_time.start as i64,
            step: workload.event_time_step() * per_first,
            out_of_orderness: spec.event_time.out_of_orderness.0 as i64,
            late_fraction: spec.event_time.late_fraction,
            live_partitions: (0..spec.partitions)
                .filter(|p| !spec.idle_partitions.contains(p))
                .collect(),
            offsets: vec![0; spec.partitions as usize],
            next_index: 0,
            value_size: spec.value_size.map(|v| v.bounds()),
            seed: spec.seed,
            inputs,
        }
    }

    /// The replay clock: the nominal event time of the next event. Processing time for
    /// idleness and TTL, as if the log were replayed at the speed it was written.
    pub fn replay_time(&self) -> i64 {
        match self.inputs.as_ref().and_then(|i| i.follow.as_ref()) {
            Some(f) => {
                let first = self.start + (f.firsts as f64 * self.step) as i64;
                f.pending
                    .peek()
                    .map_or(first, |Reverse((at, _, _))| (*at).min(first))
            }
            None => self.start + (self.next_index as f64 * self.step) as i64,
        }
    }

    /// The next record's key, its nominal time (when it is written to the log) and its input.
    /// Following, a waiting second-input record whose time has come goes first; else the first
    /// input's next record, which schedules its own followers.
    fn next_record(&mut self) -> (u64, i64, u8) {
        let (start, step) = (self.start, self.step);
        if let Some(f) = self.inputs.as_mut().and_then(|i| i.follow.as_mut()) {
            let first_at = start + (f.firsts as f64 * step) as i64;
            if let Some(Reverse((at, _, user))) = f.pending.peek().copied()
                && at < first_at
            {
                f.pending.pop();
                return (user, at, 1);
            }
            let user = self.keys.sample(&mut self.rng);
            f.firsts += 1;
            let follow = |f: &mut Follow, key: u64| {
                let at = first_at + f.delay.draw(&mut f.rng);
                f.pending.push(Reverse((at, f.scheduled, key)));
                f.scheduled += 1;
            };
            if f.rng.random::<f64>() >= f.unmatched {
                follow(f, user);
            }
            let own = f.own.floor() as u64 + u64::from(f.rng.random::<f64>() < f.own.fract());
            for _ in 0..own {
                let key = f.next_own_key;
                f.next_own_key += 1;
                follow(f, key);
            }
            return (user, first_at, 0);
        }
        let user = self.keys.sample(&mut self.rng);
        let nominal = start + (self.next_index as f64 * step) as i64;
        (user, nominal, self.draw_input(self.next_index))
    }

    /// The user id string the job keys by.
    pub fn user_key(user: u64, out: &mut String) {
        use std::fmt::Write;
        out.clear();
        // Writing to a String cannot fail.
        let _ = write!(out, "user-{user}");
    }

    /// The key string of id `user` with `size` bytes: `user-` and the id zero-padded
    /// (`user-0000042`); None (or a size too short for the id): plain `user-N`.
    pub fn sized_key(user: u64, size: Option<u32>, out: &mut String) {
        out.clear();
        out.push_str("user-");
        // The digits by hand: `write!`'s zero padding is a call per padding character, most
        // of a 36-byte key's cost (a preload's warm-up names every record's key).
        let mut digits = [0u8; 20];
        let mut at = digits.len();
        let mut rest = user;
        loop {
            at -= 1;
            digits[at] = b'0' + (rest % 10) as u8;
            rest /= 10;
            if rest == 0 {
                break;
            }
        }
        let digits = &digits[at..];
        let width = size.map_or(0, |s| (s as usize).saturating_sub(5));
        const ZEROS: &str = "00000000000000000000000000000000";
        let mut pad = width.saturating_sub(digits.len());
        while pad > 0 {
            let n = pad.min(ZEROS.len());
            out.push_str(&ZEROS[..n]);
            pad -= n;
        }
        // ASCII digits: valid UTF-8, so the fallback never runs.
        out.push_str(std::str::from_utf8(digits).unwrap_or_default());
    }

    /// The input of the event with index `index`: 1 (the right) with the join's right share,
    /// deterministic per seed and index; 0 without a join.
    fn draw_input(&self, index: u64) -> u8 {
        match &self.inputs {
            None => 0,
            Some(inputs) => {
                let draw = crate::pipeline::operators::splitmix64(
                    self.seed ^ index.rotate_left(41) ^ 0x6a09_e667_f3bc_c908,
                );
                // The top 53 bits as a uniform number in [0, 1).
                let uniform = (draw >> 11) as f64 / (1u64 << 53) as f64;
                u8::from(uniform < inputs.right_share)
            }
        }
    }

    /// The value size of the event with index `index` on `input`: deterministic per seed and
    /// index, within the input's sizes (the workload's when it has none of its own).
    fn draw_value_size(&self, index: u64, input: u8) -> u32 {
        let bounds = self
            .inputs
            .as_ref()
            .and_then(|i| i.value_size[usize::from(input.min(1))])
            .or(self.value_size);
        match bounds {
            None => 0,
            Some((min, max)) if min == max => min,
            Some((min, max)) => {
                let draw =
                    crate::pipeline::operators::splitmix64(self.seed ^ index.rotate_left(17));
                min + (draw % (u64::from(max - min) + 1)) as u32
            }
        }
    }
}

impl Iterator for Generator {
    type Item = Event;

    fn next(&mut self) -> Option<Event> {
        let (user, nominal, input) = self.next_record();
        let lag = if self.late_fraction > 0.0 && self.rng.random::<f64>() < self.late_fraction {
            // Late: beyond the bound, by up to ten minutes.
            self.rng
                .random_range(self.out_of_orderness + 1..=self.out_of_orderness + 600_000)
        } else if self.out_of_orderness > 0 {
            self.rng.random_range(0..=self.out_of_orderness)
        } else {
            0
        };
        // Kafka's keyed partitioning: the same user always lands in the same partition.
        let hash = (user.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 32) as u32;
        let live = match &self.inputs {
            // A join: the input's own partitions (a key's records of one input in one of them).
            Some(inputs) => &inputs.live[usize::from(input)],
            None => &self.live_partitions,
        };
        let partition = live[(hash % live.len() as u32) as usize];
        let offset = self.offsets[partition as usize];
        self.offsets[partition as usize] += 1;
        let value_size = self.draw_value_size(self.next_index, input);
        self.next_index += 1;
        Some(Event {
            user,
            event_time: nominal - lag,
            partition,
            offset,
            append_time: nominal,
            value_size,
            input,
        })
    }
}

/// What the engine reads: the synthetic generator or a replayed trace.
pub enum EventSource {
    Synthetic(Generator),
    Trace {
        events: std::sync::Arc<Vec<Event>>,
        next: usize,
        max_seen: i64,
    },
}

impl EventSource {
    pub fn new(workload: &Workload, trace: Option<std::sync::Arc<Vec<Event>>>) -> EventSource {
        match trace {
            None => EventSource::Synthetic(Generator::new(workload)),
            Some(events) => {
                let first = events.first().map_or(0, |e| e.event_time);
                EventSource::Trace {
                    events,
                    next: 0,
                    max_seen: first,
                }
            }
        }
    }

    /// Processing time for idleness and TTL: the generator's replay clock, or for a trace the
    /// newest event time read so far (replaying at the speed it was recorded).
    pub fn replay_time(&self) -> i64 {
        match self {
            EventSource::Synthetic(g) => g.replay_time(),
            EventSource::Trace { max_seen, .. } => *max_seen,
        }
    }
}

impl Iterator for EventSource {
    type Item = Event;

    fn next(&mut self) -> Option<Event> {
        match self {
            EventSource::Synthetic(g) => g.next(),
            EventSource::Trace {
                events,
                next,
                max_seen,
            } => {
                let mut event = *events.get(*next)?;
                *next += 1;
                *max_seen = (*max_seen).max(event.event_time);
                event.append_time = *max_seen;
                Some(event)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sized_keys_are_the_zero_padded_ids_format_writes() {
        let mut out = String::new();
        for user in [0, 7, 42, 999_999, 3_999_999_999, u64::MAX] {
            for size in [None, Some(3), Some(8), Some(12), Some(36)] {
                Generator::sized_key(user, size, &mut out);
                let width = size.map_or(0, |s| (s as usize).saturating_sub(5));
                assert_eq!(out, format!("user-{user:0width$}"), "{user} {size:?}");
            }
        }
    }

    #[test]
    fn generator_is_deterministic_and_bounded_out_of_order() {
        let w = Workload::load("smoke").unwrap();
        let a: Vec<Event> = Generator::new(&w).take(5_000).collect();
        let b: Vec<Event> = Generator::new(&w).take(5_000).collect();
        assert_eq!(a, b);
        let ooo = w.spec.event_time.out_of_orderness.0 as i64;
        let mut max_seen = a[0].event_time;
        for e in &a {
            // No event is later than out-of-orderness behind the newest one: watermarks
            // (max - ooo - 1) never make an event late.
            assert!(
                e.event_time >= max_seen - ooo,
                "{} behind {max_seen}",
                e.event_time
            );
            max_seen = max_seen.max(e.event_time);
            assert!(e.user < w.spec.keys.count);
        }
        // Offsets are dense per partition.
        for p in 0..w.spec.partitions {
            let offsets: Vec<u64> = a
                .iter()
                .filter(|e| e.partition == p)
                .map(|e| e.offset)
                .collect();
            assert_eq!(offsets, (0..offsets.len() as u64).collect::<Vec<_>>());
        }
    }

    fn fingerprint(events: impl Iterator<Item = Event>) -> u64 {
        events.fold(0xcbf2_9ce4_8422_2325u64, |h, e| {
            let x = e.user
                ^ (e.event_time as u64).rotate_left(17)
                ^ u64::from(e.partition).rotate_left(40)
                ^ e.offset.rotate_left(51)
                ^ (e.append_time as u64).rotate_left(7)
                ^ u64::from(e.value_size).rotate_left(29)
                ^ u64::from(e.input).rotate_left(61);
            (h ^ x).wrapping_mul(0x0000_0100_0000_01b3)
        })
    }

    #[test]
    fn workloads_without_inputs_generate_the_events_they_always_did() {
        // Fingerprints of the first 20,000 events before the join's second input existed.
        for (name, expected) in [
            ("smoke", 0x0f8b_b5d2_0c34_01de_u64),
            ("ads-minutes", 0x330a_15ae_70f5_864f),
            ("backfill-catchup", 0x0cc1_7df7_0d0e_8d52),
            // A join without `inputs:`: its events as before `inputs:` existed (the same
            // 200,000 events before and after, compared when it came).
            ("interval-join", 0x3481_615c_998d_72a9),
        ] {
            let w = Workload::load(name).unwrap();
            let got = fingerprint(Generator::new(&w).take(20_000));
            assert_eq!(got, expected, "{name}: {got:#x}");
        }
    }

    #[test]
    fn a_join_has_two_inputs_on_partitions_of_their_own() {
        let join = Workload::load("interval-join").unwrap();
        let mut single = join.clone();
        single.spec.job = None;
        single.spec.windows = vec![crate::config::Millis(60_000)];
        let a: Vec<Event> = Generator::new(&join).take(20_000).collect();
        let b: Vec<Event> = Generator::new(&single).take(20_000).collect();
        let Some(OperatorSpec::IntervalJoin(spec)) = join.spec.job.as_ref().map(|j| j.first())
        else {
            panic!("interval-join is a join");
        };
        let (left, right) = spec.input_partitions(join.spec.partitions, None);
        let mut per_input = [0u64; 2];
        for (j, s) in a.iter().zip(&b) {
            // The input is drawn apart: keys, times and sizes are the one-input job's.
            assert_eq!(
                (j.user, j.event_time, j.value_size, j.append_time),
                (s.user, s.event_time, s.value_size, s.append_time)
            );
            assert_eq!(s.input, 0);
            let own = if j.input == 0 { &left } else { &right };
            assert!(own.contains(&j.partition), "{j:?} outside {own:?}");
            per_input[usize::from(j.input)] += 1;
        }
        // right-share 0.5
        let share = per_input[1] as f64 / a.len() as f64;
        assert!((share - 0.5).abs() < 0.02, "right share {share}");
        // Offsets stay dense per partition.
        for p in 0..join.spec.partitions {
            let offsets: Vec<u64> = a
                .iter()
                .filter(|e| e.partition == p)
                .map(|e| e.offset)
                .collect();
            assert!(!offsets.is_empty(), "partition {p} carries records");
            assert_eq!(offsets, (0..offsets.len() as u64).collect::<Vec<_>>());
        }
        // A key's records of one input stay in one partition.
        let mut home = std::collections::HashMap::new();
        for e in &a {
            assert_eq!(
                *home.entry((e.user, e.input)).or_insert(e.partition),
                e.partition
            );
        }
        assert_eq!(
            fingerprint(a.into_iter()),
            fingerprint(Generator::new(&join).take(20_000))
        );
    }

    /// The workload `text` says, loaded (and checked) as a file is.
    fn workload_of(text: &str) -> Workload {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.yaml");
        std::fs::write(&path, text).unwrap();
        Workload::load(path.to_str().unwrap()).unwrap()
    }

    /// `inputs:` with the second input following the first: every matched first-input record
    /// has its one follower, of its key, on the right's partitions, its delay within bounds;
    /// the unmatched share is about as asked; the log is in time order; sizes are per input.
    #[test]
    fn a_following_input_carries_the_first_inputs_keys_after_their_delay() {
        let text = "keys: {count: 4294967296}\npartitions: 4\nevents: 20000\nevent-time: {span: 1h}\nseed: 5\njob: {kind: interval-join, lower: -2m, upper: 10m}\ninputs:\n  - {partitions: 1, value-size: 300}\n  - partitions: 3\n    value-size: 150\n    follows: {unmatched: 0.1, delay: {distribution: uniform, min: 30s, max: 8m}}\n";
        let w = workload_of(text);
        let events: Vec<Event> = Generator::new(&w).take(20_000).collect();
        let again: Vec<Event> = Generator::new(&w).take(20_000).collect();
        assert_eq!(events, again, "deterministic");
        let mut firsts = std::collections::HashMap::new();
        let (mut matched, mut first_count) = (0u64, 0u64);
        let mut last_append = i64::MIN;
        for e in &events {
            assert!(e.append_time >= last_append, "the log is in time order");
            last_append = e.append_time;
            match e.input {
                0 => {
                    assert_eq!((e.partition, e.value_size), (0, 300));
                    first_count += 1;
                    firsts.insert(e.user, e.append_time);
                }
                _ => {
                    assert!((1..4).contains(&e.partition), "{e:?}");
                    assert_eq!(e.value_size, 150);
                    let at = firsts[&e.user];
                    let delay = e.append_time - at;
                    assert!((30_000..=480_000).contains(&delay), "delay {delay}");
                    matched += 1;
                }
            }
        }
        // The records of the last 8 minutes' first-input records are still waiting.
        let unmatched = 1.0 - matched as f64 / first_count as f64;
        assert!((0.09..0.2).contains(&unmatched), "unmatched {unmatched}");
        // Both inputs' records together span the workload's hour.
        let span = last_append - events[0].append_time;
        assert!((3_300_000..3_900_000).contains(&span), "span {span}");
    }

    /// Without `inputs:` a join's events are what they were: `inputs:` with a share and
    /// without sizes changes only where the right input's partitions are.
    #[test]
    fn inputs_with_shares_split_the_partitions_as_given() {
        let text = "keys: {count: 1000}\npartitions: 4\nevents: 4000\nevent-time: {span: 1h}\njob: {kind: interval-join, lower: -2m, upper: 10m}\ninputs:\n  - {partitions: 3, share: 0.25}\n  - {partitions: 1}\n";
        let w = workload_of(text);
        let events: Vec<Event> = Generator::new(&w).take(4000).collect();
        let right = events.iter().filter(|e| e.input == 1).count();
        // The first input (the left) takes a quarter of the events, the right the rest.
        assert!(
            (2800..3200).contains(&right),
            "{right} of 4000 on the right"
        );
        for e in &events {
            assert_eq!(e.partition == 3, e.input == 1, "{e:?}");
        }
    }
}
