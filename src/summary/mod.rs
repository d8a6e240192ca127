//! A run's (or a segment's) summary in numbers.

pub mod checkpoints;
pub mod scorecard;

use serde::Serialize;

use crate::backend::CfOps;
use crate::backend::metrics::{CacheHitRates, StallCauses, Tickers};
use crate::config::workload::SerializerKind;
use crate::durability::checkpoint::JobWork;
use crate::durability::sink::SinkCounters;
use crate::engine::{JobSource, MetricsSnapshot, OperatorSummary, RunOutcome};
use crate::pipeline::oracle::ResultError;
use crate::profiler::CpuSample;

/// Cache hit rates over the whole run, each 0..1; null when there was no access of that type
/// (never looked up is not "always missed"). `cache_accesses` says how many lookups a rate rests on.
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq, serde::Deserialize)]
#[serde(default)]
pub struct HitRateSummary {
    pub overall: Option<f64>,
    pub filter: Option<f64>,
    pub index: Option<f64>,
    pub data: Option<f64>,
}

/// Block cache lookups (hits + misses) over the whole run, by block type.
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq, Eq, serde::Deserialize)]
#[serde(default)]
pub struct CacheAccesses {
    pub overall: u64,
    pub filter: u64,
    pub index: u64,
    pub data: u64,
}

