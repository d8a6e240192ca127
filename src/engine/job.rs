//! One job of a run: reads the log through its consumer, holds back watermarks in the valve,
//! runs the operator on its RocksDB backend and feeds the oracle; obeys the run's commands.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::SavepointFormat;
pub use super::attempts::{Attempts, Survivors};
use super::chain::{Chain, OperatorMeta};
use super::run::Run;
use super::snapshot::{JobSource, Op, OperatorSummary, Phase, RestoreRecord, SavepointRecord};
use super::{EngineError, WATERMARK_EVERY_EVENTS};
use crate::backend::oplog::{Mark, OpRecorder};
use crate::backend::perf::PerfCounters;
use crate::backend::{AccessCounters, StateBackend};
use crate::config::Millis;
use crate::durability::checkpoint::{Checkpointer, JobWork};
use crate::durability::delivery::Delivery;
use crate::durability::progress_mark::ProgressMark;
use crate::durability::sink::{Count, SinkCounters};
use crate::pipeline::PipelineError;
use crate::pipeline::operators::{self, Context, JobCounters, JobMode, KeyedOperator};
use crate::pipeline::oracle::thread::OracleThread;
use crate::pipeline::output::origin;
use crate::pipeline::source::{Consumer, Log, Offsets, ReadPlan};
use crate::pipeline::two_inputs::TwoInputReader;
use crate::pipeline::watermark::WatermarkValve;

/// Events between two looks at the clock and the command channel.
const CHECK_EVERY_EVENTS: u64 = 16;
/// Inputs each operator after a chain's first processes per record of the first (see
/// `Chain::run`): more than the records it is sent per record on average, so its input never
/// grows without bound.
const INPUTS_PER_RECORD: usize = 2;

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
    /// Where the operators after the first stood (a chain's; empty for one operator).
    pub operators: Vec<OperatorMeta>,
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
pub(super) enum Control {
    Continue,
    Stop,
    Fail,
}

/// One job, borrowed from its RocksDB backend.
pub struct JobRunner<'a> {
    /// Every operator's RocksDB instance, in chain order (the first's is `backend`).
    pub(super) backends: &'a [Arc<StateBackend>],
    pub phase: Phase,
    pub(super) perf: Option<PerfCounters>,
    /// The first operator (it reads the source) and its context.
    pub ctx: Context<'a, Delivery>,
    pub job: Box<dyn KeyedOperator<'a, Delivery> + 'a>,
    /// The operators after the first.
    pub chain: Chain<'a>,
    /// Every operator's kind, in chain order.
    pub(super) kinds: Vec<String>,
    pub consumer: Consumer,
    pub(super) watermark: WatermarkValve,
    pub oracle: OracleThread,
    /// The highest watermark the oracle has seen (a restored job's valve starts again below).
    pub(super) oracle_watermark: i64,
    /// Checkpoints, when the profile turns them on.
    pub checkpointer: Option<Checkpointer>,
    /// Checkpoints completed since this job started.
    pub(super) checkpoints_completed: u64,
    /// The run's restores so far (for the snapshots).
    pub restores: Vec<RestoreRecord>,
    /// Checkpoints of the coordinator's history already sent in a snapshot.
    pub reported_checkpoints: usize,
    /// Savepoints asked for and not taken yet.
    pub(super) requested_savepoints: Vec<SavepointFormat>,
    /// AT_LEAST_ONCE checkpointing: recent positions, to find the first input's at its barrier.
    pub(super) recent_positions: std::collections::VecDeque<(u64, Offsets)>,
    /// Savepoints taken (by this job and, carried over, the run's earlier ones).
    pub savepoints: Vec<SavepointRecord>,
    /// The store savepoints go to when the run does not checkpoint.
    pub savepoint_store: Option<std::path::PathBuf>,
    /// Records of preloaded history the job started after (0: none), for its checkpoints.
    pub preloaded: u64,
    /// Where the run's truth counts from.
    pub(super) truth_origin: Offsets,
    /// The shared serving store's counters when this job started (its own are the rest).
    pub(super) sink_base: SinkCounters,
    pub(super) restored: bool,
    /// The run's running time when this job (its first attempt) started.
    pub(super) started_at: Duration,
    pub(super) processed: u64,
    /// `processed` when this attempt started (a restored job: its checkpoint's count).
    pub(super) start_processed: u64,
    /// Records up to this count are read again: where the failed attempt had got to.
    pub(super) replay_until: u64,
    /// The job's earlier attempts in this process.
    pub(super) earlier: Attempts,
    /// Where the job marks how far it got (survives a kill -9: `--restore` reads it).
    pub(super) progress: Option<ProgressMark>,
    /// The last watermark forwarded to the operator.
    pub(super) forwarded: i64,
    /// Events that arrived at or behind the forwarded watermark.
    pub(super) late_events: u64,
    /// A two-input job's reading of its inputs (None: one input).
    pub(super) two_inputs: Option<TwoInputReader>,
}

