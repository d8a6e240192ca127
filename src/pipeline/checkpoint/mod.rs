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

pub mod snapshot;
pub mod store;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, TryRecvError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use self::snapshot::{SnapshotError, SstFile, live_ssts, write_full};
use self::store::{CheckpointStore, StoreConfig, StoreError, Upload};
use crate::backend::{AccessCounters, StateBackend};
use crate::config::profile::{CheckpointKind, Knobs};
use crate::pipeline::operators::JobCounters;
use crate::pipeline::source::Offsets;

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

impl From<rocksdb::Error> for CheckpointError {
    fn from(e: rocksdb::Error) -> Self {
        CheckpointError::Snapshot(SnapshotError::from(e))
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

/// What a checkpoint holds about the job besides its state: where its source stands.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobMeta {
    /// The consumer group the source commits for.
    pub group: String,
    /// The consumer's position at the barrier: the next record of each partition.
    pub offsets: Offsets,
    /// Where the exact truth counts from (a restore in a new process rebuilds it from there).
    pub truth_start: Offsets,
    /// Records the job had processed at the barrier.
    pub processed: u64,
    /// Processing time at the barrier.
    pub processing_time: i64,
    pub counters: JobCounters,
    /// The job's work up to the barrier, over every process it ran in.
    #[serde(default)]
    pub work: JobWork,
}

/// A job's work over every process it ran in: a restore in a new process carries it on, so
/// that the whole job's rates divide its records (replays included) into its running time, as
/// an unfailed run's do.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct JobWork {
    /// Records processed, replayed ones included.
    pub records: u64,
    /// Of those, read again after a restore.
    pub replayed: u64,
    /// RocksDB operations issued.
    pub ops: AccessCounters,
    /// Running time.
    pub running_secs: f64,
    /// Processes the job ran in.
    pub processes: u32,
}

impl JobWork {
    /// This work followed by `later`'s.
    pub fn plus(&self, later: &JobWork) -> JobWork {
        JobWork {
            records: self.records + later.records,
            replayed: self.replayed + later.replayed,
            ops: self.ops.plus(&later.ops),
            running_secs: self.running_secs + later.running_secs,
            processes: self.processes + later.processes,
        }
    }

    /// RocksDB operations (gets, puts, deletes and batched writes) per record processed.
    pub fn ops_per_record(&self) -> f64 {
        if self.records == 0 {
            0.0
        } else {
            self.ops.total() as f64 / self.records as f64
        }
    }

    /// Records processed per second of running time.
    pub fn records_per_sec(&self) -> f64 {
        if self.running_secs > 0.0 {
            self.records as f64 / self.running_secs
        } else {
            0.0
        }
    }
}

/// A checkpoint's `_metadata`, besides the store's own record.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Metadata {
    pub id: u64,
    pub kind: CheckpointKind,
    pub job: JobMeta,
    /// Native state: shared file name -> RocksDB's own file name.
    #[serde(default)]
    pub ssts: BTreeMap<String, String>,
    /// Changelog: the materialized state this checkpoint builds on.
    #[serde(default)]
    pub materialization: Option<Materialization>,
    /// Changelog: the segments of state changes logged since the materialization, in order
    /// (shared file names).
    #[serde(default)]
    pub changelog: Vec<String>,
}

/// A materialization of the changelog backend: a native snapshot of RocksDB's files.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Materialization {
    /// The backend's materialization id.
    pub id: u64,
    /// Shared file name -> RocksDB's own file name.
    pub files: BTreeMap<String, String>,
    /// Wall-clock time (epoch ms) when it was taken: its age stays right after a restore in
    /// another process.
    pub at_epoch_ms: u64,
}

/// The changelog backend's own state: what new checkpoints build on, and Flink's
/// materialization-id bookkeeping.
#[derive(Debug)]
struct ChangelogState {
    base: Option<Materialization>,
    /// Segments since `base`: shared name, and the local file until a checkpoint stored it.
    segments: Vec<(String, Option<PathBuf>, u64)>,
    /// The id the next materialization gets (Flink's `materializedId`).
    next_id: u64,
    last_confirmed: u64,
    last_failed: u64,
    /// When the periodic materialization last came due.
    last_due: Instant,
    /// Materializations skipped because the previous one was never confirmed.
    pub skipped: u64,
    seq: u64,
}

