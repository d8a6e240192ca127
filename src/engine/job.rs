//! One job of a run: reads the log through its consumer, holds back watermarks in the valve,
//! runs the operator on its RocksDB backend and feeds the oracle; obeys the run's commands.

use std::sync::mpsc::{RecvTimeoutError, TryRecvError};
use std::time::{Duration, Instant};

use super::progress::ProgressMark;
use super::run::Run;
use super::snapshot::LatencyRecorder;
use super::snapshot::{
    CheckpointSample, JobSource, MetricsSnapshot, Op, Phase, PipelineSample, RestoreRecord,
    RunState,
};
use super::truth::OracleThread;
use super::{EngineCommand, EngineError, SinkConfig, WATERMARK_EVERY_EVENTS};
use crate::backend::oplog::Mark;
use crate::backend::perf::PerfCounters;
use crate::backend::{AccessCounters, StateBackend};
use crate::config::Millis;
use crate::config::profile::Knob;
use crate::config::workload::Rate;
use crate::pipeline::PipelineError;

use super::SavepointFormat;
use super::snapshot::SavepointRecord;
use crate::config::profile::CheckpointingMode;
use crate::durability::checkpoint::snapshot::live_ssts;
use crate::durability::checkpoint::store::{CheckpointStore, StoreConfig};
use crate::durability::checkpoint::{
    Checkpointer, Completion, JobMeta, JobWork, Metadata, savepoint_files,
};
use crate::durability::delivery::{Delivery, origin};
use crate::durability::sink::{Count, SinkCounters};
use crate::pipeline::operators::{self, Context, JobCounters, JobMode, KeyedOperator};
use crate::pipeline::oracle::ResultError;
use crate::pipeline::source::{Consumer, Log, Offsets, ReadPlan};
use crate::pipeline::watermark::WatermarkValve;

/// With AT_LEAST_ONCE checkpointing, the records the job's first input processes past its
/// barrier while the second input's barrier is still on its way (see `at_least_once_offsets`).
pub const BARRIER_SKEW_RECORDS: u64 = 1024;

/// Every this many samples, a run on the in-process sink compares it with the oracle.
const COMPARE_EVERY_SAMPLES: u64 = 10;
/// Events between two looks at the clock and the command channel.
const CHECK_EVERY_EVENTS: u64 = 16;

/// What one job is: its phase, its mode and where it reads.
pub struct JobSpec {
    pub phase: Phase,
    pub mode: JobMode,
    pub plan: ReadPlan,
    /// Its state comes from a savepoint rather than from the records it reads.
    pub restored: bool,
    /// Restored from a checkpoint: where the job stood at its barrier.
    pub resume: Option<Resume>,
}

/// Where a job restored from a checkpoint stood at its barrier.
#[derive(Debug, Clone)]
pub struct Resume {
    pub processed: u64,
    pub counters: JobCounters,
    /// The operator's results kept outside its state, at the barrier.
    pub results: Vec<(u64, usize, i64)>,
    /// Where the run's truth counts from (the first job's plan).
    pub truth_origin: Offsets,
}

/// What a job's earlier attempts in this process did: a job restarted after a failure is the same
/// job, and its counts and rates hold every attempt's work (the replayed records too).
#[derive(Default)]
pub struct Attempts {
    /// Records read (replays included).
    pub records: u64,
    /// Of those, read again after a restore.
    pub replayed: u64,
    /// RocksDB operations issued.
    pub ops: AccessCounters,
    /// The same per column family (`StateAccess::column_families`).
    pub cf_ops: Vec<crate::backend::CfOps>,
    /// Latencies recorded (the run-long histograms go on).
    pub latency: Option<LatencyRecorder>,
    /// The first attempt's start, in the run's running time.
    pub started_at: Option<Duration>,
    /// Records the job's state covered when its first attempt started.
    pub records_before: Option<u64>,
    /// Where and why the first attempt started reading.
    pub started_from: Option<(String, Offsets)>,
    /// The serving store's counters when the first attempt started.
    pub sink_base: Option<SinkCounters>,
    /// The job's work in the processes before this one (restored from another process's
    /// checkpoint); None when the job started in this process.
    pub earlier_processes: Option<JobWork>,
}

/// What outlives a job that failed: the exact truth (it saw every record once, and must not
/// see a replayed one again), the serving store, the checkpoint coordinator.
pub struct Survivors {
    pub oracle: OracleThread,
    pub oracle_watermark: i64,
    pub sink: Delivery,
    pub checkpointer: Option<Checkpointer>,
    /// The failed job's position: its truth has seen every record before it.
    pub position: Offsets,
    pub processed: u64,
    pub truth_origin: Offsets,
    /// Its work and that of the attempts before it.
    pub attempts: Attempts,
}

