//! The checkpoints panel: counts, a stuck materialization, the timeline of sizes, the last
//! checkpoint and why it was large, restarts, delivery and the changelog.

use std::collections::VecDeque;

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Stylize};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::super::{bytes, latest, micros, panel, short};
use crate::model::checkpoint::CheckpointRecord;
use crate::model::snapshot::CheckpointSample;
use crate::tui::app::Side;

/// The checkpoint panel's lines, most telling first (a short panel shows the first ones):
/// counts, a stuck materialization, the timeline of sizes, the last checkpoint and what made it
/// large, restarts, what the sink's reader saw, and the changelog's state.
pub(super) fn checkpoint_lines(
    side: &Side,
    c: &CheckpointSample,
    width: usize,
) -> Vec<Line<'static>> {
    // Off: a run that restores or takes savepoints without checkpointing.
    let mut header = if c.kind == "off" {
        vec![Span::from("off: set execution.checkpointing.interval").dark_gray()]
    } else {
        vec![
            Span::from(format!("{} ", c.kind)).bold(),
            Span::from(format!("{} ok ", c.completed)),
            Span::from(format!("{} failed", c.failed)).fg(if c.failed > 0 {
                Color::Red
            } else {
                Color::Reset
            }),
            Span::from(format!(" Σ {}", bytes(c.bytes_uploaded))),
        ]
    };
    if c.in_flight {
        header.push(Span::from(" ↑ uploading").dark_gray());
    }
    let mut lines = vec![Line::from(header)];
    if let Some(log) = c.changelog.as_ref().filter(|l| l.skipped > 0) {
        lines.push(Line::from(vec![
            Span::from(" WARNING ").black().on_red().bold(),
            Span::from(format!(" {} materializations skipped", log.skipped))
                .red()
                .bold(),
        ]));
    }
    lines.push(timeline(&side.checkpoints, width));
    match &c.last {
        None => lines.push(Line::from("no checkpoint yet").dark_gray()),
        Some(last) => {
            if let Some(why) = &last.failed {
                lines.push(
                    Line::from(format!("#{} FAILED: {why}", last.id))
                        .red()
                        .bold(),
                );
            } else {
                lines.push(Line::from(format!(
                    "#{} {} sync {} async {}, {} files +{} reused",
                    last.id,
                    bytes(last.bytes),
                    micros(last.sync_ms * 1e3),
                    micros(last.async_ms * 1e3),
                    last.files,
                    last.reused_files
                )));
                lines.push(why_large(last));
            }
        }
    }
    let mut restarts = format!("restarts {}", c.restarts);
    if let Some(ms) = c.last_restore_ms {
        restarts.push_str(&format!(", last restore {}", micros(ms * 1e3)));
    }
    if c.savepoints > 0 {
        restarts.push_str(&format!(", savepoints {}", c.savepoints));
    }
    // The records processed again since: counted in the rate above, as the work they are.
    let replayed = latest(side).records_replayed;
    if replayed > 0 {
        restarts.push_str(&format!(", {} replayed", short(replayed)));
    }
    lines.push(Line::from(restarts));
    let d = &c.delivery;
    let mut dups = format!("dup {} seen", short(d.duplicates_seen));
    if d.duplicates_dropped > 0 {
        dups.push_str(&format!(" ({} dropped)", short(d.duplicates_dropped)));
    }
    lines.push(Line::from(vec![
        Span::from(dups).fg(if d.duplicates_seen > d.duplicates_dropped {
            Color::Yellow
        } else {
            Color::Reset
        }),
        Span::from(format!(", {} lost", short(d.records_lost))).fg(if d.records_lost > 0 {
            Color::Red
        } else {
            Color::Reset
        }),
        Span::from(match d.visibility_delay_ms_max {
            0 => ", visible at once".to_string(),
            ms => format!(", visible ≤ {}", micros(ms as f64 * 1e3)),
        }),
    ]));
    if let Some(log) = &c.changelog {
        lines.push(Line::from(format!(
            "materialization {} lag {:.1} s, log {}",
            log.materialization_id
                .map_or("none".to_string(), |id| format!("#{id}")),
            log.materialization_lag_secs,
            bytes(log.changelog_bytes)
        )));
    }
    lines
}

/// Why the checkpoint was as large as it was: changelog, its materialization and its log;
/// otherwise the new SST files since the one before, written by flushes (new data) or by
/// compactions (old data rewritten: what makes an incremental checkpoint spike).
fn why_large(last: &CheckpointRecord) -> Line<'static> {
    if last.kind == "changelog" {
        return Line::from(format!(
            "materialized {} + log {}",
            bytes(last.materialized_bytes),
            bytes(last.changelog_bytes)
        ));
    }
    let compaction = Span::from(format!("compaction {}", bytes(last.new_compaction_bytes)));
    Line::from(vec![
        Span::from(format!("new SST: flush {}, ", bytes(last.new_flush_bytes))),
        if last.new_compaction_bytes > last.new_flush_bytes {
            compaction.yellow().bold()
        } else {
            compaction
        },
    ])
}

/// One cell per checkpoint, newest on the right, its height its upload size against the
/// largest shown: yellow when rewritten data (compaction, materialization) made most of it,
/// a red × when it failed.
fn timeline(records: &VecDeque<CheckpointRecord>, width: usize) -> Line<'static> {
    const LEVELS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    let label = "sizes ";
    let max = records
        .iter()
        .filter(|r| r.failed.is_none())
        .map(|r| r.bytes)
        .max()
        .unwrap_or(0);
    let scale = format!(" max {}", bytes(max));
    let cells = width
        .saturating_sub(label.len() + scale.chars().count())
        .max(1);
    let shown = records.iter().skip(records.len().saturating_sub(cells));
    if records.is_empty() {
        return Line::from(format!("{label}(none yet)")).dark_gray();
    }
    let mut spans = vec![Span::from(label).dark_gray()];
    for r in shown {
        if r.failed.is_some() {
            spans.push(Span::from("×").red().bold());
            continue;
        }
        let level = if max == 0 {
            0
        } else {
            ((r.bytes as f64 / max as f64) * 7.0).round() as usize
        };
        let rewritten =
            r.new_compaction_bytes > r.new_flush_bytes || r.materialized_bytes > r.changelog_bytes;
        let cell = Span::from(LEVELS[level.min(7)].to_string());
        spans.push(if rewritten {
            cell.yellow()
        } else {
            cell.cyan()
        });
    }
    spans.push(Span::from(scale).dark_gray());
    Line::from(spans)
}

pub(super) fn render_checkpoints(lines: Vec<Line<'static>>, frame: &mut Frame, area: Rect) {
    frame.render_widget(Paragraph::new(lines).block(panel("Checkpoints")), area);
}
