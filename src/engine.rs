//! The engine: runs the pipeline against RocksDB on its own thread, publishes one
//! `MetricsSnapshot` per sample interval and takes `EngineCommand`s. Every client (headless
//! run, bench, later the TUI) sees the run only through snapshots.

use std::path::PathBuf;
use std::sync::mpsc::{self, Receiver, Sender, SyncSender, TryRecvError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde::Serialize;

pub use crate::backend::latency::{Latencies, LatencyRecorder, Op, Percentiles};
use crate::backend::metrics::{RocksDbSample, RocksDbSampler};
use crate::backend::perf::PerfCounters;
use crate::backend::{AccessCounters, BackendError, StateBackend};
use crate::config::workload::Rate;
use crate::config::workload::{CatchUpState, OffsetReset, PhasesSpec, StartingOffsets};
use crate::config::{Millis, Profile, Workload};
use crate::pipeline::PipelineError;
use crate::pipeline::operator::{Context, FrequencyJob, JobCounters, JobMode, Operator};
use crate::pipeline::oracle::{Oracle, ResultError};
use crate::pipeline::sink::{MemorySink, RedisSink, Sink, SinkCounters};
use crate::pipeline::source::{Consumer, Log, OffsetStore, Offsets, ReadPlan, resolve_start};
use crate::pipeline::watermark::WatermarkValve;

/// Events between two watermark emissions. Flink emits periodic watermarks on a wall-clock
/// interval (200 ms); a fixed event count keeps the state traffic identical run to run.
pub const WATERMARK_EVERY_EVENTS: u64 = 64;
/// Every this many samples, a run on the in-process sink compares it with the oracle.
const COMPARE_EVERY_SAMPLES: u64 = 10;
/// Events between two looks at the clock and the command channel.
const CHECK_EVERY_EVENTS: u64 = 16;

#[derive(Debug, Clone)]
pub enum EngineCommand {
    Pause,
    Resume,
    Stop,
    /// Set knob `key` to `value` (YAML syntax) on the open database; the engine edits the
    /// profile it runs with, so quick successive changes never undo each other.
    Apply {
        key: String,
        value: String,
    },
}

/// A live option change, as the engine applied (or refused) it.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct OptionChange {
    /// Seconds into the run.
    pub at_secs: f64,
    pub key: String,
    pub value: String,
    pub applied: bool,
    /// What RocksDB reports now (the OPTIONS file, capacities), or why it was refused.
    pub detail: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RunState {
    #[default]
    Running,
    Paused,
    Finished,
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
}

/// Which job of the run is working.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
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
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct JobSource {
    pub phase: Phase,
    pub group: String,
    /// Why it started where it did ("committed offsets of group 'backfill'", "earliest", ...).
    pub started_from: String,
    pub start: Offsets,
    /// Its position when it stopped (what it committed, if it committed).
    pub end: Offsets,
    pub records_read: u64,
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
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct PipelineSample {
    pub phase: Phase,
    /// Processing time (the replay clock) at this sample, epoch ms.
    pub processing_time: i64,
    /// Per partition: records between the job's position and the log's head (the backlog).
    pub partition_lag: Vec<u64>,
    /// Source readers the valve ignores as idle (including readers without a partition).
    pub idle_readers: u32,
    pub watermark: i64,
    pub max_event_time: i64,
    /// The watermark last emitted (timers at or before it have fired).
    /// How far it trails the newest event time, in ms.
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
}

/// Everything statebench knows about the run at one instant: the one data model for the
/// dashboard, the JSON report, the advisor and the CI gate.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct MetricsSnapshot {
    pub seq: u64,
    pub elapsed_secs: f64,
    pub interval_secs: f64,
    pub state: RunState,
    pub events: u64,
    pub events_in_interval: u64,
    pub events_per_sec: f64,
    /// Latencies in this interval.
    #[serde(flatten)]
    pub latency: Latencies,
    /// Cumulative RocksDB operations issued by the job.
    pub ops: AccessCounters,
    /// Live option changes so far, oldest first.
    pub changes: Vec<OptionChange>,
    pub pipeline: PipelineSample,
    pub rocksdb: RocksDbSample,
}

/// What a finished run hands back: every snapshot, the run-long latency totals, and where RocksDB
/// wrote its effective options.
#[derive(Debug, Clone)]
pub struct RunOutcome {
    pub snapshots: Vec<MetricsSnapshot>,
    /// Latencies over the whole run.
    pub latency: Latencies,
    pub processing_secs: f64,
    pub stopped_early: bool,
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
}

/// Where the job's results go.
#[derive(Debug, Clone, Default)]
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
    /// Optional wall-clock cap.
    pub duration: Option<Duration>,
    pub sink: SinkConfig,
    /// Events of a trace to replay instead of the generator (loaded and checked beforehand).
    pub trace: Option<std::sync::Arc<Vec<crate::pipeline::source::Event>>>,
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
        }
    }
}

