//! The engine: runs the pipeline against RocksDB on its own thread, publishes one
//! `MetricsSnapshot` per sample interval and takes `EngineCommand`s. Every client (headless
//! run, TUI, bench) sees the run only through snapshots and the outcome.
//!
//! - `snapshot`: the plain data a run produces (what clients import);
//! - `job`: one job of a run (consumer, watermark valve, operator context, oracle);
//! - `chain`: the operators after a job's first (each its own RocksDB instance);
//! - `durable`, `publish`: a job's checkpoints and savepoints; its snapshots and commands;
//! - `phases`: which jobs a run has (streaming, or backfill then catch-up) and the hand-over;
//! - `run`: what the jobs of a run share — `sampler`, `clock`, `live`: the sampling cadence,
//!   running time and the live profile.

mod attempts;
mod chain;
mod checkpointing;
mod clock;
mod finish;
mod folders;
pub use folders::{DataDir, DataDirError};
mod from_base;
pub mod identity;
mod job;
mod live;
mod phases;
mod publish;
mod recover;
mod run;
mod sampler;
pub mod snapshot;
mod two_inputs;

use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, Sender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

pub use snapshot::{
    CheckpointOutcome, CheckpointSample, JobSource, Latencies, LatencyRecorder, MetricsSnapshot,
    Op, OperatorSummary, OptionChange, Percentiles, Phase, PipelineSample, RestoreRecord,
    RunOutcome, RunState,
};

use crate::backend::BackendError;
use crate::config::profile::Knob;
use crate::config::{Profile, Workload};
use crate::pipeline::PipelineError;

pub use crate::pipeline::watermark::WATERMARK_EVERY_EVENTS;

#[derive(Debug, Clone)]
pub enum EngineCommand {
    Pause,
    Resume,
    Stop,
    /// Set `knob` to `value` (YAML syntax) on the open database; the engine edits the
    /// profile it runs with, so quick successive changes never undo each other.
    Apply {
        knob: Knob,
        value: String,
    },
    /// Kill the job between checkpoints: its in-memory state and local RocksDB are dropped and
    /// it restarts from the last completed checkpoint.
    InjectFailure,
    /// Take a savepoint now (it commits nothing: no offsets, no sink transaction).
    Savepoint(SavepointFormat),
}

/// A savepoint's format (Flink's `SavepointFormatType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SavepointFormat {
    /// Every key of every state, uncompressed, independent of RocksDB's files: portable.
    Canonical,
    /// RocksDB's own files (compressed SSTs): fast, tied to the state backend.
    Native,
}

impl SavepointFormat {
    pub fn name(self) -> &'static str {
        match self {
            SavepointFormat::Canonical => "canonical",
            SavepointFormat::Native => "native",
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error(transparent)]
    Pipeline(#[from] PipelineError),
    #[error(transparent)]
    Backend(#[from] BackendError),
    #[error("cannot start the engine thread: {0}")]
    Spawn(std::io::Error),
    #[error("the engine thread panicked: {0}")]
    Panicked(String),
    #[error("cannot start reading the log: {0}")]
    Source(String),
    #[error(transparent)]
    WorkerGone(#[from] crate::util::worker::WorkerGone),
    #[error("broker: {0}")]
    Broker(String),
    #[error("cannot restore: {0}")]
    Restore(String),
    #[error("preload: {0}")]
    Preload(String),
    /// A preload's build stopped by Ctrl-C (exit 130).
    #[error("preload: the build was stopped (Ctrl-C); its partial files are removed")]
    PreloadCancelled,
}

impl From<crate::preload::PreloadError> for EngineError {
    fn from(e: crate::preload::PreloadError) -> Self {
        use crate::preload::PreloadError as P;
        match e {
            P::Pipeline(e) => EngineError::Pipeline(e),
            P::Backend(e) => EngineError::Backend(e),
            P::Spawn(e) => EngineError::Spawn(e),
            P::Source(e) => EngineError::Source(e),
            P::WorkerGone(e) => EngineError::WorkerGone(e),
            P::Preload(e) => EngineError::Preload(e),
            P::Cancelled => EngineError::PreloadCancelled,
        }
    }
}

/// Where the job's results go.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum SinkConfig {
    /// The embedded in-process store.
    #[default]
    Memory,
    /// A Redis server (`redis://host:port`), keys under `prefix`.
    Redis { url: String, prefix: String },
}

pub struct EngineConfig {
    pub workload: Workload,
    pub profile: Profile,
    pub data_dir: PathBuf,
    /// Events to process (defaults to the workload's).
    pub events: u64,
    /// Optional cap on running time.
    pub duration: Option<Duration>,
    pub sink: SinkConfig,
    /// Events of a trace to replay instead of the generator (loaded and checked beforehand).
    pub trace: Option<std::sync::Arc<Vec<crate::pipeline::source::Event>>>,
    /// Start paused (A/B: the side whose turn it is not).
    pub start_paused: bool,
    /// Profile the CPU: each snapshot takes the samples of its interval from this tap.
    pub cpu: Option<crate::profiler::CpuTap>,
    /// Record every RocksDB operation of the job here, for `statebench replay-ops` (a workload
    /// without phases only).
    pub record_ops: Option<PathBuf>,
    /// Start from a checkpoint or savepoint instead of the source's starting offsets.
    pub restore: Option<RestoreFrom>,
    /// Failures to inject into the job.
    pub failures: FailureSpec,
    /// Savepoints to take once the job has processed so many records.
    pub savepoints: Vec<(u64, SavepointFormat)>,
    /// Start from a preloaded steady state (`run --preload`).
    pub preload: Option<crate::preload::PreloadConfig>,
}

/// Where `--restore` starts from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RestoreFrom {
    /// The newest completed checkpoint in the data directory's checkpoint store.
    Latest,
    /// A checkpoint's or savepoint's folder.
    Dir(PathBuf),
}

impl RestoreFrom {
    /// `--restore ARG` for a run on `data_dir`: `latest` (the data directory's checkpoint store
    /// must hold a completed checkpoint) or a folder with a checkpoint's metadata. The error is
    /// what the user must change, checked before anything is created.
    pub fn from_arg(arg: &str, data_dir: Option<&Path>) -> Result<RestoreFrom, String> {
        use crate::durability::checkpoint::store::{METADATA, has_completed};
        match arg {
            "latest" => {
                let store = data_dir.map(folders::checkpoint_dir).unwrap_or_default();
                if !has_completed(&store) {
                    return Err(format!(
                        "--restore latest: {} holds no completed checkpoint (run with execution.checkpointing.interval set on this --data-dir first)",
                        store.display()
                    ));
                }
                Ok(RestoreFrom::Latest)
            }
            dir => {
                let dir = PathBuf::from(dir);
                if !dir.join(METADATA).is_file() {
                    return Err(format!(
                        "--restore {}: not a completed checkpoint or savepoint (it has no {METADATA}); give 'latest' or a chk-N folder of the checkpoint store",
                        dir.display()
                    ));
                }
                Ok(RestoreFrom::Dir(dir))
            }
        }
    }
}

/// When to kill the job (it restarts from its last completed checkpoint).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FailureSpec {
    /// After the job has processed this many records (each once, in any order given).
    pub at_events: Vec<u64>,
    /// Every this long (running time), once the job has completed a checkpoint since it last
    /// started, so that a run always moves on.
    pub every: Option<Duration>,
}

