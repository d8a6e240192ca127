//! `bench --suite fidelity`: is a preloaded state faithful? The same records run with the
//! history preloaded and only the last records read live (from a base all in its last level,
//! and from one with every level full), and with every record read through RocksDB. What the
//! live records cost (cache hit rates by block type, flushes and compaction work per record)
//! and what the tree looks like at the end (SST bytes, the deepest level, index and filter
//! bytes) must agree within stated tolerances.

use crate::config::units::human_bytes;
use crate::engine::MetricsSnapshot;
use crate::summary::Summary;

/// What a run's last records cost, from its snapshots' cumulative counters.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Window {
    pub records: u64,
    pub hit_data: Option<f64>,
    pub hit_index: Option<f64>,
    pub hit_filter: Option<f64>,
    pub flushes: u64,
    pub compactions: u64,
    pub flush_bytes: u64,
    pub compaction_bytes: u64,
}

fn rate(hit: u64, miss: u64) -> Option<f64> {
    (hit + miss > 0).then(|| hit as f64 / (hit + miss) as f64)
}

impl Window {
    /// From the first snapshot at or after `from` records to the last one.
    pub fn of(snapshots: &[MetricsSnapshot], from: u64) -> Option<Window> {
        let last = snapshots.last()?;
        let first = snapshots
            .iter()
            .find(|s| s.records_processed >= from)
            .filter(|s| s.seq != last.seq)?;
        let (a, b) = (&first.rocksdb.tickers, &last.rocksdb.tickers);
        let d = |x: u64, y: u64| y.saturating_sub(x);
        Some(Window {
            records: d(first.records_processed, last.records_processed),
            hit_data: rate(d(a.data_hit, b.data_hit), d(a.data_miss, b.data_miss)),
            hit_index: rate(d(a.index_hit, b.index_hit), d(a.index_miss, b.index_miss)),
            hit_filter: rate(
                d(a.filter_hit, b.filter_hit),
                d(a.filter_miss, b.filter_miss),
            ),
            flushes: d(a.flushes, b.flushes),
            compactions: d(a.compactions, b.compactions),
            flush_bytes: d(a.flush_write_bytes, b.flush_write_bytes),
            compaction_bytes: d(a.compact_write_bytes, b.compact_write_bytes),
        })
    }

    fn per_record(&self, n: u64) -> f64 {
        n as f64 / self.records.max(1) as f64
    }
}

/// The tree at the end of a run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Tree {
    pub live_sst_bytes: u64,
    /// (level, files, bytes) of every level that holds files.
    pub levels: Vec<(u32, u64, u64)>,
    pub index_bytes: u64,
    pub filter_bytes: u64,
}

impl Tree {
    pub fn of(summary: &Summary, snapshots: &[MetricsSnapshot]) -> Tree {
        let levels = snapshots
            .last()
            .map(|s| {
                s.rocksdb
                    .lsm
                    .levels
                    .iter()
                    .filter(|l| l.files > 0)
                    .map(|l| (l.level, l.files, l.bytes))
                    .collect()
            })
            .unwrap_or_default();
        Tree {
            live_sst_bytes: summary.live_sst_bytes,
            levels,
            index_bytes: summary.sst_index_bytes,
            filter_bytes: summary.sst_filter_bytes,
        }
    }

    fn deepest(&self) -> (u32, u64) {
        self.levels.last().map_or((0, 0), |l| (l.0, l.2))
    }
}

/// One compared figure.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub metric: &'static str,
    pub preloaded: String,
    pub built: String,
    /// The difference as the tolerance measures it (a ratio, or percentage points).
    pub difference: String,
    pub tolerance: &'static str,
    /// None: shown, not judged.
    pub ok: Option<bool>,
}

/// Relative difference of `a` from `b`, within `tol` (0.10: 10 %).
fn within(a: f64, b: f64, tol: f64) -> (String, Option<bool>) {
    if b == 0.0 && a == 0.0 {
        return ("equal".into(), Some(true));
    }
    let r = if b > 0.0 { a / b } else { f64::INFINITY };
    (format!("{r:.3}x"), Some((r - 1.0).abs() <= tol))
}