pub struct EngineHandle {
    pub commands: Sender<EngineCommand>,
    pub snapshots: Receiver<Box<MetricsSnapshot>>,
    thread: JoinHandle<Result<RunOutcome, EngineError>>,
}

impl EngineHandle {
    /// Waits for the engine to finish and returns its outcome.
    pub fn join(self) -> Result<RunOutcome, EngineError> {
        match self.thread.join() {
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
        .spawn(move || run_engine(config, cmd_rx, snap_tx))
        .map_err(EngineError::Spawn)?;
    Ok(EngineHandle {
        commands: cmd_tx,
        snapshots: snap_rx,
        thread,
    })
}

/// Runs a whole workload without a live client and returns its outcome.
pub fn run_to_completion(config: EngineConfig) -> Result<RunOutcome, EngineError> {
    let handle = spawn(config)?;
    // Drain snapshots so none is held; the outcome keeps them all.
    for _ in handle.snapshots.iter() {}
    handle.join()
}

/// One job of the run (the streaming job, the backfill or the catch-up), borrowed from its
/// RocksDB backend.
struct Run<'a> {
    backend: &'a StateBackend,
    config: &'a EngineConfig,
    phase: Phase,
    perf: Option<PerfCounters>,
    ctx: Context<'a>,
    job: FrequencyJob<'a>,
    consumer: Consumer,
    watermark: WatermarkValve,
    oracle: Oracle,
    /// The profile as changed live so far, and the changes.
    live_profile: Profile,
    changes: Vec<OptionChange>,
    /// The shared serving store's counters when this job started (its own are the rest).
    sink_base: SinkCounters,
    /// The job's state was restored from a savepoint rather than rebuilt.
    restored: bool,
    /// When this job started, and the run's paused time then (its own time excludes both).
    started: Instant,
    paused_before: Duration,
    sampling: Sampling,
    snapshots: SyncSender<Box<MetricsSnapshot>>,
    processed: u64,
    paused_for: Duration,
    /// The last watermark forwarded to the operator.
    forwarded: i64,
    /// Events that arrived at or behind the forwarded watermark.
    late_events: u64,
}

struct Sampling {
    started: Instant,
    last_at: Instant,
    last_events: u64,
    interval: Duration,
    seq: u64,
    sampler: RocksDbSampler,
    last_gets: u64,
    history: Vec<MetricsSnapshot>,
}

/// How a job's reading loop ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    /// The source was read to its end, or the event limit was reached.
    Finished,
    /// The wall-clock cap (--duration) ran out.
    OverTime,
    /// A Stop command.
    Stopped,
}

/// What the command channel asked for.
enum Control {
    Continue,
    Stop,
}

