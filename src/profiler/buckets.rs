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

use serde::{Deserialize, Serialize};

/// Why the CPU was busy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Bucket {
    FilterBlockReads,
    IndexAndDataBlockReads,
    ChecksumVerification,
    Decompression,
    Memtable,
    Flush,
    Compaction,
    Serialization,
    Timers,
    Operator,
    OracleAndSink,
    MetricsSampling,
    Other,
}

impl Bucket {
    /// Every bucket, in the order reports list them.
    pub const ALL: [Bucket; 13] = [
        Bucket::FilterBlockReads,
        Bucket::IndexAndDataBlockReads,
        Bucket::ChecksumVerification,
        Bucket::Decompression,
        Bucket::Memtable,
        Bucket::Flush,
        Bucket::Compaction,
        Bucket::Serialization,
        Bucket::Timers,
        Bucket::Operator,
        Bucket::OracleAndSink,
        Bucket::MetricsSampling,
        Bucket::Other,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Bucket::FilterBlockReads => "filter-block reads",
            Bucket::IndexAndDataBlockReads => "index and data block reads",
            Bucket::ChecksumVerification => "checksum verification",
            Bucket::Decompression => "decompression",
            Bucket::Memtable => "memtable insert/lookup",
            Bucket::Flush => "flush",
            Bucket::Compaction => "compaction",
            Bucket::Serialization => "serialization",
            Bucket::Timers => "timers",
            Bucket::Operator => "operator",
            Bucket::OracleAndSink => "oracle and sink",
            Bucket::MetricsSampling => "metrics sampling",
            Bucket::Other => "other",
        }
    }

    /// The kebab-case name the JSON report and the pprof labels use.
    pub fn key(self) -> &'static str {
        match self {
            Bucket::FilterBlockReads => "filter-block-reads",
            Bucket::IndexAndDataBlockReads => "index-and-data-block-reads",
            Bucket::ChecksumVerification => "checksum-verification",
            Bucket::Decompression => "decompression",
            Bucket::Memtable => "memtable",
            Bucket::Flush => "flush",
            Bucket::Compaction => "compaction",
            Bucket::Serialization => "serialization",
            Bucket::Timers => "timers",
            Bucket::Operator => "operator",
            Bucket::OracleAndSink => "oracle-and-sink",
            Bucket::MetricsSampling => "metrics-sampling",
            Bucket::Other => "other",
        }
    }

    /// RocksDB's work rather than statebench's (the pipeline, its checks and its metrics).
    pub fn is_rocksdb(self) -> bool {
        matches!(
            self,
            Bucket::FilterBlockReads
                | Bucket::IndexAndDataBlockReads
                | Bucket::ChecksumVerification
                | Bucket::Decompression
                | Bucket::Memtable
                | Bucket::Flush
                | Bucket::Compaction
        )
    }
}

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
    // a flush is the cost of that compaction or flush.
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
            "statebench::pipeline::sink",
            "redis::",
        ],
        threads: &[],
    },
    // Snapshots, latency histograms and their clock reads, and this profiler.
    Rule {
        bucket: Bucket::MetricsSampling,
        frames: &[
            "statebench::engine::sampler",
            "statebench::backend::metrics",
            "statebench::backend::perf",
            "statebench::backend::latency",
            "statebench::profiler",
            "hdrhistogram::",
            "pprof::",
            "std::time::Instant::now",
            "clock_gettime",
        ],
        threads: &[super::THREAD_NAME],
    },
    Rule {
        bucket: Bucket::Operator,
        frames: &[
            "statebench::pipeline::",
            "statebench::engine::",
            "statebench::backend::",
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

    /// Stacks recorded from `statebench run --profile-cpu` (leaf first; argument lists cut).
    fn stack(text: &str) -> Vec<&str> {
        text.lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect()
    }

    #[test]
    fn a_checksum_under_a_filter_reader_is_a_filter_block_read() {
        let frames = stack(
            "XXH3_64bits
             rocksdb::VerifyBlockChecksum
             rocksdb::BlockFetcher::ReadBlockContents
             rocksdb::BlockBasedTable::RetrieveBlock<rocksdb::ParsedFullFilterBlock>
             rocksdb::FilterBlockReaderCommon<rocksdb::ParsedFullFilterBlock>::ReadFilterBlock
             rocksdb::FullFilterBlockReader::MayMatch
             rocksdb::BlockBasedTable::FullFilterKeyMayMatch
             rocksdb::BlockBasedTable::Get
             rocksdb::Version::Get
             rocksdb::DBImpl::GetImpl
             statebench::backend::StateBackend::get
             statebench::pipeline::operator::FrequencyOperator::on_event",
        );
        assert_eq!(
            classify("statebench-engine", &frames),
            Bucket::FilterBlockReads
        );
    }

    #[test]
    fn a_checksum_of_a_data_block_is_checksum_verification() {
        let frames = stack(
            "XXH3_64bits
             rocksdb::VerifyBlockChecksum
             rocksdb::BlockFetcher::ReadBlockContents
             rocksdb::BlockBasedTable::RetrieveBlock<rocksdb::Block_kData>
             rocksdb::BlockBasedTable::Get
             rocksdb::DBImpl::GetImpl",
        );
        assert_eq!(
            classify("statebench-engine", &frames),
            Bucket::ChecksumVerification
        );
    }

    #[test]
    fn a_block_read_inside_a_compaction_is_compaction() {
        let frames = stack(
            "pread64
             rocksdb::PosixRandomAccessFile::Read
             rocksdb::BlockFetcher::ReadBlockContents
             rocksdb::BlockBasedTableIterator::SeekToFirst
             rocksdb::CompactionIterator::Next
             rocksdb::CompactionJob::ProcessKeyValueCompaction
             rocksdb::DBImpl::BackgroundCompaction",
        );
        assert_eq!(classify("rocksdb:low", &frames), Bucket::Compaction);
    }

    #[test]
    fn the_memtable_write_path() {
        let frames = stack(
            "rocksdb::InlineSkipList<rocksdb::MemTableRep::KeyComparator const&>::Insert<false>
             rocksdb::MemTable::Add
             rocksdb::MemTableInserter::PutCFImpl
             rocksdb::WriteBatchInternal::InsertInto
             rocksdb::DBImpl::WriteImpl
             rocksdb_put_cf
             statebench::backend::StateBackend::put
             statebench::pipeline::timers::TimerService::register",
        );
        assert_eq!(classify("statebench-engine", &frames), Bucket::Memtable);
    }

    #[test]
    fn statebench_buckets_take_their_module_before_the_pipeline_around_it() {
        let serializer = stack(
            "statebench::backend::serializer::Compact::write_stats
             statebench::pipeline::operator::FrequencyOperator::on_event
             statebench::engine::job::JobRunner::step",
        );
        assert_eq!(
            classify("statebench-engine", &serializer),
            Bucket::Serialization
        );
        let timers = stack(
            "alloc::collections::btree::map::BTreeMap<K,V,A>::insert
             statebench::pipeline::timers::TimerService::register
             statebench::pipeline::operator::FrequencyOperator::on_event",
        );
        assert_eq!(classify("statebench-engine", &timers), Bucket::Timers);
        let oracle = stack(
            "hashbrown::map::HashMap<K,V,S,A>::insert
             statebench::pipeline::oracle::Oracle::on_event
             statebench::engine::job::JobRunner::step",
        );
        assert_eq!(
            classify("statebench-engine", &oracle),
            Bucket::OracleAndSink
        );
        let sampler = stack(
            "rocksdb::DBImpl::GetIntProperty
             statebench::backend::metrics::RocksDbSampler::sample
             statebench::engine::sampler::Sampler::publish",
        );
        // RocksDB's own property code is not one of the RocksDB buckets' work: it is sampling.
        assert_eq!(
            classify("statebench-engine", &sampler),
            Bucket::MetricsSampling
        );
        let operator = stack(
            "malloc
             statebench::pipeline::operator::FrequencyOperator::on_event
             statebench::engine::job::JobRunner::step",
        );
        assert_eq!(classify("statebench-engine", &operator), Bucket::Operator);
    }

    #[test]
    fn the_profilers_own_thread_is_metrics_sampling() {
        let frames = stack(
            "addr2line::ResUnit::find_function_or_location
             backtrace::symbolize::resolve_frame",
        );
        assert_eq!(
            classify(super::super::THREAD_NAME, &frames),
            Bucket::MetricsSampling
        );
    }

    #[test]
    fn background_threads_without_a_telling_frame_go_by_thread() {
        let frames = stack("memcpy\nUnknown");
        assert_eq!(classify("rocksdb:low", &frames), Bucket::Compaction);
        assert_eq!(classify("rocksdb:high", &frames), Bucket::Flush);
        assert_eq!(classify("main", &frames), Bucket::Other);
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
