//! The checkpoint store: a local folder standing in for the HDFS or S3 bucket Flink-style
//! checkpoints are uploaded to. Layout under its root:
//!
//! - `shared/<name>`: files shared between incremental checkpoints, reference-counted;
//! - `chk-<id>/`: one completed checkpoint, its private files and `_metadata` (written last);
//! - `chk-<id>.inprogress/`: an upload under way (deleted on open and on abort);
//! - `savepoints/<name>/`: savepoints, self-contained (they never reference `shared/`).
//!
//! Every `_metadata` the store writes carries, under the `store` key, a [`StoreRecord`]: the
//! files the folder holds and the shared files it references. [`CheckpointStore::open`] rebuilds
//! the shared files' reference counts from them after a crash. A shared file is deleted once no
//! retained checkpoint references it and no upload under way has put or reused it.

use std::collections::{BTreeMap, HashMap};
use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// The file of a checkpoint or savepoint folder that says it is complete; written last.
pub const METADATA: &str = "_metadata";
/// The key the store adds to the caller's metadata (a [`StoreRecord`]).
pub const RECORD_KEY: &str = "store";
/// Where `_metadata` is written before its rename (no caller's name may start with '.').
const METADATA_TMP: &str = ".metadata.tmp";
const SHARED: &str = "shared";
const SAVEPOINTS: &str = "savepoints";
const INPROGRESS: &str = ".inprogress";
/// A paced copy writes this much between sleeps.
const CHUNK: usize = 256 * 1024;

/// Errors from the checkpoint store; each names the path concerned.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("checkpoint store {path}: cannot {action}: {source}")]
    Io {
        path: PathBuf,
        action: &'static str,
        source: io::Error,
    },
    #[error("checkpoint store {root}: {message}")]
    Config {
        root: PathBuf,
        message: &'static str,
    },
    #[error("checkpoint store {path}: the upload was cancelled")]
    Cancelled { path: PathBuf },
    #[error("checkpoint store {dir}: _metadata is missing (an incomplete checkpoint)")]
    MissingMetadata { dir: PathBuf },
    #[error("checkpoint store {path}: corrupt _metadata: {reason}")]
    CorruptMetadata { path: PathBuf, reason: String },
    #[error("checkpoint store {dir}: cannot write _metadata: {reason}")]
    InvalidMetadata { dir: PathBuf, reason: String },
    #[error("checkpoint store {dir}: '{name}' is not a valid file name: {reason}")]
    InvalidName {
        dir: PathBuf,
        name: String,
        reason: &'static str,
    },
    #[error("checkpoint store {dir}: '{name}' is uploaded twice")]
    Duplicate { dir: PathBuf, name: String },
    #[error(
        "checkpoint store {root}: checkpoint {id} is not after the latest completed checkpoint {latest}"
    )]
    IdNotAfterLatest { root: PathBuf, id: u64, latest: u64 },
    #[error("checkpoint store {path}: already exists")]
    AlreadyExists { path: PathBuf },
    #[error(
        "checkpoint store {path}: the shared file has {found} bytes, {local} has {expected} (a shared name must be unique per content)"
    )]
    SharedConflict {
        path: PathBuf,
        local: PathBuf,
        found: u64,
        expected: u64,
    },
    #[error("checkpoint store {path}: shared file is missing (referenced by {checkpoint})")]
    MissingShared { path: PathBuf, checkpoint: PathBuf },
    #[error("checkpoint store {path}: has {found} bytes, _metadata says {expected}")]
    SizeMismatch {
        path: PathBuf,
        expected: u64,
        found: u64,
    },
    #[error(
        "checkpoint store {root}: the upload of checkpoint {id} belongs to the store at {other}"
    )]
    ForeignUpload {
        root: PathBuf,
        id: u64,
        other: PathBuf,
    },
    #[error("checkpoint store {dir}: '{name}' is both a private and a shared file")]
    NameClash { dir: PathBuf, name: String },
    #[error("{path}: not empty (a restore needs an empty directory)")]
    NotEmpty { path: PathBuf },
}

/// The error of an I/O `action` on `path`.
fn io_err(path: &Path, action: &'static str) -> impl FnOnce(io::Error) -> StoreError {
    let path = path.to_path_buf();
    move |source| StoreError::Io {
        path,
        action,
        source,
    }
}

/// How many checkpoints the store keeps and how fast uploads go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StoreConfig {
    /// Completed checkpoints kept (at least 1); the oldest go when one more completes.
    pub retained: usize,
    /// Bandwidth of one upload (all its files together) in bytes per second; None is unlimited.
    pub upload_bytes_per_sec: Option<u64>,
}

impl Default for StoreConfig {
    /// Flink's defaults: one retained checkpoint, no bandwidth limit.
    fn default() -> Self {
        StoreConfig {
            retained: 1,
            upload_bytes_per_sec: None,
        }
    }
}

/// What the store adds to a checkpoint's or savepoint's `_metadata`, under [`RECORD_KEY`]: the
/// files the folder holds, and the shared files it references, with their sizes.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StoreRecord {
    /// The checkpoint's id; None for a savepoint.
    pub id: Option<u64>,
    /// Shared files referenced (names under `shared/`); always empty for a savepoint.
    pub shared: BTreeMap<String, u64>,
    /// The folder's own files, all but `_metadata`.
    pub private: BTreeMap<String, u64>,
}

/// A completed checkpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompletedInfo {
    pub id: u64,
    /// Its folder, `<root>/chk-<id>`.
    pub path: PathBuf,
}

/// What an upload sent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UploadStats {
    /// Bytes copied (reused shared files send none).
    pub bytes: u64,
    /// Files copied.
    pub files: u64,
    /// Shared files referenced without a copy.
    pub reused: u64,
}

/// The outcome of [`CheckpointStore::complete`].
#[derive(Debug)]
pub struct Completed {
    pub info: CompletedInfo,
    pub uploaded: UploadStats,
    /// Checkpoints retention deleted, oldest first.
    pub expired: Vec<u64>,
    /// Shared files deleted because no retained checkpoint references them any more.
    pub deleted_shared: Vec<String>,
    /// A failure while deleting old checkpoints. The new checkpoint is complete regardless;
    /// what was not deleted is retried at the next completion (or, for orphans, at open).
    pub retention_error: Option<StoreError>,
}

/// One file put by an upload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Uploaded {
    /// Bytes copied: 0 for a reused shared file.
    pub bytes: u64,
    /// The shared file already existed and is referenced, not copied.
    pub reused: bool,
}

/// A savepoint written by [`CheckpointStore::write_savepoint`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SavepointInfo {
    /// Its folder, `<root>/savepoints/<name>`.
    pub path: PathBuf,
    /// Bytes copied, `_metadata` not counted.
    pub bytes: u64,
}

/// Why a shared file is kept: completed checkpoints that reference it, and uploads under way
/// that put or reused it.
#[derive(Debug, Default, Clone, Copy)]
struct Holds {
    checkpoints: usize,
    uploads: usize,
}

#[derive(Debug, Clone, Copy)]
enum Hold {
    Checkpoint,
    Upload,
}

/// The holds on every shared file, shared by the store and its uploads. A file is deleted, under
/// the lock, when its last hold goes; an upload takes its hold, under the same lock, before it
/// looks whether the file exists. So a file an upload has seen is never deleted under it.
#[derive(Debug)]
struct SharedFiles {
    dir: PathBuf,
    holds: HashMap<String, Holds>,
}

impl SharedFiles {
    fn hold(&mut self, name: &str, hold: Hold) {
        let holds = self.holds.entry(name.to_owned()).or_default();
        match hold {
            Hold::Checkpoint => holds.checkpoints += 1,
            Hold::Upload => holds.uploads += 1,
        }
    }

