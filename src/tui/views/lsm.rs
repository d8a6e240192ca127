//! Per column family and level: files, bytes, compaction score; and the options that shape it.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Stylize};
use ratatui::text::Line;
use ratatui::widgets::{Paragraph, Row, Table};

use super::{bytes, latest, panel, short};
use crate::model::counters::CfOps;
use crate::model::metrics::ColumnFamilyLsm;
use crate::model::snapshot::MetricsSnapshot;
use crate::tui::app::App;

pub fn render(app: &App, frame: &mut Frame, area: Rect) {
    let [levels, options] =
        Layout::horizontal([Constraint::Percentage(58), Constraint::Percentage(42)]).areas(area);
    let side = app.focused();
    let s = latest(side);
    // The snapshot before it, for each state's operations per second.
    let before = side
        .segment()
        .rev()
        .find(|p| p.elapsed_secs < s.elapsed_secs);
    let mut rows = Vec::new();
    // A chain: each state names its operator (`1:window-con`), one RocksDB instance each.
    let chain = s.rocksdb.lsm.column_families.iter().any(|c| c.operator > 0);
    let label = |cf: &ColumnFamilyLsm| {
        if chain {
            format!("{}:{}", cf.operator, short_cf(&cf.name))
                .chars()
                .take(13)
                .collect()
        } else {
            short_cf(&cf.name)
        }
    };
    for cf in &s.rocksdb.lsm.column_families {
        let ops = ops_row(cf, before.map(|b| (b, s)));
        if cf.ops_only {
            // Holds no data: its operations alone.
            if let Some(text) = ops {
                rows.push(
                    Row::new(vec![
                        label(cf),
                        "ops".to_string(),
                        String::new(),
                        String::new(),
                        text,
                    ])
                    .dark_gray(),
                );
            }
            continue;
        }
        rows.push(
            Row::new(vec![
                label(cf),
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
        if let Some(text) = ops {
            // The state's whole live size and its operations.
            rows.push(
                Row::new(vec![
                    String::new(),
                    "all".to_string(),
                    cf.levels.iter().map(|l| l.files).sum::<u64>().to_string(),
                    bytes(cf.levels.iter().map(|l| l.bytes).sum()),
                    text,
                ])
                .cyan(),
            );
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

/// A state's operations per second since the snapshot before (`span`: it and the latest),
/// by kind ("1.2K ops/s: 600 get, 600 put"); None when the job issued none on it so far.
fn ops_row(
    cf: &ColumnFamilyLsm,
    span: Option<(&MetricsSnapshot, &MetricsSnapshot)>,
) -> Option<String> {
    if cf.ops == CfOps::default() {
        return None;
    }
    let (delta, secs) = match span {
        Some((before, now)) => {
            let earlier = before
                .rocksdb
                .lsm
                .column_families
                .iter()
                .find(|c| c.operator == cf.operator && c.name == cf.name)
                .map(|c| c.ops)
                .unwrap_or_default();
            (
                cf.ops.since(&earlier),
                now.elapsed_secs - before.elapsed_secs,
            )
        }
        // No interval to divide by yet.
        None => (cf.ops, 0.0),
    };
    let rate = |n: u64| {
        if secs > 0.0 {
            short((n as f64 / secs).round() as u64)
        } else {
            "-".to_string()
        }
    };
    let kinds: Vec<String> = [
        ("get", delta.gets),
        ("put", delta.puts),
        ("del", delta.deletes),
        ("merge", delta.merges),
        ("batched", delta.batch_entries),
        ("seek", delta.iterator_seeks),
        ("next", delta.iterator_nexts),
    ]
    .iter()
    .filter(|(_, n)| *n > 0)
    .map(|(k, n)| format!("{} {k}", rate(*n)))
    .collect();
    Some(format!(
        "{} ops/s: {}",
        rate(delta.total()),
        if kinds.is_empty() {
            "idle".to_string()
        } else {
            kinds.join(", ")
        }
    ))
}

/// Column family names fit 13 cells: Flink's timer column families have long ones
/// (`_timer_state/event_user-timers` is `timers`, another service's `timers:<service>`).
fn short_cf(name: &str) -> String {
    if let Some(service) = name.strip_prefix("_timer_state/processing_") {
        return match service {
            "user-timers" => "proc-timers".to_string(),
            s => format!("proc:{s}").chars().take(13).collect(),
        };
    }
    match name.strip_prefix("_timer_state/event_") {
        Some("user-timers") => "timers".to_string(),
        Some(service) => format!("timers:{service}").chars().take(13).collect(),
        None => name.chars().take(13).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: f64, gets: u64, puts: u64) -> MetricsSnapshot {
        let mut s = MetricsSnapshot {
            elapsed_secs: secs,
            ..MetricsSnapshot::default()
        };
        s.rocksdb.lsm.column_families = vec![ColumnFamilyLsm {
            name: "seen".to_string(),
            ops: CfOps {
                gets,
                puts,
                ..CfOps::default()
            },
            ..ColumnFamilyLsm::default()
        }];
        s
    }

    #[test]
    fn a_states_operations_per_second_come_from_the_snapshot_before() {
        let (before, now) = (at(1.0, 1_000, 500), at(3.0, 31_000, 500));
        let cf = &now.rocksdb.lsm.column_families[0];
        assert_eq!(
            ops_row(cf, Some((&before, &now))).unwrap(),
            "15.0K ops/s: 15.0K get"
        );
        // No interval yet: no rate. No operations at all: no row.
        assert_eq!(ops_row(cf, None).unwrap(), "- ops/s: - get, - put");
        let none = &at(1.0, 0, 0).rocksdb.lsm.column_families[0];
        assert_eq!(ops_row(none, None), None);
        // Nothing since the snapshot before.
        assert_eq!(ops_row(cf, Some((&now, &now))).unwrap(), "- ops/s: idle");
    }

    #[test]
    fn timer_queue_names_are_shortened() {
        assert_eq!(short_cf("_timer_state/event_user-timers"), "timers");
        assert_eq!(
            short_cf("_timer_state/processing_user-timers"),
            "proc-timers"
        );
    }
}
