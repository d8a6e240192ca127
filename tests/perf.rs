//! Perf-context counters read on the lookup thread agree with RocksDB's own statistics.

use rocksdb::statistics::Ticker;
use statebench::backend::perf::PerfCounters;
use statebench::backend::{CF_WINDOW_STATS, StateBackend};
use statebench::config::{ByteSize, Profile};

/// Writes `keys` entries, flushes into SST files, then looks up `lookups` absent keys.
/// The profile is the shipped one with files big enough for one SST of all keys, so the
/// monolithic filter (~1.7 MB) is larger than a block-cache shard, as in case study 2.
fn lookups_after_flush(
    profile: &str,
    keys: u32,
    lookups: u32,
) -> (statebench::backend::perf::PerfCounts, u64, u64) {
    let dir = tempfile::tempdir().unwrap();
    let mut knobs = Profile::load(profile).unwrap().knobs;
    knobs.target_file_size_base = ByteSize(128 << 20);
    knobs.max_bytes_for_level_base = ByteSize(512 << 20);
    let profile = Profile::from_knobs(profile, knobs).unwrap();
    let backend = StateBackend::open(dir.path(), &profile).unwrap();
    let cf = backend.cf(CF_WINDOW_STATS).unwrap();
    // A scattered key order makes the flushed L0 files overlap, so the compaction below
    // really merges them into one big file instead of moving them down.
    for i in 0..keys {
        let k = (u64::from(i) * 7_919) % u64::from(keys);
        backend
            .db()
            .put_cf(cf, format!("key-{k:08}"), k.to_le_bytes().repeat(3))
            .unwrap();
    }
    backend.db().flush_cf(cf).unwrap();
    // Out of L0, whose filters Flink pins in the cache.
    backend
        .db()
        .compact_range_cf(cf, None::<&[u8]>, None::<&[u8]>);
    let filter_misses_before = backend
        .options()
        .get_ticker_count(Ticker::BlockCacheFilterMiss);
    let perf = PerfCounters::start().unwrap();
    for i in 0..lookups {
        assert!(
            backend
                .db()
                .get_cf(cf, format!("key-{:08}-absent", i * 4_999))
                .unwrap()
                .is_none()
        );
    }
    let counts = perf.read();
    let filter_misses = backend
        .options()
        .get_ticker_count(Ticker::BlockCacheFilterMiss)
        - filter_misses_before;
    let table = backend
        .db()
        .property_value_cf(cf, "rocksdb.aggregated-table-properties")
        .unwrap()
        .unwrap();
    let filter_size =
        statebench::backend::metrics::table_property(&table, "filter block size").unwrap() as u64;
    (counts, filter_misses, filter_size)
}

#[test]
fn filter_block_reads_and_bytes_match_rocksdbs_statistics() {
    // A monolithic filter of 1M keys (~1.7 MB) behind a 27 MB cache and direct reads.
    let (mono, mono_misses, filter_size) =
        lookups_after_flush("hours-monolithic-filter", 1_000_000, 200);
    assert!(mono.filter_block_read_count > 0, "{mono:?}");
    assert_eq!(
        mono.filter_block_read_count, mono_misses,
        "perf context and tickers agree on filter reads"
    );
    // Every filter read reads the whole monolithic filter (plus RocksDB's 5-byte block trailer).
    let per_read = mono.filter_block_read_byte / mono.filter_block_read_count;
    assert!(
        (filter_size..filter_size + 64).contains(&per_read),
        "{per_read} bytes per read, filter {filter_size}"
    );
    // Absent keys are answered by the bloom filter: (almost) no data block is read.
    assert!(
        mono.data_block_read_byte < mono.filter_block_read_byte / 100,
        "{mono:?}"
    );

    let (part, part_misses, _) = lookups_after_flush("hours-partitioned-filter", 1_000_000, 200);
    assert_eq!(part.filter_block_read_count, part_misses);
    let per_lookup =
        |c: &statebench::backend::perf::PerfCounts| c.filter_block_read_byte as f64 / 200.0;
    assert!(
        per_lookup(&mono) > 100.0 * per_lookup(&part),
        "monolithic {} vs partitioned {} filter bytes per lookup",
        per_lookup(&mono),
        per_lookup(&part)
    );
}