    /// Drops one hold on `name` and deletes the file if none is left; true if it deleted it.
    fn release(&mut self, name: &str, hold: Hold) -> Result<bool, StoreError> {
        let Some(holds) = self.holds.get_mut(name) else {
            return Ok(false);
        };
        let count = match hold {
            Hold::Checkpoint => &mut holds.checkpoints,
            Hold::Upload => &mut holds.uploads,
        };
        *count = count.saturating_sub(1);
        if holds.checkpoints + holds.uploads > 0 {
            return Ok(false);
        }
        self.holds.remove(name);
        let path = self.dir.join(name);
        match fs::remove_file(&path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(io_err(&path, "delete")(e)),
        }
    }

    /// An upload's hold on `name` becomes its completed checkpoint's (nothing is deleted).
    fn transfer(&mut self, name: &str) {
        let holds = self.holds.entry(name.to_owned()).or_default();
        holds.uploads = holds.uploads.saturating_sub(1);
        holds.checkpoints += 1;
    }
}

/// Locks the holds. A panic while they were locked leaves them usable: each change under the
/// lock is one counter step or one file deletion, so a poisoned lock holds consistent counts.
fn lock(shared: &Mutex<SharedFiles>) -> MutexGuard<'_, SharedFiles> {
    shared.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Paces writes to a bandwidth: after each chunk it sleeps until the bytes so far would have
/// taken that long at the limit. Idle time earns no credit, so a pause buys no burst.
#[derive(Debug)]
struct Pacer {
    bytes_per_sec: Option<u64>,
    /// When the bytes sent so far are paid for.
    due: Option<Instant>,
    /// Set by the caller to stop a copy between two chunks (a timed-out or abandoned upload).
    cancel: Option<Arc<AtomicBool>>,
}

impl Pacer {
    fn new(bytes_per_sec: Option<u64>) -> Self {
        Pacer {
            bytes_per_sec,
            due: None,
            cancel: None,
        }
    }

    fn cancelled(&self) -> bool {
        self.cancel
            .as_ref()
            .is_some_and(|c| c.load(std::sync::atomic::Ordering::Relaxed))
    }

    fn sent(&mut self, bytes: usize) {
        let Some(limit) = self.bytes_per_sec else {
            return;
        };
        let nanos = (bytes as u128 * 1_000_000_000) / u128::from(limit.max(1));
        let cost = Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX));
        let now = Instant::now();
        let start = self.due.map_or(now, |due| due.max(now));
        match start.checked_add(cost) {
            Some(due) => {
                self.due = Some(due);
                if due > now {
                    std::thread::sleep(due - now);
                }
            }
            None => {
                self.due = None;
                std::thread::sleep(cost);
            }
        }
    }
}

/// Copies `reader` (read from `src`) into the new file `dst` chunk by chunk at the pacer's rate,
/// then syncs it; the bytes written.
fn write_paced(
    reader: &mut dyn Read,
    src: &Path,
    dst: &Path,
    pacer: &mut Pacer,
) -> Result<u64, StoreError> {
    let mut out = File::create_new(dst).map_err(io_err(dst, "create"))?;
    let mut buf = vec![0u8; CHUNK];
    let mut total = 0u64;
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(io_err(src, "read")(e)),
        };
        if pacer.cancelled() {
            return Err(StoreError::Cancelled {
                path: dst.to_path_buf(),
            });
        }
        let chunk = buf.get(..n).unwrap_or(&buf);
        out.write_all(chunk).map_err(io_err(dst, "write"))?;
        total += chunk.len() as u64;
        pacer.sent(chunk.len());
    }
    out.sync_all().map_err(io_err(dst, "sync"))?;
    Ok(total)
}

/// Where a file to put comes from.
enum Source<'a> {
    File(&'a Path),
    Bytes(&'a [u8]),
}

/// Writes `source` as the private file `name` of the folder `dir`, at the pacer's rate, and
/// records it in `files`; the bytes written.
fn put_file(
    dir: &Path,
    files: &mut BTreeMap<String, u64>,
    name: &str,
    source: Source<'_>,
    pacer: &mut Pacer,
) -> Result<u64, StoreError> {
    check_name(dir, name)?;
    if files.contains_key(name) {
        return Err(StoreError::Duplicate {
            dir: dir.to_path_buf(),
            name: name.to_owned(),
        });
    }
    let dst = dir.join(name);
    let bytes = match source {
        Source::File(local) => {
            let mut file = File::open(local).map_err(io_err(local, "open"))?;
            write_paced(&mut file, local, &dst, pacer)?
        }
        Source::Bytes(bytes) => write_paced(&mut &*bytes, &dst, &dst, pacer)?,
    };
    files.insert(name.to_owned(), bytes);
    Ok(bytes)
}

/// Makes a folder's entries durable.
fn sync_dir(dir: &Path) -> Result<(), StoreError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io_err(dir, "sync"))
}

/// The caller's `metadata` (a JSON object) with `record` under [`RECORD_KEY`].
fn with_record(
    metadata: &serde_json::Value,
    record: &StoreRecord,
    dir: &Path,
) -> Result<serde_json::Value, StoreError> {
    let invalid = |reason: String| StoreError::InvalidMetadata {
        dir: dir.to_path_buf(),
        reason,
    };
    let serde_json::Value::Object(map) = metadata else {
        return Err(invalid("the metadata must be a JSON object".to_owned()));
    };
    if map.contains_key(RECORD_KEY) {
        return Err(invalid(format!("the key '{RECORD_KEY}' is the store's")));
    }
    let mut map = map.clone();
    let record = serde_json::to_value(record).map_err(|e| invalid(e.to_string()))?;
    map.insert(RECORD_KEY.to_owned(), record);
    Ok(serde_json::Value::Object(map))
}

/// Writes `_metadata` into `dir` atomically (a temporary file, synced, renamed), after the
/// folder's other entries are durable, and syncs the folder.
fn write_metadata(dir: &Path, value: &serde_json::Value) -> Result<(), StoreError> {
    sync_dir(dir)?;
    let text = serde_json::to_vec_pretty(value).map_err(|e| StoreError::InvalidMetadata {
        dir: dir.to_path_buf(),
        reason: e.to_string(),
    })?;
    let tmp = dir.join(METADATA_TMP);
    let mut file = File::create(&tmp).map_err(io_err(&tmp, "create"))?;
    file.write_all(&text).map_err(io_err(&tmp, "write"))?;
    file.sync_all().map_err(io_err(&tmp, "sync"))?;
    drop(file);
    let path = dir.join(METADATA);
    fs::rename(&tmp, &path).map_err(io_err(&path, "rename into place"))?;
    sync_dir(dir)
}

/// Checks that `name` can be a file of the folder `dir`: one path component, not a temporary
/// file's name (they start with '.'), not `_metadata`.
fn check_name(dir: &Path, name: &str) -> Result<(), StoreError> {
    let reason = if name.is_empty() {
        "it is empty"
    } else if name.contains(['/', '\\', '\0']) {
        "it is not a single path component"
    } else if name.starts_with('.') {
        "names starting with '.' are the store's temporary files"
    } else if name == METADATA {
        "'_metadata' is the store's"
    } else {
        return Ok(());
    };
    Err(StoreError::InvalidName {
        dir: dir.to_path_buf(),
        name: name.to_owned(),
        reason,
    })
}

/// True when the store at `root` holds a completed checkpoint (a `chk-<id>` folder with its
/// `_metadata`). Reads only: unlike [`CheckpointStore::open`] it cleans nothing up.
pub fn has_completed(root: &Path) -> bool {
    fs::read_dir(root).is_ok_and(|entries| {
        entries.filter_map(Result::ok).any(|e| {
            e.file_name()
                .to_str()
                .and_then(parse_checkpoint_dir)
                .is_some_and(|(_, inprogress)| !inprogress)
                && e.path().join(METADATA).is_file()
        })
    })
}

