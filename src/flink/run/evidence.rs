//! What each side measured, read the same way where both have it (each RocksDB instance's own
//! LOG, parsed by `diagnose`), and the side by side: per profile, one of Flink's subtasks (the
//! busiest by default) against statebench on its share; with two profiles, the change on each side and whether Flink's
//! followed statebench's prediction.

use std::fmt::Write as _;
use std::path::Path;

use serde_json::Value;

use super::{FlinkError, ProfileRun};
use crate::config::units::human_bytes;
use crate::flink::diagnose::log::LogEvidence;
use crate::model::metrics::Tickers;
use crate::summary::Summary;

/// One RocksDB instance's run, in the numbers the side by side compares.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Side {
    pub events: u64,
    /// Events over the seconds from the first record to the end of input.
    pub events_per_sec: f64,
    pub flushes: u64,
    /// Flushes the WriteBufferManager forced.
    pub wbm_flushes: u64,
    /// "Stopping writes because ..." and "Stalling writes because ..." lines of the LOG.
    pub write_stops: u64,
    pub write_delays: u64,
    pub stall_micros: u64,
    pub user_bytes: u64,
    pub flush_bytes: u64,
    pub compaction_bytes: u64,
    pub compactions: u64,
    /// The read path, from each side's RocksDB statistics: point lookups (Gets),
    /// block-cache hits and misses by block type (a miss reads the block from its file),
    /// iterator seeks, nexts and the entries they stepped over, and the live SST at the end.
    pub lookups: u64,
    pub cache: BlockCache,
    pub iterator_seeks: u64,
    pub iterator_nexts: u64,
    pub iterator_skips: u64,
    pub live_sst_bytes: u64,
}

/// Block-cache lookups by block type: (hits, misses).
#[derive(Debug, Clone, Copy, Default, serde::Serialize)]
pub struct BlockCache {
    pub data: (u64, u64),
    pub filter: (u64, u64),
    pub index: (u64, u64),
}

impl BlockCache {
    /// Hits of all lookups of a block type; None without any.
    fn hit_rate((hits, misses): (u64, u64)) -> Option<f64> {
        let all = hits + misses;
        (all > 0).then(|| hits as f64 / all as f64)
    }
}

impl Side {
    /// Blocks of a type read from their files per point lookup.
    fn per_lookup(&self, (_, misses): (u64, u64)) -> f64 {
        misses as f64 / self.lookups.max(1) as f64
    }

    fn per_event(&self, n: u64) -> f64 {
        n as f64 / self.events.max(1) as f64
    }
}

/// The one RocksDB instance whose LOG (LOG.old.* first; Flink's copies are flink-LOG*) is in
/// `dir`, read as `diagnose` reads it.
fn instance_log(dir: &Path) -> Result<LogEvidence, FlinkError> {
    let mut found = crate::flink::diagnose::instances_in(dir)
        .map_err(|e| FlinkError::Job(format!("{}: {e}", dir.display())))?;
    match found.len() {
        1 => Ok(found.remove(0).log),
        n => Err(FlinkError::Job(format!(
            "{}: {n} RocksDB LOGs where one instance's was expected",
            dir.display()
        ))),
    }
}

fn from_log(side: &mut Side, log: &LogEvidence) {
    side.wbm_flushes = log
        .flushes
        .iter()
        .filter(|f| f.reason.contains("Write Buffer Manager"))
        .count() as u64;
    side.write_stops = log.stops.values().sum();
    side.write_delays = log.stalls.values().sum();
}

