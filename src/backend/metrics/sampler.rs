//! Per-interval samples of a job's RocksDB instances (a chain has one per operator).

use crate::backend::CfOps;
use std::sync::Arc;

use super::{
    BloomSample, CacheHitRates, ColumnFamilyLsm, IoSample, LevelSample, LookupSample, LsmSample,
    MemorySample, RocksDbSample, StallCauses, StallSample, Tickers, level_scores,
};
use crate::backend::StateBackend;
use crate::backend::perf::PerfCounts;

/// One column family's compaction scores: its operator, its name, per level (level, score,
/// files being compacted).
type CfScores = (usize, String, Vec<(u32, f64, u64)>);

/// Turns cumulative RocksDB counters into per-interval samples. RocksDB's counters start again
/// at zero when its database is reopened (a job restarted from a checkpoint); the cumulative
/// counts a sample reports go on across reopenings, so that run totals hold every opening's work.
#[derive(Default)]
pub struct RocksDbSampler {
    /// The open database's tickers at the last sample.
    prev_tickers: Tickers,
    prev_perf: PerfCounts,
    /// The open database's stall counts at the last sample.
    prev_causes: StallCauses,
    /// What the run's earlier openings counted, up to their last sample.
    base_tickers: Tickers,
    base_causes: StallCauses,
    /// What RocksDB counted for work that is not the run's (a warmed cache's reads).
    excluded: Tickers,
}

impl RocksDbSampler {
    /// The database was reopened (and the operator thread's perf context reset): its counters
    /// start from zero, on top of what the earlier openings counted up to their last sample.
    pub fn reopened(&mut self) {
        self.base_tickers = self.base_tickers.plus(&self.prev_tickers);
        self.base_causes = self.base_causes.plus(&self.prev_causes);
        self.prev_tickers = Tickers::default();
        self.prev_causes = StallCauses::default();
        self.prev_perf = PerfCounts::default();
    }

    /// RocksDB's counts up to now are not the run's (reads that warmed its cache before it
    /// started): neither the next interval nor the run's totals hold them.
    pub fn exclude_until_now(&mut self, backends: &[Arc<StateBackend>]) {
        let now = backends
            .iter()
            .fold(Tickers::default(), |t, b| t.plus(&Tickers::read(b)));
        self.excluded = self.excluded.plus(&now.minus(&self.prev_tickers));
        self.prev_tickers = now;
    }

    /// Samples RocksDB: every instance of the job (`backends`, in chain order; each has its
    /// own statistics, summed here; the block cache and WriteBufferManager they share are read
    /// once). `perf` is the operator thread's cumulative perf context and `lookups` the point
    /// lookups the job issued in this interval.
    pub fn sample(
        &mut self,
        backends: &[Arc<StateBackend>],
        perf: &PerfCounts,
        lookups: u64,
        interval_secs: f64,
    ) -> RocksDbSample {
        let Some(backend) = backends.first() else {
            return RocksDbSample::default();
        };
        let tickers = backends
            .iter()
            .fold(Tickers::default(), |t, b| t.plus(&Tickers::read(b)));
        let p = &self.prev_tickers;
        let d = |now: u64, before: u64| now.saturating_sub(before);
        let interval = Tickers {
            block_cache_hit: d(tickers.block_cache_hit, p.block_cache_hit),
            block_cache_miss: d(tickers.block_cache_miss, p.block_cache_miss),
            filter_hit: d(tickers.filter_hit, p.filter_hit),
            filter_miss: d(tickers.filter_miss, p.filter_miss),
            index_hit: d(tickers.index_hit, p.index_hit),
            index_miss: d(tickers.index_miss, p.index_miss),
            data_hit: d(tickers.data_hit, p.data_hit),
            data_miss: d(tickers.data_miss, p.data_miss),
            bloom_useful: d(tickers.bloom_useful, p.bloom_useful),
            bloom_full_positive: d(tickers.bloom_full_positive, p.bloom_full_positive),
            bloom_full_true_positive: d(
                tickers.bloom_full_true_positive,
                p.bloom_full_true_positive,
            ),
            stall_micros: d(tickers.stall_micros, p.stall_micros),
            ..Tickers::default()
        };
        let perf_delta = perf.delta(&self.prev_perf);
        self.prev_tickers = tickers;
        self.prev_perf = *perf;
        // From here on, cumulative counts are the whole run's.
        let tickers = self.base_tickers.plus(&tickers).minus(&self.excluded);

        // The shared cache's figures, once (any instance reports the same cache).
        let int_prop = |name: &str| {
            backend
                .db()
                .property_int_value(name)
                .ok()
                .flatten()
                .unwrap_or(0)
        };
        // The block cache: the shared one once, or (memory.mode: unmanaged) every column
        // family's own, summed over column families and instances.
        let cache_prop = |name: &str| {
            if backend.memory().is_shared() {
                return int_prop(name);
            }
            backends
                .iter()
                .map(|b| {
                    std::iter::once(rocksdb::DEFAULT_COLUMN_FAMILY_NAME)
                        .chain(b.column_families().iter().map(String::as_str))
                        .filter_map(|cf| b.cf(cf).ok())
                        .map(|cf| {
                            b.db()
                                .property_int_value_cf(cf, name)
                                .ok()
                                .flatten()
                                .unwrap_or(0)
                        })
                        .sum::<u64>()
                })
                .sum::<u64>()
        };
        // Summed, or the largest, over instances.
        let sum_prop = |name: &str| {
            backends
                .iter()
                .map(|b| b.db().property_int_value(name).ok().flatten().unwrap_or(0))
                .sum::<u64>()
        };
        let max_prop = |name: &str| {
            backends
                .iter()
                .map(|b| b.db().property_int_value(name).ok().flatten().unwrap_or(0))
                .max()
                .unwrap_or(0)
        };
        let mut causes = StallCauses::default();
        let mut column_families = Vec::new();
        let mut memtable_bytes = 0;
        let (mut live_sst_bytes, mut pending_compaction_bytes) = (0, 0);
        let mut table_readers_bytes = 0;
        let mut scores = Vec::new();
        let mut levels: Vec<LevelSample> = Vec::new();
        for (operator, backend) in backends.iter().enumerate() {
            let first_cf = column_families.len();
            sample_instance(
                operator,
                backend,
                &mut causes,
                &mut column_families,
                &mut scores,
                [
                    &mut memtable_bytes,
                    &mut live_sst_bytes,
                    &mut pending_compaction_bytes,
                    &mut table_readers_bytes,
                ],
            );
            level_files(backend, &mut column_families[first_cf..], &mut levels);
        }
        let totals = Totals {
            memtable_bytes,
            table_readers_bytes,
            live_sst_bytes,
            pending_compaction_bytes,
            write_stopped: max_prop("rocksdb.is-write-stopped") != 0,
            delayed_write_rate: max_prop("rocksdb.actual-delayed-write-rate"),
            running_flushes: sum_prop("rocksdb.num-running-flushes"),
            running_compactions: sum_prop("rocksdb.num-running-compactions"),
            block_cache_usage: cache_prop("rocksdb.block-cache-usage"),
            block_cache_capacity: cache_prop("rocksdb.block-cache-capacity"),
            block_cache_pinned: cache_prop("rocksdb.block-cache-pinned-usage"),
        };
        let sample = Sample {
            perf_delta,
            interval,
            tickers,
            interval_secs,
            lookups,
            causes,
            column_families,
            scores,
            levels,
            totals,
        };
        self.finish(backend, sample)
    }
}

