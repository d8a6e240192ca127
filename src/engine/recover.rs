//! The streaming job that recovers: checkpoints, a restore (`--restore`, a savepoint) and
//! injected failures, each operator's database restored from the same checkpoint.

use std::path::{Path, PathBuf};
use std::time::Instant;

use super::finish::finish;
use super::folders::{
    checkpoint_dir, db_dir, db_dirs, open_backends, restore_dir, scratch_dir, shared_of,
    state_is_empty,
};
use super::from_base::{StartedFromBase, start_from_base};
use super::job::{Attempts, End, JobRunner, JobSpec, Resume, Survivors};
use super::run::Run;
use super::snapshot::{CheckpointOutcome, Phase, RestoreRecord, RunOutcome, RunState};
use super::{EngineError, RestoreFrom};
use crate::config::profile::KnobValue;
use crate::durability::checkpoint::snapshot::restore_full;
use crate::durability::checkpoint::store::{CheckpointStore, StoreConfig};
use crate::durability::checkpoint::{CheckpointConfig, Checkpointer, Metadata, prepare_restore};
use crate::durability::delivery::Delivery;
use crate::durability::progress_mark::ProgressMark;
use crate::pipeline::PipelineError;
use crate::pipeline::operators::JobMode;
use crate::pipeline::source::{Log, ReadPlan};
use crate::preload;

/// The streaming job with checkpoints, a restore or injected failures: a job that fails is
/// restarted from the last completed checkpoint — its local state dropped and copied back from
/// the checkpoint store, its source rewound to the checkpoint's offsets, its sink's pending
/// transactions committed or aborted — until the run ends.
pub(super) fn recoverable(
    run: &mut Run,
    log: &Log,
    mut sink: Delivery,
    mut base: Option<preload::Base>,
) -> Result<RunOutcome, EngineError> {
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
    let mut preloaded = None;
    let mut history = 0;
    loop {
        let failed_at = run.clock.wall(Instant::now()).as_secs_f64();
        let began = Instant::now();
        if let Some(dir) = &from
            && let Ok(m) = Metadata::read(dir)
            && m.job.preloaded > 0
        {
            // Refused before the data directory's state is replaced by the checkpoint's.
            return Err(EngineError::Restore(format!(
                "{}: taken by a run that started from {} records of preloaded history (run --preload); a restore cannot rebuild that history's log and truth yet: start a new run with --preload on an empty --data-dir instead",
                dir.display(),
                m.job.preloaded
            )));
        }
        let restored = match &from {
            Some(dir) => Some(
                // A checkpoint's shared files are beside it, in its own store.
                prepare_restore(
                    dir,
                    &shared_of(dir, &shared),
                    &db_dirs(run, &db_dir(data)),
                    &restore_dir(data),
                )
                .map_err(|e| EngineError::Restore(format!("{}: {e}", dir.display())))?,
            ),
            None => {
                // No checkpoint to restore: the local state is dropped all the same.
                for db in db_dirs(run, &db_dir(data)) {
                    if survivors.is_some() && db.exists() {
                        std::fs::remove_dir_all(&db).map_err(|e| {
                            EngineError::Restore(format!("cannot remove {}: {e}", db.display()))
                        })?;
                    }
                }
                None
            }
        };
        let backends = open_backends(run, &db_dir(data))?;
        if survivors.is_some() {
            // RocksDB's counters start again on the reopened database; the run's go on.
            run.sampler.reopened();
        }
        let mut bytes = restored.as_ref().map_or(0, |r| r.bytes);
        if let Some(r) = &restored {
            // Full: every operator's stream into its own database.
            let streams = r.full_stream.iter().chain(&r.op_full_streams);
            let mut streamed = 0;
            for (backend, stream) in backends.iter().zip(streams) {
                streamed += restore_full(backend, stream)
                    .map_err(PipelineError::from)?
                    .bytes;
            }
            bytes = bytes.max(streamed);
        }
        for segment in restored.iter().flat_map(|r| &r.changelog) {
            let changes = std::fs::read(segment).map_err(|e| {
                EngineError::Restore(format!("cannot read {}: {e}", segment.display()))
            })?;
            crate::backend::replay_changelog(&backends[0], &changes)?;
        }
        if restored.is_some() {
            let _ = std::fs::remove_dir_all(restore_dir(data));
        }
        let metadata: Option<&Metadata> = restored.as_ref().map(|r| &r.metadata);
        let fresh_state =
            *fresh_state.get_or_insert(metadata.is_some() || state_is_empty(&backends));
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
                operators: m.job.operators.clone(),
            });
        }
        // A preload (never with a restore or failures): the job starts after its history.
        let mut truth_from_base = None;
        let mut heap_timers = Vec::new();
        if let Some(b) = base.take() {
            let started =
                start_from_base(run, b, &backends, log, &mut plan, &mut sink, fresh_state)?;
            resume = Some(started.resume);
            truth_from_base = Some(started.truth);
            history = started.report.records;
            preloaded = Some(started.report);
            heap_timers = started.heap_timers;
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
        let restarted = from.is_some() || survivors.is_some();
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
                    operators: Vec::new(),
                });
                sink = s.sink;
                Some((s.oracle, s.oracle_watermark))
            }
            None => truth_from_base,
        };
        sink.recover(metadata.map(|m| m.id), clock_ms(run))
            .map_err(PipelineError::from)?;
        if restarted {
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
        let mut job = JobRunner::new(&backends, run, log, spec, sink, truth)?;
        StartedFromBase::add_heap_timers(&heap_timers, &mut job)?;
        if let (Some(dir), Some(_)) = (&from, metadata) {
            // HEAP timers come back from the checkpoint's raw keyed state: the first operator's
            // at its root, operator i's in its `op<i>/`.
            let dbs = db_dirs(run, &db_dir(data));
            let first = job.ctx.timers.as_mut().map(|t| (t, dir.clone(), &dbs[0]));
            let stages = job.chain.stages.iter_mut().filter_map(|s| {
                let own = dir.join(format!("op{}", s.index));
                Some((s.ctx.timers.as_mut()?, own, dbs.get(s.index)?))
            });
            for (timers, own, db) in first.into_iter().chain(stages) {
                timers
                    .restore_raw_keyed_state(&own, db)
                    .map_err(EngineError::Restore)?;
            }
        }
        job.continue_from(attempts, replay_until);
        job.mark_progress(ProgressMark::create(data).map_err(|e| {
            EngineError::Restore(format!(
                "cannot write {}: {e}",
                ProgressMark::path(data).display()
            ))
        })?);
        if let Some(mut c) = checkpointer.take() {
            c.attach(backends.clone(), metadata, Instant::now())
                .map_err(PipelineError::from)?;
            if history > 0 {
                c.adopt_preloaded().map_err(PipelineError::from)?;
            }
            if c.config().kind == crate::config::profile::CheckpointKind::Changelog {
                job.ctx.state.enable_changelog();
            }
            job.reported_checkpoints = c.history.len();
            job.checkpointer = Some(c);
        }
        job.restores = restores.clone();
        job.savepoints = std::mem::take(&mut savepoints);
        job.savepoint_store = Some(checkpoint_dir(data));
        job.preloaded = history;
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
            drop(backends);
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
        let mut outcome = finish(run, job, &backends, Vec::new(), fresh_state, Some(end))?;
        outcome.preload = preloaded;
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