fn open_sink(config: &EngineConfig) -> Result<Box<dyn Sink>, EngineError> {
    let labels = config.workload.window_labels();
    Ok(match &config.sink {
        SinkConfig::Memory => Box::new(MemorySink::new(labels)),
        SinkConfig::Redis { url, prefix } => {
            Box::new(RedisSink::connect(url, prefix, labels).map_err(PipelineError::from)?)
        }
    })
}

impl Sampling {
    fn new(interval: Duration) -> Sampling {
        let now = Instant::now();
        Sampling {
            started: now,
            last_at: now,
            last_events: 0,
            interval,
            seq: 0,
            sampler: RocksDbSampler::default(),
            last_gets: 0,
            history: Vec::new(),
        }
    }

    /// A new job: its own counters start from zero; RocksDB's too when it has a new database
    /// (a job restored on the same database continues its RocksDB counters).
    fn next_job(&mut self, new_database: bool) {
        if new_database {
            self.sampler = RocksDbSampler::default();
        }
        self.last_events = 0;
        self.last_gets = 0;
    }
}

/// What one job is: its phase, its mode and where it reads.
struct JobSpec {
    phase: Phase,
    mode: JobMode,
    plan: ReadPlan,
}

impl<'a> Run<'a> {
    #[allow(clippy::too_many_arguments)]
    fn new(
        backend: &'a StateBackend,
        config: &'a EngineConfig,
        log: &Log,
        job: JobSpec,
        sink: Box<dyn Sink>,
        sampling: Sampling,
        paused_for: Duration,
        snapshots: SyncSender<Box<MetricsSnapshot>>,
    ) -> Result<Run<'a>, EngineError> {
        let workload = &config.workload;
        let consumer = Consumer::new(log, job.plan);
        let partitions = workload.spec.partitions as usize;
        let watermark = WatermarkValve::with_readers(
            partitions,
            workload
                .spec
                .source
                .readers
                .map_or(partitions, |r| r as usize),
            workload.spec.event_time.out_of_orderness.0 as i64,
            workload.spec.idleness.map(|i| i.0 as i64),
            consumer.now(),
        );
        let windows: Vec<i64> = workload.spec.windows.iter().map(|w| w.0 as i64).collect();
        let sink_base = sink.counters();
        let mut ctx = Context::new(backend, sink)?;
        ctx.set_now(consumer.now());
        Ok(Run {
            backend,
            config,
            phase: job.phase,
            perf: PerfCounters::start(),
            ctx,
            job: FrequencyJob::with_mode(backend, workload, job.mode)?,
            consumer,
            watermark,
            oracle: Oracle::new(&windows),
            sink_base,
            restored: false,
            live_profile: config.profile.clone(),
            changes: Vec::new(),
            started: Instant::now(),
            paused_before: paused_for,
            sampling,
            snapshots,
            processed: 0,
            paused_for,
            forwarded: i64::MIN,
            late_events: 0,
        })
    }

    /// Processes one event; every `WATERMARK_EVERY_EVENTS` events emits a watermark, which
    /// fires due timers. False when the source is exhausted.
    fn step(&mut self) -> Result<bool, EngineError> {
        let checked = self.checked();
        let oracle = &mut self.oracle;
        // The truth sees the records the job reads, and those it wrongly skips.
        let Some(event) = self.consumer.next(|e| {
            if checked {
                oracle.on_event(e.user, e.event_time);
            }
        }) else {
            return Ok(false);
        };
        let start = Instant::now();
        let now = self.consumer.now();
        self.ctx.set_now(now);
        self.job.on_event(&event, &mut self.ctx)?;
        self.watermark
            .on_record(event.partition as usize, event.event_time, now);
        self.processed += 1;
        self.late_events += u64::from(event.event_time <= self.forwarded);
        self.ctx.state.latency.record(Op::Event, start.elapsed());
        if self.processed.is_multiple_of(WATERMARK_EVERY_EVENTS) {
            let wm = self.watermark.advance(now);
            self.emit_watermark(wm)?;
        }
        Ok(true)
    }

    /// The oracle is fed and compared (not for the backfill, whose results are its one sync).
    fn checked(&self) -> bool {
        self.phase != Phase::Backfill
    }

    /// Forwards a watermark downstream if it moved: like Flink's valve, the operator (and the
    /// oracle) only ever see strictly increasing watermarks.
    fn emit_watermark(&mut self, wm: i64) -> Result<(), EngineError> {
        if wm > self.forwarded {
            self.forwarded = wm;
            self.ctx.advance_watermark(&mut self.job, wm)?;
            if self.checked() {
                self.oracle.on_watermark(wm);
            }
        }
        Ok(())
    }

    /// Publishes a snapshot when the sample interval has passed.
    fn maybe_sample(&mut self, now: Instant) -> Result<(), EngineError> {
        if now.duration_since(self.sampling.last_at) < self.sampling.interval {
            return Ok(());
        }
        // Reading the whole store is cheap only in process: compare every few samples.
        let compare = self.checked()
            && matches!(self.config.sink, SinkConfig::Memory)
            && self.sampling.seq % COMPARE_EVERY_SAMPLES == COMPARE_EVERY_SAMPLES - 1;
        let result_error = if compare {
            Some(self.compare_sink()?)
        } else {
            None
        };
        self.publish(RunState::Running, result_error);
        Ok(())
    }

    fn compare_sink(&mut self) -> Result<ResultError, EngineError> {
        let all = self.ctx.sink.read_all().map_err(PipelineError::from)?;
        Ok(self.oracle.compare(all))
    }

    fn publish(&mut self, state: RunState, result_error: Option<ResultError>) {
        let sampling = &mut self.sampling;
        let ctx = &mut self.ctx;
        let wm = &self.watermark;
        let now = Instant::now();
        let interval_secs = now.duration_since(sampling.last_at).as_secs_f64();
        let events = self.job.counters.events;
        let in_interval = events - sampling.last_events;
        let perf_counts = self.perf.as_ref().map(|p| p.read()).unwrap_or_default();
        let gets = ctx.state.counters.gets;
        let rocksdb = sampling.sampler.sample(
            self.backend,
            &perf_counts,
            gets - sampling.last_gets,
            interval_secs,
        );
        let snapshot = MetricsSnapshot {
            seq: sampling.seq,
            elapsed_secs: now.duration_since(sampling.started).as_secs_f64(),
            interval_secs,
            state,
            events,
            events_in_interval: in_interval,
            events_per_sec: if interval_secs > 0.0 {
                in_interval as f64 / interval_secs
            } else {
                0.0
            },
            latency: ctx.state.latency.take_interval(),
            ops: ctx.state.counters,
            changes: self.changes.clone(),
            pipeline: PipelineSample {
                phase: self.phase,
                processing_time: self.consumer.now(),
                partition_lag: self.consumer.backlog(),
                idle_readers: wm.idle_readers() as u32,
                watermark: wm.emitted(),
                max_event_time: wm.max_event_time(),
                watermark_lag_ms: wm.max_event_time().saturating_sub(wm.emitted()),
                idle_partitions: wm.idle_partitions() as u32,
                dropped_final_watermarks: wm.dropped_final_watermarks,
                timers_registered: ctx.timers.registered,
                next_timer: ctx.timers.next_timestamp(),
                late_events: self.late_events,
                sink: ctx.sink.counters().since(&self.sink_base),
                result_error,
                timers_fired: ctx.timers.fired,
                job: self.job.counters,
            },
            rocksdb,
        };
        sampling.seq += 1;
        sampling.last_at = now;
        sampling.last_events = events;
        sampling.last_gets = gets;
        // A full channel means a slow reader: drop this snapshot for it, keep it in history.
        let _ = self.snapshots.try_send(Box::new(snapshot.clone()));
        sampling.history.push(snapshot);
    }

    /// Paces a rate-limited workload.
    fn pace(&self, now: Instant) {
        if let Rate::PerSecond(rate) = self.config.workload.spec.rate {
            let due = Duration::from_secs_f64(self.processed as f64 / rate as f64)
                + self.paused_for.saturating_sub(self.paused_before);
            let elapsed = now.duration_since(self.started);
            if due > elapsed {
                std::thread::sleep(due - elapsed);
            }
        }
    }

    fn over_time(&self, now: Instant) -> bool {
        self.config.duration.is_some_and(|limit| {
            now.duration_since(self.sampling.started)
                .saturating_sub(self.paused_for)
                >= limit
        })
    }

    /// Obeys pending commands; while paused, keeps publishing so clients see RocksDB settle.
    /// Applies a live change and records what RocksDB says about it.
    fn apply(&mut self, key: String, value: String) {
        let result = self
            .live_profile
            .edited(&key, &value)
            .map_err(|e| e.to_string())
            .and_then(|profile| {
                let evidence = self
                    .backend
                    .apply_live(&profile, &key)
                    .map_err(|e| e.to_string())?;
                self.live_profile = profile;
                Ok(evidence)
            });
        let (applied, detail) = match result {
            Ok(evidence) => (true, evidence),
            Err(e) => (false, e),
        };
        self.changes.push(OptionChange {
            at_secs: self.sampling.started.elapsed().as_secs_f64(),
            key,
            value,
            applied,
            detail,
        });
    }

    fn handle_commands(&mut self, commands: &Receiver<EngineCommand>) -> Control {
        loop {
            match commands.try_recv() {
                Ok(EngineCommand::Stop) => return Control::Stop,
                Ok(EngineCommand::Resume) => {}
                Ok(EngineCommand::Apply { key, value }) => self.apply(key, value),
                Ok(EngineCommand::Pause) => {
                    // Close the running interval first, so no sample mixes running and paused
                    // time (A/B compares the running ones).
                    self.publish(RunState::Running, None);
                    let paused_at = Instant::now();
                    let control = loop {
                        match commands.recv_timeout(self.sampling.interval) {
                            Ok(EngineCommand::Resume) => break Control::Continue,
                            Ok(EngineCommand::Stop) | Err(mpsc::RecvTimeoutError::Disconnected) => {
                                break Control::Stop;
                            }
                            Ok(EngineCommand::Pause) => {}
                            Ok(EngineCommand::Apply { key, value }) => {
                                self.apply(key, value);
                                self.publish(RunState::Paused, None);
                            }
                            Err(mpsc::RecvTimeoutError::Timeout) => {
                                self.publish(RunState::Paused, None);
                            }
                        }
                    };
                    self.paused_for += paused_at.elapsed();
                    // The next interval starts now: it holds only running time.
                    self.sampling.last_at = Instant::now();
                    if let Control::Stop = control {
                        return Control::Stop;
                    }
                }
                Err(TryRecvError::Empty) | Err(TryRecvError::Disconnected) => {
                    return Control::Continue;
                }
            }
        }
    }

    /// A bounded source ends: each partition reports its end some time after its last record
    /// and emits the maximum watermark, which fires every remaining timer (unless the valve
    /// drops it because the partition was idle by then).
    fn end_bounded_source(&mut self, delay: Millis) -> Result<(), EngineError> {
        let mut ends: Vec<(i64, usize)> = self
            .watermark
            .last_record_times()
            .iter()
            .enumerate()
            .map(|(p, at)| (at + delay.0 as i64, p))
            .collect();
        ends.sort();
        for (at, partition) in ends {
            // The replay clock never goes back (TTL reads it).
            self.ctx.set_now(self.ctx.now.max(at));
            self.watermark.on_partition_finished(partition, at);
            let wm = self.watermark.advance(at);
            self.emit_watermark(wm)?;
        }
        // Then "no more splits": readers without a partition end as well.
        let at = self.ctx.now;
        self.watermark.on_source_finished(at);
        let wm = self.watermark.advance(at);
        self.emit_watermark(wm)?;
        Ok(())
    }
}

