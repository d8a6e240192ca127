//! Whose RocksDB statebench configures: the options a Flink version's RocksDB has in effect
//! without any user setting, where they differ from the defaults of the RocksDB statebench
//! links (11.8). Each is set explicitly when the database opens and checked in the OPTIONS
//! file RocksDB writes back.

use serde::{Deserialize, Serialize};

/// A profile's `target`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Target {
    /// Flink 1.20.x: FRocksDB 6.20.3 behind RocksJava 6.20, with Flink's managed memory.
    #[serde(rename = "flink-1.20")]
    Flink120,
    /// RocksDB 11.8's own defaults for everything Flink does not set explicitly: to measure
    /// what the version differences do, not to tune Flink.
    #[serde(rename = "rocksdb-11.8")]
    RocksDb118,
}

impl Target {
    pub const ALL: [Target; 2] = [Target::Flink120, Target::RocksDb118];

    pub fn name(self) -> &'static str {
        match self {
            Target::Flink120 => "flink-1.20",
            Target::RocksDb118 => "rocksdb-11.8",
        }
    }
}

/// Block checksum of the SST files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Checksum {
    Crc32c,
    Xxh3,
}

impl Checksum {
    /// The name RocksDB writes in its OPTIONS file.
    pub fn rocksdb_name(self) -> &'static str {
        match self {
            Checksum::Crc32c => "kCRC32c",
            Checksum::Xxh3 => "kXXH3",
        }
    }
}

/// The options a target fixes that no profile knob sets.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TargetOptions {
    /// Memtable arena block: what the WriteBufferManager charges per allocation step.
    pub arena_block_size: u64,
    /// RocksDB 8.x's decoupled filter partitions (false: cut at index partition boundaries).
    pub decouple_partitioned_filters: bool,
    pub format_version: i32,
    pub checksum: Checksum,
    pub optimize_filters_for_memory: bool,
    pub compaction_readahead_size: u64,
    /// Flink's TTL compaction filter on column families of states with a TTL.
    pub ttl_compaction_filter: bool,
    /// FRocksDB 6.20's WriteBufferManager flush also switches a column family whose flush is
    /// still pending (RocksDB 7+ skips it): smaller memtables and write stops under pressure.
    pub wbm_switches_pending_flush: bool,
}

impl TargetOptions {
    pub fn new(target: Target, write_buffer_size: u64, use_direct_reads: bool) -> TargetOptions {
        match target {
            // FRocksDB 6.20.3 sanitizes arena_block_size 0 to write_buffer_size / 8, aligned up
            // to 4 KiB (Flink's RocksDBMemoryControllerUtils checks that figure against the
            // WriteBufferManager); RocksJava's BlockBasedTableConfig writes format_version 5 and
            // CRC32c; 6.20 has no filter memory optimisation, couples filter partitions to index
            // partitions, and reads ahead in compactions only with direct reads (its
            // SanitizeOptions raises a zero compaction_readahead_size to 2 MiB then; the
            // OPTIONS file Flink's RocksDB writes shows 2097152, parity/export-check). Flink attaches its TTL compaction filter to
            // every state with a TTL. (Its cache's high-priority pool is a knob of its own.) Its
            // WriteBufferManager flush does not skip column families with a flush pending.
            Target::Flink120 => TargetOptions {
                arena_block_size: (write_buffer_size / 8).div_ceil(4096) * 4096,
                decouple_partitioned_filters: false,
                format_version: 5,
                checksum: Checksum::Crc32c,
                optimize_filters_for_memory: false,
                compaction_readahead_size: if use_direct_reads { 2 << 20 } else { 0 },
                ttl_compaction_filter: true,
                wbm_switches_pending_flush: true,
            },
            // RocksDB 11.8: the arena is capped at 1 MiB.
            Target::RocksDb118 => TargetOptions {
                arena_block_size: (write_buffer_size / 8).min(1 << 20).div_ceil(4096) * 4096,
                decouple_partitioned_filters: true,
                format_version: 7,
                checksum: Checksum::Xxh3,
                optimize_filters_for_memory: true,
                compaction_readahead_size: 2 << 20,
                ttl_compaction_filter: false,
                wbm_switches_pending_flush: false,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flink_arena_is_an_eighth_of_the_write_buffer_rocksdb_11_caps_it() {
        let flink = TargetOptions::new(Target::Flink120, 64 << 20, false);
        let rocks = TargetOptions::new(Target::RocksDb118, 64 << 20, false);
        assert_eq!(flink.arena_block_size, 8 << 20);
        assert_eq!(rocks.arena_block_size, 1 << 20);
        // Aligned up to 4 KiB, as FRocksDB's SanitizeOptions does.
        assert_eq!(
            TargetOptions::new(Target::Flink120, 1_000_000, false).arena_block_size,
            126_976
        );
    }

    #[test]
    fn flink_reads_ahead_in_compactions_only_with_direct_reads() {
        let readahead = |direct| {
            TargetOptions::new(Target::Flink120, 64 << 20, direct).compaction_readahead_size
        };
        assert_eq!((readahead(false), readahead(true)), (0, 2 << 20));
        let rocks = TargetOptions::new(Target::RocksDb118, 64 << 20, false);
        assert_eq!(rocks.compaction_readahead_size, 2 << 20);
    }
}
