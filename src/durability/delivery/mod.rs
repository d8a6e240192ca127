//! The sink's delivery layer: between the operator and the serving store, a Kafka-like result
//! topic with Flink's sink delivery guarantees (CASE-STUDIES.md §8).
//!
//! Every result record has a deterministic id, a mix of the *origin* the caller set (e.g. the
//! source partition and offset of the event being processed, or a fired timer) and the window.
//! After a failure the job restarts from its last completed checkpoint and re-processes events,
//! so it emits records with ids it emitted before. What the downstream reader then sees depends
//! on the guarantee:
//!
//! - `None` and `AtLeastOnce`: records are visible when written (non-transactional); a replay
//!   shows duplicates, which an idempotent store (dedupe by id) drops.
//! - `ExactlyOnce`: two-phase commit. Records go into a transaction, pre-committed at the
//!   checkpoint barrier and committed when the checkpoint completes. A `read_committed` reader
//!   sees them only then (up to a checkpoint interval late) and never sees those of aborted or
//!   expired transactions; a `read_uncommitted` reader sees every record when written.
//!
//! The tracked state changes only by journal entries: a live change is appended to the journal
//! and then applied, and opening a journal applies its entries again, so a killed process comes
//! back with the same committed store, the same ids seen and the same counters (all but what
//! was still buffered: records of a transaction that recovery aborts, or non-transactional
//! records written after the last barrier).
//!
//! Journal format (`delivery.journal` in the journal folder): `SBDJ`, a version (u32 LE), then
//! entries of 8-byte words: a head word (bytes of fields as u32 LE, a tag byte, three zero
//! bytes), the fields (u64 LE each), and a CRC-32C (u32 LE) of the words before it. A record is
//! 44 bytes. An entry cut short by a kill, a last entry whose checksum fails, or zeros to the
//! end (a file that grew but whose data never reached the disk) is a torn tail: dropped and
//! truncated. A bad entry anywhere else is an error naming the file and offset.

use std::path::{Path, PathBuf};

use self::journal::Journal;
use self::journal::Record;
use self::tracker::{Tracker, Transaction};
use super::sink::{Count, Sink, SinkError};
use crate::config::profile::{DeliveryGuarantee, IsolationLevel, Knobs};
use crate::pipeline::PipelineError;
use crate::pipeline::output::{Output, OutputError, record_id};
use crate::util::hash::FastMap;

mod crc32c;
mod journal;
mod tracker;

pub use crate::model::counters::DeliveryCounters;
pub use journal::JOURNAL_FILE;

/// When result records reach the reader (Flink's `DeliveryGuarantee`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Guarantee {
    /// Written through, nothing flushed at a barrier: records may be lost or duplicated.
    None,
    /// Flushed at every barrier: nothing before a checkpoint is lost; replays duplicate.
    AtLeastOnce,
    /// Transactions committed when their checkpoint completes.
    ExactlyOnce,
}

/// The downstream reader's `isolation.level`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Isolation {
    /// Sees a transaction's records when it commits.
    ReadCommitted,
    /// Sees every record when written, whatever becomes of its transaction.
    ReadUncommitted,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct DeliveryConfig {
    pub guarantee: Guarantee,
    pub isolation: Isolation,
    /// The store dedupes by record id: a record whose id it holds is dropped.
    pub idempotent: bool,
    /// The broker's transaction timeout: a transaction older than this when it commits was
    /// already aborted by the broker (its records are lost). None: no timeout.
    pub transaction_timeout_ms: Option<u64>,
}

/// Errors from the delivery layer.
#[derive(Debug, thiserror::Error)]
pub enum DeliveryError {
    #[error(transparent)]
    Sink(#[from] SinkError),
    #[error("delivery journal '{}': {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("delivery journal '{}' is corrupt at offset {offset}: {reason}", path.display())]
    Corrupt {
        path: PathBuf,
        offset: u64,
        reason: String,
    },
}

impl DeliveryConfig {
    /// The sink's delivery as the profile sets it.
    pub fn from_knobs(k: &Knobs) -> DeliveryConfig {
        DeliveryConfig {
            guarantee: match k.sink_delivery_guarantee {
                DeliveryGuarantee::None => Guarantee::None,
                DeliveryGuarantee::AtLeastOnce => Guarantee::AtLeastOnce,
                DeliveryGuarantee::ExactlyOnce => Guarantee::ExactlyOnce,
            },
            isolation: match k.sink_reader_isolation {
                IsolationLevel::ReadCommitted => Isolation::ReadCommitted,
                IsolationLevel::ReadUncommitted => Isolation::ReadUncommitted,
            },
            idempotent: k.sink_idempotent,
            transaction_timeout_ms: Some(k.sink_transaction_timeout.0),
        }
    }
}

/// The delivery is what the pipeline's operators write their results to.
impl Output for Delivery {
    #[inline]
    fn write(&mut self, key: u64, slot: usize, value: i64) -> Result<(), OutputError> {
        Ok(Delivery::write(self, key, slot, value)?)
    }

