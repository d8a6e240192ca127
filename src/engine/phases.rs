//! The jobs of a run: one streaming job, or a backfill that hands its serving store (and, from
//! a savepoint, its state) to a catch-up job. The run-wide parts — running clock, live profile,
//! sampler, command channel — live in `Run` and carry across jobs.

use std::sync::mpsc::{Receiver, SyncSender};
use std::time::Instant;

use super::clock::RunClock;
use super::finish::finish;
use super::folders::{
    broker_file, checkpoint_dir, db_dir, open_backends, scratch_dir, sink_dir, state_is_empty,
};
use super::from_base::{StartedFromBase, start_from_base};
use super::job::{End, JobRunner, JobSpec};
use super::live::LiveProfile;
use super::run::{Failures, Run};
use super::sampler::Sampler;
use super::snapshot::{MetricsSnapshot, Phase, RunOutcome, RunState};
use super::{EngineCommand, EngineConfig, EngineError, SinkConfig};
use crate::config::workload::{CatchUpState, OffsetReset, PhasesSpec, StartingOffsets};
use crate::durability::checkpoint::CheckpointConfig;
use crate::durability::delivery::{Delivery, DeliveryConfig};
use crate::durability::sink::{RedisSink, Sink, ThreadedMemorySink};
use crate::pipeline::PipelineError;
use crate::pipeline::operators::JobMode;
use crate::pipeline::source::{Log, OffsetStore, ReadPlan, resolve_start};
use crate::preload;

/// Runs `config`'s workload to its end (or a Stop) and returns the outcome.
pub fn run(
    mut config: EngineConfig,
    commands: Receiver<EngineCommand>,
    snapshots: SyncSender<Box<MetricsSnapshot>>,
    now: Instant,
) -> Result<RunOutcome, EngineError> {
    // A preload's base is found or built first: the log holds its history too.
    let base = match &config.preload {
        None => None,
        Some(p) => {
            let others =
                config.restore.is_some() || config.failures.any() || config.record_ops.is_some();
            if let Some(why) = preload::refusal(&config.workload, others) {
                return Err(EngineError::Preload(format!(
                    "{}: {why}",
                    config.workload.name
                )));
            }
            let scratch = scratch_dir(&config.data_dir).join("preload-scratch");
            Some(preload::find_or_build(
                p,
                &config.workload,
                &config.profile,
                config.trace.clone(),
                &scratch,
            )?)
        }
    };
    let recovers = CheckpointConfig::from_knobs(&config.profile.knobs).is_some()
        || config.restore.is_some()
        || config.failures.any();
    let history = base.as_ref().map_or(0, |b| b.manifest.records);
    // The log holds the workload's events, or more if the run asks for more (after a
    // preload's history).
    let log = Log::new(
        &config.workload,
        config.trace.clone(),
        config.events.max(config.workload.spec.events) + history,
    );
    let broker = OffsetStore::open(&broker_file(&config.data_dir)).map_err(EngineError::Broker)?;
    unsupported_in_a_chain(&config, recovers || !config.savepoints.is_empty())?;
    let job = which_job(&config, recovers)?;
    let sink = open_delivery(&config, matches!(job, Which::Recoverable))?;
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
        broker,
        savepoints_due: config.savepoints.clone(),
        failures: Failures::new(&config.failures, now),
    };
    run.sampler.attach_cpu(cpu);
    match job {
        Which::Recoverable => super::recover::recoverable(&mut run, &log, sink, base),
        Which::Streaming => streaming(&mut run, &log, sink, base),
        Which::Phases(phases) => backfill_then_catch_up(&mut run, &phases, &log, sink),
    }
}

/// The job a run's configuration asks for.
enum Which {
    /// Checkpoints, a restore, injected failures or savepoints.
    Recoverable,
    /// One streaming job, checkpointing off.
    Streaming,
    /// A backfill, then its catch-up.
    Phases(PhasesSpec),
}

/// Which job `config` runs (`recovers`: checkpoints, a restore or failures), or why none.
fn which_job(config: &EngineConfig, recovers: bool) -> Result<Which, EngineError> {
    let savepoints = !config.savepoints.is_empty();
    match config.workload.spec.phases.clone() {
        // Savepoints alone need no recovery, but the recoverable job reports them.
        None if config.record_ops.is_some() && config.workload.is_chain() => {
            Err(EngineError::Source(
                "--record-ops records one RocksDB instance: a chain of operators has one per operator"
                    .to_string(),
            ))
        }
        None if config.record_ops.is_some() && (recovers || savepoints) => {
            Err(EngineError::Source(
                "--record-ops records a run without checkpoints, --restore, failures or savepoints"
                    .to_string(),
            ))
        }
        None if recovers || savepoints => Ok(Which::Recoverable),
        None => Ok(Which::Streaming),
        Some(_) if recovers => Err(EngineError::Source(
            "checkpoints, --restore and injected failures need a workload without phases"
                .to_string(),
        )),
        Some(phases) => Ok(Which::Phases(phases)),
    }
}

