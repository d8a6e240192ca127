//! The scorecard: the figures a Flink user weighs for one profile on one job (measured once or
//! over repeats), each with its noise band and the way that is better, how two scorecards are
//! judged figure by figure, and the one layout every command prints them in (the run summary's
//! end, the TUI's A/B, `compare`, `tune`'s rounds and `reproduce`'s proofs).
//!
//! Noise: with several runs a side, a figure's band is the runs' range (min–max), and a
//! difference counts only where the two bands do not overlap. A side of one run has no band:
//! a timing figure (events/s, CPU per event, latencies, stall time, RocksDB's sampled memory)
//! must then also move by more than [`TIMING_FLOOR`] (events/s moves about 10 % between
//! identical runs on a 2-core machine), and stall time by more than [`STALL_FLOOR_MS`]; a
//! counter (flushes, compactions, bytes, sizes) is compared exactly.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use super::Summary;
use crate::config::units::human_bytes;

/// A single run's timing figure must move by more than this share of its value to count.
pub const TIMING_FLOOR: f64 = 0.10;

/// Stall time moving by less than this (one memtable slowdown is 10–150 ms here) is noise.
pub const STALL_FLOOR_MS: f64 = 200.0;

/// Which way a figure is better.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Better {
    Higher,
    Lower,
}

/// How a figure varies between identical runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Noise {
    /// Moves with the machine's load (timings, sampled peaks).
    Timing,
    /// What RocksDB counted or the profile sets: compared exactly.
    Counter,
}

/// One figure of the scorecard.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Figure {
    EventsPerSec,
    CpuPerEvent,
    #[serde(rename = "p99")]
    P99Latency,
    #[serde(rename = "p999")]
    P999Latency,
    WriteAmp,
    BytesWrittenPerEvent,
    Flushes,
    Compactions,
    StallTime,
    BytesPerLookup,
    LiveSst,
    RocksdbMemory,
    ManagedMemory,
    TaskHeap,
}

impl Figure {
    pub const ALL: [Figure; 14] = [
        Figure::EventsPerSec,
        Figure::CpuPerEvent,
        Figure::P99Latency,
        Figure::P999Latency,
        Figure::WriteAmp,
        Figure::BytesWrittenPerEvent,
        Figure::Flushes,
        Figure::Compactions,
        Figure::StallTime,
        Figure::BytesPerLookup,
        Figure::LiveSst,
        Figure::RocksdbMemory,
        Figure::ManagedMemory,
        Figure::TaskHeap,
    ];

