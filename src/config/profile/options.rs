//! The RocksDB options the knobs set: one row per option, with the knob that sets it, its
//! section and name in RocksDB's OPTIONS file (and SetOptions), whether FRocksDB 6.20.3 (Flink
//! 1.20's RocksDB) knows it, and the value RocksDB writes for it. Opening a database applies
//! every row (`backend::open`, one match arm per option), `backend::options_file::verify` checks
//! every row in the OPTIONS file RocksDB wrote, live tuning sets a live knob's column-family rows
//! with SetOptions, `diagnose` reads the plain rows back into knobs, and the OPTIONS export for
//! FRocksDB 6.20.3 is tested against the rows' `frocksdb_6_20`.
//!
//! Each knob's Flink key, how else it is set and whether it can change live are its row of the
//! knob table (`knobs`); a knob with no row here sets no RocksDB option (memory is objects — the
//! block cache, the WriteBufferManager, the rate limiter — and the other knobs are Flink's or
//! the job's).

use super::Knob;
use super::knobs::Knobs;
use crate::config::target::TargetOptions;

/// A section of RocksDB's OPTIONS file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Section {
    /// `[DBOptions]`: the database's (SetDBOptions).
    Db,
    /// `[CFOptions "name"]`: each column family's (SetOptions).
    Cf,
    /// `[TableOptions/BlockBasedTable "name"]`: each column family's block-based table.
    Table,
}

impl Section {
    pub const ALL: [Section; 3] = [Section::Db, Section::Cf, Section::Table];

    /// The section's kind, the first word of its header (`[CFOptions "default"]` -> `CFOptions`).
    pub const fn kind(self) -> &'static str {
        match self {
            Section::Db => "DBOptions",
            Section::Cf => "CFOptions",
            Section::Table => "TableOptions/BlockBasedTable",
        }
    }

    /// The section's name in the OPTIONS file for column family `cf` (DBOptions has none).
    pub fn header(self, cf: &str) -> String {
        match self {
            Section::Db => self.kind().to_string(),
            Section::Cf | Section::Table => format!("{} \"{cf}\"", self.kind()),
        }
    }
}

/// How an option's value stands in the OPTIONS file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// The knob's own value as RocksDB writes it (a number, `true` or `false`): the knob is read
    /// back from it.
    Plain,
    /// A size knob's bytes: the knob is read back from it as `<bytes>b`.
    Bytes,
    /// Made from the knob with others (Flink's rules, the target's RocksDB): checked, not read
    /// back.
    Derived,
}

/// RocksDB's `filter_policy` for a bloom filter built in code: RocksDB 11 writes its class
/// name alone (not its bits per key; those are measured in the SST files' table properties).
pub const BLOOM_FILTER: &str = "bloomfilter";

/// RocksDB's word for an object option that is not set (no filter policy, no factory).
pub const NOT_SET: &str = "nullptr";

/// `filter_policy` as an OPTIONS file RocksDB loads it (LoadOptionsFromFile): the policy with
/// its bits per key, not by name alone (which loads as no filter at all).
pub fn loadable_bloom_filter(bits_per_key: f64) -> String {
    format!("{BLOOM_FILTER}:{bits_per_key}:false")
}

/// The options a target fixes, from the knobs that choose them.
fn target(k: &Knobs) -> TargetOptions {
    TargetOptions::new(k.target, k.write_buffer_size.0, k.use_direct_reads)
}

/// What one RocksDB option is: the knob that sets it, where and how RocksDB writes it.
#[derive(Debug)]
pub struct OptionInfo {
    pub option: RocksOption,
    /// The knob that sets it (with others, for a derived value).
    pub knob: Knob,
    pub section: Section,
    /// RocksDB's name, in the OPTIONS file and for SetOptions.
    pub name: &'static str,
    /// Whether FRocksDB 6.20.3 has it (its OPTIONS file, `config/frocksdb-6.20.3-OPTIONS`).
    pub frocksdb_6_20: bool,
    pub form: Form,
    /// The value RocksDB writes for it (and SetOptions takes) under these knobs; numbers as the
    /// knobs hold them (RocksDB writes doubles as `10.000000`).
    pub value: fn(&Knobs) -> String,
}

impl OptionInfo {
    /// Its value under `k`.
    pub fn value(&self, k: &Knobs) -> String {
        (self.value)(k)
    }
}