/// What every instance said in one sample.
struct Sample {
    perf_delta: PerfCounts,
    interval: Tickers,
    tickers: Tickers,
    interval_secs: f64,
    lookups: u64,
    causes: StallCauses,
    column_families: Vec<ColumnFamilyLsm>,
    scores: Vec<CfScores>,
    levels: Vec<LevelSample>,
    totals: Totals,
}

impl RocksDbSampler {
    /// Builds the sample from what every instance said.
    fn finish(&mut self, backend: &StateBackend, sample: Sample) -> RocksDbSample {
        let Sample {
            perf_delta,
            interval,
            tickers,
            interval_secs,
            lookups,
            causes,
            mut column_families,
            scores,
            mut levels,
            totals,
        } = sample;
        self.prev_causes = causes;
        let causes = self.base_causes.plus(&causes);
        levels.sort_by_key(|l| l.level);
        for cf in &mut column_families {
            cf.levels.sort_by_key(|l| l.level);
            if let Some((_, _, cf_scores)) = scores
                .iter()
                .find(|(op, n, _)| *op == cf.operator && *n == cf.name)
            {
                for level in &mut cf.levels {
                    if let Some((_, score, compacting)) =
                        cf_scores.iter().find(|(l, _, _)| *l == level.level)
                    {
                        level.score = Some(*score);
                        level.compacting = *compacting;
                    }
                }
            }
        }
        let l0_files = column_families
            .iter()
            .filter_map(|c| c.levels.iter().find(|l| l.level == 0).map(|l| l.files))
            .max()
            .unwrap_or(0);
        let active_levels = column_families
            .iter()
            .map(|c| c.levels.len() as u32)
            .max()
            .unwrap_or(0);
        let user = tickers.bytes_written;
        let written = tickers.flush_write_bytes + tickers.compact_write_bytes;
        RocksDbSample {
            stall: StallSample {
                micros: interval.stall_micros,
                share: if interval_secs > 0.0 {
                    (interval.stall_micros as f64 / 1e6 / interval_secs).min(1.0)
                } else {
                    0.0
                },
                causes,
                write_stopped: totals.write_stopped,
                delayed_write_rate: totals.delayed_write_rate,
            },
            cache: CacheHitRates::from_tickers(&interval),
            lookups: LookupSample::new(lookups, &perf_delta),
            bloom: BloomSample {
                useful: interval.bloom_useful,
                full_positive: interval.bloom_full_positive,
                full_true_positive: interval.bloom_full_true_positive,
            },
            memory: MemorySample {
                unshared: !backend.memory().is_shared(),
                memtable_bytes: totals.memtable_bytes,
                wbm_usage: backend.memory().write_buffer_manager_usage(),
                wbm_capacity: backend.memory().write_buffer_manager_capacity(),
                block_cache_usage: totals.block_cache_usage,
                block_cache_capacity: totals.block_cache_capacity,
                block_cache_pinned: totals.block_cache_pinned,
                table_readers_bytes: totals.table_readers_bytes,
                process: crate::util::process_memory::read(),
            },
            lsm: LsmSample {
                levels,
                column_families,
                l0_files,
                active_levels,
                live_sst_bytes: totals.live_sst_bytes,
                pending_compaction_bytes: totals.pending_compaction_bytes,
                running_flushes: totals.running_flushes,
                running_compactions: totals.running_compactions,
                flushes: tickers.flushes,
                compactions: tickers.compactions,
            },
            io: IoSample {
                user_bytes_written: user,
                flush_bytes_written: tickers.flush_write_bytes,
                compaction_bytes_written: tickers.compact_write_bytes,
                compaction_bytes_read: tickers.compact_read_bytes,
                write_amplification: if user == 0 {
                    0.0
                } else {
                    written as f64 / user as f64
                },
            },
            tickers,
            // The first state's column family: the frequency counter's window stats.
            measured_bloom_bits_per_key: backend
                .data_column_families()
                .first()
                .and_then(|cf| backend.measured_bloom_bits_per_key(cf).ok().flatten()),
        }
    }
}

