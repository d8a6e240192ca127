//! The run report: JSON with every snapshot and a summary, and the terminal summary.

use std::io::Write;
use std::path::Path;

use serde::Serialize;

use crate::backend::STATE_COLUMN_FAMILIES;
use crate::backend::metrics::{CacheHitRates, StallCauses, Tickers};
use crate::config::profile::Derived;
use crate::config::units::human_bytes;
use crate::config::{Profile, Workload};
use crate::engine::{JobSource, MetricsSnapshot, RunOutcome};
use crate::pipeline::oracle::ResultError;
use crate::pipeline::sink::SinkCounters;

pub const SCHEMA_VERSION: u32 = 1;

/// Below this many lookups a hit rate is printed with its lookup count.
const FEW_LOOKUPS: u64 = 100;

/// Cache hit rates over the whole run, each 0..1; null when there was no access of that type
/// (never looked up is not "always missed"). `cache_accesses` says how many lookups a rate rests on.
#[derive(Debug, Clone, Copy, Serialize, PartialEq)]
pub struct HitRateSummary {
    pub overall: Option<f64>,
    pub filter: Option<f64>,
    pub index: Option<f64>,
    pub data: Option<f64>,
}

/// Block cache lookups (hits + misses) over the whole run, by block type.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
pub struct CacheAccesses {
    pub overall: u64,
    pub filter: u64,
    pub index: u64,
    pub data: u64,
}

/// The directory a file will be written in (`.` for a bare file name).
pub fn parent_dir(path: &Path) -> &Path {
    path.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// The run in numbers: what the CI gate and the closing notes compare.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Summary {
    pub events: u64,
    pub events_per_sec: f64,
    pub processing_secs: f64,
    pub stopped_early: bool,
    pub p50_event_latency_us: f64,
    pub p99_event_latency_us: f64,
    pub p999_event_latency_us: f64,
    pub p99_get_latency_us: f64,
    pub p99_put_latency_us: f64,
    pub p999_put_latency_us: f64,
    pub max_put_latency_us: f64,
    pub stall_micros: u64,
    pub stall_counts: StallCauses,
    pub write_stopped_samples: u64,
    pub cache_hit_rate: HitRateSummary,
    pub cache_accesses: CacheAccesses,
    pub lookups: u64,
    pub filter_block_reads_per_lookup: f64,
    pub filter_bytes_read_per_lookup: f64,
    pub index_block_reads_per_lookup: f64,
    pub index_bytes_read_per_lookup: f64,
    pub bytes_read_per_lookup: f64,
    pub bloom_useful: u64,
    pub write_amplification: f64,
    pub user_bytes_written: u64,
    pub flush_bytes_written: u64,
    pub compaction_bytes_written: u64,
    pub flushes: u64,
    pub compactions: u64,
    pub l0_files_max: u64,
    pub active_levels_max: u32,
    pub live_sst_bytes: u64,
    pub gets: u64,
    pub puts: u64,
    pub deletes: u64,
    pub batch_writes: u64,
    pub rocksdb_ops_per_event: f64,
    pub timers_fired: u64,
    /// Writes to the serving store, their bytes, and time spent in its round trips.
    pub sink: SinkCounters,
    /// The serving store at the end against the oracle's exact counts.
    pub result_error: ResultError,
    /// False when the run continued on state from an earlier run (`--reuse`): the oracle saw
    /// only this run's events, so `result_error` and `state_error` do not apply.
    pub result_error_applies: bool,
    /// The job's RocksDB state at the end against the oracle.
    pub state_error: ResultError,
    /// Bounded runs read to their end: the serving store against the end-of-input truth
    /// (every window expired), whatever watermark the job reached.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub end_of_input_error: Option<ResultError>,
    /// RocksDB's own counters, for cross-checking the job's.
    pub rocksdb_keys_read: u64,
    pub rocksdb_keys_written: u64,
    /// How each job read the log: its group, where it started and why, what it skipped.
    pub jobs: Vec<JobSource>,
}

