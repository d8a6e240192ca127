//! A/B: the same workload under two profiles, key metrics side by side with the ratio.

use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::{Color, Stylize};
use ratatui::text::Line;
use ratatui::widgets::{Paragraph, Row, Table};

use super::{bytes, micros, panel, percent, rate};
use crate::engine::{MetricsSnapshot, RunState};
use crate::tui::app::{App, Side};

/// One metric: how to read it from a side, how to show it, and whether lower is better.
struct Metric {
    name: &'static str,
    value: fn(&Side) -> Option<f64>,
    show: fn(f64) -> String,
    lower_is_better: bool,
}

/// Mean of `f` over the snapshots where the side was running.
fn mean(side: &Side, f: impl Fn(&MetricsSnapshot) -> Option<f64>) -> Option<f64> {
    let values: Vec<f64> = side
        .history
        .iter()
        .filter(|s| s.state == RunState::Running && s.events_in_interval > 0)
        .filter_map(f)
        .collect();
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

const METRICS: &[Metric] = &[
    Metric {
        name: "events/s (own slices)",
        value: |s| Some(s.running_throughput()),
        show: rate,
        lower_is_better: false,
    },
    Metric {
        name: "event p99",
        value: |s| mean(s, |m| Some(m.latency.event_latency.p99_us)),
        show: micros,
        lower_is_better: true,
    },
    Metric {
        name: "get p99",
        value: |s| mean(s, |m| Some(m.latency.get_latency.p99_us)),
        show: micros,
        lower_is_better: true,
    },
    Metric {
        name: "put p99",
        value: |s| mean(s, |m| Some(m.latency.put_latency.p99_us)),
        show: micros,
        lower_is_better: true,
    },
    Metric {
        name: "stall share",
        value: |s| mean(s, |m| Some(m.rocksdb.stall.share)),
        show: |v| format!("{:.2}%", v * 100.0),
        lower_is_better: true,
    },
    Metric {
        name: "filter cache hit",
        value: |s| mean(s, |m| m.rocksdb.cache.filter.rate),
        show: |v| percent(Some(v)),
        lower_is_better: false,
    },
    Metric {
        name: "data cache hit",
        value: |s| mean(s, |m| m.rocksdb.cache.data.rate),
        show: |v| percent(Some(v)),
        lower_is_better: false,
    },
    Metric {
        name: "filter bytes/lookup",
        value: |s| mean(s, |m| Some(m.rocksdb.lookups.filter_bytes_read_per_lookup)),
        show: |v| bytes(v as u64),
        lower_is_better: true,
    },
    Metric {
        name: "L0 files (mean)",
        value: |s| mean(s, |m| Some(m.rocksdb.lsm.l0_files as f64)),
        show: |v| format!("{v:.1}"),
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
        lower_is_better: true,
    },
    Metric {
        name: "write amplification",
        value: |s| s.last().map(|m| m.rocksdb.io.write_amplification),
        show: |v| format!("{v:.2}"),
        lower_is_better: true,
    },
    Metric {
        name: "events done",
        value: |s| s.last().map(|m| m.events as f64),
        show: |v| format!("{v:.0}"),
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
    let rows: Vec<Row> = METRICS
        .iter()
        .map(|m| {
            let (va, vb) = ((m.value)(a), (m.value)(b));
            let show = |v: Option<f64>| v.map_or("-".to_string(), m.show);
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
                        format!("{r:.2}x"),
                        if better {
                            Color::Green
                        } else if worse {
                            Color::Red
                        } else {
                            Color::Reset
                        },
                    )
                }
                _ => ("-".to_string(), Color::Reset),
            };
            Row::new(vec![m.name.to_string(), show(va), show(vb), ratio]).fg(color)
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
    frame.render_widget(table, area);
}
