//! CPU samples bucketed by cause: one table of rules, each a bucket and the frame names (or
//! thread names) that select it. A stack goes to the first rule, in table order, that any of
//! its frames matches: the table order is the priority. Context comes first — everything under
//! a compaction is compaction, everything under a filter-block reader (its block fetch, checksum
//! and I/O included) is a filter-block read — then RocksDB's leaf work (checksums,
//! decompression, block reads, the memtable), then statebench's own code, the broadest last.
//!
//! A pattern matches a frame that contains it where the identifier ends: `rocksdb::Version::Get`
//! matches `rocksdb::Version::Get` but not `rocksdb::Version::GetNumLiveVersions`. A pattern
//! that ends in punctuation (`rocksdb::MemTable::`) or in `*` (`XXH3_*`) is a prefix.

pub use crate::model::cpu::Bucket;

/// One row of the table: a stack any of whose frames matches one of `frames`, or whose thread
/// name starts with one of `threads`, belongs to `bucket` (unless an earlier row took it).
pub struct Rule {
    pub bucket: Bucket,
    pub frames: &'static [&'static str],
    pub threads: &'static [&'static str],
}

/// The bucket rules, highest priority first. Frame patterns are substrings of demangled names.
pub const RULES: &[Rule] = &[
    // Background work first: a block read, a checksum or a compression inside a compaction or
    // a flush is the cost of that compaction or flush. Flush before compaction: a flush builds
    // its table through a CompactionIterator.
    Rule {
        bucket: Bucket::Flush,
        frames: &[
            "rocksdb::FlushJob::",
            "rocksdb::BuildTable",
            "rocksdb::DBImpl::BackgroundFlush",
            "rocksdb::DBImpl::BackgroundCallFlush",
            "rocksdb::DBImpl::BGWorkFlush",
        ],
        threads: &[],
    },
    Rule {
        bucket: Bucket::Compaction,
        frames: &[
            "rocksdb::CompactionJob::",
            "rocksdb::CompactionIterator::",
            "rocksdb::CompactionOutputs::",
            "rocksdb::DBImpl::BackgroundCompaction",
            "rocksdb::DBImpl::BackgroundCallCompaction",
            "rocksdb::DBImpl::BGWorkCompaction",
            "rocksdb::DBImpl::BGWorkBottomCompaction",
        ],
        threads: &[],
    },
    // A filter block read from the cache or storage, its checksum and I/O, and the probe.
    Rule {
        bucket: Bucket::FilterBlockReads,
        frames: &[
            "FilterBlockReader",
            "FilterBlockReaderCommon",
            "rocksdb::ParsedFullFilterBlock",
            "rocksdb::BlockBasedTable::FullFilterKeyMayMatch",
            "rocksdb::BlockBasedTable::FullFilterKeysMayMatch",
            "rocksdb::BlockBasedTable::PrefixRangeMayMatch",
        ],
        threads: &[],
    },
    Rule {
        bucket: Bucket::ChecksumVerification,
        frames: &[
            "rocksdb::VerifyBlockChecksum",
            "rocksdb::ComputeBuiltinChecksum",
            "rocksdb::crc32c::",
            "XXH3_*",
            "XXH64*",
            "XXH32*",
            "ROCKSDB_XXH*",
        ],
        threads: &[],
    },
    Rule {
        bucket: Bucket::Decompression,
        frames: &[
            "rocksdb::UncompressBlockData",
            "rocksdb::UncompressSerializedBlock",
            "rocksdb::DecompressBlockData",
            "rocksdb::DecompressSerializedBlock",
            "rocksdb::Decompressor",
            "Decompressor::Decompress",
            "LZ4_decompress*",
            "ZSTD_decompress*",
            "snappy::RawUncompress",
            "snappy::Uncompress",
            "BZ2_bzDecompress",
            "inflate*",
        ],
        threads: &[],
    },
    // Index and data blocks: the table reader, the block cache, the block fetch and its I/O.
    Rule {
        bucket: Bucket::IndexAndDataBlockReads,
        frames: &[
            "rocksdb::BlockBasedTable*",
            "rocksdb::BlockFetcher::",
            "rocksdb::RandomAccessFileReader::",
            "rocksdb::PosixRandomAccessFile::",
            "rocksdb::IndexBlockIter*",
            "rocksdb::DataBlockIter*",
            "rocksdb::Block::",
            "rocksdb::BinarySearchIndexReader",
            "rocksdb::PartitionIndexReader",
            "rocksdb::HashIndexReader",
            "rocksdb::Version::Get",
            "rocksdb::TableCache::",
            "rocksdb::GetContext::",
            "rocksdb::LRUCacheShard*",
            "rocksdb::lru_cache::",
            "rocksdb::clock_cache::",
            "rocksdb::ShardedCache*",
            "rocksdb::CacheWithSecondaryAdapter",
            "rocksdb::LevelIterator",
        ],
        threads: &[],
    },
    // The write path into the memtable and the get/iterate path around the SST files.
    Rule {
        bucket: Bucket::Memtable,
        frames: &[
            "rocksdb::MemTable::",
            "rocksdb::MemTableInserter",
            "rocksdb::MemTableListVersion::",
            "rocksdb::MemTableIterator",
            "rocksdb::InlineSkipList",
            "rocksdb::SkipListRep",
            "rocksdb::WriteBatchInternal::",
            "rocksdb::WriteBatch::",
            "rocksdb::DBImpl::WriteImpl",
            "rocksdb::DBImpl::GetImpl",
            "rocksdb::DBIter*",
            "rocksdb_put*",
            "rocksdb_get*",
            "rocksdb_delete*",
            "rocksdb_write*",
            "rocksdb_merge*",
            "rocksdb::ArenaWrappedDBIter",
            "rocksdb::MergingIterator",
            "rocksdb::Arena::",
        ],
        threads: &[],
    },
    // statebench's own work: the narrow modules before the pipeline that calls them.
    Rule {
        bucket: Bucket::Serialization,
        frames: &[
            "statebench::backend::serializer",
            "statebench::backend::keys",
        ],
        threads: &[],
    },
    Rule {
        bucket: Bucket::Timers,
        frames: &["statebench::pipeline::timers"],
        threads: &[],
    },
    Rule {
        bucket: Bucket::OracleAndSink,
        frames: &[
            "statebench::pipeline::oracle",
            "statebench::durability::sink",
            "statebench::model::counters::SinkCounters",
            "statebench::model::counters::ResultError",
            "redis::",
        ],
        // The oracle's and the in-process store's own threads (`statebench-oracle`,
        // `statebench-store`; Linux keeps 15 bytes of a thread's name), whatever their frames.
        threads: &["statebench-orac", "statebench-stor"],
    },
    // This profiler: its thread (symbolizing and bucketing stacks). Its signal handler's frames
    // are cut from every stack, so their cost is not in any bucket. Apart from metrics
    // sampling, so that statebench's own share is that of a run without it.
    Rule {
        bucket: Bucket::Profiler,
        frames: &["statebench::profiler", "statebench::model::cpu", "pprof::"],
        threads: &[super::THREAD_NAME],
    },
    // Snapshots, latency histograms and their clock reads.
    Rule {
        bucket: Bucket::MetricsSampling,
        frames: &[
            "statebench::engine::sampler",
            "statebench::backend::metrics",
            "statebench::model::metrics",
            "statebench::backend::perf",
            "statebench::backend::latency",
            "hdrhistogram::",
            "std::time::Instant::now",
            "clock_gettime",
        ],
        threads: &[],
    },
    Rule {
        bucket: Bucket::Operator,
        frames: &[
            "statebench::pipeline::",
            "statebench::durability::",
            "statebench::util::hash",
            "statebench::util::bits",
            "statebench::util::worker",
            "statebench::engine::",
            "statebench::preload::",
            "statebench::backend::",
            // The model's data as the job's own code computes on it; a summary's and a trace's
            // key strings' code is left to no bucket, as it was before it moved to the model.
            "statebench::model::counters",
            "statebench::model::checkpoint",
            "statebench::model::layout",
        ],
        threads: &[],
    },
    // RocksDB's background threads with no frame to tell: low runs compactions, high flushes.
    Rule {
        bucket: Bucket::Compaction,
        frames: &[],
        threads: &["rocksdb:low", "rocksdb:bottom"],
    },
    Rule {
        bucket: Bucket::Flush,
        frames: &[],
        threads: &["rocksdb:high"],
    },
];

