//! Checkpoints: periodic, consistent snapshots of a job — its source offsets, its RocksDB state
//! (timers included: they live in RocksDB) and its sink's transaction — uploaded to a checkpoint
//! store; restore from them.
//!
//! As in Flink, a checkpoint has a synchronous part on the job's thread at the barrier (timers
//! flushed to RocksDB, the sink's transaction pre-committed, a RocksDB snapshot or native
//! checkpoint taken) and an asynchronous part on a thread of its own (the upload). At most one
//! is under way; the next starts an interval after the last one started, and no sooner than
//! the minimum pause after the last one ended. Only when the store has it complete does the
//! job commit its offsets to the broker and its sink transaction.

mod changelog;
mod files;
mod metadata;
mod restore;
pub mod snapshot;
pub mod store;
mod trigger;

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, TryRecvError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use self::changelog::ChangelogState;
use self::files::incarnation;
use self::snapshot::{SnapshotError, live_ssts};
use self::store::{CheckpointStore, StoreConfig, StoreError, Upload};
use crate::backend::{BackendError, StateBackend};
use crate::config::profile::{CheckpointKind, Knobs};
pub use changelog::ChangelogStatus;
pub use files::savepoint_files;
pub use metadata::{CheckpointRecord, JobMeta, JobWork, Materialization, Metadata, OperatorMeta};
pub use restore::{Restored, prepare_restore};

/// The canonical stream's name in a full checkpoint or canonical savepoint.
pub const FULL_STATE: &str = "state.full";
/// Longest wait for the upload thread to take its RocksDB snapshot.
const SNAPSHOT_WAIT: Duration = Duration::from_secs(60);

/// Errors of checkpointing and restoring.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Snapshot(#[from] SnapshotError),
    #[error("checkpoint {dir}: {why}")]
    Metadata { dir: String, why: String },
    #[error("cannot {what}: {source}")]
    Io {
        what: String,
        source: std::io::Error,
    },
    #[error("checkpoint {0}: the upload thread is gone")]
    UploadThread(u64),
}

impl From<BackendError> for CheckpointError {
    fn from(e: BackendError) -> Self {
        CheckpointError::Snapshot(SnapshotError::from(e))
    }
}

impl From<CheckpointError> for crate::pipeline::PipelineError {
    fn from(e: CheckpointError) -> Self {
        crate::pipeline::PipelineError::Output(Box::new(e))
    }
}

impl From<StoreError> for crate::pipeline::PipelineError {
    fn from(e: StoreError) -> Self {
        CheckpointError::from(e).into()
    }
}

impl From<SnapshotError> for crate::pipeline::PipelineError {
    fn from(e: SnapshotError) -> Self {
        CheckpointError::from(e).into()
    }
}

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> CheckpointError {
    let what = what.into();
    move |source| CheckpointError::Io { what, source }
}

/// Checkpointing as the profile sets it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CheckpointConfig {
    pub kind: CheckpointKind,
    pub interval: Duration,
    pub min_pause: Duration,
    pub timeout: Duration,
    pub retained: usize,
    pub upload_bytes_per_sec: Option<u64>,
    /// The changelog backend's materialization interval.
    pub materialize_interval: Duration,
}

impl CheckpointConfig {
    /// The profile's checkpointing, or None when it is off (the interval is 0).
    pub fn from_knobs(k: &Knobs) -> Option<CheckpointConfig> {
        Some(CheckpointConfig {
            kind: k.checkpoint_kind()?,
            interval: k.checkpoint_interval.as_duration(),
            min_pause: k.checkpoint_min_pause.as_duration(),
            timeout: k.checkpoint_timeout.as_duration(),
            retained: k.checkpoints_retained.max(1) as usize,
            upload_bytes_per_sec: (k.checkpoint_upload_rate.0 > 0)
                .then_some(k.checkpoint_upload_rate.0),
            materialize_interval: k.changelog_materialize_interval.as_duration(),
        })
    }

    pub fn store_config(&self) -> StoreConfig {
        StoreConfig {
            retained: self.retained,
            upload_bytes_per_sec: self.upload_bytes_per_sec,
        }
    }
}

/// A checkpoint the store holds complete: time to commit what it covers.
#[derive(Debug, Clone)]
pub struct Completion {
    pub id: u64,
    pub job: JobMeta,
}

