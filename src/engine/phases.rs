//! The jobs of a run: one streaming job, or a backfill that hands its serving store (and, from
//! a savepoint, its state) to a catch-up job. The run-wide parts — running clock, live profile,
//! sampler, command channel — live in `Run` and carry across jobs.

use std::sync::mpsc::{Receiver, SyncSender};
use std::time::Instant;

use super::clock::RunClock;
use super::job::{End, JobRunner, JobSpec};
use super::live::LiveProfile;
use super::run::Run;
use super::sampler::Sampler;
use super::snapshot::{JobSource, MetricsSnapshot, Phase, RunOutcome, RunState};
use super::{EngineCommand, EngineConfig, EngineError, SinkConfig};
use crate::backend::oplog::OpRecorder;
use crate::backend::{CF_TIMER_STATE, CF_WINDOW_STATS, StateBackend};
use crate::config::Workload;
use crate::config::workload::{CatchUpState, OffsetReset, PhasesSpec, StartingOffsets};
use crate::pipeline::PipelineError;
use crate::pipeline::operator::JobMode;
use crate::pipeline::sink::{RedisSink, Sink, ThreadedMemorySink};
use crate::pipeline::source::{Log, OffsetStore, ReadPlan, resolve_start};

/// Runs `config`'s workload to its end (or a Stop) and returns the outcome.
pub fn run(
    mut config: EngineConfig,
    commands: Receiver<EngineCommand>,
    snapshots: SyncSender<Box<MetricsSnapshot>>,
    now: Instant,
) -> Result<RunOutcome, EngineError> {
    // The log holds the workload's events, or more if the run asks for more.
    let log = Log::new(
        &config.workload,
        config.trace.clone(),
        config.events.max(config.workload.spec.events),
    );
    let mut offsets = OffsetStore::default();
    let sink = open_sink(&config)?;
    let cpu = config.cpu.take();
    let mut run = Run {
        config: &config,
        clock: RunClock::start(now),
        live: LiveProfile::new(config.profile.clone()),
        sampler: Sampler::new(
            config.workload.spec.sample_interval.as_duration(),
            snapshots,
            now,
        ),
        commands,
        start_paused: config.start_paused,
    };
    run.sampler.attach_cpu(cpu);
    match config.workload.spec.phases.clone() {
        None => streaming(&mut run, &log, &offsets, sink),
        Some(phases) => backfill_then_catch_up(&mut run, &phases, &log, &mut offsets, sink),
    }
}

fn open_sink(config: &EngineConfig) -> Result<Box<dyn Sink>, EngineError> {
    let labels = config.workload.window_labels();
    Ok(match &config.sink {
        SinkConfig::Memory => {
            Box::new(ThreadedMemorySink::start(labels).map_err(EngineError::Spawn)?)
        }
        SinkConfig::Redis { url, prefix } => {
            Box::new(RedisSink::connect(url, prefix, labels).map_err(PipelineError::from)?)
        }
    })
}

fn open_backend(run: &Run, dir: &std::path::Path) -> Result<StateBackend, EngineError> {
    Ok(StateBackend::open_with_ttl(
        dir,
        run.live.profile(),
        state_ttl(&run.config.workload),
    )?)
}

/// The one streaming job of a workload without phases.
fn streaming(
    run: &mut Run,
    log: &Log,
    offsets: &OffsetStore,
    sink: Box<dyn Sink>,
) -> Result<RunOutcome, EngineError> {
    let backend = open_backend(run, &run.config.data_dir)?;
    let plan = ReadPlan::from_workload(log, offsets).map_err(EngineError::Source)?;
    let spec = JobSpec {
        phase: Phase::Streaming,
        mode: JobMode::Streaming,
        plan,
        restored: false,
    };
    let fresh_state = state_is_empty(&backend);
    let mut job = JobRunner::new(&backend, run, log, spec, sink)?;
    if let Some(path) = &run.config.record_ops {
        job.ctx.state.record_to(OpRecorder::create(
            path,
            &backend,
            state_ttl(&run.config.workload),
        )?);
    }
    finish(run, job, &backend, Vec::new(), fresh_state, None)
}