/// The run (or a segment) in numbers: the summary's lines and the JSON report's `summary`.
#[derive(Debug, Clone, Default, Serialize, PartialEq, serde::Deserialize)]
#[serde(default)]
pub struct Summary {
    /// The job's operator kinds (`frequency`, `window`, ...), one per operator of a chain, in
    /// order. Empty in summaries written before they were kept (see `Summary::kinds`).
    pub job: Vec<String>,
    /// The job's position at the end: records of the log its results cover.
    pub events: u64,
    /// Records processed in this process, replayed ones included (after a restore the records
    /// since the checkpoint are processed again: real RocksDB work). Every per-event and
    /// per-second figure divides by these: the work done in the time it took.
    pub records_processed: u64,
    /// Of `records_processed`, those read again after a restore.
    pub records_replayed: u64,
    /// Records processed per second of running time.
    pub events_per_sec: f64,
    /// New results per second of running time: records processed less those replayed after a
    /// restore (the rate a job's output advanced; equal to `events_per_sec` without restores).
    pub results_per_sec: f64,
    /// Running time: the last job's, from its first attempt (restores included).
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
    /// Of `flushes`, those the WriteBufferManager forced, and the memtable data they wrote
    /// (0 in reports written before they were counted).
    pub wbm_flushes: u64,
    pub wbm_flush_data_bytes: u64,
    pub compactions: u64,
    pub l0_files_max: u64,
    pub active_levels_max: u32,
    pub live_sst_bytes: u64,
    /// Memory beyond the budget (what gets a Flink container killed): the process's resident
    /// memory at its largest over the run's samples, RocksDB's own accounting at its largest (block cache usage, which holds
    /// the memtables the WriteBufferManager charges to it, plus table readers outside the
    /// cache) and the budget it was given (the block cache's capacity: the managed memory).
    /// Zero in reports written before they were measured.
    pub process_rss_peak_bytes: u64,
    pub rocksdb_memory_max_bytes: u64,
    pub rocksdb_memory_budget_bytes: u64,
    /// RocksDB ran with no budget at all (`memory.mode: unmanaged`).
    #[serde(default)]
    pub rocksdb_memory_unbudgeted: bool,
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
    /// How state values were serialized, and the bytes of key and value per write (puts and
    /// write-batch entries) the job handed to RocksDB.
    pub serializer: SerializerKind,
    pub bytes_per_write: f64,
    /// How each job read the log: its group, where it started and why, what it skipped.
    pub jobs: Vec<JobSource>,
    /// With `--profile-cpu`: the CPU samples of every running interval, bucketed by cause.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu: Option<CpuSample>,
    /// Checkpoints, restores and the sink's delivery; None with checkpointing off.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checkpoints: Option<checkpoints::CheckpointSummary>,
    /// After a restore from another process's checkpoint: the whole job's work, the processes
    /// before this one (up to that checkpoint) and this one, whose records per second and
    /// operations per record compare with an unfailed run's. The figures above are this
    /// process's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub whole_job: Option<WholeJob>,
    /// The job's column families that hold data (its states and event-time timers, which
    /// share the WriteBufferManager) at the end of the run. Empty in reports written before
    /// operator kinds.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub state_column_families: Vec<StateColumnFamily>,
    /// RocksDB merges (ListState appends) and iterator steps (map iteration) the job issued.
    pub merges: u64,
    pub iterator_seeks: u64,
    pub iterator_nexts: u64,
    /// Internal entries RocksDB's iterators stepped over (tombstones, older versions:
    /// `rocksdb.number.iter.skip`).
    pub iterator_skips: u64,
    /// Bytes RocksDB returned to point reads (`rocksdb.bytes.read`).
    pub get_bytes_read: u64,
    /// Each operator of the job in chain order: records in and emitted, RocksDB operations on
    /// its own instance. Empty in reports written before chains and in live findings.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub operators: Vec<OperatorSummary>,
    /// Bytes of index and of filter blocks in the states' SST files at the end of the run
    /// (RocksDB's aggregated table properties).
    pub sst_index_bytes: u64,
    pub sst_filter_bytes: u64,
    /// Entries in the states' SST files at the end (0 in reports written before they were kept).
    pub sst_entries: u64,
    /// The preloaded steady state the run started from (`run --preload`); None: none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preload: Option<crate::engine::preload::PreloadReport>,
    /// The process's CPU time (every thread's, user and system) over the run, where the client
    /// measured it (`tune`, `reproduce`, `run`): the CPU per event of a paced workload.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub process_cpu_secs: Option<f64>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// One state's (or timer queue's) column family at the end of a run.
#[derive(Debug, Clone, Default, Serialize, PartialEq, serde::Deserialize)]
#[serde(default)]
pub struct StateColumnFamily {
    pub name: String,
    /// The operator whose RocksDB instance holds it (0 for a single operator or a chain's
    /// first).
    #[serde(skip_serializing_if = "is_zero")]
    pub operator: usize,
    pub sst_files: u64,
    pub live_sst_bytes: u64,
    pub memtable_bytes: u64,
    /// RocksDB's estimate (`rocksdb.estimate-num-keys`).
    pub estimated_keys: u64,
    /// The state's TTL (ms), if it has one, and whether Flink's compaction filter cleans it.
    pub ttl_ms: Option<i64>,
    pub ttl_compaction_filter: bool,
    /// The job's operations on this column family over the run (in this process: every attempt
    /// of the job). Zero in reports written before they were counted.
    pub ops: CfOps,
    /// A column family that holds no data (a processing-time timer queue), listed for its
    /// operations alone: not one of the states that share the WriteBufferManager.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub ops_only: bool,
}

impl StateColumnFamily {
    /// Its operations per record, by kind of operation, and the bytes written: "1.00 ops/event
    /// (0.50 get, 0.50 put), 24 B/event written". Kinds with none are left out.
    pub fn ops_text(&self, records: u64) -> String {
        let o = &self.ops;
        let per = |n: u64| {
            if records == 0 {
                0.0
            } else {
                n as f64 / records as f64
            }
        };
        let kinds: Vec<String> = [
            ("get", o.gets),
            ("put", o.puts),
            ("delete", o.deletes),
            ("merge", o.merges),
            ("batched", o.batch_entries),
            ("seek", o.iterator_seeks),
            ("next", o.iterator_nexts),
        ]
        .iter()
        .filter(|(_, n)| *n > 0)
        .map(|(k, n)| format!("{} {k}", per_event(per(*n))))
        .collect();
        let mut text = format!("{} ops/event", per_event(per(o.total())));
        if !kinds.is_empty() {
            text.push_str(&format!(" ({})", kinds.join(", ")));
        }
        if o.put_bytes > 0 {
            text.push_str(&format!(
                ", {}/event written",
                crate::config::units::human_bytes(per(o.put_bytes))
            ));
        }
        text
    }
}

/// Operations per event: two decimals, four below 0.01 (a scan per thousand events is not 0).
fn per_event(v: f64) -> String {
    if v > 0.0 && v < 0.01 {
        format!("{v:.4}")
    } else {
        format!("{v:.2}")
    }
}

impl Summary {
    /// New results per second: records processed less those replayed, over the running time
    /// (`results_per_sec`, computed here also for reports written before it was kept).
    pub fn new_results_per_sec(&self) -> f64 {
        if self.processing_secs > 0.0 {
            self.records_processed.saturating_sub(self.records_replayed) as f64
                / self.processing_secs
        } else {
            0.0
        }
    }

