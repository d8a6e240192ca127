//! What a job shows while it runs: snapshots published each sample interval (comparing the
//! serving store with the oracle every few), and the run's commands obeyed.

use std::sync::mpsc::{RecvTimeoutError, TryRecvError};
use std::time::{Duration, Instant};

use super::job::{Control, JobRunner};
use super::run::Run;
use super::snapshot::{CheckpointSample, MetricsSnapshot, PipelineSample, RunState};
use super::{EngineCommand, EngineError, SinkConfig};
use crate::config::profile::Knob;
use crate::config::workload::Rate;
use crate::durability::checkpoint::Checkpointer;
use crate::pipeline::PipelineError;
use crate::pipeline::oracle::ResultError;

/// Every this many samples, a run on the in-process sink compares it with the oracle.
const COMPARE_EVERY_SAMPLES: u64 = 10;

impl JobRunner<'_> {
    /// Publishes a snapshot when the sample interval has passed.
    pub(super) fn maybe_sample(&mut self, run: &mut Run, now: Instant) -> Result<(), EngineError> {
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
        // The truth is ahead of operators with input still waiting.
        self.run_chain(true)?;
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
        let timer_counts = self.timer_counts();
        let cf_ops = self.cf_ops();
        let backends = self.backends;
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
            timers_registered: timer_counts.0,
            next_timer: ctx.timers.as_ref().and_then(|t| t.next_timestamp()),
            late_events: self.late_events,
            sink: ctx.sink.sink().counters().since(&self.sink_base),
            result_error,
            timers_fired: timer_counts.1,
            job: self.job.counters(),
            checkpoints,
        };
        let cpu = sampler.take_cpu(state != RunState::Paused);
        sampler.publish(now, self.backends, &perf, records, ops.gets, |interval| {
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
                rocksdb: cf_ops.iter().zip(backends).enumerate().fold(
                    interval.rocksdb,
                    |sample, (operator, (ops, backend))| {
                        sample.with_state_ops(operator, backend.column_families(), ops)
                    },
                ),
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
    pub(super) fn pace(&self, run: &Run, now: Instant) {
        if let Rate::PerSecond(rate) = run.config.workload.spec.rate {
            let due = Duration::from_secs_f64(self.processed as f64 / rate as f64);
            let elapsed = run.clock.running(now).saturating_sub(self.started_at);
            if due > elapsed {
                std::thread::sleep(due - elapsed);
            }
        }
    }

    pub(super) fn over_time(&self, run: &Run, now: Instant) -> bool {
        run.config
            .duration
            .is_some_and(|limit| run.clock.running(now) >= limit)
    }

    /// A live change, applied to this job's database.
    fn apply(&mut self, run: &mut Run, knob: Knob, value: String) {
        let at = run.clock.wall(Instant::now()).as_secs_f64();
        run.live.apply(self.backends, knob, value, at);
    }

    /// Obeys pending commands.
    pub(super) fn handle_commands(&mut self, run: &mut Run) -> Control {
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
    pub(super) fn paused(&mut self, run: &mut Run) -> Control {
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
}