    /// Its name on the command line (`--allow`) and in JSON.
    pub fn name(self) -> &'static str {
        match self {
            Figure::EventsPerSec => "events-per-sec",
            Figure::CpuPerEvent => "cpu-per-event",
            Figure::P99Latency => "p99",
            Figure::P999Latency => "p999",
            Figure::WriteAmp => "write-amp",
            Figure::BytesWrittenPerEvent => "bytes-written-per-event",
            Figure::Flushes => "flushes",
            Figure::Compactions => "compactions",
            Figure::StallTime => "stall-time",
            Figure::BytesPerLookup => "bytes-per-lookup",
            Figure::LiveSst => "live-sst",
            Figure::RocksdbMemory => "rocksdb-memory",
            Figure::ManagedMemory => "managed-memory",
            Figure::TaskHeap => "task-heap",
        }
    }

    /// As a table row says it.
    pub fn label(self) -> &'static str {
        match self {
            Figure::EventsPerSec => "events/s",
            Figure::CpuPerEvent => "CPU per event",
            Figure::P99Latency => "event latency p99",
            Figure::P999Latency => "event latency p999",
            Figure::WriteAmp => "write amplification",
            Figure::BytesWrittenPerEvent => "disk bytes written / event",
            Figure::Flushes => "flushes",
            Figure::Compactions => "compactions",
            Figure::StallTime => "write stall time",
            Figure::BytesPerLookup => "bytes read / lookup",
            Figure::LiveSst => "live SST",
            Figure::RocksdbMemory => "RocksDB memory (peak)",
            Figure::ManagedMemory => "managed memory / slot",
            Figure::TaskHeap => "TaskManager task heap",
        }
    }

    pub fn better(self) -> Better {
        match self {
            Figure::EventsPerSec | Figure::TaskHeap => Better::Higher,
            _ => Better::Lower,
        }
    }

    pub fn noise(self) -> Noise {
        match self {
            Figure::EventsPerSec
            | Figure::CpuPerEvent
            | Figure::P99Latency
            | Figure::P999Latency
            | Figure::StallTime
            | Figure::RocksdbMemory => Noise::Timing,
            _ => Noise::Counter,
        }
    }

    /// The figure by its command-line name; the error lists the valid ones.
    pub fn parse(name: &str) -> Result<Figure, String> {
        let name = name.trim();
        Figure::ALL
            .into_iter()
            .find(|f| f.name() == name)
            .ok_or_else(|| {
                format!(
                    "unknown figure '{name}' (valid: {})",
                    Figure::ALL.map(Figure::name).join(", ")
                )
            })
    }

    /// Its value for one run; None where the run does not say (no lookups, no CPU measured,
    /// no TaskManager to size).
    fn read(self, s: &Summary, ctx: &Context) -> Option<f64> {
        let records = s.records();
        let per_record = |v: f64| (records > 0).then(|| v / records as f64);
        match self {
            Figure::EventsPerSec => Some(s.events_per_sec),
            // µs of the process's CPU (every thread: the job's and RocksDB's) per record.
            Figure::CpuPerEvent => s
                .process_cpu_secs
                .filter(|c| *c > 0.0)
                .and_then(|c| per_record(c * 1e6)),
            Figure::P99Latency => Some(s.p99_event_latency_us),
            Figure::P999Latency => Some(s.p999_event_latency_us),
            Figure::WriteAmp => Some(s.write_amplification),
            Figure::BytesWrittenPerEvent => {
                per_record((s.flush_bytes_written + s.compaction_bytes_written) as f64)
            }
            Figure::Flushes => Some(s.flushes as f64),
            Figure::Compactions => Some(s.compactions as f64),
            Figure::StallTime => Some(s.stall_micros as f64 / 1e3),
            Figure::BytesPerLookup => (s.lookups > 0).then_some(s.bytes_read_per_lookup),
            Figure::LiveSst => Some(s.live_sst_bytes as f64),
            Figure::RocksdbMemory => {
                (s.rocksdb_memory_max_bytes > 0).then_some(s.rocksdb_memory_max_bytes as f64)
            }
            Figure::ManagedMemory => Some(ctx.managed_memory as f64),
            Figure::TaskHeap => ctx.task_heap.map(|b| b as f64),
        }
    }

    /// `v` in the figure's unit.
    pub fn show(self, v: f64) -> String {
        match self {
            Figure::EventsPerSec | Figure::Flushes | Figure::Compactions => format!("{v:.0}"),
            Figure::CpuPerEvent | Figure::P99Latency | Figure::P999Latency => micros(v),
            Figure::WriteAmp => format!("{v:.2}"),
            Figure::StallTime if v >= 1e3 => format!("{:.2} s", v / 1e3),
            Figure::StallTime => format!("{v:.0} ms"),
            Figure::BytesWrittenPerEvent
            | Figure::BytesPerLookup
            | Figure::LiveSst
            | Figure::RocksdbMemory
            | Figure::ManagedMemory
            | Figure::TaskHeap => human_bytes(v),
        }
    }
}

/// "489.7 µs", "3.85 ms", "2.12 s".
fn micros(us: f64) -> String {
    if us >= 1e6 {
        format!("{:.2} s", us / 1e6)
    } else if us >= 1e3 {
        format!("{:.2} ms", us / 1e3)
    } else {
        format!("{us:.1} µs")
    }
}

