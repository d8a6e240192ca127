//! A run's snapshots as plain data: one `MetricsSnapshot` per sample interval (the job's
//! position and rates, its pipeline, RocksDB's metrics, checkpoints and CPU), and the records of
//! checkpoints, restores and savepoints. The engine takes them; the TUI, the report, the summary
//! and the advisor read them.

use serde::Serialize;

use super::checkpoint::{ChangelogStatus, CheckpointRecord, JobWork};
use super::counters::{
    AccessCounters, DeliveryCounters, JobCounters, Offsets, ResultError, SinkCounters,
};
use super::cpu::CpuSample;
use super::metrics::{Latencies, RocksDbSample};

/// A live option change, as the engine applied (or refused) it.
#[derive(Debug, Clone, Serialize, PartialEq, serde::Deserialize)]
pub struct OptionChange {
    /// Seconds into the run.
    pub at_secs: f64,
    pub key: String,
    pub value: String,
    pub applied: bool,
    /// What RocksDB reports now (the OPTIONS file, capacities), or why it was refused.
    pub detail: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunState {
    #[default]
    Running,
    Paused,
    Finished,
}

/// Which job of the run is working.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Phase {
    /// The one streaming job of a workload without `phases`.
    #[default]
    Streaming,
    Backfill,
    CatchUp,
}

impl Phase {
    pub fn name(self) -> &'static str {
        match self {
            Phase::Streaming => "streaming",
            Phase::Backfill => "backfill",
            Phase::CatchUp => "catch-up",
        }
    }
}

/// How one job of the run read the log.
#[derive(Debug, Clone, Serialize, PartialEq, serde::Deserialize)]
pub struct JobSource {
    pub phase: Phase,
    pub group: String,
    /// Why it started where it did ("committed offsets of group 'backfill'", "earliest", ...).
    pub started_from: String,
    pub start: Offsets,
    /// Its position when it stopped (what it committed, if it committed).
    pub end: Offsets,
    /// Records it read in this process, over all its attempts (a restart after a failure
    /// reads the records since its checkpoint again: those are counted, and in
    /// `records_replayed`).
    pub records_read: u64,
    /// Of `records_read`, those read again after a restore: since the checkpoint, up to where
    /// the failed attempt (or, after `--restore` in a new process, the killed process's last
    /// progress mark) had got to.
    #[serde(default)]
    pub records_replayed: u64,
    /// Records its state covered when it started (restored from a checkpoint or savepoint: the
    /// checkpoint's count; 0 for a job that starts from empty state).
    #[serde(default)]
    pub records_before: u64,
    /// Records a correct job would have read that this one skipped (start past the truth).
    pub records_skipped: u64,
    pub committed: bool,
    /// Counts this job wrote to the serving store.
    pub sink_writes: u64,
    /// Its state came from a savepoint: the records before its start are in that state, not
    /// replayed (they still count as skipped against what a correct job reads).
    pub restored: bool,
}

/// The pipeline's own view of itself in one sample.
#[derive(Debug, Clone, Default, Serialize, PartialEq, serde::Deserialize)]
#[serde(default)]
pub struct PipelineSample {
    pub phase: Phase,
    /// Processing time (the replay clock) at this sample, epoch ms.
    pub processing_time: i64,
    /// Per partition: records between the job's position and the log's head (the backlog).
    pub partition_lag: Vec<u64>,
    /// Source readers the valve ignores as idle (including readers without a partition).
    pub idle_readers: u32,
    /// The watermark last emitted (timers at or before it have fired).
    pub watermark: i64,
    pub max_event_time: i64,
    /// How far the watermark trails the newest event time, in ms.
    pub watermark_lag_ms: i64,
    /// Partitions the valve currently treats as idle.
    pub idle_partitions: u32,
    /// Final maximum watermarks the valve dropped because their partition was idle.
    pub dropped_final_watermarks: u64,
    pub timers_registered: u64,
    /// Events that arrived at or behind the watermark already forwarded (late).
    pub late_events: u64,
    /// Writes to the serving store so far.
    pub sink: SinkCounters,
    /// The serving store against the oracle at this sample (every few samples, and at the end).
    pub result_error: Option<ResultError>,
    /// The earliest timer still pending, if any.
    pub next_timer: Option<i64>,
    pub timers_fired: u64,
    pub job: JobCounters,
    /// Checkpoints, restores and the sink's delivery so far; None with checkpointing off.
    pub checkpoints: Option<CheckpointSample>,
}

/// Checkpointing at one sample: the run's checkpoints so far, its restores, and what the sink's
/// reader saw.
#[derive(Debug, Clone, Default, Serialize, PartialEq, serde::Deserialize)]
#[serde(default)]
pub struct CheckpointSample {
    /// full, incremental or changelog.
    pub kind: String,
    pub completed: u64,
    pub failed: u64,
    /// A checkpoint's upload is under way.
    pub in_flight: bool,
    /// The latest checkpoint, completed or failed.
    pub last: Option<CheckpointRecord>,
    /// Every checkpoint that ended since the previous snapshot (a fast interval ends several
    /// per sample), oldest first.
    pub recent: Vec<CheckpointRecord>,
    /// Bytes uploaded to the checkpoint store so far.
    pub bytes_uploaded: u64,
    /// Restarts after a failure (injected, or a kill followed by --restore).
    pub restarts: u64,
    /// The last restore's time, ms.
    pub last_restore_ms: Option<f64>,
    pub delivery: DeliveryCounters,
    /// Changelog: materialization id, lag and skips, log size since the materialization.
    pub changelog: Option<ChangelogStatus>,
    pub savepoints: u64,
}

