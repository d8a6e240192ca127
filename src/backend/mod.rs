//! RocksDB as Flink's state backend: opened from a profile with a shared block cache and
//! WriteBufferManager, statistics on, one column family per state plus the timer queue.

pub mod access;
pub mod keys;
pub mod latency;
pub mod memory;
pub mod metrics;
pub mod oplog;
pub mod options_file;
pub mod perf;
pub mod serializer;
pub mod ttl_filter;

use std::path::{Path, PathBuf};

use rocksdb::{
    BlockBasedIndexType, BlockBasedOptions, ChecksumType, ColumnFamily, ColumnFamilyDescriptor, DB,
    DBCompressionType, Options, ReadOptions, WriteOptions,
};

use crate::config::Profile;
use crate::config::profile::{Compression, Knob, Live};
use crate::config::target::{Checksum, TargetOptions};
pub use access::{AccessCounters, CfOps, ChangeLog, StateAccess, plus_cf_ops, replay_changelog};
use memory::SharedMemory;

/// `MapState<String window, Stats>` of the reference job.
pub const CF_WINDOW_STATS: &str = "window-stats";
/// `MapState<Long timer, Decrement>`: what each timer must decrement.
pub const CF_TIMER_STATE: &str = "timer-state";
/// Flink's RocksDB timer service column family for a KeyedProcessFunction's event-time timers.
pub const CF_TIMERS: &str = "_timer_state/event_user-timers";
/// Its processing-time timers: Flink creates the column family and scans its key-group heads
/// when the timer service starts, though the reference job registers none.
pub const CF_PROCESSING_TIMERS: &str = "_timer_state/processing_user-timers";
/// The frequency counter's column families that hold state and share the WriteBufferManager.
pub const STATE_COLUMN_FAMILIES: [&str; 3] = [CF_WINDOW_STATS, CF_TIMER_STATE, CF_TIMERS];
/// Every column family the frequency counter creates besides RocksDB's default one.
pub const ALL_COLUMN_FAMILIES: [&str; 4] = [
    CF_WINDOW_STATS,
    CF_TIMER_STATE,
    CF_TIMERS,
    CF_PROCESSING_TIMERS,
];
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
    /// The shared block cache and WriteBufferManager (resizing them resizes RocksDB's).
    memory: SharedMemory,
    /// Processing time for the TTL compaction filter.
    ttl_clock: ttl_filter::TtlClock,
    /// Emulate FRocksDB 6.20's WriteBufferManager flush choice before every write.
    wbm_switches_pending_flush: bool,
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
}

fn compression(c: Compression) -> DBCompressionType {
    match c {
        Compression::None => DBCompressionType::None,
        Compression::Snappy => DBCompressionType::Snappy,
        Compression::Lz4 => DBCompressionType::Lz4,
        Compression::Lz4hc => DBCompressionType::Lz4hc,
        Compression::Zstd => DBCompressionType::Zstd,
        Compression::Zlib => DBCompressionType::Zlib,
        Compression::Bzip2 => DBCompressionType::Bz2,
    }
}