/// What a scorecard reads beside the runs' summaries.
#[derive(Debug, Clone, Copy, Default)]
pub struct Context {
    /// The workload has a `rate:`: its throughput figure is CPU per event, it cannot go faster.
    pub paced: bool,
    /// The profile's managed memory per slot.
    pub managed_memory: u64,
    /// The task heap the profile's TaskManager has left (Flink's derivation with the profile's
    /// memory in place); None: the profile has no TaskManager to size.
    pub task_heap: Option<u64>,
}

impl Context {
    /// For `profile` on `workload`, with the task heap its TaskManager leaves (the Flink
    /// bridge derives it; None: no TaskManager to size).
    pub fn of(
        workload: &crate::config::Workload,
        profile: &crate::config::Profile,
        task_heap: Option<u64>,
    ) -> Context {
        Context {
            paced: matches!(
                workload.spec.rate,
                crate::config::workload::Rate::PerSecond(_)
            ),
            managed_memory: profile.knobs.managed_memory.0,
            task_heap,
        }
    }
}

/// One figure over a side's runs: the median and the band (min–max); None where no run says.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Score {
    pub figure: Figure,
    pub better: Better,
    pub median: Option<f64>,
    pub min: Option<f64>,
    pub max: Option<f64>,
}

/// The scorecard of one profile on one job: `runs` runs, each figure's median and band.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Scorecard {
    pub runs: usize,
    pub paced: bool,
    pub scores: Vec<Score>,
}

impl Scorecard {
    /// The scorecard of `runs` (one profile's repeats of one job).
    pub fn new(runs: &[Summary], ctx: &Context) -> Scorecard {
        let scores = Figure::ALL
            .into_iter()
            // A workload without a rate: the process's CPU is not what bounds it.
            .filter(|f| ctx.paced || *f != Figure::CpuPerEvent)
            .map(|figure| {
                let values: Vec<f64> = runs.iter().filter_map(|s| figure.read(s, ctx)).collect();
                let stats = crate::util::stats::median_min_max(&values);
                Score {
                    figure,
                    better: figure.better(),
                    median: stats.map(|s| s.0),
                    min: stats.map(|s| s.1),
                    max: stats.map(|s| s.2),
                }
            })
            .collect();
        Scorecard {
            runs: runs.len(),
            paced: ctx.paced,
            scores,
        }
    }

    pub fn get(&self, figure: Figure) -> Option<&Score> {
        self.scores.iter().find(|s| s.figure == figure)
    }

    /// The figure's median, if the runs say it.
    pub fn median(&self, figure: Figure) -> Option<f64> {
        self.get(figure).and_then(|s| s.median)
    }

    /// "3532 (3423–3767)" over several runs that differ, "3532" otherwise, "-" when unknown.
    pub fn show(&self, figure: Figure) -> String {
        match self.get(figure) {
            Some(Score {
                median: Some(m),
                min: Some(lo),
                max: Some(hi),
                ..
            }) => {
                if self.runs > 1 && lo != hi {
                    format!(
                        "{} ({}–{})",
                        figure.show(*m),
                        figure.show(*lo),
                        figure.show(*hi)
                    )
                } else {
                    figure.show(*m)
                }
            }
            _ => "-".to_string(),
        }
    }
}

/// How a figure moved from one scorecard to another.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// Beyond both sides' bands, the better way.
    Better,
    /// Beyond both sides' bands, the worse way.
    Worse,
    /// Within the bands (or the floor of a single run).
    Same,
    /// A side does not say.
    Unknown,
}

/// One figure judged between two scorecards.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Delta {
    pub figure: Figure,
    pub before: Option<f64>,
    pub after: Option<f64>,
    pub verdict: Verdict,
}

impl Delta {
    /// after / before, where both are known and before is not 0.
    pub fn ratio(&self) -> Option<f64> {
        match (self.before, self.after) {
            (Some(b), Some(a)) if b != 0.0 => Some(a / b),
            _ => None,
        }
    }

    /// The move the better way, as a share of `before` (+0.25: 25 % better); None when unknown.
    pub fn gain(&self) -> Option<f64> {
        let r = self.ratio()?;
        Some(match self.figure.better() {
            Better::Higher => r - 1.0,
            Better::Lower => 1.0 - r,
        })
    }