/// Flink's subtask: what the parity operator wrote into `dir` when its input ended
/// (flink.json: the job's counters and RocksDB's statistics; flink-LOG: RocksDB's LOG).
pub fn flink_side(dir: &Path) -> Result<Side, FlinkError> {
    let path = dir.join("flink.json");
    let text = std::fs::read_to_string(&path).map_err(|e| {
        FlinkError::Job(format!(
            "{}: {e} (the job finished without measuring: did its input end?)",
            path.display()
        ))
    })?;
    let json: Value = serde_json::from_str(&text)
        .map_err(|e| FlinkError::Job(format!("{}: {e}", path.display())))?;
    let ticker = |name: &str| json["tickers"][name].as_u64().unwrap_or(0);
    let elapsed_ms = json["job"]["elapsed_ms"].as_u64().unwrap_or(0);
    let mut side = Side {
        events: json["job"]["events"].as_u64().unwrap_or(0),
        flushes: json["histograms"]["FLUSH_TIME_count"].as_u64().unwrap_or(0),
        compactions: json["histograms"]["COMPACTION_TIME_count"]
            .as_u64()
            .unwrap_or(0),
        stall_micros: ticker("STALL_MICROS"),
        user_bytes: ticker("BYTES_WRITTEN"),
        flush_bytes: ticker("FLUSH_WRITE_BYTES"),
        compaction_bytes: ticker("COMPACT_WRITE_BYTES"),
        lookups: ticker("NUMBER_KEYS_READ"),
        cache: BlockCache {
            data: (
                ticker("BLOCK_CACHE_DATA_HIT"),
                ticker("BLOCK_CACHE_DATA_MISS"),
            ),
            filter: (
                ticker("BLOCK_CACHE_FILTER_HIT"),
                ticker("BLOCK_CACHE_FILTER_MISS"),
            ),
            index: (
                ticker("BLOCK_CACHE_INDEX_HIT"),
                ticker("BLOCK_CACHE_INDEX_MISS"),
            ),
        },
        iterator_seeks: ticker("NUMBER_DB_SEEK"),
        iterator_nexts: ticker("NUMBER_DB_NEXT"),
        iterator_skips: ticker("NUMBER_ITER_SKIP"),
        live_sst_bytes: json["job"]["live_sst_bytes"].as_u64().unwrap_or(0),
        ..Side::default()
    };
    from_log(&mut side, &instance_log(dir)?);
    // The subtask's own clock, first record to end of input (the LOG's span ends at its last
    // line, which a profile that rarely flushes writes early).
    side.events_per_sec = if elapsed_ms > 0 {
        side.events as f64 * 1000.0 / elapsed_ms as f64
    } else {
        0.0
    };
    Ok(side)
}

/// statebench's run: its summary, its RocksDB's tickers at the end (`tickers`: the read path,
/// counted as Flink's side counts it), and the LOG of its RocksDB instance under `data`.
pub fn statebench_side(
    summary: &Summary,
    tickers: &Tickers,
    data: &Path,
) -> Result<Side, FlinkError> {
    let mut side = Side {
        events: summary.events,
        flushes: summary.flushes,
        compactions: summary.compactions,
        stall_micros: summary.stall_micros,
        user_bytes: summary.user_bytes_written,
        flush_bytes: summary.flush_bytes_written,
        compaction_bytes: summary.compaction_bytes_written,
        // RocksDB's own counts, as Flink's side reads its tickers: point lookups are Gets
        // (rocksdb.number.keys.read), iteration includes the timer queue's.
        lookups: tickers.keys_read,
        cache: BlockCache {
            data: (tickers.data_hit, tickers.data_miss),
            filter: (tickers.filter_hit, tickers.filter_miss),
            index: (tickers.index_hit, tickers.index_miss),
        },
        iterator_seeks: tickers.iterator_seeks,
        iterator_nexts: tickers.iterator_nexts,
        iterator_skips: summary.iterator_skips,
        live_sst_bytes: summary.live_sst_bytes,
        ..Side::default()
    };
    let db = find_log_dir(data).ok_or_else(|| {
        FlinkError::Job(format!(
            "{}: statebench's run left no RocksDB LOG",
            data.display()
        ))
    })?;
    from_log(&mut side, &instance_log(&db)?);
    side.events_per_sec = summary.events_per_sec;
    // statebench counts FRocksDB 6.20's switches as the WriteBufferManager's; its RocksDB 11
    // LOG names them manual.
    side.wbm_flushes = summary.wbm_flushes;
    Ok(side)
}

fn find_log_dir(dir: &Path) -> Option<std::path::PathBuf> {
    if dir.join("LOG").is_file() {
        return Some(dir.to_path_buf());
    }
    std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .filter(|e| e.path().is_dir())
        .find_map(|e| find_log_dir(&e.path()))
}

/// The metrics compared, with how each is written and whether the change judges it.
struct Metric {
    name: &'static str,
    get: fn(&Side) -> f64,
    bytes: bool,
    /// Judged in the change from one profile to the other (what a profile fix moves): the
    /// smallest change on a side that counts as one (below it, noise: a flush or two, a few
    /// hundred ms of stall time).
    judged: Option<f64>,
}