/// What the upload thread hands back.
type UploadResult = Result<Upload, (Option<Upload>, String)>;

struct InFlight {
    id: u64,
    started: Instant,
    sync_done: Instant,
    metadata: Metadata,
    record: CheckpointRecord,
    cancel: Arc<AtomicBool>,
    done: Receiver<UploadResult>,
    thread: Option<JoinHandle<()>>,
    timed_out: bool,
    /// A changelog checkpoint that materializes the state.
    materializing: bool,
}

/// The job's checkpoint coordinator: decides when, takes the synchronous part, runs the upload
/// on a thread, and completes checkpoints in the store.
pub struct Checkpointer {
    config: CheckpointConfig,
    store: CheckpointStore,
    /// The job's databases, one per operator in chain order; none between a failure and the
    /// restart. Every checkpoint holds all of them under one id.
    backends: Vec<Arc<StateBackend>>,
    /// Scratch space for native checkpoints and full streams before upload.
    local: PathBuf,
    /// Names this database's new SST files get in the shared folder.
    incarnation: String,
    /// Per database: RocksDB's SST file name -> its name in the shared folder, for files
    /// uploaded or restored.
    uploaded: Vec<HashMap<String, String>>,
    /// Per database: SST files at the last barrier (new ones are classified by level).
    last_ssts: Vec<HashSet<String>>,
    next_id: u64,
    last_trigger: Instant,
    last_end: Option<Instant>,
    in_flight: Option<InFlight>,
    /// Every checkpoint, completed or failed, in order.
    pub history: Vec<CheckpointRecord>,
    changelog: ChangelogState,
}

impl Checkpointer {
    /// A coordinator uploading to `store`, for the job `attach` gives it.
    pub fn new(
        config: CheckpointConfig,
        store: CheckpointStore,
        local: PathBuf,
        now: Instant,
    ) -> Result<Checkpointer, CheckpointError> {
        // Leftovers of a process that died mid-checkpoint.
        if local.exists() {
            std::fs::remove_dir_all(&local).map_err(io(format!("empty {}", local.display())))?;
        }
        std::fs::create_dir_all(&local).map_err(io(format!("create {}", local.display())))?;
        let next_id = store.latest().map_or(0, |l| l.id) + 1;
        Ok(Checkpointer {
            config,
            store,
            backends: Vec::new(),
            local,
            incarnation: incarnation(),
            uploaded: Vec::new(),
            last_ssts: Vec::new(),
            next_id,
            last_trigger: now,
            last_end: None,
            in_flight: None,
            history: Vec::new(),
            changelog: ChangelogState::new(now),
        })
    }

    /// Checkpoints the job on `backends` (one per operator, in chain order) from now on.
    /// `restored` is the checkpoint their state came from, if any: its SST files are in the
    /// store already.
    pub fn attach(
        &mut self,
        backends: Vec<Arc<StateBackend>>,
        restored: Option<&Metadata>,
        now: Instant,
    ) -> Result<(), CheckpointError> {
        self.abandon();
        // The restored files are in the store under their shared names: referenced, not
        // uploaded again.
        let reversed = |ssts: &mut dyn Iterator<Item = (&String, &String)>| {
            ssts.filter(|(_, local)| local.ends_with(".sst"))
                .map(|(s, l)| (l.clone(), s.clone()))
                .collect::<HashMap<_, _>>()
        };
        self.uploaded = (0..backends.len())
            .map(|i| match (restored, i) {
                (None, _) => HashMap::new(),
                (Some(m), 0) => reversed(
                    &mut m
                        .ssts
                        .iter()
                        .chain(m.materialization.iter().flat_map(|mat| &mat.files)),
                ),
                (Some(m), i) => m
                    .op_ssts
                    .get(i - 1)
                    .map(|ssts| reversed(&mut ssts.iter()))
                    .unwrap_or_default(),
            })
            .collect();
        self.last_ssts = backends
            .iter()
            .map(|b| Ok(live_ssts(b)?.into_iter().map(|f| f.name).collect()))
            .collect::<Result<_, CheckpointError>>()?;
        self.incarnation = incarnation();
        // A restarted backend starts its materialization bookkeeping afresh (a restart is what
        // clears a skip left by a native savepoint), from the materialization it restored.
        for (_, local, _) in self.changelog.segments.drain(..) {
            if let Some(path) = local {
                let _ = std::fs::remove_file(path);
            }
        }
        self.changelog.base = restored.and_then(|m| m.materialization.clone());
        let base_id = self.changelog.base.as_ref().map_or(0, |b| b.id);
        self.changelog.next_id = base_id + 1;
        self.changelog.last_confirmed = base_id;
        self.changelog.last_failed = 0;
        self.changelog.last_due = now;
        if let Some(m) = restored {
            // A restored changelog job builds on its checkpoint's segments, which the store
            // holds.
            self.changelog.segments = m
                .changelog
                .iter()
                .map(|n| (n.clone(), None, self.store.shared_size(n).unwrap_or(0)))
                .collect();
        }
        self.backends = backends;
        self.last_trigger = now;
        self.last_end = None;
        Ok(())
    }

