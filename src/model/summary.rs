//! A run's (or a segment's) summary in numbers: what the report prints and the advisor's rules
//! read. The summary module computes it from a run's snapshots and outcome.

use serde::{Deserialize, Serialize};

use super::checkpoint::ChangelogStatus;
use super::counters::{CfOps, DeliveryCounters, ResultError, SinkCounters};
use super::cpu::CpuSample;
use super::metrics::StallCauses;
use super::snapshot::{JobSource, OperatorSummary, SavepointRecord};

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
    /// Entries Flink's TTL compaction filter dropped (RocksDB's COMPACTION_KEY_DROP_USER; 0 in
    /// reports written before it was counted).
    #[serde(default)]
    pub compaction_filter_drops: u64,
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
    pub checkpoints: Option<CheckpointSummary>,
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
    pub preload: Option<PreloadReport>,
    /// The process's CPU time (every thread's, user and system) over the run, where the client
    /// measured it (`tune`, `reproduce`, `run`): the CPU per event of a paced workload.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub process_cpu_secs: Option<f64>,
}

/// One state's (or timer queue's) column family at the end of a run.
#[derive(Debug, Clone, Default, Serialize, PartialEq, serde::Deserialize)]
#[serde(default)]
pub struct StateColumnFamily {
    pub name: String,
    /// The operator whose RocksDB instance holds it (0 for a single operator or a chain's
    /// first).
    #[serde(skip_serializing_if = "super::metrics::is_zero_usize")]
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
            0 => super::layout::frequency_data_column_families(),
            n => n,
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
}

/// p50 / p99 / max of one checkpoint measure.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Spread {
    pub p50: f64,
    pub p99: f64,
    pub max: f64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CheckpointSummary {
    pub kind: String,
    pub completed: u64,
    pub failed: u64,
    /// Why they failed: each reason once, with how many (`the job failed (2)`).
    pub failure_reasons: Vec<String>,
    /// Bytes uploaded per completed checkpoint (changelog: those that did not materialize).
    pub upload_bytes: Spread,
    pub sync_ms: Spread,
    pub async_ms: Spread,
    /// Bytes uploaded per minute of the run.
    pub upload_bytes_per_minute: f64,
    /// Of the SST bytes new between checkpoints: written by flushes (new data) and by
    /// compactions (rewritten data).
    pub new_flush_bytes: u64,
    pub new_compaction_bytes: u64,
    pub restarts: u64,
    pub restore_ms: Spread,
    pub records_replayed: u64,
    pub guarantee: String,
    pub isolation: String,
    pub idempotent: bool,
    pub delivery: DeliveryCounters,
    pub savepoints: Vec<SavepointRecord>,
    pub changelog: Option<ChangelogStatus>,
    /// Changelog: bytes of materializations uploaded (counted in the uploads too).
    pub materialized_bytes: u64,
}

impl Spread {
    /// Nearest-rank percentiles of `values` (all zero when empty).
    pub fn of(mut values: Vec<f64>) -> Spread {
        if values.is_empty() {
            return Spread::default();
        }
        values.sort_by(f64::total_cmp);
        let rank = |q: f64| {
            let i = ((q * values.len() as f64).ceil() as usize).clamp(1, values.len()) - 1;
            values[i]
        };
        Spread {
            p50: rank(0.5),
            p99: rank(0.99),
            max: values[values.len() - 1],
        }
    }

    /// p99 over p50: how much the tail stands out (0 when the median is 0).
    pub fn tail_ratio(&self) -> f64 {
        if self.p50 > 0.0 {
            self.p99 / self.p50
        } else {
            0.0
        }
    }
}

/// How values are serialized: Flink's POJO serializer or its Kryo fallback (`pipeline.force-kryo`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SerializerKind {
    #[default]
    Compact,
    Generic,
}

/// What a run's preload did (in the run's outcome and report).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PreloadReport {
    /// The base's folder.
    pub base: String,
    /// Built by this run (false: an earlier run's base, cloned).
    pub built: bool,
    /// Its files were written from a base of the same history for another profile (no
    /// warm-up of its own).
    pub derived: bool,
    /// Records of history in the state.
    pub records: u64,
    pub state_bytes: u64,
    pub entries: u64,
    pub file_bytes: u64,
    pub files: u64,
    /// The last level (of the fullest state's tree).
    pub level: u32,
    /// Every level holding files, top first (`levels: full`: L0 to the last; empty in
    /// reports written before it was kept: the last level alone).
    pub levels: Vec<u32>,
    pub batches: u32,
    pub build_secs: f64,
    pub clone_secs: f64,
    /// Feeding the history to the oracle.
    pub oracle_secs: f64,
    /// The oracle and the in-process store checked the keys of one in this many (1: all).
    pub check_sample: u64,
    /// `warm`: the history's last records whose keys were looked up again in every state
    /// before the run (0: a cold cache, as after a restore), the lookups, and their seconds.
    /// RocksDB's counts of them are not the run's.
    #[serde(default)]
    pub warmed_records: u64,
    #[serde(default)]
    pub warm_lookups: u64,
    #[serde(default)]
    pub warm_secs: f64,
}

impl PreloadReport {
    /// Where its files are, as the summary says it: `L3`, or `L0, L1, L2, L3` for a full tree.
    pub fn placement(&self) -> String {
        if self.levels.len() < 2 {
            return format!("L{}", self.level);
        }
        let levels: Vec<String> = self.levels.iter().map(|l| format!("L{l}")).collect();
        levels.join(", ")
    }

    /// Where the run's base came from, as the summary says it.
    pub fn origin(&self) -> &'static str {
        match (self.built, self.derived) {
            (true, true) => "written from the same history's base",
            (true, false) => "built",
            (false, _) => "kept base",
        }
    }
}
