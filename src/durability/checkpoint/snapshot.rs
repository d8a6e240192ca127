//! How a checkpoint holds RocksDB's state, and how it comes back.
//!
//! - **Full** (Flink's `RocksFullSnapshotStrategy`): at the barrier a RocksDB snapshot is taken;
//!   the upload thread iterates it, every key of every state, into one canonical stream —
//!   uncompressed and independent of RocksDB's files, as a canonical savepoint is. Restored by
//!   writing every key into an empty database.
//! - **Native** (Flink's `RocksIncrementalSnapshotStrategy`): at the barrier RocksDB writes a
//!   checkpoint of its own (memtables flushed, SST files hard-linked); its SST files are shared
//!   between checkpoints and only those the store lacks are uploaded. Restored by copying the
//!   files back and opening them.

use std::io::{BufReader, BufWriter, Read, Write};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

pub use crate::backend::SstFile;
use crate::backend::{BackendError, Batch, Snapshot, StateBackend};

/// First bytes of a canonical state stream.
const MAGIC: &[u8; 16] = b"statebench-full1";
/// A key length that ends a column family's entries.
const END_OF_CF: u32 = u32::MAX;
/// Entries written per batch when a full snapshot is restored.
const RESTORE_BATCH: usize = 4096;

/// Errors while writing or reading a state snapshot.
#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    #[error(transparent)]
    Backend(#[from] BackendError),
    #[error("{path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}: not a statebench full snapshot ({why})")]
    Corrupt { path: String, why: String },
    #[error("the snapshot was cancelled")]
    Cancelled,
}

/// What a full snapshot wrote.
#[derive(Debug, Clone, Copy, Default)]
pub struct FullStats {
    pub entries: u64,
    pub bytes: u64,
}

/// Writes every key and value of every state column family, as `snapshot` sees them, to
/// `out` in the canonical format: per column family its name, then `(key, value)` entries with
/// u32 lengths, in key order. Stops with `Cancelled` when `cancel` is set.
pub fn write_full(
    backend: &StateBackend,
    snapshot: &Snapshot<'_>,
    out: &Path,
    cancel: &AtomicBool,
) -> Result<FullStats, SnapshotError> {
    let io = |source| SnapshotError::Io {
        path: out.display().to_string(),
        source,
    };
    let file = std::fs::File::create(out).map_err(io)?;
    let mut w = BufWriter::with_capacity(1 << 20, file);
    let mut stats = FullStats::default();
    let mut put = |w: &mut BufWriter<std::fs::File>, bytes: &[u8]| -> Result<(), SnapshotError> {
        stats.bytes += bytes.len() as u64;
        w.write_all(bytes).map_err(io)
    };
    put(&mut w, MAGIC)?;
    for name in backend.column_families() {
        let cf = backend.cf(name)?;
        put(&mut w, &(name.len() as u32).to_le_bytes())?;
        put(&mut w, name.as_bytes())?;
        let mut n = 0usize;
        backend.for_each_in_snapshot(snapshot, cf, |key, value| {
            if n.is_multiple_of(1024) && cancel.load(Ordering::Relaxed) {
                return Err(SnapshotError::Cancelled);
            }
            n += 1;
            put(&mut w, &(key.len() as u32).to_le_bytes())?;
            put(&mut w, key)?;
            put(&mut w, &(value.len() as u32).to_le_bytes())?;
            put(&mut w, value)?;
            stats.entries += 1;
            Ok(())
        })?;
        put(&mut w, &END_OF_CF.to_le_bytes())?;
    }
    let file = w.into_inner().map_err(|e| io(e.into_error()))?;
    file.sync_all().map_err(io)?;
    Ok(stats)
}

