//! Rendering: each view draws from `&App` only.

pub mod advisor;
pub mod compare;
pub mod cpu;
pub mod dashboard;
pub mod help;
pub mod lsm;
pub mod profile;

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style, Stylize};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};

use super::app::{App, Side, View};
use crate::config::units::human_bytes;
use crate::model::snapshot::{MetricsSnapshot, RunState};

/// The smallest terminal the full layout is designed for.
pub const MIN_WIDTH: u16 = 80;
pub const MIN_HEIGHT: u16 = 24;

pub fn render(app: &App, frame: &mut Frame) {
    let area = frame.area();
    let [status, tabs, body, message] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(1),
        Constraint::Min(0),
        Constraint::Length(1),
    ])
    .areas(area);
    frame.render_widget(Paragraph::new(status_line(app)), status);
    frame.render_widget(Paragraph::new(tab_line(app)), tabs);
    frame.render_widget(
        Paragraph::new(Line::from(app.status.clone()).fg(Color::Yellow)),
        message,
    );
    if area.width < MIN_WIDTH || area.height < MIN_HEIGHT {
        compact(app, frame, body);
    } else {
        match app.view {
            View::Dashboard => dashboard::render(app, frame, body),
            View::Lsm => lsm::render(app, frame, body),
            View::Profile => profile::render(app, frame, body),
            View::Compare => compare::render(app, frame, body),
            View::Advisor => advisor::render(app, frame, body),
            View::Cpu => cpu::render(app, frame, body),
        }
    }
    if app.help {
        help::render(frame, area);
    }
}

fn status_line(app: &App) -> Line<'static> {
    let last = app.focused().last();
    let running = |side: Option<&Side>| {
        side.and_then(|s| s.last())
            .is_some_and(|s| s.state != RunState::Finished)
    };
    if !app.paused && app.b.is_some() && (running(Some(&app.a)) || running(app.b.as_ref())) {
        return status_with(
            app,
            Span::from(format!(" RUNNING {} ", crate::tui::side_name(app.active)))
                .black()
                .on_green(),
        );
    }
    let state = match (app.paused, last.map(|s| s.state)) {
        (true, _) | (_, Some(RunState::Paused)) => Span::from(" PAUSED ").black().on_yellow(),
        (_, Some(RunState::Finished)) => Span::from(" FINISHED ").black().on_blue(),
        (_, Some(RunState::Running)) => Span::from(" RUNNING ").black().on_green(),
        (_, None) => Span::from(" STARTING ").black().on_gray(),
    };
    status_with(app, state)
}

fn status_with(app: &App, state: Span<'static>) -> Line<'static> {
    let side = app.focused();
    let last = side.last();
    let phase = last
        .map(|s| s.pipeline.phase)
        .filter(|p| *p != crate::model::snapshot::Phase::Streaming)
        .map(|p| format!(" [{}]", p.name()))
        .unwrap_or_default();
    Line::from(vec![
        state,
        Span::from(format!(
            " {} │ {}{} │ {} │ {}{} events{} ",
            app.workload.name,
            app.a.profile.name,
            app.b
                .as_ref()
                .map(|b| format!(" vs {}", b.profile.name))
                .unwrap_or_default(),
            clock(side.now_secs()),
            if app.b.is_some() {
                format!("{} ", crate::tui::side_name(app.focus))
            } else {
                String::new()
            },
            thousands(last.map_or(0, |s| s.events)),
            phase
        )),
    ])
}

fn tab_line(app: &App) -> Line<'static> {
    let mut spans = vec![Span::from(" ")];
    for (i, view) in View::ALL.iter().enumerate() {
        let label = format!(" {} {} ", i + 1, view.title());
        spans.push(if *view == app.view {
            Span::from(label).add_modifier(Modifier::REVERSED)
        } else {
            Span::from(label)
        });
    }
    let keys = if app.b.is_some() {
        "  b A/B side  ? keys  q quit"
    } else {
        "  ? keys  q quit"
    };
    spans.push(Span::from(keys).dark_gray());
    Line::from(spans)
}

/// Below 80x24: the numbers that matter, one per line.
fn compact(app: &App, frame: &mut Frame, area: Rect) {
    let s = latest(app.focused());
    let lines = vec![
        Line::from(format!("events/s {}", rate(s.events_per_sec))),
        Line::from(format!(
            "event p99 {}  put p99 {}",
            micros(s.latency.event_latency.p99_us),
            micros(s.latency.put_latency.p99_us)
        )),
        Line::from(format!("stall {:.1}%", s.rocksdb.stall.share * 100.0)),
        Line::from(format!(
            "L0 {}  wa {:.2}",
            s.rocksdb.lsm.l0_files, s.rocksdb.io.write_amplification
        )),
        Line::from(format!(
            "watermark lag {}",
            lag(s.pipeline.watermark_lag_ms)
        )),
        Line::from(format!("(terminal below {MIN_WIDTH}x{MIN_HEIGHT}: compact view)").dark_gray()),
    ];
    frame.render_widget(Paragraph::new(lines), area);
}