impl Run<'_> {
    /// Reads until the source ends, `limit` events were processed, time runs out or a Stop
    /// arrives; then ends a bounded source. Returns true when stopped early by a command.
    fn drive(
        &mut self,
        limit: Option<u64>,
        commands: &Receiver<EngineCommand>,
    ) -> Result<End, EngineError> {
        let mut end = End::Finished;
        while limit.is_none_or(|l| self.processed < l) && self.step()? {
            if self.processed.is_multiple_of(CHECK_EVERY_EVENTS) {
                let now = Instant::now();
                self.maybe_sample(now)?;
                if self.over_time(now) {
                    end = End::OverTime;
                    break;
                }
                self.pace(now);
                if let Control::Stop = self.handle_commands(commands) {
                    end = End::Stopped;
                    break;
                }
            }
        }
        let stopped_early = end == End::Stopped;
        // Only a source read to its end ends; a run cut short by --events, --duration or Stop
        // leaves its partitions open, as an unbounded one would.
        if let (Some(delay), false, true, true) = (
            self.config.workload.spec.bounded_end_delay,
            stopped_early,
            self.consumer.exhausted(),
            self.checked(),
        ) {
            self.end_bounded_source(delay)?;
        }
        self.ctx.timers.flush(&mut self.ctx.state)?;
        self.ctx.sink.flush().map_err(PipelineError::from)?;
        Ok(end)
    }

    /// The serving store's counters for this job alone.
    fn sink_counters(&self) -> SinkCounters {
        self.ctx.sink.counters().since(&self.sink_base)
    }

    fn job_source(&self, committed: bool) -> JobSource {
        JobSource {
            phase: self.phase,
            group: self.consumer.plan().group.clone(),
            started_from: self.consumer.plan().start_reason.clone(),
            start: self.consumer.plan().start.clone(),
            end: self.consumer.position().clone(),
            records_read: self.processed,
            records_skipped: self.consumer.skipped(),
            committed,
            sink_writes: self.sink_counters().writes,
            restored: self.restored,
        }
    }
}

