//! The RocksDB operations a run issues, recorded, and replayed with no pipeline: the yardstick
//! for statebench's own overhead (a run's events/s against the replay of exactly its state
//! traffic on a fresh database with the same profile).
//!
//! Format: a header (`format`: the version, `SBOPLOG2`, and the operator's column families),
//! then operations, each an op byte and its fields; byte strings are a u32 LE length and the
//! bytes; a column family is its index in creation order (RocksDB's default one first, then
//! the header's). Every operator kind's state traffic is recorded: point reads and writes,
//! merges (ListState appends), write batches (timers), map iterations (a seek and its steps)
//! and key scans. Logs of version 1 (the frequency counter's, before operator kinds) still
//! replay.

mod format;
mod replay;

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use rocksdb::{AsColumnFamilyRef, ColumnFamily, WriteBatch};

use super::{BackendError, StateBackend};
use crate::model::layout::Layout;
pub use replay::{ReplayStats, recorded_layout, replay};

const GET: u8 = 1;
const PUT: u8 = 2;
const DELETE: u8 = 3;
const BATCH: u8 = 4;
const SCAN: u8 = 5;
const FOR_EACH: u8 = 6;
const NOW: u8 = 7;
const MARK: u8 = 8;
/// Since version 2.
const MERGE: u8 = 9;
const ITERATE: u8 = 10;

/// What a [`Mark`](OpRecorder::mark) says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mark {
    /// The job starts reading events: the run's clock for events/s starts.
    Begin = 0,
    /// The job has read its last event and flushed: the clock stops.
    End = 1,
}