impl Summary {
    pub fn new(outcome: &RunOutcome) -> Summary {
        let last = outcome.snapshots.last();
        // With backfill and catch-up, the summary is the last job's (the earlier job ran on
        // its own RocksDB and is listed under `jobs`).
        let phase = last.map(|s| s.pipeline.phase);
        let snapshots: Vec<&MetricsSnapshot> = outcome
            .snapshots
            .iter()
            .filter(|s| Some(s.pipeline.phase) == phase)
            .collect();
        let sum = |f: &dyn Fn(&MetricsSnapshot) -> u64| snapshots.iter().map(|s| f(s)).sum::<u64>();
        let max =
            |f: &dyn Fn(&MetricsSnapshot) -> u64| snapshots.iter().map(|s| f(s)).max().unwrap_or(0);
        let tickers: Tickers = last.map(|s| s.rocksdb.tickers).unwrap_or_default();
        let cache = CacheHitRates::from_tickers(&tickers);
        let lookups = sum(&|s| s.rocksdb.lookups.lookups);
        let per_lookup = |v: u64| {
            if lookups == 0 {
                0.0
            } else {
                v as f64 / lookups as f64
            }
        };
        let ops = last.map(|s| s.ops).unwrap_or_default();
        let events = last.map_or(0, |s| s.events);
        let io = last.map(|s| s.rocksdb.io).unwrap_or_default();
        let total_ops = ops.gets + ops.puts + ops.deletes + ops.batch_entries;
        Summary {
            events,
            events_per_sec: if outcome.processing_secs > 0.0 {
                events as f64 / outcome.processing_secs
            } else {
                0.0
            },
            processing_secs: outcome.processing_secs,
            stopped_early: outcome.stopped_early,
            p50_event_latency_us: outcome.latency.event_latency.p50_us,
            p99_event_latency_us: outcome.latency.event_latency.p99_us,
            p999_event_latency_us: outcome.latency.event_latency.p999_us,
            p99_get_latency_us: outcome.latency.get_latency.p99_us,
            p99_put_latency_us: outcome.latency.put_latency.p99_us,
            p999_put_latency_us: outcome.latency.put_latency.p999_us,
            max_put_latency_us: outcome.latency.put_latency.max_us,
            stall_micros: tickers.stall_micros,
            stall_counts: last.map(|s| s.rocksdb.stall.causes).unwrap_or_default(),
            write_stopped_samples: sum(&|s| u64::from(s.rocksdb.stall.write_stopped)),
            cache_hit_rate: HitRateSummary {
                overall: cache.overall.rate,
                filter: cache.filter.rate,
                index: cache.index.rate,
                data: cache.data.rate,
            },
            cache_accesses: CacheAccesses {
                overall: cache.overall.hits + cache.overall.misses,
                filter: cache.filter.hits + cache.filter.misses,
                index: cache.index.hits + cache.index.misses,
                data: cache.data.hits + cache.data.misses,
            },
            lookups,
            filter_block_reads_per_lookup: per_lookup(sum(&|s| {
                s.rocksdb.lookups.filter_block_reads
            })),
            filter_bytes_read_per_lookup: per_lookup(sum(&|s| s.rocksdb.lookups.filter_bytes_read)),
            index_block_reads_per_lookup: per_lookup(sum(&|s| s.rocksdb.lookups.index_block_reads)),
            index_bytes_read_per_lookup: per_lookup(sum(&|s| s.rocksdb.lookups.index_bytes_read)),
            bytes_read_per_lookup: per_lookup(sum(&|s| s.rocksdb.lookups.bytes_read)),
            bloom_useful: tickers.bloom_useful,
            write_amplification: io.write_amplification,
            user_bytes_written: io.user_bytes_written,
            flush_bytes_written: io.flush_bytes_written,
            compaction_bytes_written: io.compaction_bytes_written,
            flushes: tickers.flushes,
            compactions: tickers.compactions,
            l0_files_max: max(&|s| s.rocksdb.lsm.l0_files),
            active_levels_max: max(&|s| u64::from(s.rocksdb.lsm.active_levels)) as u32,
            live_sst_bytes: last.map_or(0, |s| s.rocksdb.lsm.live_sst_bytes),
            gets: ops.gets,
            puts: ops.puts,
            deletes: ops.deletes,
            batch_writes: ops.batch_writes,
            rocksdb_ops_per_event: if events == 0 {
                0.0
            } else {
                total_ops as f64 / events as f64
            },
            timers_fired: last.map_or(0, |s| s.pipeline.timers_fired),
            sink: last.map(|s| s.pipeline.sink).unwrap_or_default(),
            jobs: outcome.jobs.clone(),
            result_error: outcome.result_error,
            result_error_applies: outcome.fresh_state,
            state_error: outcome.state_error,
            end_of_input_error: outcome.end_of_input_error,
            rocksdb_keys_read: tickers.keys_read,
            rocksdb_keys_written: tickers.keys_written,
        }
    }
}

