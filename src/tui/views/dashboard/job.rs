//! The job's panels: event latency (and the state gets and puts inside it) and the pipeline
//! (watermark lag, timers, partitions, the oracle's comparison).

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Stylize;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::super::{lag, latest, micros, panel, short, trend};
use crate::tui::app::{App, Side};

pub(super) fn render_latency(app: &App, side: &Side, frame: &mut Frame, area: Rect) {
    if app.paused {
        // Nothing ran in a paused interval: no latency to show, not a 0.0µs one.
        let text = Line::from("n/a while paused").dark_gray();
        frame.render_widget(
            Paragraph::new(text).block(panel("Latency (this interval)")),
            area,
        );
        return;
    }
    let s = latest(side);
    let l = &s.latency;
    let lines = vec![
        Line::from(vec![
            Span::from("event "),
            Span::from(format!(
                "p50 {} p99 {} p999 {}",
                micros(l.event_latency.p50_us),
                micros(l.event_latency.p99_us),
                micros(l.event_latency.p999_us)
            ))
            .bold(),
            Span::from(format!(
                " {}",
                trend(&side.history, |s| s.latency.event_latency.p99_us)
            )),
        ]),
        Line::from(format!(
            "get   p50 {} p99 {} p999 {}",
            micros(l.get_latency.p50_us),
            micros(l.get_latency.p99_us),
            micros(l.get_latency.p999_us)
        )),
        Line::from(format!(
            "put   p99 {} p999 {} max {}",
            micros(l.put_latency.p99_us),
            micros(l.put_latency.p999_us),
            micros(l.put_latency.max_us)
        )),
    ];
    frame.render_widget(
        Paragraph::new(lines).block(panel("Latency (this interval)")),
        area,
    );
}

pub(super) fn render_pipeline(side: &Side, frame: &mut Frame, area: Rect) {
    let s = latest(side);
    let p = &s.pipeline;
    let wall_lag = if p.watermark == i64::MIN {
        i64::MAX
    } else {
        p.processing_time.saturating_sub(p.watermark)
    };
    let event_lag = if p.watermark == i64::MIN {
        i64::MAX
    } else {
        p.watermark_lag_ms
    };
    // The newest comparison of this segment (a restart starts over with empty state).
    let result = match p
        .result_error
        .or_else(|| side.segment().rev().find_map(|s| s.pipeline.result_error))
    {
        None => Span::from("not compared yet").dark_gray(),
        Some(e) if e.is_exact() => {
            Span::from(format!("exact ({} counts)", short(e.compared))).green()
        }
        Some(e) => Span::from(format!(
            "{} over, {} under, {} missing (max {})",
            e.over, e.under, e.missing, e.max_abs
        ))
        .red()
        .bold(),
    };
    let lags: Vec<String> = p.partition_lag.iter().map(|l| short(*l)).collect();
    let lines = vec![
        Line::from(format!(
            "wm lag: events {}, clock {}",
            lag(event_lag),
            lag(wall_lag)
        )),
        Line::from(format!(
            "timers fired {} of {}, late {}",
            short(p.timers_fired),
            short(p.timers_registered),
            short(p.late_events)
        )),
        Line::from(format!(
            "lag {} idle p{} r{}",
            if lags.len() <= 6 {
                lags.join(" ")
            } else {
                let max = p.partition_lag.iter().max().copied().unwrap_or(0);
                format!("max {} of {} parts", short(max), lags.len())
            },
            p.idle_partitions,
            p.idle_readers
        )),
        Line::from(vec![Span::from("oracle: "), result]),
    ];
    frame.render_widget(Paragraph::new(lines).block(panel("Pipeline")), area);
}