/// Writes a canonical stream back into `backend` (an empty database): every entry of every
/// column family, in batches.
pub fn restore_full(backend: &StateBackend, from: &Path) -> Result<FullStats, SnapshotError> {
    let path = from.display().to_string();
    let io = |source| SnapshotError::Io {
        path: path.clone(),
        source,
    };
    let corrupt = |why: String| SnapshotError::Corrupt {
        path: path.clone(),
        why,
    };
    let file = std::fs::File::open(from).map_err(io)?;
    let mut r = BufReader::with_capacity(1 << 20, file);
    let mut magic = [0u8; 16];
    r.read_exact(&mut magic).map_err(io)?;
    if &magic != MAGIC {
        return Err(corrupt(
            "it does not start with the format's magic".to_string(),
        ));
    }
    let mut stats = FullStats {
        bytes: MAGIC.len() as u64,
        ..FullStats::default()
    };
    let read_u32 = |r: &mut BufReader<std::fs::File>| -> Result<Option<u32>, SnapshotError> {
        let mut b = [0u8; 4];
        match r.read_exact(&mut b) {
            Ok(()) => Ok(Some(u32::from_le_bytes(b))),
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Ok(None),
            Err(e) => Err(io(e)),
        }
    };
    let read_bytes =
        |r: &mut BufReader<std::fs::File>, len: u32| -> Result<Vec<u8>, SnapshotError> {
            let mut v = vec![0u8; len as usize];
            r.read_exact(&mut v).map_err(|e| SnapshotError::Io {
                path: from.display().to_string(),
                source: e,
            })?;
            Ok(v)
        };
    while let Some(name_len) = read_u32(&mut r)? {
        if name_len > 1024 {
            return Err(corrupt(format!("a column family name of {name_len} bytes")));
        }
        let name = String::from_utf8(read_bytes(&mut r, name_len)?)
            .map_err(|_| corrupt("a column family name that is not UTF-8".to_string()))?;
        if !backend.column_families().contains(&name) {
            return Err(corrupt(format!(
                "column family '{name}', which this job does not have"
            )));
        }
        let cf = backend.cf(&name)?;
        stats.bytes += 4 + u64::from(name_len);
        let mut batch = Batch::default();
        loop {
            let Some(key_len) = read_u32(&mut r)? else {
                return Err(corrupt(format!("'{name}' ends without its end marker")));
            };
            stats.bytes += 4;
            if key_len == END_OF_CF {
                break;
            }
            let key = read_bytes(&mut r, key_len)?;
            let Some(value_len) = read_u32(&mut r)? else {
                return Err(corrupt(format!("'{name}' ends inside an entry")));
            };
            let value = read_bytes(&mut r, value_len)?;
            stats.bytes += 4 + u64::from(key_len) + u64::from(value_len);
            batch.put_cf(cf, &key, &value);
            stats.entries += 1;
            if batch.len() >= RESTORE_BATCH {
                let full = std::mem::take(&mut batch);
                backend.write(full)?;
            }
        }
        if !batch.is_empty() {
            backend.write(batch)?;
        }
    }
    Ok(stats)
}

/// RocksDB's live SST files, by file name (`000123.sst`).
pub fn live_ssts(backend: &StateBackend) -> Result<Vec<SstFile>, SnapshotError> {
    Ok(backend.live_ssts()?)
}

#[cfg(test)]
mod tests {
    use rocksdb::IteratorMode;

    use super::*;
    use crate::backend::{ALL_COLUMN_FAMILIES, CF_TIMERS, CF_WINDOW_STATS};
    use crate::config::Profile;

    fn contents(backend: &StateBackend) -> Vec<(String, Vec<u8>, Vec<u8>)> {
        let mut out = Vec::new();
        for name in ALL_COLUMN_FAMILIES {
            let cf = backend.cf(name).unwrap();
            for item in backend.db().iterator_cf(cf, IteratorMode::Start) {
                let (k, v) = item.unwrap();
                out.push((name.to_string(), k.to_vec(), v.to_vec()));
            }
        }
        out
    }

    #[test]
    fn a_full_snapshot_restores_every_key_as_it_was_at_the_snapshot() {
        let dir = tempfile::tempdir().unwrap();
        let profile = Profile::load("flink-default").unwrap();
        let a = StateBackend::open(&dir.path().join("a"), &profile).unwrap();
        let stats = a.cf(CF_WINDOW_STATS).unwrap();
        let timers = a.cf(CF_TIMERS).unwrap();
        for i in 0..10_000u32 {
            a.db().put_cf(stats, i.to_be_bytes(), [7u8; 20]).unwrap();
        }
        a.db().put_cf(timers, b"t", b"").unwrap();
        a.db().flush_cf(stats).unwrap();
        a.db().delete_cf(stats, 5u32.to_be_bytes()).unwrap();
        let snapshot = a.snapshot();
        let expected = contents(&a);
        // Written after the snapshot: not in it.
        a.db().put_cf(stats, b"late", b"x").unwrap();
        let file = dir.path().join("full");
        let written = write_full(&a, &snapshot, &file, &AtomicBool::new(false)).unwrap();
        assert_eq!(written.entries, 10_000);
        assert_eq!(written.bytes, std::fs::metadata(&file).unwrap().len());
        let b = StateBackend::open(&dir.path().join("b"), &profile).unwrap();
        let read = restore_full(&b, &file).unwrap();
        assert_eq!(read.entries, written.entries);
        assert_eq!(contents(&b), expected);
        // A cut-off stream is refused, not half-restored silently.
        let bytes = std::fs::read(&file).unwrap();
        std::fs::write(&file, &bytes[..bytes.len() - 3]).unwrap();
        let c = StateBackend::open(&dir.path().join("c"), &profile).unwrap();
        let err = restore_full(&c, &file).unwrap_err().to_string();
        assert!(err.contains("not a statebench full snapshot"), "{err}");
        let cancelled = write_full(&a, &snapshot, &file, &AtomicBool::new(true));
        assert!(matches!(cancelled, Err(SnapshotError::Cancelled)));
    }
}
