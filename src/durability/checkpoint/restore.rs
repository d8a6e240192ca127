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
    /// Full, a chain: the streams of operators 1, 2, ... (into their own databases).
    pub op_full_streams: Vec<PathBuf>,
    /// Changelog: the segments to replay onto the materialized state, in order.
    pub changelog: Vec<PathBuf>,
    /// Bytes copied from the store.
    pub bytes: u64,
}

/// Copies checkpoint (or savepoint) `dir`'s state into empty `db_dirs`, one per operator of
/// the job in chain order (their old content is dropped, as a failed task's local state is).
/// `scratch` takes a full checkpoint's streams.
pub fn prepare_restore(
    dir: &Path,
    shared: &Path,
    db_dirs: &[PathBuf],
    scratch: &Path,
) -> Result<Restored, CheckpointError> {
    let metadata = Metadata::read(dir)?;
    let operators = metadata.job.operators.len() + 1;
    let Some(db_dir) = db_dirs.first().filter(|_| db_dirs.len() == operators) else {
        return Err(CheckpointError::Metadata {
            dir: dir.display().to_string(),
            why: format!(
                "it holds the state of {operators} operator(s); the workload's job has {}",
                db_dirs.len()
            ),
        });
    };
    for db in db_dirs {
        if db.exists() {
            std::fs::remove_dir_all(db).map_err(io(format!("remove {}", db.display())))?;
        }
    }
    if scratch.exists() {
        std::fs::remove_dir_all(scratch).map_err(io(format!("remove {}", scratch.display())))?;
    }
    if operators > 1 {
        return restore_chain(dir, shared, db_dirs, scratch, metadata);
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
                op_full_streams: Vec::new(),
                changelog: metadata.changelog.iter().map(|n| scratch.join(n)).collect(),
                metadata,
                bytes,
            })
        }
        CheckpointKind::Full => {
            let bytes = store::materialize(dir, shared, scratch)?;
            Ok(Restored {
                full_stream: Some(scratch.join(FULL_STATE)),
                op_full_streams: Vec::new(),
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
                op_full_streams: Vec::new(),
                changelog: Vec::new(),
                metadata,
                bytes,
            })
        }
    }
}

/// A chain's checkpoint or savepoint: every file into `scratch`, then each operator's into its
/// own database folder (operator i >= 1's private files are in `op<i>/`, its shared SST files
/// named by `op_ssts`), or its full stream left for the caller.
fn restore_chain(
    dir: &Path,
    shared: &Path,
    db_dirs: &[PathBuf],
    scratch: &Path,
    metadata: Metadata,
) -> Result<Restored, CheckpointError> {
    let bytes = store::materialize(dir, shared, scratch)?;
    let op_dir = |i: usize| scratch.join(format!("op{i}"));
    match metadata.kind {
        CheckpointKind::Changelog => Err(CheckpointError::Metadata {
            dir: dir.display().to_string(),
            why: "a changelog checkpoint of a chain of operators cannot be restored".to_string(),
        }),
        CheckpointKind::Full => Ok(Restored {
            full_stream: Some(scratch.join(FULL_STATE)),
            op_full_streams: (1..db_dirs.len())
                .map(|i| op_dir(i).join(FULL_STATE))
                .collect(),
            changelog: Vec::new(),
            metadata,
            bytes,
        }),
        CheckpointKind::Incremental => {
            let rename = |from: &Path, to: &Path| {
                std::fs::rename(from, to).map_err(io(format!(
                    "move {} to {}",
                    from.display(),
                    to.display()
                )))
            };
            for (i, db) in db_dirs.iter().enumerate().skip(1) {
                let own = op_dir(i);
                if !own.exists() {
                    std::fs::create_dir_all(&own)
                        .map_err(io(format!("create {}", own.display())))?;
                }
                for (shared_name, local) in metadata.op_ssts.get(i - 1).into_iter().flatten() {
                    rename(&scratch.join(shared_name), &own.join(local))?;
                }
                rename(&own, db)?;
            }
            // What is left is the first operator's.
            for (shared_name, local) in &metadata.ssts {
                rename(&scratch.join(shared_name), &scratch.join(local))?;
            }
            rename(scratch, &db_dirs[0])?;
            Ok(Restored {
                full_stream: None,
                op_full_streams: Vec::new(),
                changelog: Vec::new(),
                metadata,
                bytes,
            })
        }
    }
}
