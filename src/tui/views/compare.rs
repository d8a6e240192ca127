//! A/B: the same workload under two profiles, key metrics side by side with the ratio.

use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::{Color, Stylize};
use ratatui::text::Line;
use ratatui::widgets::{Paragraph, Row, Table};

use super::{bytes, micros, panel, percent, rate};
use crate::model::snapshot::{MetricsSnapshot, RunState};
use crate::tui::app::App;

/// One metric: how to read it from a side's snapshots in the compared range, how to show it,
/// and whether lower is better.
struct Metric {
    name: &'static str,
    value: fn(&[MetricsSnapshot]) -> Option<f64>,
    show: fn(f64) -> String,
    lower_is_better: bool,
    /// A value per slice (a rate or a mean over intervals): each slice is a repeat.
    per_slice: bool,
}

/// A side's slices in the compared range: runs of consecutive running intervals.
fn slices(snapshots: &[MetricsSnapshot]) -> Vec<&[MetricsSnapshot]> {
    snapshots
        .split(|s| s.state != RunState::Running)
        .filter(|s| !s.is_empty())
        .collect()
}

/// Median, min and max of `values` (not empty).
fn spread(values: &[f64]) -> (f64, f64, f64) {
    crate::util::stats::median_min_max(values).unwrap_or((0.0, 0.0, 0.0))
}

