//! Latency histograms (HdrHistogram, nanoseconds) for events and state access, per sample
//! interval and for the whole run.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

pub use crate::model::metrics::{Latencies, Percentiles};
use hdrhistogram::Histogram;

impl Percentiles {
    fn of(h: &Histogram<u64>) -> Percentiles {
        let us = |ns: u64| ns as f64 / 1000.0;
        Percentiles {
            count: h.len(),
            p50_us: us(h.value_at_quantile(0.5)),
            p99_us: us(h.value_at_quantile(0.99)),
            p999_us: us(h.value_at_quantile(0.999)),
            max_us: us(h.max()),
        }
    }
}

fn new_histogram() -> Histogram<u64> {
    // Invariant: bounds 1..60e9 with 3 significant figures are valid (low >= 1, high >= 2 * low,
    // sigfig <= 5), the only conditions under which hdrhistogram returns an error.
    let mut h = Histogram::new_with_bounds(1, 60_000_000_000, 3).expect("valid histogram bounds");
    // Anything slower than 60 s still records: the histogram grows.
    h.auto(true);
    h
}

/// What a latency was measured on.
#[derive(Debug, Clone, Copy)]
pub enum Op {
    /// Processing one event (its state accesses and timer registrations, not the timers that
    /// the following watermark fires).
    Event = 0,
    Get = 1,
    /// A single-key put or delete.
    Put = 2,
    /// A write batch (the timer service's, up to 500 entries).
    BatchWrite = 3,
}

const OPS: usize = 4;

impl Latencies {
    fn of(h: &[Histogram<u64>; OPS]) -> Latencies {
        Latencies {
            event_latency: Percentiles::of(&h[Op::Event as usize]),
            get_latency: Percentiles::of(&h[Op::Get as usize]),
            put_latency: Percentiles::of(&h[Op::Put as usize]),
            batch_write_latency: Percentiles::of(&h[Op::BatchWrite as usize]),
        }
    }
}

/// When a latency measurement started: ticks of [`Clock`].
#[derive(Debug, Clone, Copy)]
pub struct Start(u64);

/// The clock latencies are measured with. Where the kernel keeps time with the CPU's
/// time-stamp counter (x86-64 Linux, clocksource `tsc`: invariant and synchronized across
/// CPUs, as the kernel has checked), it reads that counter directly, which costs about half
/// of `Instant::now` (the same counter read through the vDSO, with a sequence lock and a
/// conversion; two reads per state access were a visible share of statebench's own CPU).
/// Ticks become nanoseconds with a ratio measured against `Instant` once per process.
/// Elsewhere it is `Instant`.
#[derive(Debug, Clone, Copy)]
enum Clock {
    /// Nanoseconds = ticks * `mult` >> 32.
    Tsc {
        mult: u64,
    },
    Monotonic {
        origin: Instant,
    },
}

#[cfg(target_arch = "x86_64")]
#[inline]
fn read_tsc() -> u64 {
    // SAFETY: RDTSC exists on every x86-64 CPU, reads a register and touches no memory.
    unsafe { core::arch::x86_64::_rdtsc() }
}

/// The time-stamp counter's nanoseconds per tick (times 2^32), when the kernel's clocksource
/// is the TSC; measured over 20 ms once per process.
fn tsc_mult() -> Option<u64> {
    static MULT: OnceLock<Option<u64>> = OnceLock::new();
    *MULT.get_or_init(|| {
        #[cfg(target_arch = "x86_64")]
        {
            let source = std::fs::read_to_string(
                "/sys/devices/system/clocksource/clocksource0/current_clocksource",
            )
            .ok()?;
            if source.trim() != "tsc" {
                return None;
            }
            // An Instant and the counter read together: of a few tries, the one read closest
            // together (a preemption between the two reads must not skew the ratio).
            let together = || {
                (0..5)
                    .map(|_| {
                        let before = read_tsc();
                        let t = Instant::now();
                        let after = read_tsc();
                        (after.saturating_sub(before), t, before / 2 + after / 2)
                    })
                    .min_by_key(|(gap, _, _)| *gap)
            };
            let (_, t0, c0) = together()?;
            std::thread::sleep(Duration::from_millis(20));
            let (_, t1, c1) = together()?;
            let ticks = c1.checked_sub(c0).filter(|t| *t > 0)?;
            let ns = (t1 - t0).as_nanos() as f64;
            let mult = ns / ticks as f64 * (1u64 << 32) as f64;
            (mult.is_finite() && mult >= 1.0 && mult < u64::MAX as f64).then_some(mult as u64)
        }
        #[cfg(not(target_arch = "x86_64"))]
        None
    })
}

