//! A recorded log replayed on a fresh database: the same state traffic with no pipeline.

use std::path::Path;
use std::time::{Duration, Instant};

use rocksdb::{ColumnFamily, ReadOptions, WriteBatch};

use super::super::perf::{PerfCounters, Suspended};
use super::super::{BackendError, Cf, StateBackend};
use super::format::Reader;
use super::{
    BATCH, DELETE, FOR_EACH, GET, ITERATE, MARK, MERGE, Mark, NOW, PUT, SCAN, column_families,
};
use crate::config::Profile;
use crate::config::timer_service::TimerFactory;

/// What a replay did and how long it took. Its counts are the run's [`AccessCounters`]
/// (`crate::backend::AccessCounters`) for the same operations: `batches - empty_batches` is
/// `batch_writes`, `scans + iterations` is `iterator_seeks`.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ReplayStats {
    pub gets: u64,
    pub puts: u64,
    pub deletes: u64,
    /// RocksDB merges (a ListState's appends).
    pub merges: u64,
    /// Write batches, the empty ones (written before a timer-queue scan) too.
    pub batches: u64,
    pub empty_batches: u64,
    /// Puts and deletes inside the batches.
    pub batch_entries: u64,
    /// Key scans: a timer queue's prefix (`scan_prefix`) or a whole column family.
    pub scans: u64,
    /// Iterations over keys and values from a seek (map state iteration, `iterate_prefix`).
    pub iterations: u64,
    /// Their steps after the seek.
    pub iterator_nexts: u64,
    /// From the Begin mark to the End mark (the span a run's events/s covers).
    pub marked: Duration,
    /// Every operation.
    pub total: Duration,
}

/// The whole log at `path`, read into memory.
fn read_log(path: &Path) -> Result<Vec<u8>, BackendError> {
    std::fs::read(path).map_err(|source| BackendError::Io {
        path: path.to_path_buf(),
        source,
    })
}

/// The column families a log was recorded with (its header).
pub fn recorded_layout(path: &Path) -> Result<crate::model::layout::Layout, BackendError> {
    let data = read_log(path)?;
    Reader {
        data: &data,
        at: 0,
        path,
    }
    .header()
}