/// Backfill, then catch-up (the seed's two-phase switch), sharing one serving store.
fn backfill_then_catch_up(
    run: &mut Run,
    phases: &PhasesSpec,
    log: &Log,
    offsets: &mut OffsetStore,
    sink: Box<dyn Sink>,
) -> Result<RunOutcome, EngineError> {
    let config = run.config;
    if config.record_ops.is_some() {
        return Err(EngineError::Source(
            "recording RocksDB operations needs a workload without phases".to_string(),
        ));
    }
    let switch = log.start_time() + phases.switch_at.0 as i64;
    // Both jobs are deployed at the switch; the backfill reads the retained history up to it.
    let backfill_backend = open_backend(run, &config.data_dir.join("backfill"))?;
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
    let spec = JobSpec {
        phase: Phase::Backfill,
        mode: JobMode::Backfill { switch },
        plan: ReadPlan {
            group: phases.backfill_group.clone(),
            truth_start: start.clone(),
            start,
            start_reason: reason,
            stop_time: Some(switch),
            deployed_at: switch,
        },
        restored: false,
    };
    let mut backfill = JobRunner::new(&backfill_backend, run, log, spec, sink)?;
    let end = backfill.drive(run, None)?;
    let mut jobs = Vec::new();
    if end != End::Finished {
        // Cut short (Stop or --duration): no sync, no commit, no catch-up.
        jobs.push(backfill.job_source(false));
        return finish(
            run,
            backfill,
            &backfill_backend,
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
    backfill.publish(run, RunState::Running, None);
    let savepoint_offsets = backfill.consumer.position().clone();
    let sink = backfill.into_sink();

    // A correct catch-up reads from the oldest retained record: that is the truth.
    let truth_start = vec![0; log.partitions()];
    let plan = match phases.catch_up_state {
        // Restored from the backfill's savepoint: its offsets win over any starting offsets.
        CatchUpState::BackfillSavepoint => ReadPlan {
            group: phases.catch_up_group.clone(),
            start: savepoint_offsets,
            start_reason: "the backfill's savepoint".to_string(),
            stop_time: None,
            deployed_at: switch,
            truth_start,
        },
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
            ReadPlan {
                group: phases.catch_up_group.clone(),
                start,
                start_reason: reason,
                stop_time: None,
                deployed_at: switch,
                truth_start,
            }
        }
    };
    let from_savepoint = phases.catch_up_state == CatchUpState::BackfillSavepoint;
    let spec = JobSpec {
        phase: Phase::CatchUp,
        mode: JobMode::CatchUp {
            switch,
            condition: phases.catch_up_writes,
        },
        plan,
        restored: from_savepoint,
    };
    // Live changes made during the backfill carry over to the catch-up's own database.
    let catch_up_backend;
    let backend = if from_savepoint {
        &backfill_backend
    } else {
        catch_up_backend = open_backend(run, &config.data_dir.join("catch-up"))?;
        &catch_up_backend
    };
    run.sampler.next_job(!from_savepoint);
    let catch_up = JobRunner::new(backend, run, log, spec, sink)?;
    finish(run, catch_up, backend, jobs, fresh_state, None)
}

/// Drives the run's last job to its end (unless `ended` says it already ran) and builds the
/// outcome.
fn finish(
    run: &mut Run,
    mut job: JobRunner<'_>,
    backend: &StateBackend,
    mut jobs: Vec<JobSource>,
    fresh_state: bool,
    ended: Option<End>,
) -> Result<RunOutcome, EngineError> {
    let config = run.config;
    let end = match ended {
        Some(end) => end,
        None => job.drive(run, Some(config.events))?,
    };
    // Only a Stop (Ctrl-C, q) is "stopped early"; --duration is a bound the user chose.
    let stopped_early = end == End::Stopped;
    // A run that ended inside the backfill never wrote its results: nothing to compare.
    let fresh_state = fresh_state && job.phase != Phase::Backfill;
    // The last job's own running time (the summary describes it; a backfill is in `jobs`).
    let processing_secs = job.running_secs(run);
    // The serving store and the job's state against the exact truth at the last watermark.
    let result_error = job.compare_sink()?;
    // A bounded source read to its end has one right answer whatever the job's watermark did:
    // every window expired. A dropped or stuck final watermark shows here as counts left over.
    let bounded_end = config.workload.spec.bounded_end_delay.is_some()
        && !stopped_early
        && job.phase != Phase::Backfill
        && job.consumer.exhausted();
    let end_of_input_error = if bounded_end {
        let all = job.ctx.sink.read_all().map_err(PipelineError::from)?;
        Some(job.oracle.compare_all_expired(all)?)
    } else {
        None
    };
    job.publish(run, RunState::Finished, Some(result_error));
    let final_state = job.job.state_counts(&mut job.ctx.state)?;
    job.ctx.state.finish_recording()?;
    let state_error = job.oracle.compare(final_state.clone())?;
    // RocksDB's newest OPTIONS file against the profile as it stands, live changes included.
    let option_mismatches = backend
        .verify_options(run.live.profile())?
        .iter()
        .map(ToString::to_string)
        .collect();
    let options_file = backend
        .latest_options_file()?
        .map(|p| p.display().to_string());
    if job.phase != Phase::Backfill {
        jobs.push(job.job_source(false));
    }
    Ok(RunOutcome {
        snapshots: run.sampler.take_history(),
        latency: job.ctx.state.latency.totals(),
        processing_secs,
        stopped_early,
        profile: run.live.profile().clone(),
        changes: run.live.changes().to_vec(),
        options_file,
        option_mismatches,
        result_error,
        state_error,
        final_state,
        fresh_state,
        jobs,
        end_of_input_error,
        serializer: run.config.workload.spec.serializer,
        cpu_profile: run.sampler.take_cpu_profile(),
    })
}

/// True when no column family that holds job state has a key yet.
fn state_is_empty(backend: &StateBackend) -> bool {
    [CF_WINDOW_STATS, CF_TIMER_STATE].iter().all(|cf| {
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

/// The timerState TTL (ms) the job declares, which decides Flink's TTL compaction filter.
fn state_ttl(workload: &Workload) -> Option<i64> {
    workload.spec.timer_state_ttl.map(|t| t.0 as i64)
}
