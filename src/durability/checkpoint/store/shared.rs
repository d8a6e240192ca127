//! Reference counts of the files shared between incremental checkpoints: a shared file lives
//! while a retained checkpoint references it or an upload under way has put or reused it.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::{fs, io};

use super::error::{StoreError, io_err};

/// Why a shared file is kept: completed checkpoints that reference it, and uploads under way
/// that put or reused it.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Holds {
    pub(super) checkpoints: usize,
    uploads: usize,
}

#[derive(Debug, Clone, Copy)]
pub(super) enum Hold {
    Checkpoint,
    Upload,
}

/// The holds on every shared file, shared by the store and its uploads. A file is deleted, under
/// the lock, when its last hold goes; an upload takes its hold, under the same lock, before it
/// looks whether the file exists. So a file an upload has seen is never deleted under it.
#[derive(Debug)]
pub(super) struct SharedFiles {
    pub(super) dir: PathBuf,
    pub(super) holds: HashMap<String, Holds>,
}

impl SharedFiles {
    pub(super) fn hold(&mut self, name: &str, hold: Hold) {
        let holds = self.holds.entry(name.to_owned()).or_default();
        match hold {
            Hold::Checkpoint => holds.checkpoints += 1,
            Hold::Upload => holds.uploads += 1,
        }
    }

    /// Drops one hold on `name` and deletes the file if none is left; true if it deleted it.
    pub(super) fn release(&mut self, name: &str, hold: Hold) -> Result<bool, StoreError> {
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
    pub(super) fn transfer(&mut self, name: &str) {
        let holds = self.holds.entry(name.to_owned()).or_default();
        holds.uploads = holds.uploads.saturating_sub(1);
        holds.checkpoints += 1;
    }
}

/// Locks the holds. A panic while they were locked leaves them usable: each change under the
/// lock is one counter step or one file deletion, so a poisoned lock holds consistent counts.
pub(super) fn lock(shared: &Mutex<SharedFiles>) -> MutexGuard<'_, SharedFiles> {
    shared.lock().unwrap_or_else(PoisonError::into_inner)
}