/// The id of a folder named `chk-<id>`, and whether it is `chk-<id>.inprogress`.
fn parse_checkpoint_dir(name: &str) -> Option<(u64, bool)> {
    let rest = name.strip_prefix("chk-")?;
    let (digits, inprogress) = match rest.strip_suffix(INPROGRESS) {
        Some(digits) => (digits, true),
        None => (rest, false),
    };
    let id: u64 = digits.parse().ok()?;
    // Only the store's own spelling ("+5" and "05" parse too).
    (digits == id.to_string()).then_some((id, inprogress))
}

/// An entry of a folder: its name (None if not UTF-8), path, and whether it is a folder.
struct Entry {
    name: Option<String>,
    path: PathBuf,
    is_dir: bool,
}

fn entries(dir: &Path) -> Result<Vec<Entry>, StoreError> {
    let mut out = Vec::new();
    for entry in fs::read_dir(dir).map_err(io_err(dir, "list"))? {
        let entry = entry.map_err(io_err(dir, "list"))?;
        let path = entry.path();
        let is_dir = entry.file_type().map_err(io_err(&path, "stat"))?.is_dir();
        out.push(Entry {
            name: entry.file_name().into_string().ok(),
            path,
            is_dir,
        });
    }
    Ok(out)
}

/// Deletes a file or a folder with everything in it; one already gone is fine.
fn remove(path: &Path, is_dir: bool) -> Result<(), StoreError> {
    let removed = if is_dir {
        fs::remove_dir_all(path)
    } else {
        fs::remove_file(path)
    };
    match removed {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(io_err(path, "delete")(e)),
        _ => Ok(()),
    }
}

/// Bytes of the files under `dir`, recursively; entries deleted meanwhile count 0.
fn dir_bytes(dir: &Path) -> Result<u64, StoreError> {
    let list = match fs::read_dir(dir) {
        Ok(list) => list,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(io_err(dir, "list")(e)),
    };
    let mut total = 0;
    for entry in list {
        let entry = entry.map_err(io_err(dir, "list"))?;
        let path = entry.path();
        match entry.metadata() {
            Ok(meta) if meta.is_dir() => total += dir_bytes(&path)?,
            Ok(meta) => total += meta.len(),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(io_err(&path, "stat")(e)),
        }
    }
    Ok(total)
}

/// Copies `src` to the new file `dst`, checking it has the size `_metadata` recorded.
fn copy_checked(src: &Path, dst: &Path, expected: u64) -> Result<u64, StoreError> {
    let found = fs::copy(src, dst).map_err(io_err(src, "copy"))?;
    if found != expected {
        return Err(StoreError::SizeMismatch {
            path: src.to_path_buf(),
            expected,
            found,
        });
    }
    Ok(found)
}

/// The checkpoint store at one root. Single-owner: one process opens a root at a time.
#[derive(Debug)]
pub struct CheckpointStore {
    root: PathBuf,
    config: StoreConfig,
    /// Completed checkpoints by id, with what they hold.
    checkpoints: BTreeMap<u64, StoreRecord>,
    shared: Arc<Mutex<SharedFiles>>,
}

impl CheckpointStore {
    /// Opens or creates the store at `root`. Deletes leftover `chk-<id>.inprogress` folders (and
    /// unfinished savepoints), and `chk-<id>` folders without `_metadata` (incomplete). Rebuilds
    /// the shared files' reference counts from the `_metadata` of every completed checkpoint and
    /// deletes the shared files none references. Retention is not applied here: a store opened
    /// with more checkpoints than `retained` trims them at the next completion.
    ///
    /// A corrupt `_metadata`, or a shared file a checkpoint references that is missing or has
    /// another size, is an error: the store deletes nothing on partial knowledge.
    pub fn open(root: &Path, config: StoreConfig) -> Result<CheckpointStore, StoreError> {
        let config_error = |message| StoreError::Config {
            root: root.to_path_buf(),
            message,
        };
        if config.retained == 0 {
            return Err(config_error("'retained' must be at least 1"));
        }
        if config.upload_bytes_per_sec == Some(0) {
            return Err(config_error(
                "'upload_bytes_per_sec' must be positive (none is unlimited)",
            ));
        }
        let shared_dir = root.join(SHARED);
        let savepoints = root.join(SAVEPOINTS);
        for dir in [root, &shared_dir, &savepoints] {
            fs::create_dir_all(dir).map_err(io_err(dir, "create"))?;
        }

        let mut checkpoints = BTreeMap::new();
        for entry in entries(root)? {
            let Some((id, inprogress)) = entry.name.as_deref().and_then(parse_checkpoint_dir)
            else {
                continue;
            };
            if !entry.is_dir {
                continue;
            }
            let complete = entry
                .path
                .join(METADATA)
                .try_exists()
                .map_err(io_err(&entry.path, "stat"))?;
            if inprogress || !complete {
                remove(&entry.path, true)?;
                continue;
            }
            let record = Self::read_record(&entry.path)?;
            if record.id != Some(id) {
                return Err(StoreError::CorruptMetadata {
                    path: entry.path.join(METADATA),
                    reason: format!("it is of checkpoint {:?}, the folder's is {id}", record.id),
                });
            }
            checkpoints.insert(id, record);
        }
        for entry in entries(&savepoints)? {
            if entry.is_dir && entry.name.is_some_and(|n| n.ends_with(INPROGRESS)) {
                remove(&entry.path, true)?;
            }
        }

        let mut holds: HashMap<String, Holds> = HashMap::new();
        for (id, record) in &checkpoints {
            for (name, &expected) in &record.shared {
                let path = shared_dir.join(name);
                let found = match fs::metadata(&path) {
                    Ok(meta) => meta.len(),
                    Err(e) if e.kind() == io::ErrorKind::NotFound => {
                        return Err(StoreError::MissingShared {
                            path,
                            checkpoint: root.join(format!("chk-{id}")),
                        });
                    }
                    Err(e) => return Err(io_err(&path, "stat")(e)),
                };
                if found != expected {
                    return Err(StoreError::SizeMismatch {
                        path,
                        expected,
                        found,
                    });
                }
                holds.entry(name.clone()).or_default().checkpoints += 1;
            }
        }
        for entry in entries(&shared_dir)? {
            let referenced = entry.name.as_ref().is_some_and(|n| holds.contains_key(n));
            if !referenced {
                remove(&entry.path, entry.is_dir)?;
            }
        }

        Ok(CheckpointStore {
            root: root.to_path_buf(),
            config,
            checkpoints,
            shared: Arc::new(Mutex::new(SharedFiles {
                dir: shared_dir,
                holds,
            })),
        })
    }

    /// Starts the upload of checkpoint `id`: creates `chk-<id>.inprogress`. `id` must be after
    /// the latest completed checkpoint's and not under way already; several uploads may be
    /// under way at once. The upload owns no borrow of the store: it can run on another thread.
    pub fn begin(&mut self, id: u64) -> Result<Upload, StoreError> {
        self.check_after_latest(id)?;
        let done = self.checkpoint_dir(id);
        if done.try_exists().map_err(io_err(&done, "stat"))? {
            return Err(StoreError::AlreadyExists { path: done });
        }
        let dir = self.root.join(format!("chk-{id}{INPROGRESS}"));
        fs::create_dir(&dir).map_err(|e| {
            if e.kind() == io::ErrorKind::AlreadyExists {
                StoreError::AlreadyExists { path: dir.clone() }
            } else {
                io_err(&dir, "create")(e)
            }
        })?;
        Ok(Upload {
            id,
            dir,
            shared_dir: self.shared_dir(),
            shared: Arc::clone(&self.shared),
            pacer: Pacer::new(self.config.upload_bytes_per_sec),
            shared_files: BTreeMap::new(),
            private: BTreeMap::new(),
            stats: UploadStats::default(),
            open: true,
        })
    }

