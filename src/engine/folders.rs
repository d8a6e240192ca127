//! A run's data directory and its job's databases: where each part lives, opening the job's
//! RocksDB instances on the slot's shared memory, and whether they hold state yet. Read by the
//! phases, recovery and a start from a preload's base alike.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::EngineError;
use super::run::Run;
use crate::backend::StateBackend;
use crate::backend::memory::SharedMemory;
use crate::pipeline::operators;
use crate::util::fs::parent_dir;

/// The RocksDB directory of a run: a caller's folder, or a temporary one removed afterwards.
pub enum DataDir {
    Given(PathBuf),
    Temporary(tempfile::TempDir),
}

/// Why `--data-dir` cannot serve: a usage error (`Usage`, the user chooses another folder), or
/// the file system's.
#[derive(Debug, thiserror::Error)]
pub enum DataDirError {
    #[error("{0}")]
    Usage(String),
    #[error("{what}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
}

impl DataDir {
    /// `dir` made ready for a run (created if new, refused if it holds something and `reuse`
    /// is off), or a new temporary directory.
    pub fn prepare(dir: Option<&Path>, reuse: bool) -> Result<DataDir, DataDirError> {
        let io = |what: String| move |source| DataDirError::Io { what, source };
        let Some(dir) = dir else {
            let tmp = tempfile::Builder::new()
                .prefix("statebench-")
                .tempdir()
                .map_err(io("cannot create a temporary data directory".to_string()))?;
            return Ok(DataDir::Temporary(tmp));
        };
        if dir.exists() {
            if !dir.is_dir() {
                return Err(DataDirError::Usage(format!(
                    "--data-dir {} exists and is not a directory",
                    dir.display()
                )));
            }
            let non_empty = std::fs::read_dir(dir)
                .map_err(io(format!("cannot read --data-dir {}", dir.display())))?
                .next()
                .is_some();
            if non_empty && !reuse {
                return Err(DataDirError::Usage(format!(
                    "--data-dir {} is not empty; pass --reuse to run on its existing state, or choose an empty or new directory",
                    dir.display()
                )));
            }
        } else {
            // A new directory, but not a new tree: a mistyped parent must not silently appear.
            let parent = parent_dir(dir);
            if !parent.is_dir() {
                return Err(DataDirError::Usage(format!(
                    "--data-dir {}: its parent folder {} does not exist (create it first, or give an existing place)",
                    dir.display(),
                    parent.display()
                )));
            }
            std::fs::create_dir(dir)
                .map_err(io(format!("cannot create --data-dir {}", dir.display())))?;
        }
        Ok(DataDir::Given(dir.to_path_buf()))
    }

    pub fn path(&self) -> &Path {
        match self {
            DataDir::Given(p) => p,
            DataDir::Temporary(t) => t.path(),
        }
    }
}

/// The data directory's parts: RocksDB's working directory (the task's local state), the
/// broker's committed offsets, the checkpoint store (standing in for HDFS/S3), the sink's
/// journal, and scratch space for snapshots.
pub(super) fn db_dir(data_dir: &Path) -> PathBuf {
    data_dir.join("db")
}

pub(super) fn broker_file(data_dir: &Path) -> PathBuf {
    data_dir.join("broker.json")
}

pub(super) fn checkpoint_dir(data_dir: &Path) -> PathBuf {
    data_dir.join("checkpoints")
}

pub(super) fn sink_dir(data_dir: &Path) -> PathBuf {
    data_dir.join("sink")
}

pub(super) fn scratch_dir(data_dir: &Path) -> PathBuf {
    data_dir.join("local-checkpoints")
}

pub(super) fn restore_dir(data_dir: &Path) -> PathBuf {
    data_dir.join("restoring")
}

/// The databases of a job: one RocksDB instance per operator, the first at `dir`, operator
/// i >= 1's beside it at `<dir>-op<i>`.
pub(super) fn db_dirs(run: &Run, dir: &Path) -> Vec<PathBuf> {
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    (0..run.config.workload.operators().len())
        .map(|i| match i {
            0 => dir.to_path_buf(),
            i => dir.with_file_name(format!("{name}-op{i}")),
        })
        .collect()
}

/// Opens the job's databases (see [`db_dirs`]), all on the slot's one shared block cache and
/// WriteBufferManager, sized from the profile as for a single instance. Flink:
/// `ManagedMemoryUseCase.STATE_BACKEND` has slot scope, and every RocksDB keyed state backend of
/// the slot gets the same `RocksDBSharedResources` from
/// `MemoryManager.getSharedMemoryResourceForManagedMemory` (through
/// `RocksDBOperationUtils.allocateSharedCachesIfConfigured`), sized by the slot's managed memory.
pub(super) fn open_backends(run: &Run, dir: &Path) -> Result<Vec<Arc<StateBackend>>, EngineError> {
    let profile = run.live.profile();
    let memory = Arc::new(SharedMemory::for_profile(profile)?);
    let specs = run.config.workload.operators();
    db_dirs(run, dir)
        .iter()
        .zip(&specs)
        .map(|(path, spec)| {
            Ok(Arc::new(StateBackend::open_shared(
                path,
                profile,
                &operators::layout(spec),
                &memory,
            )?))
        })
        .collect()
}

/// The shared folder of checkpoint `dir`: its store's (`<store>/chk-N` -> `<store>/shared`);
/// `default` for a savepoint (self-contained).
pub(super) fn shared_of(dir: &Path, default: &Path) -> PathBuf {
    let is_checkpoint = dir
        .file_name()
        .is_some_and(|n| n.to_string_lossy().starts_with("chk-"));
    match dir.parent() {
        Some(store) if is_checkpoint => store.join("shared"),
        _ => default.to_path_buf(),
    }
}

/// True when no column family that holds job state, in any of the job's databases, has a key
/// yet.
pub(super) fn state_is_empty(backends: &[Arc<StateBackend>]) -> bool {
    backends.iter().all(|b| one_is_empty(b))
}

fn one_is_empty(backend: &StateBackend) -> bool {
    backend
        .data_column_families()
        .iter()
        .all(|cf| backend.estimated_keys(cf).unwrap_or(0) == 0)
}
