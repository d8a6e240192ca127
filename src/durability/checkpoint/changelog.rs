//! The changelog state backend (Flink's `ChangelogStateBackend`): every checkpoint uploads the
//! state changes logged since the last one; the state is materialized periodically.

use std::path::PathBuf;
use std::time::Instant;

use super::files::{Put, epoch_ms};
use super::{CheckpointError, CheckpointRecord, Checkpointer, Materialization, Metadata, io};
use crate::config::profile::CheckpointKind;
pub use crate::model::checkpoint::ChangelogStatus;

impl Checkpointer {
    /// Changelog: the state changes since the last checkpoint become a segment; when the
    /// materialization interval has passed (and Flink's rule lets it), this checkpoint also
    /// materializes the state natively, after which new checkpoints need no older segment.
    pub(super) fn changelog_files(
        &mut self,
        id: u64,
        changes: &[u8],
        now: Instant,
        metadata: &mut Metadata,
        record: &mut CheckpointRecord,
    ) -> Result<(Vec<Put>, Option<PathBuf>), CheckpointError> {
        let log = &mut self.changelog;
        // Every change goes into a segment kept locally until a materialization covers it: a
        // failed checkpoint must not lose it.
        if !changes.is_empty() {
            log.seq += 1;
            let name = format!("{}-log{}", self.incarnation, log.seq);
            let path = self.local.join(&name);
            std::fs::write(&path, changes).map_err(io(format!("write {}", path.display())))?;
            log.segments.push((name, Some(path), changes.len() as u64));
        }
        let due = log.base.is_none()
            || now.duration_since(log.last_due) >= self.config.materialize_interval;
        let materialize = due && log.may_materialize();
        if due {
            log.last_due = now;
            if !materialize {
                log.skipped += 1;
            }
        }
        if materialize {
            let mat_id = log.next_id;
            let (puts, dir, files) = self.native_files(id, true)?;
            self.changelog.next_id += 1;
            let m = Materialization {
                id: mat_id,
                files,
                at_epoch_ms: epoch_ms(),
            };
            record.materialization_id = Some(mat_id);
            metadata.materialization = Some(m);
            return Ok((puts, Some(dir)));
        }
        let log = &self.changelog;
        let mut puts = Vec::new();
        for (name, local, size) in &log.segments {
            record.changelog_bytes += size;
            puts.push(match local {
                Some(path) => Put::Shared(path.clone(), name.clone()),
                None => Put::Reference(name.clone()),
            });
            metadata.changelog.push(name.clone());
        }
        if let Some(base) = &log.base {
            record.materialization_id = Some(base.id);
            puts.extend(base.files.keys().map(|n| Put::Reference(n.clone())));
            metadata.materialization = Some(base.clone());
        }
        Ok((puts, None))
    }
    /// A changelog checkpoint completed: its materialization is confirmed; a new one becomes
    /// the base, and the segments it covers are dropped (the store deletes them once no
    /// retained checkpoint references them).
    pub(super) fn on_changelog_complete(
        &mut self,
        metadata: &Metadata,
        materializing: bool,
        record: &mut CheckpointRecord,
    ) {
        let log = &mut self.changelog;
        let Some(m) = &metadata.materialization else {
            return;
        };
        log.last_confirmed = log.last_confirmed.max(m.id);
        if materializing {
            record.materialized_bytes = record.bytes;
            for (_, local, _) in log.segments.drain(..) {
                if let Some(path) = local {
                    let _ = std::fs::remove_file(path);
                }
            }
            log.base = Some(m.clone());
        } else {
            // Stored now: later checkpoints reference the segments.
            for (name, local, _) in &mut log.segments {
                if metadata.changelog.contains(name)
                    && let Some(path) = local.take()
                {
                    let _ = std::fs::remove_file(path);
                }
            }
        }
    }
    /// The changelog backend's bookkeeping, for metrics: materializations skipped, the base's
    /// age and the log's size since it.
    pub fn changelog_status(&self) -> Option<ChangelogStatus> {
        (self.config.kind == CheckpointKind::Changelog).then(|| ChangelogStatus {
            materialization_id: self.changelog.base.as_ref().map(|b| b.id),
            materialization_lag_secs: self.changelog.base.as_ref().map_or(0.0, |b| {
                epoch_ms().saturating_sub(b.at_epoch_ms) as f64 / 1e3
            }),
            changelog_bytes: self.changelog.segments.iter().map(|s| s.2).sum(),
            skipped: self.changelog.skipped,
            next_id: self.changelog.next_id,
            last_confirmed: self.changelog.last_confirmed,
        })
    }
}

/// The changelog backend's own state: what new checkpoints build on, and Flink's
/// materialization-id bookkeeping.
#[derive(Debug)]
pub(super) struct ChangelogState {
    pub(super) base: Option<Materialization>,
    /// Segments since `base`: shared name, and the local file until a checkpoint stored it.
    pub(super) segments: Vec<(String, Option<PathBuf>, u64)>,
    /// The id the next materialization gets (Flink's `materializedId`).
    pub(super) next_id: u64,
    pub(super) last_confirmed: u64,
    pub(super) last_failed: u64,
    /// When the periodic materialization last came due.
    pub(super) last_due: Instant,
    /// Materializations skipped because the previous one was never confirmed.
    pub skipped: u64,
    seq: u64,
}

impl ChangelogState {
    pub(super) fn new(now: Instant) -> ChangelogState {
        ChangelogState {
            base: None,
            segments: Vec::new(),
            next_id: 1,
            last_confirmed: 0,
            last_failed: 0,
            last_due: now,
            skipped: 0,
            seq: 0,
        }
    }

    /// Flink's `ChangelogKeyedStateBackend#initMaterialization` rule: a new materialization
    /// starts only when the previous one was confirmed by a completed checkpoint, or failed.
    pub(super) fn may_materialize(&self) -> bool {
        let previous = self.next_id - 1;
        self.last_confirmed >= previous || self.last_failed >= previous
    }
}