    #[inline]
    fn is_tracked(&self) -> bool {
        Delivery::is_tracked(self)
    }

    #[inline]
    fn set_origin(&mut self, origin: u64) {
        Delivery::set_origin(self, origin)
    }

    fn flush(&mut self) -> Result<(), OutputError> {
        Ok(Delivery::flush(self)?)
    }

    fn read_all(&mut self) -> Result<Vec<(u64, usize, i64)>, OutputError> {
        Ok(self.inner.read_all()?)
    }
}

impl From<DeliveryError> for PipelineError {
    fn from(e: DeliveryError) -> Self {
        PipelineError::Output(Box::new(e))
    }
}

/// The serving store behind a delivery layer: written through (checkpointing off), or tracked.
pub struct Delivery {
    inner: Box<dyn Sink>,
    origin: u64,
    /// None: pass-through. Boxed: one pointer in a pass-through `Delivery`.
    tracked: Option<Box<Tracker>>,
}

impl Delivery {
    /// Checkpointing off: every write goes straight to `inner`, nothing is tracked or journaled
    /// (one branch per write).
    pub fn passthrough(inner: Box<dyn Sink>) -> Delivery {
        Delivery {
            inner,
            origin: 0,
            tracked: None,
        }
    }

    /// Opens (or creates) the journal in folder `journal` and replays it: committed
    /// transactions and non-transactional records are applied to `inner` again in their
    /// original order (it may be empty, e.g. a fresh in-process store), the ids the reader saw
    /// and the counters are rebuilt; pre-committed transactions stay pending, and a transaction
    /// left open by a process that died waits for [`Delivery::recover`] to abort it. `now_ms`
    /// is the run's clock.
    pub fn open(
        mut inner: Box<dyn Sink>,
        config: DeliveryConfig,
        journal: &Path,
        now_ms: u64,
    ) -> Result<Delivery, DeliveryError> {
        let mut tracker = Tracker::new(config, Journal::placeholder(journal));
        let journal = Journal::open(journal, |offset, entry| {
            tracker
                .apply(&mut *inner, entry)
                .map_err(|e| e.at(&tracker.journal.path, offset))
        })?;
        // What the replay wrote, visible.
        inner.flush()?;
        tracker.counters.journal_torn_bytes = journal.torn_bytes;
        tracker.journal = journal;
        tracker.txns.orphan_open();
        tracker.txns.open_since_ms = now_ms;
        Ok(Delivery {
            inner,
            origin: 0,
            tracked: Some(Box::new(tracker)),
        })
    }

    /// True when records are tracked (checkpointing on): their origins matter.
    #[inline]
    pub fn is_tracked(&self) -> bool {
        self.tracked.is_some()
    }

    /// The origin of the records written from now on (see [`record_id`]).
    #[inline]
    pub fn set_origin(&mut self, origin: u64) {
        self.origin = origin;
    }

    /// One result record: an upsert of `count` for (`user`, `window`), its id from the current
    /// origin and `window`.
    #[inline]
    pub fn write(&mut self, user: u64, window: usize, count: i64) -> Result<(), DeliveryError> {
        match &mut self.tracked {
            None => Ok(self.inner.write(user, window, count)?),
            Some(tracker) => {
                let record = Record {
                    id: record_id(self.origin, window),
                    user,
                    window,
                    count,
                };
                tracker.write(&mut *self.inner, record)
            }
        }
    }

    /// Checkpoint barrier `checkpoint`. ExactlyOnce: the open transaction is pre-committed
    /// (durable in the journal; invisible to read_committed) and the next one starts now.
    /// AtLeastOnce: the journal is synced and the store flushed (everything before the barrier
    /// is delivered). None: nothing.
    pub fn pre_commit(&mut self, checkpoint: u64, now_ms: u64) -> Result<(), DeliveryError> {
        match &mut self.tracked {
            None => Ok(()),
            Some(tracker) => tracker.pre_commit(&mut *self.inner, checkpoint, now_ms),
        }
    }

