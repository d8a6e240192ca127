//! A run's (or a segment's) summary in numbers.

pub mod checkpoints;
pub mod scorecard;

use crate::backend::metrics::{CacheHitRates, Tickers};
use crate::config::workload::SerializerKind;
use crate::durability::checkpoint::JobWork;
use crate::engine::{MetricsSnapshot, RunOutcome};
pub use crate::model::summary::{
    CacheAccesses, HitRateSummary, StateColumnFamily, Summary, WholeJob,
};
use crate::pipeline::oracle::ResultError;
use crate::profiler::CpuSample;

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
            compaction_filter_drops: tickers.compaction_filter_drops,
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

impl Summary {
    /// The summary of a run of `workload`'s job: with its operator kinds.
    pub fn for_job(mut self, workload: &crate::config::Workload) -> Summary {
        self.job = workload
            .operators()
            .iter()
            .map(|o| o.kind().to_string())
            .collect();
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::counters::CfOps;

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
