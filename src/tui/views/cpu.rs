//! Where the process's CPU goes (`--profile-cpu`): the buckets over the last few seconds and
//! over the run, and the functions with the most self samples. Drawn from the snapshots' `cpu`.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Stylize};
use ratatui::text::Line;
use ratatui::widgets::{Paragraph, Row, Table};

use super::{bar, panel};
use crate::model::cpu::{Bucket, CpuSample};
use crate::model::snapshot::MetricsSnapshot;
use crate::tui::app::{App, Side};

/// The "live" window: the newest snapshots covering at least this much running time.
pub const RECENT_SECS: f64 = 5.0;

/// The CPU samples of the side's newest snapshots over `RECENT_SECS`, and over its segment.
pub fn recent_and_run(side: &Side) -> Option<(CpuSample, f64, CpuSample)> {
    let profiled: Vec<&MetricsSnapshot> = side.segment().filter(|s| s.cpu.is_some()).collect();
    if profiled.is_empty() {
        return None;
    }
    let mut secs = 0.0;
    let mut recent = Vec::new();
    for s in profiled.iter().rev() {
        recent.extend(s.cpu.as_ref());
        secs += s.interval_secs;
        if secs >= RECENT_SECS {
            break;
        }
    }
    let run = CpuSample::merge(profiled.iter().filter_map(|s| s.cpu.as_ref()));
    Some((CpuSample::merge(recent), secs, run))
}

pub fn render(app: &App, frame: &mut Frame, area: Rect) {
    let side = app.focused();
    let who = if app.b.is_some() {
        format!("{} ", app.side_label(app.focus))
    } else {
        String::new()
    };
    let Some((recent, secs, run)) = recent_and_run(side) else {
        let lines = vec![
            Line::from(""),
            Line::from(" CPU profiling is off: start with --profile-cpu").yellow(),
            Line::from(""),
            Line::from(
                " (statebench tui --profile-cpu ...) samples every thread, RocksDB's too, and",
            ),
            Line::from(" shows here where the CPU goes: filter-block reads, compaction, ..."),
        ];
        frame.render_widget(
            Paragraph::new(lines).block(panel(format!("CPU {who}").trim_end())),
            area,
        );
        return;
    };
    let [buckets, frames] = Layout::vertical([
        Constraint::Length(Bucket::ALL.len() as u16 + 3),
        Constraint::Min(3),
    ])
    .areas(area);
    let bar_width = (buckets.width as usize).saturating_sub(48).clamp(4, 40);
    let rows: Vec<Row> = Bucket::ALL
        .iter()
        .map(|&b| {
            let now = recent.share(b);
            let row = Row::new(vec![
                b.label().to_string(),
                bar(now, bar_width),
                format!("{:>5.1}%", now * 100.0),
                format!("{:>5.1}%", run.share(b) * 100.0),
            ]);
            if recent.largest().is_some_and(|l| l.bucket == b) {
                row.fg(Color::Yellow)
            } else if now == 0.0 {
                row.dark_gray()
            } else {
                row
            }
        })
        .collect();
    let title = format!(
        "CPU {who}— whole process, last {secs:.0} s: {} samples · run: {} samples",
        recent.samples, run.samples
    );
    frame.render_widget(
        Table::new(
            rows,
            [
                Constraint::Length(27),
                Constraint::Length(bar_width as u16),
                Constraint::Length(7),
                Constraint::Length(7),
            ],
        )
        .header(Row::new(vec!["cause", "", "now", "run"]).dark_gray())
        .block(panel(&title)),
        buckets,
    );
    let rows: Vec<Row> = recent
        .top_frames
        .iter()
        .map(|f| {
            Row::new(vec![
                format!("{:>5.1}%", f.share * 100.0),
                f.frame.clone(),
                f.bucket.label().to_string(),
            ])
        })
        .collect();
    frame.render_widget(
        Table::new(
            rows,
            [
                Constraint::Length(6),
                Constraint::Min(20),
                Constraint::Length(26),
            ],
        )
        .block(panel(&format!("Top frames (self time, last {secs:.0} s)"))),
        frames,
    );
}
