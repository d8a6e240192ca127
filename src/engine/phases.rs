//! The jobs of a run: one streaming job, or a backfill that hands its serving store (and, from
//! a savepoint, its state) to a catch-up job. The run-wide parts — running clock, live profile,
//! sampler, command channel — live in `Run` and carry across jobs.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc::{Receiver, SyncSender};
use std::time::Instant;

use super::clock::RunClock;
use super::job::{Attempts, End, JobRunner, JobSpec, Resume, Survivors};
use super::live::LiveProfile;
use super::progress::ProgressMark;
use super::run::{Failures, Run};
use super::sampler::Sampler;
use super::snapshot::{
    CheckpointOutcome, JobSource, MetricsSnapshot, Phase, RestoreRecord, RunOutcome, RunState,
};
use super::{EngineCommand, EngineConfig, EngineError, RestoreFrom, SinkConfig};
use crate::backend::StateBackend;
use crate::config::profile::{DeliveryGuarantee, IsolationLevel, KnobValue, Knobs};
use crate::config::workload::{CatchUpState, OffsetReset, PhasesSpec, StartingOffsets};
use crate::durability::checkpoint::snapshot::restore_full;
use crate::durability::checkpoint::store::{CheckpointStore, StoreConfig};
use crate::durability::checkpoint::{CheckpointConfig, Checkpointer, Metadata, prepare_restore};
use crate::durability::delivery::{Delivery, DeliveryConfig, Guarantee, Isolation};
use crate::durability::sink::{RedisSink, Sink, ThreadedMemorySink};
use crate::pipeline::PipelineError;
use crate::pipeline::operators::{self, JobMode};
use crate::pipeline::source::{Log, OffsetStore, ReadPlan, resolve_start};

/// The data directory's parts: RocksDB's working directory (the task's local state), the
/// broker's committed offsets, the checkpoint store (standing in for HDFS/S3), the sink's
/// journal, and scratch space for snapshots.
pub fn db_dir(data_dir: &Path) -> PathBuf {
    data_dir.join("db")
}
fn broker_file(data_dir: &Path) -> PathBuf {
    data_dir.join("broker.json")
}
pub fn checkpoint_dir(data_dir: &Path) -> PathBuf {
    data_dir.join("checkpoints")
}
fn sink_dir(data_dir: &Path) -> PathBuf {
    data_dir.join("sink")
}
fn scratch_dir(data_dir: &Path) -> PathBuf {
    data_dir.join("local-checkpoints")
}
fn restore_dir(data_dir: &Path) -> PathBuf {
    data_dir.join("restoring")
}

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
    let broker = OffsetStore::open(&broker_file(&config.data_dir)).map_err(EngineError::Broker)?;
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
        broker,
        savepoints_due: config.savepoints.clone(),
        failures: Failures::new(&config.failures, now),
    };
    run.sampler.attach_cpu(cpu);
    let recovers = CheckpointConfig::from_knobs(&config.profile.knobs).is_some()
        || config.restore.is_some()
        || config.failures.any();
    match config.workload.spec.phases.clone() {
        // Savepoints alone need no recovery, but the recoverable job reports them.
        None if config.record_ops.is_some() && (recovers || !config.savepoints.is_empty()) => {
            Err(EngineError::Source(
                "--record-ops records a run without checkpoints, --restore, failures or savepoints"
                    .to_string(),
            ))
        }
        None if recovers || !config.savepoints.is_empty() => recoverable(&mut run, &log, sink),
        None => streaming(&mut run, &log, sink),
        Some(_) if recovers => Err(EngineError::Source(
            "checkpoints, --restore and injected failures need a workload without phases"
                .to_string(),
        )),
        Some(phases) => backfill_then_catch_up(&mut run, &phases, &log, sink),
    }
}

fn open_sink(config: &EngineConfig) -> Result<Box<dyn Sink>, EngineError> {
    let labels = config.workload.result_labels();
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
    Ok(StateBackend::open_for(
        dir,
        run.live.profile(),
        &operators::layout(&run.config.workload.operator()),
    )?)
}

