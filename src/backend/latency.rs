//! Latency histograms (HdrHistogram, nanoseconds) for events and state access, per sample
//! interval and for the whole run.

use std::time::Duration;

use hdrhistogram::Histogram;
use serde::Serialize;

/// Latency percentiles in microseconds.
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq, serde::Deserialize)]
#[serde(default)]
pub struct Percentiles {
    pub count: u64,
    pub p50_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub max_us: f64,
}

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

/// Percentiles per kind of operation.
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq, serde::Deserialize)]
#[serde(default)]
pub struct Latencies {
    pub event_latency: Percentiles,
    pub get_latency: Percentiles,
    pub put_latency: Percentiles,
    pub batch_write_latency: Percentiles,
}

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

/// Event and state-access latencies, per interval and for the whole run.
pub struct LatencyRecorder {
    interval: [Histogram<u64>; OPS],
    total: [Histogram<u64>; OPS],
}

impl Default for LatencyRecorder {
    fn default() -> Self {
        LatencyRecorder {
            interval: std::array::from_fn(|_| new_histogram()),
            total: std::array::from_fn(|_| new_histogram()),
        }
    }
}

impl LatencyRecorder {
    pub fn record(&mut self, op: Op, d: Duration) {
        let ns = (d.as_nanos() as u64).max(1);
        // With auto-resize on, recording cannot fail for a positive value.
        let _ = self.interval[op as usize].record(ns);
    }

    /// Percentiles of this interval; folds the interval into the run totals and resets it.
    pub fn take_interval(&mut self) -> Latencies {
        let out = Latencies::of(&self.interval);
        for (total, interval) in self.total.iter_mut().zip(self.interval.iter_mut()) {
            let _ = total.add(&*interval);
            interval.reset();
        }
        out
    }

    pub fn totals(&self) -> Latencies {
        Latencies::of(&self.total)
    }
}