#[derive(Debug, Serialize)]
pub struct Report<'a> {
    pub schema_version: u32,
    pub statebench_version: &'static str,
    pub workload: &'a Workload,
    pub profile: &'a Profile,
    pub derived: Derived,
    /// The OPTIONS file RocksDB wrote for this run: the options really in effect.
    pub rocksdb_options_file: Option<String>,
    /// Knobs the OPTIONS file shows were not applied (empty when the profile is in effect).
    pub option_mismatches: &'a [String],
    pub summary: Summary,
    pub snapshots: &'a [MetricsSnapshot],
}

impl<'a> Report<'a> {
    pub fn new(
        workload: &'a Workload,
        profile: &'a Profile,
        outcome: &'a RunOutcome,
    ) -> Report<'a> {
        Report {
            schema_version: SCHEMA_VERSION,
            statebench_version: env!("CARGO_PKG_VERSION"),
            workload,
            profile,
            derived: profile.derived(STATE_COLUMN_FAMILIES.len()),
            rocksdb_options_file: outcome.options_file.clone(),
            option_mismatches: &outcome.option_mismatches,
            summary: Summary::new(outcome),
            snapshots: &outcome.snapshots,
        }
    }

    /// Writes the JSON report atomically: a temporary file next to `path`, then a rename, so a
    /// crash never leaves a half-written report.
    pub fn write_json(&self, path: &Path) -> std::io::Result<()> {
        let mut json = serde_json::to_vec_pretty(self)?;
        json.push(b'\n');
        write_atomically(path, &json)
    }
}

/// Writes `bytes` to `path` whole or not at all: a synced temporary file in the same directory,
/// renamed into place.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut tmp = tempfile::NamedTempFile::new_in(parent_dir(path))?;
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

fn pct(v: f64) -> String {
    format!("{:.1} %", v * 100.0)
}