    /// Completes an upload: writes `_metadata` (the caller's `metadata`, a JSON object without
    /// a `store` key, plus the [`StoreRecord`] under it) atomically and last, renames the folder
    /// to `chk-<id>` and syncs the root. Then applies retention: deletes the oldest completed
    /// checkpoints beyond `retained`, and the shared files no retained checkpoint references.
    ///
    /// On an error before the rename the upload is discarded (as by [`Self::abort`]). An error
    /// after it (only the root's sync can fail there) leaves the checkpoint listed by
    /// [`Self::completed`], but it must not be acknowledged as durable.
    pub fn complete(
        &mut self,
        mut upload: Upload,
        metadata: &serde_json::Value,
    ) -> Result<Completed, StoreError> {
        if !Arc::ptr_eq(&self.shared, &upload.shared) {
            return Err(StoreError::ForeignUpload {
                root: self.root.clone(),
                id: upload.id,
                other: upload.dir.parent().unwrap_or(&upload.dir).to_path_buf(),
            });
        }
        self.check_after_latest(upload.id)?;
        let record = StoreRecord {
            id: Some(upload.id),
            shared: upload.shared_files.clone(),
            private: upload.private.clone(),
        };
        let value = with_record(metadata, &record, &upload.dir)?;
        write_metadata(&upload.dir, &value)?;
        let dir = self.checkpoint_dir(upload.id);
        fs::rename(&upload.dir, &dir).map_err(io_err(&upload.dir, "rename into place"))?;

        // The rename is the commit point: the checkpoint now holds its shared files.
        upload.open = false;
        {
            let mut shared = lock(&self.shared);
            for name in record.shared.keys() {
                shared.transfer(name);
            }
        }
        let info = CompletedInfo {
            id: upload.id,
            path: dir,
        };
        self.checkpoints.insert(upload.id, record);
        sync_dir(&self.root)?;

        let mut completed = Completed {
            info,
            uploaded: upload.stats,
            expired: Vec::new(),
            deleted_shared: Vec::new(),
            retention_error: None,
        };
        self.apply_retention(&mut completed);
        Ok(completed)
    }

    /// Deletes the oldest completed checkpoints beyond `retained`, each `_metadata` first (a
    /// crash from there on leaves an incomplete folder, which open deletes), then the folder,
    /// then the shared files no checkpoint holds any more.
    fn apply_retention(&mut self, completed: &mut Completed) {
        while self.checkpoints.len() > self.config.retained {
            let Some((id, record)) = self.checkpoints.pop_first() else {
                break;
            };
            let dir = self.checkpoint_dir(id);
            let unmarked = remove(&dir.join(METADATA), false).and_then(|()| sync_dir(&dir));
            if let Err(e) = unmarked {
                self.checkpoints.insert(id, record);
                completed.retention_error = Some(e);
                return;
            }
            completed.expired.push(id);
            if let Err(e) = remove(&dir, true) {
                completed.retention_error.get_or_insert(e);
            }
            let mut shared = lock(&self.shared);
            for name in record.shared.keys() {
                match shared.release(name, Hold::Checkpoint) {
                    Ok(true) => completed.deleted_shared.push(name.clone()),
                    Ok(false) => {}
                    Err(e) => {
                        completed.retention_error.get_or_insert(e);
                    }
                }
            }
        }
    }

    /// Discards an upload: deletes its folder and releases the shared files it put or reused
    /// (a file it copied that nothing else holds is deleted). Dropping an [`Upload`] does the
    /// same, without reporting errors.
    pub fn abort(&mut self, mut upload: Upload) -> Result<(), StoreError> {
        upload.discard()
    }

    /// Completed checkpoints, ascending by id.
    pub fn completed(&self) -> Vec<CompletedInfo> {
        self.checkpoints
            .keys()
            .map(|&id| CompletedInfo {
                id,
                path: self.checkpoint_dir(id),
            })
            .collect()
    }

    /// The completed checkpoint with the highest id.
    pub fn latest(&self) -> Option<CompletedInfo> {
        self.checkpoints
            .last_key_value()
            .map(|(&id, _)| CompletedInfo {
                id,
                path: self.checkpoint_dir(id),
            })
    }

    /// What completed checkpoint `id` holds.
    pub fn record(&self, id: u64) -> Option<&StoreRecord> {
        self.checkpoints.get(&id)
    }

    /// The whole `_metadata` of a checkpoint or savepoint folder, the `store` key included.
    pub fn read_metadata(dir: &Path) -> Result<serde_json::Value, StoreError> {
        let path = dir.join(METADATA);
        let text = match fs::read(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Err(StoreError::MissingMetadata {
                    dir: dir.to_path_buf(),
                });
            }
            Err(e) => return Err(io_err(&path, "read")(e)),
        };
        serde_json::from_slice(&text).map_err(|e| StoreError::CorruptMetadata {
            path,
            reason: e.to_string(),
        })
    }

    /// The [`StoreRecord`] in the `_metadata` of a checkpoint or savepoint folder; every name in
    /// it is checked to be a plain file name.
    pub fn read_record(dir: &Path) -> Result<StoreRecord, StoreError> {
        let value = Self::read_metadata(dir)?;
        let path = dir.join(METADATA);
        let corrupt = |reason: String| StoreError::CorruptMetadata {
            path: path.clone(),
            reason,
        };
        let Some(record) = value.get(RECORD_KEY) else {
            return Err(corrupt(format!(
                "no '{RECORD_KEY}' key (not written by the checkpoint store)"
            )));
        };
        let record: StoreRecord = serde::Deserialize::deserialize(record)
            .map_err(|e| corrupt(format!("'{RECORD_KEY}': {e}")))?;
        for name in record.shared.keys().chain(record.private.keys()) {
            if let Err(e) = check_name(dir, name) {
                return Err(corrupt(e.to_string()));
            }
        }
        Ok(record)
    }

    /// The store's root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `<root>/shared`.
    pub fn shared_size(&self, name: &str) -> Option<u64> {
        fs::metadata(self.shared_dir().join(name))
            .ok()
            .map(|m| m.len())
    }

    pub fn shared_dir(&self) -> PathBuf {
        self.root.join(SHARED)
    }

    /// `<root>/chk-<id>`, the folder of checkpoint `id` once complete.
    pub fn checkpoint_dir(&self, id: u64) -> PathBuf {
        self.root.join(format!("chk-{id}"))
    }

    /// `<root>/savepoints/<name>`.
    pub fn savepoint_dir(&self, name: &str) -> PathBuf {
        self.root.join(SAVEPOINTS).join(name)
    }

    /// Bytes of `shared/` and of every `chk-*` folder, uploads under way included: what the
    /// "remote" holds. Savepoints are not counted.
    pub fn total_bytes(&self) -> Result<u64, StoreError> {
        let mut total = dir_bytes(&self.shared_dir())?;
        for entry in entries(&self.root)? {
            if entry.is_dir && entry.name.as_deref().is_some_and(|n| n.starts_with("chk-")) {
                total += dir_bytes(&entry.path)?;
            }
        }
        Ok(total)
    }

    /// Writes a self-contained savepoint: copies each `(local file, name)` into
    /// `savepoints/<name>/` at the upload bandwidth, then `_metadata` (the caller's `metadata`
    /// plus a [`StoreRecord`] with no id and no shared files). It is built in
    /// `savepoints/<name>.inprogress` and renamed when complete; on an error that is deleted.
    pub fn write_savepoint(
        &self,
        name: &str,
        files: &[(PathBuf, String)],
        metadata: &serde_json::Value,
    ) -> Result<SavepointInfo, StoreError> {
        let parent = self.root.join(SAVEPOINTS);
        check_name(&parent, name)?;
        if name.ends_with(INPROGRESS) {
            return Err(StoreError::InvalidName {
                dir: parent,
                name: name.to_owned(),
                reason: "'.inprogress' marks an unfinished savepoint",
            });
        }
        let path = parent.join(name);
        if path.try_exists().map_err(io_err(&path, "stat"))? {
            return Err(StoreError::AlreadyExists { path });
        }
        let tmp = parent.join(format!("{name}{INPROGRESS}"));
        fs::create_dir(&tmp).map_err(|e| {
            if e.kind() == io::ErrorKind::AlreadyExists {
                StoreError::AlreadyExists { path: tmp.clone() }
            } else {
                io_err(&tmp, "create")(e)
            }
        })?;
        let written = self
            .fill_savepoint(&tmp, files, metadata)
            .and_then(|bytes| {
                fs::rename(&tmp, &path).map_err(io_err(&tmp, "rename into place"))?;
                sync_dir(&parent)?;
                Ok(bytes)
            });
        match written {
            Ok(bytes) => Ok(SavepointInfo { path, bytes }),
            Err(e) => {
                // The error that matters is the one returned; open deletes what is left.
                let _ = remove(&tmp, true);
                Err(e)
            }
        }
    }

    fn fill_savepoint(
        &self,
        dir: &Path,
        files: &[(PathBuf, String)],
        metadata: &serde_json::Value,
    ) -> Result<u64, StoreError> {
        let mut pacer = Pacer::new(self.config.upload_bytes_per_sec);
        let mut record = StoreRecord::default();
        let mut bytes = 0;
        for (local, name) in files {
            bytes += put_file(
                dir,
                &mut record.private,
                name,
                Source::File(local),
                &mut pacer,
            )?;
        }
        write_metadata(dir, &with_record(metadata, &record, dir)?)?;
        Ok(bytes)
    }

    fn check_after_latest(&self, id: u64) -> Result<(), StoreError> {
        match self.checkpoints.last_key_value() {
            Some((&latest, _)) if id <= latest => Err(StoreError::IdNotAfterLatest {
                root: self.root.clone(),
                id,
                latest,
            }),
            _ => Ok(()),
        }
    }
}

