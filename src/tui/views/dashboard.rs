//! The dashboard: throughput, latency, stalls and the pipeline on the left; block cache,
//! lookups, memory, checkpoints (when the run has them) and the LSM on the right.

use std::collections::VecDeque;

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Style, Stylize};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Sparkline};

use super::{
    bad_high, bar, bytes, good_high, lag, latest, micros, panel, percent, rate, short, trend,
};
use crate::backend::metrics::HitRate;
use crate::durability::checkpoint::CheckpointRecord;
use crate::engine::CheckpointSample;
use crate::tui::app::{App, MarkKind, Side};

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
        render_memory(side, frame, memory);
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
        render_memory(side, frame, memory);
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

/// One side's rate: its last running interval, and its trend.
fn rate_spans(label: &str, side: &Side) -> Vec<Span<'static>> {
    let s = latest(side);
    vec![
        Span::from(format!("{label}{} ev/s ", rate(s.events_per_sec))).bold(),
        Span::from(trend(&side.history, |s| s.events_per_sec)),
    ]
}

fn render_throughput(app: &App, frame: &mut Frame, area: Rect) {
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

fn render_latency(app: &App, side: &Side, frame: &mut Frame, area: Rect) {
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

fn render_stalls(side: &Side, frame: &mut Frame, area: Rect) {
    let s = latest(side);
    let st = &s.rocksdb.stall;
    let c = &st.causes;
    let share = st.share;
    // Three different spans of time: the share of the last interval spent stalled
    // (StallMicros), RocksDB's state at the moment of the sample, and the stall counts since the
    // run (re)opened RocksDB. Each says which, so "66.9%" and "not stalled" do not read as one
    // contradicting the other.
    let now = if st.write_stopped {
        Span::from(" WRITES STOPPED ").black().on_red()
    } else if st.delayed_write_rate > 0 {
        Span::from(format!(" delayed to {}/s ", bytes(st.delayed_write_rate)))
            .black()
            .on_yellow()
    } else {
        Span::from("not stalled").dark_gray()
    };
    let inner = area.width.saturating_sub(2) as usize;
    let long = format!("{:.1}% of interval stalled", share * 100.0);
    let share_text = if long.chars().count() + " · now: not stalled".chars().count() <= inner {
        long
    } else {
        format!("{:.1}% of interval", share * 100.0)
    };
    let lines = vec![
        Line::from(vec![
            Span::from(share_text)
                .fg(if share > 0.0 {
                    Color::Red
                } else {
                    Color::Green
                })
                .bold(),
            Span::from(" · now: "),
            now,
        ]),
        Line::from(format!(
            "run delay/stop L0 {}/{} mem {}/{} pend {}/{}",
            c.l0_file_count_delays,
            c.l0_file_count_stops,
            c.memtable_limit_delays,
            c.memtable_limit_stops,
            c.pending_compaction_bytes_delays,
            c.pending_compaction_bytes_stops
        )),
    ];
    frame.render_widget(Paragraph::new(lines).block(panel("Write stalls")), area);
}

fn render_pipeline(side: &Side, frame: &mut Frame, area: Rect) {
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

/// A hit rate as a bar and a number: "n/a" when nothing was looked up (null in the JSON, never
/// a 0 % that would read as "always missed"), and with its lookup count when it rests on few
/// (two misses when RocksDB opened a new file are "0.0% of 2", as the summary says it).
fn gauge_line(label: &str, hit: &HitRate, inner: usize) -> Line<'static> {
    let color = hit.rate.map_or(Color::DarkGray, good_high);
    let lookups = hit.hits + hit.misses;
    let number = match hit.rate {
        Some(r) if lookups < crate::report::FEW_LOOKUPS => {
            format!("{} of {lookups}", percent(Some(r)))
        }
        rate => percent(rate),
    };
    // The number in a column of 8 (more when it needs it), the bar in what is left.
    let width = inner
        .saturating_sub(7 + 1 + number.chars().count().max(8))
        .max(4);
    Line::from(vec![
        Span::from(format!("{label:<7}")),
        Span::from(bar(hit.rate.unwrap_or(0.0), width)).fg(color),
        Span::from(format!(" {number}")),
    ])
}

fn render_cache(side: &Side, frame: &mut Frame, area: Rect) {
    let s = latest(side);
    let c = &s.rocksdb.cache;
    let inner = (area.width as usize).saturating_sub(2);
    let lines = vec![
        gauge_line("filter", &c.filter, inner),
        gauge_line("index", &c.index, inner),
        gauge_line("data", &c.data, inner),
        gauge_line("all", &c.overall, inner),
    ];
    frame.render_widget(
        Paragraph::new(lines).block(panel("Block cache hit rate")),
        area,
    );
}

fn render_lookups(side: &Side, frame: &mut Frame, area: Rect) {
    let s = latest(side);
    let l = &s.rocksdb.lookups;
    let lines = vec![
        Line::from(format!(
            "filter {:.3} blocks, {} per lookup",
            l.filter_block_reads_per_lookup,
            bytes(l.filter_bytes_read_per_lookup as u64)
        )),
        Line::from(format!(
            "index  {:.3} blocks, {} per lookup",
            l.index_block_reads_per_lookup,
            bytes(l.index_bytes_read_per_lookup as u64)
        )),
    ];
    frame.render_widget(
        Paragraph::new(lines).block(panel("Reads from storage")),
        area,
    );
}

fn fill_line(label: &str, used: u64, capacity: u64, width: usize) -> Line<'static> {
    let ratio = if capacity > 0 {
        used as f64 / capacity as f64
    } else {
        0.0
    };
    Line::from(vec![
        Span::from(format!("{label:<10}")),
        Span::from(bar(ratio, width)).fg(bad_high(ratio)),
        Span::from(format!(" {} / {}", bytes(used), bytes(capacity))),
    ])
}

fn render_memory(side: &Side, frame: &mut Frame, area: Rect) {
    let s = latest(side);
    let m = &s.rocksdb.memory;
    let width = (area.width as usize).saturating_sub(34).max(4);
    let memtables: u64 = s
        .rocksdb
        .lsm
        .column_families
        .iter()
        .map(|c| c.memtable_bytes)
        .sum();
    let lines = vec![
        Line::from(format!(
            "memtables {} in {} CFs",
            bytes(memtables),
            s.rocksdb.lsm.column_families.len()
        )),
        fill_line("WBM use", m.wbm_usage, m.wbm_capacity, width),
        fill_line("cache", m.block_cache_usage, m.block_cache_capacity, width),
    ];
    frame.render_widget(
        Paragraph::new(lines).block(panel("Memory (WBM, block cache)")),
        area,
    );
}

fn render_lsm(side: &Side, frame: &mut Frame, area: Rect) {
    let s = latest(side);
    let lsm = &s.rocksdb.lsm;
    let k = &side.profile.knobs;
    let slow = u64::from(k.level0_slowdown_writes_trigger);
    let stop = u64::from(k.level0_stop_writes_trigger);
    let ratio = if stop > 0 {
        lsm.l0_files as f64 / stop as f64
    } else {
        0.0
    };
    let width = (area.width as usize).saturating_sub(30).max(4);
    let mut lines = vec![
        Line::from(vec![
            Span::from(format!("L0 files {:<3}", lsm.l0_files)),
            Span::from(bar(ratio, width)).fg(if lsm.l0_files >= slow {
                Color::Red
            } else {
                bad_high(ratio)
            }),
            Span::from(format!(" slow {slow} stop {stop}")),
        ]),
        Line::from(format!(
            "pending Σ {}, soft/CF {}",
            bytes(lsm.pending_compaction_bytes),
            bytes(k.soft_pending_compaction_bytes_limit.0)
        )),
        Line::from(format!(
            "flush {} ({} run) compact {} ({} run)",
            lsm.flushes, lsm.running_flushes, lsm.compactions, lsm.running_compactions
        )),
        Line::from(format!(
            "write amp {:.2} levels {} SST {}",
            s.rocksdb.io.write_amplification,
            lsm.active_levels,
            bytes(lsm.live_sst_bytes)
        )),
    ];
    if s.pipeline.checkpoints.is_none() {
        lines.push(Line::from("checkpoints: off (no checkpoint interval)").dark_gray());
    }
    lines.push(Line::from(format!(
        "all CFs: {}",
        lsm.levels
            .iter()
            .map(|l| format!("L{} {}f {}", l.level, l.files, bytes(l.bytes)))
            .collect::<Vec<_>>()
            .join("  ")
    )));
    frame.render_widget(Paragraph::new(lines).block(panel("LSM")), area);
}

/// The checkpoint panel's lines, most telling first (a short panel shows the first ones):
/// counts, a stuck materialization, the timeline of sizes, the last checkpoint and what made it
/// large, restarts, what the sink's reader saw, and the changelog's state.
fn checkpoint_lines(side: &Side, c: &CheckpointSample, width: usize) -> Vec<Line<'static>> {
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

fn render_checkpoints(lines: Vec<Line<'static>>, frame: &mut Frame, area: Rect) {
    frame.render_widget(Paragraph::new(lines).block(panel("Checkpoints")), area);
}
