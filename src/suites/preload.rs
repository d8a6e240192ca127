//! `bench --suite preload`: the preload's build against RocksDB's own SstFileWriter (the
//! bundled RocksDB) writing the same final entries, sorted, with the same options, in one run.
//! Both are counted in entries per CPU-second of the process; the preload passes at
//! [`FLOOR`] of the SstFileWriter's rate or more. One row per case: the build's figures, each
//! of its stages' seconds and rates, the SstFileWriter's, and the files' sizes.

use super::Case;
use crate::config::units::human_bytes;

/// The preload's entries per CPU-second must be at least this share of the SstFileWriter's.
pub const FLOOR: f64 = 0.5;

/// Memory the SstFileWriter's input may take (its entries in one buffer): a bigger state gives
/// it its first entries up to this, a rate per CPU-second all the same.
pub const YARDSTICK_MEMORY: u64 = 2 << 30;

/// The cases: issue 33's dedup of 36-byte ids on Flink's defaults, and the same at 35 M ids an
/// hour (`dedup-ids` keeps about 210 MiB under its 24 h TTL, so 10 GiB needs more ids a day).
/// Events are unused (no run follows the build).
pub const CASES: &[Case] = &[
    Case {
        name: "dedup",
        workload: "dedup-ids",
        profile: "flink-default",
        events: 0,
        memory: None,
        preload: Some("size=100MiB"),
    },
    Case {
        name: "dedup-10g",
        workload: "dedup-ids-10g",
        profile: "flink-default",
        events: 0,
        memory: None,
        preload: Some("size=10GiB"),
    },
];

/// Cases run only when `--case` names them (an hour or more, and their whole state held in
/// memory for the SstFileWriter).
pub const ON_REQUEST: &[&str] = &["dedup-10g"];

/// What a case runs, for `--list` and the progress lines.
pub fn describe(case: &Case, profile: &str) -> String {
    let on_request = if ON_REQUEST.contains(&case.name) {
        format!(
            " (only with --case {}: tens of minutes and 12 GiB of disk)",
            case.name
        )
    } else {
        String::new()
    };
    format!(
        "{} on {profile}: a fresh preload ({}) against RocksDB's SstFileWriter writing its entries{on_request}",
        case.workload,
        case.preload.unwrap_or("-"),
    )
}

/// One case's figures. Seconds are wall-clock unless named CPU (the process's, every thread).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct PreloadRow {
    pub case: String,
    /// The preload's amount (`run --preload`'s value).
    pub preload: String,
    /// Records of history the base holds, and its entries (what both sides write).
    pub records: u64,
    pub entries: u64,
    /// The whole build (`find_or_build`).
    pub build_secs: f64,
    pub build_cpu_secs: f64,
    /// The build's stages, from its manifest: sizing in wall seconds; the warm-up (with the
    /// history's spill) and the writing (sorting, the SST files, freeing) in seconds of the
    /// cores that ran them, summed over the key-group batches (they run side by side).
    pub sizing_secs: f64,
    pub warm_up_secs: f64,
    pub write_secs: f64,
    /// The process's peak resident memory after the build (VmHWM): the build's.
    pub build_peak_rss_bytes: u64,
    /// RocksDB's SstFileWriter writing the base's entries from memory: all of them, or the
    /// first of them that fit its memory ([`YARDSTICK_MEMORY`]).
    pub yardstick_entries: u64,
    pub yardstick_secs: f64,
    pub yardstick_cpu_secs: f64,
    /// The base's SST files, the base's folder on disk (its every file), and the
    /// SstFileWriter's files.
    pub sst_bytes: u64,
    pub disk_bytes: u64,
    pub yardstick_sst_bytes: u64,
}

fn per(n: u64, secs: f64) -> Option<f64> {
    (secs > 0.0).then(|| n as f64 / secs)
}

impl PreloadRow {
    /// The preload's entries per CPU-second.
    pub fn preload_rate(&self) -> Option<f64> {
        per(self.entries, self.build_cpu_secs)
    }

