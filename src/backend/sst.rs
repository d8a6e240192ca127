//! SST files written outside the database and adopted by it (a preload's base): written with
//! a column family's own options, ingested, moved to the level they belong in, and read back.

use std::path::{Path, PathBuf};

use rocksdb::{
    BottommostLevelCompaction, CompactOptions, IngestExternalFileOptions, Options, ReadOptions,
    SstFileWriter,
};

use super::{BackendError, Cf, StateBackend};

/// A column family's options as the database was opened with them
/// ([`StateBackend::cf_options`]): SST files written outside it use them.
pub struct CfOptions(pub(super) Options);

/// One SST file being written; keys must come in ascending order.
pub struct SstWriter<'o>(SstFileWriter<'o>);

impl<'o> SstWriter<'o> {
    /// Starts the file at `path`, written with `options`.
    pub fn create(options: &'o CfOptions, path: &Path) -> Result<Self, BackendError> {
        let writer = SstFileWriter::create(&options.0);
        writer.open(path)?;
        Ok(SstWriter(writer))
    }

    pub fn put(&mut self, key: &[u8], value: &[u8]) -> Result<(), BackendError> {
        Ok(self.0.put(key, value)?)
    }

    /// A deletion of `key` (for a level above the one holding it).
    pub fn delete(&mut self, key: &[u8]) -> Result<(), BackendError> {
        Ok(self.0.delete(key)?)
    }

    /// Bytes written so far.
    pub fn file_size(&self) -> u64 {
        self.0.file_size()
    }

    /// Completes the file.
    pub fn finish(&mut self) -> Result<(), BackendError> {
        Ok(self.0.finish()?)
    }
}

impl StateBackend {
    /// Ingests SST `files` into `cf`, moving them (RocksDB adopts the files, nothing is
    /// copied).
    pub fn ingest(&self, cf: &Cf, files: Vec<PathBuf>) -> Result<(), BackendError> {
        let mut opts = IngestExternalFileOptions::default();
        opts.set_move_files(true);
        Ok(self
            .db
            .ingest_external_file_cf_opts(cf.raw(), &opts, files)?)
    }

    /// Moves `cf`'s files (all in the last level after an ingest into an empty database) to
    /// `level` without rewriting them: a manual compaction that skips the bottommost level and
    /// then refits its files to the target level.
    pub fn move_to_level(&self, cf: &Cf, level: u32) {
        let mut opts = CompactOptions::default();
        opts.set_change_level(true);
        opts.set_target_level(level as i32);
        opts.set_bottommost_level_compaction(BottommostLevelCompaction::Skip);
        opts.set_exclusive_manual_compaction(true);
        self.db
            .compact_range_cf_opt(cf.raw(), None::<&[u8]>, None::<&[u8]>, &opts);
    }

    /// Calls `each` with every key and value of `cf`, in key order, read ahead 4 MiB at a time
    /// and without filling the block cache (the whole state read once, to be written again).
    pub fn read_all(
        &self,
        cf: &Cf,
        mut each: impl FnMut(&[u8], &[u8]) -> Result<(), BackendError>,
    ) -> Result<(), BackendError> {
        let mut read = ReadOptions::default();
        read.fill_cache(false);
        read.set_readahead_size(4 << 20);
        let mut it = self.db.raw_iterator_cf_opt(cf.raw(), read);
        it.seek_to_first();
        while let (Some(key), Some(value)) = (it.key(), it.value()) {
            each(key, value)?;
            it.next();
        }
        Ok(it.status()?)
    }
}