/// Restores a completed checkpoint (or a savepoint, whose shared files are none) from the store:
/// copies its private files but `_metadata`, and the shared files it references from
/// `shared_dir`, under their own names into `into`, which must be empty or absent. Sizes are
/// checked against `_metadata`. Returns the bytes copied. Not paced.
pub fn materialize(
    checkpoint_dir: &Path,
    shared_dir: &Path,
    into: &Path,
) -> Result<u64, StoreError> {
    let record = CheckpointStore::read_record(checkpoint_dir)?;
    if let Some(name) = record
        .shared
        .keys()
        .find(|n| record.private.contains_key(*n))
    {
        return Err(StoreError::NameClash {
            dir: checkpoint_dir.to_path_buf(),
            name: name.clone(),
        });
    }
    fs::create_dir_all(into).map_err(io_err(into, "create"))?;
    let mut listing = fs::read_dir(into).map_err(io_err(into, "list"))?;
    if listing.next().is_some() {
        return Err(StoreError::NotEmpty {
            path: into.to_path_buf(),
        });
    }
    let mut total = 0;
    for (name, &size) in &record.private {
        total += copy_checked(&checkpoint_dir.join(name), &into.join(name), size)?;
    }
    for (name, &size) in &record.shared {
        total += copy_checked(&shared_dir.join(name), &into.join(name), size)?;
    }
    Ok(total)
}

/// One checkpoint's upload under way, from [`CheckpointStore::begin`] to
/// [`CheckpointStore::complete`] or [`CheckpointStore::abort`]. It is `Send` and borrows nothing
/// from the store, so it can run on another thread. Its files share one bandwidth limit.
/// Dropped without either, it deletes its folder and releases its shared files.
#[derive(Debug)]
pub struct Upload {
    id: u64,
    /// `chk-<id>.inprogress`.
    dir: PathBuf,
    shared_dir: PathBuf,
    shared: Arc<Mutex<SharedFiles>>,
    pacer: Pacer,
    /// Shared files put or reused, each held once by this upload.
    shared_files: BTreeMap<String, u64>,
    private: BTreeMap<String, u64>,
    stats: UploadStats,
    /// Neither completed nor discarded yet.
    open: bool,
}

impl Upload {
    /// Puts a local file as the shared file `name` (an SST file name; callers make names unique
    /// per content, e.g. with a database incarnation prefix). If `shared/<name>` exists with the
    /// same size it is referenced, not copied (bytes 0, reused); with another size that is an
    /// error. Otherwise it is copied at the bandwidth limit under a temporary name, synced, and
    /// renamed, so a crash never leaves a partial file under `name`.
    pub fn put_shared(&mut self, local: &Path, name: &str) -> Result<Uploaded, StoreError> {
        check_name(&self.shared_dir, name)?;
        let size = fs::metadata(local).map_err(io_err(local, "stat"))?.len();
        let path = self.shared_dir.join(name);
        let conflict = |found| StoreError::SharedConflict {
            path: path.clone(),
            local: local.to_path_buf(),
            found,
            expected: size,
        };
        if let Some(&held) = self.shared_files.get(name) {
            if held != size {
                return Err(conflict(held));
            }
            self.stats.reused += 1;
            return Ok(Uploaded {
                bytes: 0,
                reused: true,
            });
        }
        // The hold comes before the look, under one lock: a file seen stays.
        let existing = {
            let mut shared = lock(&self.shared);
            shared.hold(name, Hold::Upload);
            match fs::metadata(&path) {
                Ok(meta) => Ok(Some(meta.len())),
                Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
                Err(e) => Err(io_err(&path, "stat")(e)),
            }
        };
        let put = match existing {
            Ok(Some(found)) if found == size => Ok(Uploaded {
                bytes: 0,
                reused: true,
            }),
            Ok(Some(found)) => Err(conflict(found)),
            Ok(None) => self.copy_shared(local, &path, name).map(|bytes| Uploaded {
                bytes,
                reused: false,
            }),
            Err(e) => Err(e),
        };
        match put {
            Ok(uploaded) => {
                let stored = if uploaded.reused {
                    self.stats.reused += 1;
                    size
                } else {
                    self.stats.files += 1;
                    self.stats.bytes += uploaded.bytes;
                    uploaded.bytes
                };
                self.shared_files.insert(name.to_owned(), stored);
                Ok(uploaded)
            }
            Err(e) => {
                // The error that matters is the one returned; open deletes an orphan left.
                let _ = lock(&self.shared).release(name, Hold::Upload);
                Err(e)
            }
        }
    }

    /// References the shared file `name` an earlier checkpoint uploaded (a changelog segment,
    /// a materialization's file), with no local copy: an error if the store does not hold it.
    pub fn reference_shared(&mut self, name: &str) -> Result<Uploaded, StoreError> {
        check_name(&self.shared_dir, name)?;
        let reused = Uploaded {
            bytes: 0,
            reused: true,
        };
        if self.shared_files.contains_key(name) {
            return Ok(reused);
        }
        let path = self.shared_dir.join(name);
        let size = {
            let mut shared = lock(&self.shared);
            shared.hold(name, Hold::Upload);
            fs::metadata(&path).map(|m| m.len())
        };
        match size {
            Ok(size) => {
                self.stats.reused += 1;
                self.shared_files.insert(name.to_owned(), size);
                Ok(reused)
            }
            Err(_) => {
                let _ = lock(&self.shared).release(name, Hold::Upload);
                Err(StoreError::MissingShared {
                    path,
                    checkpoint: self.dir.clone(),
                })
            }
        }
    }

    /// Copies `local` to `shared/.<name>.chk-<id>.tmp`, then renames it to `path`.
    fn copy_shared(&mut self, local: &Path, path: &Path, name: &str) -> Result<u64, StoreError> {
        let tmp = self.shared_dir.join(format!(".{name}.chk-{}.tmp", self.id));
        let copied = File::open(local)
            .map_err(io_err(local, "open"))
            .and_then(|mut file| write_paced(&mut file, local, &tmp, &mut self.pacer))
            .and_then(|bytes| {
                fs::rename(&tmp, path).map_err(io_err(&tmp, "rename into place"))?;
                sync_dir(&self.shared_dir)?;
                Ok(bytes)
            });
        if copied.is_err() {
            // Gone already after a rename; otherwise open deletes it.
            let _ = remove(&tmp, false);
        }
        copied
    }

