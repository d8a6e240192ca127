//! One checkpoint's upload under way: its private files, and the shared files it puts or reuses.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::{fs, io};

use super::error::{StoreError, io_err};
use super::folder::{check_name, remove, sync_dir};
use super::pacer::{Pacer, Source, put_file, write_paced};
use super::shared::{Hold, SharedFiles, lock};
use super::{File, UploadStats, Uploaded};

/// One checkpoint's upload under way, from [`CheckpointStore::begin`] to
/// [`CheckpointStore::complete`] or [`CheckpointStore::abort`]. It is `Send` and borrows nothing
/// from the store, so it can run on another thread. Its files share one bandwidth limit.
/// Dropped without either, it deletes its folder and releases its shared files.
#[derive(Debug)]
pub struct Upload {
    pub(super) id: u64,
    /// `chk-<id>.inprogress`.
    pub(super) dir: PathBuf,
    pub(super) shared_dir: PathBuf,
    pub(super) shared: Arc<Mutex<SharedFiles>>,
    pub(super) pacer: Pacer,
    /// Shared files put or reused, each held once by this upload.
    pub(super) shared_files: BTreeMap<String, u64>,
    pub(super) private: BTreeMap<String, u64>,
    pub(super) stats: UploadStats,
    /// Neither completed nor discarded yet.
    pub(super) open: bool,
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
    pub(super) fn discard(&mut self) -> Result<(), StoreError> {
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
