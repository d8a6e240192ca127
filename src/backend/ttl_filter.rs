//! Flink's TTL compaction filter (FRocksDB's `FlinkCompactionFilter`), for any state column
//! family whose state has a TTL with cleanup in compaction: during compaction, an entry whose
//! last-access timestamp is a TTL or more behind processing time is dropped, so expired state
//! leaves the SST files without being read.
//!
//! Flink configures it per state (`RocksDbTtlCompactFiltersManager.configCompactFilter`):
//! `Config.createForValue` (timestamp at offset 0: a ValueState's value is the TtlValue
//! `[timestamp (8 bytes, big-endian)][value]`) or `Config.createForMap` (offset 1, after the
//! map value's null flag), with the state's `queryTimeAfterNumEntries`: the filter asks for the
//! current time on its first entry and then once every that many entries. It also sets the
//! column family's `periodic_compaction_seconds` to the strategy's periodic compaction time
//! (30 days by default), see [`install`].

use std::ffi::{CStr, CString};
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use rocksdb::Options;
use rocksdb::compaction_filter::{CompactionFilter, Decision};
use rocksdb::compaction_filter_factory::{CompactionFilterContext, CompactionFilterFactory};

/// `StateTtlConfig.Builder#cleanupInRocksdbCompactFilter`'s default.
pub const QUERY_TIME_AFTER_NUM_ENTRIES: u64 = 1000;

/// `RocksdbCompactFilterCleanupStrategy.DEFAULT_PERIODIC_COMPACTION_TIME` (30 days), which
/// Flink 1.20 sets as the column family's `periodic_compaction_seconds`.
pub const PERIODIC_COMPACTION_SECONDS: u64 = 30 * 24 * 3600;

pub use crate::model::layout::TtlLayout;

/// One state's filter configuration (FRocksDB's `FlinkCompactionFilter::Config`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TtlFilterConfig {
    pub ttl_ms: i64,
    pub query_time_after: u64,
    pub layout: TtlLayout,
}

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

/// Attaches Flink's TTL compaction filter for `config` to a column family's options, with
/// the periodic compaction Flink 1.20 sets beside it.
pub fn install(opts: &mut Options, config: TtlFilterConfig, clock: TtlClock) {
    opts.set_compaction_filter_factory(TtlFilterFactory::with_config(config, clock));
    opts.set_periodic_compaction_seconds(PERIODIC_COMPACTION_SECONDS);
}

/// Flink's factory on a TTL state without the compaction-filter cleanup: attached, never
/// configured (`RocksDbTtlCompactFiltersManager.setAndRegisterCompactFilterIfStateTtl` attaches
/// it to every TTL state, `configCompactFilter` configures it only for
/// `cleanupInRocksdbCompactFilter`), so FRocksDB's `FlinkCompactionFilter` keeps every entry and
/// no periodic compaction is set.
pub fn install_unconfigured(opts: &mut Options) {
    let mut factory = TtlFilterFactory::with_config(
        TtlFilterConfig {
            ttl_ms: i64::MAX,
            query_time_after: QUERY_TIME_AFTER_NUM_ENTRIES,
            layout: TtlLayout::Value,
        },
        TtlClock::default(),
    );
    factory.configured = false;
    opts.set_compaction_filter_factory(factory);
}

pub struct TtlFilterFactory {
    config: TtlFilterConfig,
    clock: TtlClock,
    name: CString,
    /// False: attached but never configured, the filter keeps every entry.
    configured: bool,
}

impl TtlFilterFactory {
    /// A MapState's filter with the default query interval (the frequency job's timerState).
    pub fn new(ttl: i64, clock: TtlClock) -> TtlFilterFactory {
        Self::with_config(
            TtlFilterConfig {
                ttl_ms: ttl,
                query_time_after: QUERY_TIME_AFTER_NUM_ENTRIES,
                layout: TtlLayout::Map,
            },
            clock,
        )
    }

    pub fn with_config(config: TtlFilterConfig, clock: TtlClock) -> TtlFilterFactory {
        TtlFilterFactory {
            config,
            clock,
            name: c"FlinkCompactionFilterFactory".to_owned(),
            configured: true,
        }
    }
}

impl CompactionFilterFactory for TtlFilterFactory {
    type Filter = TtlFilter;

    fn create(&mut self, _context: CompactionFilterContext) -> TtlFilter {
        TtlFilter {
            config: self.config,
            clock: self.clock.clone(),
            // FRocksDB starts both at Long.MAX_VALUE, so the first entry reads the clock.
            now: i64::MAX,
            seen: u64::MAX,
            name: c"FlinkCompactionFilter".to_owned(),
            configured: self.configured,
        }
    }

    fn name(&self) -> &CStr {
        &self.name
    }
}

/// One compaction's filter (used from one thread).
pub struct TtlFilter {
    config: TtlFilterConfig,
    clock: TtlClock,
    now: i64,
    seen: u64,
    name: CString,
    /// False: FRocksDB's filter without a config keeps every entry.
    configured: bool,
}

/// FRocksDB's `Decide` (and Flink's `TtlUtils.expired`): `ts + min(ttl, MAX - ts) <= now`
/// for a positive `ts`, `ts + ttl <= now` otherwise.
pub fn expired(ts: i64, ttl: i64, now: i64) -> bool {
    let ttl = if ts > 0 { ttl.min(i64::MAX - ts) } else { ttl };
    ts.wrapping_add(ttl) <= now
}