/// True when no column family that holds job state has a key yet.
fn state_is_empty(backend: &StateBackend) -> bool {
    [
        crate::backend::CF_WINDOW_STATS,
        crate::backend::CF_TIMER_STATE,
    ]
    .iter()
    .all(|cf| {
        backend
            .cf(cf)
            .ok()
            .and_then(|h| {
                backend
                    .db()
                    .property_int_value_cf(h, "rocksdb.estimate-num-keys")
                    .ok()
                    .flatten()
            })
            .unwrap_or(0)
            == 0
    })
}

fn run_engine(
    config: EngineConfig,
    commands: Receiver<EngineCommand>,
    snapshots: SyncSender<Box<MetricsSnapshot>>,
) -> Result<RunOutcome, EngineError> {
    // The log holds the workload's events, or more if the run asks for more.
    let log = Log::new(
        &config.workload,
        config.trace.clone(),
        config.events.max(config.workload.spec.events),
    );
    let mut offsets = OffsetStore::default();
    let sink = open_sink(&config)?;
    let sampling = Sampling::new(config.workload.spec.sample_interval.as_duration());
    match config.workload.spec.phases.clone() {
        None => {
            let backend = StateBackend::open_with_ttl(
                &config.data_dir,
                &config.profile,
                state_ttl(&config.workload),
            )?;
            let plan = ReadPlan::from_workload(&log, &offsets).map_err(EngineError::Source)?;
            let job = JobSpec {
                phase: Phase::Streaming,
                mode: JobMode::Streaming,
                plan,
            };
            let fresh_state = state_is_empty(&backend);
            let run = Run::new(
                &backend,
                &config,
                &log,
                job,
                sink,
                sampling,
                Duration::ZERO,
                snapshots,
            )?;
            finish_last_job(run, &backend, &commands, Vec::new(), fresh_state, None)
        }
        Some(phases) => run_phases(
            &config,
            &phases,
            &log,
            &mut offsets,
            sink,
            sampling,
            commands,
            snapshots,
        ),
    }
}