    /// The SstFileWriter's entries per CPU-second.
    pub fn yardstick_rate(&self) -> Option<f64> {
        per(self.yardstick_entries, self.yardstick_cpu_secs)
    }

    /// The preload's rate over the SstFileWriter's (entries per CPU-second).
    pub fn ratio(&self) -> Option<f64> {
        self.preload_rate()
            .zip(self.yardstick_rate())
            .map(|(p, y)| p / y)
    }

    /// At or above the floor.
    pub fn passes(&self) -> bool {
        self.ratio().is_some_and(|r| r >= FLOOR)
    }

    /// The verdict's line.
    pub fn verdict(&self) -> String {
        match self.ratio() {
            Some(r) => format!(
                "{}: preload at {r:.2}x of RocksDB's SstFileWriter per CPU-second (floor {FLOOR}x){}",
                self.case,
                if r >= FLOOR { "" } else { ": below the floor" }
            ),
            None => format!(
                "{}: no CPU time measured for the preload or the SstFileWriter: no verdict (floor {FLOOR}x)",
                self.case
            ),
        }
    }
}

/// The rows for `--json`: each with its rates and ratio.
pub fn json(rows: &[PreloadRow]) -> serde_json::Value {
    #[derive(serde::Serialize)]
    struct Json<'r> {
        #[serde(flatten)]
        row: &'r PreloadRow,
        preload_entries_per_cpu_sec: Option<f64>,
        yardstick_entries_per_cpu_sec: Option<f64>,
        ratio: Option<f64>,
        floor: f64,
        passes: bool,
    }
    serde_json::json!(
        rows.iter()
            .map(|row| Json {
                row,
                preload_entries_per_cpu_sec: row.preload_rate(),
                yardstick_entries_per_cpu_sec: row.yardstick_rate(),
                ratio: row.ratio(),
                floor: FLOOR,
                passes: row.passes(),
            })
            .collect::<Vec<_>>()
    )
}

fn rate(r: Option<f64>) -> String {
    r.map_or_else(|| "-".to_string(), |r| format!("{r:.0}"))
}

fn secs_and_rate(secs: f64, n: u64, unit: &str) -> String {
    format!("{secs:.1} s, {} {unit}/s", rate(per(n, secs)))
}

