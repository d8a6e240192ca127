//! The changelog state backend's log of state changes, and its replay.

use rocksdb::WriteBatch;

use crate::backend::{BackendError, StateBackend};

/// State changes logged for the changelog state backend (Flink's DSTL): each entry is a RocksDB
/// write batch as RocksDB serializes it (column family ids are creation order, the same in a
/// restored database), with a u32 length before it. Puts and deletes gather in one batch until
/// the next timer batch or the checkpoint that takes the log.
#[derive(Default)]
pub struct ChangeLog {
    pub(super) current: WriteBatch,
    segment: Vec<u8>,
    /// Bytes logged since the log was enabled.
    pub total_bytes: u64,
}

impl ChangeLog {
    pub(super) fn seal(&mut self) {
        if !self.current.is_empty() {
            let batch = std::mem::take(&mut self.current);
            self.push(batch.data());
        }
    }

    pub(super) fn push(&mut self, data: &[u8]) {
        self.segment
            .extend_from_slice(&(data.len() as u32).to_le_bytes());
        self.segment.extend_from_slice(data);
        self.total_bytes += 4 + data.len() as u64;
    }

    /// The changes logged since the last call.
    pub fn take(&mut self) -> Vec<u8> {
        self.seal();
        std::mem::take(&mut self.segment)
    }
}

/// Applies a changelog segment (see [`ChangeLog`]) to `backend`; returns the batches applied.
pub fn replay_changelog(backend: &StateBackend, segment: &[u8]) -> Result<u64, BackendError> {
    let mut rest = segment;
    let mut batches = 0;
    while !rest.is_empty() {
        let Some((len, tail)) = rest.split_first_chunk::<4>() else {
            return Err(BackendError::Changelog(format!(
                "{} stray bytes at the end of a segment",
                rest.len()
            )));
        };
        let len = u32::from_le_bytes(*len) as usize;
        if tail.len() < len {
            return Err(BackendError::Changelog(format!(
                "an entry of {len} bytes with {} left",
                tail.len()
            )));
        }
        let (data, next) = tail.split_at(len);
        backend
            .db
            .write_opt(WriteBatch::from_data(data), &backend.write_opts)?;
        batches += 1;
        rest = next;
    }
    Ok(batches)
}