/// The one streaming job of a workload without phases, checkpointing off.
fn streaming(run: &mut Run, log: &Log, sink: Box<dyn Sink>) -> Result<RunOutcome, EngineError> {
    let backend = open_backend(run, &db_dir(&run.config.data_dir))?;
    let plan = ReadPlan::from_workload(log, &run.broker).map_err(EngineError::Source)?;
    let spec = JobSpec {
        phase: Phase::Streaming,
        mode: JobMode::Streaming,
        plan,
        restored: false,
        resume: None,
    };
    let fresh_state = state_is_empty(&backend);
    let sink = Delivery::passthrough(sink);
    let mut job = JobRunner::new(&backend, run, log, spec, sink, None)?;
    job.savepoint_store = Some(checkpoint_dir(&run.config.data_dir));
    finish(run, job, &backend, Vec::new(), fresh_state, None)
}

/// The shared folder of checkpoint `dir`: its store's (`<store>/chk-N` -> `<store>/shared`);
/// `default` for a savepoint (self-contained).
fn shared_of(dir: &Path, default: &Path) -> PathBuf {
    let is_checkpoint = dir
        .file_name()
        .is_some_and(|n| n.to_string_lossy().starts_with("chk-"));
    match dir.parent() {
        Some(store) if is_checkpoint => store.join("shared"),
        _ => default.to_path_buf(),
    }
}

/// The sink's delivery as the profile sets it.
fn delivery_config(k: &Knobs) -> DeliveryConfig {
    DeliveryConfig {
        guarantee: match k.sink_delivery_guarantee {
            DeliveryGuarantee::None => Guarantee::None,
            DeliveryGuarantee::AtLeastOnce => Guarantee::AtLeastOnce,
            DeliveryGuarantee::ExactlyOnce => Guarantee::ExactlyOnce,
        },
        isolation: match k.sink_reader_isolation {
            IsolationLevel::ReadCommitted => Isolation::ReadCommitted,
            IsolationLevel::ReadUncommitted => Isolation::ReadUncommitted,
        },
        idempotent: k.sink_idempotent,
        transaction_timeout_ms: Some(k.sink_transaction_timeout.0),
    }
}