/// `a` within a factor of `f` of `b` either way.
fn factor(a: f64, b: f64, f: f64) -> (String, Option<bool>) {
    if a <= 0.0 || b <= 0.0 {
        return within(a, b, 0.0);
    }
    let r = a / b;
    (format!("{r:.3}x"), Some(r <= f && r >= 1.0 / f))
}

/// Percentage points between two rates, within `pp`.
fn points(a: Option<f64>, b: Option<f64>, pp: f64) -> (String, Option<bool>) {
    match (a, b) {
        (Some(a), Some(b)) => {
            let d = (a - b) * 100.0;
            (format!("{d:+.1} pp"), Some(d.abs() <= pp))
        }
        (None, None) => ("neither read any".into(), None),
        _ => ("one side read none".into(), Some(false)),
    }
}

fn pct(r: Option<f64>) -> String {
    r.map_or_else(|| "n/a".into(), |r| format!("{:.1} %", r * 100.0))
}

/// The comparison: the preloaded run (`pre`: its live records) against the run built by
/// records (`built`: its last records, from `history` on).
pub fn compare(pre: (&Tree, &Window), built: (&Tree, &Window)) -> Vec<Row> {
    let (pt, pw) = pre;
    let (bt, bw) = built;
    let mut rows = Vec::new();
    let mut row = |metric, preloaded: String, built: String, tolerance, (difference, ok)| {
        rows.push(Row {
            metric,
            preloaded,
            built,
            difference,
            tolerance,
            ok,
        });
    };
    row(
        "records compared",
        pw.records.to_string(),
        bw.records.to_string(),
        "5 %",
        within(pw.records as f64, bw.records as f64, 0.05),
    );
    row(
        "live SST bytes (end)",
        human_bytes(pt.live_sst_bytes as f64),
        human_bytes(bt.live_sst_bytes as f64),
        "10 %",
        within(pt.live_sst_bytes as f64, bt.live_sst_bytes as f64, 0.10),
    );
    let ((pl, pb), (bl, bb)) = (pt.deepest(), bt.deepest());
    row(
        "deepest level and its bytes (end)",
        format!("L{pl} {}", human_bytes(pb as f64)),
        format!("L{bl} {}", human_bytes(bb as f64)),
        "same level, 25 %",
        {
            let (d, ok) = within(pb as f64, bb as f64, 0.25);
            (d, ok.map(|ok| ok && pl == bl))
        },
    );
    let shape = |t: &Tree| {
        t.levels
            .iter()
            .map(|(l, f, b)| format!("L{l} {f}/{}", human_bytes(*b as f64)))
            .collect::<Vec<_>>()
            .join(" ")
    };
    row(
        "files/bytes per level (end)",
        shape(pt),
        shape(bt),
        "shown",
        (String::new(), None),
    );
    row(
        "index block bytes (end)",
        human_bytes(pt.index_bytes as f64),
        human_bytes(bt.index_bytes as f64),
        "15 %",
        within(pt.index_bytes as f64, bt.index_bytes as f64, 0.15),
    );
    row(
        "filter block bytes (end)",
        human_bytes(pt.filter_bytes as f64),
        human_bytes(bt.filter_bytes as f64),
        "15 %",
        within(pt.filter_bytes as f64, bt.filter_bytes as f64, 0.15),
    );
    // Index blocks: a few hundred lookups of index partitions a window; the run built by
    // records alone read 61.5 % and 52.9 % in two runs.
    for (metric, a, b, tolerance, pp) in [
        (
            "cache hit: data blocks",
            pw.hit_data,
            bw.hit_data,
            "5 pp",
            5.0,
        ),
        (
            "cache hit: index blocks",
            pw.hit_index,
            bw.hit_index,
            "10 pp",
            10.0,
        ),
        (
            "cache hit: filter blocks",
            pw.hit_filter,
            bw.hit_filter,
            "5 pp",
            5.0,
        ),
    ] {
        row(metric, pct(a), pct(b), tolerance, points(a, b, pp));
    }
    row(
        "flushes per 1,000 records",
        format!("{:.3}", pw.per_record(pw.flushes) * 1000.0),
        format!("{:.3}", bw.per_record(bw.flushes) * 1000.0),
        "25 %",
        within(pw.per_record(pw.flushes), bw.per_record(bw.flushes), 0.25),
    );
    row(
        "flush bytes per record",
        human_bytes(pw.per_record(pw.flush_bytes)),
        human_bytes(bw.per_record(bw.flush_bytes)),
        "25 %",
        within(
            pw.per_record(pw.flush_bytes),
            bw.per_record(bw.flush_bytes),
            0.25,
        ),
    );
    row(
        "compactions per 1,000 records",
        format!("{:.3}", pw.per_record(pw.compactions) * 1000.0),
        format!("{:.3}", bw.per_record(bw.compactions) * 1000.0),
        "shown",
        (
            within(
                pw.per_record(pw.compactions),
                bw.per_record(bw.compactions),
                1.0,
            )
            .0,
            None,
        ),
    );
    // Three or four compactions in a window of 300,000 records: lumpy. The run built by
    // records alone wrote 1.8 and 2.7 KiB per record in two runs.
    row(
        "compaction bytes per record",
        human_bytes(pw.per_record(pw.compaction_bytes)),
        human_bytes(bw.per_record(bw.compaction_bytes)),
        "factor 2",
        factor(
            pw.per_record(pw.compaction_bytes),
            bw.per_record(bw.compaction_bytes),
            2.0,
        ),
    );
    rows
}