/// Column-family options as Flink's RocksDBResourceContainer builds them with managed memory
/// (the shared cache is installed afterwards by [`SharedMemory::install_table`]).
fn column_family_options(profile: &Profile, target: &TargetOptions) -> Options {
    let k = &profile.knobs;
    let mut opts = Options::default();
    opts.set_write_buffer_size(k.write_buffer_size.0 as usize);
    opts.set_arena_block_size(target.arena_block_size as usize);
    opts.set_max_write_buffer_number(k.max_write_buffer_number as i32);
    opts.set_min_write_buffer_number_to_merge(k.min_write_buffer_number_to_merge as i32);
    opts.set_target_file_size_base(k.target_file_size_base.0);
    opts.set_max_bytes_for_level_base(k.max_bytes_for_level_base.0);
    opts.set_max_bytes_for_level_multiplier(k.max_bytes_for_level_multiplier);
    opts.set_level_compaction_dynamic_level_bytes(k.dynamic_level_bytes);
    let levels: Vec<DBCompressionType> = (0..7)
        .map(|l| compression(k.compression_for_level(l)))
        .collect();
    opts.set_compression_per_level(&levels);
    opts.set_level_zero_slowdown_writes_trigger(k.level0_slowdown_writes_trigger as i32);
    opts.set_level_zero_stop_writes_trigger(k.level0_stop_writes_trigger as i32);
    opts.set_soft_pending_compaction_bytes_limit(k.soft_pending_compaction_bytes_limit.0 as usize);
    opts.set_hard_pending_compaction_bytes_limit(k.hard_pending_compaction_bytes_limit.0 as usize);
    opts.set_disable_auto_compactions(k.disable_auto_compactions);

    let mut table = BlockBasedOptions::default();
    table.set_block_size(k.block_size.0 as usize);
    table.set_metadata_block_size(k.metadata_block_size.0 as usize);
    table.set_format_version(target.format_version);
    table.set_checksum_type(match target.checksum {
        Checksum::Crc32c => ChecksumType::CRC32c,
        Checksum::Xxh3 => ChecksumType::XXH3,
    });
    table.set_optimize_filters_for_memory(target.optimize_filters_for_memory);
    // Flink with managed memory: index and filters live in (and are charged to) the cache,
    // with high priority, and L0's are pinned.
    table.set_cache_index_and_filter_blocks(true);
    table.set_cache_index_and_filter_blocks_with_high_priority(true);
    table.set_pin_l0_filter_and_index_blocks_in_cache(true);
    if let Some(bits) = k.effective_bloom_bits_per_key() {
        table.set_bloom_filter(bits, false);
    }
    if k.partitioned_index_filters {
        table.set_index_type(BlockBasedIndexType::TwoLevelIndexSearch);
        table.set_partition_filters(true);
        table.set_pin_top_level_index_and_filter(true);
    }
    opts.set_block_based_table_factory(&table);
    opts
}

impl StateBackend {
    /// Opens (creating if needed) the frequency counter's state backend at `path` with
    /// `profile`'s options and no state TTL.
    pub fn open(path: &Path, profile: &Profile) -> Result<StateBackend, BackendError> {
        Self::open_with_ttl(path, profile, None)
    }

    /// Opens the frequency counter's state backend for a job whose timerState has a TTL of
    /// `state_ttl` ms (processing time): with the target's TTL compaction filter, as Flink
    /// attaches it.
    pub fn open_with_ttl(
        path: &Path,
        profile: &Profile,
        state_ttl: Option<i64>,
    ) -> Result<StateBackend, BackendError> {
        let spec = crate::config::job::frequency::FrequencySpec {
            windows: Vec::new(),
            timer_state_ttl: state_ttl.map(|t| crate::config::Millis(t.max(0) as u64)),
        };
        Self::open_for(
            path,
            profile,
            &crate::pipeline::operators::frequency::layout(&spec),
        )
    }

