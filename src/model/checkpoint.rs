//! Checkpoints as the metrics see them: each checkpoint's record, the work a job did before a
//! restore, and the changelog backend's bookkeeping.

use serde::{Deserialize, Serialize};

use super::counters::AccessCounters;

/// A job's work over every process it ran in: a restore in a new process carries it on, so
/// that the whole job's rates divide its records (replays included) into its running time, as
/// an unfailed run's do.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct JobWork {
    /// Records processed, replayed ones included.
    pub records: u64,
    /// Of those, read again after a restore.
    pub replayed: u64,
    /// RocksDB operations issued.
    pub ops: AccessCounters,
    /// Running time.
    pub running_secs: f64,
    /// Processes the job ran in.
    pub processes: u32,
}

impl JobWork {
    /// This work followed by `later`'s.
    pub fn plus(&self, later: &JobWork) -> JobWork {
        JobWork {
            records: self.records + later.records,
            replayed: self.replayed + later.replayed,
            ops: self.ops.plus(&later.ops),
            running_secs: self.running_secs + later.running_secs,
            processes: self.processes + later.processes,
        }
    }

    /// RocksDB operations (gets, puts, deletes and batched writes) per record processed.
    pub fn ops_per_record(&self) -> f64 {
        if self.records == 0 {
            0.0
        } else {
            self.ops.total() as f64 / self.records as f64
        }
    }

    /// Records processed per second of running time.
    pub fn records_per_sec(&self) -> f64 {
        if self.running_secs > 0.0 {
            self.records as f64 / self.running_secs
        } else {
            0.0
        }
    }
}

/// One checkpoint as the metrics see it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CheckpointRecord {
    pub id: u64,
    /// full, incremental or changelog.
    pub kind: String,
    /// Run time (s) at the barrier.
    pub started_at_secs: f64,
    /// Time the job's thread stood still for it.
    pub sync_ms: f64,
    /// Time of the upload, from the barrier's end to completion.
    pub async_ms: f64,
    /// Bytes uploaded to the store.
    pub bytes: u64,
    /// Files uploaded.
    pub files: u64,
    /// Shared files referenced without an upload (incremental).
    pub reused_files: u64,
    /// Bytes of SST files new since the last checkpoint written by flushes (new data).
    pub new_flush_bytes: u64,
    /// Bytes of SST files new since the last checkpoint written by compactions (rewritten
    /// data: what makes an incremental checkpoint spike).
    pub new_compaction_bytes: u64,
    /// Why it failed (timeout, upload error); None for a completed one.
    pub failed: Option<String>,
    /// Changelog: bytes of the materialization this checkpoint uploaded (0 when it built on an
    /// earlier one); `bytes` counts them too.
    pub materialized_bytes: u64,
    /// Changelog: bytes of state changes the checkpoint references since its materialization
    /// (what a restore replays; it grows until the next materialization).
    pub changelog_bytes: u64,
    /// Changelog: the materialization id it builds on.
    pub materialization_id: Option<u64>,
}

/// The changelog backend's state for the metrics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ChangelogStatus {
    /// The materialization new checkpoints build on.
    pub materialization_id: Option<u64>,
    /// Run time since it was taken.
    pub materialization_lag_secs: f64,
    /// State changes logged since it (what a restore replays).
    pub changelog_bytes: u64,
    /// Materializations skipped because the previous one was never confirmed.
    pub skipped: u64,
    /// Flink's `materializedId` (the next materialization's) and the last one confirmed.
    pub next_id: u64,
    pub last_confirmed: u64,
}