    /// The job starts from a preloaded steady state (`run --preload`), which stands for a job
    /// restored from a checkpoint of that state in Flink's CLAIM mode: its SST files are in
    /// the store already. They are hard-linked into the shared folder (copied across file
    /// systems, not counted as uploaded), so the first checkpoint references them instead of
    /// uploading the whole state as if it were new, and with the changelog they are the
    /// materialization the log builds on (id 0). Call after [`Self::attach`]; the first
    /// operator's database only (a chain is never preloaded). A checkpoint that builds on
    /// them cannot be restored (a restore refuses runs from a preload): it has no MANIFEST.
    pub fn adopt_preloaded(&mut self) -> Result<(), CheckpointError> {
        let backend = Arc::clone(self.backend()?);
        let shared_dir = self.store.shared_dir();
        let mut files = std::collections::BTreeMap::new();
        for sst in live_ssts(&backend)? {
            let name = format!("{}-{}", self.incarnation, sst.name);
            let local = backend.path().join(&sst.name);
            let stored = shared_dir.join(&name);
            if std::fs::hard_link(&local, &stored).is_err() {
                std::fs::copy(&local, &stored).map_err(io(format!(
                    "copy {} to {}",
                    local.display(),
                    stored.display()
                )))?;
            }
            files.insert(name.clone(), sst.name.clone());
            if self.uploaded.is_empty() {
                self.uploaded.push(HashMap::new());
            }
            self.uploaded[0].insert(sst.name, name);
        }
        if self.config.kind == CheckpointKind::Changelog {
            self.changelog.base = Some(Materialization {
                id: 0,
                files,
                at_epoch_ms: files::epoch_ms(),
            });
        }
        Ok(())
    }

    /// The job failed: its checkpoint under way is abandoned and its database let go.
    pub fn detach(&mut self) {
        self.abandon();
        self.backends.clear();
    }

    /// The first operator's database (the only one of a single operator).
    fn backend(&self) -> Result<&Arc<StateBackend>, CheckpointError> {
        self.backends
            .first()
            .ok_or_else(|| CheckpointError::Metadata {
                dir: self.store.root().display().to_string(),
                why: "no job to checkpoint (a restart is under way)".to_string(),
            })
    }

    pub fn config(&self) -> &CheckpointConfig {
        &self.config
    }

    /// The id the next checkpoint gets.
    pub fn next_id(&self) -> u64 {
        self.next_id
    }