impl<'a> JobRunner<'a> {
    pub fn new(
        backends: &'a [Arc<StateBackend>],
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
        let watermark = WatermarkValve::for_workload(workload, consumer.now());
        let two_inputs = TwoInputReader::for_workload(workload, log, consumer.now());
        let sink_base = sink.sink().counters();
        let backend: &'a StateBackend = backends
            .first()
            .ok_or_else(|| EngineError::Source("a job needs at least one operator".to_string()))?;
        let layout = operators::layout(&workload.operator());
        // `--record-ops` (a streaming run only: phases.rs refuses the others).
        let recorder = match &run.config.record_ops {
            Some(path) => Some(OpRecorder::create(path, backend, &layout)?),
            None => None,
        };
        let mut ctx = Context::recorded(backend, &layout, sink, recorder)?;
        ctx.set_now(consumer.now());
        let mut job = operators::build(backend, workload, 0, spec.mode)?;
        let processed = spec.resume.as_ref().map_or(0, |r| r.processed);
        if let Some(resume) = &spec.resume {
            job.restore_counters(resume.counters);
            job.restore_results(&resume.results);
        }
        let downstream = spec.resume.as_ref().map_or(&[][..], |r| &r.operators);
        let chain = Chain::build(backends, workload, spec.mode, consumer.now(), downstream)?;
        let (oracle, oracle_watermark) = match truth {
            Some(truth) => truth,
            None => (
                OracleThread::start(operators::oracle(workload)).map_err(EngineError::Spawn)?,
                i64::MIN,
            ),
        };
        Ok(JobRunner {
            backends,
            chain,
            kinds: workload
                .operators()
                .iter()
                .map(|o| o.kind().to_string())
                .collect(),
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
            preloaded: 0,
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
            two_inputs,
        })
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
    pub(super) fn work(&self, run: &Run) -> JobWork {
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

    /// RocksDB operations of every attempt, over every operator.
    pub(super) fn ops(&self) -> AccessCounters {
        self.earlier
            .ops
            .plus(&self.ctx.state.counters)
            .plus(&self.chain.ops())
    }

    /// Each operator's operations per column family over every attempt, in chain order.
    pub(super) fn cf_ops(&self) -> Vec<Vec<crate::backend::CfOps>> {
        std::iter::once(&self.ctx.state.column_families)
            .chain(
                self.chain
                    .stages
                    .iter()
                    .map(|s| &s.ctx.state.column_families),
            )
            .enumerate()
            .map(|(i, here)| {
                let earlier = self.earlier.cf_ops.get(i).map_or(&[][..], Vec::as_slice);
                crate::backend::plus_cf_ops(earlier, here)
            })
            .collect()
    }

    /// Each operator's RocksDB operations over every attempt, in chain order.
    pub(super) fn op_ops(&self) -> Vec<AccessCounters> {
        std::iter::once(&self.ctx.state.counters)
            .chain(self.chain.stages.iter().map(|s| &s.ctx.state.counters))
            .enumerate()
            .map(|(i, here)| {
                self.earlier
                    .op_ops
                    .get(i)
                    .map_or(*here, |earlier| earlier.plus(here))
            })
            .collect()
    }

    /// Each operator's figures (the run's summary lists them).
    pub fn operator_summaries(&self) -> Vec<OperatorSummary> {
        let specs = &self.kinds;
        let counters = std::iter::once(self.job.counters())
            .chain(self.chain.stages.iter().map(|s| s.op.counters()));
        counters
            .zip(self.op_ops())
            .enumerate()
            .map(|(index, (c, ops))| OperatorSummary {
                index,
                kind: specs.get(index).cloned().unwrap_or_default(),
                events_in: c.events,
                emitted: c.emitted,
                ops,
            })
            .collect()
    }

    /// Timers registered and fired over every operator.
    pub(super) fn timer_counts(&self) -> (u64, u64) {
        let (r, f) = self.ctx.timer_counts();
        let (cr, cf) = self.chain.timer_counts();
        (r + cr, f + cf)
    }

    /// Writes out every operator's buffered timer changes, after the operators after the first
    /// processed every input waiting (a barrier comes after the records before it).
    pub(super) fn flush_timers(&mut self) -> Result<(), PipelineError> {
        self.run_chain(true)?;
        self.ctx.flush_timers()?;
        self.chain.flush_timers()
    }

    /// The serving store, once the job is done with it (the next job writes on).
    pub fn into_sink(self) -> Delivery {
        self.ctx.sink
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
        if self.two_inputs.is_some() {
            return self.step_two_inputs();
        }
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
        self.forward_emitted(now)?;
        self.run_chain(false)?;
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

    /// Sends what the first operator emitted down the chain (behind a single operator,
    /// nobody reads it).
    pub(super) fn forward_emitted(&mut self, now: i64) -> Result<(), PipelineError> {
        if self.ctx.emitted.is_empty() {
            return Ok(());
        }
        if self.chain.stages.is_empty() {
            self.ctx.emitted.clear();
            return Ok(());
        }
        let mut records = std::mem::take(&mut self.ctx.emitted);
        self.chain.push(&mut records, now);
        // The buffer (now empty) goes back, with its capacity.
        self.ctx.emitted = records;
        Ok(())
    }

    /// Lets the operators after the first work through their inputs: `INPUTS_PER_RECORD` each
    /// per record of the first, or (None) all of it.
    pub(super) fn run_chain(&mut self, all: bool) -> Result<(), PipelineError> {
        if self.chain.stages.is_empty() {
            return Ok(());
        }
        let budget = (!all).then_some(INPUTS_PER_RECORD);
        self.chain.run(&mut self.ctx.sink, budget)
    }

    /// Forwards a watermark downstream if it moved: like Flink's valve, the operator (and the
    /// oracle) only ever see strictly increasing watermarks.
    pub(super) fn emit_watermark(&mut self, wm: i64) -> Result<(), EngineError> {
        if wm > self.forwarded {
            self.forwarded = wm;
            self.ctx.advance_watermark(self.job.as_mut(), wm)?;
            // What the first operator emitted while its timers fired, then the watermark.
            let now = self.ctx.now;
            self.forward_emitted(now)?;
            self.chain.advance(wm, now);
            // A restored job's watermark climbs again from the start: the truth has seen it.
            if self.checked() && wm > self.oracle_watermark {
                self.oracle_watermark = wm;
                self.oracle.on_watermark(wm)?;
            }
        }
        Ok(())
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
        if let Some(two) = &mut self.two_inputs {
            two.limit = limit;
        }
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
            if self.two_inputs.is_some() {
                self.end_two_inputs(delay)?;
            } else {
                self.end_bounded_source(delay)?;
            }
        }
        self.drain_inputs()?;
        self.run_chain(true)?;
        self.flush_timers()?;
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