    /// Checkpoint `checkpoint` completed: every pre-committed transaction of a checkpoint up to
    /// it commits — unless it is older than the transaction timeout now, when the broker has
    /// already aborted it (expired: its records are lost). The markers are synced before the
    /// records are applied to the store.
    pub fn commit(&mut self, checkpoint: u64, now_ms: u64) -> Result<(), DeliveryError> {
        match &mut self.tracked {
            None => Ok(()),
            Some(tracker) => {
                let due = |tx: &Transaction| tx.checkpoint.is_some_and(|c| c <= checkpoint);
                tracker.settle(&mut *self.inner, now_ms, due, false)
            }
        }
    }

    /// After a failure, restored from checkpoint `completed` (None: from no checkpoint):
    /// pre-committed transactions of checkpoints up to it commit (Flink's recoverAndCommit, still
    /// subject to the timeout), every other one and the open transaction are aborted. The next
    /// transaction starts at `now_ms`. Non-transactional records are never taken back.
    pub fn recover(&mut self, completed: Option<u64>, now_ms: u64) -> Result<(), DeliveryError> {
        match &mut self.tracked {
            None => Ok(()),
            Some(tracker) => {
                let due = |tx: &Transaction| {
                    tx.checkpoint
                        .zip(completed)
                        .is_some_and(|(c, completed)| c <= completed)
                };
                tracker.settle(&mut *self.inner, now_ms, due, true)?;
                tracker.txns.open_since_ms = now_ms;
                Ok(())
            }
        }
    }

    /// What the configured reader sees, each (user, window) once with its latest visible count:
    /// read_committed, the store; read_uncommitted, the store overlaid with every record
    /// written (in any transaction, whatever became of it), the latest written winning.
    pub fn read_view(&mut self) -> Result<Vec<Count>, DeliveryError> {
        let stored = self.inner.read_all()?;
        let Some(overlay) = self
            .tracked
            .as_ref()
            .and_then(|t| t.reader.overlay.as_ref())
        else {
            return Ok(stored);
        };
        let mut view: FastMap<(u64, usize), i64> = stored
            .into_iter()
            .map(|(user, window, count)| ((user, window), count))
            .collect();
        view.extend(overlay.iter().map(|(key, count)| (*key, *count)));
        let mut view: Vec<Count> = view.into_iter().map(|((u, w), c)| (u, w, c)).collect();
        view.sort_unstable();
        Ok(view)
    }

    /// The counters (all zero when passing through).
    pub fn counters(&self) -> DeliveryCounters {
        self.tracked
            .as_ref()
            .map_or_else(DeliveryCounters::default, |t| DeliveryCounters {
                journal_bytes: t.journal.len,
                ..t.counters
            })
    }

    /// The configuration, None when passing through.
    pub fn config(&self) -> Option<DeliveryConfig> {
        self.tracked.as_ref().map(|t| t.config)
    }

    /// The store behind (e.g. for its [`SinkCounters`](super::sink::SinkCounters)).
    pub fn sink(&self) -> &dyn Sink {
        &*self.inner
    }

    pub fn sink_mut(&mut self) -> &mut dyn Sink {
        &mut *self.inner
    }

    /// The end of a job: the journal synced, the store flushed.
    pub fn flush(&mut self) -> Result<(), DeliveryError> {
        if let Some(tracker) = &mut self.tracked {
            tracker.sync()?;
        }
        Ok(self.inner.flush()?)
    }
}

#[cfg(test)]
mod tests {
    use crate::pipeline::output::origin;
    use std::collections::BTreeMap;

    use proptest::prelude::*;

    use super::*;
    use crate::durability::sink::MemorySink;

    pub(super) fn store() -> Box<dyn Sink> {
        Box::new(MemorySink::new(vec!["1m".into(), "5m".into()]))
    }

    pub(super) fn config(
        guarantee: Guarantee,
        isolation: Isolation,
        idempotent: bool,
    ) -> DeliveryConfig {
        DeliveryConfig {
            guarantee,
            isolation,
            idempotent,
            transaction_timeout_ms: None,
        }
    }

    /// The results of processing event `i`: a count for each of two windows of one user (three
    /// users, so later events overwrite earlier ones' counts).
    pub(super) fn results(i: u64) -> [Count; 2] {
        [(i % 3, 0, 10 * i as i64), (i % 3, 1, 10 * i as i64 + 1)]
    }

    pub(super) fn emit(d: &mut Delivery, events: std::ops::Range<u64>) {
        for i in events {
            d.set_origin(origin(0, i));
            for (user, window, count) in results(i) {
                d.write(user, window, count).unwrap();
            }
        }
    }