    /// "write amplification 0.31 -> 1.65 (5.32x)", "p999 +40 %".
    pub fn describe(&self) -> String {
        let show = |v: Option<f64>| v.map_or("-".to_string(), |v| self.figure.show(v));
        let change = match self.ratio() {
            Some(r) if r >= 2.0 || r <= 0.5 => format!(" ({r:.2}x)"),
            Some(r) => format!(" ({:+.0} %)", (r - 1.0) * 100.0),
            None => String::new(),
        };
        format!(
            "{} {} -> {}{change}",
            self.figure.label(),
            show(self.before),
            show(self.after)
        )
    }
}

/// The least `figure` moved the better way from `before` to `after` by their bands: from the
/// best of `before`'s runs to the worst of `after`'s, as a share of the former (+0.10: even
/// the worst run of `after` is 10 % better than the best of `before`). None when unknown.
pub fn band_gain(before: &Scorecard, after: &Scorecard, figure: Figure) -> Option<f64> {
    let (b, a) = (before.get(figure)?, after.get(figure)?);
    let gain = match figure.better() {
        Better::Higher => a.min? / b.max? - 1.0,
        Better::Lower => 1.0 - a.max? / b.min?,
    };
    gain.is_finite().then_some(gain)
}

/// Every figure both scorecards have, judged from `before` to `after`.
pub fn judge(before: &Scorecard, after: &Scorecard) -> Vec<Delta> {
    before
        .scores
        .iter()
        .filter_map(|b| {
            let a = after.get(b.figure)?;
            Some(Delta {
                figure: b.figure,
                before: b.median,
                after: a.median,
                verdict: verdict(b, before.runs, a, after.runs),
            })
        })
        .collect()
}

/// Better or worse only beyond both bands; a single run's timing figure also beyond the floor.
fn verdict(b: &Score, b_runs: usize, a: &Score, a_runs: usize) -> Verdict {
    let (Some(bm), Some(blo), Some(bhi), Some(am), Some(alo), Some(ahi)) =
        (b.median, b.min, b.max, a.median, a.min, a.max)
    else {
        return Verdict::Unknown;
    };
    let figure = b.figure;
    if figure.noise() == Noise::Timing {
        if b_runs < 2 || a_runs < 2 {
            let base = bm.abs().max(am.abs());
            if base == 0.0 || (am - bm).abs() <= TIMING_FLOOR * base {
                return Verdict::Same;
            }
        }
        if figure == Figure::StallTime && (am - bm).abs() < STALL_FLOOR_MS {
            return Verdict::Same;
        }
    }
    let up = alo > bhi;
    let down = ahi < blo;
    match (figure.better(), up, down) {
        (Better::Higher, true, _) | (Better::Lower, _, true) => Verdict::Better,
        (Better::Higher, _, true) | (Better::Lower, true, _) => Verdict::Worse,
        _ => Verdict::Same,
    }
}