    /// An id for a savepoint: savepoints draw from the checkpoints' counter, as in Flink.
    pub fn take_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id - 1
    }

    /// The newest checkpoint completed since this coordinator started: where a failed job
    /// restarts from (not an older run's checkpoint left in the store).
    pub fn latest_completed(&self) -> Option<u64> {
        self.history
            .iter()
            .filter(|r| r.failed.is_none())
            .map(|r| r.id)
            .max()
    }

    pub fn store(&self) -> &CheckpointStore {
        &self.store
    }

    /// True when a checkpoint is due: none under way, an interval since the last one started,
    /// the minimum pause since the last one ended.
    pub fn due(&self, now: Instant) -> bool {
        self.in_flight.is_none()
            && now.duration_since(self.last_trigger) >= self.config.interval
            && self
                .last_end
                .is_none_or(|end| now.duration_since(end) >= self.config.min_pause)
    }

    pub fn in_flight(&self) -> bool {
        self.in_flight.is_some()
    }

    /// Looks at the checkpoint under way: completes it in the store when its upload is done
    /// (returning what to commit), fails it when its upload failed or it is past the timeout.
    pub fn poll(&mut self) -> Result<Option<Completion>, CheckpointError> {
        let Some(flight) = &mut self.in_flight else {
            return Ok(None);
        };
        let result = match flight.done.try_recv() {
            Ok(result) => result,
            Err(TryRecvError::Empty) => {
                if !flight.timed_out && flight.started.elapsed() >= self.config.timeout {
                    flight.timed_out = true;
                    flight.cancel.store(true, Ordering::Relaxed);
                }
                return Ok(None);
            }
            Err(TryRecvError::Disconnected) => Err((None, "the upload thread ended".to_string())),
        };
        let Some(mut flight) = self.in_flight.take() else {
            return Ok(None);
        };
        let materializing = flight.materializing;
        if let Some(thread) = flight.thread.take() {
            let _ = thread.join();
        }
        let now = Instant::now();
        self.last_end = Some(now);
        flight.record.async_ms = now.duration_since(flight.sync_done).as_secs_f64() * 1e3;
        let failure = match result {
            Ok(upload) if !flight.timed_out => {
                let metadata = serde_json::to_value(&flight.metadata).map_err(|e| {
                    CheckpointError::Metadata {
                        dir: format!("chk-{}", flight.id),
                        why: e.to_string(),
                    }
                })?;
                match self.store.complete(upload, &metadata) {
                    Ok(completed) => {
                        flight.record.bytes = completed.uploaded.bytes;
                        flight.record.files = completed.uploaded.files;
                        flight.record.reused_files = completed.uploaded.reused;
                        self.on_changelog_complete(
                            &flight.metadata,
                            materializing,
                            &mut flight.record,
                        );
                        self.history.push(flight.record);
                        return Ok(Some(Completion {
                            id: flight.id,
                            job: flight.metadata.job,
                        }));
                    }
                    Err(e) => e.to_string(),
                }
            }
            Ok(upload) => {
                self.store.abort(upload)?;
                format!("not complete after the timeout ({:?})", self.config.timeout)
            }
            Err((upload, why)) => {
                if let Some(upload) = upload {
                    self.store.abort(upload)?;
                }
                if flight.timed_out {
                    format!("not complete after the timeout ({:?})", self.config.timeout)
                } else {
                    why
                }
            }
        };
        if materializing && let Some(m) = &flight.metadata.materialization {
            self.changelog.last_failed = self.changelog.last_failed.max(m.id);
        }
        flight.record.failed = Some(failure);
        self.history.push(flight.record);
        Ok(None)
    }

    /// A native savepoint taken with the changelog on materializes into the savepoint and
    /// bumps the materialization id — but a savepoint is never confirmed (no
    /// checkpoint-complete notification), so Flink skips every later materialization.
    pub fn note_native_savepoint(&mut self) {
        if self.config.kind == CheckpointKind::Changelog {
            self.changelog.next_id += 1;
        }
    }

    /// Checkpoint `id`'s synchronous part failed (`why`): Flink declines the checkpoint and the
    /// job goes on; the next one is tried at the next interval.
    pub fn decline(&mut self, id: u64, run_secs: f64, why: String) {
        self.history.push(CheckpointRecord {
            id,
            kind: self.config.kind.name().to_string(),
            started_at_secs: run_secs,
            failed: Some(format!("declined: {why}")),
            ..CheckpointRecord::default()
        });
    }

    /// Waits (bounded by the timeout) for the checkpoint under way to complete or fail.
    pub fn wait(&mut self) -> Result<Option<Completion>, CheckpointError> {
        while self.in_flight.is_some() {
            if let Some(done) = self.poll()? {
                return Ok(Some(done));
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        Ok(None)
    }

    /// Drops the checkpoint under way (the job failed): its upload is cancelled and aborted.
    pub fn abandon(&mut self) {
        if let Some(mut flight) = self.in_flight.take() {
            flight.cancel.store(true, Ordering::Relaxed);
            if let Some(thread) = flight.thread.take() {
                let _ = thread.join();
            }
            if let Ok(Ok(upload) | Err((Some(upload), _))) = flight.done.try_recv() {
                let _ = self.store.abort(upload);
            }
            if flight.materializing
                && let Some(m) = &flight.metadata.materialization
            {
                self.changelog.last_failed = self.changelog.last_failed.max(m.id);
            }
            flight.record.failed = Some("the job failed".to_string());
            self.history.push(flight.record);
        }
    }
}