    /// Copies a local file into the checkpoint's own folder (MANIFEST, CURRENT, OPTIONS, a full
    /// snapshot's data file...), at the bandwidth limit.
    pub fn put_private(&mut self, local: &Path, name: &str) -> Result<Uploaded, StoreError> {
        self.put_private_from(name, Source::File(local))
    }

    /// Writes `bytes` as a private file (changelog segments, offsets...), at the bandwidth limit.
    pub fn put_private_bytes(&mut self, name: &str, bytes: &[u8]) -> Result<Uploaded, StoreError> {
        self.put_private_from(name, Source::Bytes(bytes))
    }

    fn put_private_from(&mut self, name: &str, source: Source<'_>) -> Result<Uploaded, StoreError> {
        let bytes = put_file(&self.dir, &mut self.private, name, source, &mut self.pacer)?;
        self.stats.files += 1;
        self.stats.bytes += bytes;
        Ok(Uploaded {
            bytes,
            reused: false,
        })
    }

    /// A flag that, once set, stops this upload's copies between two chunks.
    pub fn cancel_with(&mut self, flag: Arc<AtomicBool>) {
        self.pacer.cancel = Some(flag);
    }

    /// The checkpoint's id.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Bytes copied so far (reused shared files count 0).
    pub fn bytes_uploaded(&self) -> u64 {
        self.stats.bytes
    }

    /// Files copied so far, shared and private.
    pub fn files_uploaded(&self) -> u64 {
        self.stats.files
    }

    /// Shared files referenced without a copy so far.
    pub fn files_reused(&self) -> u64 {
        self.stats.reused
    }

    /// The upload's folder, `chk-<id>.inprogress`.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Deletes the folder and releases the shared files; the first error.
    fn discard(&mut self) -> Result<(), StoreError> {
        self.open = false;
        let removed = remove(&self.dir, true);
        let mut released = Ok(());
        let mut shared = lock(&self.shared);
        for name in std::mem::take(&mut self.shared_files).keys() {
            if let Err(e) = shared.release(name, Hold::Upload) {
                released = released.and(Err(e));
            }
        }
        removed.and(released)
    }
}

