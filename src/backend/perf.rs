//! RocksDB's per-thread perf context: block reads by type on the thread that does lookups.
//!
//! The safe crate exposes only part of the counters, so this wraps the C API directly.

use std::ffi::CStr;

/// Perf counters of the calling thread, cumulative since `PerfCounters::start` or the last reset.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct PerfCounts {
    pub block_read_count: u64,
    pub block_read_byte: u64,
    pub block_cache_hit_count: u64,
    pub filter_block_read_count: u64,
    pub index_block_read_count: u64,
    pub data_block_read_byte: u64,
    pub index_block_read_byte: u64,
    pub filter_block_read_byte: u64,
    pub bloom_sst_hit_count: u64,
    pub bloom_sst_miss_count: u64,
}

impl PerfCounts {
    pub fn delta(&self, earlier: &PerfCounts) -> PerfCounts {
        PerfCounts {
            block_read_count: self
                .block_read_count
                .saturating_sub(earlier.block_read_count),
            block_read_byte: self.block_read_byte.saturating_sub(earlier.block_read_byte),
            block_cache_hit_count: self
                .block_cache_hit_count
                .saturating_sub(earlier.block_cache_hit_count),
            filter_block_read_count: self
                .filter_block_read_count
                .saturating_sub(earlier.filter_block_read_count),
            index_block_read_count: self
                .index_block_read_count
                .saturating_sub(earlier.index_block_read_count),
            data_block_read_byte: self
                .data_block_read_byte
                .saturating_sub(earlier.data_block_read_byte),
            index_block_read_byte: self
                .index_block_read_byte
                .saturating_sub(earlier.index_block_read_byte),
            filter_block_read_byte: self
                .filter_block_read_byte
                .saturating_sub(earlier.filter_block_read_byte),
            bloom_sst_hit_count: self
                .bloom_sst_hit_count
                .saturating_sub(earlier.bloom_sst_hit_count),
            bloom_sst_miss_count: self
                .bloom_sst_miss_count
                .saturating_sub(earlier.bloom_sst_miss_count),
        }
    }
}

// Indices in RocksDB 11.8's C API `rocksdb_perfcontext_metric` enum (include/rocksdb/c.h).
const BLOCK_CACHE_HIT_COUNT: i32 = 1;
const BLOCK_READ_COUNT: i32 = 2;
const BLOCK_READ_BYTE: i32 = 3;
const BLOOM_SST_HIT_COUNT: i32 = 44;
const BLOOM_SST_MISS_COUNT: i32 = 45;
const DATA_BLOCK_READ_BYTE: i32 = 78;
const INDEX_BLOCK_READ_BYTE: i32 = 79;
const FILTER_BLOCK_READ_BYTE: i32 = 80;
/// `rocksdb_enable_count`: counters only, no timers.
const PERF_LEVEL_ENABLE_COUNT: i32 = 2;
/// `rocksdb_disable`.
const PERF_LEVEL_DISABLE: i32 = 1;

/// The calling thread's perf context. Not `Send`: perf contexts are thread-local.
pub struct PerfCounters {
    ctx: *mut librocksdb_sys::rocksdb_perfcontext_t,
}

impl PerfCounters {
    /// Enables count-level perf stats on this thread and resets its counters.
    pub fn start() -> Option<PerfCounters> {
        // SAFETY: plain C calls; the returned pointer is checked and owned by this struct.
        unsafe {
            librocksdb_sys::rocksdb_set_perf_level(PERF_LEVEL_ENABLE_COUNT);
            let ctx = librocksdb_sys::rocksdb_perfcontext_create();
            if ctx.is_null() {
                return None;
            }
            librocksdb_sys::rocksdb_perfcontext_reset(ctx);
            Some(PerfCounters { ctx })
        }
    }

    fn metric(&self, id: i32) -> u64 {
        // SAFETY: `ctx` is a live perf context created by `start`; ids are valid enum values.
        unsafe { librocksdb_sys::rocksdb_perfcontext_metric(self.ctx, id) }
    }

    /// Reads the counters. Filter/index block read *counts* are only in the text report.
    pub fn read(&self) -> PerfCounts {
        let report = self.report();
        let from_report = |name: &str| parse_report_counter(&report, name).unwrap_or(0);
        PerfCounts {
            block_read_count: self.metric(BLOCK_READ_COUNT),
            block_read_byte: self.metric(BLOCK_READ_BYTE),
            block_cache_hit_count: self.metric(BLOCK_CACHE_HIT_COUNT),
            filter_block_read_count: from_report("filter_block_read_count"),
            index_block_read_count: from_report("index_block_read_count"),
            data_block_read_byte: self.metric(DATA_BLOCK_READ_BYTE),
            index_block_read_byte: self.metric(INDEX_BLOCK_READ_BYTE),
            filter_block_read_byte: self.metric(FILTER_BLOCK_READ_BYTE),
            bloom_sst_hit_count: self.metric(BLOOM_SST_HIT_COUNT),
            bloom_sst_miss_count: self.metric(BLOOM_SST_MISS_COUNT),
        }
    }

    fn report(&self) -> String {
        // SAFETY: the C API returns a malloc'ed NUL-terminated string that we copy and free.
        unsafe {
            let ptr = librocksdb_sys::rocksdb_perfcontext_report(self.ctx, 0);
            if ptr.is_null() {
                return String::new();
            }
            let text = CStr::from_ptr(ptr).to_string_lossy().into_owned();
            librocksdb_sys::rocksdb_free(ptr.cast());
            text
        }
    }
}

impl Drop for PerfCounters {
    fn drop(&mut self) {
        // SAFETY: `ctx` was created by `rocksdb_perfcontext_create` and is destroyed once.
        unsafe { librocksdb_sys::rocksdb_perfcontext_destroy(self.ctx) }
    }
}

/// Turns this thread's perf counting off while alive (an iterator scan is not a point lookup),
/// and back to count level when dropped.
pub struct Suspended(());

impl Suspended {
    pub fn new() -> Suspended {
        // SAFETY: a plain C call that sets a thread-local level.
        unsafe { librocksdb_sys::rocksdb_set_perf_level(PERF_LEVEL_DISABLE) };
        Suspended(())
    }
}

impl Default for Suspended {
    fn default() -> Self {
        Suspended::new()
    }
}

impl Drop for Suspended {
    fn drop(&mut self) {
        // SAFETY: as above.
        unsafe { librocksdb_sys::rocksdb_set_perf_level(PERF_LEVEL_ENABLE_COUNT) };
    }
}

/// Finds `name = N` in RocksDB's perf context report.
fn parse_report_counter(report: &str, name: &str) -> Option<u64> {
    report.split(',').find_map(|item| {
        let (k, v) = item.split_once('=')?;
        (k.trim() == name).then(|| v.trim().parse().ok()).flatten()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn report_counters_parse() {
        let report = "user_key_comparison_count = 10, index_block_read_count = 3, filter_block_read_count = 7, ";
        assert_eq!(
            parse_report_counter(report, "filter_block_read_count"),
            Some(7)
        );
        assert_eq!(
            parse_report_counter(report, "index_block_read_count"),
            Some(3)
        );
        assert_eq!(parse_report_counter(report, "missing"), None);
    }
}