const fn metric(
    name: &'static str,
    get: fn(&Side) -> f64,
    bytes: bool,
    judged: Option<f64>,
) -> Metric {
    Metric {
        name,
        get,
        bytes,
        judged,
    }
}

/// A hit rate in percent (NaN without lookups of that block type: shown as n/a).
fn percent(rate: Option<f64>) -> f64 {
    rate.map_or(f64::NAN, |r| r * 100.0)
}

const METRICS: [Metric; 21] = [
    metric("events (the subtask's)", |s| s.events as f64, false, None),
    // statebench is paced at Flink's rate: equal unless it fell behind.
    metric(
        "events/s (paced at Flink's)",
        |s| s.events_per_sec,
        false,
        None,
    ),
    metric("flushes", |s| s.flushes as f64, false, Some(5.0)),
    metric(
        "flushes forced by the WBM",
        |s| s.wbm_flushes as f64,
        false,
        Some(5.0),
    ),
    metric(
        "write stops (LOG)",
        |s| s.write_stops as f64,
        false,
        Some(5.0),
    ),
    metric("write delays (LOG)", |s| s.write_delays as f64, false, None),
    metric(
        "stall time (ms)",
        |s| s.stall_micros as f64 / 1000.0,
        false,
        Some(500.0),
    ),
    metric(
        "bytes written by the job",
        |s| s.user_bytes as f64,
        true,
        None,
    ),
    metric("flush bytes", |s| s.flush_bytes as f64, true, None),
    metric(
        "compaction bytes written",
        |s| s.compaction_bytes as f64,
        true,
        None,
    ),
    // The read path: what a filter, a block size, an index type or a cache size changes.
    metric("point lookups", |s| s.lookups as f64, false, None),
    metric(
        "data-block cache hits %",
        |s| percent(BlockCache::hit_rate(s.cache.data)),
        false,
        None,
    ),
    metric(
        "filter-block cache hits %",
        |s| percent(BlockCache::hit_rate(s.cache.filter)),
        false,
        None,
    ),
    metric(
        "index-block cache hits %",
        |s| percent(BlockCache::hit_rate(s.cache.index)),
        false,
        None,
    ),
    // Blocks read from files (cache misses) per point lookup: a bloom filter's effect is
    // fewer data blocks read for a few filter blocks.
    metric(
        "data blocks read / lookup",
        |s| s.per_lookup(s.cache.data),
        false,
        Some(0.05),
    ),
    metric(
        "filter blocks read / lookup",
        |s| s.per_lookup(s.cache.filter),
        false,
        Some(0.05),
    ),
    metric(
        "index blocks read / lookup",
        |s| s.per_lookup(s.cache.index),
        false,
        Some(0.05),
    ),
    metric(
        "iterator seeks / element",
        |s| s.per_event(s.iterator_seeks),
        false,
        Some(0.1),
    ),
    metric(
        "iterator nexts / element",
        |s| s.per_event(s.iterator_nexts),
        false,
        Some(0.5),
    ),
    metric(
        "entries skipped / element",
        |s| s.per_event(s.iterator_skips),
        false,
        Some(0.5),
    ),
    metric("live SST", |s| s.live_sst_bytes as f64, true, None),
];

fn show(v: f64, bytes: bool) -> String {
    if v.is_nan() {
        "n/a".to_string()
    } else if bytes {
        human_bytes(v)
    } else if v.fract() == 0.0 || v >= 100.0 {
        format!("{v:.0}")
    } else if v.abs() < 1.0 {
        // Blocks read per lookup, seeks per element: 0.012 is not 0.0.
        format!("{v:.3}")
    } else {
        format!("{v:.1}")
    }
}

/// How one metric moved from the first profile to the second on each side.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Change {
    pub metric: &'static str,
    /// The read path's (block reads, iteration) or the write path's (flushes, stalls).
    pub read_path: bool,
    /// (first profile, second profile); `{"before": a, "after": b}` in JSON.
    #[serde(serialize_with = "before_after")]
    pub flink: (f64, f64),
    #[serde(serialize_with = "before_after")]
    pub statebench: (f64, f64),
    pub verdict: Verdict,
}