/// Backfill, then catch-up (the seed's two-phase switch), sharing one serving store.
#[allow(clippy::too_many_arguments)]
fn run_phases(
    config: &EngineConfig,
    phases: &PhasesSpec,
    log: &Log,
    offsets: &mut OffsetStore,
    sink: Box<dyn Sink>,
    sampling: Sampling,
    commands: Receiver<EngineCommand>,
    snapshots: SyncSender<Box<MetricsSnapshot>>,
) -> Result<RunOutcome, EngineError> {
    let switch = log.start_time() + phases.switch_at.0 as i64;
    // Both jobs are deployed at the switch; the backfill reads the retained history up to it.
    let backfill_dir = config.data_dir.join("backfill");
    let backfill_backend =
        StateBackend::open_with_ttl(&backfill_dir, &config.profile, state_ttl(&config.workload))?;
    let fresh_state = state_is_empty(&backfill_backend);
    let (start, reason) = resolve_start(
        log,
        offsets,
        &phases.backfill_group,
        StartingOffsets::Committed,
        OffsetReset::Earliest,
        None,
        switch,
    )
    .map_err(EngineError::Source)?;
    let plan = ReadPlan {
        group: phases.backfill_group.clone(),
        truth_start: start.clone(),
        start,
        start_reason: reason,
        stop_time: Some(switch),
        deployed_at: switch,
    };
    let job = JobSpec {
        phase: Phase::Backfill,
        mode: JobMode::Backfill { switch },
        plan,
    };
    let mut backfill = Run::new(
        &backfill_backend,
        config,
        log,
        job,
        sink,
        sampling,
        Duration::ZERO,
        snapshots.clone(),
    )?;
    let end = backfill.drive(None, &commands)?;
    let mut jobs = Vec::new();
    if end != End::Finished {
        // Cut short (Stop or --duration): no sync, no commit, no catch-up.
        jobs.push(backfill.job_source(false));
        return finish_last_job(
            backfill,
            &backfill_backend,
            &commands,
            jobs,
            fresh_state,
            Some(end),
        );
    }
    // Sync the serving store once, commit the end offsets (the bounded job's final
    // checkpoint), finish.
    backfill.job.sync_to_sink(&mut backfill.ctx)?;
    offsets.commit(&phases.backfill_group, backfill.consumer.position().clone());
    jobs.push(backfill.job_source(true));
    backfill.publish(RunState::Running, None);
    let savepoint_offsets = backfill.consumer.position().clone();
    let Run {
        ctx,
        mut sampling,
        paused_for,
        live_profile,
        changes,
        ..
    } = backfill;
    let sink = ctx.sink;

    let catch_up_mode = JobMode::CatchUp {
        switch,
        condition: phases.catch_up_writes,
    };
    // A correct catch-up reads from the oldest retained record: that is the truth.
    let truth_start = vec![0; log.partitions()];
    let (plan, from_savepoint) = match phases.catch_up_state {
        // Restored from the backfill's savepoint: its offsets win over any starting offsets.
        CatchUpState::BackfillSavepoint => (
            ReadPlan {
                group: phases.catch_up_group.clone(),
                start: savepoint_offsets,
                start_reason: "the backfill's savepoint".to_string(),
                stop_time: None,
                deployed_at: switch,
                truth_start,
            },
            true,
        ),
        CatchUpState::Fresh => {
            let (start, reason) = resolve_start(
                log,
                offsets,
                &phases.catch_up_group,
                StartingOffsets::Committed,
                OffsetReset::Earliest,
                None,
                switch,
            )
            .map_err(EngineError::Source)?;
            (
                ReadPlan {
                    group: phases.catch_up_group.clone(),
                    start,
                    start_reason: reason,
                    stop_time: None,
                    deployed_at: switch,
                    truth_start,
                },
                false,
            )
        }
    };
    let job = JobSpec {
        phase: Phase::CatchUp,
        mode: catch_up_mode,
        plan,
    };
    let catch_up_backend;
    let backend = if from_savepoint {
        &backfill_backend
    } else {
        // Live changes made during the backfill carry over to the catch-up's database.
        catch_up_backend = StateBackend::open_with_ttl(
            &config.data_dir.join("catch-up"),
            &live_profile,
            state_ttl(&config.workload),
        )?;
        &catch_up_backend
    };
    sampling.next_job(!from_savepoint);
    let mut run = Run::new(
        backend, config, log, job, sink, sampling, paused_for, snapshots,
    )?;
    run.live_profile = live_profile;
    run.changes = changes;
    run.restored = from_savepoint;
    finish_last_job(run, backend, &commands, jobs, fresh_state, None)
}