/// What a chain of operators does not do yet (said plainly rather than done wrong).
fn unsupported_in_a_chain(config: &EngineConfig, recovers: bool) -> Result<(), EngineError> {
    if config.workload.operators().len() < 2 {
        return Ok(());
    }
    let k = &config.profile.knobs;
    let why = if config.record_ops.is_some() {
        "--record-ops records a single operator's state traffic"
    } else if config.workload.spec.phases.is_some() {
        "phases (backfill and catch-up) run the frequency counter alone"
    } else if recovers && k.changelog_enabled {
        "checkpoints of a chain of operators with 'state.changelog.enabled: true' are not supported yet; turn the changelog off"
    } else {
        return Ok(());
    };
    Err(EngineError::Source(format!(
        "{}: a chain of {} operators: {why}",
        config.workload.name,
        config.workload.operators().len()
    )))
}

/// The job's serving store behind its delivery, the one the run's jobs write through: tracked
/// when the job recovers (its journal in the data directory replayed, pending transactions
/// waiting for the restore to settle them), written straight through otherwise.
fn open_delivery(config: &EngineConfig, tracked: bool) -> Result<Delivery, EngineError> {
    let labels = config.workload.result_labels();
    let sink: Box<dyn Sink> = match &config.sink {
        SinkConfig::Memory => {
            Box::new(ThreadedMemorySink::start(labels).map_err(EngineError::Spawn)?)
        }
        SinkConfig::Redis { url, prefix } => {
            Box::new(RedisSink::connect(url, prefix, labels).map_err(PipelineError::from)?)
        }
    };
    if !tracked {
        return Ok(Delivery::passthrough(sink));
    }
    // Transaction ages are the broker's wall clock: they go on across pauses and processes.
    Ok(Delivery::open(
        sink,
        DeliveryConfig::from_knobs(&config.profile.knobs),
        &sink_dir(&config.data_dir),
        super::run::epoch_ms(),
    )
    .map_err(PipelineError::from)?)
}

/// The one streaming job of a workload without phases, checkpointing off; from a preload's
/// base when `base` is one.
fn streaming(
    run: &mut Run,
    log: &Log,
    mut sink: Delivery,
    base: Option<preload::Base>,
) -> Result<RunOutcome, EngineError> {
    let backends = open_backends(run, &db_dir(&run.config.data_dir))?;
    let mut plan = ReadPlan::from_workload(log, &run.broker).map_err(EngineError::Source)?;
    let fresh_state = state_is_empty(&backends);
    let (mut resume, mut truth, mut report) = (None, None, None);
    let mut heap_timers = Vec::new();
    if let Some(base) = base {
        let started =
            start_from_base(run, base, &backends, log, &mut plan, &mut sink, fresh_state)?;
        (resume, truth, report) = (
            Some(started.resume),
            Some(started.truth),
            Some(started.report),
        );
        heap_timers = started.heap_timers;
    }
    let spec = JobSpec {
        phase: Phase::Streaming,
        mode: JobMode::Streaming,
        plan,
        restored: false,
        resume,
    };
    let mut job = JobRunner::new(&backends, run, log, spec, sink, truth)?;
    StartedFromBase::add_heap_timers(&heap_timers, &mut job)?;
    job.savepoint_store = Some(checkpoint_dir(&run.config.data_dir));
    job.preloaded = report.as_ref().map_or(0, |r| r.records);
    let mut outcome = finish(run, job, &backends, Vec::new(), fresh_state, None)?;
    outcome.preload = report;
    Ok(outcome)
}

/// Backfill, then catch-up (the seed's two-phase switch), sharing one serving store.
fn backfill_then_catch_up(
    run: &mut Run,
    phases: &PhasesSpec,
    log: &Log,
    sink: Delivery,
) -> Result<RunOutcome, EngineError> {
    let config = run.config;
    if config.record_ops.is_some() {
        return Err(EngineError::Source(
            "recording RocksDB operations needs a workload without phases".to_string(),
        ));
    }
    let switch = log.start_time() + phases.switch_at.0 as i64;
    // Both jobs are deployed at the switch; the backfill reads the retained history up to it.
    let backfill_backend = open_backends(run, &config.data_dir.join("backfill"))?;
    let fresh_state = state_is_empty(&backfill_backend);
    let (start, reason) = resolve_start(
        log,
        &run.broker,
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
            covered: None,
            start,
            start_reason: reason,
            stop_time: Some(switch),
            deployed_at: switch,
        },
        restored: false,
        resume: None,
    };
    let mut backfill = JobRunner::new(&backfill_backend, run, log, spec, sink, None)?;
    backfill.savepoint_store = Some(checkpoint_dir(&config.data_dir));
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
    let Some(counter) = backfill.job.as_frequency() else {
        return Err(EngineError::Source(
            "phases run the frequency counter only".to_string(),
        ));
    };
    counter.sync_to_sink(&mut backfill.ctx)?;
    run.broker
        .commit(&phases.backfill_group, backfill.consumer.position().clone())
        .map_err(EngineError::Broker)?;
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
            covered: None,
        },
        CatchUpState::Fresh => {
            let (start, reason) = resolve_start(
                log,
                &run.broker,
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
                covered: None,
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
        resume: None,
    };
    // Live changes made during the backfill carry over to the catch-up's own database.
    let catch_up_backend;
    let backend = if from_savepoint {
        &backfill_backend
    } else {
        catch_up_backend = open_backends(run, &config.data_dir.join("catch-up"))?;
        &catch_up_backend
    };
    run.sampler.next_job(!from_savepoint);
    let mut catch_up = JobRunner::new(backend, run, log, spec, sink, None)?;
    catch_up.savepoint_store = Some(checkpoint_dir(&config.data_dir));
    finish(run, catch_up, backend, jobs, fresh_state, None)
}
