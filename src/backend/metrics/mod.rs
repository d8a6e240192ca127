//! Samples what RocksDB reports about itself: tickers, histograms, properties, cfstats and the
//! operator thread's perf context. Produces plain data (`model::metrics`, no RocksDB types) for snapshots.

use rocksdb::statistics::{Histogram, Ticker};

mod sampler;

pub use sampler::RocksDbSampler;

use super::StateBackend;
use super::perf::PerfCounts;

pub use crate::model::metrics::{
    BloomSample, CacheHitRates, ColumnFamilyLsm, HitRate, IoSample, LevelSample, LookupSample,
    LsmSample, MemorySample, RocksDbSample, StallCauses, StallSample, Tickers,
};

impl Tickers {
    fn read(backend: &StateBackend) -> Tickers {
        let o = backend.options();
        let (wbm_flushes, wbm_flush_data_bytes) = backend.wbm_flushes();
        let t = |ticker| o.get_ticker_count(ticker);
        Tickers {
            block_cache_hit: t(Ticker::BlockCacheHit),
            block_cache_miss: t(Ticker::BlockCacheMiss),
            filter_hit: t(Ticker::BlockCacheFilterHit),
            filter_miss: t(Ticker::BlockCacheFilterMiss),
            index_hit: t(Ticker::BlockCacheIndexHit),
            index_miss: t(Ticker::BlockCacheIndexMiss),
            data_hit: t(Ticker::BlockCacheDataHit),
            data_miss: t(Ticker::BlockCacheDataMiss),
            bloom_useful: t(Ticker::BloomFilterUseful),
            bloom_full_positive: t(Ticker::BloomFilterFullPositive),
            bloom_full_true_positive: t(Ticker::BloomFilterFullTruePositive),
            keys_read: t(Ticker::NumberKeysRead),
            keys_written: t(Ticker::NumberKeysWritten),
            iterator_seeks: t(Ticker::NumberDbSeek),
            iterator_nexts: t(Ticker::NumberDbNext),
            bytes_written: t(Ticker::BytesWritten),
            bytes_read: t(Ticker::BytesRead),
            flush_write_bytes: t(Ticker::FlushWriteBytes),
            compact_write_bytes: t(Ticker::CompactWriteBytes),
            compact_read_bytes: t(Ticker::CompactReadBytes),
            compaction_filter_drops: t(Ticker::CompactionKeyDropUser),
            stall_micros: t(Ticker::StallMicros),
            memtable_hit: t(Ticker::MemtableHit),
            memtable_miss: t(Ticker::MemtableMiss),
            flushes: o.get_histogram_data(Histogram::FlushTime).count(),
            compactions: o.get_histogram_data(Histogram::CompactionTime).count(),
            iter_skips: t(Ticker::NumberIterSkip),
            db_nexts: t(Ticker::NumberDbNext),
            wbm_flushes,
            wbm_flush_data_bytes,
        }
    }
}

impl StallCauses {
    fn add_cfstats(&mut self, cfstats: &str) {
        let Some(line) = cfstats
            .lines()
            .find(|l| l.starts_with("Write Stall (count):"))
        else {
            return;
        };
        for item in line["Write Stall (count):".len()..].split(',') {
            let Some((name, value)) = item.split_once(':') else {
                continue;
            };
            let Ok(value) = value.trim().parse::<u64>() else {
                continue;
            };
            let slot = match name.trim() {
                "memtable-limit-delays" => &mut self.memtable_limit_delays,
                "memtable-limit-stops" => &mut self.memtable_limit_stops,
                "l0-file-count-limit-delays" => &mut self.l0_file_count_delays,
                "l0-file-count-limit-stops" => &mut self.l0_file_count_stops,
                "pending-compaction-bytes-delays" => &mut self.pending_compaction_bytes_delays,
                "pending-compaction-bytes-stops" => &mut self.pending_compaction_bytes_stops,
                _ => continue,
            };
            *slot += value;
        }
    }
}

impl LookupSample {
    pub fn new(lookups: u64, perf: &PerfCounts) -> LookupSample {
        let per = |v: u64| {
            if lookups == 0 {
                0.0
            } else {
                v as f64 / lookups as f64
            }
        };
        LookupSample {
            lookups,
            filter_block_reads: perf.filter_block_read_count,
            index_block_reads: perf.index_block_read_count,
            filter_bytes_read: perf.filter_block_read_byte,
            index_bytes_read: perf.index_block_read_byte,
            data_bytes_read: perf.data_block_read_byte,
            bytes_read: perf.block_read_byte,
            filter_block_reads_per_lookup: per(perf.filter_block_read_count),
            index_block_reads_per_lookup: per(perf.index_block_read_count),
            filter_bytes_read_per_lookup: per(perf.filter_block_read_byte),
            index_bytes_read_per_lookup: per(perf.index_block_read_byte),
            bytes_read_per_lookup: per(perf.block_read_byte),
        }
    }
}

