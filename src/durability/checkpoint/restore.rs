//! Restore: a checkpoint or savepoint made ready to open.

use std::path::{Path, PathBuf};

use super::{CheckpointError, FULL_STATE, Metadata, io, store};
use crate::config::profile::CheckpointKind;

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