/// How a job's reading loop ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// The source was read to its end, or the event limit was reached.
    Finished,
    /// The cap on running time (--duration) ran out.
    OverTime,
    /// A Stop command.
    Stopped,
    /// An injected failure: the job is dead, nothing after its last checkpoint survives.
    Failed,
}

/// What the command channel asked for.
enum Control {
    Continue,
    Stop,
    Fail,
}

/// One job, borrowed from its RocksDB backend.
pub struct JobRunner<'a> {
    backend: &'a StateBackend,
    pub phase: Phase,
    perf: Option<PerfCounters>,
    pub ctx: Context<'a>,
    pub job: Box<dyn KeyedOperator<'a> + 'a>,
    pub consumer: Consumer,
    watermark: WatermarkValve,
    pub oracle: OracleThread,
    /// The highest watermark the oracle has seen (a restored job's valve starts again below).
    oracle_watermark: i64,
    /// Checkpoints, when the profile turns them on.
    pub checkpointer: Option<Checkpointer>,
    /// Checkpoints completed since this job started.
    checkpoints_completed: u64,
    /// The run's restores so far (for the snapshots).
    pub restores: Vec<RestoreRecord>,
    /// Checkpoints of the coordinator's history already sent in a snapshot.
    pub reported_checkpoints: usize,
    /// Savepoints asked for and not taken yet.
    requested_savepoints: Vec<SavepointFormat>,
    /// AT_LEAST_ONCE checkpointing: recent positions, to find the first input's at its barrier.
    recent_positions: std::collections::VecDeque<(u64, Offsets)>,
    /// Savepoints taken (by this job and, carried over, the run's earlier ones).
    pub savepoints: Vec<SavepointRecord>,
    /// The store savepoints go to when the run does not checkpoint.
    pub savepoint_store: Option<std::path::PathBuf>,
    /// Where the run's truth counts from.
    truth_origin: Offsets,
    /// The shared serving store's counters when this job started (its own are the rest).
    sink_base: SinkCounters,
    restored: bool,
    /// The run's running time when this job (its first attempt) started.
    started_at: Duration,
    processed: u64,
    /// `processed` when this attempt started (a restored job: its checkpoint's count).
    start_processed: u64,
    /// Records up to this count are read again: where the failed attempt had got to.
    replay_until: u64,
    /// The job's earlier attempts in this process.
    earlier: Attempts,
    /// Where the job marks how far it got (survives a kill -9: `--restore` reads it).
    progress: Option<ProgressMark>,
    /// The last watermark forwarded to the operator.
    forwarded: i64,
    /// Events that arrived at or behind the forwarded watermark.
    late_events: u64,
}

