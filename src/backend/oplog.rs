//! The RocksDB operations a run issues, recorded, and replayed with no pipeline: the yardstick
//! for statebench's own overhead (a run's events/s against the replay of exactly its state
//! traffic on a fresh database with the same profile).
//!
//! Format: `SBOPLOG1`, the state TTL (i64 LE, `i64::MIN` for none), then operations, each an
//! op byte and its fields; byte strings are a u32 LE length and the bytes; a column family is
//! its index in creation order (the default one first, then [`ALL_COLUMN_FAMILIES`]).

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rocksdb::{AsColumnFamilyRef, ColumnFamily, WriteBatch};

use super::perf::PerfCounters;
use super::{ALL_COLUMN_FAMILIES, BackendError, StateBackend};
use crate::config::Profile;

const MAGIC: &[u8; 8] = b"SBOPLOG1";

const GET: u8 = 1;
const PUT: u8 = 2;
const DELETE: u8 = 3;
const BATCH: u8 = 4;
const SCAN: u8 = 5;
const FOR_EACH: u8 = 6;
const NOW: u8 = 7;
const MARK: u8 = 8;

/// What a [`Mark`](OpRecorder::mark) says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mark {
    /// The job starts reading events: the run's clock for events/s starts.
    Begin = 0,
    /// The job has read its last event and flushed: the clock stops.
    End = 1,
}

/// Column family names in creation order: what an index in the log means.
fn column_families() -> impl Iterator<Item = &'static str> {
    std::iter::once(rocksdb::DEFAULT_COLUMN_FAMILY_NAME).chain(ALL_COLUMN_FAMILIES)
}

/// Appends every state operation to a file.
pub struct OpRecorder {
    out: BufWriter<std::fs::File>,
    path: PathBuf,
    /// (column family handle, its index).
    handles: Vec<(usize, u8)>,
    /// A failed write where no error could be returned ([`OpRecorder::now`]).
    deferred: Option<BackendError>,
}

fn handle_id(cf: &ColumnFamily) -> usize {
    cf.inner() as usize
}

impl OpRecorder {
    /// Starts a log at `path` for `backend`, opened with a state TTL of `state_ttl` ms.
    pub fn create(
        path: &Path,
        backend: &StateBackend,
        state_ttl: Option<i64>,
    ) -> Result<OpRecorder, BackendError> {
        let io = |source| BackendError::Io {
            path: path.to_path_buf(),
            source,
        };
        let mut handles = Vec::new();
        for (i, name) in column_families().enumerate() {
            let cf = backend
                .db()
                .cf_handle(name)
                .ok_or_else(|| BackendError::MissingColumnFamily(name.to_string()))?;
            handles.push((handle_id(cf), i as u8));
        }
        let mut out = BufWriter::with_capacity(1 << 20, std::fs::File::create(path).map_err(io)?);
        out.write_all(MAGIC).map_err(io)?;
        out.write_all(&state_ttl.unwrap_or(i64::MIN).to_le_bytes())
            .map_err(io)?;
        Ok(OpRecorder {
            out,
            path: path.to_path_buf(),
            handles,
            deferred: None,
        })
    }

    fn io(&self, source: std::io::Error) -> BackendError {
        BackendError::Io {
            path: self.path.clone(),
            source,
        }
    }

    fn cf(&self, cf: &ColumnFamily) -> u8 {
        let id = handle_id(cf);
        // Every handle a StateAccess is given comes from the backend the recorder was made
        // for; an unknown one is recorded as the default column family's (index 0).
        self.handles
            .iter()
            .find(|(h, _)| *h == id)
            .map_or(0, |(_, i)| *i)
    }

    fn bytes(&mut self, b: &[u8]) -> std::io::Result<()> {
        self.out.write_all(&(b.len() as u32).to_le_bytes())?;
        self.out.write_all(b)
    }

    fn write(
        &mut self,
        op: u8,
        cf: Option<&ColumnFamily>,
        fields: &[&[u8]],
    ) -> Result<(), BackendError> {
        let cf = cf.map(|c| self.cf(c));
        let result = (|| {
            self.out.write_all(&[op])?;
            if let Some(cf) = cf {
                self.out.write_all(&[cf])?;
            }
            for f in fields {
                self.bytes(f)?;
            }
            Ok(())
        })();
        result.map_err(|e| self.io(e))
    }

    pub fn get(&mut self, cf: &ColumnFamily, key: &[u8]) -> Result<(), BackendError> {
        self.write(GET, Some(cf), &[key])
    }