/// One restore of the job from a checkpoint (or, with none yet, from scratch).
#[derive(Debug, Clone, Default, Serialize, PartialEq, serde::Deserialize)]
#[serde(default)]
pub struct RestoreRecord {
    /// Run time (s) when the job failed (or, for --restore, started).
    pub at_secs: f64,
    /// The checkpoint restored; None: no checkpoint had completed, the job started afresh.
    pub checkpoint: Option<u64>,
    /// Why: "injected failure", "--restore".
    pub cause: String,
    /// From the failure to the job running again: state copied and opened, source rewound.
    pub restore_ms: f64,
    /// Bytes copied from the checkpoint store.
    pub bytes: u64,
    /// Records the job reads a second time (between the checkpoint and the failure).
    pub records_replayed: u64,
}

/// One savepoint the run took.
#[derive(Debug, Clone, Default, Serialize, PartialEq, serde::Deserialize)]
#[serde(default)]
pub struct SavepointRecord {
    /// canonical or native.
    pub format: String,
    pub at_secs: f64,
    /// Its folder in the checkpoint store.
    pub path: String,
    /// Bytes it holds.
    pub bytes: u64,
    /// RocksDB's live SST files when it was taken: what a canonical savepoint is compared with.
    pub live_sst_bytes: u64,
    /// Time the job stood still for it.
    pub duration_ms: f64,
}

/// Checkpointing over a whole run.
#[derive(Debug, Clone, Default, Serialize, PartialEq, serde::Deserialize)]
#[serde(default)]
pub struct CheckpointOutcome {
    pub kind: String,
    /// Every checkpoint, completed or failed, in order.
    pub history: Vec<CheckpointRecord>,
    pub restores: Vec<RestoreRecord>,
    /// The sink's delivery guarantee and its reader's isolation level, as configured.
    pub guarantee: String,
    pub isolation: String,
    pub idempotent: bool,
    pub delivery: DeliveryCounters,
    pub savepoints: Vec<SavepointRecord>,
    /// Changelog: the backend's materialization bookkeeping at the end.
    pub changelog: Option<ChangelogStatus>,
}

/// Everything statebench knows about the run at one instant: the one data model for the
/// dashboard, the JSON report and the bench.
#[derive(Debug, Clone, Default, Serialize, PartialEq, serde::Deserialize)]
#[serde(default)]
pub struct MetricsSnapshot {
    pub seq: u64,
    /// Wall time since the run started (paused time included: the TUI's time axis).
    pub elapsed_secs: f64,
    /// Wall time this sample covers: a running sample never includes paused time (a pause
    /// closes its interval, a resume opens the next); a paused one is all paused time.
    pub interval_secs: f64,
    pub state: RunState,
    /// The job's position: records of the log its state and results cover (a job restored
    /// from a checkpoint starts at the checkpoint's count, not at 0).
    pub events: u64,
    /// Records the job processed in this process (this job's attempts together), replayed ones
    /// included: after a restore the records between the checkpoint and the failure are
    /// processed again, real RocksDB work (Flink redoes it too). The rates count these.
    pub records_processed: u64,
    /// Of `records_processed`, those read again after a restore.
    pub records_replayed: u64,
    /// After a restore from another process's checkpoint: the job's work in the processes
    /// before this one, up to that checkpoint (the whole job's rates add this process's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub earlier_processes: Option<JobWork>,
    /// Records processed in this interval (replayed ones included), and per second.
    pub events_in_interval: u64,
    pub events_per_sec: f64,
    /// Latencies in this interval.
    #[serde(flatten)]
    pub latency: Latencies,
    /// Cumulative RocksDB operations issued by the job.
    pub ops: AccessCounters,
    /// Live option changes made during this sample's interval (each appears once).
    pub changes: Vec<OptionChange>,
    pub pipeline: PipelineSample,
    pub rocksdb: RocksDbSample,
    /// With `--profile-cpu`: the process's CPU samples in this interval, bucketed by cause
    /// (every thread, RocksDB's background threads too). None when not profiling, and for a
    /// paused interval (with A/B, what ran then was the other side).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu: Option<CpuSample>,
}

/// One operator of a job: what it read, emitted and did to its RocksDB instance.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct OperatorSummary {
    /// Its place in the chain (0 reads the source).
    pub index: usize,
    /// Its kind (`job[i].kind`).
    pub kind: String,
    /// Records it processed (from the source, or from the operator before it).
    pub events_in: u64,
    /// Records it emitted (window results, join pairs, kept records...).
    pub emitted: u64,
    /// RocksDB operations on its own instance, over every attempt.
    pub ops: AccessCounters,
}