impl Clock {
    fn new() -> Clock {
        match tsc_mult() {
            Some(mult) => Clock::Tsc { mult },
            None => Clock::Monotonic {
                origin: Instant::now(),
            },
        }
    }

    #[inline]
    fn start(&self) -> Start {
        match self {
            #[cfg(target_arch = "x86_64")]
            Clock::Tsc { .. } => Start(read_tsc()),
            #[cfg(not(target_arch = "x86_64"))]
            Clock::Tsc { .. } => Start(0),
            Clock::Monotonic { origin } => Start(origin.elapsed().as_nanos() as u64),
        }
    }

    /// Nanoseconds since `start`.
    #[inline]
    fn elapsed_ns(&self, start: Start) -> u64 {
        let now = self.start().0;
        let ticks = now.saturating_sub(start.0);
        match self {
            Clock::Tsc { mult } => ((u128::from(ticks) * u128::from(*mult)) >> 32) as u64,
            Clock::Monotonic { .. } => ticks,
        }
    }
}

/// Latencies kept per kind of operation before they go into its histogram together: a
/// histogram's counters are a few hundred KiB, and one record between two RocksDB calls
/// found its counter out of cache; a batch finds them warm.
const BATCH: usize = 1024;

/// One state access in this many is timed (chosen at random, so that no kind of access in an
/// event's fixed sequence is always or never timed). Two clock reads per access were about
/// 1.5 % of a run's CPU (a time-stamp counter read costs about 20 ns on a VM), more than a
/// tenth of statebench's own; a quarter of the accesses still gives percentiles to well
/// past p99.9 (hundreds of thousands per run). Events and write batches are always timed.
pub const TIME_ONE_ACCESS_IN: u32 = 4;

/// Event and state-access latencies, per interval and for the whole run.
pub struct LatencyRecorder {
    clock: Clock,
    /// xorshift state choosing which state accesses are timed (never zero).
    pick: u32,
    /// Per kind of operation: nanoseconds not yet in `interval`.
    pending: [Vec<u64>; OPS],
    interval: [Histogram<u64>; OPS],
    total: [Histogram<u64>; OPS],
}

impl Default for LatencyRecorder {
    fn default() -> Self {
        LatencyRecorder {
            clock: Clock::new(),
            pick: 0x9e37_79b9,
            pending: std::array::from_fn(|_| Vec::with_capacity(BATCH)),
            interval: std::array::from_fn(|_| new_histogram()),
            total: std::array::from_fn(|_| new_histogram()),
        }
    }
}

impl LatencyRecorder {
    /// Starts measuring an operation (one clock read).
    #[inline]
    pub fn start(&self) -> Start {
        self.clock.start()
    }

    /// Starts measuring a state access if it is one of the timed ones (see
    /// [`TIME_ONE_ACCESS_IN`]).
    #[inline]
    pub fn start_sampled(&mut self) -> Option<Start> {
        // xorshift32: a full period over the nonzero states, a few instructions.
        let mut x = self.pick;
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        self.pick = x;
        x.is_multiple_of(TIME_ONE_ACCESS_IN)
            .then(|| self.clock.start())
    }

    /// Records a sampled access started by [`LatencyRecorder::start_sampled`], if it was timed.
    #[inline]
    pub fn stop_sampled(&mut self, op: Op, start: Option<Start>) {
        if let Some(start) = start {
            self.stop(op, start);
        }
    }

    /// Records the time since `start` as a latency of `op` (one clock read).
    #[inline]
    pub fn stop(&mut self, op: Op, start: Start) {
        let ns = self.clock.elapsed_ns(start);
        self.record_ns(op, ns);
    }