fn before_after<S: serde::Serializer>(pair: &(f64, f64), s: S) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeStruct as _;
    let mut out = s.serialize_struct("BeforeAfter", 2)?;
    out.serialize_field("before", &pair.0)?;
    out.serialize_field("after", &pair.1)?;
    out.end()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// Same direction, and Flink's relative change at least half of statebench's.
    AsPredicted,
    /// statebench predicted (almost) no change, and Flink did not move by half or more.
    NothingPredicted,
    NotAsPredicted,
}

/// A relative change below this is "no change".
const NO_CHANGE: f64 = 0.10;

fn relative(a: f64, b: f64) -> f64 {
    if a == 0.0 {
        if b == 0.0 { 0.0 } else { 1.0 }
    } else {
        (b - a) / a
    }
}

/// Judges the change from `a` to `b` (the first and the second profile's runs).
pub fn changes(a: &ProfileRun, b: &ProfileRun) -> Vec<Change> {
    METRICS
        .iter()
        .filter_map(|m| m.judged.map(|floor| (m, floor)))
        .map(|(m, floor)| {
            let f = ((m.get)(&a.flink), (m.get)(&b.flink));
            let s = ((m.get)(&a.statebench), (m.get)(&b.statebench));
            let (rf, rs) = (relative(f.0, f.1), relative(s.0, s.1));
            // A change smaller than the floor is noise, whatever its ratio (3 -> 2 flushes);
            // but a figure of a fifth of the floor or more that falls to zero moved (a fix that
            // ends flushes ends them; 3 ms of stall time gone is still noise).
            let moved = |(x, y): (f64, f64), r: f64| {
                ((y - x).abs() >= floor || (y == 0.0 && x >= floor / 5.0)) && r.abs() >= NO_CHANGE
            };
            let verdict = if !moved(s, rs) {
                // Nothing predicted: Flink must not have moved by half or more either.
                if moved(f, rf) && rf.abs() >= 0.5 {
                    Verdict::NotAsPredicted
                } else {
                    Verdict::NothingPredicted
                }
            } else if moved(f, rf)
                && rf.signum() == rs.signum()
                && rf.abs() >= 0.5 * rs.abs().min(1.0)
            {
                Verdict::AsPredicted
            } else {
                Verdict::NotAsPredicted
            };
            Change {
                metric: m.name,
                read_path: m.name.contains("/ lookup") || m.name.contains("/ element"),
                flink: f,
                statebench: s,
                verdict,
            }
        })
        .collect()
}

/// A figure for JSON: None for n/a.
fn finite(v: f64) -> Option<f64> {
    v.is_finite().then_some(v)
}