    /// The job's operator kinds. A summary that does not keep them: one written before operator
    /// kinds (no state column families listed) was the frequency counter's; one written after
    /// them does not say (empty: the advisor's kind-specific rules then judge by the numbers).
    pub fn kinds(&self) -> Vec<&str> {
        if !self.job.is_empty() {
            self.job.iter().map(String::as_str).collect()
        } else if self.state_column_families.is_empty() {
            vec!["frequency"]
        } else {
            Vec::new()
        }
    }

    /// Whether the job runs an operator of `kind`; None when the summary does not say.
    pub fn runs(&self, kind: &str) -> Option<bool> {
        let kinds = self.kinds();
        (!kinds.is_empty()).then(|| kinds.contains(&kind))
    }

    /// The summary of a run of `workload`'s job: with its operator kinds.
    pub fn for_job(mut self, workload: &crate::config::Workload) -> Summary {
        self.job = workload
            .operators()
            .iter()
            .map(|o| o.kind().to_string())
            .collect();
        self
    }

    /// How many column families share the WriteBufferManager (Flink's memory math divides
    /// its budget among them).
    pub fn state_cf_count(&self) -> usize {
        match self
            .state_column_families
            .iter()
            .filter(|c| !c.ops_only)
            .count()
        {
            // A report that does not list them: the frequency counter's.
            0 => crate::pipeline::operators::frequency::data_column_families(),
            n => n,
        }
    }
}

/// The whole job's figures over every process it ran in (`Summary::whole_job`).
#[derive(Debug, Clone, Default, Serialize, PartialEq, serde::Deserialize)]
#[serde(default)]
pub struct WholeJob {
    pub processes: u32,
    /// Records processed, replayed ones included.
    pub records_processed: u64,
    pub records_replayed: u64,
    pub processing_secs: f64,
    pub events_per_sec: f64,
    pub rocksdb_ops_per_event: f64,
}

impl WholeJob {
    fn new(earlier: &JobWork, here: &JobWork) -> WholeJob {
        let all = earlier.plus(here);
        WholeJob {
            processes: all.processes,
            records_processed: all.records,
            records_replayed: all.replayed,
            processing_secs: all.running_secs,
            events_per_sec: all.records_per_sec(),
            rocksdb_ops_per_event: all.ops_per_record(),
        }
    }
}

impl Summary {
    /// What per-event figures divide by: the records processed (a report written before they
    /// were counted has only `events`, right for a run without restores).
    pub fn records(&self) -> u64 {
        if self.records_processed > 0 {
            self.records_processed
        } else {
            self.events
        }
    }

    pub fn new(outcome: &RunOutcome) -> Summary {
        let latency = &outcome.latency;
        Summary {
            stopped_early: outcome.stopped_early,
            p50_event_latency_us: latency.event_latency.p50_us,
            p99_event_latency_us: latency.event_latency.p99_us,
            p999_event_latency_us: latency.event_latency.p999_us,
            p99_get_latency_us: latency.get_latency.p99_us,
            p99_put_latency_us: latency.put_latency.p99_us,
            p999_put_latency_us: latency.put_latency.p999_us,
            max_put_latency_us: latency.put_latency.max_us,
            jobs: outcome.jobs.clone(),
            result_error: outcome.result_error,
            result_error_applies: outcome.fresh_state,
            state_error: outcome.state_error,
            end_of_input_error: outcome.end_of_input_error,
            // The run's whole profile has every frame (snapshots keep each interval's top few).
            cpu: outcome.cpu_profile.as_ref().map(|p| p.sample()),
            checkpoints: outcome
                .checkpoints
                .as_ref()
                .map(|c| checkpoints::CheckpointSummary::new(c, outcome.processing_secs)),
            operators: outcome.operators.clone(),
            preload: outcome.preload.clone(),
            sst_index_bytes: outcome.sst_index_bytes,
            sst_filter_bytes: outcome.sst_filter_bytes,
            sst_entries: outcome.sst_entries,
            ..Summary::of_snapshots(
                &outcome.snapshots,
                outcome.processing_secs,
                outcome.serializer,
            )
        }
    }