    pub fn record(&mut self, op: Op, d: Duration) {
        self.record_ns(op, d.as_nanos() as u64);
    }

    #[inline]
    fn record_ns(&mut self, op: Op, ns: u64) {
        let pending = &mut self.pending[op as usize];
        pending.push(ns);
        if pending.len() >= BATCH {
            self.flush(op as usize);
        }
    }

    fn flush(&mut self, op: usize) {
        let histogram = &mut self.interval[op];
        for ns in self.pending[op].drain(..) {
            // With auto-resize on, recording cannot fail for a positive value.
            let _ = histogram.record(ns.max(1));
        }
    }

    /// Percentiles of this interval; folds the interval into the run totals and resets it.
    pub fn take_interval(&mut self) -> Latencies {
        for op in 0..OPS {
            self.flush(op);
        }
        let out = Latencies::of(&self.interval);
        for (total, interval) in self.total.iter_mut().zip(self.interval.iter_mut()) {
            let _ = total.add(&*interval);
            interval.reset();
        }
        out
    }

    /// The run's percentiles so far (what the last `take_interval` folded in).
    pub fn totals(&self) -> Latencies {
        Latencies::of(&self.total)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clock_measures_what_instant_measures() {
        let clock = Clock::new();
        // Each clock read between two Instants: the clock's span lies between the inner and
        // the outer span of those, within its ratio's error.
        let before_start = Instant::now();
        let start = clock.start();
        let after_start = Instant::now();
        std::thread::sleep(Duration::from_millis(30));
        let before_end = Instant::now();
        let ns = clock.elapsed_ns(start) as f64;
        let after_end = Instant::now();
        let inner = (before_end - after_start).as_nanos() as f64;
        let outer = (after_end - before_start).as_nanos() as f64;
        assert!(
            inner * 0.99 <= ns && ns <= outer * 1.01,
            "{ns} ns by {clock:?}, between {inner} and {outer} by Instant"
        );
    }

    #[test]
    fn recorded_latencies_land_in_the_interval_and_then_the_totals() {
        let mut r = LatencyRecorder::default();
        for us in [1u64, 2, 3, 100] {
            r.record(Op::Get, Duration::from_micros(us));
        }
        let start = r.start();
        r.stop(Op::Put, start);
        let interval = r.take_interval();
        assert_eq!(interval.get_latency.count, 4);
        assert_eq!(interval.put_latency.count, 1);
        // 3 significant figures: 100 µs reads back within 0.1 %.
        assert!((interval.get_latency.max_us - 100.0).abs() < 0.1);
        assert_eq!(r.take_interval().get_latency.count, 0);
        assert_eq!(r.totals().get_latency.count, 4);
        // More than a batch: every latency is counted, the batch flushed and the rest.
        for _ in 0..BATCH + 10 {
            r.record(Op::Event, Duration::from_micros(7));
        }
        let interval = r.take_interval();
        assert_eq!(interval.event_latency.count, BATCH as u64 + 10);
        assert!((interval.event_latency.p50_us - 7.0).abs() < 0.01);
    }

    #[test]
    fn about_one_access_in_four_is_timed_and_never_in_a_fixed_pattern() {
        let mut r = LatencyRecorder::default();
        // Per position in a repeating sequence of 8 accesses (an event's gets and puts).
        let mut timed = [0u32; 8];
        let rounds = 40_000;
        for _ in 0..rounds {
            for t in &mut timed {
                if let Some(start) = r.start_sampled() {
                    *t += 1;
                    r.stop_sampled(Op::Get, Some(start));
                }
            }
        }
        let share = |n: u32| f64::from(n) / f64::from(rounds);
        for (position, n) in timed.iter().enumerate() {
            let s = share(*n);
            assert!(
                (0.23..0.27).contains(&s),
                "position {position}: {s:.3} timed"
            );
        }
        let all: u32 = timed.iter().sum();
        assert_eq!(r.take_interval().get_latency.count, u64::from(all));
    }
}