/// The side by side as JSON (`flink run --json`): per profile both sides' numbers, and with two
/// profiles each judged change.
pub fn to_json(runs: &[ProfileRun], parallelism: u32) -> serde_json::Value {
    let changes = match runs {
        [a, b] => changes(a, b),
        _ => Vec::new(),
    };
    serde_json::json!({
        "parallelism": parallelism,
        "compared": "one of Flink's subtasks against statebench on its events",
        "subtask": runs.first().map(|r| r.subtask),
        "profiles": runs.iter().map(|r| serde_json::json!({
            "profile": r.profile,
            "notes": r.notes,
            "subtask_events": r.subtask_events,
            "flink": r.flink,
            "statebench": r.statebench,
            // Every row of the table (n/a: null).
            "rows": METRICS.iter().map(|m| serde_json::json!({
                "metric": m.name,
                "flink": finite((m.get)(&r.flink)),
                "statebench": finite((m.get)(&r.statebench)),
            })).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
        "changes": changes,
    })
}

/// The side by side, as the terminal prints it.
pub fn render(runs: &[ProfileRun], parallelism: u32) -> String {
    let mut out = String::new();
    for run in runs {
        let _ = writeln!(
            out,
            "\nprofile '{}': Flink subtask {} of {parallelism} against statebench on the same events (subtasks' events: {})",
            run.profile,
            run.subtask,
            run.subtask_events
                .iter()
                .map(u64::to_string)
                .collect::<Vec<_>>()
                .join(" / ")
        );
        for note in &run.notes {
            let _ = writeln!(out, "  note: {note}");
        }
        let _ = writeln!(
            out,
            "  {:<30} {:>14} {:>14} {:>10}",
            "metric", "Flink", "statebench", "sb / Flink"
        );
        for m in &METRICS {
            let (f, s) = ((m.get)(&run.flink), (m.get)(&run.statebench));
            let ratio = if f.is_nan() || s.is_nan() {
                "-".to_string()
            } else if f > 0.0 {
                format!("{:.2}", s / f)
            } else if s == 0.0 {
                "=".to_string()
            } else {
                "-".to_string()
            };
            let _ = writeln!(
                out,
                "  {:<30} {:>14} {:>14} {:>10}",
                m.name,
                show(f, m.bytes),
                show(s, m.bytes),
                ratio
            );
        }
    }
    if let [a, b] = runs {
        let _ = writeln!(
            out,
            "\n'{}' -> '{}': did Flink's RocksDB move as statebench predicted (same direction, at least half the relative change)?",
            a.profile, b.profile
        );
        for c in changes(a, b) {
            let verdict = match c.verdict {
                Verdict::AsPredicted => "as predicted",
                Verdict::NothingPredicted => "no change predicted",
                Verdict::NotAsPredicted => "NOT as predicted",
            };
            let _ = writeln!(
                out,
                "  {:<30} Flink {} -> {}, statebench {} -> {}: {verdict}",
                c.metric,
                show(c.flink.0, false),
                show(c.flink.1, false),
                show(c.statebench.0, false),
                show(c.statebench.1, false)
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(flushes: u64, stops: u64, stall_ms: u64, sb: (u64, u64, u64)) -> ProfileRun {
        let side = |f, s, st: u64| Side {
            flushes: f,
            wbm_flushes: f,
            write_stops: s,
            stall_micros: st * 1000,
            ..Side::default()
        };
        ProfileRun {
            profile: "p".into(),
            flink: side(flushes, stops, stall_ms),
            statebench: side(sb.0, sb.1, sb.2),
            subtask: 0,
            subtask_events: vec![1, 1],
            notes: Vec::new(),
        }
    }

    #[test]
    fn a_change_is_as_predicted_in_the_same_direction_and_at_least_half_the_size() {
        // Case study 1's fix: flushes and stops fall on both sides.
        let a = run(200, 30, 2000, (230, 35, 2500));
        let b = run(20, 0, 0, (12, 0, 0));
        let verdicts: Vec<Verdict> = changes(&a, &b).iter().map(|c| c.verdict).collect();
        // The write path moved as predicted; the read path, unmeasured here, not at all.
        assert!(
            verdicts[..4].iter().all(|v| *v == Verdict::AsPredicted)
                && verdicts[4..]
                    .iter()
                    .all(|v| *v == Verdict::NothingPredicted),
            "{verdicts:?}"
        );
        // Flink's flushes fell by a third where statebench predicted -95 %: under half.
        let b = run(140, 0, 0, (12, 0, 0));
        assert_eq!(changes(&a, &b)[0].verdict, Verdict::NotAsPredicted);
        // Flink's rose.
        let b = run(300, 0, 0, (12, 0, 0));
        assert_eq!(changes(&a, &b)[0].verdict, Verdict::NotAsPredicted);
        // statebench predicted no change (5 %), and Flink halved: not as predicted.
        let b = run(100, 0, 0, (241, 0, 0));
        assert_eq!(changes(&a, &b)[0].verdict, Verdict::NotAsPredicted);
        // Neither moved much: nothing predicted.
        let b = run(190, 0, 0, (241, 0, 0));
        assert_eq!(changes(&a, &b)[0].verdict, Verdict::NothingPredicted);
        // A flush or two is noise on either side, whatever its ratio.
        let small = |f, sb| changes(&run(3, 0, 0, (3, 0, 0)), &run(f, 0, 0, (sb, 0, 0)))[0].verdict;
        assert_eq!(small(3, 2), Verdict::NothingPredicted);
        assert_eq!(small(1, 3), Verdict::NothingPredicted);
        // Under the floor, but to zero on both sides (Flink 2 -> 0, statebench 4 -> 0): both
        // fell by all of it, as predicted; to zero on Flink's side alone is not.
        let to_zero =
            |f, sb| changes(&run(2, 0, 0, (4, 0, 0)), &run(f, 0, 0, (sb, 0, 0)))[0].verdict;
        assert_eq!(to_zero(0, 0), Verdict::AsPredicted);
        assert_eq!(to_zero(0, 4), Verdict::NotAsPredicted);
        // A few milliseconds of stall time gone on one side is noise still.
        let stall_gone = changes(&run(0, 0, 3, (0, 0, 0)), &run(0, 0, 0, (0, 0, 0)))[3].verdict;
        assert_eq!(stall_gone, Verdict::NothingPredicted);
        // Stall time: under half a second is noise too; Flink's 0 -> 12 s where statebench
        // saw 0 -> 0.2 s is not.
        let stall = |f, sb| changes(&run(0, 0, 0, (0, 0, 0)), &run(0, 0, f, (0, 0, sb)))[3].verdict;
        assert_eq!(stall(12_000, 200), Verdict::NotAsPredicted);
        assert_eq!(stall(300, 200), Verdict::NothingPredicted);
        // --json: both sides' numbers per profile, each change with its verdict.
        let j = to_json(&[a, b], 2);
        assert_eq!(j["profiles"][0]["flink"]["flushes"], 200);
        assert_eq!(j["profiles"][1]["statebench"]["flushes"], 241);
        assert_eq!(j["changes"][0]["metric"], "flushes");
        assert_eq!(j["changes"][0]["verdict"], "nothing-predicted");
        assert_eq!(j["changes"][2]["verdict"], "as-predicted");
        assert_eq!(j["changes"][0]["flink"]["before"], 200.0);
        assert_eq!(j["changes"][0]["statebench"]["after"], 241.0);
    }

    /// A bloom filter on a point-lookup job: data blocks read per lookup fall, filter blocks
    /// come to be read; judged on each side's own figures, per lookup.
    #[test]
    fn a_bloom_filter_is_judged_on_the_blocks_read_per_lookup() {
        let side = |lookups, data: (u64, u64), filter: (u64, u64)| Side {
            events: lookups,
            lookups,
            cache: BlockCache {
                data,
                filter,
                index: (lookups, 0),
            },
            ..Side::default()
        };
        let runs = |flink: Side, statebench: Side| ProfileRun {
            profile: "p".into(),
            flink,
            statebench,
            ..run(0, 0, 0, (0, 0, 0))
        };
        let a = runs(
            side(10_000, (2_000, 9_000), (0, 0)),
            side(10_000, (2_500, 8_500), (0, 0)),
        );
        let b = runs(
            side(10_000, (1_500, 900), (9_800, 200)),
            side(10_000, (1_600, 700), (9_900, 100)),
        );
        let verdict = |metric: &str| {
            changes(&a, &b)
                .into_iter()
                .find(|c| c.metric == metric)
                .map(|c| (c.flink, c.statebench, c.verdict))
                .unwrap()
        };
        let (f, s, v) = verdict("data blocks read / lookup");
        assert_eq!((f, s), ((0.9, 0.09), (0.85, 0.07)));
        assert_eq!(v, Verdict::AsPredicted);
        // 0 -> 0.02 filter blocks per lookup: under the floor on both sides.
        assert_eq!(
            verdict("filter blocks read / lookup").2,
            Verdict::NothingPredicted
        );
        let text = render(&[a, b], 1);
        assert!(text.contains("data-block cache hits %"), "{text}");
        assert!(text.contains("index blocks read / lookup"), "{text}");
        let json = to_json(&[runs(side(1, (0, 0), (0, 0)), side(1, (0, 0), (0, 0)))], 1);
        let rows = json["profiles"][0]["rows"].as_array().unwrap();
        let filter_hits = rows
            .iter()
            .find(|r| r["metric"] == "filter-block cache hits %")
            .unwrap();
        assert!(filter_hits["flink"].is_null(), "no filter lookups: n/a");
    }

    #[test]
    fn factory_knobs_are_the_comment_lines_of_the_export() {
        let config = "state.backend.rocksdb.writebuffer.size: 4mb\n#   io.rate-limit-per-sec: 3mb  ->  DBOptions.setRateLimiter\n# other\n";
        assert_eq!(
            super::super::factory_knobs(config),
            "io.rate-limit-per-sec: 3mb\n"
        );
    }
}
