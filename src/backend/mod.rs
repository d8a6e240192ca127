//! RocksDB as Flink's state backend: opened from a profile with a shared block cache and
//! WriteBufferManager, statistics on, one column family per state plus the timer queue.

pub mod access;
mod cf;
mod checkpoint;
pub mod keys;
pub mod latency;
pub mod memory;
pub mod memstore;
pub mod metrics;
mod open;
pub mod oplog;
pub mod options_file;
pub mod perf;
pub mod serializer;
mod sst;
pub mod ttl_filter;
mod warm;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rocksdb::{DB, Options, ReadOptions, WriteOptions};

use crate::config::Profile;
use crate::config::profile::{Knob, Live, Section};
pub use access::{AccessCounters, CfOps, ChangeLog, StateAccess, plus_cf_ops, replay_changelog};
pub use cf::{Batch, Cf};
pub use checkpoint::{Snapshot, SstFile};
use memory::SharedMemory;
pub use sst::{CfOptions, SstWriter, read_sst};

pub use crate::model::layout::{
    ALL_COLUMN_FAMILIES, CF_PROCESSING_TIMERS, CF_TIMER_STATE, CF_TIMERS, CF_WINDOW_STATS,
    STATE_COLUMN_FAMILIES,
};
/// The merge operator Flink sets on every column family (`RocksDBResourceContainer`) for its
/// ListState: FRocksDB's `StringAppendTESTOperator`, which joins operands with ','.
pub const MERGE_OPERATOR_NAME: &str = "StringAppendTESTOperator";

/// `StringAppendTESTOperator`'s full merge: the existing value and every operand, joined by ','.
fn string_append(
    _key: &[u8],
    existing: Option<&[u8]>,
    operands: &rocksdb::MergeOperands,
) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(
        existing.map_or(0, <[u8]>::len) + operands.iter().map(|o| o.len() + 1).sum::<usize>(),
    );
    if let Some(v) = existing {
        out.extend_from_slice(v);
    }
    for op in operands {
        if !out.is_empty() {
            out.push(b',');
        }
        out.extend_from_slice(op);
    }
    Some(out)
}

