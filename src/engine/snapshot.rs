//! The data a run produces: one `MetricsSnapshot` per sample interval (`model::snapshot`, where
//! the TUI, the report and the advisor read it) and the `RunOutcome` at its end.

pub use crate::backend::latency::{LatencyRecorder, Op};
use crate::config::Profile;
use crate::config::workload::SerializerKind;
use crate::model::counters::ResultError;
pub use crate::model::metrics::{Latencies, Percentiles};
pub use crate::model::snapshot::{
    CheckpointOutcome, CheckpointSample, JobSource, MetricsSnapshot, OperatorSummary, OptionChange,
    Phase, PipelineSample, RestoreRecord, RunState, SavepointRecord,
};
use crate::profiler::CpuProfile;

/// What a finished run hands back: every snapshot, the run-long latency totals, the profile it
/// ended on and where RocksDB wrote its effective options.
#[derive(Debug, Clone)]
pub struct RunOutcome {
    pub snapshots: Vec<MetricsSnapshot>,
    /// Latencies over the whole run.
    pub latency: Latencies,
    /// The last job's running time (paused time left out): for a job restarted after failures,
    /// from its first attempt's start, the restores included.
    pub processing_secs: f64,
    pub stopped_early: bool,
    /// The profile as it stood at the end: the one the run started on, live changes applied.
    pub profile: Profile,
    /// Every live change, oldest first (also in the snapshot of the interval it happened in).
    pub changes: Vec<OptionChange>,
    pub options_file: Option<String>,
    /// Profile knobs that RocksDB's OPTIONS file shows were not applied (should be empty).
    pub option_mismatches: Vec<String>,
    /// The serving store (sink) at the end compared with the oracle.
    pub result_error: ResultError,
    /// The job's final state compared with the oracle.
    pub state_error: ResultError,
    /// The job's final state: (user id, window index, count) for every window-stats entry.
    pub final_state: Vec<(u64, usize, i64)>,
    /// The run started from empty state, so the comparisons with the oracle apply.
    pub fresh_state: bool,
    /// How each job read the log (one entry, or backfill and catch-up).
    pub jobs: Vec<JobSource>,
    /// A bounded source read to its end: the serving store against the end-of-input truth
    /// (every window expired), independent of the watermark the job reached. None otherwise.
    pub end_of_input_error: Option<ResultError>,
    /// How the job serialized its state values (the workload's `serializer`).
    pub serializer: SerializerKind,
    /// With `--profile-cpu`: every sample of the run's running intervals, for the flamegraph
    /// and the pprof protobuf.
    pub cpu_profile: Option<CpuProfile>,
    /// Checkpoints, restores and delivery; None with checkpointing off.
    pub checkpoints: Option<CheckpointOutcome>,
    /// Each operator of the last job, in chain order (one for a single operator).
    pub operators: Vec<OperatorSummary>,
    /// What `run --preload` loaded before the job started.
    pub preload: Option<crate::model::summary::PreloadReport>,
    /// Bytes of index and of filter blocks in the states' SST files at the end.
    pub sst_index_bytes: u64,
    pub sst_filter_bytes: u64,
    /// Entries (puts, deletes, merges) in the states' SST files at the end.
    pub sst_entries: u64,
}
