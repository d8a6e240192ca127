//! The checkpoint store's errors; each names the path concerned.

use std::io;
use std::path::{Path, PathBuf};

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
pub(super) fn io_err(path: &Path, action: &'static str) -> impl FnOnce(io::Error) -> StoreError {
    let path = path.to_path_buf();
    move |source| StoreError::Io {
        path,
        action,
        source,
    }
}