/// The table, and whether every judged row is within its tolerance.
pub fn render(rows: &[Row]) -> (String, bool) {
    let head = [
        "metric",
        "preloaded",
        "built by records",
        "difference",
        "tolerance",
        "",
    ];
    let mut lines: Vec<Vec<String>> = vec![head.map(String::from).to_vec()];
    for r in rows {
        lines.push(vec![
            r.metric.to_string(),
            r.preloaded.clone(),
            r.built.clone(),
            r.difference.clone(),
            r.tolerance.to_string(),
            match r.ok {
                Some(true) => "ok".into(),
                Some(false) => "FAIL".into(),
                None => String::new(),
            },
        ]);
    }
    let out = super::table::render(&lines, usize::MAX);
    (out, rows.iter().all(|r| r.ok != Some(false)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(sst: u64, deepest: (u32, u64)) -> Tree {
        Tree {
            live_sst_bytes: sst,
            levels: vec![(0, 2, 1 << 20), (deepest.0, 10, deepest.1)],
            index_bytes: 1000,
            filter_bytes: 2000,
        }
    }

    fn window(records: u64, hit: f64, flushes: u64) -> Window {
        Window {
            records,
            hit_data: Some(hit),
            hit_index: Some(0.99),
            hit_filter: Some(0.99),
            flushes,
            compactions: 10,
            flush_bytes: flushes * 1000,
            compaction_bytes: 5000,
        }
    }

    #[test]
    fn equal_runs_pass_and_a_different_tree_or_cache_fails() {
        let t = tree(1 << 30, (2, 900 << 20));
        let w = window(300_000, 0.30, 100);
        let (_, ok) = render(&compare((&t, &w), (&t, &w)));
        assert!(ok);
        // The base in the wrong level (L6 against L2): the deepest level differs.
        let l6 = tree(1 << 30, (6, 900 << 20));
        let (text, ok) = render(&compare((&l6, &w), (&t, &w)));
        assert!(!ok && text.contains("FAIL"), "{text}");
        // A cache that hits far more often (a state that is not there).
        let hot = window(300_000, 0.90, 100);
        let (_, ok) = render(&compare((&t, &hot), (&t, &w)));
        assert!(!ok);
        // Half the flushes per record.
        let (_, ok) = render(&compare((&t, &window(300_000, 0.30, 50)), (&t, &w)));
        assert!(!ok);
    }
}