    /// Every event's results in order, the last write of a pair winning.
    fn expected(events: impl IntoIterator<Item = u64>) -> Vec<Count> {
        last_writes(events.into_iter().flat_map(results))
    }

    pub(super) fn last_writes(records: impl IntoIterator<Item = Count>) -> Vec<Count> {
        let mut view = BTreeMap::new();
        for (user, window, count) in records {
            view.insert((user, window), count);
        }
        view.into_iter().map(|((u, w), c)| (u, w, c)).collect()
    }

    pub(super) fn view(d: &mut Delivery) -> Vec<Count> {
        let mut view = d.read_view().unwrap();
        view.sort_unstable();
        view
    }

    /// Events 0..4 before checkpoint 1, 4..8 before checkpoint 2; 1 completes, then the job
    /// fails before 2 does. The process dies (the delivery dropped, nothing committed), a new
    /// one opens the journal with an empty store, restores checkpoint 1 and processes events
    /// 4..8 again; checkpoint 3 (ids go on after a restore) completes.
    fn fail_and_replay(config: DeliveryConfig) -> (Delivery, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let mut d = Delivery::open(store(), config, dir.path(), 0).unwrap();
        emit(&mut d, 0..4);
        d.pre_commit(1, 10).unwrap();
        emit(&mut d, 4..8);
        d.pre_commit(2, 20).unwrap();
        d.commit(1, 30).unwrap();
        drop(d);
        let mut d = Delivery::open(store(), config, dir.path(), 40).unwrap();
        d.recover(Some(1), 40).unwrap();
        emit(&mut d, 4..8);
        d.pre_commit(3, 50).unwrap();
        d.commit(3, 60).unwrap();
        (d, dir)
    }

    #[test]
    fn exactly_once_read_committed_sees_each_record_once() {
        let (mut d, _dir) = fail_and_replay(config(
            Guarantee::ExactlyOnce,
            Isolation::ReadCommitted,
            false,
        ));
        assert_eq!(view(&mut d), expected(0..8));
        let c = d.counters();
        assert_eq!(c.duplicates_seen, 0);
        assert_eq!(c.records_emitted, 24);
        assert_eq!(c.records_visible, 16);
        assert_eq!(c.records_aborted, 8);
        assert_eq!(c.transactions_committed, 2);
        assert_eq!(c.transactions_aborted, 1);
        assert_eq!(c.pending_records, 0);
        // Transaction 1 started at 0 and committed at 30; the replay's started at the
        // recovery (40) and committed at 60.
        assert_eq!(c.visibility_delay_ms_max, 30);
        assert_eq!(c.visibility_delay_ms_sum, 8 * 30 + 8 * 20);
        assert_eq!(c.visibility_delay_records, 16);
        // The new store got the replayed commit of 1 (flushed at the open) and the commit of 3.
        assert_eq!(d.sink().counters().writes, 16);
        assert_eq!(d.sink().counters().flushes, 2);
    }

    #[test]
    fn at_least_once_shows_the_replay_as_duplicates_an_idempotent_store_drops() {
        for idempotent in [false, true] {
            let (mut d, _dir) = fail_and_replay(config(
                Guarantee::AtLeastOnce,
                Isolation::ReadCommitted,
                idempotent,
            ));
            assert_eq!(view(&mut d), expected(0..8));
            let c = d.counters();
            assert_eq!(c.records_emitted, 24);
            assert_eq!(c.records_visible, 24);
            assert_eq!(c.duplicates_seen, 8);
            assert_eq!(c.duplicates_dropped, if idempotent { 8 } else { 0 });
            assert_eq!(c.visibility_delay_ms_sum, 0);
            assert_eq!(c.transactions_committed + c.transactions_aborted, 0);
            let sink = d.sink().counters();
            // Journal replay, then the events again unless dropped; flushed at the open and at
            // barrier 3.
            assert_eq!(sink.writes, if idempotent { 16 } else { 24 });
            assert_eq!(sink.flushes, 2);
        }
    }