    pub fn put(&mut self, cf: &ColumnFamily, key: &[u8], value: &[u8]) -> Result<(), BackendError> {
        self.write(PUT, Some(cf), &[key, value])
    }

    pub fn delete(&mut self, cf: &ColumnFamily, key: &[u8]) -> Result<(), BackendError> {
        self.write(DELETE, Some(cf), &[key])
    }

    /// A write batch, as RocksDB serializes it (column family ids are creation order too).
    pub fn batch(&mut self, batch: &WriteBatch) -> Result<(), BackendError> {
        self.write(BATCH, None, &[batch.data()])
    }

    pub fn scan(
        &mut self,
        cf: &ColumnFamily,
        prefix: &[u8],
        seek_to: &[u8],
        limit: usize,
    ) -> Result<(), BackendError> {
        self.write(
            SCAN,
            Some(cf),
            &[prefix, seek_to, &(limit as u32).to_le_bytes()],
        )
    }

    pub fn for_each(&mut self, cf: &ColumnFamily) -> Result<(), BackendError> {
        self.write(FOR_EACH, Some(cf), &[])
    }

    /// The job's processing time, which the TTL compaction filter reads. A failure to write
    /// it is reported by the next mark or by `finish`.
    pub fn now(&mut self, now: i64) {
        if let Err(e) = self.write(NOW, None, &[&now.to_le_bytes()]) {
            self.deferred.get_or_insert(e);
        }
    }

    pub fn mark(&mut self, mark: Mark) -> Result<(), BackendError> {
        if let Some(e) = self.deferred.take() {
            return Err(e);
        }
        self.write(MARK, None, &[&[mark as u8]])
    }

    pub fn finish(mut self) -> Result<(), BackendError> {
        if let Some(e) = self.deferred.take() {
            return Err(e);
        }
        self.out.flush().map_err(|e| self.io(e))
    }
}

/// What a replay did and how long it took.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ReplayStats {
    pub gets: u64,
    pub puts: u64,
    pub deletes: u64,
    pub batches: u64,
    pub scans: u64,
    /// From the Begin mark to the End mark (the span a run's events/s covers).
    pub marked: Duration,
    /// Every operation.
    pub total: Duration,
}

/// Reads a log written by [`OpRecorder`].
struct Reader<'a> {
    data: &'a [u8],
    at: usize,
    path: &'a Path,
}

impl<'a> Reader<'a> {
    fn corrupt(&self, what: &str) -> BackendError {
        BackendError::Corrupt(format!(
            "operation log {} at byte {}: {what}",
            self.path.display(),
            self.at
        ))
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], BackendError> {
        let end = self
            .at
            .checked_add(n)
            .filter(|e| *e <= self.data.len())
            .ok_or_else(|| self.corrupt("truncated"))?;
        let out = &self.data[self.at..end];
        self.at = end;
        Ok(out)
    }

    fn byte(&mut self) -> Result<u8, BackendError> {
        Ok(self.take(1)?[0])
    }

    fn bytes(&mut self) -> Result<&'a [u8], BackendError> {
        let mut len = [0u8; 4];
        len.copy_from_slice(self.take(4)?);
        self.take(u32::from_le_bytes(len) as usize)
    }

    fn i64(&mut self) -> Result<i64, BackendError> {
        let mut v = [0u8; 8];
        v.copy_from_slice(self.take(8)?);
        Ok(i64::from_le_bytes(v))
    }
}

/// The whole log at `path`, read into memory.
fn read_log(path: &Path) -> Result<Vec<u8>, BackendError> {
    std::fs::read(path).map_err(|source| BackendError::Io {
        path: path.to_path_buf(),
        source,
    })
}

/// The state TTL a log was recorded with (None: no TTL).
#[cfg(test)]
fn recorded_state_ttl(path: &Path) -> Result<Option<i64>, BackendError> {
    let data = read_log(path)?;
    header(&mut Reader {
        data: &data,
        at: 0,
        path,
    })
}

fn header(r: &mut Reader) -> Result<Option<i64>, BackendError> {
    if r.take(MAGIC.len())? != MAGIC {
        return Err(r.corrupt("not a statebench operation log (no SBOPLOG1 header)"));
    }
    let ttl = r.i64()?;
    Ok((ttl != i64::MIN).then_some(ttl))
}

