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
use crate::config::{Millis, Profile, Workload};
use crate::pipeline::PipelineError;
use crate::pipeline::operator::{Context, FrequencyJob, JobCounters, Operator};
use crate::pipeline::oracle::{Oracle, ResultError};
use crate::pipeline::sink::{MemorySink, RedisSink, Sink, SinkCounters};
use crate::pipeline::source::EventSource;
use crate::pipeline::watermark::WatermarkValve;

/// Events between two watermark emissions. Flink emits periodic watermarks on a wall-clock
/// interval (200 ms); a fixed event count keeps the state traffic identical run to run.
pub const WATERMARK_EVERY_EVENTS: u64 = 64;
/// Every this many samples, a run on the in-process sink compares it with the oracle.
const COMPARE_EVERY_SAMPLES: u64 = 10;
/// Events between two looks at the clock and the command channel.
const CHECK_EVERY_EVENTS: u64 = 16;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EngineCommand {
    Pause,
    Resume,
    Stop,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RunState {
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
}

/// The pipeline's own view of itself in one sample.
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq)]
pub struct PipelineSample {
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
#[derive(Debug, Clone, Serialize, PartialEq)]
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
    /// The run started from empty state, so the comparisons with the oracle apply.
    pub fresh_state: bool,
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

/// The pipeline of one run, borrowed from its RocksDB backend.
struct Run<'a> {
    backend: &'a StateBackend,
    config: &'a EngineConfig,
    perf: Option<PerfCounters>,
    ctx: Context<'a>,
    job: FrequencyJob<'a>,
    source: EventSource,
    watermark: WatermarkValve,
    oracle: Oracle,
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

/// What the command channel asked for.
enum Control {
    Continue,
    Stop,
}

impl<'a> Run<'a> {
    fn new(
        backend: &'a StateBackend,
        config: &'a EngineConfig,
        snapshots: SyncSender<Box<MetricsSnapshot>>,
    ) -> Result<Run<'a>, EngineError> {
        let workload = &config.workload;
        let labels: Vec<String> = workload
            .spec
            .windows
            .iter()
            .map(|w| Workload::window_label(*w))
            .collect();
        let sink: Box<dyn Sink> = match &config.sink {
            SinkConfig::Memory => Box::new(MemorySink::new(labels)),
            SinkConfig::Redis { url, prefix } => {
                Box::new(RedisSink::connect(url, prefix, labels).map_err(PipelineError::from)?)
            }
        };
        let source = EventSource::new(workload, config.trace.clone());
        let watermark = WatermarkValve::new(
            workload.spec.partitions as usize,
            workload.spec.event_time.out_of_orderness.0 as i64,
            workload.spec.idleness.map(|i| i.0 as i64),
            source.replay_time(),
        );
        let windows: Vec<i64> = workload.spec.windows.iter().map(|w| w.0 as i64).collect();
        let now = Instant::now();
        Ok(Run {
            backend,
            config,
            perf: PerfCounters::start(),
            ctx: Context::new(backend, sink)?,
            job: FrequencyJob::new(backend, workload)?,
            source,
            watermark,
            oracle: Oracle::new(&windows),
            sampling: Sampling {
                started: now,
                last_at: now,
                last_events: 0,
                interval: workload.spec.sample_interval.as_duration(),
                seq: 0,
                sampler: RocksDbSampler::default(),
                last_gets: 0,
                history: Vec::new(),
            },
            snapshots,
            processed: 0,
            paused_for: Duration::ZERO,
            forwarded: i64::MIN,
            late_events: 0,
        })
    }

    /// Processes one event; every `WATERMARK_EVERY_EVENTS` events emits a watermark, which
    /// fires due timers. False when the source is exhausted.
    fn step(&mut self) -> Result<bool, EngineError> {
        let Some(event) = self.source.next() else {
            return Ok(false);
        };
        let start = Instant::now();
        let now = self.source.replay_time();
        self.ctx.now = now;
        self.job.on_event(&event, &mut self.ctx)?;
        self.watermark
            .on_record(event.partition as usize, event.event_time, now);
        self.oracle.on_event(event.user, event.event_time);
        self.processed += 1;
        self.late_events += u64::from(event.event_time <= self.forwarded);
        self.ctx.state.latency.record(Op::Event, start.elapsed());
        if self.processed.is_multiple_of(WATERMARK_EVERY_EVENTS) {
            let wm = self.watermark.advance(now);
            self.emit_watermark(wm)?;
        }
        Ok(true)
    }

    /// Forwards a watermark downstream if it moved: like Flink's valve, the operator (and the
    /// oracle) only ever see strictly increasing watermarks.
    fn emit_watermark(&mut self, wm: i64) -> Result<(), EngineError> {
        if wm > self.forwarded {
            self.forwarded = wm;
            self.ctx.advance_watermark(&mut self.job, wm)?;
            self.oracle.on_watermark(wm);
        }
        Ok(())
    }

