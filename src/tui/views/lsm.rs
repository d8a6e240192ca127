//! Per column family and level: files, bytes, compaction score; and the options that shape it.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Stylize};
use ratatui::text::Line;
use ratatui::widgets::{Paragraph, Row, Table};

use super::{bytes, latest, panel, short};
use crate::tui::app::App;

pub fn render(app: &App, frame: &mut Frame, area: Rect) {
    let [levels, options] =
        Layout::horizontal([Constraint::Percentage(58), Constraint::Percentage(42)]).areas(area);
    let side = app.focused();
    let s = latest(side);
    let mut rows = Vec::new();
    for cf in &s.rocksdb.lsm.column_families {
        rows.push(
            Row::new(vec![
                short_cf(&cf.name),
                "mem".to_string(),
                String::new(),
                bytes(cf.memtable_bytes),
                format!("~{} keys", short(cf.estimated_keys)),
            ])
            .bold(),
        );
        for level in &cf.levels {
            // L0's score counts only files not being compacted: while they compact it would
            // read low, so it is left out.
            let score = match (level.level, level.compacting, level.score) {
                (0, n, _) if n > 0 => "-".to_string(),
                (_, _, Some(s)) => format!("{s:.2}"),
                (_, _, None) => "-".to_string(),
            };
            let files = if level.compacting > 0 {
                format!("{}/{}", level.files, level.compacting)
            } else {
                level.files.to_string()
            };
            let row = Row::new(vec![
                String::new(),
                format!("L{}", level.level),
                files,
                bytes(level.bytes),
                score,
            ]);
            rows.push(if level.score.is_some_and(|s| s >= 1.0) {
                row.fg(Color::Yellow)
            } else {
                row
            });
        }
    }
    let lsm = &s.rocksdb.lsm;
    let title = format!(
        "LSM {}— {} active level{}, {} SST, pending {}",
        if app.b.is_some() {
            format!("{} ", app.side_label(app.focus))
        } else {
            String::new()
        },
        lsm.active_levels,
        if lsm.active_levels == 1 { "" } else { "s" },
        bytes(lsm.live_sst_bytes),
        bytes(lsm.pending_compaction_bytes)
    );
    let table = Table::new(
        rows,
        [
            Constraint::Length(13),
            Constraint::Length(3),
            Constraint::Length(5),
            Constraint::Length(9),
            Constraint::Min(5),
        ],
    )
    .header(Row::new(vec!["state", "lvl", "files", "bytes", "score"]).dark_gray())
    .block(
        panel(&title).title_bottom(
            Line::from(" files 4/2: 2 compacting · score ≥1: due · L0's is - while it compacts ")
                .dark_gray(),
        ),
    );
    frame.render_widget(table, levels);

    let k = &side.profile.knobs;
    let lines: Vec<Line> = [
        (
            "write buffer",
            format!("{} x {}", k.write_buffer_size, k.max_write_buffer_number),
        ),
        (
            "merge to flush",
            k.min_write_buffer_number_to_merge.to_string(),
        ),
        ("target file", k.target_file_size_base.to_string()),
        (
            "level base",
            format!(
                "{} x{}",
                k.max_bytes_for_level_base, k.max_bytes_for_level_multiplier
            ),
        ),
        ("dynamic levels", k.dynamic_level_bytes.to_string()),
        (
            "L0 slow/stop",
            format!(
                "{} / {}",
                k.level0_slowdown_writes_trigger, k.level0_stop_writes_trigger
            ),
        ),
        (
            "compression",
            k.compression_per_level
                .iter()
                .map(|c| format!("{c:?}").to_lowercase())
                .collect::<Vec<_>>()
                .join(","),
        ),
        ("block size", k.block_size.to_string()),
        (
            "bloom",
            k.effective_bloom_bits_per_key()
                .map_or("off".to_string(), |b| format!("{b} bits/key")),
        ),
        ("partitioned", k.partitioned_index_filters.to_string()),
        ("auto compaction", (!k.disable_auto_compactions).to_string()),
        ("threads", k.background_jobs.to_string()),
    ]
    .into_iter()
    .map(|(name, value)| Line::from(format!("{name:<16} {value}")))
    .collect();
    frame.render_widget(
        Paragraph::new(lines).block(panel("Effective options")),
        options,
    );
}

/// Column family names fit 13 cells: Flink's timer column families have long ones
/// (`_timer_state/event_user-timers` is `timers`, another service's `timers:<service>`).
fn short_cf(name: &str) -> String {
    match name.strip_prefix("_timer_state/event_") {
        Some("user-timers") => "timers".to_string(),
        Some(service) => format!("timers:{service}").chars().take(13).collect(),
        None => name.chars().take(13).collect(),
    }
}
