//! Opening a state backend: Flink's column-family and DB options for a profile, on the slot's
//! shared managed memory.

use std::path::Path;
use std::sync::Arc;

use rocksdb::{
    BlockBasedIndexType, BlockBasedOptions, ChecksumType, ColumnFamilyDescriptor, DB,
    DBCompressionType, Options, ReadOptions, WriteOptions,
};

use super::memory::{FlushChoice, SharedMemory};
use super::{
    BackendError, CfOptions, MERGE_OPERATOR_NAME, StateBackend, string_append, ttl_filter,
};
use crate::config::Profile;
use crate::config::profile::{Compression, Knobs, RocksOption, Section, in_section};
use crate::config::target::{Checksum, TargetOptions};
use crate::config::timer_service::TimerFactory;
use crate::model::layout::{self, CfRole, Layout};

impl SharedMemory {
    /// The slot's managed memory as Flink sizes it from `profile`
    /// (RocksDBMemoryControllerUtils: the cache and the WriteBufferManager from managed memory
    /// and the write-buffer ratio, whatever the number of instances that share them).
    pub fn for_profile(profile: &Profile) -> Result<SharedMemory, BackendError> {
        if !profile.knobs.memory_mode.is_shared() {
            return SharedMemory::unshared(profile.knobs.block_cache_size.0);
        }
        let derived = profile.derived(1);
        SharedMemory::new(
            derived.block_cache_capacity,
            profile.knobs.high_prio_pool_ratio,
            derived.write_buffer_manager_capacity,
        )
    }
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

/// Options as Flink's RocksDBResourceContainer builds them, with shared memory or without (the
/// cache is installed afterwards by [`SharedMemory::install_table`]): every row of the knobs'
/// RocksDB options in `sections` (DBOptions for the database's options, CFOptions and the
/// table's for every column family's).
fn rocksdb_options(profile: &Profile, target: &TargetOptions, sections: &[Section]) -> Options {
    let mut opts = Options::default();
    let mut table = BlockBasedOptions::default();
    for option in sections.iter().flat_map(|s| in_section(*s)) {
        set(option.option, &profile.knobs, target, &mut opts, &mut table);
    }
    opts.set_block_based_table_factory(&table);
    opts
}

/// The sections of a column family's options.
const COLUMN_FAMILY: [Section; 2] = [Section::Cf, Section::Table];

/// Sets `option` to the value `k` and the target give it, on options `opts` (its DBOptions or
/// CFOptions row) or table options `table`: one arm per RocksDB option a knob sets, as
/// `config::profile::ROCKSDB_OPTIONS` names it (`options_file::verify` checks each in the
/// OPTIONS file RocksDB writes).
fn set(
    option: RocksOption,
    k: &Knobs,
    target: &TargetOptions,
    opts: &mut Options,
    table: &mut BlockBasedOptions,
) {
    // Flink with shared memory: index and filters live in (and are charged to) the cache,
    // with high priority, and L0's are pinned. Without, RocksDB's defaults: table readers hold
    // them outside any cache.
    let shared = k.memory_mode.is_shared();
    match option {
        RocksOption::UseDirectReads => opts.set_use_direct_reads(k.use_direct_reads),
        RocksOption::UseDirectIoForFlushAndCompaction => opts
            .set_use_direct_io_for_flush_and_compaction(k.use_direct_io_for_flush_and_compaction),
        RocksOption::MaxBackgroundJobs => opts.set_max_background_jobs(k.background_jobs as i32),
        RocksOption::MaxOpenFiles => opts.set_max_open_files(k.max_open_files),
        RocksOption::CompactionReadaheadSize => {
            opts.set_compaction_readahead_size(target.compaction_readahead_size as usize)
        }
        RocksOption::WriteBufferSize => opts.set_write_buffer_size(k.write_buffer_size.0 as usize),
        RocksOption::ArenaBlockSize => opts.set_arena_block_size(target.arena_block_size as usize),
        RocksOption::MaxWriteBufferNumber => {
            opts.set_max_write_buffer_number(k.max_write_buffer_number as i32)
        }
        RocksOption::MinWriteBufferNumberToMerge => {
            opts.set_min_write_buffer_number_to_merge(k.min_write_buffer_number_to_merge as i32)
        }
        RocksOption::TargetFileSizeBase => {
            opts.set_target_file_size_base(k.target_file_size_base.0)
        }
        RocksOption::MaxBytesForLevelBase => {
            opts.set_max_bytes_for_level_base(k.max_bytes_for_level_base.0)
        }
        RocksOption::MaxBytesForLevelMultiplier => {
            opts.set_max_bytes_for_level_multiplier(k.max_bytes_for_level_multiplier)
        }
        RocksOption::LevelCompactionDynamicLevelBytes => {
            opts.set_level_compaction_dynamic_level_bytes(k.dynamic_level_bytes)
        }
        RocksOption::Level0SlowdownWritesTrigger => {
            opts.set_level_zero_slowdown_writes_trigger(k.level0_slowdown_writes_trigger as i32)
        }
        RocksOption::Level0StopWritesTrigger => {
            opts.set_level_zero_stop_writes_trigger(k.level0_stop_writes_trigger as i32)
        }
        RocksOption::SoftPendingCompactionBytesLimit => opts
            .set_soft_pending_compaction_bytes_limit(
                k.soft_pending_compaction_bytes_limit.0 as usize,
            ),
        RocksOption::HardPendingCompactionBytesLimit => opts
            .set_hard_pending_compaction_bytes_limit(
                k.hard_pending_compaction_bytes_limit.0 as usize,
            ),
        RocksOption::DisableAutoCompactions => {
            opts.set_disable_auto_compactions(k.disable_auto_compactions)
        }
        RocksOption::CompressionPerLevel => {
            let levels: Vec<DBCompressionType> = (0..7)
                .map(|l| compression(k.compression_for_level(l)))
                .collect();
            opts.set_compression_per_level(&levels);
        }
        RocksOption::BlockSize => table.set_block_size(k.block_size.0 as usize),
        RocksOption::MetadataBlockSize => {
            table.set_metadata_block_size(k.metadata_block_size.0 as usize)
        }
        // Flink partitions index and filters only with shared memory.
        RocksOption::PartitionFilters => {
            if k.partitions_index_filters() {
                table.set_partition_filters(true);
                table.set_pin_top_level_index_and_filter(true);
            }
        }
        RocksOption::IndexType => {
            if k.partitions_index_filters() {
                table.set_index_type(BlockBasedIndexType::TwoLevelIndexSearch);
            }
        }
        RocksOption::CacheIndexAndFilterBlocks => {
            table.set_cache_index_and_filter_blocks(shared);
            // (true is also RocksDB's default, in 6.20 as in 11: the same either way)
            table.set_cache_index_and_filter_blocks_with_high_priority(true);
        }
        RocksOption::PinL0FilterAndIndexBlocksInCache => {
            table.set_pin_l0_filter_and_index_blocks_in_cache(shared)
        }
        RocksOption::FormatVersion => table.set_format_version(target.format_version),
        RocksOption::Checksum => table.set_checksum_type(match target.checksum {
            Checksum::Crc32c => ChecksumType::CRC32c,
            Checksum::Xxh3 => ChecksumType::XXH3,
        }),
        RocksOption::OptimizeFiltersForMemory => {
            table.set_optimize_filters_for_memory(target.optimize_filters_for_memory)
        }
        // Set where the table is rebuilt with the cache (`SharedMemory::install_table`).
        RocksOption::DecouplePartitionedFilters => {}
        RocksOption::FilterPolicy => {
            if let Some(bits) = k.effective_bloom_bits_per_key() {
                table.set_bloom_filter(bits, false);
            }
        }
    }
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
        Self::open_for(
            path,
            profile,
            &layout::frequency(state_ttl.map(|t| t.max(0))),
        )
    }

