//! A checkpoint's or savepoint's files: RocksDB's native checkpoint, a savepoint's files, and
//! the thread that uploads them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::thread::JoinHandle;

use super::snapshot::write_full;
use super::store::Upload;
use super::{CheckpointError, FULL_STATE, UploadResult, io};
use crate::backend::StateBackend;
use crate::config::profile::CheckpointKind;

/// A native checkpoint's uploads, its scratch folder, and its files' shared -> local names.
pub(super) type NativeFiles = (Vec<Put>, PathBuf, BTreeMap<String, String>);

/// RocksDB writes a native checkpoint of `backend` into `dir` (replacing what is there):
/// memtables flushed, SST files hard-linked. Its files, by path and name.
pub(super) fn native_checkpoint(
    backend: &StateBackend,
    dir: &Path,
) -> Result<Vec<(PathBuf, String)>, CheckpointError> {
    if dir.exists() {
        std::fs::remove_dir_all(dir).map_err(io(format!("remove {}", dir.display())))?;
    }
    backend.create_checkpoint(dir)?;
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
/// key from a RocksDB snapshot, the full format) or native (RocksDB's own files). `backends`
/// are the job's databases in chain order: operator i >= 1's files go in the savepoint's
/// `op<i>/`.
pub fn savepoint_files(
    backends: &[&StateBackend],
    canonical: bool,
    scratch: &Path,
) -> Result<(CheckpointKind, Vec<(PathBuf, String)>), CheckpointError> {
    let Some((first, others)) = backends.split_first() else {
        return Err(CheckpointError::Metadata {
            dir: scratch.display().to_string(),
            why: "a savepoint of a job without a database".to_string(),
        });
    };
    if !canonical {
        let mut files = native_checkpoint(first, scratch)?;
        for (i, backend) in others.iter().enumerate() {
            let op = format!("op{}", i + 1);
            for (path, name) in native_checkpoint(backend, &scratch.join(&op))? {
                files.push((path, format!("{op}/{name}")));
            }
        }
        return Ok((CheckpointKind::Incremental, files));
    }
    if scratch.exists() {
        std::fs::remove_dir_all(scratch).map_err(io(format!("remove {}", scratch.display())))?;
    }
    std::fs::create_dir_all(scratch).map_err(io(format!("create {}", scratch.display())))?;
    let file = scratch.join(FULL_STATE);
    let snapshot = first.snapshot();
    write_full(first, &snapshot, &file, &AtomicBool::new(false))?;
    let mut files = vec![(file, FULL_STATE.to_string())];
    for (i, backend) in others.iter().enumerate() {
        let op = format!("op{}", i + 1);
        let dir = scratch.join(&op);
        std::fs::create_dir_all(&dir).map_err(io(format!("create {}", dir.display())))?;
        let file = dir.join(FULL_STATE);
        let snapshot = backend.snapshot();
        write_full(backend, &snapshot, &file, &AtomicBool::new(false))?;
        files.push((file, format!("{op}/{FULL_STATE}")));
    }
    Ok((CheckpointKind::Full, files))
}

/// Wall-clock time, epoch ms.
pub(super) fn epoch_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// One file of an upload.
pub(super) enum Put {
    /// A local file into the shared folder (referenced if the store holds it).
    Shared(PathBuf, String),
    /// A local file into the checkpoint's own folder.
    Private(PathBuf, String),
    /// A shared file the store holds, referenced.
    Reference(String),
}

/// Runs `puts` on an upload thread; removes `scratch` after.
pub(super) fn spawn_upload(
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
/// A name for this database's new SST files in the shared folder, unique per opening: after a
/// restore RocksDB numbers files again from the checkpoint's numbers, so the bare file name
/// could stand for another content.
pub(super) fn incarnation() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    format!("{:x}{:x}", nanos & 0xffff_ffff_ffff, std::process::id())
}