/// The table: a line per figure, a column per case.
pub fn render(rows: &[PreloadRow]) -> String {
    if rows.is_empty() {
        return "no cases ran\n".to_string();
    }
    type Cell = fn(&PreloadRow) -> String;
    let lines: &[(&str, Cell)] = &[
        ("preload", |r| r.preload.clone()),
        ("history records", |r| r.records.to_string()),
        ("entries", |r| r.entries.to_string()),
        ("preload: wall (s)", |r| format!("{:.1}", r.build_secs)),
        ("preload: CPU (s)", |r| format!("{:.1}", r.build_cpu_secs)),
        ("preload: entries per CPU-second", |r| {
            rate(r.preload_rate())
        }),
        ("  sizing (history records, wall)", |r| {
            secs_and_rate(r.sizing_secs, r.records, "records")
        }),
        ("  warm-up (history records, core-s)", |r| {
            secs_and_rate(r.warm_up_secs, r.records, "records")
        }),
        ("  sort, write, free (entries, core-s)", |r| {
            secs_and_rate(r.write_secs, r.entries, "entries")
        }),
        ("SstFileWriter: entries", |r| {
            r.yardstick_entries.to_string()
        }),
        ("SstFileWriter: wall (s)", |r| {
            format!("{:.1}", r.yardstick_secs)
        }),
        ("SstFileWriter: CPU (s)", |r| {
            format!("{:.1}", r.yardstick_cpu_secs)
        }),
        ("SstFileWriter: entries per CPU-second", |r| {
            rate(r.yardstick_rate())
        }),
        ("preload / SstFileWriter (per CPU-s)", |r| {
            r.ratio()
                .map_or_else(|| "-".to_string(), |x| format!("{x:.2}x"))
        }),
        ("peak RSS (the build)", |r| {
            human_bytes(r.build_peak_rss_bytes as f64)
        }),
        ("SST bytes (the base)", |r| human_bytes(r.sst_bytes as f64)),
        ("the base on disk", |r| human_bytes(r.disk_bytes as f64)),
        ("on disk / SST", |r| {
            if r.sst_bytes > 0 {
                format!("{:.2}x", r.disk_bytes as f64 / r.sst_bytes as f64)
            } else {
                "-".to_string()
            }
        }),
        ("SST bytes (SstFileWriter)", |r| {
            human_bytes(r.yardstick_sst_bytes as f64)
        }),
    ];
    let mut header = vec![String::new()];
    header.extend(rows.iter().map(|r| r.case.clone()));
    let mut table = vec![header];
    for (name, cell) in lines {
        let mut line = vec![name.to_string()];
        line.extend(rows.iter().map(cell));
        table.push(line);
    }
    super::table::render(&table, 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(build_cpu: f64, yardstick_cpu: f64) -> PreloadRow {
        PreloadRow {
            case: "dedup".to_string(),
            preload: "size=100MiB".to_string(),
            records: 6_000_000,
            entries: 1_000_000,
            build_secs: 20.0,
            build_cpu_secs: build_cpu,
            sizing_secs: 3.0,
            warm_up_secs: 10.0,
            write_secs: 5.0,
            yardstick_entries: 1_000_000,
            yardstick_secs: 2.0,
            yardstick_cpu_secs: yardstick_cpu,
            sst_bytes: 100 << 20,
            disk_bytes: 150 << 20,
            ..PreloadRow::default()
        }
    }

    fn line<'t>(table: &'t str, name: &str) -> &'t str {
        table
            .lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("no line '{name}' in\n{table}"))
    }

    #[test]
    fn the_ratio_is_entries_per_cpu_second_of_the_preload_over_the_writers() {
        // 1 M entries in 8 CPU-s against 2: 125,000 against 500,000 per CPU-second.
        let r = row(8.0, 2.0);
        assert_eq!(r.preload_rate(), Some(125_000.0));
        assert_eq!(r.yardstick_rate(), Some(500_000.0));
        assert_eq!(r.ratio(), Some(0.25));
        assert!(!r.passes());
        assert_eq!(
            r.verdict(),
            "dedup: preload at 0.25x of RocksDB's SstFileWriter per CPU-second (floor 0.5x): below the floor"
        );
        let t = render(std::slice::from_ref(&r));
        assert!(
            line(&t, "preload / SstFileWriter").ends_with("0.25x"),
            "{t}"
        );
        assert!(
            line(&t, "preload: entries per CPU").ends_with("125000"),
            "{t}"
        );
        assert!(
            line(&t, "  warm-up").ends_with("10.0 s, 600000 records/s"),
            "{t}"
        );
        assert!(
            line(&t, "  sort, write").ends_with("5.0 s, 200000 entries/s"),
            "{t}"
        );
        // The SstFileWriter's rate on the entries it wrote (a share of a state too big to hold).
        let share = PreloadRow {
            yardstick_entries: 250_000,
            yardstick_cpu_secs: 0.5,
            ..r.clone()
        };
        assert_eq!(share.yardstick_rate(), Some(500_000.0));
        assert!(line(&t, "on disk / SST").ends_with("1.50x"), "{t}");
    }

    #[test]
    fn the_floor_passes_and_no_cpu_time_gives_no_verdict() {
        let at_floor = row(4.0, 2.0);
        assert_eq!(at_floor.ratio(), Some(0.5));
        assert!(at_floor.passes());
        assert!(!at_floor.verdict().contains("below"));
        let unmeasured = row(0.0, 2.0);
        assert_eq!(unmeasured.ratio(), None);
        assert!(!unmeasured.passes());
        assert!(unmeasured.verdict().contains("no verdict"));
        assert!(line(&render(&[unmeasured]), "preload / SstFileWriter").ends_with('-'));
        let json = json(&[at_floor]);
        assert_eq!(json[0]["ratio"], 0.5);
        assert_eq!(json[0]["passes"], true);
        assert_eq!(json[0]["entries"], 1_000_000);
    }
}
