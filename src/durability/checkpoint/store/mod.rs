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
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use self::error::io_err;
use self::folder::{
    check_name, copy_checked, dir_bytes, entries, parse_checkpoint_dir, remove, sync_dir,
    with_record, write_metadata,
};
use self::pacer::Pacer;
use self::shared::{Hold, Holds, SharedFiles, lock};

mod error;
mod folder;
mod pacer;
mod savepoint;
mod shared;
mod upload;

pub use error::StoreError;
pub use folder::has_completed;
pub use upload::Upload;

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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;
    use tempfile::TempDir;

    pub(super) const POOL: [&str; 6] = [
        "a-000001.sst",
        "a-000002.sst",
        "a-000003.sst",
        "b-000004.sst",
        "b-000005.sst",
        "b-000006.sst",
    ];

    /// Distinct contents (and sizes) per name.
    pub(super) fn contents(name: &str) -> Vec<u8> {
        let seed = name
            .bytes()
            .fold(7u32, |h, b| h.wrapping_mul(31).wrapping_add(u32::from(b)));
        (0..(500 + seed % 2000))
            .map(|i| (seed.wrapping_add(i).wrapping_mul(2_654_435_761) >> 24) as u8)
            .collect()
    }

    /// A local folder holding every pool file.
    pub(super) fn local_files() -> TempDir {
        let dir = tempfile::tempdir().unwrap();
        for name in POOL {
            fs::write(dir.path().join(name), contents(name)).unwrap();
        }
        dir
    }

    pub(super) fn config(retained: usize) -> StoreConfig {
        StoreConfig {
            retained,
            upload_bytes_per_sec: None,
        }
    }

    pub(super) fn names_in(dir: &Path) -> BTreeSet<String> {
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

    pub(super) fn set(names: &[&str]) -> BTreeSet<String> {
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