    /// Opens (creating if needed) the state backend of an operator with `layout`'s column
    /// families, each with `profile`'s options, as Flink's RocksDB backend creates them, with
    /// managed memory of its own (the only RocksDB instance of its slot).
    pub fn open_for(
        path: &Path,
        profile: &Profile,
        layout: &Layout,
    ) -> Result<StateBackend, BackendError> {
        Self::open_shared(
            path,
            profile,
            layout,
            &Arc::new(SharedMemory::for_profile(profile)?),
        )
    }

    /// Opens (creating if needed) one operator's state backend with `layout`'s column families
    /// on the slot's shared managed memory `memory` (one block cache and WriteBufferManager for
    /// every RocksDB instance of the slot; see [`SharedMemory`]).
    pub fn open_shared(
        path: &Path,
        profile: &Profile,
        layout: &Layout,
        memory: &Arc<SharedMemory>,
    ) -> Result<StateBackend, BackendError> {
        // With HEAP timers, Flink's `HeapPriorityQueueSetFactory` creates no column family for
        // the timer service (its queues live on the heap): the `_timer_state/...` ones are left
        // out. The layout stays what the operator declares; this one place applies the profile.
        let layout = &match profile.knobs.timer_service_factory {
            TimerFactory::RocksDb => layout.clone(),
            TimerFactory::Heap => layout.states_only(),
        };
        let data_cfs = layout.data_cfs();
        let target = profile.target_options();
        let k = &profile.knobs;
        let flush_choice = if memory.is_shared() {
            Some(FlushChoice::new(memory)?)
        } else {
            None
        };
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
        let cf_options = |name: &str, sections: &[Section]| -> Result<Options, BackendError> {
            let mut opts = rocksdb_options(profile, &target, sections);
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
            match ttl.filter(|_| target.ttl_compaction_filter) {
                Some(ttl) if ttl.compaction_filter => {
                    let config = ttl_filter::TtlFilterConfig {
                        ttl_ms: ttl.ttl_ms,
                        query_time_after: ttl.query_time_after,
                        layout: ttl.layout,
                    };
                    ttl_filter::install(&mut opts, config, clock.clone());
                }
                // Flink attaches the factory to every TTL state and configures it only for the
                // compaction-filter cleanup (RocksDbTtlCompactFiltersManager).
                Some(_) => ttl_filter::install_unconfigured(&mut opts),
                None => {}
            }
            Ok(opts)
        };
        let mut opts = cf_options(rocksdb::DEFAULT_COLUMN_FAMILY_NAME, &Section::ALL)?;
        opts.create_if_missing(true);
        opts.create_missing_column_families(true);
        opts.enable_statistics();
        memory.install_write_buffer_manager(&mut opts);
        if let Some(choice) = &flush_choice {
            choice.track_seals(&mut opts);
        }
        if k.io_rate_limit.0 > 0 {
            // RocksDB's defaults: 100 ms refill period, fairness 10; limits flush and compaction writes.
            opts.set_ratelimiter(k.io_rate_limit.0 as i64, 100_000, 10);
        }
        opts.set_stats_dump_period_sec(0);
        // Flink gives every column family, the unused default one included, the same options.
        let cf_names = layout.names();
        // Each state's options, kept for SST files written outside the database (a preload).
        let sst_options = cf_names
            .iter()
            .map(|name| Ok((name.clone(), CfOptions(cf_options(name, &COLUMN_FAMILY)?))))
            .collect::<Result<Vec<_>, BackendError>>()?;
        let descriptors = std::iter::once(ColumnFamilyDescriptor::new(
            rocksdb::DEFAULT_COLUMN_FAMILY_NAME,
            cf_options(rocksdb::DEFAULT_COLUMN_FAMILY_NAME, &COLUMN_FAMILY)?,
        ))
        .chain(
            sst_options
                .iter()
                .map(|(name, o)| ColumnFamilyDescriptor::new(name, o.0.clone())),
        )
        .collect::<Vec<_>>();
        let db = DB::open_cf_descriptors(&opts, path, descriptors).map_err(|e| {
            // RocksDB's words for a LOCK file another process ("While lock file: …/LOCK: …")
            // or this one ("lock hold by current process … /LOCK: …") holds.
            if e.kind() == rocksdb::ErrorKind::IOError && e.as_ref().contains("/LOCK: ") {
                BackendError::InUse(path.to_path_buf())
            } else {
                BackendError::RocksDb(e)
            }
        })?;
        if let Some(choice) = &flush_choice {
            // In creation order: the order RocksDB iterates column families in.
            let handles = std::iter::once(rocksdb::DEFAULT_COLUMN_FAMILY_NAME)
                .chain(cf_names.iter().map(String::as_str))
                .map(|name| {
                    db.cf_handle(name)
                        .ok_or_else(|| BackendError::MissingColumnFamily(name.to_string()))
                })
                .collect::<Result<Vec<_>, BackendError>>()?;
            choice.attach(&db, &handles)?;
        }
        let mut write_opts = WriteOptions::default();
        // Flink's state backend writes without a WAL: checkpoints provide durability.
        write_opts.disable_wal(true);
        Ok(StateBackend {
            db,
            opts,
            memory: Arc::clone(memory),
            flush_choice,
            switch_as_620: target.wbm_switches_pending_flush,
            ttl_clock: clock,
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
            sst_options,
        })
    }
}