/// Replays the log at `path` against a fresh database at `dir` opened with `profile` and the
/// recorded column families (their merge operators and TTL compaction filters as recorded; the
/// timer queues' column families as the run had them, whatever `profile`'s timer factory
/// says), with RocksDB's perf context counting as during a run: the same state traffic with no
/// pipeline, no oracle, no sink and no metrics. The log is read into memory first, so the
/// timings hold RocksDB's work and the decoding of the log only.
pub fn replay(path: &Path, dir: &Path, profile: &Profile) -> Result<ReplayStats, BackendError> {
    let data = read_log(path)?;
    let mut r = Reader {
        data: &data,
        at: 0,
        path,
    };
    let layout = r.header()?;
    // The recorded layout already went through the run's timer factory: keep it as it is.
    let mut profile = profile.clone();
    profile.knobs.timer_service_factory = TimerFactory::RocksDb;
    let backend = StateBackend::open_for(dir, &profile, &layout)?;
    let db = backend.db();
    let handles = column_families(&backend)
        .map(|name| backend.cf(name).map(Cf::raw))
        .collect::<Result<Vec<_>, _>>()?;
    let _perf = PerfCounters::start();
    let mut stats = ReplayStats::default();
    let started = Instant::now();
    let mut begin: Option<Instant> = None;
    let cf = |r: &mut Reader| -> Result<&ColumnFamily, BackendError> {
        let i = r.byte()?;
        handles
            .get(usize::from(i))
            .copied()
            .ok_or_else(|| r.corrupt("column family index out of range"))
    };
    while !r.done() {
        match r.byte()? {
            GET => {
                let cf = cf(&mut r)?;
                let key = r.bytes()?;
                let value = db.get_pinned_cf_opt(cf, key, backend.read_options())?;
                std::hint::black_box(value.as_deref().map(<[u8]>::len));
                stats.gets += 1;
            }
            PUT => {
                let cf = cf(&mut r)?;
                let (key, value) = (r.bytes()?, r.bytes()?);
                backend.before_write();
                db.put_cf_opt(cf, key, value, backend.write_options())?;
                stats.puts += 1;
            }
            DELETE => {
                let cf = cf(&mut r)?;
                let key = r.bytes()?;
                backend.before_write();
                db.delete_cf_opt(cf, key, backend.write_options())?;
                stats.deletes += 1;
            }
            MERGE => {
                let cf = cf(&mut r)?;
                let (key, value) = (r.bytes()?, r.bytes()?);
                backend.before_write();
                db.merge_cf_opt(cf, key, value, backend.write_options())?;
                stats.merges += 1;
            }
            BATCH => {
                let batch = WriteBatch::from_data(r.bytes()?);
                if batch.is_empty() {
                    stats.empty_batches += 1;
                }
                stats.batch_entries += batch.len() as u64;
                backend.before_write();
                db.write_opt(batch, backend.write_options())?;
                stats.batches += 1;
            }
            SCAN => {
                let cf = cf(&mut r)?;
                let (prefix, seek_to) = (r.bytes()?, r.bytes()?);
                let limit = u32::from_le_bytes(r.fixed("a scan's limit")?) as usize;
                let _not_a_lookup = Suspended::new();
                let mut iter = db.raw_iterator_cf(cf);
                iter.seek(seek_to);
                let mut n = 0;
                // As StateAccess::scan_prefix: up to `limit` keys, and a look at one more.
                while iter.valid() {
                    let Some(key) = iter.key() else { break };
                    if !key.starts_with(prefix) || n == limit {
                        break;
                    }
                    std::hint::black_box(key.to_vec());
                    n += 1;
                    iter.next();
                }
                iter.status()?;
                stats.scans += 1;
            }
            ITERATE => {
                let cf = cf(&mut r)?;
                let (prefix, seek_to) = (r.bytes()?, r.bytes()?);
                let limit = u64::from_le_bytes(r.fixed("an iteration's limit")?);
                let limit = usize::try_from(limit).unwrap_or(usize::MAX);
                // As StateAccess::iterate_prefix: keys and values, counted as lookups are.
                let mut iter = db.raw_iterator_cf_opt(cf, ReadOptions::default());
                iter.seek(seek_to);
                let mut seen = 0;
                while iter.valid() {
                    let (Some(key), Some(value)) = (iter.key(), iter.value()) else {
                        break;
                    };
                    if !key.starts_with(prefix) || seen == limit {
                        break;
                    }
                    std::hint::black_box((key, value));
                    seen += 1;
                    iter.next();
                    stats.iterator_nexts += 1;
                }
                iter.status()?;
                stats.iterations += 1;
            }
            FOR_EACH => {
                let cf = cf(&mut r)?;
                let _not_a_lookup = Suspended::new();
                let mut iter = db.raw_iterator_cf(cf);
                iter.seek_to_first();
                while iter.valid() {
                    std::hint::black_box((iter.key(), iter.value()));
                    iter.next();
                }
                iter.status()?;
                stats.scans += 1;
            }
            NOW => backend.set_processing_time(i64::from_le_bytes(r.fixed("a time")?)),
            MARK => match r.fixed::<1>("a mark")?[0] {
                m if m == Mark::Begin as u8 => begin = Some(Instant::now()),
                m if m == Mark::End as u8 => {
                    if let Some(b) = begin {
                        stats.marked = b.elapsed();
                    }
                }
                m => return Err(r.corrupt(&format!("mark {m} (valid: 0 begin, 1 end)"))),
            },
            op => return Err(r.corrupt(&format!("unknown operation {op}"))),
        }
    }
    stats.total = started.elapsed();
    Ok(stats)
}