/// The streaming job with checkpoints, a restore or injected failures: a job that fails is
/// restarted from the last completed checkpoint — its local state dropped and copied back from
/// the checkpoint store, its source rewound to the checkpoint's offsets, its sink's pending
/// transactions committed or aborted — until the run ends.
fn recoverable(run: &mut Run, log: &Log, sink: Box<dyn Sink>) -> Result<RunOutcome, EngineError> {
    let config = run.config;
    let knobs = run.live.profile().knobs.clone();
    let checkpointing = CheckpointConfig::from_knobs(&knobs);
    let data = &config.data_dir;
    let store_config = checkpointing.map_or_else(StoreConfig::default, |c| c.store_config());
    let store =
        CheckpointStore::open(&checkpoint_dir(data), store_config).map_err(PipelineError::from)?;
    let shared = store.shared_dir();
    // Transaction ages are the broker's wall clock: they go on across pauses and processes.
    let clock_ms = |_: &Run| super::run::epoch_ms();
    let mut sink = Delivery::open(
        sink,
        delivery_config(&knobs),
        &sink_dir(data),
        clock_ms(run),
    )
    .map_err(PipelineError::from)?;
    let mut from: Option<PathBuf> = match &config.restore {
        None => None,
        Some(RestoreFrom::Latest) => Some(
            store
                .latest()
                .ok_or_else(|| {
                    EngineError::Restore(format!(
                        "no completed checkpoint in {} (run with execution.checkpointing.interval set first)",
                        store.root().display()
                    ))
                })?
                .path,
        ),
        Some(RestoreFrom::Dir(dir)) => Some(dir.clone()),
    };
    // Without checkpointing the store only served the restore (an earlier run's checkpoint).
    let mut checkpointer = match checkpointing {
        Some(c) => Some(
            Checkpointer::new(c, store, scratch_dir(data), Instant::now())
                .map_err(PipelineError::from)?,
        ),
        None => None,
    };
    let mut cause = "--restore";
    let mut survivors: Option<Survivors> = None;
    let mut restores = Vec::new();
    let mut savepoints = Vec::new();
    // The truth is rebuilt from the log for a restored job too; only state left in the data
    // directory by an earlier run (--reuse, no restore) makes the comparison moot.
    let mut fresh_state = None;
    loop {
        let failed_at = run.clock.wall(Instant::now()).as_secs_f64();
        let began = Instant::now();
        let restored = match &from {
            Some(dir) => Some(
                // A checkpoint's shared files are beside it, in its own store.
                prepare_restore(
                    dir,
                    &shared_of(dir, &shared),
                    &db_dir(data),
                    &restore_dir(data),
                )
                .map_err(|e| EngineError::Restore(format!("{}: {e}", dir.display())))?,
            ),
            None => {
                // No checkpoint to restore: the local state is dropped all the same.
                let db = db_dir(data);
                if survivors.is_some() && db.exists() {
                    std::fs::remove_dir_all(&db).map_err(|e| {
                        EngineError::Restore(format!("cannot remove {}: {e}", db.display()))
                    })?;
                }
                None
            }
        };
        let backend = Arc::new(open_backend(run, &db_dir(data))?);
        if survivors.is_some() {
            // RocksDB's counters start again on the reopened database; the run's go on.
            run.sampler.reopened();
        }
        let mut bytes = restored.as_ref().map_or(0, |r| r.bytes);
        if let Some(stream) = restored.as_ref().and_then(|r| r.full_stream.as_ref()) {
            let stats = restore_full(&backend, stream).map_err(PipelineError::from)?;
            bytes = bytes.max(stats.bytes);
        }
        for segment in restored.iter().flat_map(|r| &r.changelog) {
            let changes = std::fs::read(segment).map_err(|e| {
                EngineError::Restore(format!("cannot read {}: {e}", segment.display()))
            })?;
            crate::backend::replay_changelog(&backend, &changes)?;
        }
        if restored.is_some() {
            let _ = std::fs::remove_dir_all(restore_dir(data));
        }
        let metadata: Option<&Metadata> = restored.as_ref().map(|r| &r.metadata);
        let fresh_state =
            *fresh_state.get_or_insert(metadata.is_some() || state_is_empty(&backend));
        let mut plan = ReadPlan::from_workload(log, &run.broker).map_err(EngineError::Source)?;
        let mut resume = None;
        if let Some(m) = metadata {
            plan.start = m.job.offsets.clone();
            plan.covered = Some(m.job.offsets.clone());
            plan.truth_start = m.job.truth_start.clone();
            let from_dir = from.as_deref().unwrap_or(Path::new(""));
            plan.start_reason = if from_dir.parent().and_then(Path::file_name)
                == Some(std::ffi::OsStr::new("savepoints"))
            {
                format!("savepoint {}", from_dir.display())
            } else {
                format!("checkpoint {} ({})", m.id, m.kind.name())
            };
            plan.deployed_at = m.job.processing_time;
            resume = Some(Resume {
                processed: m.job.processed,
                counters: m.job.counters,
                results: m.job.results.clone(),
                truth_origin: m.job.truth_start.clone(),
            });
        }
        let mut replayed = 0;
        let mut attempts = Attempts::default();
        // The records read again: up to where the failed attempt got; after a kill, up to the
        // killed process's last progress mark.
        let mut replay_until = resume.as_ref().map_or(0, |r| r.processed);
        if metadata.is_some()
            && survivors.is_none()
            && let Some(mark) = ProgressMark::read(data)
        {
            replay_until = replay_until.max(mark);
            replayed = replay_until - resume.as_ref().map_or(0, |r| r.processed);
        }
        // A restore in a new process: the job's work before it, as far as the checkpoint
        // recorded it (a checkpoint written before jobs recorded their work has none).
        if survivors.is_none()
            && let Some(m) = metadata
            && m.job.work.processes > 0
        {
            attempts.earlier_processes = Some(m.job.work);
        }
        let truth = match survivors.take() {
            Some(mut s) => {
                attempts = std::mem::take(&mut s.attempts);
                replay_until = s.processed;
                // The truth has seen every record up to the failed job's position.
                let truth_origin = resume
                    .as_ref()
                    .map_or_else(|| s.truth_origin.clone(), |r| r.truth_origin.clone());
                plan.truth_start = s.position.clone();
                replayed = s
                    .processed
                    .saturating_sub(resume.as_ref().map_or(0, |r| r.processed));
                resume.get_or_insert_with(|| Resume {
                    processed: 0,
                    counters: Default::default(),
                    results: Vec::new(),
                    truth_origin: truth_origin.clone(),
                });
                sink = s.sink;
                Some((s.oracle, s.oracle_watermark))
            }
            None => None,
        };
        sink.recover(metadata.map(|m| m.id), clock_ms(run))
            .map_err(PipelineError::from)?;
        if from.is_some() || truth.is_some() {
            restores.push(RestoreRecord {
                at_secs: failed_at,
                checkpoint: metadata.map(|m| m.id),
                cause: cause.to_string(),
                restore_ms: began.elapsed().as_secs_f64() * 1e3,
                bytes,
                records_replayed: replayed,
            });
        }
        let spec = JobSpec {
            phase: Phase::Streaming,
            mode: JobMode::Streaming,
            plan,
            restored: metadata.is_some(),
            resume,
        };
        let mut job = JobRunner::new(&backend, run, log, spec, sink, truth)?;
        if let (Some(dir), Some(_), Some(timers)) = (&from, metadata, &mut job.ctx.timers) {
            // HEAP timers come back from the checkpoint's raw keyed state.
            timers
                .restore_raw_keyed_state(dir, &db_dir(data))
                .map_err(EngineError::Restore)?;
        }
        job.continue_from(attempts, replay_until);
        job.mark_progress(ProgressMark::create(data).map_err(|e| {
            EngineError::Restore(format!(
                "cannot write {}: {e}",
                ProgressMark::path(data).display()
            ))
        })?);
        if let Some(mut c) = checkpointer.take() {
            c.attach(Arc::clone(&backend), metadata, Instant::now())
                .map_err(PipelineError::from)?;
            if c.config().kind == crate::config::profile::CheckpointKind::Changelog {
                job.ctx.state.enable_changelog();
            }
            job.reported_checkpoints = c.history.len();
            job.checkpointer = Some(c);
        }
        job.restores = restores.clone();
        job.savepoints = std::mem::take(&mut savepoints);
        job.savepoint_store = Some(checkpoint_dir(data));
        run.failures.restarted(Instant::now());
        let end = job.drive(run, Some(config.events))?;
        if end == End::Failed {
            // The interval up to the failure: RocksDB's counters of this opening are read
            // before it closes, so the run's totals keep all the failed attempt's work.
            job.publish(run, RunState::Running, None);
            savepoints = std::mem::take(&mut job.savepoints);
            let mut s = job.into_survivors();
            checkpointer = s.checkpointer.take();
            // (The sink lives on in the survivors; this placeholder is never written.)
            sink = Delivery::passthrough(Box::new(crate::durability::sink::MemorySink::default()));
            survivors = Some(s);
            drop(backend);
            // This run's newest completed checkpoint; before its first, where the run started
            // (a checkpoint or savepoint it restored, or nothing) — never an older run's
            // checkpoint left in the store.
            if let Some(c) = &checkpointer
                && let Some(id) = c.latest_completed()
            {
                from = Some(c.store().checkpoint_dir(id));
            }
            cause = "injected failure";
            continue;
        }
        job.final_checkpoint(run)?;
        let history = job
            .checkpointer
            .as_ref()
            .map(|c| c.history.clone())
            .unwrap_or_default();
        let delivery = job.ctx.sink.counters();
        let savepoints = job.savepoints.clone();
        let changelog = job
            .checkpointer
            .as_ref()
            .and_then(Checkpointer::changelog_status);
        let mut outcome = finish(run, job, &backend, Vec::new(), fresh_state, Some(end))?;
        outcome.checkpoints = Some(CheckpointOutcome {
            kind: checkpointing.map_or("off", |c| c.kind.name()).to_string(),
            history,
            restores,
            guarantee: knobs.sink_delivery_guarantee.show(),
            isolation: knobs.sink_reader_isolation.show(),
            idempotent: knobs.sink_idempotent,
            delivery,
            savepoints,
            changelog,
        });
        return Ok(outcome);
    }
}

/// Backfill, then catch-up (the seed's two-phase switch), sharing one serving store.
fn backfill_then_catch_up(
    run: &mut Run,
    phases: &PhasesSpec,
    log: &Log,
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
    let sink = Delivery::passthrough(sink);
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
        catch_up_backend = open_backend(run, &config.data_dir.join("catch-up"))?;
        &catch_up_backend
    };
    run.sampler.next_job(!from_savepoint);
    let mut catch_up = JobRunner::new(backend, run, log, spec, sink, None)?;
    catch_up.savepoint_store = Some(checkpoint_dir(&config.data_dir));
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
        let all = job.read_results()?;
        Some(job.oracle.compare_all_expired(all)?)
    } else {
        None
    };
    job.publish(run, RunState::Finished, Some(result_error));
    // The frequency counter's state holds its results (a scan checks them); another kind's
    // results are what it emitted.
    let final_state = match job.job.as_frequency() {
        Some(counter) => counter.state_counts(&mut job.ctx.state)?,
        None => job.read_results()?,
    };
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
        checkpoints: None,
    })
}

/// True when no column family that holds job state has a key yet.
fn state_is_empty(backend: &StateBackend) -> bool {
    backend.data_column_families().iter().all(|cf| {
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