/// The scorecards side by side, in one layout: a row per figure, a column per scorecard with
/// its runs, and with two or more the last against the first (ratio and verdict).
pub fn render(columns: &[(&str, &Scorecard)]) -> String {
    let mut out = String::new();
    let Some((_, first)) = columns.first() else {
        return out;
    };
    let last = columns
        .last()
        .map(|(_, c)| *c)
        .filter(|_| columns.len() > 1);
    let heads: Vec<String> = columns
        .iter()
        .map(|(name, c)| {
            if c.runs > 1 {
                format!("{name}, {} runs", c.runs)
            } else {
                name.to_string()
            }
        })
        .collect();
    let widths: Vec<usize> = columns
        .iter()
        .zip(&heads)
        .map(|((_, c), h)| {
            c.scores
                .iter()
                .map(|s| c.show(s.figure).chars().count())
                .chain([h.chars().count()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut head = format!("  {:<28}", "scorecard");
    for (h, w) in heads.iter().zip(&widths) {
        let _ = write!(head, " {h:>w$}");
    }
    if last.is_some() {
        head.push_str("  change");
    }
    out.push_str(head.trim_end());
    out.push('\n');
    let deltas = last.map(|l| judge(first, l));
    for score in &first.scores {
        let figure = score.figure;
        let mut row = format!("  {:<28}", figure.label());
        for ((_, c), w) in columns.iter().zip(&widths) {
            let _ = write!(row, " {:>w$}", c.show(figure));
        }
        if let Some(d) = deltas
            .as_ref()
            .and_then(|ds| ds.iter().find(|d| d.figure == figure))
        {
            let ratio = d.ratio().map_or("-".to_string(), |r| format!("{r:.2}x"));
            let word = match d.verdict {
                Verdict::Better => "better",
                Verdict::Worse => "WORSE",
                Verdict::Same => "same",
                Verdict::Unknown => "-",
            };
            let _ = write!(row, "  {ratio:>6} {word}");
        }
        out.push_str(row.trim_end());
        out.push('\n');
    }
    if last.is_some_and(|l| first.runs <= 1 || l.runs <= 1) {
        let _ = writeln!(
            out,
            "  (one run a side has no band: timings count beyond {:.0} %, counters exactly)",
            TIMING_FLOOR * 100.0
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runs(f: impl Fn(u64, &mut Summary), n: u64) -> Vec<Summary> {
        (0..n)
            .map(|i| {
                let mut s = Summary {
                    events: 10_000,
                    records_processed: 10_000,
                    ..Summary::default()
                };
                f(i, &mut s);
                s
            })
            .collect()
    }

    fn card(summaries: &[Summary]) -> Scorecard {
        Scorecard::new(
            summaries,
            &Context {
                paced: false,
                managed_memory: 64 << 20,
                task_heap: None,
            },
        )
    }

    fn verdict_of(before: &Scorecard, after: &Scorecard, figure: Figure) -> Verdict {
        judge(before, after)
            .into_iter()
            .find(|d| d.figure == figure)
            .map(|d| d.verdict)
            .unwrap()
    }

    #[test]
    fn with_repeats_a_figure_moves_only_beyond_both_bands() {
        let eps = |v: &'static [f64]| card(&runs(|i, s| s.events_per_sec = v[i as usize], 3));
        let before = eps(&[1000.0, 1100.0, 1200.0]);
        assert_eq!(
            verdict_of(
                &before,
                &eps(&[1250.0, 1300.0, 1400.0]),
                Figure::EventsPerSec
            ),
            Verdict::Better
        );
        // Overlapping bands: the same, though the median rose 9 %.
        assert_eq!(
            verdict_of(
                &before,
                &eps(&[1150.0, 1200.0, 1300.0]),
                Figure::EventsPerSec
            ),
            Verdict::Same
        );
        assert_eq!(
            verdict_of(&before, &eps(&[700.0, 800.0, 900.0]), Figure::EventsPerSec),
            Verdict::Worse
        );
        assert_eq!(before.show(Figure::EventsPerSec), "1100 (1000–1200)");
    }

    #[test]
    fn a_single_run_has_a_floor_for_timings_and_none_for_counters() {
        let one = |eps: f64, flushes: u64, stall_ms: u64| {
            card(&runs(
                |_, s| {
                    s.events_per_sec = eps;
                    s.flushes = flushes;
                    s.stall_micros = stall_ms * 1000;
                },
                1,
            ))
        };
        let before = one(1000.0, 25, 0);
        // +8 % events/s is within the floor; one flush more is a real difference.
        let after = one(1080.0, 26, 150);
        assert_eq!(
            verdict_of(&before, &after, Figure::EventsPerSec),
            Verdict::Same
        );
        assert_eq!(verdict_of(&before, &after, Figure::Flushes), Verdict::Worse);
        // 150 ms of stalls where there were none: under the stall floor.
        assert_eq!(
            verdict_of(&before, &after, Figure::StallTime),
            Verdict::Same
        );
        let after = one(1150.0, 25, 900);
        assert_eq!(
            verdict_of(&before, &after, Figure::EventsPerSec),
            Verdict::Better
        );
        assert_eq!(verdict_of(&before, &after, Figure::Flushes), Verdict::Same);
        assert_eq!(
            verdict_of(&before, &after, Figure::StallTime),
            Verdict::Worse
        );
    }

    #[test]
    fn figures_a_run_does_not_say_are_unknown_and_shown_as_a_dash() {
        // No lookups, no CPU measured, no TaskManager.
        let c = Scorecard::new(
            &runs(|_, _| {}, 1),
            &Context {
                paced: true,
                managed_memory: 1 << 20,
                task_heap: None,
            },
        );
        assert_eq!(c.show(Figure::BytesPerLookup), "-");
        assert_eq!(c.show(Figure::CpuPerEvent), "-");
        assert_eq!(c.show(Figure::TaskHeap), "-");
        assert_eq!(c.show(Figure::ManagedMemory), "1.0 MiB");
        assert_eq!(
            verdict_of(&c, &c, Figure::TaskHeap),
            Verdict::Unknown,
            "no band to judge"
        );
        // Unpaced: no CPU row at all.
        assert!(card(&runs(|_, _| {}, 1)).get(Figure::CpuPerEvent).is_none());
    }

    #[test]
    fn cpu_per_event_and_bytes_per_event_divide_by_the_records() {
        let s = runs(
            |_, s| {
                s.process_cpu_secs = Some(0.5);
                s.flush_bytes_written = 1_000_000;
                s.compaction_bytes_written = 500_000;
            },
            1,
        );
        let c = Scorecard::new(
            &s,
            &Context {
                paced: true,
                ..Context::default()
            },
        );
        assert_eq!(c.median(Figure::CpuPerEvent), Some(50.0));
        assert_eq!(c.median(Figure::BytesWrittenPerEvent), Some(150.0));
        assert_eq!(c.show(Figure::CpuPerEvent), "50.0 µs");
    }

    #[test]
    fn one_layout_with_the_last_column_judged_against_the_first() {
        let before = card(&runs(
            |_, s| {
                s.events_per_sec = 1000.0;
                s.write_amplification = 0.31;
            },
            1,
        ));
        let after = card(&runs(
            |_, s| {
                s.events_per_sec = 1050.0;
                s.write_amplification = 1.65;
            },
            1,
        ));
        let text = render(&[("before", &before), ("after", &after)]);
        let row = |label: &str| {
            text.lines()
                .find(|l| l.trim_start().starts_with(label))
                .unwrap_or_else(|| panic!("no {label} in {text}"))
                .to_string()
        };
        assert!(row("events/s").ends_with("1.05x same"), "{text}");
        assert!(
            row("write amplification").ends_with("5.32x WORSE"),
            "{text}"
        );
        // Neither side has a TaskManager: a dash in each column, and no verdict.
        let heap = row("TaskManager task heap");
        let words: Vec<&str> = heap.split_whitespace().rev().take(4).collect();
        assert_eq!(words, ["-", "-", "-", "-"], "{text}");
        assert!(text.contains("one run a side has no band"), "{text}");
        let wa = judge(&before, &after)
            .into_iter()
            .find(|d| d.figure == Figure::WriteAmp)
            .unwrap();
        assert_eq!(wa.describe(), "write amplification 0.31 -> 1.65 (5.32x)");
        // One column: no change column.
        let alone = render(&[("this run", &before)]);
        assert!(
            !alone.contains("change") && !alone.contains("no band"),
            "{alone}"
        );
    }

    #[test]
    fn figures_parse_by_name_and_a_wrong_one_lists_the_valid() {
        assert_eq!(Figure::parse("p999"), Ok(Figure::P999Latency));
        // JSON names them as the command line does.
        for f in Figure::ALL {
            assert_eq!(serde_json::to_value(f).unwrap(), f.name());
        }
        let err = Figure::parse("p9999").unwrap_err();
        assert!(err.contains("'p9999'") && err.contains("live-sst"), "{err}");
    }
}