impl<'a> JobRunner<'a> {
    pub fn new(
        backend: &'a StateBackend,
        run: &Run,
        log: &Log,
        spec: JobSpec,
        sink: Delivery,
        truth: Option<(OracleThread, i64)>,
    ) -> Result<JobRunner<'a>, EngineError> {
        let workload = &run.config.workload;
        let truth_origin = spec
            .resume
            .as_ref()
            .map_or_else(|| spec.plan.truth_start.clone(), |r| r.truth_origin.clone());
        let consumer = Consumer::new(log, spec.plan);
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
        let sink_base = sink.sink().counters();
        let layout = operators::layout(&workload.operator());
        let mut ctx = Context::new(backend, &layout, sink)?;
        ctx.set_now(consumer.now());
        let mut job = operators::build(backend, workload, spec.mode)?;
        let processed = spec.resume.as_ref().map_or(0, |r| r.processed);
        if let Some(resume) = &spec.resume {
            job.restore_counters(resume.counters);
            job.restore_results(&resume.results);
        }
        let (oracle, oracle_watermark) = match truth {
            Some(truth) => truth,
            None => (
                OracleThread::start(operators::oracle(workload)).map_err(EngineError::Spawn)?,
                i64::MIN,
            ),
        };
        Ok(JobRunner {
            backend,
            phase: spec.phase,
            perf: PerfCounters::start(),
            ctx,
            job,
            consumer,
            watermark,
            oracle,
            oracle_watermark,
            checkpointer: None,
            checkpoints_completed: 0,
            restores: Vec::new(),
            reported_checkpoints: 0,
            requested_savepoints: Vec::new(),
            recent_positions: std::collections::VecDeque::new(),
            savepoints: Vec::new(),
            savepoint_store: None,
            truth_origin,
            sink_base,
            restored: spec.restored,
            started_at: run.clock.running(Instant::now()),
            processed,
            start_processed: processed,
            replay_until: processed,
            earlier: Attempts::default(),
            progress: None,
            forwarded: i64::MIN,
            late_events: 0,
        })
    }

    /// This attempt goes on from `earlier` ones, and reads again the records up to
    /// `replay_until` (the count the failed attempt, or the killed process, had reached).
    pub fn continue_from(&mut self, mut earlier: Attempts, replay_until: u64) {
        if let Some(latency) = earlier.latency.take() {
            self.ctx.state.latency = latency;
        }
        if let Some(at) = earlier.started_at {
            self.started_at = at;
        }
        if let Some(base) = earlier.sink_base {
            self.sink_base = base;
        }
        self.earlier = earlier;
        self.replay_until = replay_until;
    }

    /// Marks the job's progress in `mark` as it goes.
    pub fn mark_progress(&mut self, mark: ProgressMark) {
        self.progress = Some(mark);
    }

    /// Records read in this process, over every attempt, replays included.
    pub fn records_read(&self) -> u64 {
        self.earlier.records + self.processed.saturating_sub(self.start_processed)
    }

    /// Of `records_read`, those read again after a restore.
    pub fn records_replayed(&self) -> u64 {
        self.earlier.replayed
            + self
                .processed
                .min(self.replay_until)
                .saturating_sub(self.start_processed)
    }

    /// The job's work so far, over every process it ran in.
    fn work(&self, run: &Run) -> JobWork {
        let here = JobWork {
            records: self.records_read(),
            replayed: self.records_replayed(),
            ops: self.ops(),
            running_secs: self.running_secs(run),
            processes: 1,
        };
        self.earlier
            .earlier_processes
            .unwrap_or_default()
            .plus(&here)
    }

    /// RocksDB operations of every attempt.
    fn ops(&self) -> AccessCounters {
        self.earlier.ops.plus(&self.ctx.state.counters)
    }

    /// The serving store, once the job is done with it (the next job writes on).
    pub fn into_sink(self) -> Delivery {
        self.ctx.sink
    }

    /// What outlives this job once it failed. Its checkpoint under way is abandoned.
    pub fn into_survivors(mut self) -> Survivors {
        if let Some(c) = &mut self.checkpointer {
            c.detach();
        }
        let attempts = Attempts {
            records: self.records_read(),
            replayed: self.records_replayed(),
            ops: self.ops(),
            cf_ops: crate::backend::plus_cf_ops(
                &self.earlier.cf_ops,
                &self.ctx.state.column_families,
            ),
            latency: Some(std::mem::take(&mut self.ctx.state.latency)),
            started_at: Some(self.started_at),
            records_before: Some(self.earlier.records_before.unwrap_or(self.start_processed)),
            started_from: Some(self.earlier.started_from.take().unwrap_or_else(|| {
                let plan = self.consumer.plan();
                (plan.start_reason.clone(), plan.start.clone())
            })),
            sink_base: Some(self.sink_base),
            earlier_processes: self.earlier.earlier_processes,
        };
        Survivors {
            attempts,
            position: self.consumer.position().clone(),
            processed: self.processed,
            oracle: self.oracle,
            oracle_watermark: self.oracle_watermark,
            sink: self.ctx.sink,
            checkpointer: self.checkpointer,
            truth_origin: self.truth_origin,
        }
    }

    /// The broker's clock, epoch ms: transaction ages and visibility delays go on across pauses
    /// and processes.
    fn clock_ms(_: &Run) -> u64 {
        super::run::epoch_ms()
    }

    /// Where the job stands, for a checkpoint or savepoint recording `offsets`.
    fn job_meta(&self, run: &Run, offsets: Offsets) -> JobMeta {
        JobMeta {
            group: self.consumer.plan().group.clone(),
            offsets,
            truth_start: self.truth_origin.clone(),
            processed: self.processed,
            processing_time: self.consumer.now(),
            counters: self.job.counters(),
            results: self.job.results_snapshot(),
            work: self.work(run),
        }
    }

    /// The synchronous part of a checkpoint: pending timers into RocksDB, the sink's
    /// transaction pre-committed, then the state snapshot and the upload's start.
    fn checkpoint(&mut self, run: &Run, barrier: Instant) -> Result<(), EngineError> {
        let Some(id) = self.checkpointer.as_ref().map(Checkpointer::next_id) else {
            return Ok(());
        };
        self.ctx.flush_timers()?;
        self.ctx
            .sink
            .pre_commit(id, Self::clock_ms(run))
            .map_err(PipelineError::from)?;
        let offsets = if self.barriers_not_aligned(run) {
            self.at_least_once_offsets()
        } else {
            self.consumer.position().clone()
        };
        let job = self.job_meta(run, offsets);
        let secs = run.clock.wall(barrier).as_secs_f64();
        let changes = self.ctx.state.take_changelog();
        // HEAP timers: written as raw keyed state in the synchronous part, as Flink does.
        let raw = self.ctx.timers.as_ref().and_then(|t| t.raw_keyed_state());
        let Some(checkpointer) = &mut self.checkpointer else {
            return Ok(());
        };
        // A full or incremental checkpoint that cannot be taken (a full disk, a store gone) is
        // declined, not the end of the job; its sink transaction stays pre-committed and the
        // next completed checkpoint commits it. A changelog checkpoint's failure may have lost
        // the changes it took: that one ends the run.
        let changelog = changes.is_some();
        match checkpointer.trigger(job, changes, raw.as_deref(), barrier, secs) {
            Ok(_) => {}
            Err(e) if !changelog => checkpointer.decline(id, secs, e.to_string()),
            Err(e) => return Err(PipelineError::from(e).into()),
        }
        Ok(())
    }

    /// AT_LEAST_ONCE checkpointing (`execution.checkpointing.mode`) with two inputs: the job's
    /// partitions are two inputs, the first half and the rest. Barriers are not aligned: the
    /// first input's barrier comes `BARRIER_SKEW_RECORDS` records before the second's, and the
    /// operator goes on processing the first input meanwhile. Its state then holds records whose
    /// offsets lie past the first input's barrier: a restore replays them, counted twice.
    fn barriers_not_aligned(&self, run: &Run) -> bool {
        run.live.profile().knobs.checkpointing_mode == CheckpointingMode::AtLeastOnce
            && self.consumer.position().len() >= 2
    }

    /// Keeps the positions the first input's barrier may need (AT_LEAST_ONCE mode only).
    fn note_position(&mut self) {
        self.recent_positions
            .push_back((self.processed, self.consumer.position().clone()));
        while self
            .recent_positions
            .front()
            .is_some_and(|(at, _)| *at + BARRIER_SKEW_RECORDS < self.processed)
            && self.recent_positions.len() > 1
        {
            self.recent_positions.pop_front();
        }
    }

    /// The offsets an AT_LEAST_ONCE checkpoint records: the first input's at its barrier (some
    /// records back), the second input's now.
    fn at_least_once_offsets(&self) -> Offsets {
        let mut offsets = self.consumer.position().clone();
        let first_input = offsets.len() / 2;
        if let Some((_, then)) = self.recent_positions.front() {
            offsets[..first_input].copy_from_slice(&then[..first_input]);
        }
        offsets
    }

    /// A checkpoint is complete: its offsets go to the broker, its sink transaction commits.
    fn on_complete(&mut self, run: &mut Run, done: Completion) -> Result<(), EngineError> {
        self.checkpoints_completed += 1;
        run.broker
            .commit(&done.job.group, done.job.offsets)
            .map_err(EngineError::Broker)?;
        self.ctx
            .sink
            .commit(done.id, Self::clock_ms(run))
            .map_err(PipelineError::from)?;
        Ok(())
    }

    /// Completes the checkpoint under way, triggers one when due.
    fn checkpoint_tick(&mut self, run: &mut Run, now: Instant) -> Result<(), EngineError> {
        let Some(checkpointer) = &mut self.checkpointer else {
            return Ok(());
        };
        if let Some(done) = checkpointer.poll().map_err(PipelineError::from)? {
            self.on_complete(run, done)?;
        }
        if self.checkpointer.as_ref().is_some_and(|c| c.due(now)) {
            self.checkpoint(run, now)?;
        }
        Ok(())
    }

    /// The job's last checkpoint (Flink's final checkpoint of a finished job): everything it
    /// wrote is committed before the run compares results.
    pub fn final_checkpoint(&mut self, run: &mut Run) -> Result<(), EngineError> {
        let Some(checkpointer) = &mut self.checkpointer else {
            return Ok(());
        };
        if let Some(done) = checkpointer.wait().map_err(PipelineError::from)? {
            self.on_complete(run, done)?;
        }
        self.checkpoint(run, Instant::now())?;
        if let Some(checkpointer) = &mut self.checkpointer
            && let Some(done) = checkpointer.wait().map_err(PipelineError::from)?
        {
            self.on_complete(run, done)?;
        }
        Ok(())
    }

    /// A savepoint, taken on the job's thread: canonical (every key, written from a RocksDB
    /// snapshot) or native (RocksDB's files). It commits no offsets; like a checkpoint's barrier
    /// it pre-commits the sink's transaction under its own id, which the next completed
    /// checkpoint (or a restore from the savepoint) commits.
    fn savepoint(&mut self, run: &Run, format: SavepointFormat) -> Result<(), EngineError> {
        let began = Instant::now();
        self.ctx.flush_timers()?;
        let id = match &mut self.checkpointer {
            Some(c) => c.take_id(),
            None => 0,
        };
        if id > 0 {
            self.ctx
                .sink
                .pre_commit(id, Self::clock_ms(run))
                .map_err(PipelineError::from)?;
        }
        // The checkpointer's own store when there is one: a second opening of a store under
        // way would clean up the upload in flight.
        let opened;
        let store = match (&self.checkpointer, &self.savepoint_store) {
            (Some(c), _) => c.store(),
            (None, Some(root)) => {
                opened = CheckpointStore::open(root, StoreConfig::default())
                    .map_err(PipelineError::from)?;
                &opened
            }
            (None, None) => {
                return Err(EngineError::Restore(
                    "a savepoint needs the data directory's checkpoint store".to_string(),
                ));
            }
        };
        let root = store.root().to_path_buf();
        let job = self.job_meta(run, self.consumer.position().clone());
        // The first free name: an earlier run on this data directory may have taken some.
        let name = (self.savepoints.len() + 1..)
            .map(|n| format!("sp-{n}-{}", format.name()))
            .find(|name| {
                !store.savepoint_dir(name).exists()
                    && !store.savepoint_dir(&format!("{name}.inprogress")).exists()
            })
            .unwrap_or_else(|| format!("sp-{}-{}", std::process::id(), format.name()));
        let scratch = root.join(format!(".{name}.local"));
        let (kind, mut files) =
            savepoint_files(self.backend, format == SavepointFormat::Canonical, &scratch)
                .map_err(PipelineError::from)?;
        if let Some(raw) = self.ctx.timers.as_ref().and_then(|t| t.raw_keyed_state()) {
            files.push(
                crate::pipeline::timers::raw::write_file(&scratch, &raw).map_err(|e| {
                    EngineError::Restore(format!("cannot write the savepoint's heap timers: {e}"))
                })?,
            );
        }
        let metadata = Metadata {
            id,
            kind,
            job,
            ssts: Default::default(),
            materialization: None,
            changelog: Vec::new(),
        };
        let value = serde_json::to_value(&metadata).map_err(|e| {
            EngineError::Restore(format!("cannot write the savepoint's metadata: {e}"))
        })?;
        let written = store.write_savepoint(&name, &files, &value);
        let _ = std::fs::remove_dir_all(&scratch);
        let written = written.map_err(PipelineError::from)?;
        if format == SavepointFormat::Native
            && let Some(c) = &mut self.checkpointer
        {
            c.note_native_savepoint();
        }
        let live_sst_bytes = live_ssts(self.backend)
            .map_err(PipelineError::from)?
            .iter()
            .map(|f| f.size)
            .sum();
        self.savepoints.push(SavepointRecord {
            format: format.name().to_string(),
            at_secs: run.clock.wall(began).as_secs_f64(),
            path: written.path.display().to_string(),
            bytes: written.bytes,
            live_sst_bytes,
            duration_ms: began.elapsed().as_secs_f64() * 1e3,
        });
        Ok(())
    }

    /// Every result the sink's reader sees now.
    pub fn read_results(&mut self) -> Result<Vec<Count>, EngineError> {
        let sink = &mut self.ctx.sink;
        Ok(if sink.is_tracked() {
            sink.read_view().map_err(PipelineError::from)?
        } else {
            sink.sink_mut().read_all().map_err(PipelineError::from)?
        })
    }

    /// This job's running time so far.
    pub fn running_secs(&self, run: &Run) -> f64 {
        run.clock
            .running(Instant::now())
            .saturating_sub(self.started_at)
            .as_secs_f64()
    }

    /// Processes one event; every `WATERMARK_EVERY_EVENTS` events emits a watermark, which
    /// fires due timers. False when the source is exhausted.
    fn step(&mut self) -> Result<bool, EngineError> {
        let checked = self.checked();
        let oracle = &mut self.oracle;
        // The truth sees the records the job reads, and those it wrongly skips.
        let mut gone = Ok(());
        // The processing time the operator sees for a record (the consumer's clock moves to
        // each record's write time), for the truth of state TTL.
        let mut now = self.consumer.now();
        let next = self.consumer.next(|e| {
            now = now.max(e.append_time);
            if checked && gone.is_ok() {
                gone = oracle.on_event(e, now);
            }
        });
        gone?;
        let Some(event) = next else {
            return Ok(false);
        };
        let start = self.ctx.state.latency.start();
        let now = self.consumer.now();
        self.ctx.set_now(now);
        if self.ctx.sink.is_tracked() {
            self.ctx
                .sink
                .set_origin(origin(u64::from(event.partition), event.offset));
        }
        self.job.on_event(&event, &mut self.ctx)?;
        self.watermark
            .on_record(event.partition as usize, event.event_time, now);
        self.processed += 1;
        self.late_events += u64::from(event.event_time <= self.forwarded);
        self.ctx.state.latency.stop(Op::Event, start);
        if self.processed.is_multiple_of(WATERMARK_EVERY_EVENTS) {
            let wm = self.watermark.advance(now);
            self.emit_watermark(wm)?;
        }
        Ok(true)
    }

    /// The oracle is fed and compared (not for the backfill, whose results are its one sync).
    pub fn checked(&self) -> bool {
        self.phase != Phase::Backfill
    }

    /// Forwards a watermark downstream if it moved: like Flink's valve, the operator (and the
    /// oracle) only ever see strictly increasing watermarks.
    fn emit_watermark(&mut self, wm: i64) -> Result<(), EngineError> {
        if wm > self.forwarded {
            self.forwarded = wm;
            self.ctx.advance_watermark(self.job.as_mut(), wm)?;
            // A restored job's watermark climbs again from the start: the truth has seen it.
            if self.checked() && wm > self.oracle_watermark {
                self.oracle_watermark = wm;
                self.oracle.on_watermark(wm)?;
            }
        }
        Ok(())
    }

    /// Publishes a snapshot when the sample interval has passed.
    fn maybe_sample(&mut self, run: &mut Run, now: Instant) -> Result<(), EngineError> {
        if !run.sampler.due(now) {
            return Ok(());
        }
        // Reading the whole store is cheap only in process: compare every few samples.
        // With checkpoints, what a reader sees trails the job by design (read_committed): the
        // run compares once everything is committed, at its end.
        let compare = self.checked()
            && !self.ctx.sink.is_tracked()
            && matches!(run.config.sink, SinkConfig::Memory)
            && run.sampler.published() % COMPARE_EVERY_SAMPLES == COMPARE_EVERY_SAMPLES - 1;
        let result_error = if compare {
            Some(self.compare_sink()?)
        } else {
            None
        };
        self.publish(run, RunState::Running, result_error);
        Ok(())
    }

    /// The serving store against the oracle's exact counts. A store that reports its changes
    /// (the in-process one) is read in full once; later comparisons look only at the pairs
    /// that changed in it or in the oracle since, with the same result.
    pub fn compare_sink(&mut self) -> Result<ResultError, EngineError> {
        if self.ctx.sink.is_tracked() {
            let all = self.read_results()?;
            return Ok(self.oracle.compare(all)?);
        }
        let sink = self.ctx.sink.sink_mut();
        if self.oracle.is_tracking()
            && let Some(changes) = sink.read_changes().map_err(PipelineError::from)?
            && let Some(error) = self.oracle.compare_changes(changes)?
        {
            return Ok(error);
        }
        // Read the changes first so that the full read below is the baseline they start from.
        let tracks = sink.read_changes().map_err(PipelineError::from)?.is_some();
        let all = sink.read_all().map_err(PipelineError::from)?;
        Ok(if tracks {
            self.oracle.track(all)?
        } else {
            self.oracle.compare(all)?
        })
    }

    pub fn publish(&mut self, run: &mut Run, state: RunState, result_error: Option<ResultError>) {
        let now = Instant::now();
        let perf = self.perf.as_ref().map(|p| p.read()).unwrap_or_default();
        let events = self.job.counters().events;
        let records = self.records_read();
        let records_replayed = self.records_replayed();
        let ops = self.ops();
        let cf_ops =
            crate::backend::plus_cf_ops(&self.earlier.cf_ops, &self.ctx.state.column_families);
        let cf_names = self.backend.column_families();
        let mut checkpoints = self.checkpoint_sample();
        if let (Some(sample), Some(c)) = (&mut checkpoints, &self.checkpointer) {
            sample.recent = c.history[self.reported_checkpoints.min(c.history.len())..].to_vec();
            self.reported_checkpoints = c.history.len();
        }
        let Run {
            sampler,
            clock,
            live,
            ..
        } = run;
        let ctx = &mut self.ctx;
        let wm = &self.watermark;
        let pipeline = PipelineSample {
            phase: self.phase,
            processing_time: self.consumer.now(),
            partition_lag: self.consumer.backlog(),
            idle_readers: wm.idle_readers() as u32,
            watermark: wm.emitted(),
            max_event_time: wm.max_event_time(),
            watermark_lag_ms: wm.max_event_time().saturating_sub(wm.emitted()),
            idle_partitions: wm.idle_partitions() as u32,
            dropped_final_watermarks: wm.dropped_final_watermarks,
            timers_registered: ctx.timer_counts().0,
            next_timer: ctx.timers.as_ref().and_then(|t| t.next_timestamp()),
            late_events: self.late_events,
            sink: ctx.sink.sink().counters().since(&self.sink_base),
            result_error,
            timers_fired: ctx.timer_counts().1,
            job: self.job.counters(),
            checkpoints,
        };
        let cpu = sampler.take_cpu(state != RunState::Paused);
        sampler.publish(now, self.backend, &perf, records, ops.gets, |interval| {
            MetricsSnapshot {
                seq: interval.seq,
                elapsed_secs: clock.wall(now).as_secs_f64(),
                interval_secs: interval.interval_secs,
                state,
                events,
                records_processed: records,
                records_replayed,
                earlier_processes: self.earlier.earlier_processes,
                events_in_interval: interval.events_in_interval,
                events_per_sec: interval.events_per_sec,
                latency: ctx.state.latency.take_interval(),
                ops,
                changes: live.take_unreported(),
                pipeline,
                rocksdb: interval.rocksdb.with_state_ops(cf_names, &cf_ops),
                cpu,
            }
        });
    }

    /// Checkpointing for a snapshot: None when the run neither checkpoints nor restores.
    fn checkpoint_sample(&self) -> Option<CheckpointSample> {
        if self.checkpointer.is_none()
            && self.restores.is_empty()
            && self.savepoints.is_empty()
            && !self.ctx.sink.is_tracked()
        {
            return None;
        }
        let history = self
            .checkpointer
            .as_ref()
            .map(|c| c.history.as_slice())
            .unwrap_or_default();
        Some(CheckpointSample {
            kind: self
                .checkpointer
                .as_ref()
                .map_or("off", |c| c.config().kind.name())
                .to_string(),
            completed: history.iter().filter(|c| c.failed.is_none()).count() as u64,
            failed: history.iter().filter(|c| c.failed.is_some()).count() as u64,
            in_flight: self.checkpointer.as_ref().is_some_and(|c| c.in_flight()),
            last: history.last().cloned(),
            recent: Vec::new(),
            bytes_uploaded: history.iter().map(|c| c.bytes).sum(),
            restarts: self.restores.len() as u64,
            last_restore_ms: self.restores.last().map(|r| r.restore_ms),
            delivery: self.ctx.sink.counters(),
            changelog: self
                .checkpointer
                .as_ref()
                .and_then(Checkpointer::changelog_status),
            savepoints: self.savepoints.len() as u64,
        })
    }

    /// Paces a rate-limited workload against this job's running time.
    fn pace(&self, run: &Run, now: Instant) {
        if let Rate::PerSecond(rate) = run.config.workload.spec.rate {
            let due = Duration::from_secs_f64(self.processed as f64 / rate as f64);
            let elapsed = run.clock.running(now).saturating_sub(self.started_at);
            if due > elapsed {
                std::thread::sleep(due - elapsed);
            }
        }
    }

    fn over_time(&self, run: &Run, now: Instant) -> bool {
        run.config
            .duration
            .is_some_and(|limit| run.clock.running(now) >= limit)
    }

    /// A live change, applied to this job's database.
    fn apply(&mut self, run: &mut Run, knob: Knob, value: String) {
        let at = run.clock.wall(Instant::now()).as_secs_f64();
        run.live.apply(self.backend, knob, value, at);
    }

    /// Obeys pending commands.
    fn handle_commands(&mut self, run: &mut Run) -> Control {
        loop {
            match run.commands.try_recv() {
                Ok(EngineCommand::Stop) => return Control::Stop,
                Ok(EngineCommand::Resume) => {}
                Ok(EngineCommand::Apply { knob, value }) => self.apply(run, knob, value),
                Ok(EngineCommand::InjectFailure) => return Control::Fail,
                Ok(EngineCommand::Savepoint(format)) => self.requested_savepoints.push(format),
                Ok(EngineCommand::Pause) => {
                    // Close the running interval first, so no sample mixes running and paused
                    // time (A/B compares the running ones).
                    self.publish(run, RunState::Running, None);
                    match self.paused(run) {
                        Control::Continue => {}
                        other => return other,
                    }
                }
                Err(TryRecvError::Empty) | Err(TryRecvError::Disconnected) => {
                    return Control::Continue;
                }
            }
        }
    }

    /// Waits for Resume; meanwhile applies changes and keeps publishing, so clients see
    /// RocksDB settle. The run's clock stands still.
    fn paused(&mut self, run: &mut Run) -> Control {
        run.clock.pause(Instant::now());
        let control = loop {
            match run.commands.recv_timeout(run.sampler.interval()) {
                Ok(EngineCommand::Resume) => break Control::Continue,
                Ok(EngineCommand::Stop) | Err(RecvTimeoutError::Disconnected) => {
                    break Control::Stop;
                }
                Ok(EngineCommand::Pause) => {}
                Ok(EngineCommand::InjectFailure) => run.failures.request(),
                Ok(EngineCommand::Savepoint(format)) => self.requested_savepoints.push(format),
                Ok(EngineCommand::Apply { knob, value }) => {
                    self.apply(run, knob, value);
                    self.publish(run, RunState::Paused, None);
                }
                Err(RecvTimeoutError::Timeout) => self.publish(run, RunState::Paused, None),
            }
        };
        let now = Instant::now();
        run.clock.resume(now);
        // The next interval starts now: it holds only running time.
        run.sampler.restart_interval(now);
        control
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

    /// Reads until the source ends, `limit` events were processed, time runs out or a Stop
    /// arrives; then ends a bounded source read to its end.
    pub fn drive(&mut self, run: &mut Run, limit: Option<u64>) -> Result<End, EngineError> {
        let mut end = End::Finished;
        self.ctx.state.mark(Mark::Begin)?;
        if std::mem::take(&mut run.start_paused)
            && let Control::Stop = self.paused(run)
        {
            end = End::Stopped;
        }
        while end == End::Finished && limit.is_none_or(|l| self.processed < l) && self.step()? {
            if self.processed.is_multiple_of(CHECK_EVERY_EVENTS) {
                let now = Instant::now();
                self.maybe_sample(run, now)?;
                if self.over_time(run, now) {
                    end = End::OverTime;
                    break;
                }
                self.pace(run, now);
                match self.handle_commands(run) {
                    Control::Continue => {}
                    Control::Stop => end = End::Stopped,
                    Control::Fail => run.failures.request(),
                }
                if self.checkpointer.is_some() {
                    if self.barriers_not_aligned(run) {
                        self.note_position();
                    }
                    self.checkpoint_tick(run, now)?;
                }
                let processed = self.processed;
                run.savepoints_due.retain(|(at, format)| {
                    let due = processed >= *at;
                    if due {
                        self.requested_savepoints.push(*format);
                    }
                    !due
                });
                for format in std::mem::take(&mut self.requested_savepoints) {
                    self.savepoint(run, format)?;
                }
                if let Some(mark) = &self.progress
                    && self.processed.is_multiple_of(WATERMARK_EVERY_EVENTS)
                {
                    mark.write(self.processed);
                }
                if run
                    .failures
                    .due(self.processed, self.checkpoints_completed, now)
                {
                    // A crash: no flush, no end of input; whatever is not in a completed
                    // checkpoint is gone.
                    return Ok(End::Failed);
                }
            }
        }
        // Only a source read to its end ends; a run cut short by --events, --duration or Stop
        // leaves its partitions open, as an unbounded one would.
        if let (Some(delay), false, true, true) = (
            run.config.workload.spec.bounded_end_delay,
            end == End::Stopped,
            self.consumer.exhausted(),
            self.checked(),
        ) {
            self.end_bounded_source(delay)?;
        }
        self.ctx.flush_timers()?;
        self.ctx.sink.flush().map_err(PipelineError::from)?;
        self.ctx.state.mark(Mark::End)?;
        if let Some(mark) = &self.progress {
            mark.write(self.processed);
        }
        Ok(end)
    }

    /// The serving store's counters for this job alone.
    fn sink_counters(&self) -> SinkCounters {
        self.ctx.sink.sink().counters().since(&self.sink_base)
    }

    pub fn job_source(&self, committed: bool) -> JobSource {
        // A job restarted after failures started where its first attempt did.
        let plan = self.consumer.plan();
        let (started_from, start) = self
            .earlier
            .started_from
            .clone()
            .unwrap_or_else(|| (plan.start_reason.clone(), plan.start.clone()));
        JobSource {
            phase: self.phase,
            group: plan.group.clone(),
            started_from,
            start,
            end: self.consumer.position().clone(),
            records_read: self.records_read(),
            records_replayed: self.records_replayed(),
            records_before: self.earlier.records_before.unwrap_or(self.start_processed),
            records_skipped: self.consumer.skipped(),
            committed,
            sink_writes: self.sink_counters().writes,
            restored: self.restored,
        }
    }
}