/// Replays the log at `path` against a fresh database at `dir` opened with `profile` (and the
/// recorded state TTL), with RocksDB's perf context counting as during a run: the same state
/// traffic with no pipeline, no oracle, no sink and no metrics. The log is read into memory
/// first, so the timings hold RocksDB's work and the decoding of the log only.
pub fn replay(path: &Path, dir: &Path, profile: &Profile) -> Result<ReplayStats, BackendError> {
    let data = read_log(path)?;
    let mut r = Reader {
        data: &data,
        at: 0,
        path,
    };
    let ttl = header(&mut r)?;
    let backend = StateBackend::open_with_ttl(dir, profile, ttl)?;
    let db = backend.db();
    let handles = column_families()
        .map(|name| backend.cf(name))
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
    while r.at < data.len() {
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
            BATCH => {
                let batch = WriteBatch::from_data(r.bytes()?);
                backend.before_write();
                db.write_opt(batch, backend.write_options())?;
                stats.batches += 1;
            }
            SCAN => {
                let cf = cf(&mut r)?;
                let (prefix, seek_to) = (r.bytes()?, r.bytes()?);
                let mut limit = [0u8; 4];
                limit.copy_from_slice(r.bytes()?);
                let limit = u32::from_le_bytes(limit) as usize;
                let _not_a_lookup = super::perf::Suspended::new();
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
            FOR_EACH => {
                let cf = cf(&mut r)?;
                let _not_a_lookup = super::perf::Suspended::new();
                let mut iter = db.raw_iterator_cf(cf);
                iter.seek_to_first();
                while iter.valid() {
                    std::hint::black_box((iter.key(), iter.value()));
                    iter.next();
                }
                iter.status()?;
                stats.scans += 1;
            }
            NOW => {
                let now = r.bytes()?;
                let mut v = [0u8; 8];
                v.copy_from_slice(now);
                backend.set_processing_time(i64::from_le_bytes(v));
            }
            MARK => match r.bytes()?.first() {
                Some(0) => begin = Some(Instant::now()),
                Some(1) => {
                    if let Some(b) = begin {
                        stats.marked = b.elapsed();
                    }
                }
                _ => return Err(r.corrupt("unknown mark")),
            },
            _ => return Err(r.corrupt("unknown operation")),
        }
    }
    stats.total = started.elapsed();
    Ok(stats)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::{CF_TIMERS, CF_WINDOW_STATS, StateAccess};

    #[test]
    fn a_recorded_run_replays_the_same_operations() {
        let dir = tempfile::tempdir().unwrap();
        let profile = Profile::load("flink-default").unwrap();
        let log = dir.path().join("ops.log");
        {
            let backend = StateBackend::open(&dir.path().join("run"), &profile).unwrap();
            let mut state = StateAccess::new(&backend);
            state.record_to(OpRecorder::create(&log, &backend, Some(60_000)).unwrap());
            let stats = backend.cf(CF_WINDOW_STATS).unwrap();
            let timers = backend.cf(CF_TIMERS).unwrap();
            state.mark(Mark::Begin).unwrap();
            state.set_processing_time(1_000);
            for i in 0..50u32 {
                let key = i.to_be_bytes();
                state.get(stats, &key, |v| Ok(v.len())).unwrap();
                state.put(stats, &key, b"value").unwrap();
            }
            state.delete(stats, &7u32.to_be_bytes()).unwrap();
            let mut batch = WriteBatch::default();
            batch.put_cf(timers, b"t1", []);
            batch.delete_cf(timers, b"t0");
            state.write_batch(batch).unwrap();
            state.write_batch(WriteBatch::default()).unwrap();
            state.scan_prefix(timers, b"t", b"t", 10, |_| {}).unwrap();
            state.mark(Mark::End).unwrap();
            state.for_each(stats, |_, _| Ok(())).unwrap();
            state.finish_recording().unwrap();
        }
        assert_eq!(recorded_state_ttl(&log).unwrap(), Some(60_000));
        let replayed = replay(&log, &dir.path().join("replay"), &profile).unwrap();
        assert_eq!(
            (
                replayed.gets,
                replayed.puts,
                replayed.deletes,
                replayed.batches,
                replayed.scans
            ),
            (50, 50, 1, 2, 2)
        );
        assert!(replayed.marked > Duration::ZERO && replayed.marked <= replayed.total);
        // Not a log: refused with the file named.
        std::fs::write(&log, b"something else").unwrap();
        let err = replay(&log, &dir.path().join("again"), &profile).unwrap_err();
        assert!(err.to_string().contains("ops.log"), "{err}");
    }
}
