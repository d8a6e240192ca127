//! What checkpoints and savepoints take of the database, and give back on a restore: a
//! snapshot read in key order, RocksDB's own checkpoint, its live SST files, and batches
//! written outside the job's counted state access.

use std::path::Path;

use rocksdb::{IteratorMode, ReadOptions};

use super::{BackendError, Batch, Cf, StateBackend};

/// A consistent view of the database at one moment (RocksDB's snapshot): what a full
/// checkpoint writes while the job goes on.
pub struct Snapshot<'a>(rocksdb::Snapshot<'a>);

/// One SST file RocksDB holds now: where it is in the LSM tree.
#[derive(Debug, Clone)]
pub struct SstFile {
    pub name: String,
    pub size: u64,
    pub level: i32,
}

impl StateBackend {
    /// The database as it is now, for reading while writes go on.
    pub fn snapshot(&self) -> Snapshot<'_> {
        Snapshot(self.db.snapshot())
    }

    /// Calls `each` with every key and value of `cf` as `snapshot` sees them, in key order.
    /// The scan does not fill the block cache: it should not push the job's hot blocks out.
    pub fn for_each_in_snapshot<E: From<BackendError>>(
        &self,
        snapshot: &Snapshot<'_>,
        cf: &Cf,
        mut each: impl FnMut(&[u8], &[u8]) -> Result<(), E>,
    ) -> Result<(), E> {
        let mut opts = ReadOptions::default();
        opts.set_snapshot(&snapshot.0);
        opts.fill_cache(false);
        for item in self.db.iterator_cf_opt(cf.raw(), opts, IteratorMode::Start) {
            let (key, value) = item.map_err(BackendError::from)?;
            each(&key, &value)?;
        }
        Ok(())
    }

    /// Writes `batch` with the state's write options, outside the job's counted state access
    /// (a restore).
    pub fn write(&self, batch: Batch) -> Result<(), BackendError> {
        Ok(self.db.write_opt(batch.0, &self.write_opts)?)
    }

    /// RocksDB writes a checkpoint of its own into `dir` (which must not exist): memtables
    /// flushed, SST files hard-linked.
    pub fn create_checkpoint(&self, dir: &Path) -> Result<(), BackendError> {
        rocksdb::checkpoint::Checkpoint::new(&self.db)?.create_checkpoint(dir)?;
        Ok(())
    }

    /// RocksDB's live SST files, by file name (`000123.sst`).
    pub fn live_ssts(&self) -> Result<Vec<SstFile>, BackendError> {
        Ok(self
            .db
            .live_files()?
            .into_iter()
            .map(|f| SstFile {
                name: f.name.trim_start_matches('/').to_string(),
                size: f.size as u64,
                level: f.level,
            })
            .collect())
    }
}
