//! `bench --suite scale`: how a job's cost grows with its state. One row per size of preloaded
//! state: throughput, RocksDB's work per record, cache hit rates and memory, then each
//! figure's ratio to the smallest size's.

use crate::config::units::human_bytes;
use crate::summary::Summary;

/// One size's figures.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct ScaleRow {
    pub case: String,
    /// The preload's size (live SST bytes asked for) and what the run had.
    pub preload: String,
    pub live_sst_bytes: u64,
    pub keys: u64,
    pub build_secs: f64,
    pub clone_secs: f64,
    pub events_per_sec: f64,
    /// RocksDB's work per record.
    pub bytes_read_per_lookup: f64,
    pub index_bytes_read_per_lookup: f64,
    pub filter_bytes_read_per_lookup: f64,
    pub compaction_bytes_per_event: f64,
    pub cache_hit: [Option<f64>; 4],
    pub process_rss_peak_bytes: u64,
    pub rocksdb_memory_max_bytes: u64,
    /// The process's RSS beyond RocksDB's own accounting: statebench's oracle, serving store,
    /// allocator and everything RocksDB does not count.
    pub outside_rocksdb_bytes: u64,
}

impl ScaleRow {
    pub fn new(case: &str, preload: &str, s: &Summary) -> ScaleRow {
        let p = s.preload.clone().unwrap_or_default();
        let records = s.records().max(1) as f64;
        let hit = &s.cache_hit_rate;
        ScaleRow {
            case: case.to_string(),
            preload: preload.to_string(),
            live_sst_bytes: s.live_sst_bytes,
            keys: p.entries,
            build_secs: p.build_secs,
            clone_secs: p.clone_secs,
            events_per_sec: s.events_per_sec,
            bytes_read_per_lookup: s.bytes_read_per_lookup,
            index_bytes_read_per_lookup: s.index_bytes_read_per_lookup,
            filter_bytes_read_per_lookup: s.filter_bytes_read_per_lookup,
            compaction_bytes_per_event: s.compaction_bytes_written as f64 / records,
            cache_hit: [hit.overall, hit.index, hit.filter, hit.data],
            process_rss_peak_bytes: s.process_rss_peak_bytes,
            rocksdb_memory_max_bytes: s.rocksdb_memory_max_bytes,
            outside_rocksdb_bytes: s
                .process_rss_peak_bytes
                .saturating_sub(s.rocksdb_memory_max_bytes),
        }
    }
}

fn pct(rate: Option<f64>) -> String {
    rate.map_or_else(|| "n/a".to_string(), |r| format!("{:.1} %", r * 100.0))
}

fn ratio(a: f64, b: f64) -> String {
    if b > 0.0 {
        format!("{:.2}x", a / b)
    } else {
        "-".to_string()
    }
}

/// The table: a column per size, the last ones the ratios of each size to the first.
pub fn render(rows: &[ScaleRow]) -> String {
    let Some(first) = rows.first() else {
        return "no cases ran\n".to_string();
    };
    type Cell = fn(&ScaleRow) -> (String, f64);
    let lines: &[(&str, Cell)] = &[
        ("live SST", |r| {
            (
                human_bytes(r.live_sst_bytes as f64),
                r.live_sst_bytes as f64,
            )
        }),
        ("keys preloaded", |r| (r.keys.to_string(), r.keys as f64)),
        ("preload built / cloned (s)", |r| {
            (
                format!("{:.0} / {:.2}", r.build_secs, r.clone_secs),
                r.clone_secs,
            )
        }),
        ("events/s", |r| {
            (format!("{:.0}", r.events_per_sec), r.events_per_sec)
        }),
        ("bytes read per lookup", |r| {
            (
                human_bytes(r.bytes_read_per_lookup),
                r.bytes_read_per_lookup,
            )
        }),
        ("index bytes read per lookup", |r| {
            (
                human_bytes(r.index_bytes_read_per_lookup),
                r.index_bytes_read_per_lookup,
            )
        }),
        ("filter bytes read per lookup", |r| {
            (
                human_bytes(r.filter_bytes_read_per_lookup),
                r.filter_bytes_read_per_lookup,
            )
        }),
        ("compaction bytes per event", |r| {
            (
                human_bytes(r.compaction_bytes_per_event),
                r.compaction_bytes_per_event,
            )
        }),
        ("cache hit (all)", |r| {
            (pct(r.cache_hit[0]), r.cache_hit[0].unwrap_or(0.0))
        }),
        ("cache hit (index / filter / data)", |r| {
            (
                format!(
                    "{} / {} / {}",
                    pct(r.cache_hit[1]),
                    pct(r.cache_hit[2]),
                    pct(r.cache_hit[3])
                ),
                r.cache_hit[3].unwrap_or(0.0),
            )
        }),
        ("process RSS (peak)", |r| {
            (
                human_bytes(r.process_rss_peak_bytes as f64),
                r.process_rss_peak_bytes as f64,
            )
        }),
        ("RocksDB's memory (peak)", |r| {
            (
                human_bytes(r.rocksdb_memory_max_bytes as f64),
                r.rocksdb_memory_max_bytes as f64,
            )
        }),
        ("statebench's own (RSS - RocksDB)", |r| {
            (
                human_bytes(r.outside_rocksdb_bytes as f64),
                r.outside_rocksdb_bytes as f64,
            )
        }),
    ];
    let mut header = vec![String::new()];
    header.extend(rows.iter().map(|r| r.case.clone()));
    header.extend(
        rows.iter()
            .skip(1)
            .map(|r| format!("{} / {}", r.case, first.case)),
    );
    let mut table = vec![header];
    for (name, cell) in lines {
        let mut line = vec![name.to_string()];
        line.extend(rows.iter().map(|r| cell(r).0));
        let base = cell(first).1;
        line.extend(rows.iter().skip(1).map(|r| ratio(cell(r).1, base)));
        table.push(line);
    }
    super::table::render(&table, 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_size_gets_a_column_and_its_ratio_to_the_first() {
        let row = |case: &str, eps: f64, rss: u64| ScaleRow {
            case: case.to_string(),
            events_per_sec: eps,
            process_rss_peak_bytes: rss,
            rocksdb_memory_max_bytes: 100,
            outside_rocksdb_bytes: rss - 100,
            ..ScaleRow::default()
        };
        let t = render(&[row("small", 1000.0, 300), row("big", 250.0, 500)]);
        let line = t.lines().find(|l| l.starts_with("events/s")).unwrap();
        assert!(line.contains("1000") && line.contains("250"), "{t}");
        assert!(line.trim_end().ends_with("0.25x"), "{t}");
        let own = t
            .lines()
            .find(|l| l.starts_with("statebench's own"))
            .unwrap();
        assert!(own.trim_end().ends_with("2.00x"), "{t}");
        assert!(t.lines().next().unwrap().contains("big / small"), "{t}");
    }
}
