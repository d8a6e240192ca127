//! Flink's TTL compaction filter (FRocksDB's `FlinkCompactionFilter`) for the timerState map:
//! during compaction, an entry whose last-write timestamp is a TTL or more behind processing
//! time is dropped, so expired state leaves the SST files without being read.
//!
//! A map state's value is `[null flag][TtlValue: timestamp (8 bytes, big-endian)][value]`, so
//! the timestamp sits at offset 1. Like Flink's filter, it asks for the current time on the first
//! entry and then only every [`QUERY_TIME_AFTER_NUM_ENTRIES`] entries (StateTtlConfig's default).

use std::ffi::{CStr, CString};
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use rocksdb::compaction_filter::{CompactionFilter, Decision};
use rocksdb::compaction_filter_factory::{CompactionFilterContext, CompactionFilterFactory};

/// `StateTtlConfig.Builder#cleanupInRocksdbCompactFilter`'s default.
pub const QUERY_TIME_AFTER_NUM_ENTRIES: u64 = 1000;

/// Offset of the TTL timestamp in a map state's value (after the null flag).
const TIMESTAMP_OFFSET: usize = 1;

/// The job's processing time (ms), shared with the compaction threads.
#[derive(Debug, Clone, Default)]
pub struct TtlClock(Arc<AtomicI64>);

impl TtlClock {
    pub fn set(&self, now: i64) {
        self.0.store(now, Ordering::Relaxed);
    }

    pub fn now(&self) -> i64 {
        self.0.load(Ordering::Relaxed)
    }
}

pub struct TtlFilterFactory {
    ttl: i64,
    clock: TtlClock,
    name: CString,
}

impl TtlFilterFactory {
    pub fn new(ttl: i64, clock: TtlClock) -> TtlFilterFactory {
        TtlFilterFactory {
            ttl,
            clock,
            name: c"FlinkCompactionFilterFactory".to_owned(),
        }
    }
}

impl CompactionFilterFactory for TtlFilterFactory {
    type Filter = TtlFilter;

    fn create(&mut self, _context: CompactionFilterContext) -> TtlFilter {
        TtlFilter {
            ttl: self.ttl,
            clock: self.clock.clone(),
            now: 0,
            // Full, so the first entry reads the clock (then entries 1001, 2001, …).
            seen: QUERY_TIME_AFTER_NUM_ENTRIES,
            name: c"FlinkCompactionFilter".to_owned(),
        }
    }

    fn name(&self) -> &CStr {
        &self.name
    }
}

/// One compaction's filter (used from one thread).
pub struct TtlFilter {
    ttl: i64,
    clock: TtlClock,
    now: i64,
    seen: u64,
    name: CString,
}

impl TtlFilter {
    /// Whether an entry written at `value`'s timestamp has expired by the filter's time.
    fn expired(&mut self, value: &[u8]) -> bool {
        // FRocksDB's UpdateCurrentTimestampIfStale: the time is read on the first entry and
        // again after every QUERY_TIME_AFTER_NUM_ENTRIES entries.
        if self.seen >= QUERY_TIME_AFTER_NUM_ENTRIES {
            self.seen = 0;
            self.now = self.clock.now();
        }
        self.seen += 1;
        let Some(bytes) = value.get(TIMESTAMP_OFFSET..TIMESTAMP_OFFSET + 8) else {
            return false;
        };
        let mut ts = [0u8; 8];
        ts.copy_from_slice(bytes);
        // Flink's TtlUtils.expired: lastAccess + ttl <= now (saturating at the top).
        i64::from_be_bytes(ts).saturating_add(self.ttl) <= self.now
    }
}

impl CompactionFilter for TtlFilter {
    fn filter(&mut self, _level: u32, _key: &[u8], value: &[u8]) -> Decision {
        if self.expired(value) {
            Decision::Remove
        } else {
            Decision::Keep
        }
    }

    fn name(&self) -> &CStr {
        &self.name
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(ts: i64) -> Vec<u8> {
        let mut v = vec![0u8];
        v.extend_from_slice(&ts.to_be_bytes());
        v.extend_from_slice(b"payload");
        v
    }

    #[test]
    fn drops_entries_a_ttl_behind_and_keeps_the_rest() {
        let clock = TtlClock::default();
        clock.set(10_000);
        let mut factory = TtlFilterFactory::new(1_000, clock.clone());
        let mut f = factory.create(CompactionFilterContext {
            is_full_compaction: false,
            is_manual_compaction: false,
        });
        assert!(matches!(f.filter(1, b"k", &value(9_000)), Decision::Remove));
        assert!(matches!(f.filter(1, b"k", &value(9_001)), Decision::Keep));
        // Too short to hold a timestamp: kept, as Flink keeps what it cannot read.
        assert!(matches!(f.filter(1, b"k", &[0, 1, 2]), Decision::Keep));
    }

    #[test]
    fn reads_the_clock_only_every_thousand_entries() {
        let clock = TtlClock::default();
        clock.set(5_000);
        let mut factory = TtlFilterFactory::new(1_000, clock.clone());
        let mut f = factory.create(CompactionFilterContext {
            is_full_compaction: false,
            is_manual_compaction: false,
        });
        // The first entry reads the clock (5,000: not expired) …
        assert!(matches!(f.filter(1, b"k", &value(4_500)), Decision::Keep));
        clock.set(50_000);
        // … which is not read again for the next 999 entries …
        for _ in 1..QUERY_TIME_AFTER_NUM_ENTRIES {
            assert!(matches!(f.filter(1, b"k", &value(4_500)), Decision::Keep));
        }
        // … and the 1001st reads 50,000: from then on the entry has expired.
        assert!(matches!(f.filter(1, b"k", &value(4_500)), Decision::Remove));
    }
}