impl Drop for Upload {
    fn drop(&mut self) {
        if self.open {
            // Nobody to tell: what is left is deleted when the store is next opened.
            let _ = self.discard();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;
    use tempfile::TempDir;

    const POOL: [&str; 6] = [
        "a-000001.sst",
        "a-000002.sst",
        "a-000003.sst",
        "b-000004.sst",
        "b-000005.sst",
        "b-000006.sst",
    ];

    /// Distinct contents (and sizes) per name.
    fn contents(name: &str) -> Vec<u8> {
        let seed = name
            .bytes()
            .fold(7u32, |h, b| h.wrapping_mul(31).wrapping_add(u32::from(b)));
        (0..(500 + seed % 2000))
            .map(|i| (seed.wrapping_add(i).wrapping_mul(2_654_435_761) >> 24) as u8)
            .collect()
    }

    /// A local folder holding every pool file.
    fn local_files() -> TempDir {
        let dir = tempfile::tempdir().unwrap();
        for name in POOL {
            fs::write(dir.path().join(name), contents(name)).unwrap();
        }
        dir
    }

    fn config(retained: usize) -> StoreConfig {
        StoreConfig {
            retained,
            upload_bytes_per_sec: None,
        }
    }

    fn names_in(dir: &Path) -> BTreeSet<String> {
        fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect()
    }

    /// Uploads checkpoint `id` referencing `names` from `local`, plus a private MANIFEST.
    fn checkpoint(store: &mut CheckpointStore, id: u64, names: &[&str], local: &Path) -> Completed {
        let mut upload = store.begin(id).unwrap();
        for name in names {
            upload.put_shared(&local.join(name), name).unwrap();
        }
        upload
            .put_private_bytes("MANIFEST-000001", format!("manifest {id}").as_bytes())
            .unwrap();
        store
            .complete(upload, &serde_json::json!({ "checkpoint": id }))
            .unwrap()
    }

    fn ids(store: &CheckpointStore) -> Vec<u64> {
        store.completed().iter().map(|c| c.id).collect()
    }

    fn set(names: &[&str]) -> BTreeSet<String> {
        names.iter().map(|n| n.to_string()).collect()
    }

    #[test]
    fn retention_deletes_only_the_files_no_retained_checkpoint_references() {
        let local = local_files();
        let root = tempfile::tempdir().unwrap();
        let mut store = CheckpointStore::open(root.path(), config(2)).unwrap();
        let [a, b, c, d, ..] = POOL;

        let first = checkpoint(&mut store, 1, &[a, b], local.path());
        assert_eq!(first.uploaded.files, 3);
        assert_eq!(first.uploaded.reused, 0);
        let second = checkpoint(&mut store, 2, &[b, c], local.path());
        assert_eq!(second.uploaded.reused, 1, "b is chk-1's");
        assert!(second.expired.is_empty());
        assert_eq!(names_in(&store.shared_dir()), set(&[a, b, c]));

        let third = checkpoint(&mut store, 3, &[b, c, d], local.path());
        assert_eq!(third.expired, vec![1]);
        assert_eq!(third.deleted_shared, vec![a.to_string()]);
        assert!(third.retention_error.is_none());
        assert_eq!(names_in(&store.shared_dir()), set(&[b, c, d]));
        assert_eq!(ids(&store), vec![2, 3]);
        assert!(!root.path().join("chk-1").exists());

        // b was uploaded by chk-1 and reused since: it outlives chk-1 and chk-2.
        let fourth = checkpoint(&mut store, 4, &[b], local.path());
        assert_eq!(fourth.expired, vec![2]);
        assert!(fourth.deleted_shared.is_empty(), "c is chk-3's");
        let fifth = checkpoint(&mut store, 5, &[b], local.path());
        assert_eq!(fifth.deleted_shared, vec![c.to_string(), d.to_string()]);
        assert_eq!(names_in(&store.shared_dir()), set(&[b]));
        assert_eq!(fs::read(store.shared_dir().join(b)).unwrap(), contents(b));
    }

    #[test]
    fn reused_shared_file_sends_no_bytes() {
        let local = local_files();
        let root = tempfile::tempdir().unwrap();
        let mut store = CheckpointStore::open(root.path(), config(3)).unwrap();
        let name = POOL[0];
        let size = contents(name).len() as u64;

        let mut upload = store.begin(1).unwrap();
        let put = upload.put_shared(&local.path().join(name), name).unwrap();
        assert_eq!(
            put,
            Uploaded {
                bytes: size,
                reused: false
            }
        );
        store.complete(upload, &serde_json::json!({})).unwrap();

        let mut upload = store.begin(2).unwrap();
        let put = upload.put_shared(&local.path().join(name), name).unwrap();
        assert_eq!(
            put,
            Uploaded {
                bytes: 0,
                reused: true
            }
        );
        assert_eq!(
            (
                upload.bytes_uploaded(),
                upload.files_uploaded(),
                upload.files_reused()
            ),
            (0, 0, 1)
        );

        // The same name with other content is refused.
        fs::write(local.path().join("other"), b"not the same size").unwrap();
        let err = upload
            .put_shared(&local.path().join("other"), name)
            .unwrap_err();
        assert!(err.to_string().contains("unique per content"), "{err}");
    }

    #[test]
    fn reopen_after_a_crash_cleans_up_and_rebuilds_the_counts() {
        let local = local_files();
        let root = tempfile::tempdir().unwrap();
        let [a, b, c, d, ..] = POOL;
        {
            let mut store = CheckpointStore::open(root.path(), config(2)).unwrap();
            checkpoint(&mut store, 1, &[a, b], local.path());
            checkpoint(&mut store, 2, &[b], local.path());
            // Killed mid-upload: no Drop runs.
            let mut upload = store.begin(3).unwrap();
            upload.put_shared(&local.path().join(c), c).unwrap();
            upload.put_private_bytes("CURRENT", b"x").unwrap();
            std::mem::forget(upload);
        }
        // More debris: an unreferenced shared file, a half-copied one, a checkpoint folder
        // whose `_metadata` never landed, a half-written savepoint.
        fs::write(root.path().join("shared").join(d), b"orphan").unwrap();
        fs::write(root.path().join("shared/.x.sst.chk-9.tmp"), b"partial").unwrap();
        fs::create_dir(root.path().join("chk-9")).unwrap();
        fs::write(root.path().join("chk-9").join(METADATA_TMP), b"{").unwrap();
        fs::create_dir_all(root.path().join("savepoints/sp.inprogress")).unwrap();

        let mut store = CheckpointStore::open(root.path(), config(2)).unwrap();
        assert_eq!(ids(&store), vec![1, 2]);
        assert_eq!(names_in(&store.shared_dir()), set(&[a, b]));
        assert_eq!(
            names_in(root.path()),
            set(&["chk-1", "chk-2", "savepoints", "shared"])
        );
        assert!(names_in(&root.path().join("savepoints")).is_empty());

        // The rebuilt counts: chk-1 alone held a, chk-2 and chk-3 hold b.
        let third = checkpoint(&mut store, 3, &[b], local.path());
        assert_eq!(third.expired, vec![1]);
        assert_eq!(third.deleted_shared, vec![a.to_string()]);
        assert_eq!(names_in(&store.shared_dir()), set(&[b]));
    }

    #[test]
    fn an_upload_under_way_keeps_what_it_reused() {
        let local = local_files();
        let root = tempfile::tempdir().unwrap();
        let mut store = CheckpointStore::open(root.path(), config(1)).unwrap();
        let [a, b, ..] = POOL;
        checkpoint(&mut store, 1, &[a], local.path());

        let mut slow = store.begin(3).unwrap();
        assert!(slow.put_shared(&local.path().join(a), a).unwrap().reused);
        // chk-2 completes first and expires chk-1, a's only checkpoint: the upload holds a.
        let second = checkpoint(&mut store, 2, &[b], local.path());
        assert_eq!(second.expired, vec![1]);
        assert!(second.deleted_shared.is_empty());
        assert_eq!(names_in(&store.shared_dir()), set(&[a, b]));

        let third = store.complete(slow, &serde_json::json!({})).unwrap();
        assert_eq!(third.deleted_shared, vec![b.to_string()]);
        assert_eq!(names_in(&store.shared_dir()), set(&[a]));
    }

    #[test]
    fn abort_and_drop_delete_the_folder_and_what_only_they_put() {
        let local = local_files();
        let root = tempfile::tempdir().unwrap();
        let mut store = CheckpointStore::open(root.path(), config(1)).unwrap();
        let [a, b, c, ..] = POOL;
        checkpoint(&mut store, 1, &[a], local.path());

        let mut upload = store.begin(2).unwrap();
        upload.put_shared(&local.path().join(a), a).unwrap();
        upload.put_shared(&local.path().join(b), b).unwrap();
        let dir = upload.dir().to_path_buf();
        store.abort(upload).unwrap();
        assert!(!dir.exists());
        assert_eq!(names_in(&store.shared_dir()), set(&[a]));

        // The id is free again; dropping does what abort does.
        let mut upload = store.begin(2).unwrap();
        upload.put_shared(&local.path().join(c), c).unwrap();
        drop(upload);
        assert!(!dir.exists());
        assert_eq!(names_in(&store.shared_dir()), set(&[a]));
        assert_eq!(ids(&store), vec![1]);
    }

    #[test]
    fn ids_must_grow_and_run_once() {
        let root = tempfile::tempdir().unwrap();
        let mut store = CheckpointStore::open(root.path(), config(1)).unwrap();
        let upload = store.begin(5).unwrap();
        let err = store.begin(5).unwrap_err();
        assert!(
            err.to_string().contains("chk-5.inprogress: already exists"),
            "{err}"
        );
        store.complete(upload, &serde_json::json!({})).unwrap();
        let err = store.begin(4).unwrap_err();
        assert!(
            err.to_string()
                .contains("checkpoint 4 is not after the latest completed checkpoint 5"),
            "{err}"
        );
        let zero = CheckpointStore::open(root.path(), config(0)).unwrap_err();
        assert!(zero.to_string().contains("'retained' must be at least 1"));
    }

    #[test]
    fn an_upload_runs_on_another_thread() {
        let local = local_files();
        let root = tempfile::tempdir().unwrap();
        let mut store = CheckpointStore::open(root.path(), config(1)).unwrap();
        let mut upload = store.begin(1).unwrap();
        let path = local.path().join(POOL[0]);
        let upload = std::thread::spawn(move || {
            upload.put_shared(&path, POOL[0]).unwrap();
            upload
        })
        .join()
        .unwrap();
        let done = store.complete(upload, &serde_json::json!({})).unwrap();
        assert_eq!(done.uploaded.files, 1);
    }

    #[test]
    fn bandwidth_limit_paces_all_files_of_an_upload() {
        let root = tempfile::tempdir().unwrap();
        let limited = StoreConfig {
            retained: 1,
            upload_bytes_per_sec: Some(4 << 20),
        };
        let mut store = CheckpointStore::open(root.path(), limited).unwrap();
        let mut upload = store.begin(1).unwrap();
        let half = vec![7u8; 512 << 10];
        let start = Instant::now();
        upload.put_private_bytes("first", &half).unwrap();
        upload.put_private_bytes("second", &half).unwrap();
        let took = start.elapsed();
        // 1 MiB at 4 MiB/s is 250 ms; only the lower bound is the limit's doing.
        assert!(took >= Duration::from_millis(230), "took {took:?}");
        assert_eq!(upload.bytes_uploaded(), 1 << 20);
        assert_eq!(upload.files_uploaded(), 2);
    }

    #[test]
    fn a_cancelled_upload_stops_inside_a_paced_copy() {
        let root = tempfile::tempdir().unwrap();
        let limited = StoreConfig {
            retained: 1,
            upload_bytes_per_sec: Some(1 << 20),
        };
        let mut store = CheckpointStore::open(root.path(), limited).unwrap();
        let mut upload = store.begin(1).unwrap();
        let cancel = Arc::new(AtomicBool::new(false));
        upload.cancel_with(Arc::clone(&cancel));
        let flag = Arc::clone(&cancel);
        let setter = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            flag.store(true, std::sync::atomic::Ordering::Relaxed);
        });
        // 8 MiB at 1 MiB/s would take 8 s; cancelled, it stops a chunk or two later.
        let result = upload.put_private_bytes("big", &vec![1u8; 8 << 20]);
        setter.join().unwrap();
        assert!(
            matches!(result, Err(StoreError::Cancelled { .. })),
            "{result:?}"
        );
        assert!(upload.bytes_uploaded() < 8 << 20);
        store.abort(upload).unwrap();
    }

    #[test]
    fn metadata_keeps_the_callers_fields_and_adds_the_record() {
        let local = local_files();
        let root = tempfile::tempdir().unwrap();
        let mut store = CheckpointStore::open(root.path(), config(1)).unwrap();
        let done = checkpoint(&mut store, 7, &[POOL[0]], local.path());
        let value = CheckpointStore::read_metadata(&done.info.path).unwrap();
        assert_eq!(value["checkpoint"], 7);
        let record = CheckpointStore::read_record(&done.info.path).unwrap();
        assert_eq!(
            record,
            StoreRecord {
                id: Some(7),
                shared: BTreeMap::from([(POOL[0].to_string(), contents(POOL[0]).len() as u64)]),
                private: BTreeMap::from([("MANIFEST-000001".to_string(), 10)]),
            }
        );
        assert_eq!(store.record(7), Some(&record));

        let upload = store.begin(8).unwrap();
        let err = store
            .complete(upload, &serde_json::json!({ "store": 1 }))
            .unwrap_err();
        assert!(
            err.to_string().contains("the key 'store' is the store's"),
            "{err}"
        );
        assert!(!root.path().join("chk-8.inprogress").exists());
    }

