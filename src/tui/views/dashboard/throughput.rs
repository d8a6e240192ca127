//! The throughput panel: the rate now and its trend, the chart, and the live changes marked
//! on its time axis with their legend.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Style, Stylize};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Sparkline};

use super::super::{latest, panel, rate, trend};
use crate::tui::app::{App, MarkKind, Side};

/// One side's rate: its last running interval, and its trend.
fn rate_spans(label: &str, side: &Side) -> Vec<Span<'static>> {
    let s = latest(side);
    vec![
        Span::from(format!("{label}{} ev/s ", rate(s.events_per_sec))).bold(),
        Span::from(trend(&side.history, |s| s.events_per_sec)),
    ]
}

pub(super) fn render_throughput(app: &App, frame: &mut Frame, area: Rect) {
    let side = app.focused();
    let block = panel(&format!("Throughput — {}", app.side_label(app.focus)));
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let [text, chart, marks, legend] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Min(1),
        Constraint::Length(1),
        Constraint::Length(1),
    ])
    .areas(inner);
    // With A/B both sides' rates, each labelled (their averages are in the A/B view); the
    // chart is the focused side's.
    let line = match app.b.as_ref() {
        Some(b) => [rate_spans("A ", &app.a), rate_spans("  B ", b)].concat(),
        None => {
            let mut spans = rate_spans("", side);
            spans.push(
                Span::from(format!(
                    "  run avg {} ev/s",
                    rate(side.running_throughput())
                ))
                .dark_gray(),
            );
            spans
        }
    };
    frame.render_widget(Paragraph::new(Line::from(line)), text);
    let width = chart.width as usize;
    let start = side.history.len().saturating_sub(width);
    let data: Vec<u64> = side
        .history
        .iter()
        .skip(start)
        .map(|s| s.events_per_sec.max(0.0) as u64)
        .collect();
    frame.render_widget(
        Sparkline::default()
            .data(&data)
            .style(Style::default().fg(Color::Cyan)),
        chart,
    );
    // Changes (all A's) on the time axis: a numbered mark under the sample where each took
    // effect, and the legend below.
    if app.focus != crate::tui::app::Target::A {
        return;
    }
    let (row, legend_text) = mark_row(app, side, start, width);
    frame.render_widget(Paragraph::new(Line::from(row).magenta()), marks);
    frame.render_widget(Paragraph::new(Line::from(legend_text).magenta()), legend);
}

/// The marks row (1-9 under their samples, `+` beyond) and its legend, both `width` wide.
fn mark_row(app: &App, side: &Side, start: usize, width: usize) -> (String, String) {
    let mut row = vec![' '; width];
    let mut legend = Vec::new();
    let first_visible = side.history.get(start).map_or(f64::MAX, |s| s.elapsed_secs);
    let mut scrolled = 0;
    for mark in &app.marks {
        // A mark before the first visible sample has scrolled out of view.
        if mark.at_secs < first_visible {
            scrolled += 1;
            continue;
        }
        let column = side
            .history
            .iter()
            .skip(start)
            .position(|s| s.elapsed_secs >= mark.at_secs);
        if let Some(c) = column.filter(|c| *c < width) {
            let n = legend.len() + 1;
            row[c] = char::from_digit(n as u32, 10)
                .filter(|_| n < 10)
                .unwrap_or('+');
            legend.push((
                format!("{}:{}", row[c], mark.label),
                mark.kind == MarkKind::Restart,
            ));
        }
    }
    let scrolled = if scrolled > 0 {
        format!("({scrolled} earlier out of view) ")
    } else {
        String::new()
    };
    (
        row.into_iter().collect(),
        legend_text(&scrolled, &legend, width),
    )
}

/// The legend in `width` columns: every restart and failure named (a break in the rate is read
/// by them), live changes named in order while they fit and counted ("+2 more") beyond.
fn legend_text(scrolled: &str, entries: &[(String, bool)], width: usize) -> String {
    let len = |s: &str| s.chars().count();
    let all: usize = len(scrolled) + entries.iter().map(|(e, _)| len(e) + 1).sum::<usize>();
    let mut named: Vec<bool> = entries.iter().map(|(_, restart)| *restart).collect();
    if all <= width {
        named.fill(true);
    } else {
        // Restarts first, then changes in order, each only if "+N more" for the rest still fits.
        let mut used: usize = len(scrolled)
            + entries
                .iter()
                .filter(|(_, restart)| *restart)
                .map(|(e, _)| len(e) + 1)
                .sum::<usize>();
        let mut rest = named.iter().filter(|n| !**n).count();
        for (i, (entry, restart)) in entries.iter().enumerate() {
            if *restart {
                continue;
            }
            let after = rest - 1;
            let more = if after > 0 {
                len(&format!("+{after} more"))
            } else {
                0
            };
            if used + len(entry) + 1 + more > width {
                break;
            }
            named[i] = true;
            used += len(entry) + 1;
            rest = after;
        }
    }
    let mut text = scrolled.to_string();
    for ((entry, _), named) in entries.iter().zip(&named) {
        if *named {
            text.push_str(entry);
            text.push(' ');
        }
    }
    let unnamed = named.iter().filter(|n| !**n).count();
    if unnamed > 0 {
        text.push_str(&format!("+{unnamed} more"));
    }
    text.trim_end().to_string()
}