/// The bucket of a stack: `frames` leaf first, demangled, run by thread `thread`.
pub fn classify<S: AsRef<str>>(thread: &str, frames: &[S]) -> Bucket {
    RULES
        .iter()
        .find(|rule| {
            rule.threads.iter().any(|t| thread.starts_with(t))
                || frames
                    .iter()
                    .any(|f| rule.frames.iter().any(|p| matches(f.as_ref(), p)))
        })
        .map_or(Bucket::Other, |rule| rule.bucket)
}

/// Whether `frame` contains `pattern` where an identifier ends (see the module's note).
fn matches(frame: &str, pattern: &str) -> bool {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    if let Some(prefix) = pattern.strip_suffix('*') {
        return frame.contains(prefix);
    }
    if !pattern.ends_with(ident) {
        return frame.contains(pattern);
    }
    frame
        .match_indices(pattern)
        .any(|(at, _)| !frame[at + pattern.len()..].starts_with(ident))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Stacks recorded from `statebench run -w ads-hours --profile-cpu` (hours-monolithic-filter
    /// and hours-partitioned-filter), leaf first, as the profile's protobuf holds them (names
    /// pass through `short_name` as the sampler's do), cut below the job's loop.
    fn classify_recorded(thread: &str, recorded: &str) -> Bucket {
        let frames: Vec<&str> = recorded
            .split(" <- ")
            .map(|f| super::super::short_name(f.trim()))
            .collect();
        classify(thread, &frames)
    }

    const ENGINE: &str = "statebench-engi";

    const GET_FROM_FILTER: &str = "rocksdb::FullFilterBlockReader::MayMatch <- \
        rocksdb::BlockBasedTable::FullFilterKeyMayMatch <- rocksdb::BlockBasedTable::Get <- \
        rocksdb::TableCache::Get <- rocksdb::Version::Get <- rocksdb::DBImpl::GetImpl <- \
        rocksdb::DBImpl::GetImpl <- rocksdb::DBImpl::Get <- rocksdb_get_pinned_cf <- \
        rocksdb::db::DBCommon<T,D>::get_pinned_cf_opt <- \
        statebench::pipeline::operator::read_decrement <- \
        <statebench::pipeline::operator::FrequencyJob as statebench::pipeline::operator::Operator>::on_event <- \
        statebench::engine::job::JobRunner::drive";

    #[test]
    fn a_monolithic_filters_checksum_and_io_are_filter_block_reads() {
        let read = "rocksdb::BlockFetcher::ReadBlock <- rocksdb::BlockFetcher::ReadBlockContents <- \
            std::enable_if<((rocksdb::ParsedFullFilterBlock::kCacheEntryRole)==((rocksdb::CacheEntryRole)13))||(true), rocksdb::Status>::type rocksdb::BlockBasedTable::MaybeReadBlockAndLoadToCache<rocksdb::ParsedFullFilterBlock> <- \
            std::enable_if<((rocksdb::ParsedFullFilterBlock::kCacheEntryRole)==((rocksdb::CacheEntryRole)13))||(true), rocksdb::Status>::type rocksdb::BlockBasedTable::RetrieveBlock<rocksdb::ParsedFullFilterBlock> <- \
            rocksdb::FilterBlockReaderCommon<rocksdb::ParsedFullFilterBlock>::ReadFilterBlock <- \
            rocksdb::FilterBlockReaderCommon<rocksdb::ParsedFullFilterBlock>::GetOrReadFilterBlock";
        let checksum = format!(
            "unsigned int rocksdb::crc32c::ExtendImpl<&rocksdb::crc32c::DefaultCRC32(unsigned long*, unsigned char const**)> <- \
             rocksdb::ComputeBuiltinChecksum <- rocksdb::VerifyBlockChecksum <- {read} <- {GET_FROM_FILTER}"
        );
        assert_eq!(
            classify_recorded(ENGINE, &checksum),
            Bucket::FilterBlockReads
        );
        let io = format!(
            "__libc_pread64 <- __libc_pread64 <- rocksdb::PosixRandomAccessFile::Read <- \
             rocksdb::RandomAccessFileReader::Read <- {read} <- {GET_FROM_FILTER}"
        );
        assert_eq!(classify_recorded(ENGINE, &io), Bucket::FilterBlockReads);
    }

    #[test]
    fn a_partitioned_filters_probe_is_a_filter_block_read() {
        let probe = "rocksdb::(anonymous namespace)::FastLocalBloomBitsReader::MayMatch <- \
            rocksdb::FullFilterBlockReader::MayMatch <- rocksdb::PartitionedFilterBlockReader::MayMatch <- \
            rocksdb::PartitionedFilterBlockReader::KeyMayMatch <- \
            rocksdb::BlockBasedTable::FullFilterKeyMayMatch <- rocksdb::BlockBasedTable::Get <- \
            rocksdb::TableCache::Get <- rocksdb::Version::Get <- rocksdb::DBImpl::GetImpl";
        assert_eq!(classify_recorded(ENGINE, probe), Bucket::FilterBlockReads);
    }

    const DATA_BLOCK: &str = "rocksdb::BlockFetcher::ReadBlockContents <- \
        std::enable_if<((rocksdb::Block_kData::kCacheEntryRole)==((rocksdb::CacheEntryRole)13))||(true), rocksdb::Status>::type rocksdb::BlockBasedTable::MaybeReadBlockAndLoadToCache<rocksdb::Block_kData> <- \
        std::enable_if<((rocksdb::Block_kData::kCacheEntryRole)==((rocksdb::CacheEntryRole)13))||(true), rocksdb::Status>::type rocksdb::BlockBasedTable::RetrieveBlock<rocksdb::Block_kData> <- \
        rocksdb::DataBlockIter* rocksdb::BlockBasedTable::NewDataBlockIterator<rocksdb::DataBlockIter> <- \
        rocksdb::BlockBasedTable::Get <- rocksdb::TableCache::Get <- rocksdb::Version::Get <- \
        rocksdb::DBImpl::GetImpl <- rocksdb::DBImpl::Get <- rocksdb_get_pinned_cf";

    #[test]
    fn a_data_blocks_read_checksum_and_decompression_each_have_their_bucket() {
        let io = format!(
            "__libc_pread64 <- __libc_pread64 <- rocksdb::PosixRandomAccessFile::Read <- \
             rocksdb::RandomAccessFileReader::Read <- rocksdb::BlockFetcher::ReadBlock <- {DATA_BLOCK}"
        );
        assert_eq!(
            classify_recorded(ENGINE, &io),
            Bucket::IndexAndDataBlockReads
        );
        let cache = "rocksdb::lru_cache::LRUHandleTable::FindPointer <- \
            rocksdb::lru_cache::LRUHandleTable::Lookup <- rocksdb::lru_cache::LRUCacheShard::Lookup <- \
            rocksdb::ShardedCache<rocksdb::lru_cache::LRUCacheShard>::Lookup <- \
            std::enable_if<((rocksdb::Block_kData::kCacheEntryRole)==((rocksdb::CacheEntryRole)13))||(true), rocksdb::Status>::type rocksdb::BlockBasedTable::GetDataBlockFromCache<rocksdb::Block_kData>";
        assert_eq!(
            classify_recorded(ENGINE, cache),
            Bucket::IndexAndDataBlockReads
        );
        let seek = "bool rocksdb::BlockIter<rocksdb::Slice>::BinarySeekRestartPointIndex<rocksdb::DecodeKey> <- \
            rocksdb::DataBlockIter::SeekImpl <- rocksdb::BlockBasedTable::Get <- rocksdb::TableCache::Get";
        assert_eq!(
            classify_recorded(ENGINE, seek),
            Bucket::IndexAndDataBlockReads
        );
        let checksum = format!(
            "unsigned int rocksdb::crc32c::ExtendImpl<&rocksdb::crc32c::DefaultCRC32(unsigned long*, unsigned char const**)> <- \
             rocksdb::ComputeBuiltinChecksum <- rocksdb::VerifyBlockChecksum <- \
             rocksdb::BlockFetcher::ReadBlock <- {DATA_BLOCK}"
        );
        assert_eq!(
            classify_recorded(ENGINE, &checksum),
            Bucket::ChecksumVerification
        );
        let snappy = format!(
            "__memcpy_avx512_unaligned_erms <- snappy::MemCopy64 <- \
             std::pair<unsigned char const*, long> snappy::DecompressBranchless<char*> <- \
             void snappy::SnappyDecompressor::DecompressAllTags<snappy::SnappyArrayWriter> <- \
             snappy::RawUncompress <- snappy::RawUncompress <- \
             rocksdb::(anonymous namespace)::BuiltinDecompressorV2::DecompressBlock <- \
             rocksdb::DecompressBlockData <- rocksdb::DecompressSerializedBlock <- {DATA_BLOCK}"
        );
        assert_eq!(classify_recorded(ENGINE, &snappy), Bucket::Decompression);
    }

    #[test]
    fn the_memtable_get_and_write_paths() {
        let get = "rocksdb::InlineSkipList<rocksdb::MemTableRep::KeyComparator const&>::FindGreaterOrEqual <- \
            rocksdb::(anonymous namespace)::SkipListRep::Get <- rocksdb::MemTable::GetFromTable <- \
            rocksdb::MemTable::Get <- rocksdb::DBImpl::GetImpl <- rocksdb::DBImpl::GetImpl <- \
            rocksdb::DBImpl::Get <- rocksdb_get_pinned_cf <- \
            rocksdb::db::DBCommon<T,D>::get_pinned_cf_opt <- statebench::backend::StateAccess::get <- \
            statebench::pipeline::operator::read_decrement";
        assert_eq!(classify_recorded(ENGINE, get), Bucket::Memtable);
        let delete = "void rocksdb::InlineSkipList<rocksdb::MemTableRep::KeyComparator const&>::FindSpliceForLevel<true> <- \
            bool rocksdb::InlineSkipList<rocksdb::MemTableRep::KeyComparator const&>::Insert<false> <- \
            rocksdb::MemTable::Add <- \
            rocksdb::(anonymous namespace)::MemTableInserter::DeleteImpl(unsigned int, rocksdb::Slice const&, rocksdb::Slice const&, rocksdb::ValueType, rocksdb::ProtectionInfoKVOS<unsigned long> const*) [clone .constprop.0] <- \
            rocksdb::(anonymous namespace)::MemTableInserter::DeleteCF <- \
            rocksdb::WriteBatchInternal::Iterate <- rocksdb::WriteBatch::Iterate <- \
            rocksdb::WriteBatchInternal::InsertInto <- rocksdb::DBImpl::WriteImpl <- \
            rocksdb::DBImpl::Write <- rocksdb_write <- statebench::backend::StateAccess::write_batch <- \
            statebench::pipeline::timers::TimerService::poll_due";
        // RocksDB's work under statebench's timers is RocksDB's.
        assert_eq!(classify_recorded(ENGINE, delete), Bucket::Memtable);
    }

    #[test]
    fn a_flush_builds_its_table_through_a_compaction_iterator_and_is_still_a_flush() {
        let flush = "rocksdb::MemTableIterator::key <- rocksdb::CompactionIterator::NextFromInput <- \
            rocksdb::CompactionIterator::Next <- rocksdb::BuildTable <- \
            rocksdb::FlushJob::WriteLevel0Table <- rocksdb::FlushJob::Run <- \
            rocksdb::DBImpl::FlushMemTableToOutputFile <- rocksdb::DBImpl::FlushMemTablesToOutputFiles <- \
            rocksdb::DBImpl::BackgroundFlush <- rocksdb::DBImpl::BackgroundCallFlush <- \
            rocksdb::ThreadPoolImpl::Impl::BGThread";
        assert_eq!(classify_recorded("rocksdb:high", flush), Bucket::Flush);
        let compress = "snappy::internal::CompressFragment <- snappy::Compress <- \
            rocksdb::(anonymous namespace)::BuiltinSnappyCompressorV2::CompressBlock <- \
            rocksdb::BlockBasedTableBuilder::CompressAndVerifyBlock <- \
            rocksdb::BlockBasedTableBuilder::WriteBlock <- rocksdb::BlockBasedTableBuilder::EmitBlock <- \
            rocksdb::BlockBasedTableBuilder::Flush <- rocksdb::BlockBasedTableBuilder::Add <- \
            rocksdb::CompactionOutputs::AddToOutput <- rocksdb::SubcompactionState::AddToOutput <- \
            rocksdb::CompactionJob::ProcessKeyValue <- rocksdb::CompactionJob::ProcessKeyValueCompaction <- \
            rocksdb::CompactionJob::RunSubcompactions <- rocksdb::CompactionJob::Run <- \
            rocksdb::DBImpl::BackgroundCompaction";
        assert_eq!(
            classify_recorded("rocksdb:low", compress),
            Bucket::Compaction
        );
        let checksum = "unsigned int rocksdb::crc32c::ExtendImpl<&rocksdb::crc32c::DefaultCRC32(unsigned long*, unsigned char const**)> <- \
            rocksdb::ComputeBuiltinChecksumWithLastByte <- \
            rocksdb::BlockBasedTableBuilder::WriteMaybeCompressedBlockImpl <- \
            rocksdb::BlockBasedTableBuilder::WriteBlock <- rocksdb::BuildTable <- \
            rocksdb::FlushJob::WriteLevel0Table <- rocksdb::FlushJob::Run";
        assert_eq!(classify_recorded("rocksdb:high", checksum), Bucket::Flush);
    }

    #[test]
    fn statebench_buckets_take_their_module_before_the_pipeline_around_it() {
        let on_event = "<statebench::pipeline::operator::FrequencyJob as statebench::pipeline::operator::Operator>::on_event <- \
            statebench::engine::job::JobRunner::drive <- statebench::engine::finish::finish";
        let case = |leaf: &str| classify_recorded(ENGINE, &format!("{leaf} <- {on_event}"));
        assert_eq!(
            case(
                "statebench::backend::serializer::ValueSerializer::encode_stats <- statebench::pipeline::operator::FrequencyJob::increment"
            ),
            Bucket::Serialization
        );
        assert_eq!(
            case(
                "statebench::backend::keys::write_string <- statebench::backend::keys::CompositeKey::set_key"
            ),
            Bucket::Serialization
        );
        assert_eq!(
            case("statebench::pipeline::timers::TimerService::register"),
            Bucket::Timers
        );
        assert_eq!(
            case(
                "hashbrown::map::HashMap<K,V,S,A>::insert <- <statebench::durability::sink::MemorySink as statebench::durability::sink::Sink>::write"
            ),
            Bucket::OracleAndSink
        );
        assert_eq!(
            classify_recorded(
                ENGINE,
                "statebench::pipeline::oracle::Oracle::compare <- statebench::engine::job::JobRunner::drive"
            ),
            Bucket::OracleAndSink
        );
        assert_eq!(
            classify_recorded(
                ENGINE,
                "hdrhistogram::Histogram<T>::add <- statebench::backend::latency::LatencyRecorder::take_interval <- \
                 statebench::engine::sampler::Sampler::publish <- statebench::engine::job::JobRunner::publish <- \
                 statebench::engine::job::JobRunner::drive"
            ),
            Bucket::MetricsSampling
        );
        assert_eq!(
            classify_recorded(
                ENGINE,
                "<core::str::iter::SplitWhitespace as core::iter::traits::iterator::Iterator>::next <- \
                 statebench::backend::metrics::level_scores <- statebench::backend::metrics::RocksDbSampler::sample <- \
                 statebench::engine::sampler::Sampler::publish"
            ),
            Bucket::MetricsSampling
        );
        // A clock read for a latency (the vDSO has no symbols).
        assert_eq!(
            case(
                "Unknown <- __GI___clock_gettime <- <std::sys::pal::unix::time::Timespec>::now <- <std::time::Instant>::elapsed <- statebench::backend::StateAccess::get"
            ),
            Bucket::MetricsSampling
        );
        assert_eq!(
            case("statebench::pipeline::operator::Context::advance_watermark"),
            Bucket::Operator
        );
    }

    #[test]
    fn the_profilers_own_thread_is_a_bucket_of_its_own() {
        let own = "<core::str::pattern::StrSearcher>::new <- statebench::profiler::buckets::matches <- \
            statebench::profiler::buckets::classify <- statebench::profiler::Collector::refresh <- \
            statebench::profiler::sampler_thread";
        assert_eq!(
            classify_recorded(super::super::THREAD_NAME, own),
            Bucket::Profiler
        );
    }

    #[test]
    fn the_oracles_and_the_stores_threads_are_oracle_and_sink_whatever_their_frames() {
        let inlined = "_int_malloc <- __GI___libc_malloc <- statebench::pipeline::oracle::thread::handle <- \
            std::sys::backtrace::__rust_begin_short_backtrace";
        assert_eq!(
            classify_recorded("statebench-orac", inlined),
            Bucket::OracleAndSink
        );
        assert_eq!(
            classify_recorded("statebench-stor", "Unknown"),
            Bucket::OracleAndSink
        );
        assert_eq!(
            classify_recorded(
                ENGINE,
                "statebench::pipeline::oracle::thread::OracleThread::note"
            ),
            Bucket::OracleAndSink
        );
    }

    #[test]
    fn background_threads_without_a_telling_frame_go_by_thread_the_rest_is_other() {
        assert_eq!(
            classify_recorded("rocksdb:low", "Unknown"),
            Bucket::Compaction
        );
        assert_eq!(classify_recorded("rocksdb:high", "Unknown"), Bucket::Flush);
        assert_eq!(classify_recorded(ENGINE, "Unknown"), Bucket::Other);
        assert_eq!(
            classify_recorded(
                "statebench",
                "std::sync::mpmc::Receiver<T>::recv <- statebench::commands::run::run <- statebench::run"
            ),
            Bucket::Other
        );
    }

    #[test]
    fn a_pattern_ends_where_the_identifier_ends() {
        assert!(matches("rocksdb::Version::Get", "rocksdb::Version::Get"));
        assert!(matches(
            "rocksdb::Version::Get<int>",
            "rocksdb::Version::Get"
        ));
        assert!(!matches(
            "rocksdb::Version::GetNumLiveVersions",
            "rocksdb::Version::Get"
        ));
        assert!(matches("rocksdb::MemTable::Add", "rocksdb::MemTable::"));
        assert!(matches("XXH3_64bits_withSeed", "XXH3_*"));
        assert!(matches(
            "rocksdb::FullFilterBlockReader::MayMatch",
            "FilterBlockReader"
        ));
        assert!(!matches(
            "rocksdb::FullFilterBlockReaderX",
            "FilterBlockReader"
        ));
    }

    #[test]
    fn the_models_code_keeps_the_bucket_it_had_before_it_moved_to_the_model() {
        let under = |leaf: &str| {
            classify_recorded(
                ENGINE,
                &format!("{leaf} <- statebench::engine::job::JobRunner::drive"),
            )
        };
        // Was durability::sink's and the oracle's.
        assert_eq!(
            under("statebench::model::counters::SinkCounters::since"),
            Bucket::OracleAndSink
        );
        assert_eq!(
            under("statebench::model::counters::ResultError::is_exact"),
            Bucket::OracleAndSink
        );
        // Was the backend's metrics.
        assert_eq!(
            under("statebench::model::metrics::Tickers::plus"),
            Bucket::MetricsSampling
        );
        // Was backend::access and durability::checkpoint: the job's own work, on any thread.
        let alone = |leaf: &str| classify_recorded("statebench-tui", leaf);
        assert_eq!(
            alone("statebench::model::counters::AccessCounters::plus"),
            Bucket::Operator
        );
        assert_eq!(
            alone("statebench::model::checkpoint::JobWork::plus"),
            Bucket::Operator
        );
        // A summary's code (was statebench::summary) matches no rule on the TUI's thread.
        assert_eq!(
            alone("statebench::model::summary::Summary::kinds"),
            Bucket::Other
        );
    }

    #[test]
    fn every_bucket_is_listed_once() {
        let mut seen = Bucket::ALL.to_vec();
        seen.sort();
        seen.dedup();
        assert_eq!(seen.len(), Bucket::ALL.len());
        for rule in RULES {
            assert!(Bucket::ALL.contains(&rule.bucket));
        }
    }
}