macro_rules! rocksdb_options {
    ($( $( #[doc = $doc:literal] )+ $variant:ident : $knob:ident, $section:ident, $name:literal, $f620:literal, $form:ident, $value:expr; )*) => {
        /// A RocksDB option a knob sets.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum RocksOption {
            $( $( #[doc = $doc] )+ $variant, )*
        }

        impl RocksOption {
            /// What this option is (its row of `ROCKSDB_OPTIONS`).
            pub const fn info(self) -> &'static OptionInfo {
                // ROCKSDB_OPTIONS lists every variant in declaration order: the index is in range.
                &ROCKSDB_OPTIONS[self as usize]
            }

            /// RocksDB's name for it.
            pub const fn name(self) -> &'static str {
                self.info().name
            }
        }

        /// Every RocksDB option a knob sets, section by section in the order they are checked.
        pub const ROCKSDB_OPTIONS: &[OptionInfo] = &[ $( OptionInfo {
            option: RocksOption::$variant,
            knob: Knob::$knob,
            section: Section::$section,
            name: $name,
            frocksdb_6_20: $f620,
            form: Form::$form,
            value: $value,
        }, )* ];
    };
}

rocksdb_options! {
    /// O_DIRECT for user reads.
    UseDirectReads: UseDirectReads, Db, "use_direct_reads", true, Plain, |k| k.use_direct_reads.to_string();
    /// O_DIRECT for flush and compaction I/O.
    UseDirectIoForFlushAndCompaction: UseDirectIoForFlushAndCompaction, Db, "use_direct_io_for_flush_and_compaction", true, Plain, |k| k.use_direct_io_for_flush_and_compaction.to_string();
    /// Background flush + compaction threads.
    MaxBackgroundJobs: BackgroundJobs, Db, "max_background_jobs", true, Plain, |k| k.background_jobs.to_string();
    /// SST files kept open.
    MaxOpenFiles: MaxOpenFiles, Db, "max_open_files", true, Plain, |k| k.max_open_files.to_string();
    /// Compaction read-ahead: the target's (FRocksDB 6.20 reads ahead only with direct reads).
    CompactionReadaheadSize: Target, Db, "compaction_readahead_size", true, Derived, |k| target(k).compaction_readahead_size.to_string();
    /// One memtable's size.
    WriteBufferSize: WriteBufferSize, Cf, "write_buffer_size", true, Bytes, |k| k.write_buffer_size.0.to_string();
    /// The memtable arena block: follows the write buffer as the target's RocksDB sizes it
    /// (Flink 1.20: an eighth of it), so a live change of the buffer moves it too.
    ArenaBlockSize: WriteBufferSize, Cf, "arena_block_size", true, Derived, |k| target(k).arena_block_size.to_string();
    /// Memtables per column family.
    MaxWriteBufferNumber: MaxWriteBufferNumber, Cf, "max_write_buffer_number", true, Plain, |k| k.max_write_buffer_number.to_string();
    /// Immutable memtables merged into one flush.
    MinWriteBufferNumberToMerge: MinWriteBufferNumberToMerge, Cf, "min_write_buffer_number_to_merge", true, Plain, |k| k.min_write_buffer_number_to_merge.to_string();
    /// Target size of an SST file at level 1.
    TargetFileSizeBase: TargetFileSizeBase, Cf, "target_file_size_base", true, Bytes, |k| k.target_file_size_base.0.to_string();
    /// Target size of level 1.
    MaxBytesForLevelBase: MaxBytesForLevelBase, Cf, "max_bytes_for_level_base", true, Bytes, |k| k.max_bytes_for_level_base.0.to_string();
    /// Size ratio between adjacent levels.
    MaxBytesForLevelMultiplier: MaxBytesForLevelMultiplier, Cf, "max_bytes_for_level_multiplier", true, Plain, |k| k.max_bytes_for_level_multiplier.to_string();
    /// Levels sized from the bottom up.
    LevelCompactionDynamicLevelBytes: DynamicLevelBytes, Cf, "level_compaction_dynamic_level_bytes", true, Plain, |k| k.dynamic_level_bytes.to_string();
    /// L0 files at which writes slow down.
    Level0SlowdownWritesTrigger: Level0SlowdownWritesTrigger, Cf, "level0_slowdown_writes_trigger", true, Plain, |k| k.level0_slowdown_writes_trigger.to_string();
    /// L0 files at which writes stop.
    Level0StopWritesTrigger: Level0StopWritesTrigger, Cf, "level0_stop_writes_trigger", true, Plain, |k| k.level0_stop_writes_trigger.to_string();
    /// Pending compaction bytes at which writes slow down.
    SoftPendingCompactionBytesLimit: SoftPendingCompactionBytesLimit, Cf, "soft_pending_compaction_bytes_limit", true, Bytes, |k| k.soft_pending_compaction_bytes_limit.0.to_string();
    /// Pending compaction bytes at which writes stop.
    HardPendingCompactionBytesLimit: HardPendingCompactionBytesLimit, Cf, "hard_pending_compaction_bytes_limit", true, Bytes, |k| k.hard_pending_compaction_bytes_limit.0.to_string();
    /// No automatic compactions.
    DisableAutoCompactions: DisableAutoCompactions, Cf, "disable_auto_compactions", true, Plain, |k| k.disable_auto_compactions.to_string();
    /// Compression of each of the 7 levels, the list's last entry for the deeper ones.
    CompressionPerLevel: CompressionPerLevel, Cf, "compression_per_level", true, Derived, |k| (0..7).map(|l| k.compression_for_level(l).rocksdb_name()).collect::<Vec<_>>().join(":");
    /// Data block size.
    BlockSize: BlockSize, Table, "block_size", true, Bytes, |k| k.block_size.0.to_string();
    /// Partition size of partitioned index and filter blocks.
    MetadataBlockSize: MetadataBlockSize, Table, "metadata_block_size", true, Bytes, |k| k.metadata_block_size.0.to_string();
    /// Partitioned filters: Flink partitions them only with a shared budget.
    PartitionFilters: PartitionedIndexFilters, Table, "partition_filters", true, Derived, |k| k.partitions_index_filters().to_string();
    /// A two-level index with partitioned filters, else a binary search index.
    IndexType: PartitionedIndexFilters, Table, "index_type", true, Derived, |k| (if k.partitions_index_filters() { "kTwoLevelIndexSearch" } else { "kBinarySearch" }).to_string();
    /// Index and filter blocks in the block cache with a shared budget; in the table readers without.
    CacheIndexAndFilterBlocks: MemoryMode, Table, "cache_index_and_filter_blocks", true, Derived, |k| k.memory_mode.is_shared().to_string();
    /// L0's index and filter blocks pinned in the cache with a shared budget.
    PinL0FilterAndIndexBlocksInCache: MemoryMode, Table, "pin_l0_filter_and_index_blocks_in_cache", true, Derived, |k| k.memory_mode.is_shared().to_string();
    /// The target's table format.
    FormatVersion: Target, Table, "format_version", true, Derived, |k| target(k).format_version.to_string();
    /// The target's block checksum.
    Checksum: Target, Table, "checksum", true, Derived, |k| target(k).checksum.rocksdb_name().to_string();
    /// The target's filter memory optimisation.
    OptimizeFiltersForMemory: Target, Table, "optimize_filters_for_memory", true, Derived, |k| target(k).optimize_filters_for_memory.to_string();
    /// Filter partitions cut apart from index partitions (RocksDB 9 and later only).
    DecouplePartitionedFilters: Target, Table, "decouple_partitioned_filters", false, Derived, |k| target(k).decouple_partitioned_filters.to_string();
    /// The bloom filter, with the bits per key Flink really gives it (see `BLOOM_FILTER`).
    FilterPolicy: UseBloomFilter, Table, "filter_policy", true, Derived, |k| (if k.effective_bloom_bits_per_key().is_some() { BLOOM_FILTER } else { NOT_SET }).to_string();
}

impl Knob {
    /// The RocksDB options this knob sets (none for a knob of memory objects, Flink or the job).
    pub fn rocksdb_options(self) -> impl Iterator<Item = &'static OptionInfo> {
        ROCKSDB_OPTIONS.iter().filter(move |o| o.knob == self)
    }
}

