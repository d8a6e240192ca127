//! What a bench case measures: every metric, read from a run's summary, with its unit, its
//! kind (a counter, or a timing relative to the reference case), which way is better and how
//! much run-to-run noise moves it.

use crate::summary::Summary;

/// Counters gate by default; timings (relative to the reference case) only when asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Counter,
    Timing,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Better {
    Lower,
    Higher,
}

/// A measured value of a case and how far it may move the wrong way before it is a regression:
/// beyond `--max-regression` and beyond `noise` (relative: what run-to-run variation moves it
/// by here, flush timing for the flush-driven counters) and `slack` (absolute: near-zero
/// baselines).
pub struct Metric {
    pub name: &'static str,
    pub unit: &'static str,
    pub kind: Kind,
    pub better: Better,
    pub noise: f64,
    pub slack: f64,
    pub(super) read: fn(&Summary) -> f64,
}

pub const METRICS: &[Metric] = &[
    Metric {
        name: "rocksdb ops / event",
        unit: "ops",
        kind: Kind::Counter,
        better: Better::Lower,
        noise: 0.0,
        slack: 0.0,
        read: |s| s.rocksdb_ops_per_event,
    },
    Metric {
        name: "gets / event",
        unit: "ops",
        kind: Kind::Counter,
        better: Better::Lower,
        noise: 0.0,
        slack: 0.0,
        read: |s| per_event(s.gets as f64, s),
    },
    Metric {
        name: "puts / event",
        unit: "ops",
        kind: Kind::Counter,
        better: Better::Lower,
        noise: 0.0,
        slack: 0.0,
        read: |s| per_event(s.puts as f64, s),
    },
    Metric {
        name: "deletes / event",
        unit: "ops",
        kind: Kind::Counter,
        better: Better::Lower,
        noise: 0.0,
        slack: 0.0,
        read: |s| per_event(s.deletes as f64, s),
    },
    Metric {
        name: "merges / event",
        unit: "ops",
        kind: Kind::Counter,
        better: Better::Lower,
        noise: 0.0,
        slack: 0.0,
        read: |s| per_event(s.merges as f64, s),
    },
    Metric {
        name: "iterator steps / event",
        unit: "ops",
        kind: Kind::Counter,
        better: Better::Lower,
        noise: 0.0,
        slack: 0.0,
        read: |s| per_event((s.iterator_seeks + s.iterator_nexts) as f64, s),
    },
    Metric {
        name: "bytes written / event",
        unit: "bytes",
        kind: Kind::Counter,
        better: Better::Lower,
        noise: 0.0,
        slack: 0.0,
        read: |s| per_event(s.user_bytes_written as f64, s),
    },
    Metric {
        name: "result error (keys)",
        unit: "keys",
        kind: Kind::Counter,
        better: Better::Lower,
        noise: 0.0,
        slack: 0.0,
        read: |s| {
            let e = &s.result_error;
            (e.over + e.under + e.missing) as f64
        },
    },
    Metric {
        name: "write amplification",
        unit: "x",
        kind: Kind::Counter,
        better: Better::Lower,
        noise: 0.5,
        slack: 0.2,
        read: |s| s.write_amplification,
    },
    Metric {
        name: "flushes",
        unit: "flushes",
        kind: Kind::Counter,
        better: Better::Lower,
        noise: 0.5,
        slack: 5.0,
        read: |s| s.flushes as f64,
    },
    Metric {
        name: "write stalls",
        unit: "ms",
        kind: Kind::Counter,
        better: Better::Lower,
        noise: 1.5,
        slack: 500.0,
        read: |s| s.stall_micros as f64 / 1000.0,
    },
    Metric {
        name: "bytes read / event",
        unit: "bytes",
        kind: Kind::Counter,
        better: Better::Lower,
        noise: 2.0,
        slack: 64.0,
        read: |s| per_event(s.bytes_read_per_lookup * s.lookups as f64, s),
    },
    Metric {
        name: "bytes read / lookup",
        unit: "bytes",
        kind: Kind::Counter,
        better: Better::Lower,
        noise: 1.0,
        slack: 64.0,
        read: |s| s.bytes_read_per_lookup,
    },
    Metric {
        name: "filter blocks read / lookup",
        unit: "blocks",
        kind: Kind::Counter,
        better: Better::Lower,
        noise: 1.0,
        slack: 0.01,
        read: |s| s.filter_block_reads_per_lookup,
    },
    Metric {
        name: "filter bytes read / lookup",
        unit: "bytes",
        kind: Kind::Counter,
        better: Better::Lower,
        noise: 1.0,
        slack: 256.0,
        read: |s| s.filter_bytes_read_per_lookup,
    },
    Metric {
        name: "events/s vs reference",
        unit: "ratio",
        kind: Kind::Timing,
        better: Better::Higher,
        noise: 0.15,
        slack: 0.0,
        // Filled in relative to the reference case (`Results::relate`).
        read: |s| s.events_per_sec,
    },
    Metric {
        name: "p99 event latency vs reference",
        unit: "ratio",
        kind: Kind::Timing,
        better: Better::Lower,
        noise: 0.3,
        slack: 0.0,
        read: |s| s.p99_event_latency_us,
    },
];

fn per_event(v: f64, s: &Summary) -> f64 {
    if s.records() == 0 {
        0.0
    } else {
        v / s.records() as f64
    }
}
