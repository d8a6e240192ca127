//! The timer service an operator sees, whichever factory the profile names
//! (`state.backend.rocksdb.timer-service.factory`): ROCKSDB timers ([`RocksDbTimers`], a column
//! family per queue) or HEAP timers ([`HeapTimers`], none), behind one API.

use std::path::Path;

use super::{HeapTimers, RocksDbTimers, Timer, raw};
use crate::backend::keys::CompositeKey;
use crate::backend::{StateAccess, StateBackend};
use crate::config::timer_service::TimerFactory;
use crate::pipeline::PipelineError;

/// An operator's event-time timers.
pub enum TimerService<'a> {
    RocksDb(Box<RocksDbTimers<'a>>),
    Heap(Box<HeapTimers>),
}

/// The timer service's name in a `_timer_state/event_<name>` column family name.
fn service_name(cf: &str) -> &str {
    cf.strip_prefix("_timer_state/event_").unwrap_or(cf)
}

impl<'a> TimerService<'a> {
    /// The timer service of an operator whose layout has its event-time queue in `event_cf`
    /// (and its processing-time one in `processing_cf`), as `backend`'s profile makes it.
    pub fn open(
        backend: &'a StateBackend,
        event_cf: &str,
        processing_cf: Option<&str>,
        state: &mut StateAccess,
    ) -> Result<Self, PipelineError> {
        let (factory, cache_size) = backend.timer_settings();
        match factory {
            TimerFactory::Heap => Ok(TimerService::Heap(Box::new(HeapTimers::new(service_name(
                event_cf,
            ))))),
            TimerFactory::RocksDb => {
                // Flink's timer service creates the processing-time queue first and, like the
                // event-time one, loads the head of each of its key groups; no job here
                // registers processing-time timers, so the queue is not kept.
                if let Some(cf) = processing_cf {
                    RocksDbTimers::open_with_cache(backend.cf(cf)?, state, cache_size)?;
                }
                Ok(TimerService::RocksDb(Box::new(
                    RocksDbTimers::open_with_cache(backend.cf(event_cf)?, state, cache_size)?,
                )))
            }
        }
    }

    /// Registers an event-time timer for the current key and namespace (a no-op if it exists).
    pub fn register(
        &mut self,
        state: &mut StateAccess,
        key: &CompositeKey,
        timestamp: i64,
    ) -> Result<(), PipelineError> {
        match self {
            TimerService::RocksDb(t) => t.register(state, key, timestamp),
            TimerService::Heap(t) => {
                t.register(key, timestamp);
                Ok(())
            }
        }
    }

    /// Deletes the timer of the current key in `namespace` at `timestamp`, if there; true when
    /// the queue's head (for RocksDB: its key group's) changed.
    pub fn remove(
        &mut self,
        state: &mut StateAccess,
        key: &CompositeKey,
        namespace: &[u8],
        timestamp: i64,
    ) -> Result<bool, PipelineError> {
        match self {
            TimerService::RocksDb(t) => t.remove(state, key, namespace, timestamp),
            TimerService::Heap(t) => Ok(t.remove(key, namespace, timestamp)),
        }
    }

    /// The next timer at or before `watermark`, removed from the queue.
    pub fn poll_due(
        &mut self,
        state: &mut StateAccess,
        watermark: i64,
    ) -> Result<Option<Timer>, PipelineError> {
        match self {
            TimerService::RocksDb(t) => t.poll_due(state, watermark),
            TimerService::Heap(t) => t.poll_due(watermark),
        }
    }

    /// Takes back a fired timer, whose buffers the next one reuses.
    pub fn recycle(&mut self, timer: Timer) {
        match self {
            TimerService::RocksDb(t) => t.recycle(timer),
            TimerService::Heap(t) => t.recycle(timer),
        }
    }

    /// Writes out buffered timer changes (before a snapshot or at the end of a run); nothing
    /// for HEAP timers.
    pub fn flush(&mut self, state: &mut StateAccess) -> Result<(), PipelineError> {
        match self {
            TimerService::RocksDb(t) => t.flush(state),
            TimerService::Heap(_) => Ok(()),
        }
    }

    /// The earliest pending timer, if any.
    pub fn next_timestamp(&self) -> Option<i64> {
        match self {
            TimerService::RocksDb(t) => t.next_timestamp(),
            TimerService::Heap(t) => t.next_timestamp(),
        }
    }

    /// Timers registered so far.
    pub fn registered(&self) -> u64 {
        match self {
            TimerService::RocksDb(t) => t.registered,
            TimerService::Heap(t) => t.registered,
        }
    }

    /// Timers fired so far.
    pub fn fired(&self) -> u64 {
        match self {
            TimerService::RocksDb(t) => t.fired,
            TimerService::Heap(t) => t.fired,
        }
    }

    /// What a checkpoint writes as the operator's raw keyed state: HEAP timers' stream
    /// (`requiresLegacySynchronousTimerSnapshots`: true for a checkpoint with heap timers);
    /// None for ROCKSDB timers, which are in RocksDB's state.
    pub fn raw_keyed_state(&self) -> Option<Vec<u8>> {
        match self {
            TimerService::RocksDb(_) => None,
            TimerService::Heap(t) => Some(raw::snapshot(t)),
        }
    }

    /// Adds the HEAP timers of a raw keyed state stream (a preload's); 0 for ROCKSDB timers,
    /// which come with the state.
    pub fn add_raw_keyed_state(&mut self, bytes: &[u8]) -> Result<u64, PipelineError> {
        match self {
            TimerService::Heap(t) => raw::restore(t, bytes),
            TimerService::RocksDb(_) => Ok(0),
        }
    }

    /// Puts back the timers checkpoint (or savepoint) `dir` holds as raw keyed state, after
    /// its RocksDB state was restored; `db_dir` loses the copy a restore may have put there.
    /// Returns the timers restored. A checkpoint whose timers are kept the other way than the
    /// profile says is an error naming the knob.
    pub fn restore_raw_keyed_state(&mut self, dir: &Path, db_dir: &Path) -> Result<u64, String> {
        let file = dir.join(raw::RAW_KEYED_STATE);
        let _ = std::fs::remove_file(db_dir.join(raw::RAW_KEYED_STATE));
        match self {
            TimerService::Heap(t) => {
                let bytes = std::fs::read(&file).map_err(|e| {
                    format!(
                        "{} holds no heap timers ({e}): it was taken with 'timer-service.factory: ROCKSDB', but the profile says HEAP; restore it with ROCKSDB timers",
                        dir.display()
                    )
                })?;
                raw::restore(t, &bytes).map_err(|e| format!("{}: {e}", file.display()))
            }
            TimerService::RocksDb(_) if file.exists() => Err(format!(
                "{} holds heap timers: it was taken with 'timer-service.factory: HEAP', but the profile says ROCKSDB; restore it with HEAP timers",
                dir.display()
            )),
            TimerService::RocksDb(_) => Ok(0),
        }
    }
}