    /// Publishes a snapshot when the sample interval has passed.
    fn maybe_sample(&mut self, now: Instant) -> Result<(), EngineError> {
        if now.duration_since(self.sampling.last_at) < self.sampling.interval {
            return Ok(());
        }
        // Reading the whole store is cheap only in process: compare every few samples.
        let compare = matches!(self.config.sink, SinkConfig::Memory)
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
            pipeline: PipelineSample {
                watermark: wm.emitted(),
                max_event_time: wm.max_event_time(),
                watermark_lag_ms: wm.max_event_time().saturating_sub(wm.emitted()),
                idle_partitions: wm.idle_partitions() as u32,
                dropped_final_watermarks: wm.dropped_final_watermarks,
                timers_registered: ctx.timers.registered,
                next_timer: ctx.timers.next_timestamp(),
                late_events: self.late_events,
                sink: ctx.sink.counters(),
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
            let due =
                Duration::from_secs_f64(self.processed as f64 / rate as f64) + self.paused_for;
            let elapsed = now.duration_since(self.sampling.started);
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
    fn handle_commands(&mut self, commands: &Receiver<EngineCommand>) -> Control {
        loop {
            match commands.try_recv() {
                Ok(EngineCommand::Stop) => return Control::Stop,
                Ok(EngineCommand::Resume) => {}
                Ok(EngineCommand::Pause) => {
                    let paused_at = Instant::now();
                    let control = loop {
                        match commands.recv_timeout(self.sampling.interval) {
                            Ok(EngineCommand::Resume) => break Control::Continue,
                            Ok(EngineCommand::Stop) | Err(mpsc::RecvTimeoutError::Disconnected) => {
                                break Control::Stop;
                            }
                            Ok(EngineCommand::Pause) => {}
                            Err(mpsc::RecvTimeoutError::Timeout) => {
                                self.publish(RunState::Paused, None);
                            }
                        }
                    };
                    self.paused_for += paused_at.elapsed();
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
            self.ctx.now = self.ctx.now.max(at);
            self.watermark.on_partition_finished(partition, at);
            let wm = self.watermark.advance(at);
            self.emit_watermark(wm)?;
        }
        Ok(())
    }
}

fn run_engine(
    config: EngineConfig,
    commands: Receiver<EngineCommand>,
    snapshots: SyncSender<Box<MetricsSnapshot>>,
) -> Result<RunOutcome, EngineError> {
    let backend = StateBackend::open(&config.data_dir, &config.profile)?;
    let option_mismatches = backend
        .verify_options(&config.profile)?
        .iter()
        .map(ToString::to_string)
        .collect();
    // State left by an earlier run (--reuse) was built from events this run's oracle never saw.
    let fresh_state = [
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
    });
    let mut run = Run::new(&backend, &config, snapshots)?;
    let mut stopped_early = false;
    while run.processed < config.events && run.step()? {
        if run.processed.is_multiple_of(CHECK_EVERY_EVENTS) {
            let now = Instant::now();
            run.maybe_sample(now)?;
            if run.over_time(now) {
                break;
            }
            run.pace(now);
            if let Control::Stop = run.handle_commands(&commands) {
                stopped_early = true;
                break;
            }
        }
    }
    // Only a source read to its end ends; a run cut short by --events, --duration or Stop
    // leaves its partitions open, as an unbounded one would.
    let read_to_end = run.processed >= config.workload.spec.events
        || config
            .trace
            .as_ref()
            .is_some_and(|t| run.processed >= t.len() as u64);
    if let (Some(delay), false, true) = (
        config.workload.spec.bounded_end_delay,
        stopped_early,
        read_to_end,
    ) {
        run.end_bounded_source(delay)?;
    }
    let processing_secs = run
        .sampling
        .started
        .elapsed()
        .saturating_sub(run.paused_for)
        .as_secs_f64();
    run.ctx.timers.flush(&mut run.ctx.state)?;
    // The serving store and the job's state against the exact truth at the last watermark.
    run.ctx.sink.flush().map_err(PipelineError::from)?;
    let result_error = run.compare_sink()?;
    run.publish(RunState::Finished, Some(result_error));
    let state_error = run
        .oracle
        .compare(run.job.state_counts(&mut run.ctx.state)?);
    let options_file = backend
        .latest_options_file()?
        .map(|p| p.display().to_string());
    Ok(RunOutcome {
        snapshots: std::mem::take(&mut run.sampling.history),
        latency: run.ctx.state.latency.totals(),
        processing_secs,
        stopped_early,
        options_file,
        option_mismatches,
        result_error,
        state_error,
        fresh_state,
    })
}