/// Drives the run's last job to its end and builds the outcome.
fn finish_last_job(
    mut run: Run<'_>,
    backend: &StateBackend,
    commands: &Receiver<EngineCommand>,
    mut jobs: Vec<JobSource>,
    fresh_state: bool,
    ended: Option<End>,
) -> Result<RunOutcome, EngineError> {
    let config = run.config;
    // `ended`: the job already ran (a backfill cut short); otherwise drive it now.
    let end = match ended {
        Some(end) => end,
        None => run.drive(Some(config.events), commands)?,
    };
    // Only a Stop (Ctrl-C, q) is "stopped early"; --duration is a bound the user chose.
    let stopped_early = end == End::Stopped;
    // A run that ended inside the backfill never wrote its results: nothing to compare.
    let fresh_state = fresh_state && run.phase != Phase::Backfill;
    // The last job's own processing time (the summary describes it; a backfill is in `jobs`).
    let processing_secs = run
        .started
        .elapsed()
        .saturating_sub(run.paused_for.saturating_sub(run.paused_before))
        .as_secs_f64();
    // The serving store and the job's state against the exact truth at the last watermark.
    let result_error = run.compare_sink()?;
    // A bounded source read to its end has one right answer whatever the job's watermark did:
    // every window expired. A dropped or stuck final watermark shows here as counts left over.
    let bounded_end = config.workload.spec.bounded_end_delay.is_some()
        && !stopped_early
        && run.phase != Phase::Backfill
        && run.consumer.exhausted();
    let end_of_input_error = if bounded_end {
        let all = run.ctx.sink.read_all().map_err(PipelineError::from)?;
        Some(run.oracle.all_expired().compare(all))
    } else {
        None
    };
    run.publish(RunState::Finished, Some(result_error));
    let final_state = run.job.state_counts(&mut run.ctx.state)?;
    let state_error = run.oracle.compare(final_state.iter().copied());
    // RocksDB's newest OPTIONS file against the profile as it stands, live changes included.
    let option_mismatches = backend
        .verify_options(&run.live_profile)?
        .iter()
        .map(ToString::to_string)
        .collect();
    let options_file = backend
        .latest_options_file()?
        .map(|p| p.display().to_string());
    if run.phase != Phase::Backfill {
        jobs.push(run.job_source(false));
    }
    Ok(RunOutcome {
        snapshots: std::mem::take(&mut run.sampling.history),
        latency: run.ctx.state.latency.totals(),
        processing_secs,
        stopped_early,
        options_file,
        option_mismatches,
        result_error,
        state_error,
        final_state,
        fresh_state,
        jobs,
        end_of_input_error,
    })
}

/// The timerState TTL (ms) the job declares, which decides Flink's TTL compaction filter.
fn state_ttl(workload: &Workload) -> Option<i64> {
    workload.spec.timer_state_ttl.map(|t| t.0 as i64)
}
