//! A job's durability: checkpoints at barriers (every operator's RocksDB instance under one
//! id), their completion (offsets to the broker, the sink's transaction committed) and
//! savepoints.

use std::time::Instant;

use super::job::JobRunner;
use super::run::Run;
use super::snapshot::SavepointRecord;
use super::{EngineError, SavepointFormat};
use crate::backend::StateBackend;
use crate::config::profile::CheckpointingMode;
use crate::durability::checkpoint::snapshot::live_ssts;
use crate::durability::checkpoint::store::{CheckpointStore, StoreConfig};
use crate::durability::checkpoint::{Checkpointer, Completion, JobMeta, Metadata, savepoint_files};
use crate::pipeline::PipelineError;
use crate::pipeline::source::Offsets;

/// With AT_LEAST_ONCE checkpointing, the records the job's first input processes past its
/// barrier while the second input's barrier is still on its way (see `at_least_once_offsets`).
pub const BARRIER_SKEW_RECORDS: u64 = 1024;

impl JobRunner<'_> {
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
            operators: self.chain.meta(),
            preloaded: self.preloaded,
        }
    }

    /// Each operator's HEAP timers as its raw keyed state stream, with the operator's index
    /// (operators with ROCKSDB timers, or none, have none).
    fn raw_keyed_states(&self) -> Vec<(usize, Vec<u8>)> {
        let first = self.ctx.timers.as_ref().and_then(|t| t.raw_keyed_state());
        let stages = self.chain.stages.iter().map(|s| {
            let raw = s.ctx.timers.as_ref().and_then(|t| t.raw_keyed_state());
            (s.index, raw)
        });
        std::iter::once((0, first))
            .chain(stages)
            .filter_map(|(op, raw)| Some((op, raw?)))
            .collect()
    }

    /// The synchronous part of a checkpoint: pending timers into RocksDB, the sink's
    /// transaction pre-committed, then the state snapshot and the upload's start.
    pub(super) fn checkpoint(&mut self, run: &Run, barrier: Instant) -> Result<(), EngineError> {
        let Some(id) = self.checkpointer.as_ref().map(Checkpointer::next_id) else {
            return Ok(());
        };
        self.drain_inputs()?;
        self.flush_timers()?;
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
        let raw = self.raw_keyed_states();
        let Some(checkpointer) = &mut self.checkpointer else {
            return Ok(());
        };
        // A full or incremental checkpoint that cannot be taken (a full disk, a store gone) is
        // declined, not the end of the job; its sink transaction stays pre-committed and the
        // next completed checkpoint commits it. A changelog checkpoint's failure may have lost
        // the changes it took: that one ends the run.
        let changelog = changes.is_some();
        match checkpointer.trigger(job, changes, &raw, barrier, secs) {
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
    pub(super) fn barriers_not_aligned(&self, run: &Run) -> bool {
        run.live.profile().knobs.checkpointing_mode == CheckpointingMode::AtLeastOnce
            && self.consumer.position().len() >= 2
    }

    /// Keeps the positions the first input's barrier may need (AT_LEAST_ONCE mode only).
    pub(super) fn note_position(&mut self) {
        let position = match &self.two_inputs {
            Some(reader) => reader.taken(self.consumer.position()),
            None => self.consumer.position().clone(),
        };
        self.recent_positions.push_back((self.processed, position));
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
    pub(super) fn checkpoint_tick(
        &mut self,
        run: &mut Run,
        now: Instant,
    ) -> Result<(), EngineError> {
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
    pub(super) fn savepoint(
        &mut self,
        run: &Run,
        format: SavepointFormat,
    ) -> Result<(), EngineError> {
        let began = Instant::now();
        self.drain_inputs()?;
        self.flush_timers()?;
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
        let backends: Vec<&StateBackend> = self.backends.iter().map(|b| &**b).collect();
        let (kind, mut files) =
            savepoint_files(&backends, format == SavepointFormat::Canonical, &scratch)
                .map_err(PipelineError::from)?;
        for (op, raw) in self.raw_keyed_states() {
            files.push(
                crate::pipeline::timers::raw::write_file(&scratch, op, &raw).map_err(|e| {
                    EngineError::Restore(format!("cannot write the savepoint's heap timers: {e}"))
                })?,
            );
        }
        let metadata = Metadata {
            id,
            kind,
            job,
            ssts: Default::default(),
            op_ssts: Vec::new(),
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
        let mut live_sst_bytes = 0;
        for backend in self.backends {
            live_sst_bytes += live_ssts(backend)
                .map_err(PipelineError::from)?
                .iter()
                .map(|f| f.size)
                .sum::<u64>();
        }
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
}