/// One instance's column families: their stall counts, scores, memtables and sizes
/// (`sizes`: memtable, live SST, pending compaction and table reader bytes, added to).
fn sample_instance(
    operator: usize,
    backend: &StateBackend,
    causes: &mut StallCauses,
    column_families: &mut Vec<ColumnFamilyLsm>,
    scores: &mut Vec<CfScores>,
    sizes: [&mut u64; 4],
) {
    let [
        memtable_bytes,
        live_sst_bytes,
        pending_compaction_bytes,
        table_readers,
    ] = sizes;
    let db = backend.db();
    for name in backend.data_column_families() {
        let name = name.as_str();
        let Ok(cf) = backend.cf(name) else { continue };
        if let Ok(Some(text)) = db.property_value_cf(cf, "rocksdb.cfstats") {
            causes.add_cfstats(&text);
            scores.push((operator, name.to_string(), level_scores(&text)));
        }
        let cf_int = |prop: &str| {
            db.property_int_value_cf(cf, prop)
                .ok()
                .flatten()
                .unwrap_or(0)
        };
        let mem = cf_int("rocksdb.cur-size-all-mem-tables");
        *memtable_bytes += mem;
        // These two are per column family: the DB-level call reports the default one only.
        *live_sst_bytes += cf_int("rocksdb.live-sst-files-size");
        *pending_compaction_bytes += cf_int("rocksdb.estimate-pending-compaction-bytes");
        // Index and filter blocks the table readers hold outside the block cache.
        *table_readers += cf_int("rocksdb.estimate-table-readers-mem");
        column_families.push(ColumnFamilyLsm {
            name: name.to_string(),
            operator,
            levels: Vec::new(),
            memtable_bytes: mem,
            estimated_keys: cf_int("rocksdb.estimate-num-keys"),
            ttl_ms: backend.ttl_of(name).map(|t| t.0),
            ttl_compaction_filter: backend.ttl_of(name).is_some_and(|t| t.1),
            ops: CfOps::default(),
            ops_only: false,
        });
    }
}

/// Adds `backend`'s live SST files to its column families' levels and to `levels`.
fn level_files(
    backend: &StateBackend,
    column_families: &mut [ColumnFamilyLsm],
    levels: &mut Vec<LevelSample>,
) {
    if let Ok(files) = backend.db().live_files() {
        for file in files {
            let level = file.level.max(0) as u32;
            for bucket in [
                column_families
                    .iter_mut()
                    .find(|c| c.name == file.column_family_name)
                    .map(|c| &mut c.levels),
                Some(&mut *levels),
            ]
            .into_iter()
            .flatten()
            {
                match bucket.iter_mut().find(|l| l.level == level) {
                    Some(l) => {
                        l.files += 1;
                        l.bytes += file.size as u64;
                    }
                    None => bucket.push(LevelSample {
                        level,
                        files: 1,
                        bytes: file.size as u64,
                        score: None,
                        compacting: 0,
                    }),
                }
            }
        }
    }
}

/// Figures summed (or read once) over a job's instances.
struct Totals {
    memtable_bytes: u64,
    table_readers_bytes: u64,
    live_sst_bytes: u64,
    pending_compaction_bytes: u64,
    write_stopped: bool,
    delayed_write_rate: u64,
    running_flushes: u64,
    running_compactions: u64,
    block_cache_usage: u64,
    block_cache_capacity: u64,
    block_cache_pinned: u64,
}