/// Compaction score and files being compacted per level from cfstats' "Compaction Stats"
/// table rows (`  L1  2/0  8.01 MB 0.9 ...`).
pub fn level_scores(cfstats: &str) -> Vec<(u32, f64, u64)> {
    let mut out = Vec::new();
    for line in cfstats.lines() {
        let tokens: Vec<&str> = line.split_whitespace().collect();
        let Some(level) = tokens
            .first()
            .and_then(|t| t.strip_prefix('L'))
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        // Level, Files ("2/0"), Size value, Size unit, Score.
        if let Some(score) = tokens.get(4).and_then(|t| t.parse::<f64>().ok())
            && let Some((_, compacting)) = tokens.get(1).and_then(|t| t.split_once('/'))
            && !out.iter().any(|(l, _, _)| *l == level)
        {
            out.push((level, score, compacting.parse().unwrap_or(0)));
        }
    }
    out
}

/// Bits per key of the bloom filters described by RocksDB's table-properties text
/// (`...; filter block size=N; # entries for filter=M; ...`).
pub fn bloom_bits_from_table_properties(text: &str) -> Option<f64> {
    let size = table_property(text, "filter block size")?;
    let entries = table_property(text, "# entries for filter")?;
    (size > 0.0 && entries > 0.0).then(|| size * 8.0 / entries)
}

/// Bytes of index blocks and of filter blocks in table-properties text (the index's name
/// carries its format in parentheses: `index block size (user-key? 1, delta-value? 1)=...`).
pub fn index_and_filter_bytes(text: &str) -> (u64, u64) {
    let index = text
        .split(';')
        .find_map(|item| {
            let (k, v) = item.split_once('=')?;
            k.trim()
                .starts_with("index block size")
                .then(|| v.trim().parse::<f64>().ok())
                .flatten()
        })
        .unwrap_or(0.0);
    let filter = table_property(text, "filter block size").unwrap_or(0.0);
    (index as u64, filter as u64)
}

/// One numeric field of RocksDB's table-properties text (`name=value; ...`).
pub fn table_property(text: &str, name: &str) -> Option<f64> {
    text.split(';').find_map(|item| {
        let (k, v) = item.split_once('=')?;
        (k.trim() == name)
            .then(|| v.trim().parse::<f64>().ok())
            .flatten()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn level_scores_come_from_the_compaction_stats_table() {
        let cfstats = "\n** Compaction Stats [window-stats] **\nLevel    Files   Size     Score Read(GB)\n-----\n  L0      2/1    7.91 MB   0.5      0.0\n  L1      1/0   20.00 KB   1.2      0.0\n Sum      3/0   27.91 MB   0.0      0.0\n\n** Compaction Stats [window-stats] **\nPriority    Files   Size     Score\n Low      0/0    0.00 KB   0.0\n";
        // L0: 2 files, 1 of them being compacted.
        assert_eq!(level_scores(cfstats), vec![(0, 0.5, 1), (1, 1.2, 0)]);
    }

    #[test]
    fn index_and_filter_bytes_come_from_the_table_properties() {
        let text = "# data blocks=10; # entries=1000; index block size (user-key? 1, delta-value? 1)=4096; filter block size=1750; ";
        assert_eq!(index_and_filter_bytes(text), (4096, 1750));
        assert_eq!(index_and_filter_bytes("# entries=0; "), (0, 0));
    }

    #[test]
    fn bloom_bits_come_from_filter_size_and_entries() {
        let text =
            "# data blocks=10; # entries=1000; filter block size=1750; # entries for filter=1000; ";
        assert_eq!(bloom_bits_from_table_properties(text), Some(14.0));
        assert_eq!(
            bloom_bits_from_table_properties(
                "# entries=5; filter block size=0; # entries for filter=0"
            ),
            None
        );
    }

    #[test]
    fn cfstats_write_stall_line_parses_by_cause() {
        let text = "** Compaction Stats [window-stats] **\n\
            Write Stall (count): cf-l0-file-count-limit-delays-with-ongoing-compaction: 4, cf-l0-file-count-limit-stops-with-ongoing-compaction: 0, l0-file-count-limit-delays: 5, l0-file-count-limit-stops: 1, memtable-limit-delays: 2, memtable-limit-stops: 0, pending-compaction-bytes-delays: 0, pending-compaction-bytes-stops: 3, total-delays: 7, total-stops: 4\n";
        let mut causes = StallCauses::default();
        causes.add_cfstats(text);
        causes.add_cfstats(text);
        assert_eq!(causes.l0_file_count_delays, 10);
        assert_eq!(causes.l0_file_count_stops, 2);
        assert_eq!(causes.memtable_limit_delays, 4);
        assert_eq!(causes.pending_compaction_bytes_stops, 6);
        assert_eq!(causes.total(), 22);
    }
}