impl TtlFilterConfig {
    /// Whether the filter drops an entry whose value is `value` at processing time `now`.
    pub fn drops(&self, value: &[u8], now: i64) -> bool {
        let offset = self.layout.timestamp_offset();
        // Too short to hold a timestamp: kept, as FRocksDB keeps it.
        let Some(bytes) = value.get(offset..offset + 8) else {
            return false;
        };
        let mut ts = [0u8; 8];
        ts.copy_from_slice(bytes);
        expired(i64::from_be_bytes(ts), self.ttl_ms, now)
    }
}

impl TtlFilter {
    /// Whether an entry whose value is `value` has expired by the filter's time.
    fn expired(&mut self, value: &[u8]) -> bool {
        // FlinkCompactionFilter::UpdateCurrentTimestampIfStale, called for every entry before
        // anything else: the time is read when the counter reached queryTimeAfterNumEntries.
        if self.seen >= self.config.query_time_after {
            self.seen = 0;
            self.now = self.clock.now();
        }
        self.seen += 1;
        self.config.drops(value, self.now)
    }
}

impl CompactionFilter for TtlFilter {
    // RocksDB's C API hands only plain values (no merge operands) to this filter, which is
    // what FRocksDB decides on for Value-type configs (value and map states) too.
    fn filter(&mut self, _level: u32, _key: &[u8], value: &[u8]) -> Decision {
        if self.configured && self.expired(value) {
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

    fn map_value(ts: i64) -> Vec<u8> {
        let mut v = vec![0u8];
        v.extend_from_slice(&ts.to_be_bytes());
        v.extend_from_slice(b"payload");
        v
    }

    fn filter(config: TtlFilterConfig, clock: &TtlClock) -> TtlFilter {
        TtlFilterFactory::with_config(config, clock.clone()).create(CompactionFilterContext {
            is_full_compaction: false,
            is_manual_compaction: false,
        })
    }

    #[test]
    fn an_unconfigured_filter_keeps_even_expired_entries() {
        let clock = TtlClock::default();
        clock.set(10_000);
        let config = TtlFilterConfig {
            ttl_ms: 1_000,
            query_time_after: 1,
            layout: TtlLayout::Map,
        };
        let mut factory = TtlFilterFactory::with_config(config, clock.clone());
        factory.configured = false;
        let mut f = factory.create(CompactionFilterContext {
            is_full_compaction: true,
            is_manual_compaction: true,
        });
        assert!(matches!(f.filter(1, b"k", &map_value(1)), Decision::Keep));
        let mut configured = filter(config, &clock);
        assert!(matches!(
            configured.filter(1, b"k", &map_value(1)),
            Decision::Remove
        ));
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
        assert!(matches!(
            f.filter(1, b"k", &map_value(9_000)),
            Decision::Remove
        ));
        assert!(matches!(
            f.filter(1, b"k", &map_value(9_001)),
            Decision::Keep
        ));
        // Too short to hold a timestamp: kept, as Flink keeps what it cannot read.
        assert!(matches!(f.filter(1, b"k", &[0, 1, 2]), Decision::Keep));
    }

    #[test]
    fn a_value_state_has_its_timestamp_at_offset_zero() {
        let clock = TtlClock::default();
        clock.set(10_000);
        let config = TtlFilterConfig {
            ttl_ms: 1_000,
            query_time_after: 1000,
            layout: TtlLayout::Value,
        };
        let mut f = filter(config, &clock);
        // `[ts][Boolean true]`, as a ValueState<Boolean> with TTL stores it.
        let mut v = 9_000i64.to_be_bytes().to_vec();
        v.push(1);
        assert!(matches!(f.filter(1, b"k", &v), Decision::Remove));
        let mut v = 9_500i64.to_be_bytes().to_vec();
        v.push(1);
        assert!(matches!(f.filter(1, b"k", &v), Decision::Keep));
        // Read at the map offset, the same bytes would give another timestamp.
        assert!(matches!(f.filter(1, b"k", &[1u8; 8]), Decision::Keep));
    }

    #[test]
    fn reads_the_clock_every_query_time_after_entries() {
        for query_time_after in [1000, 3] {
            let clock = TtlClock::default();
            clock.set(5_000);
            let config = TtlFilterConfig {
                ttl_ms: 1_000,
                query_time_after,
                layout: TtlLayout::Map,
            };
            let mut f = filter(config, &clock);
            // The first entry reads the clock (5,000: not expired) …
            assert!(matches!(
                f.filter(1, b"k", &map_value(4_500)),
                Decision::Keep
            ));
            clock.set(50_000);
            // … which is not read again for the next query_time_after - 1 entries …
            for _ in 1..query_time_after {
                assert!(matches!(
                    f.filter(1, b"k", &map_value(4_500)),
                    Decision::Keep
                ));
            }
            // … and the next one reads 50,000: from then on the entry has expired.
            assert!(matches!(
                f.filter(1, b"k", &map_value(4_500)),
                Decision::Remove
            ));
        }
    }

    #[test]
    fn expiry_saturates_as_flinks() {
        assert!(expired(100, 50, 150));
        assert!(!expired(100, 50, 149));
        assert!(!expired(i64::MAX - 10, 1_000, i64::MAX - 1));
        assert!(expired(i64::MAX - 10, 1_000, i64::MAX));
    }
}