impl FailureSpec {
    pub fn any(&self) -> bool {
        !self.at_events.is_empty() || self.every.is_some()
    }
}

impl EngineConfig {
    /// A run of the whole workload on the in-process store: the defaults every caller starts
    /// from (`EngineConfig { events: 10_000, ..EngineConfig::new(w, p, dir) }`).
    pub fn new(workload: Workload, profile: Profile, data_dir: impl Into<PathBuf>) -> EngineConfig {
        EngineConfig {
            events: workload.spec.events,
            workload,
            profile,
            data_dir: data_dir.into(),
            duration: None,
            sink: SinkConfig::default(),
            trace: None,
            start_paused: false,
            cpu: None,
            record_ops: None,
            restore: None,
            failures: FailureSpec::default(),
            savepoints: Vec::new(),
            preload: None,
        }
    }
}

pub struct EngineHandle {
    pub commands: Sender<EngineCommand>,
    pub snapshots: Receiver<Box<MetricsSnapshot>>,
    pub thread: EngineThread,
}

impl EngineHandle {
    /// Waits for the engine to finish and returns its outcome.
    pub fn join(self) -> Result<RunOutcome, EngineError> {
        self.thread.join()
    }

    /// Drains the snapshots still to come (so none is held) and returns the outcome once the
    /// run ends.
    pub fn finish(self) -> Result<RunOutcome, EngineError> {
        for _ in self.snapshots.iter() {}
        self.thread.join()
    }
}

/// The engine's thread, to wait for its outcome.
pub struct EngineThread(JoinHandle<Result<RunOutcome, EngineError>>);

impl EngineThread {
    /// Waits for the engine to finish and returns its outcome.
    pub fn join(self) -> Result<RunOutcome, EngineError> {
        match self.0.join() {
            Ok(result) => result,
            Err(panic) => Err(EngineError::Panicked(
                panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default(),
            )),
        }
    }
}

/// Starts the engine thread. Snapshots arrive on `snapshots`; a slow reader loses snapshots
/// (the outcome keeps them all), it never slows the engine.
pub fn spawn(config: EngineConfig) -> Result<EngineHandle, EngineError> {
    let (cmd_tx, cmd_rx) = mpsc::channel();
    let (snap_tx, snap_rx) = mpsc::sync_channel(64);
    let thread = std::thread::Builder::new()
        .name("statebench-engine".into())
        .spawn(move || phases::run(config, cmd_rx, snap_tx, Instant::now()))
        .map_err(EngineError::Spawn)?;
    Ok(EngineHandle {
        commands: cmd_tx,
        snapshots: snap_rx,
        thread: EngineThread(thread),
    })
}

/// Runs a whole workload without a live client and returns its outcome.
pub fn run_to_completion(config: EngineConfig) -> Result<RunOutcome, EngineError> {
    // The outcome keeps every snapshot.
    spawn(config)?.finish()
}
