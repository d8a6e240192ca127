//! RocksDB's panels: write stalls, block cache hit rates, reads from storage, memory (write
//! buffer manager and block cache) and the LSM.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Stylize};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::super::{bad_high, bar, bytes, good_high, latest, panel, percent};
use crate::model::metrics::HitRate;
use crate::tui::app::Side;

pub(super) fn render_stalls(side: &Side, frame: &mut Frame, area: Rect) {
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

pub(super) fn render_cache(side: &Side, frame: &mut Frame, area: Rect) {
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

pub(super) fn render_lookups(side: &Side, frame: &mut Frame, area: Rect) {
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

/// `shared`: both runs of an A/B share this process, so its resident memory is theirs together.
pub(super) fn render_memory(side: &Side, shared: bool, frame: &mut Frame, area: Rect) {
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
        if m.unshared {
            // memory.mode unmanaged: no budget; the index and filters sit in table readers.
            Line::from(format!(
                "no WBM (unmanaged) · table readers {}",
                bytes(m.table_readers_bytes)
            ))
        } else {
            fill_line("WBM use", m.wbm_usage, m.wbm_capacity, width)
        },
        fill_line("cache", m.block_cache_usage, m.block_cache_capacity, width),
    ];
    // The process's resident memory beside RocksDB's budget: what a container limit sees.
    let title = match m.process.rss_bytes {
        0 => "Memory (WBM, block cache)".to_string(),
        rss => format!(
            "Memory (WBM, block cache) · process RSS {}{}",
            bytes(rss),
            if shared { " (A and B together)" } else { "" }
        ),
    };
    frame.render_widget(Paragraph::new(lines).block(panel(&title)), area);
}

pub(super) fn render_lsm(side: &Side, frame: &mut Frame, area: Rect) {
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