    #[test]
    fn exactly_once_read_uncommitted_sees_aborted_records_and_their_replay() {
        for idempotent in [false, true] {
            let (mut d, _dir) = fail_and_replay(config(
                Guarantee::ExactlyOnce,
                Isolation::ReadUncommitted,
                idempotent,
            ));
            assert_eq!(view(&mut d), expected(0..8));
            let c = d.counters();
            assert_eq!(c.records_visible, 24);
            assert_eq!(c.duplicates_seen, 8);
            assert_eq!(c.duplicates_dropped, if idempotent { 8 } else { 0 });
            assert_eq!(c.visibility_delay_ms_sum, 0);
            assert_eq!(c.transactions_aborted, 1);
            // The store holds the committed records all the same.
            let mut stored = d.sink_mut().read_all().unwrap();
            stored.sort_unstable();
            assert_eq!(stored, expected(0..8));
        }
    }

    #[test]
    fn a_transaction_past_its_timeout_is_lost() {
        let config = DeliveryConfig {
            transaction_timeout_ms: Some(100),
            ..config(Guarantee::ExactlyOnce, Isolation::ReadCommitted, false)
        };
        let dir = tempfile::tempdir().unwrap();
        let mut d = Delivery::open(store(), config, dir.path(), 0).unwrap();
        emit(&mut d, 0..4);
        d.pre_commit(1, 10).unwrap();
        emit(&mut d, 4..8);
        // Checkpoint 1 completes late: its transaction started at 0.
        d.commit(1, 150).unwrap();
        d.pre_commit(2, 60).unwrap();
        // Transaction 2 started at 10: 100 ms old, not more.
        d.commit(2, 110).unwrap();
        let check = |d: &mut Delivery| {
            assert_eq!(view(d), expected(4..8));
            let c = d.counters();
            assert_eq!(c.transactions_expired, 1);
            assert_eq!(c.records_lost, 8);
            assert_eq!(c.transactions_committed, 1);
            assert_eq!(c.records_visible, 8);
        };
        check(&mut d);
        drop(d);
        // The expiry is in the journal: a new process rebuilds the same.
        let mut d = Delivery::open(store(), config, dir.path(), 200).unwrap();
        check(&mut d);

        // Recovery commits what its checkpoint pre-committed, under the same timeout.
        emit(&mut d, 8..10);
        d.pre_commit(3, 210).unwrap();
        emit(&mut d, 10..12);
        d.pre_commit(4, 220).unwrap();
        drop(d);
        let mut d = Delivery::open(store(), config, dir.path(), 305).unwrap();
        // 3 started at 200 (the open), 4 at 210: 3 is 105 ms old, past the timeout.
        d.recover(Some(4), 305).unwrap();
        let c = d.counters();
        assert_eq!((c.transactions_expired, c.records_lost), (2, 12));
        assert_eq!(c.transactions_committed, 2);
        let mut all = expected(4..8);
        all.retain(|(u, w, _)| {
            !expected(10..12)
                .iter()
                .any(|(u2, w2, _)| (u, w) == (u2, w2))
        });
        all.extend(expected(10..12));
        all.sort_unstable();
        assert_eq!(view(&mut d), all);
    }

    #[test]
    fn a_killed_process_comes_back_with_the_same_view_and_counters() {
        for isolation in [Isolation::ReadCommitted, Isolation::ReadUncommitted] {
            let config = config(Guarantee::ExactlyOnce, isolation, true);
            let dir = tempfile::tempdir().unwrap();
            let mut d = Delivery::open(store(), config, dir.path(), 0).unwrap();
            emit(&mut d, 0..4);
            d.pre_commit(1, 10).unwrap();
            emit(&mut d, 4..6);
            d.pre_commit(2, 20).unwrap();
            d.commit(1, 25).unwrap();
            let before = (view(&mut d), d.counters());
            // Still buffered, never reaching the file: a kill -9 loses them.
            emit(&mut d, 6..8);
            std::mem::forget(d);
            let mut d = Delivery::open(store(), config, dir.path(), 30).unwrap();
            let after = d.counters();
            assert_eq!(view(&mut d), before.0);
            assert_eq!(
                after,
                DeliveryCounters {
                    journal_syncs: after.journal_syncs,
                    ..before.1
                }
            );
            // Checkpoint 2 had completed: recovery commits its pre-committed transaction.
            d.recover(Some(2), 30).unwrap();
            assert_eq!(view(&mut d), expected(0..6));
            assert_eq!(d.counters().pending_records, 0);
        }
    }

    #[test]
    fn passing_through_writes_to_the_store_and_tracks_nothing() {
        let mut d = Delivery::passthrough(store());
        emit(&mut d, 0..4);
        d.pre_commit(1, 10).unwrap();
        d.commit(1, 20).unwrap();
        d.recover(Some(1), 30).unwrap();
        emit(&mut d, 2..4);
        d.flush().unwrap();
        assert_eq!(view(&mut d), expected(0..4));
        assert_eq!(d.counters(), DeliveryCounters::default());
        assert_eq!(d.sink().counters().writes, 12);
        assert_eq!(d.config(), None);
    }