    #[test]
    fn missing_or_corrupt_metadata_names_the_path() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("chk-3");
        fs::create_dir(&dir).unwrap();
        let err = CheckpointStore::read_metadata(&dir).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "checkpoint store {}: _metadata is missing (an incomplete checkpoint)",
                dir.display()
            )
        );
        fs::write(dir.join(METADATA), b"{\"store\": ").unwrap();
        let err = CheckpointStore::read_metadata(&dir).unwrap_err();
        let text = err.to_string();
        assert!(
            text.starts_with(&format!(
                "checkpoint store {}: corrupt _metadata",
                dir.join(METADATA).display()
            )),
            "{text}"
        );
        // open refuses rather than deleting shared files on partial knowledge.
        assert!(CheckpointStore::open(root.path(), config(1)).is_err());

        fs::write(
            dir.join(METADATA),
            br#"{"store": {"id": 3, "shared": {"../x": 1}, "private": {}}}"#,
        )
        .unwrap();
        let err = CheckpointStore::read_record(&dir).unwrap_err();
        assert!(
            err.to_string().contains("'../x' is not a valid file name"),
            "{err}"
        );
    }

    #[test]
    fn materialize_reproduces_the_exact_bytes() {
        let local = local_files();
        let root = tempfile::tempdir().unwrap();
        let mut store = CheckpointStore::open(root.path(), config(2)).unwrap();
        let [a, b, c, ..] = POOL;
        checkpoint(&mut store, 1, &[a, b], local.path());
        let mut upload = store.begin(2).unwrap();
        for name in [b, c] {
            upload.put_shared(&local.path().join(name), name).unwrap();
        }
        upload
            .put_private(&local.path().join(POOL[5]), "OPTIONS-000007")
            .unwrap();
        upload
            .put_private_bytes("CURRENT", b"MANIFEST-000009\n")
            .unwrap();
        let done = store.complete(upload, &serde_json::json!({})).unwrap();

        let restore = tempfile::tempdir().unwrap();
        let into = restore.path().join("db");
        let bytes = materialize(&done.info.path, &store.shared_dir(), &into).unwrap();
        let expected: BTreeMap<String, Vec<u8>> = BTreeMap::from([
            (b.to_string(), contents(b)),
            (c.to_string(), contents(c)),
            ("OPTIONS-000007".to_string(), contents(POOL[5])),
            ("CURRENT".to_string(), b"MANIFEST-000009\n".to_vec()),
        ]);
        let found: BTreeMap<String, Vec<u8>> = names_in(&into)
            .into_iter()
            .map(|n| (n.clone(), fs::read(into.join(&n)).unwrap()))
            .collect();
        assert_eq!(found, expected);
        assert_eq!(
            bytes,
            expected.values().map(|v| v.len() as u64).sum::<u64>()
        );

        let err = materialize(&done.info.path, &store.shared_dir(), &into).unwrap_err();
        assert!(matches!(err, StoreError::NotEmpty { .. }), "{err}");
    }

    #[test]
    fn savepoints_are_self_contained() {
        let local = local_files();
        let root = tempfile::tempdir().unwrap();
        let store = CheckpointStore::open(root.path(), config(1)).unwrap();
        let files: Vec<(PathBuf, String)> = POOL[..2]
            .iter()
            .map(|n| (local.path().join(n), n.to_string()))
            .collect();
        let saved = store
            .write_savepoint(
                "before-upgrade",
                &files,
                &serde_json::json!({ "job": "freq" }),
            )
            .unwrap();
        assert_eq!(saved.path, store.savepoint_dir("before-upgrade"));
        assert_eq!(names_in(&saved.path), set(&[POOL[0], POOL[1], METADATA]));
        assert!(names_in(&store.shared_dir()).is_empty());
        let record = CheckpointStore::read_record(&saved.path).unwrap();
        assert_eq!(record.id, None);
        assert!(record.shared.is_empty());

        let restore = tempfile::tempdir().unwrap();
        let bytes = materialize(&saved.path, &store.shared_dir(), restore.path()).unwrap();
        assert_eq!(bytes, saved.bytes);
        assert_eq!(
            fs::read(restore.path().join(POOL[1])).unwrap(),
            contents(POOL[1])
        );

        let again = store
            .write_savepoint("before-upgrade", &files, &serde_json::json!({}))
            .unwrap_err();
        assert!(matches!(again, StoreError::AlreadyExists { .. }), "{again}");
        // A failed savepoint leaves nothing behind.
        let missing = vec![(local.path().join("nope"), "nope".to_string())];
        assert!(
            store
                .write_savepoint("broken", &missing, &serde_json::json!({}))
                .is_err()
        );
        assert_eq!(
            names_in(&root.path().join("savepoints")),
            set(&["before-upgrade"])
        );
    }

    #[test]
    fn total_bytes_counts_shared_and_checkpoint_folders() {
        let local = local_files();
        let root = tempfile::tempdir().unwrap();
        let mut store = CheckpointStore::open(root.path(), config(2)).unwrap();
        let [a, ..] = POOL;
        let done = checkpoint(&mut store, 1, &[a], local.path());
        let metadata = fs::metadata(done.info.path.join(METADATA)).unwrap().len();
        let expected = contents(a).len() as u64 + "manifest 1".len() as u64 + metadata;
        assert_eq!(store.total_bytes().unwrap(), expected);
    }

    #[derive(Debug, Clone)]
    enum Step {
        /// Complete a checkpoint referencing the pool files in the mask.
        Complete(u8),
        /// Upload those, then abort.
        Abort(u8),
        /// Upload those, then the process dies (no Drop) and the store is reopened.
        Crash(u8),
        Reopen,
    }

    fn step() -> impl Strategy<Value = Step> {
        prop_oneof![
            6 => any::<u8>().prop_map(Step::Complete),
            1 => any::<u8>().prop_map(Step::Abort),
            1 => any::<u8>().prop_map(Step::Crash),
            1 => Just(Step::Reopen),
        ]
    }

    fn pick(mask: u8) -> Vec<&'static str> {
        POOL.iter()
            .enumerate()
            .filter(|(i, _)| mask & (1 << i) != 0)
            .map(|(_, n)| *n)
            .collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        #[test]
        fn shared_dir_holds_exactly_what_retained_checkpoints_reference(
            retained in 1usize..4,
            steps in proptest::collection::vec(step(), 1..16),
        ) {
            let local = local_files();
            let root = tempfile::tempdir().unwrap();
            let mut store = CheckpointStore::open(root.path(), config(retained)).unwrap();
            let mut model: Vec<(u64, Vec<&str>)> = Vec::new();
            let mut next = 1;
            for step in steps {
                match step {
                    Step::Complete(mask) => {
                        checkpoint(&mut store, next, &pick(mask), local.path());
                        model.push((next, pick(mask)));
                        next += 1;
                    }
                    Step::Abort(mask) | Step::Crash(mask) => {
                        let mut upload = store.begin(next).unwrap();
                        for name in pick(mask) {
                            upload.put_shared(&local.path().join(name), name).unwrap();
                        }
                        if matches!(step, Step::Abort(_)) {
                            store.abort(upload).unwrap();
                        } else {
                            std::mem::forget(upload);
                            drop(store);
                            store = CheckpointStore::open(root.path(), config(retained)).unwrap();
                        }
                    }
                    Step::Reopen => {
                        drop(store);
                        store = CheckpointStore::open(root.path(), config(retained)).unwrap();
                    }
                }
                let kept = &model[model.len().saturating_sub(retained)..];
                let expected: BTreeSet<String> =
                    kept.iter().flat_map(|(_, names)| names.iter().map(|n| n.to_string())).collect();
                prop_assert_eq!(names_in(&store.shared_dir()), expected);
                prop_assert_eq!(ids(&store), kept.iter().map(|(id, _)| *id).collect::<Vec<_>>());
            }
        }
    }
}