/// Mean of `f` over the snapshots where the side was running.
fn mean(snapshots: &[MetricsSnapshot], f: impl Fn(&MetricsSnapshot) -> Option<f64>) -> Option<f64> {
    let values: Vec<f64> = snapshots
        .iter()
        .filter(|s| s.state == RunState::Running && s.events_in_interval > 0)
        .filter_map(f)
        .collect();
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

/// Events per second over the running snapshots (pauses excluded).
fn throughput(snapshots: &[MetricsSnapshot]) -> Option<f64> {
    let (events, secs) = snapshots
        .iter()
        .filter(|s| s.state == RunState::Running)
        .fold((0u64, 0.0f64), |(e, t), s| {
            (e + s.events_in_interval, t + s.interval_secs)
        });
    (secs > 0.0).then(|| events as f64 / secs)
}

const METRICS: &[Metric] = &[
    Metric {
        name: "events/s (own slices)",
        value: throughput,
        show: rate,
        per_slice: true,
        lower_is_better: false,
    },
    Metric {
        name: "event p99",
        value: |s| mean(s, |m| Some(m.latency.event_latency.p99_us)),
        show: micros,
        per_slice: true,
        lower_is_better: true,
    },
    Metric {
        name: "get p99",
        value: |s| mean(s, |m| Some(m.latency.get_latency.p99_us)),
        show: micros,
        per_slice: true,
        lower_is_better: true,
    },
    Metric {
        name: "put p99",
        value: |s| mean(s, |m| Some(m.latency.put_latency.p99_us)),
        show: micros,
        per_slice: true,
        lower_is_better: true,
    },
    Metric {
        name: "stall share",
        value: |s| mean(s, |m| Some(m.rocksdb.stall.share)),
        show: |v| format!("{:.2}%", v * 100.0),
        per_slice: true,
        lower_is_better: true,
    },
    Metric {
        name: "filter cache hit",
        value: |s| mean(s, |m| m.rocksdb.cache.filter.rate),
        show: |v| percent(Some(v)),
        per_slice: true,
        lower_is_better: false,
    },
    Metric {
        name: "data cache hit",
        value: |s| mean(s, |m| m.rocksdb.cache.data.rate),
        show: |v| percent(Some(v)),
        per_slice: true,
        lower_is_better: false,
    },
    Metric {
        name: "filter bytes/lookup",
        value: |s| mean(s, |m| Some(m.rocksdb.lookups.filter_bytes_read_per_lookup)),
        show: |v| bytes(v as u64),
        per_slice: true,
        lower_is_better: true,
    },
    Metric {
        name: "L0 files (mean)",
        value: |s| mean(s, |m| Some(m.rocksdb.lsm.l0_files as f64)),
        show: |v| format!("{v:.1}"),
        per_slice: true,
        lower_is_better: true,
    },
    Metric {
        name: "flushes / 10K events",
        value: |s| {
            s.last()
                .filter(|m| m.records_processed > 0)
                .map(|m| m.rocksdb.lsm.flushes as f64 * 10_000.0 / m.records_processed as f64)
        },
        show: |v| format!("{v:.2}"),
        per_slice: false,
        lower_is_better: true,
    },
    Metric {
        name: "write amplification",
        value: |s| s.last().map(|m| m.rocksdb.io.write_amplification),
        show: |v| format!("{v:.2}"),
        per_slice: false,
        lower_is_better: true,
    },
    Metric {
        name: "compared at event",
        value: |s| s.last().map(|m| m.events as f64),
        show: |v| format!("{v:.0}"),
        per_slice: false,
        lower_is_better: false,
    },
];

pub fn render(app: &App, frame: &mut Frame, area: Rect) {
    let Some(b) = &app.b else {
        let lines = vec![
            Line::from("No second profile."),
            Line::from(""),
            Line::from("Start with --compare PROFILE to run the same workload under two profiles,"),
            Line::from("alternating time slices, and see the key metrics side by side here."),
        ];
        frame.render_widget(Paragraph::new(lines).block(panel("A/B compare")), area);
        return;
    };
    let a = &app.a;
    let Some(range) = app.common_range() else {
        return;
    };
    let (slices_a, slices_b) = (slices(&range.a), slices(&range.b));
    let rows: Vec<Row> = METRICS
        .iter()
        .map(|m| {
            // Per-interval metrics: each slice is a repeat; the median over the slices, and
            // their spread. Position metrics (flushes per event, write amplification) have one
            // value per side.
            let per_slice = |whole: &[MetricsSnapshot], slices: &[&[MetricsSnapshot]]| {
                let values: Vec<f64> = slices.iter().filter_map(|s| (m.value)(s)).collect();
                if m.per_slice && values.len() >= 2 {
                    let (median, lo, hi) = spread(&values);
                    (Some(median), Some((lo, hi)))
                } else {
                    ((m.value)(whole), None)
                }
            };
            let (va, ra) = per_slice(&range.a, &slices_a);
            let (vb, rb) = per_slice(&range.b, &slices_b);
            let show = |v: Option<f64>, r: Option<(f64, f64)>| match (v, r) {
                (Some(v), Some((lo, hi))) if v != 0.0 => {
                    format!("{} ±{:.0}%", (m.show)(v), (hi - lo) / 2.0 / v.abs() * 100.0)
                }
                (Some(v), _) => (m.show)(v),
                (None, _) => "-".to_string(),
            };
            // Real only when the slices' ranges do not overlap.
            let apart = match (ra, rb) {
                (Some((alo, ahi)), Some((blo, bhi))) => ahi < blo || bhi < alo,
                _ => true,
            };
            let (ratio, color) = match (va, vb) {
                (Some(x), Some(y)) if x > 0.0 => {
                    let r = y / x;
                    let better = if m.lower_is_better {
                        r < 0.95
                    } else {
                        r > 1.05
                    };
                    let worse = if m.lower_is_better {
                        r > 1.05
                    } else {
                        r < 0.95
                    };
                    (
                        if apart {
                            format!("{r:.2}x")
                        } else {
                            format!("{r:.2}x ≈")
                        },
                        if better && apart {
                            Color::Green
                        } else if worse && apart {
                            Color::Red
                        } else {
                            Color::Reset
                        },
                    )
                }
                _ => ("-".to_string(), Color::Reset),
            };
            Row::new(vec![m.name.to_string(), show(va, ra), show(vb, rb), ratio]).fg(color)
        })
        .collect();
    let table = Table::new(
        rows,
        [
            Constraint::Length(22),
            Constraint::Length(24),
            Constraint::Length(24),
            Constraint::Min(6),
        ],
    )
    .header(
        Row::new(vec![
            "metric".to_string(),
            format!("A {}", a.profile.name),
            format!("B {}", b.profile.name),
            "B/A".to_string(),
        ])
        .dark_gray(),
    )
    .block(panel(&if app.compare_note.is_empty() {
        "A/B compare".to_string()
    } else {
        format!("A/B compare — {}", app.compare_note)
    }));
    // Where in the workload the table compares the sides: the events both have read.
    let position = if range.read.0 == range.read.1 {
        format!(
            " events {}–{} on both sides (each has read {})",
            range.from, range.to, range.read.0
        )
    } else {
        format!(
            " events {}–{} on both sides (A has read {}, B {}: the rest waits for the other)",
            range.from, range.to, range.read.0, range.read.1
        )
    };
    let [head, body] =
        ratatui::layout::Layout::vertical([Constraint::Length(1), Constraint::Min(0)]).areas(area);
    frame.render_widget(Paragraph::new(Line::from(position).dark_gray()), head);
    frame.render_widget(table, body);
}