/// A bordered panel with a title.
pub fn panel(title: &str) -> Block<'static> {
    Block::default()
        .borders(Borders::ALL)
        .border_style(Style::default().fg(Color::DarkGray))
        .title(Span::from(format!(" {title} ")).bold())
}

/// A text gauge: `████░░░░` for `ratio` (0..1) in `width` cells.
pub fn bar(ratio: f64, width: usize) -> String {
    let ratio = if ratio.is_finite() {
        ratio.clamp(0.0, 1.0)
    } else {
        0.0
    };
    let full = (ratio * width as f64).round() as usize;
    format!("{}{}", "█".repeat(full), "░".repeat(width - full))
}

/// Colour for a ratio where high is good.
pub fn good_high(ratio: f64) -> Color {
    if ratio >= 0.95 {
        Color::Green
    } else if ratio >= 0.8 {
        Color::Yellow
    } else {
        Color::Red
    }
}

/// Colour for a fill level where full is bad.
pub fn bad_high(ratio: f64) -> Color {
    if ratio >= 0.9 {
        Color::Red
    } else if ratio >= 0.6 {
        Color::Yellow
    } else {
        Color::Green
    }
}

/// ↑ ↓ → : the newest value against the mean of the few before it.
pub fn trend(
    history: &std::collections::VecDeque<MetricsSnapshot>,
    f: impl Fn(&MetricsSnapshot) -> f64,
) -> &'static str {
    let n = history.len();
    if n < 3 {
        return " ";
    }
    let now = f(&history[n - 1]);
    let before: Vec<f64> = history.iter().rev().skip(1).take(5).map(&f).collect();
    let mean = before.iter().sum::<f64>() / before.len() as f64;
    if mean == 0.0 && now == 0.0 {
        "→"
    } else if now > mean * 1.05 {
        "↑"
    } else if now < mean * 0.95 {
        "↓"
    } else {
        "→"
    }
}

pub fn rate(v: f64) -> String {
    if v >= 1_000_000.0 {
        format!("{:.2}M", v / 1_000_000.0)
    } else if v >= 10_000.0 {
        format!("{:.1}K", v / 1_000.0)
    } else {
        format!("{v:.0}")
    }
}

pub fn micros(us: f64) -> String {
    if us >= 1_000_000.0 {
        format!("{:.2}s", us / 1_000_000.0)
    } else if us >= 1_000.0 {
        format!("{:.1}ms", us / 1_000.0)
    } else if us >= 100.0 {
        format!("{us:.0}µs")
    } else {
        format!("{us:.1}µs")
    }
}

/// A count in at most 6 characters: 950, 12.3K, 4.56M.
pub fn short(n: u64) -> String {
    match n {
        0..10_000 => n.to_string(),
        10_000..1_000_000 => format!("{:.1}K", n as f64 / 1e3),
        1_000_000..1_000_000_000 => format!("{:.2}M", n as f64 / 1e6),
        _ => format!("{:.2}G", n as f64 / 1e9),
    }
}

pub fn bytes(b: u64) -> String {
    human_bytes(b as f64)
}

pub fn percent(ratio: Option<f64>) -> String {
    ratio.map_or("n/a".to_string(), |r| format!("{:.1}%", r * 100.0))
}

pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

pub fn clock(secs: f64) -> String {
    let s = secs.max(0.0) as u64;
    format!("{:02}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}

/// An event-time lag in ms, or what a missing watermark means.
pub fn lag(ms: i64) -> String {
    if !(0..=i64::MAX / 4).contains(&ms) {
        return "no watermark yet".to_string();
    }
    crate::config::units::human_ms(ms)
}

/// The latest snapshot of a side taken while it ran (with A/B, the other side's turn leaves
/// each side's panels on its own last data), or an empty one before the first arrives
/// (borrowed: views draw several times a second and never need a copy).
pub fn latest(side: &Side) -> &MetricsSnapshot {
    static EMPTY: std::sync::LazyLock<MetricsSnapshot> =
        std::sync::LazyLock::new(MetricsSnapshot::default);
    side.last_running().unwrap_or(&EMPTY)
}