    /// Opens (creating if needed) the state backend of an operator with `layout`'s column
    /// families, each with `profile`'s options, as Flink's RocksDB backend creates them.
    pub fn open_for(
        path: &Path,
        profile: &Profile,
        layout: &crate::pipeline::operators::Layout,
    ) -> Result<StateBackend, BackendError> {
        use crate::pipeline::operators::CfRole;
        // HEAP timers: no column families for the timer service.
        let layout = &crate::pipeline::timers::rocksdb_layout(layout, &profile.knobs);
        let data_cfs = layout.data_cfs();
        let derived = profile.derived(data_cfs.len());
        let target = profile.target_options();
        let k = &profile.knobs;
        let memory = SharedMemory::new(
            derived.block_cache_capacity,
            k.high_prio_pool_ratio,
            derived.write_buffer_manager_capacity,
        )?;
        let clock = ttl_filter::TtlClock::default();
        // Each TTL state's TTL and whether the compaction filter cleans it (the advisor's).
        let ttl_states: Vec<(String, i64, bool)> = layout
            .cfs
            .iter()
            .filter_map(|c| match c.role {
                CfRole::State { ttl: Some(t), .. } => Some((
                    c.name.clone(),
                    t.ttl_ms,
                    t.compaction_filter && target.ttl_compaction_filter,
                )),
                _ => None,
            })
            .collect();
        let cf_options = |name: &str| -> Result<Options, BackendError> {
            let mut opts = column_family_options(profile, &target);
            memory.install_table(&mut opts, target.decouple_partitioned_filters)?;
            // Flink sets its list merge operator on every column family; set here only where a
            // state merges (ListState), so the OPTIONS file of a job without one stays
            // FRocksDB's loadable default (`nullptr`; options-explained.txt says why).
            let merges = layout
                .cfs
                .iter()
                .any(|c| c.name == name && matches!(c.role, CfRole::State { merge: true, .. }));
            if merges {
                opts.set_merge_operator_associative(MERGE_OPERATOR_NAME, string_append);
            }
            let ttl = layout
                .cfs
                .iter()
                .find(|c| c.name == name)
                .and_then(|c| match c.role {
                    CfRole::State { ttl, .. } => ttl,
                    _ => None,
                });
            if let Some(ttl) = ttl.filter(|t| t.compaction_filter && target.ttl_compaction_filter) {
                let config = ttl_filter::TtlFilterConfig {
                    ttl_ms: ttl.ttl_ms,
                    query_time_after: ttl.query_time_after,
                    layout: ttl.layout,
                };
                ttl_filter::install(&mut opts, config, clock.clone());
            }
            Ok(opts)
        };
        let mut opts = cf_options(rocksdb::DEFAULT_COLUMN_FAMILY_NAME)?;
        opts.create_if_missing(true);
        opts.create_missing_column_families(true);
        opts.enable_statistics();
        opts.set_max_background_jobs(k.background_jobs as i32);
        opts.set_use_direct_reads(k.use_direct_reads);
        opts.set_use_direct_io_for_flush_and_compaction(k.use_direct_io_for_flush_and_compaction);
        opts.set_compaction_readahead_size(target.compaction_readahead_size as usize);
        memory.install_write_buffer_manager(&mut opts);
        if target.wbm_switches_pending_flush {
            memory.track_seals(&mut opts);
        }
        opts.set_max_open_files(-1);
        if k.io_rate_limit.0 > 0 {
            // RocksDB's defaults: 100 ms refill period, fairness 10; limits flush and compaction writes.
            opts.set_ratelimiter(k.io_rate_limit.0 as i64, 100_000, 10);
        }
        opts.set_stats_dump_period_sec(0);
        // Flink gives every column family, the unused default one included, the same options.
        let cf_names = layout.names();
        let descriptors = std::iter::once(rocksdb::DEFAULT_COLUMN_FAMILY_NAME)
            .chain(cf_names.iter().map(String::as_str))
            .map(|name| Ok(ColumnFamilyDescriptor::new(name, cf_options(name)?)))
            .collect::<Result<Vec<_>, BackendError>>()?;
        let db = DB::open_cf_descriptors(&opts, path, descriptors).map_err(|e| {
            // RocksDB's words for a LOCK file another process ("While lock file: …/LOCK: …")
            // or this one ("lock hold by current process … /LOCK: …") holds.
            if e.kind() == rocksdb::ErrorKind::IOError && e.as_ref().contains("/LOCK: ") {
                BackendError::InUse(path.to_path_buf())
            } else {
                BackendError::RocksDb(e)
            }
        })?;
        if target.wbm_switches_pending_flush {
            // In creation order: the order RocksDB iterates column families in.
            let handles = std::iter::once(rocksdb::DEFAULT_COLUMN_FAMILY_NAME)
                .chain(cf_names.iter().map(String::as_str))
                .map(|name| {
                    db.cf_handle(name)
                        .ok_or_else(|| BackendError::MissingColumnFamily(name.to_string()))
                })
                .collect::<Result<Vec<_>, BackendError>>()?;
            memory.attach(&db, &handles)?;
        }
        let mut write_opts = WriteOptions::default();
        // Flink's state backend writes without a WAL: checkpoints provide durability.
        write_opts.disable_wal(true);
        Ok(StateBackend {
            db,
            opts,
            memory,
            ttl_clock: clock,
            wbm_switches_pending_flush: target.wbm_switches_pending_flush,
            write_opts,
            read_opts: ReadOptions::default(),
            path: path.to_path_buf(),
            cf_names,
            data_cfs,
            timers: (
                k.timer_service_factory,
                k.timer_service_cache_size.max(1) as usize,
            ),
            ttl_states,
        })
    }

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
        self.wbm_switches_pending_flush && self.memory.switch_as_frocksdb_620()
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

    pub fn cf(&self, name: &str) -> Result<&ColumnFamily, BackendError> {
        self.db
            .cf_handle(name)
            .ok_or_else(|| BackendError::MissingColumnFamily(name.to_string()))
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
            Live::Memory => return self.resize_memory(profile),
            Live::ColumnFamily => {}
        }
        let options: Vec<(&str, String)> = options_file::cf_options(&profile.knobs)
            .into_iter()
            .filter(|o| o.knob == knob)
            .map(|o| (o.option, o.value))
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