/// The end-of-run summary for a terminal.
pub fn render_summary(report: &Report) -> String {
    let s = &report.summary;
    let mut out = String::new();
    let mut line = |label: &str, value: String| {
        out.push_str(&format!("  {label:<34} {value}\n"));
    };
    line(
        "workload / profile",
        format!("{} / {}", report.workload.name, report.profile.name),
    );
    line(
        "events",
        format!(
            "{} in {:.1} s{}",
            s.events,
            s.processing_secs,
            if s.stopped_early {
                " (stopped early)"
            } else {
                ""
            }
        ),
    );
    line("throughput", format!("{:.0} events/s", s.events_per_sec));
    line(
        "event latency p50 / p99 / p999",
        format!(
            "{:.1} / {:.1} / {:.1} µs",
            s.p50_event_latency_us, s.p99_event_latency_us, s.p999_event_latency_us
        ),
    );
    line(
        "state get p99 / put p99 / put max",
        format!(
            "{:.1} / {:.1} / {:.0} µs",
            s.p99_get_latency_us, s.p99_put_latency_us, s.max_put_latency_us
        ),
    );
    line(
        "rocksdb ops per event",
        format!(
            "{:.2} ({} gets, {} puts, {} deletes, {} timer batches)",
            s.rocksdb_ops_per_event, s.gets, s.puts, s.deletes, s.batch_writes
        ),
    );
    line(
        "write stalls",
        format!(
            "{:.1} ms; delays/stops: memtable {}/{}, L0 {}/{}, pending-compaction {}/{}",
            s.stall_micros as f64 / 1000.0,
            s.stall_counts.memtable_limit_delays,
            s.stall_counts.memtable_limit_stops,
            s.stall_counts.l0_file_count_delays,
            s.stall_counts.l0_file_count_stops,
            s.stall_counts.pending_compaction_bytes_delays,
            s.stall_counts.pending_compaction_bytes_stops,
        ),
    );
    // "n/a" when a block type was never looked up (0 % would read as "always missed"); a rate
    // drawn from few lookups says how few.
    let hit = |rate: Option<f64>, accesses: u64| match rate {
        None => "n/a".to_string(),
        Some(r) if accesses < FEW_LOOKUPS => format!("{} of {accesses}", pct(r)),
        Some(r) => pct(r),
    };
    let (r, a) = (&s.cache_hit_rate, &s.cache_accesses);
    line(
        "block cache hit (all/filter/index/data)",
        format!(
            "{} / {} / {} / {}",
            hit(r.overall, a.overall),
            hit(r.filter, a.filter),
            hit(r.index, a.index),
            hit(r.data, a.data)
        ),
    );
    line(
        "filter blocks read per lookup",
        format!(
            "{:.4} ({} per lookup)",
            s.filter_block_reads_per_lookup,
            human_bytes(s.filter_bytes_read_per_lookup)
        ),
    );
    line(
        "index blocks read per lookup",
        format!(
            "{:.4} ({} per lookup)",
            s.index_block_reads_per_lookup,
            human_bytes(s.index_bytes_read_per_lookup)
        ),
    );
    line(
        "bytes read per lookup",
        human_bytes(s.bytes_read_per_lookup),
    );
    line(
        "flushes / compactions",
        format!("{} / {}", s.flushes, s.compactions),
    );
    line(
        "L0 files (max) / active levels (max)",
        format!("{} / {}", s.l0_files_max, s.active_levels_max),
    );
    line(
        "write amplification",
        format!(
            "{:.2} (flush {} + compaction {} / user {})",
            s.write_amplification,
            human_bytes(s.flush_bytes_written as f64),
            human_bytes(s.compaction_bytes_written as f64),
            human_bytes(s.user_bytes_written as f64)
        ),
    );
    line("live SST size", human_bytes(s.live_sst_bytes as f64));
    for job in &s.jobs {
        line(
            &format!("{} job", job.phase.name()),
            format!(
                "group '{}', {} records from {}{}{}",
                job.group,
                job.records_read,
                job.started_from,
                match (job.records_skipped, job.restored) {
                    (0, _) => String::new(),
                    (n, true) => format!(", {n} earlier records not replayed (restored state)"),
                    (n, false) => format!(", SKIPPED {n} it should have read"),
                },
                if job.committed { ", committed" } else { "" }
            ),
        );
    }
    line(
        "serving store writes",
        format!(
            "{} ({}, {} round trips, {:.1} ms waiting)",
            s.sink.writes,
            human_bytes(s.sink.bytes as f64),
            s.sink.flushes,
            s.sink.round_trip_micros as f64 / 1000.0
        ),
    );
    let e = &s.result_error;
    line(
        "result error (sink vs oracle)",
        if !s.result_error_applies {
            "n/a: the run did not start from empty state or never wrote its results".to_string()
        } else if e.is_exact() {
            format!("none: {} counts exact", e.compared)
        } else {
            format!(
                "{} over, {} under, {} missing of {}; max |error| {}",
                e.over, e.under, e.missing, e.compared, e.max_abs
            )
        },
    );
    if let (Some(e), true) = (&s.end_of_input_error, s.result_error_applies) {
        line(
            "vs end-of-input truth",
            if e.is_exact() {
                "exact: every window expired in the store".to_string()
            } else {
                format!(
                    "{} counts left over (max {}): the final watermark did not get through",
                    e.over + e.under,
                    e.max_abs
                )
            },
        );
    }
    if let Some(path) = &report.rocksdb_options_file {
        line("RocksDB OPTIONS file", path.clone());
    }
    out
}