impl ChangelogState {
    fn new(now: Instant) -> ChangelogState {
        ChangelogState {
            base: None,
            segments: Vec::new(),
            next_id: 1,
            last_confirmed: 0,
            last_failed: 0,
            last_due: now,
            skipped: 0,
            seq: 0,
        }
    }

    /// Flink's `ChangelogKeyedStateBackend#initMaterialization` rule: a new materialization
    /// starts only when the previous one was confirmed by a completed checkpoint, or failed.
    fn may_materialize(&self) -> bool {
        let previous = self.next_id - 1;
        self.last_confirmed >= previous || self.last_failed >= previous
    }
}

impl Metadata {
    pub fn read(dir: &Path) -> Result<Metadata, CheckpointError> {
        let value = CheckpointStore::read_metadata(dir)?;
        serde_json::from_value(value).map_err(|e| CheckpointError::Metadata {
            dir: dir.display().to_string(),
            why: format!("not a statebench checkpoint's metadata: {e}"),
        })
    }
}

/// One checkpoint as the metrics see it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CheckpointRecord {
    pub id: u64,
    /// full, incremental or changelog.
    pub kind: String,
    /// Run time (s) at the barrier.
    pub started_at_secs: f64,
    /// Time the job's thread stood still for it.
    pub sync_ms: f64,
    /// Time of the upload, from the barrier's end to completion.
    pub async_ms: f64,
    /// Bytes uploaded to the store.
    pub bytes: u64,
    /// Files uploaded.
    pub files: u64,
    /// Shared files referenced without an upload (incremental).
    pub reused_files: u64,
    /// Bytes of SST files new since the last checkpoint written by flushes (new data).
    pub new_flush_bytes: u64,
    /// Bytes of SST files new since the last checkpoint written by compactions (rewritten
    /// data: what makes an incremental checkpoint spike).
    pub new_compaction_bytes: u64,
    /// Why it failed (timeout, upload error); None for a completed one.
    pub failed: Option<String>,
    /// Changelog: bytes of the materialization this checkpoint uploaded (0 when it built on an
    /// earlier one); `bytes` counts them too.
    pub materialized_bytes: u64,
    /// Changelog: bytes of state changes the checkpoint references since its materialization
    /// (what a restore replays; it grows until the next materialization).
    pub changelog_bytes: u64,
    /// Changelog: the materialization id it builds on.
    pub materialization_id: Option<u64>,
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
    /// The job's database; None between a failure and the restart.
    backend: Option<Arc<StateBackend>>,
    /// Scratch space for native checkpoints and full streams before upload.
    local: PathBuf,
    /// Names this database's new SST files get in the shared folder.
    incarnation: String,
    /// RocksDB's SST file name -> its name in the shared folder, for files uploaded or restored.
    uploaded: HashMap<String, String>,
    /// SST files at the last barrier (new ones are classified by level).
    last_ssts: HashSet<String>,
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
            backend: None,
            local,
            incarnation: incarnation(),
            uploaded: HashMap::new(),
            last_ssts: HashSet::new(),
            next_id,
            last_trigger: now,
            last_end: None,
            in_flight: None,
            history: Vec::new(),
            changelog: ChangelogState::new(now),
        })
    }

    /// Checkpoints the job on `backend` from now on. `restored` is the checkpoint its state
    /// came from, if any: its SST files are in the store already.
    pub fn attach(
        &mut self,
        backend: Arc<StateBackend>,
        restored: Option<&Metadata>,
        now: Instant,
    ) -> Result<(), CheckpointError> {
        self.abandon();
        // The restored files are in the store under their shared names: referenced, not
        // uploaded again.
        self.uploaded = restored
            .map(|m| {
                m.ssts
                    .iter()
                    .chain(m.materialization.iter().flat_map(|mat| &mat.files))
                    .filter(|(_, local)| local.ends_with(".sst"))
                    .map(|(s, l)| (l.clone(), s.clone()))
                    .collect()
            })
            .unwrap_or_default();
        self.last_ssts = live_ssts(&backend)?.into_iter().map(|f| f.name).collect();
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
        self.backend = Some(backend);
        self.last_trigger = now;
        self.last_end = None;
        Ok(())
    }

    /// The job failed: its checkpoint under way is abandoned and its database let go.
    pub fn detach(&mut self) {
        self.abandon();
        self.backend = None;
    }

    fn backend(&self) -> Result<&Arc<StateBackend>, CheckpointError> {
        self.backend
            .as_ref()
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

    /// The synchronous part of checkpoint `next_id()`, after the caller flushed its timers and
    /// pre-committed its sink: takes the RocksDB snapshot (full) or native checkpoint
    /// (incremental) and starts the upload. `barrier` is when the caller's part began.
    pub fn trigger(
        &mut self,
        job: JobMeta,
        changes: Option<Vec<u8>>,
        barrier: Instant,
        run_secs: f64,
    ) -> Result<u64, CheckpointError> {
        let id = self.next_id;
        self.next_id += 1;
        self.last_trigger = barrier;
        let mut record = CheckpointRecord {
            id,
            kind: self.config.kind.name().to_string(),
            started_at_secs: run_secs,
            ..CheckpointRecord::default()
        };
        let mut upload = self.store.begin(id)?;
        let cancel = Arc::new(AtomicBool::new(false));
        upload.cancel_with(Arc::clone(&cancel));
        let (tx, done) = mpsc::channel();
        let mut metadata = Metadata {
            id,
            kind: self.config.kind,
            job,
            ssts: BTreeMap::new(),
            materialization: None,
            changelog: Vec::new(),
        };
        let mut materializing = false;
        let thread = match self.config.kind {
            CheckpointKind::Full => self.start_full(id, upload, Arc::clone(&cancel), tx)?,
            CheckpointKind::Incremental => {
                let (puts, dir, names) = self.native_files(id, false)?;
                metadata.ssts = names;
                spawn_upload(upload, puts, Some(dir), Arc::clone(&cancel), tx)?
            }
            CheckpointKind::Changelog => {
                let changes = changes.unwrap_or_default();
                let (puts, dir) =
                    self.changelog_files(id, &changes, barrier, &mut metadata, &mut record)?;
                materializing = dir.is_some();
                spawn_upload(upload, puts, dir, Arc::clone(&cancel), tx)?
            }
        };
        // After the native checkpoint's flush: this checkpoint's own flushed SSTs count here.
        let ssts = live_ssts(self.backend()?)?;
        self.classify_new(&ssts, &mut record);
        let sync_done = Instant::now();
        record.sync_ms = sync_done.duration_since(barrier).as_secs_f64() * 1e3;
        self.in_flight = Some(InFlight {
            id,
            started: barrier,
            sync_done,
            metadata,
            record,
            cancel,
            done,
            thread: Some(thread),
            timed_out: false,
            materializing,
        });
        Ok(id)
    }

    /// New SST files since the last barrier, by what wrote them: level 0 is a flush's new
    /// data, deeper levels a compaction's rewrite.
    fn classify_new(&mut self, ssts: &[SstFile], record: &mut CheckpointRecord) {
        for f in ssts.iter().filter(|f| !self.last_ssts.contains(&f.name)) {
            if f.level == 0 {
                record.new_flush_bytes += f.size;
            } else {
                record.new_compaction_bytes += f.size;
            }
        }
        self.last_ssts = ssts.iter().map(|f| f.name.clone()).collect();
        // Files compacted away are never uploaded again: their names can go. (A name stays
        // while the store may lack its file: `put_shared` uploads whatever it does not hold.)
        let live = &self.last_ssts;
        self.uploaded.retain(|local, _| live.contains(local));
    }

    /// Full: the upload thread takes a RocksDB snapshot (the job waits only for that) and
    /// writes every key from it.
    fn start_full(
        &mut self,
        id: u64,
        mut upload: Upload,
        cancel: Arc<AtomicBool>,
        tx: mpsc::Sender<UploadResult>,
    ) -> Result<JoinHandle<()>, CheckpointError> {
        let backend = Arc::clone(self.backend()?);
        let scratch = self.local.join(format!("chk-{id}.full"));
        let (taken_tx, taken) = mpsc::sync_channel(1);
        let thread = std::thread::Builder::new()
            .name("statebench-ckpt".to_string())
            .spawn(move || {
                let snapshot = backend.db().snapshot();
                let _ = taken_tx.send(());
                let result = write_full(&backend, &snapshot, &scratch, &cancel)
                    .map_err(|e| e.to_string())
                    .and_then(|_| {
                        upload
                            .put_private(&scratch, FULL_STATE)
                            .map_err(|e| e.to_string())
                    });
                drop(snapshot);
                let _ = std::fs::remove_file(&scratch);
                let _ = tx.send(match result {
                    Ok(_) => Ok(upload),
                    Err(why) => Err((Some(upload), why)),
                });
            })
            .map_err(io("start a checkpoint's upload thread"))?;
        match taken.recv_timeout(SNAPSHOT_WAIT) {
            Ok(()) => Ok(thread),
            Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => {
                Err(CheckpointError::UploadThread(id))
            }
        }
    }

    /// RocksDB writes a native checkpoint (memtables flushed, SST files hard-linked) into
    /// scratch space: its SST files go to the shared folder (those the store holds are only
    /// referenced); its other files go private, or shared under a name of their own for a
    /// materialization (later checkpoints reference them).
    fn native_files(&mut self, id: u64, all_shared: bool) -> Result<NativeFiles, CheckpointError> {
        let dir = self.local.join(format!("chk-{id}"));
        let files = native_checkpoint(self.backend()?, &dir)?;
        let mut puts = Vec::new();
        let mut names = BTreeMap::new();
        for (path, local) in files {
            if local.ends_with(".sst") {
                let shared = self
                    .uploaded
                    .entry(local.clone())
                    .or_insert_with(|| format!("{}-{local}", self.incarnation))
                    .clone();
                names.insert(shared.clone(), local);
                puts.push(Put::Shared(path, shared));
            } else if all_shared {
                let shared = format!("{}-m{id}-{local}", self.incarnation);
                names.insert(shared.clone(), local);
                puts.push(Put::Shared(path, shared));
            } else {
                puts.push(Put::Private(path, local));
            }
        }
        Ok((puts, dir, names))
    }

    /// Changelog: the state changes since the last checkpoint become a segment; when the
    /// materialization interval has passed (and Flink's rule lets it), this checkpoint also
    /// materializes the state natively, after which new checkpoints need no older segment.
    fn changelog_files(
        &mut self,
        id: u64,
        changes: &[u8],
        now: Instant,
        metadata: &mut Metadata,
        record: &mut CheckpointRecord,
    ) -> Result<(Vec<Put>, Option<PathBuf>), CheckpointError> {
        let log = &mut self.changelog;
        // Every change goes into a segment kept locally until a materialization covers it: a
        // failed checkpoint must not lose it.
        if !changes.is_empty() {
            log.seq += 1;
            let name = format!("{}-log{}", self.incarnation, log.seq);
            let path = self.local.join(&name);
            std::fs::write(&path, changes).map_err(io(format!("write {}", path.display())))?;
            log.segments.push((name, Some(path), changes.len() as u64));
        }
        let due = log.base.is_none()
            || now.duration_since(log.last_due) >= self.config.materialize_interval;
        let materialize = due && log.may_materialize();
        if due {
            log.last_due = now;
            if !materialize {
                log.skipped += 1;
            }
        }
        if materialize {
            let mat_id = log.next_id;
            let (puts, dir, files) = self.native_files(id, true)?;
            self.changelog.next_id += 1;
            let m = Materialization {
                id: mat_id,
                files,
                at_epoch_ms: epoch_ms(),
            };
            record.materialization_id = Some(mat_id);
            metadata.materialization = Some(m);
            return Ok((puts, Some(dir)));
        }
        let log = &self.changelog;
        let mut puts = Vec::new();
        for (name, local, size) in &log.segments {
            record.changelog_bytes += size;
            puts.push(match local {
                Some(path) => Put::Shared(path.clone(), name.clone()),
                None => Put::Reference(name.clone()),
            });
            metadata.changelog.push(name.clone());
        }
        if let Some(base) = &log.base {
            record.materialization_id = Some(base.id);
            puts.extend(base.files.keys().map(|n| Put::Reference(n.clone())));
            metadata.materialization = Some(base.clone());
        }
        Ok((puts, None))
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

    /// A changelog checkpoint completed: its materialization is confirmed; a new one becomes
    /// the base, and the segments it covers are dropped (the store deletes them once no
    /// retained checkpoint references them).
    fn on_changelog_complete(
        &mut self,
        metadata: &Metadata,
        materializing: bool,
        record: &mut CheckpointRecord,
    ) {
        let log = &mut self.changelog;
        let Some(m) = &metadata.materialization else {
            return;
        };
        log.last_confirmed = log.last_confirmed.max(m.id);
        if materializing {
            record.materialized_bytes = record.bytes;
            for (_, local, _) in log.segments.drain(..) {
                if let Some(path) = local {
                    let _ = std::fs::remove_file(path);
                }
            }
            log.base = Some(m.clone());
        } else {
            // Stored now: later checkpoints reference the segments.
            for (name, local, _) in &mut log.segments {
                if metadata.changelog.contains(name)
                    && let Some(path) = local.take()
                {
                    let _ = std::fs::remove_file(path);
                }
            }
        }
    }

    /// The changelog backend's bookkeeping, for metrics: materializations skipped, the base's
    /// age and the log's size since it.
    pub fn changelog_status(&self) -> Option<ChangelogStatus> {
        (self.config.kind == CheckpointKind::Changelog).then(|| ChangelogStatus {
            materialization_id: self.changelog.base.as_ref().map(|b| b.id),
            materialization_lag_secs: self.changelog.base.as_ref().map_or(0.0, |b| {
                epoch_ms().saturating_sub(b.at_epoch_ms) as f64 / 1e3
            }),
            changelog_bytes: self.changelog.segments.iter().map(|s| s.2).sum(),
            skipped: self.changelog.skipped,
            next_id: self.changelog.next_id,
            last_confirmed: self.changelog.last_confirmed,
        })
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

/// A native checkpoint's uploads, its scratch folder, and its files' shared -> local names.
type NativeFiles = (Vec<Put>, PathBuf, BTreeMap<String, String>);

/// RocksDB writes a native checkpoint of `backend` into `dir` (replacing what is there):
/// memtables flushed, SST files hard-linked. Its files, by path and name.
fn native_checkpoint(
    backend: &StateBackend,
    dir: &Path,
) -> Result<Vec<(PathBuf, String)>, CheckpointError> {
    if dir.exists() {
        std::fs::remove_dir_all(dir).map_err(io(format!("remove {}", dir.display())))?;
    }
    rocksdb::checkpoint::Checkpoint::new(backend.db())?.create_checkpoint(dir)?;
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(io(format!("list {}", dir.display())))? {
        let entry = entry.map_err(io(format!("list {}", dir.display())))?;
        files.push((
            entry.path(),
            entry.file_name().to_string_lossy().to_string(),
        ));
    }
    Ok(files)
}

/// A savepoint's files written into `scratch`, and how a restore reads them: canonical (every
/// key from a RocksDB snapshot, the full format) or native (RocksDB's own files).
pub fn savepoint_files(
    backend: &StateBackend,
    canonical: bool,
    scratch: &Path,
) -> Result<(CheckpointKind, Vec<(PathBuf, String)>), CheckpointError> {
    if !canonical {
        return Ok((
            CheckpointKind::Incremental,
            native_checkpoint(backend, scratch)?,
        ));
    }
    if scratch.exists() {
        std::fs::remove_dir_all(scratch).map_err(io(format!("remove {}", scratch.display())))?;
    }
    std::fs::create_dir_all(scratch).map_err(io(format!("create {}", scratch.display())))?;
    let file = scratch.join(FULL_STATE);
    let snapshot = backend.db().snapshot();
    write_full(backend, &snapshot, &file, &AtomicBool::new(false))?;
    Ok((CheckpointKind::Full, vec![(file, FULL_STATE.to_string())]))
}

/// Wall-clock time, epoch ms.
fn epoch_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// One file of an upload.
enum Put {
    /// A local file into the shared folder (referenced if the store holds it).
    Shared(PathBuf, String),
    /// A local file into the checkpoint's own folder.
    Private(PathBuf, String),
    /// A shared file the store holds, referenced.
    Reference(String),
}

/// Runs `puts` on an upload thread; removes `scratch` after.
fn spawn_upload(
    mut upload: Upload,
    puts: Vec<Put>,
    scratch: Option<PathBuf>,
    cancel: Arc<AtomicBool>,
    tx: mpsc::Sender<UploadResult>,
) -> Result<JoinHandle<()>, CheckpointError> {
    std::thread::Builder::new()
        .name("statebench-ckpt".to_string())
        .spawn(move || {
            let mut result = Ok(());
            for put in &puts {
                if cancel.load(Ordering::Relaxed) {
                    result = Err("cancelled".to_string());
                    break;
                }
                let done = match put {
                    Put::Shared(path, name) => upload.put_shared(path, name),
                    Put::Private(path, name) => upload.put_private(path, name),
                    Put::Reference(name) => upload.reference_shared(name),
                };
                if let Err(e) = done {
                    result = Err(e.to_string());
                    break;
                }
            }
            if let Some(dir) = &scratch {
                let _ = std::fs::remove_dir_all(dir);
            }
            let _ = tx.send(match result {
                Ok(()) => Ok(upload),
                Err(why) => Err((Some(upload), why)),
            });
        })
        .map_err(io("start a checkpoint's upload thread"))
}

/// The changelog backend's state for the metrics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ChangelogStatus {
    /// The materialization new checkpoints build on.
    pub materialization_id: Option<u64>,
    /// Run time since it was taken.
    pub materialization_lag_secs: f64,
    /// State changes logged since it (what a restore replays).
    pub changelog_bytes: u64,
    /// Materializations skipped because the previous one was never confirmed.
    pub skipped: u64,
    /// Flink's `materializedId` (the next materialization's) and the last one confirmed.
    pub next_id: u64,
    pub last_confirmed: u64,
}

/// A name for this database's new SST files in the shared folder, unique per opening: after a
/// restore RocksDB numbers files again from the checkpoint's numbers, so the bare file name
/// could stand for another content.
fn incarnation() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    format!("{:x}{:x}", nanos & 0xffff_ffff_ffff, std::process::id())
}

/// A checkpoint made ready to open: its state in `db_dir`, or (full) the stream to write into
/// the database opened there.
pub struct Restored {
    pub metadata: Metadata,
    /// Full: the canonical stream, to write with `snapshot::restore_full`.
    pub full_stream: Option<PathBuf>,
    /// Changelog: the segments to replay onto the materialized state, in order.
    pub changelog: Vec<PathBuf>,
    /// Bytes copied from the store.
    pub bytes: u64,
}

/// Copies checkpoint (or savepoint) `dir`'s state into an empty `db_dir` (its old content is
/// dropped, as a failed task's local state is). `scratch` takes a full checkpoint's stream.
pub fn prepare_restore(
    dir: &Path,
    shared: &Path,
    db_dir: &Path,
    scratch: &Path,
) -> Result<Restored, CheckpointError> {
    let metadata = Metadata::read(dir)?;
    if db_dir.exists() {
        std::fs::remove_dir_all(db_dir).map_err(io(format!("remove {}", db_dir.display())))?;
    }
    if scratch.exists() {
        std::fs::remove_dir_all(scratch).map_err(io(format!("remove {}", scratch.display())))?;
    }
    match metadata.kind {
        CheckpointKind::Changelog => {
            let bytes = store::materialize(dir, shared, scratch)?;
            std::fs::create_dir_all(db_dir).map_err(io(format!("create {}", db_dir.display())))?;
            if let Some(m) = &metadata.materialization {
                for (shared_name, local) in &m.files {
                    std::fs::rename(scratch.join(shared_name), db_dir.join(local))
                        .map_err(io(format!("move {shared_name} into {}", db_dir.display())))?;
                }
            }
            Ok(Restored {
                full_stream: None,
                changelog: metadata.changelog.iter().map(|n| scratch.join(n)).collect(),
                metadata,
                bytes,
            })
        }
        CheckpointKind::Full => {
            let bytes = store::materialize(dir, shared, scratch)?;
            Ok(Restored {
                full_stream: Some(scratch.join(FULL_STATE)),
                changelog: Vec::new(),
                metadata,
                bytes,
            })
        }
        CheckpointKind::Incremental => {
            let bytes = store::materialize(dir, shared, db_dir)?;
            for (shared_name, local) in &metadata.ssts {
                std::fs::rename(db_dir.join(shared_name), db_dir.join(local))
                    .map_err(io(format!("rename {shared_name} in {}", db_dir.display())))?;
            }
            Ok(Restored {
                full_stream: None,
                changelog: Vec::new(),
                metadata,
                bytes,
            })
        }
    }
}
