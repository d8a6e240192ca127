//! The dashboard: throughput, latency, stalls and the pipeline on the left; block cache,
//! lookups, memory, checkpoints (when the run has them) and the LSM on the right. Each panel
//! lives with its kind: the rate chart in `throughput`, the job's latency and pipeline in `job`,
//! RocksDB's stalls, cache, lookups, memory and LSM in `store`, checkpoints in `checkpoints`.

mod checkpoints;
mod job;
mod store;
mod throughput;

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};

use super::latest;
use crate::tui::app::App;
use checkpoints::{checkpoint_lines, render_checkpoints};
use job::{render_latency, render_pipeline};
use store::{render_cache, render_lookups, render_lsm, render_memory, render_stalls};
use throughput::render_throughput;

pub fn render(app: &App, frame: &mut Frame, area: Rect) {
    let [left, right] =
        Layout::horizontal([Constraint::Percentage(50), Constraint::Percentage(50)]).areas(area);
    // The throughput chart and the LSM panel take whatever height is left.
    let [throughput, latency, stalls, pipeline] = Layout::vertical([
        Constraint::Min(6),
        Constraint::Length(5),
        Constraint::Length(4),
        Constraint::Length(6),
    ])
    .areas(left);
    let side = app.focused();
    render_throughput(app, frame, throughput);
    render_latency(app, side, frame, latency);
    render_stalls(side, frame, stalls);
    render_pipeline(side, frame, pipeline);
    let Some(sample) = latest(side).pipeline.checkpoints.as_ref() else {
        let [cache, lookups, memory, lsm] = Layout::vertical([
            Constraint::Length(6),
            Constraint::Length(4),
            Constraint::Length(5),
            Constraint::Min(6),
        ])
        .areas(right);
        render_cache(side, frame, cache);
        render_lookups(side, frame, lookups);
        render_memory(side, app.b.is_some(), frame, memory);
        render_lsm(side, frame, lsm);
        return;
    };
    // Checkpointing on: its panel above the LSM's; where the column is short (80x24) it takes
    // the place of the lookups and memory panels.
    let lines = checkpoint_lines(side, sample, right.width.saturating_sub(2) as usize);
    let wanted = lines.len() as u16 + 2;
    if right.height >= 6 + 4 + 5 + wanted + 6 {
        let [cache, lookups, memory, checkpoints, lsm] = Layout::vertical([
            Constraint::Length(6),
            Constraint::Length(4),
            Constraint::Length(5),
            Constraint::Length(wanted),
            Constraint::Min(6),
        ])
        .areas(right);
        render_cache(side, frame, cache);
        render_lookups(side, frame, lookups);
        render_memory(side, app.b.is_some(), frame, memory);
        render_checkpoints(lines, frame, checkpoints);
        render_lsm(side, frame, lsm);
    } else {
        let [cache, checkpoints, lsm] = Layout::vertical([
            Constraint::Length(6),
            Constraint::Min(3),
            Constraint::Length(6),
        ])
        .areas(right);
        render_cache(side, frame, cache);
        render_checkpoints(lines, frame, checkpoints);
        render_lsm(side, frame, lsm);
    }
}
