//! Latency histograms (HdrHistogram, nanoseconds) for events and state access, per sample
//! interval and for the whole run.

use std::time::Duration;

use hdrhistogram::Histogram;
use serde::Serialize;

/// Latency percentiles in microseconds.
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq)]
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

/// Event and state-access latencies, per interval and for the whole run.
pub struct LatencyRecorder {
    pub event: Histogram<u64>,
    pub get: Histogram<u64>,
    pub put: Histogram<u64>,
    total_event: Histogram<u64>,
    total_get: Histogram<u64>,
    total_put: Histogram<u64>,
}

impl Default for LatencyRecorder {
    fn default() -> Self {
        LatencyRecorder {
            event: new_histogram(),
            get: new_histogram(),
            put: new_histogram(),
            total_event: new_histogram(),
            total_get: new_histogram(),
            total_put: new_histogram(),
        }
    }
}

fn record(h: &mut Histogram<u64>, d: Duration) {
    let ns = (d.as_nanos() as u64).max(1);
    // With auto-resize on, recording cannot fail for a positive value.
    let _ = h.record(ns);
}

impl LatencyRecorder {
    pub fn record_event(&mut self, d: Duration) {
        record(&mut self.event, d);
    }
    pub fn record_get(&mut self, d: Duration) {
        record(&mut self.get, d);
    }
    pub fn record_put(&mut self, d: Duration) {
        record(&mut self.put, d);
    }

    /// Percentiles of this interval; folds the interval into the run totals and resets it.
    pub fn take_interval(&mut self) -> (Percentiles, Percentiles, Percentiles) {
        let out = (
            Percentiles::of(&self.event),
            Percentiles::of(&self.get),
            Percentiles::of(&self.put),
        );
        for (total, interval) in [
            (&mut self.total_event, &mut self.event),
            (&mut self.total_get, &mut self.get),
            (&mut self.total_put, &mut self.put),
        ] {
            let _ = total.add(&*interval);
            interval.reset();
        }
        out
    }

    pub fn totals(&self) -> (Percentiles, Percentiles, Percentiles) {
        (
            Percentiles::of(&self.total_event),
            Percentiles::of(&self.total_get),
            Percentiles::of(&self.total_put),
        )
    }
}