/// The options of `section`, in the order they are checked.
pub fn in_section(section: Section) -> impl Iterator<Item = &'static OptionInfo> {
    ROCKSDB_OPTIONS.iter().filter(move |o| o.section == section)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_section_s_options_stand_together_and_each_name_once() {
        let sections: Vec<Section> = ROCKSDB_OPTIONS.iter().map(|o| o.section).collect();
        let mut grouped = sections.clone();
        grouped.dedup();
        assert_eq!(grouped, Section::ALL, "{sections:?}");
        for (i, o) in ROCKSDB_OPTIONS.iter().enumerate() {
            assert_eq!(o.option as usize, i);
            assert!(
                !ROCKSDB_OPTIONS[..i]
                    .iter()
                    .any(|p| p.section == o.section && p.name == o.name),
                "{} twice",
                o.name
            );
        }
    }

    #[test]
    fn flink_defaults_values_are_rocksdbs_words() {
        let k = Knobs::default();
        let value = |o: RocksOption| o.info().value(&k);
        assert_eq!(value(RocksOption::WriteBufferSize), "67108864");
        assert_eq!(value(RocksOption::ArenaBlockSize), "8388608");
        assert_eq!(value(RocksOption::FilterPolicy), NOT_SET);
        assert_eq!(value(RocksOption::IndexType), "kBinarySearch");
        assert_eq!(
            value(RocksOption::CompressionPerLevel),
            ["kSnappyCompression"; 7].join(":")
        );
        assert_eq!(loadable_bloom_filter(14.0), "bloomfilter:14:false");
    }
}
