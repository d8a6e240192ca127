//! What a checkpoint records besides RocksDB's state: the job's position and work, the
//! changelog's materialization, and the checkpoint as the metrics see it.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::CheckpointError;
use super::store::CheckpointStore;
use crate::config::profile::CheckpointKind;
pub use crate::model::checkpoint::{CheckpointRecord, JobWork};
use crate::pipeline::operators::JobCounters;
use crate::pipeline::source::Offsets;

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
    /// The operator's results kept outside its state (`KeyedOperator::results_snapshot`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub results: Vec<(u64, usize, i64)>,
    /// The job's work up to the barrier, over every process it ran in.
    #[serde(default)]
    pub work: JobWork,
    /// A chain's operators after the first, where each stood (absent: a single operator).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub operators: Vec<OperatorMeta>,
    /// Records of preloaded history the job started after (`run --preload`; 0: none): its
    /// offsets are past them, its `processed` counts only the records after.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub preloaded: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Where a chain's operator `index` >= 1 stood at a barrier.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct OperatorMeta {
    pub index: usize,
    pub counters: JobCounters,
    /// Its results kept outside its state (`KeyedOperator::results_snapshot`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub results: Vec<(u64, usize, i64)>,
    /// Records it had received: the next one's offset.
    pub records_in: u64,
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
    /// A chain's operators after the first (1, 2, ...): each one's native shared file name ->
    /// RocksDB's own file name (its private files are in the checkpoint's `op<i>/`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub op_ssts: Vec<BTreeMap<String, String>>,
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

impl Metadata {
    pub fn read(dir: &Path) -> Result<Metadata, CheckpointError> {
        let value = CheckpointStore::read_metadata(dir)?;
        serde_json::from_value(value).map_err(|e| CheckpointError::Metadata {
            dir: dir.display().to_string(),
            why: format!("not a statebench checkpoint's metadata: {e}"),
        })
    }
}