    /// What the snapshots alone tell (the TUI's live findings): latencies are the worst
    /// interval's, with no run-long histogram to read; the oracle's comparisons are not there.
    pub fn of_snapshots(
        snapshots: &[MetricsSnapshot],
        processing_secs: f64,
        serializer: SerializerKind,
    ) -> Summary {
        let last = snapshots.last();
        // With backfill and catch-up, the summary is the last job's (the earlier job ran on
        // its own RocksDB and is listed under `jobs`).
        let phase = last.map(|s| s.pipeline.phase);
        let snapshots: Vec<&MetricsSnapshot> = snapshots
            .iter()
            .filter(|s| Some(s.pipeline.phase) == phase)
            .collect();
        let sum = |f: &dyn Fn(&MetricsSnapshot) -> u64| snapshots.iter().map(|s| f(s)).sum::<u64>();
        let max =
            |f: &dyn Fn(&MetricsSnapshot) -> u64| snapshots.iter().map(|s| f(s)).max().unwrap_or(0);
        let worst = |f: &dyn Fn(&MetricsSnapshot) -> f64| {
            snapshots.iter().map(|s| f(s)).fold(0.0, f64::max)
        };
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
        let records = last.map_or(0, |s| s.records_processed);
        let io = last.map(|s| s.rocksdb.io).unwrap_or_default();
        let total_ops = ops.total();
        let mut summary = Summary {
            job: Vec::new(),
            events,
            records_processed: records,
            records_replayed: last.map_or(0, |s| s.records_replayed),
            events_per_sec: if processing_secs > 0.0 {
                records as f64 / processing_secs
            } else {
                0.0
            },
            // Set from the counts below (`new_results_per_sec`).
            results_per_sec: 0.0,
            processing_secs,
            whole_job: last.and_then(|s| s.earlier_processes).map(|earlier| {
                let here = JobWork {
                    records,
                    replayed: last.map_or(0, |s| s.records_replayed),
                    ops,
                    running_secs: processing_secs,
                    processes: 1,
                };
                WholeJob::new(&earlier, &here)
            }),
            stopped_early: false,
            p50_event_latency_us: worst(&|s| s.latency.event_latency.p50_us),
            p99_event_latency_us: worst(&|s| s.latency.event_latency.p99_us),
            p999_event_latency_us: worst(&|s| s.latency.event_latency.p999_us),
            p99_get_latency_us: worst(&|s| s.latency.get_latency.p99_us),
            p99_put_latency_us: worst(&|s| s.latency.put_latency.p99_us),
            p999_put_latency_us: worst(&|s| s.latency.put_latency.p999_us),
            max_put_latency_us: worst(&|s| s.latency.put_latency.max_us),
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
            wbm_flushes: tickers.wbm_flushes,
            wbm_flush_data_bytes: tickers.wbm_flush_data_bytes,
            compactions: tickers.compactions,
            l0_files_max: max(&|s| s.rocksdb.lsm.l0_files),
            active_levels_max: max(&|s| u64::from(s.rocksdb.lsm.active_levels)) as u32,
            live_sst_bytes: last.map_or(0, |s| s.rocksdb.lsm.live_sst_bytes),
            process_rss_peak_bytes: max(&|s| s.rocksdb.memory.process.rss_bytes),
            rocksdb_memory_max_bytes: max(&|s| s.rocksdb.memory.rocksdb_bytes()),
            // Unshared (memory.mode: unmanaged), RocksDB has no budget: 0.
            rocksdb_memory_budget_bytes: last
                .filter(|s| !s.rocksdb.memory.unshared)
                .map_or(0, |s| s.rocksdb.memory.block_cache_capacity),
            rocksdb_memory_unbudgeted: last.is_some_and(|s| s.rocksdb.memory.unshared),
            gets: ops.gets,
            puts: ops.puts,
            deletes: ops.deletes,
            batch_writes: ops.batch_writes,
            rocksdb_ops_per_event: if records == 0 {
                0.0
            } else {
                total_ops as f64 / records as f64
            },
            timers_fired: last.map_or(0, |s| s.pipeline.timers_fired),
            sink: last.map(|s| s.pipeline.sink).unwrap_or_default(),
            jobs: Vec::new(),
            result_error: ResultError::default(),
            result_error_applies: false,
            state_error: ResultError::default(),
            end_of_input_error: None,
            rocksdb_keys_read: tickers.keys_read,
            rocksdb_keys_written: tickers.keys_written,
            serializer,
            bytes_per_write: if ops.puts + ops.batch_entries == 0 {
                0.0
            } else {
                ops.put_bytes as f64 / (ops.puts + ops.batch_entries) as f64
            },
            cpu: snapshots
                .iter()
                .any(|s| s.cpu.is_some())
                .then(|| CpuSample::merge(snapshots.iter().filter_map(|s| s.cpu.as_ref()))),
            checkpoints: None,
            state_column_families: last.map_or_else(Vec::new, |s| {
                s.rocksdb
                    .lsm
                    .column_families
                    .iter()
                    .map(|c| StateColumnFamily {
                        name: c.name.clone(),
                        operator: c.operator,
                        sst_files: c.levels.iter().map(|l| l.files).sum(),
                        live_sst_bytes: c.levels.iter().map(|l| l.bytes).sum(),
                        memtable_bytes: c.memtable_bytes,
                        estimated_keys: c.estimated_keys,
                        ttl_ms: c.ttl_ms,
                        ttl_compaction_filter: c.ttl_compaction_filter,
                        ops: c.ops,
                        ops_only: c.ops_only,
                    })
                    .collect()
            }),
            merges: ops.merges,
            iterator_seeks: ops.iterator_seeks,
            iterator_nexts: ops.iterator_nexts,
            iterator_skips: tickers.iter_skips,
            get_bytes_read: tickers.bytes_read,
            operators: Vec::new(),
            preload: None,
            sst_index_bytes: 0,
            sst_filter_bytes: 0,
            sst_entries: 0,
            process_cpu_secs: None,
        };
        summary.results_per_sec = summary.new_results_per_sec();
        summary
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_states_line_gives_its_operations_per_event_by_kind() {
        let cf = StateColumnFamily {
            ops: CfOps {
                gets: 1_000,
                puts: 500,
                iterator_seeks: 3,
                put_bytes: 12_000,
                ..CfOps::default()
            },
            ..StateColumnFamily::default()
        };
        assert_eq!(
            cf.ops_text(1_000),
            "1.50 ops/event (1.00 get, 0.50 put, 0.0030 seek), 12 B/event written"
        );
        assert_eq!(StateColumnFamily::default().ops_text(0), "0.00 ops/event");
    }

    #[test]
    fn the_jobs_kinds_are_kept_and_old_summaries_fall_back() {
        let s = Summary {
            job: vec!["dedup".to_string(), "window".to_string()],
            ..Summary::default()
        };
        assert_eq!(s.kinds(), ["dedup", "window"]);
        assert_eq!(s.runs("window"), Some(true));
        assert_eq!(s.runs("frequency"), Some(false));
        // Kept in a saved summary; one saved without it reads as empty.
        let back: Summary = serde_json::from_str(&serde_json::to_string(&s).unwrap()).unwrap();
        assert_eq!(back.job, s.job);
        let old: Summary = serde_json::from_str(r#"{"events": 5}"#).unwrap();
        assert!(old.job.is_empty());
        // Written before operator kinds (no states listed): the frequency counter.
        assert_eq!(old.kinds(), ["frequency"]);
        // Written with states but without kinds: unknown.
        let unknown = Summary {
            state_column_families: vec![StateColumnFamily::default()],
            ..Summary::default()
        };
        assert_eq!(unknown.runs("window"), None);
    }
}