    /// What the job does next.
    #[derive(Debug, Clone)]
    enum Step {
        /// Processes the next event.
        Event,
        /// A checkpoint barrier.
        Barrier,
        /// The checkpoint `pick` (of those in flight) completes; with `notify`, the sink hears.
        Complete { pick: usize, notify: bool },
        /// The job fails and restores its last completed checkpoint; with `kill`, the process
        /// dies too and a new one opens the journal with an empty store.
        Fail { kill: bool },
    }

    fn step() -> impl Strategy<Value = Step> {
        prop_oneof![
            6 => Just(Step::Event),
            2 => Just(Step::Barrier),
            2 => (any::<usize>(), any::<bool>())
                .prop_map(|(pick, notify)| Step::Complete { pick, notify }),
            1 => any::<bool>().prop_map(|kill| Step::Fail { kill }),
        ]
    }

    /// The job and a reference model of the committed view: only records of committed
    /// transactions, the last write winning.
    #[derive(Default)]
    struct Model {
        /// The next event.
        position: u64,
        next_checkpoint: u64,
        /// (checkpoint, position at its barrier), not completed yet.
        in_flight: Vec<(u64, u64)>,
        completed: Option<(u64, u64)>,
        /// Records since the last barrier.
        open: Vec<Count>,
        /// (checkpoint, records) pre-committed.
        pending: Vec<(u64, Vec<Count>)>,
        committed: BTreeMap<(u64, usize), i64>,
    }

    impl Model {
        fn commit_up_to(&mut self, checkpoint: u64) {
            let (due, rest) = std::mem::take(&mut self.pending)
                .into_iter()
                .partition(|(c, _)| *c <= checkpoint);
            self.pending = rest;
            for (_, records) in due {
                for (user, window, count) in records {
                    self.committed.insert((user, window), count);
                }
            }
        }

        fn view(&self) -> Vec<Count> {
            self.committed
                .iter()
                .map(|((u, w), c)| (*u, *w, *c))
                .collect()
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn the_committed_view_holds_exactly_the_committed_records(
            steps in proptest::collection::vec(step(), 1..120),
        ) {
            let config = config(Guarantee::ExactlyOnce, Isolation::ReadCommitted, false);
            let dir = tempfile::tempdir().unwrap();
            let mut d = Delivery::open(store(), config, dir.path(), 0).unwrap();
            let mut m = Model { next_checkpoint: 1, ..Model::default() };
            for (now, step) in (1u64..).zip(steps) {
                match step {
                    Step::Event => {
                        let i = m.position;
                        m.position += 1;
                        d.set_origin(origin(0, i));
                        for (user, window, count) in results(i) {
                            d.write(user, window, count).unwrap();
                            m.open.push((user, window, count));
                        }
                    }
                    Step::Barrier => {
                        let checkpoint = m.next_checkpoint;
                        m.next_checkpoint += 1;
                        d.pre_commit(checkpoint, now).unwrap();
                        m.pending.push((checkpoint, std::mem::take(&mut m.open)));
                        m.in_flight.push((checkpoint, m.position));
                    }
                    Step::Complete { pick, notify } => {
                        if m.in_flight.is_empty() {
                            continue;
                        }
                        let (checkpoint, position) = m.in_flight[pick % m.in_flight.len()];
                        // A completed checkpoint subsumes the earlier ones.
                        m.in_flight.retain(|(c, _)| *c > checkpoint);
                        m.completed = Some((checkpoint, position));
                        if notify {
                            d.commit(checkpoint, now).unwrap();
                            m.commit_up_to(checkpoint);
                        }
                    }
                    Step::Fail { kill } => {
                        if kill {
                            std::mem::forget(d);
                            d = Delivery::open(store(), config, dir.path(), now).unwrap();
                        }
                        let completed = m.completed.map(|(c, _)| c);
                        d.recover(completed, now).unwrap();
                        if let Some(c) = completed {
                            m.commit_up_to(c);
                        }
                        m.pending.clear();
                        m.open.clear();
                        m.in_flight.clear();
                        m.position = m.completed.map_or(0, |(_, p)| p);
                    }
                }
                prop_assert_eq!(view(&mut d), m.view());
            }
            prop_assert_eq!(d.counters().duplicates_seen, 0);
        }
    }
}