/// `backend`'s column family names in creation order: what an index in the log means.
fn column_families(backend: &StateBackend) -> impl Iterator<Item = &str> {
    std::iter::once(rocksdb::DEFAULT_COLUMN_FAMILY_NAME)
        .chain(backend.column_families().iter().map(String::as_str))
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
    /// Starts a log at `path` for `backend`, opened for an operator whose column families
    /// `layout` declares (the timer queues' left out where the backend has none: HEAP timers).
    pub fn create(
        path: &Path,
        backend: &StateBackend,
        layout: &Layout,
    ) -> Result<OpRecorder, BackendError> {
        let io = |source| BackendError::Io {
            path: path.to_path_buf(),
            source,
        };
        // The database's column families as it has them, each as the operator declared it.
        let mut recorded = Layout::default();
        for name in backend.column_families() {
            let decl = layout.cfs.iter().find(|c| &c.name == name).ok_or_else(|| {
                BackendError::Setup(format!(
                    "column family '{name}' of {} is not one the job declares",
                    backend.path().display()
                ))
            })?;
            recorded.cfs.push(decl.clone());
        }
        if recorded.cfs.len() > format::MAX_COLUMN_FAMILIES {
            return Err(BackendError::Setup(format!(
                "an operation log names at most {} column families; the job has {}",
                format::MAX_COLUMN_FAMILIES,
                recorded.cfs.len()
            )));
        }
        let mut handles = Vec::new();
        for (i, name) in column_families(backend).enumerate() {
            handles.push((handle_id(backend.cf(name)?.raw()), i as u8));
        }
        let mut out = BufWriter::with_capacity(1 << 20, std::fs::File::create(path).map_err(io)?);
        out.write_all(&format::encode_header(&recorded))
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
                self.out.write_all(&(f.len() as u32).to_le_bytes())?;
                self.out.write_all(f)?;
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

    /// A RocksDB merge of `value` into `key` (a ListState's append).
    pub fn merge(
        &mut self,
        cf: &ColumnFamily,
        key: &[u8],
        value: &[u8],
    ) -> Result<(), BackendError> {
        self.write(MERGE, Some(cf), &[key, value])
    }

    /// A write batch, as RocksDB serializes it (column family ids are creation order too).
    pub fn batch(&mut self, batch: &WriteBatch) -> Result<(), BackendError> {
        self.write(BATCH, None, &[batch.data()])
    }

    /// A key scan from `seek_to` over `prefix`, up to `limit` keys (a timer queue's).
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

    /// An iteration over keys and values from `seek_to` over `prefix`, up to `limit` entries
    /// (a map state's iterator).
    pub fn iterate(
        &mut self,
        cf: &ColumnFamily,
        prefix: &[u8],
        seek_to: &[u8],
        limit: usize,
    ) -> Result<(), BackendError> {
        self.write(
            ITERATE,
            Some(cf),
            &[prefix, seek_to, &(limit as u64).to_le_bytes()],
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

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::backend::StateAccess;
    use crate::backend::ttl_filter::TtlLayout;
    use crate::config::Profile;
    use crate::model::layout::TtlDecl;

    /// A list state (merges), a map state with a TTL, and a timer service.
    fn layout() -> Layout {
        let ttl = TtlDecl {
            ttl_ms: 60_000,
            compaction_filter: true,
            query_time_after: 1000,
            layout: TtlLayout::Map,
        };
        Layout::default()
            .state("list", None, true)
            .state("map", Some(ttl), false)
            .timer_service("user-timers")
    }

    #[test]
    fn a_recorded_run_replays_the_same_operations() {
        let dir = tempfile::tempdir().unwrap();
        let profile = Profile::load("flink-default").unwrap();
        let log = dir.path().join("ops.log");
        let layout = layout();
        let (list_value, nexts) = {
            let backend =
                StateBackend::open_for(&dir.path().join("run"), &profile, &layout).unwrap();
            let mut state = StateAccess::new(&backend);
            state.record_to(OpRecorder::create(&log, &backend, &layout).unwrap());
            let list = backend.cf("list").unwrap();
            let map = backend.cf("map").unwrap();
            let timers = backend.cf("_timer_state/event_user-timers").unwrap();
            state.mark(Mark::Begin).unwrap();
            state.set_processing_time(1_000);
            for i in 0..50u32 {
                let key = i.to_be_bytes();
                state.get(map, &key, |v| Ok(v.len())).unwrap();
                state.put(map, &key, b"value").unwrap();
                state.merge(list, b"k", &key).unwrap();
            }
            state.delete(map, &7u32.to_be_bytes()).unwrap();
            let mut batch = crate::backend::Batch::default();
            batch.put_cf(timers, b"t1", []);
            batch.delete_cf(timers, b"t0");
            state.write_batch(batch).unwrap();
            state.write_batch(crate::backend::Batch::default()).unwrap();
            state.scan_prefix(timers, b"t", b"t", 10, |_| {}).unwrap();
            // Two pages of a map iteration, the second from where the first stopped.
            state
                .iterate_prefix(map, &[0, 0], &[0, 0], 16, |_, _| Ok(()))
                .unwrap();
            state
                .iterate_prefix(map, &[0, 0], &[0, 0, 0, 16], usize::MAX, |_, _| Ok(()))
                .unwrap();
            state.mark(Mark::End).unwrap();
            state.for_each(map, |_, _| Ok(())).unwrap();
            let list_value = state.get(list, b"k", |v| Ok(v.to_vec())).unwrap();
            state.finish_recording().unwrap();
            (list_value, state.counters.iterator_nexts)
        };
        // 49 keys (one deleted): 0-6 and 8-16, then 16-49 again from key 16.
        assert_eq!(nexts, 16 + 34);
        assert_eq!(recorded_layout(&log).unwrap(), layout);
        let replayed = replay(&log, &dir.path().join("replay"), &profile).unwrap();
        assert_eq!(
            replayed,
            ReplayStats {
                gets: 51,
                puts: 50,
                deletes: 1,
                merges: 50,
                batches: 2,
                empty_batches: 1,
                batch_entries: 2,
                scans: 2,
                iterations: 2,
                iterator_nexts: nexts,
                marked: replayed.marked,
                total: replayed.total,
            }
        );
        assert!(replayed.marked > Duration::ZERO && replayed.marked <= replayed.total);
        // The replayed database holds what the run's did: the list's 50 merged operands.
        let again = StateBackend::open_for(&dir.path().join("replay"), &profile, &layout).unwrap();
        let value = again.db().get_cf(again.cf("list").unwrap(), b"k").unwrap();
        assert_eq!(value, list_value);
        // Not a log: refused with the file named.
        std::fs::write(&log, b"something else").unwrap();
        let err = replay(&log, &dir.path().join("again"), &profile).unwrap_err();
        assert!(err.to_string().contains("ops.log"), "{err}");
    }

    #[test]
    fn heap_timers_record_the_column_families_the_database_has() {
        let dir = tempfile::tempdir().unwrap();
        let heap = Profile::load("flink-default")
            .unwrap()
            .edited("timer-service.factory", "HEAP")
            .unwrap();
        let log = dir.path().join("ops.log");
        let layout = layout();
        {
            let backend = StateBackend::open_for(&dir.path().join("run"), &heap, &layout).unwrap();
            let mut state = StateAccess::new(&backend);
            state.record_to(OpRecorder::create(&log, &backend, &layout).unwrap());
            state.put(backend.cf("map").unwrap(), b"k", b"v").unwrap();
            state.finish_recording().unwrap();
        }
        let recorded = recorded_layout(&log).unwrap();
        assert_eq!(recorded.names(), ["list", "map"]);
        // Replayed with a ROCKSDB profile: the run's two column families, no timer queues.
        let rocksdb = Profile::load("flink-default").unwrap();
        let replayed = replay(&log, &dir.path().join("replay"), &rocksdb).unwrap();
        assert_eq!(replayed.puts, 1);
        let names =
            rocksdb::DB::list_cf(&rocksdb::Options::default(), dir.path().join("replay")).unwrap();
        assert_eq!(names, ["default", "list", "map"]);
    }

    /// A log as version 1 wrote it: the frequency counter's column families, its TTL.
    #[test]
    fn a_version_1_log_still_replays_and_a_newer_one_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let profile = Profile::load("flink-default").unwrap();
        let log = dir.path().join("v1.log");
        let mut v1 = b"SBOPLOG1".to_vec();
        v1.extend_from_slice(&60_000i64.to_le_bytes());
        // A put into window-stats (index 1), a get of it, and a timer into the event-time
        // queue (index 3 then), put alone and in a batch as RocksDB serialized it (sequence,
        // count, then kTypeColumnFamilyValue, the column family id, key and value).
        v1.extend_from_slice(&[PUT, 1]);
        format::put_bytes(&mut v1, b"key");
        format::put_bytes(&mut v1, b"value");
        v1.extend_from_slice(&[GET, 1]);
        format::put_bytes(&mut v1, b"key");
        v1.extend_from_slice(&[PUT, 3]);
        format::put_bytes(&mut v1, b"t1");
        format::put_bytes(&mut v1, b"");
        let mut batch = vec![0u8; 8];
        batch.extend_from_slice(&1u32.to_le_bytes());
        batch.extend_from_slice(&[0x05, 3, 2, b't', b'2', 0]);
        v1.push(BATCH);
        format::put_bytes(&mut v1, &batch);
        std::fs::write(&log, &v1).unwrap();
        let layout = recorded_layout(&log).unwrap();
        assert_eq!(
            layout.names(),
            crate::backend::ALL_COLUMN_FAMILIES.map(String::from)
        );
        assert!(matches!(
            layout.cfs[1].role,
            crate::model::layout::CfRole::State { ttl: Some(t), .. } if t.ttl_ms == 60_000
        ));
        let replayed = replay(&log, &dir.path().join("replay"), &profile).unwrap();
        assert_eq!(
            (replayed.puts, replayed.gets, replayed.batch_entries),
            (2, 1, 1)
        );
        // Both timers in the event-time queue, whatever order the counter creates it in today.
        let again = StateBackend::open(&dir.path().join("replay"), &profile).unwrap();
        let queue = again.cf(crate::backend::CF_TIMERS).unwrap();
        for key in [b"t1", b"t2"] {
            assert_eq!(again.db().get_cf(queue, key).unwrap(), Some(Vec::new()));
        }
        std::fs::write(&log, b"SBOPLOG9rest").unwrap();
        let err = replay(&log, &dir.path().join("again"), &profile)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("v1.log") && err.contains("version '9'") && err.contains("1 and 2"),
            "{err}"
        );
    }
}