#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    // Not a `source`: the message already holds RocksDB's words, and a source would print them
    // twice in an error chain.
    #[error("rocksdb: {0}")]
    RocksDb(rocksdb::Error),
    #[error(
        "the data directory {} is in use by another run (RocksDB's LOCK is held): wait for that run to end, or give another --data-dir",
        .0.display()
    )]
    InUse(PathBuf),
    #[error("column family '{0}' is missing")]
    MissingColumnFamily(String),
    #[error("changelog segment is corrupt: {0}")]
    Changelog(String),
    #[error("{0}")]
    Codec(#[from] serializer::CodecError),
    #[error("cannot set up RocksDB: {0}")]
    Setup(String),
    #[error("corrupt state: {0}")]
    Corrupt(String),
    #[error("'{0}' cannot change on an open database; it needs a restart")]
    NotLive(String),
    #[error("RocksDB did not apply {option}: expected {expected}, {file} has {found}")]
    NotApplied {
        option: String,
        expected: String,
        found: String,
        file: String,
    },
    #[error("cannot read {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

impl From<rocksdb::Error> for BackendError {
    fn from(e: rocksdb::Error) -> Self {
        BackendError::RocksDb(e)
    }
}

/// One RocksDB instance with Flink's options for a profile.
pub struct StateBackend {
    db: DB,
    /// Keeps statistics alive and readable for the life of the DB.
    opts: Options,
    /// The shared block cache and WriteBufferManager (resizing them resizes RocksDB's): the
    /// slot's, shared by every instance of a chain of operators.
    memory: Arc<SharedMemory>,
    /// This instance's seal order and WriteBufferManager flush counts, under a
    /// WriteBufferManager; it switches memtables as FRocksDB 6.20 when `switch_as_620`.
    flush_choice: Option<memory::FlushChoice>,
    switch_as_620: bool,
    /// Processing time for the TTL compaction filter.
    ttl_clock: ttl_filter::TtlClock,
    write_opts: WriteOptions,
    read_opts: ReadOptions,
    path: PathBuf,
    /// The job's column families (RocksDB's default one left out), in creation order.
    cf_names: Vec<String>,
    /// Of those, the ones that hold data (see `Layout::data_cfs`).
    data_cfs: Vec<String>,
    /// `timer-service.factory` and `timer-service.cache-size`.
    timers: (crate::config::timer_service::TimerFactory, usize),
    /// TTL states: column family, TTL (ms), cleaned by the compaction filter.
    ttl_states: Vec<(String, i64, bool)>,
    /// Every column family's options as the database was opened with them (SST files written
    /// outside it, by a preload, use them).
    sst_options: Vec<(String, CfOptions)>,
}

impl StateBackend {
    /// The profile's timer service: its factory and (ROCKSDB) cache size per key group.
    pub fn timer_settings(&self) -> (crate::config::timer_service::TimerFactory, usize) {
        self.timers
    }

    /// `cf`'s state TTL (ms) and whether Flink's compaction filter cleans it; None: no TTL.
    pub fn ttl_of(&self, cf: &str) -> Option<(i64, bool)> {
        self.ttl_states
            .iter()
            .find(|t| t.0 == cf)
            .map(|t| (t.1, t.2))
    }

    /// The job's column families (not RocksDB's default one), in creation order.
    /// Bytes of index blocks and of filter blocks in the SST files of the job's states
    /// (RocksDB's aggregated table properties of each column family that holds state).
    /// Bytes of index and of filter blocks, and entries, in the states' SST files (RocksDB's
    /// aggregated table properties).
    pub fn sst_index_filter_and_entries(&self) -> Result<(u64, u64, u64), BackendError> {
        let mut total = (0, 0, 0);
        for name in &self.data_cfs {
            let text = self
                .db
                .property_value_cf(self.cf(name)?, "rocksdb.aggregated-table-properties")?
                .unwrap_or_default();
            let (index, filter) = metrics::index_and_filter_bytes(&text);
            let entries = metrics::table_property(&text, "# entries").unwrap_or(0.0) as u64;
            total = (total.0 + index, total.1 + filter, total.2 + entries);
        }
        Ok(total)
    }

    /// Column family `name`'s options as the database was opened with them.
    pub fn cf_options(&self, name: &str) -> Option<&CfOptions> {
        self.sst_options
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, o)| o)
    }

    pub fn column_families(&self) -> &[String] {
        &self.cf_names
    }

    /// The column families that hold data: states and event-time timers.
    pub fn data_column_families(&self) -> &[String] {
        &self.data_cfs
    }

    /// Tells the TTL compaction filter the job's processing time (ms).
    pub fn set_processing_time(&self, now: i64) {
        self.ttl_clock.set(now);
    }

    /// What FRocksDB 6.20 does at the start of every write (see `SharedMemory`), when the
    /// profile's target asks for it; true when it switched a memtable.
    pub fn before_write(&self) -> bool {
        self.switch_as_620
            && self
                .flush_choice
                .as_ref()
                .is_some_and(memory::FlushChoice::switch_as_frocksdb_620)
    }

    /// The flushes the WriteBufferManager forced since this database opened, and the memtable
    /// data they wrote (0, 0 without a WriteBufferManager).
    pub fn wbm_flushes(&self) -> (u64, u64) {
        self.flush_choice
            .as_ref()
            .map_or((0, 0), memory::FlushChoice::wbm_flushes)
    }

    /// The read options state lookups use.
    pub fn read_options(&self) -> &ReadOptions {
        &self.read_opts
    }

    /// The write options state writes use (no WAL, as Flink's).
    pub fn write_options(&self) -> &WriteOptions {
        &self.write_opts
    }

    pub fn db(&self) -> &DB {
        &self.db
    }

    pub fn options(&self) -> &Options {
        &self.opts
    }

    /// The shared block cache and WriteBufferManager.
    pub fn memory(&self) -> &SharedMemory {
        &self.memory
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Column family `name` of the job's database.
    pub fn cf(&self, name: &str) -> Result<&Cf, BackendError> {
        self.db
            .cf_handle(name)
            .map(Cf::of)
            .ok_or_else(|| BackendError::MissingColumnFamily(name.to_string()))
    }

    /// RocksDB's estimate of the keys in column family `name` (`rocksdb.estimate-num-keys`);
    /// None when there is no such column family or RocksDB cannot say.
    pub fn estimated_keys(&self, name: &str) -> Option<u64> {
        let cf = self.cf(name).ok()?;
        self.db
            .property_int_value_cf(cf, "rocksdb.estimate-num-keys")
            .ok()
            .flatten()
    }

    /// Bloom bits per key really in the SST files of `cf`: filter bytes * 8 / filter entries,
    /// from RocksDB's aggregated table properties. None without SST files or without a filter.
    pub fn measured_bloom_bits_per_key(&self, cf: &str) -> Result<Option<f64>, BackendError> {
        let text = self
            .db
            .property_value_cf(self.cf(cf)?, "rocksdb.aggregated-table-properties")?;
        Ok(text.and_then(|t| metrics::bloom_bits_from_table_properties(&t)))
    }

    /// Checks the OPTIONS file RocksDB wrote against `profile`: every knob must be in effect.
    pub fn verify_options(
        &self,
        profile: &Profile,
    ) -> Result<Vec<options_file::Mismatch>, BackendError> {
        let Some((_, file)) = self.read_latest_options()? else {
            return Ok(vec![options_file::Mismatch {
                section: "-".into(),
                option: "OPTIONS file".into(),
                expected: "an OPTIONS file in the data directory".into(),
                found: None,
            }]);
        };
        let names: Vec<&str> = self.cf_names.iter().map(String::as_str).collect();
        Ok(options_file::verify(profile, &file, &names))
    }

    /// The newest OPTIONS file's name and contents.
    fn read_latest_options(
        &self,
    ) -> Result<Option<(String, options_file::OptionsFile)>, BackendError> {
        let Some(path) = self.latest_options_file()? else {
            return Ok(None);
        };
        let text = std::fs::read_to_string(&path).map_err(|source| BackendError::Io {
            path: path.clone(),
            source,
        })?;
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        Ok(Some((name, options_file::OptionsFile::parse(&text))))
    }

    /// Applies knob `key` of `profile` to the open database without losing state, and reads
    /// back what RocksDB now runs with: the OPTIONS file RocksDB rewrites on every SetOptions,
    /// or the cache's and the WriteBufferManager's capacity. Returns that evidence.
    pub fn apply_live(&self, profile: &Profile, knob: Knob) -> Result<String, BackendError> {
        match knob.info().live {
            Live::No => return Err(BackendError::NotLive(knob.key().to_string())),
            // Without shared memory there is no budget to resize (memory.mode: unmanaged).
            Live::Memory if !self.memory.is_shared() => {
                return Err(BackendError::Setup(format!(
                    "'{}' sizes the slot's shared memory, which memory.mode: unmanaged does not have",
                    knob.key()
                )));
            }
            Live::Memory => return self.resize_memory(profile),
            Live::ColumnFamily => {}
        }
        let options: Vec<(&str, String)> = knob
            .rocksdb_options()
            .filter(|o| o.section == Section::Cf)
            .map(|o| (o.name, o.value(&profile.knobs)))
            .collect();
        if options.is_empty() {
            return Err(BackendError::NotLive(knob.key().to_string()));
        }
        let settings: Vec<(&str, &str)> = options.iter().map(|(o, v)| (*o, v.as_str())).collect();
        for cf in std::iter::once(rocksdb::DEFAULT_COLUMN_FAMILY_NAME)
            .chain(self.cf_names.iter().map(String::as_str))
        {
            let handle = self
                .db
                .cf_handle(cf)
                .ok_or_else(|| BackendError::Corrupt(format!("column family '{cf}' is missing")))?;
            self.db.set_options_cf(handle, &settings)?;
        }
        let (file_name, file) = self
            .read_latest_options()?
            .ok_or_else(|| BackendError::Corrupt("no OPTIONS file after SetOptions".to_string()))?;
        for cf in &self.cf_names {
            for (option, value) in &options {
                let found = file.cf(cf, option);
                if !found.is_some_and(|f| options_file::same_value(f, value)) {
                    return Err(BackendError::NotApplied {
                        option: option.to_string(),
                        expected: value.clone(),
                        found: found.unwrap_or("nothing").to_string(),
                        file: file_name,
                    });
                }
            }
        }
        let applied: Vec<String> = options.iter().map(|(o, v)| format!("{o}={v}")).collect();
        Ok(format!("{} in {file_name}", applied.join(", ")))
    }

    /// Resizes the shared block cache and the WriteBufferManager to `profile`'s managed memory
    /// split, as Flink would have sized them; returns the capacities RocksDB now reports, or
    /// an error when they are not what was asked.
    fn resize_memory(&self, profile: &Profile) -> Result<String, BackendError> {
        let derived = profile.derived(self.data_cfs.len());
        self.memory.set_cache_capacity(derived.block_cache_capacity);
        self.memory
            .set_write_buffer_manager_capacity(derived.write_buffer_manager_capacity);
        let capacity = self
            .db
            .property_int_value("rocksdb.block-cache-capacity")
            .ok()
            .flatten()
            .unwrap_or(0);
        let wbm = self.memory.write_buffer_manager_capacity();
        if capacity != derived.block_cache_capacity || wbm != derived.write_buffer_manager_capacity
        {
            return Err(BackendError::NotApplied {
                option: "managed memory".to_string(),
                expected: format!(
                    "cache {} + WBM {}",
                    derived.block_cache_capacity, derived.write_buffer_manager_capacity
                ),
                found: format!("cache {capacity} + WBM {wbm}"),
                file: "RocksDB's properties".to_string(),
            });
        }
        Ok(format!(
            "block cache {} (rocksdb.block-cache-capacity), write buffer manager {}",
            crate::config::units::human_bytes(capacity as f64),
            crate::config::units::human_bytes(wbm as f64)
        ))
    }

    /// The newest OPTIONS file RocksDB wrote: what RocksDB really runs with.
    pub fn latest_options_file(&self) -> Result<Option<PathBuf>, BackendError> {
        let entries = std::fs::read_dir(&self.path).map_err(|source| BackendError::Io {
            path: self.path.clone(),
            source,
        })?;
        let mut best: Option<(u64, PathBuf)> = None;
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if let Some(n) = name
                .strip_prefix("OPTIONS-")
                .and_then(|n| n.parse::<u64>().ok())
                && best.as_ref().is_none_or(|(b, _)| n > *b)
            {
                best = Some((n, entry.path()));
            }
        }
        Ok(best.map(|(_, p)| p))
    }
}
