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

use std::fs::{File, OpenOptions};
use std::io::{BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use super::sink::{Count, Sink, SinkError};
use crate::util::hash::{FastMap, FastSet};

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

/// What happened to the records, as the reader saw it. Rebuilt from the journal on open: the
/// counts cover the journal's whole history, across restarts.
#[derive(Default, Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct DeliveryCounters {
    /// Records the job wrote.
    pub records_emitted: u64,
    /// Records that reached the reader, duplicates (dropped ones too) included.
    pub records_visible: u64,
    /// Records the reader received whose id it had received before.
    pub duplicates_seen: u64,
    /// Of those, dropped by the idempotent store.
    pub duplicates_dropped: u64,
    /// Transactions with records that committed.
    pub transactions_committed: u64,
    /// Transactions with records that were aborted (recovery).
    pub transactions_aborted: u64,
    /// Transactions dropped by the broker: older than the timeout when they were to commit.
    pub transactions_expired: u64,
    /// Records in aborted transactions (a replay emits them again).
    pub records_aborted: u64,
    /// Records in expired transactions: never visible to read_committed.
    pub records_lost: u64,
    /// Records in transactions neither committed nor aborted yet (open or pre-committed).
    pub pending_records: u64,
    /// Largest time from a transaction's start to its commit, over the records it made visible.
    pub visibility_delay_ms_max: u64,
    /// Sum of the visibility delays of `visibility_delay_records` records (0 for a record
    /// visible when written).
    pub visibility_delay_ms_sum: u64,
    pub visibility_delay_records: u64,
    /// The journal's length.
    pub journal_bytes: u64,
    /// fsyncs of the journal by this process.
    pub journal_syncs: u64,
    /// Bytes of a torn tail dropped when the journal was opened.
    pub journal_torn_bytes: u64,
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

/// The id of a record emitted for `window` while processing `origin`.
#[inline]
pub fn record_id(origin: u64, window: usize) -> u64 {
    mix(0x243f_6a88_85a3_08d3, window as u64, origin)
}

/// An origin from a source position: e.g. (partition, offset), or (a timer's key, its time).
pub fn origin(stream: u64, position: u64) -> u64 {
    mix(0x1319_8a2e_0370_7344, stream, position)
}

/// `a` and `b` into 64 bits: distinct pairs collide with a chance of about 2^-64.
#[inline]
fn mix(seed: u64, a: u64, b: u64) -> u64 {
    fmix64(fmix64(a ^ seed) ^ b)
}

/// MurmurHash3's finalizer: a bijection that spreads every input bit over the output.
#[inline]
fn fmix64(mut k: u64) -> u64 {
    k ^= k >> 33;
    k = k.wrapping_mul(0xff51_afd7_ed55_8ccd);
    k ^= k >> 33;
    k = k.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    k ^ (k >> 33)
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

/// One result record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Record {
    id: u64,
    user: u64,
    window: usize,
    count: i64,
}

/// A transaction with records.
#[derive(Debug)]
struct Transaction {
    /// Its number, from 0 in the journal's order.
    txn: u64,
    /// When it started: the barrier (or open, or recovery) before its first record.
    opened_ms: u64,
    /// The checkpoint it was pre-committed for; None while open.
    checkpoint: Option<u64>,
    records: Vec<Record>,
}

/// One change of the state; the journal is a list of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Entry {
    /// A non-transactional record.
    Record(Record),
    /// A record of the open transaction.
    TxRecord(Record),
    /// Transaction `txn` starts (with its first record).
    Open {
        txn: u64,
        opened_ms: u64,
    },
    PreCommit {
        txn: u64,
        checkpoint: u64,
    },
    Commit {
        txn: u64,
        now_ms: u64,
    },
    /// Past the timeout when it was to commit.
    Expire {
        txn: u64,
        now_ms: u64,
    },
    Abort {
        txn: u64,
    },
}

/// How a transaction ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    Commit { now_ms: u64 },
    Expire,
    Abort,
}

/// An entry that does not fit the state it is applied to, or a store that failed.
enum ApplyError {
    Sink(SinkError),
    Inconsistent(String),
}

impl From<SinkError> for ApplyError {
    fn from(e: SinkError) -> Self {
        ApplyError::Sink(e)
    }
}

impl ApplyError {
    fn at(self, path: &Path, offset: u64) -> DeliveryError {
        match self {
            ApplyError::Sink(e) => DeliveryError::Sink(e),
            ApplyError::Inconsistent(reason) => DeliveryError::Corrupt {
                path: path.to_path_buf(),
                offset,
                reason,
            },
        }
    }
}

/// What the reader has received, and the store's own dedupe.
struct Reader {
    idempotent: bool,
    /// Ids of the records the reader received.
    seen: FastSet<u64>,
    /// Ids the idempotent store holds, when they differ from `seen` (read_uncommitted: the
    /// reader receives records the store only gets at commit, or never).
    stored: Option<FastSet<u64>>,
    /// read_uncommitted: the latest count written for every (user, window), in write order.
    overlay: Option<FastMap<(u64, usize), i64>>,
}

impl Reader {
    fn new(config: &DeliveryConfig) -> Reader {
        let uncommitted = config.isolation == Isolation::ReadUncommitted;
        Reader {
            idempotent: config.idempotent,
            seen: FastSet::default(),
            stored: (uncommitted && config.idempotent).then(FastSet::default),
            overlay: uncommitted.then(FastMap::default),
        }
    }

    fn uncommitted(&self) -> bool {
        self.overlay.is_some()
    }

    /// `record` reaches the reader `delay_ms` after it started: false when the idempotent
    /// store drops it as a duplicate.
    #[inline]
    fn receive(&mut self, record: &Record, delay_ms: u64, counters: &mut DeliveryCounters) -> bool {
        counters.records_visible += 1;
        counters.visibility_delay_records += 1;
        counters.visibility_delay_ms_sum += delay_ms;
        counters.visibility_delay_ms_max = counters.visibility_delay_ms_max.max(delay_ms);
        if !self.seen.insert(record.id) {
            counters.duplicates_seen += 1;
            if self.idempotent {
                counters.duplicates_dropped += 1;
                return false;
            }
        }
        if let Some(overlay) = &mut self.overlay {
            overlay.insert((record.user, record.window), record.count);
        }
        true
    }

    /// Writes `record` to the store, unless the idempotent store holds its id. `received`:
    /// what [`Reader::receive`] answered (read_committed: the store's decision too).
    #[inline]
    fn store(
        &mut self,
        inner: &mut dyn Sink,
        record: &Record,
        received: bool,
    ) -> Result<(), SinkError> {
        let write = match &mut self.stored {
            Some(ids) => ids.insert(record.id),
            None => received,
        };
        if write {
            inner.write(record.user, record.window, record.count)?;
        }
        Ok(())
    }
}

/// The transactions not finished yet.
#[derive(Default)]
struct Transactions {
    /// The open transaction, once it has a record.
    open: Option<Transaction>,
    /// Pre-committed, in order.
    pending: Vec<Transaction>,
    /// Left open by a process that died: aborted by the next recovery.
    orphans: Vec<Transaction>,
    /// The number of the next transaction.
    next_txn: u64,
    /// When the next transaction starts: the last barrier, open or recovery.
    open_since_ms: u64,
    /// Emptied record lists, to reuse.
    spare: Vec<Vec<Record>>,
}

/// Record lists kept for reuse.
const SPARE_LISTS: usize = 4;

impl Transactions {
    fn orphan_open(&mut self) {
        if let Some(tx) = self.open.take() {
            self.orphans.push(tx);
        }
    }

    /// Removes transaction `txn` (pending, orphaned, or open).
    fn take(&mut self, txn: u64) -> Option<Transaction> {
        if let Some(at) = self.pending.iter().position(|tx| tx.txn == txn) {
            return Some(self.pending.remove(at));
        }
        if let Some(at) = self.orphans.iter().position(|tx| tx.txn == txn) {
            return Some(self.orphans.remove(at));
        }
        self.open.take_if(|tx| tx.txn == txn)
    }

    fn recycle(&mut self, mut records: Vec<Record>) {
        if self.spare.len() < SPARE_LISTS {
            records.clear();
            self.spare.push(records);
        }
    }
}

/// The state of a tracked delivery: what the journal records.
struct Tracker {
    config: DeliveryConfig,
    journal: Journal,
    reader: Reader,
    txns: Transactions,
    counters: DeliveryCounters,
}

impl Tracker {
    fn new(config: DeliveryConfig, journal: Journal) -> Tracker {
        Tracker {
            reader: Reader::new(&config),
            config,
            journal,
            txns: Transactions::default(),
            counters: DeliveryCounters::default(),
        }
    }

    /// Journals `entry`, then applies it.
    #[inline]
    fn record(&mut self, inner: &mut dyn Sink, entry: Entry) -> Result<(), DeliveryError> {
        let offset = self.journal.len;
        self.journal.append(&entry)?;
        self.apply(inner, entry)
            .map_err(|e| e.at(&self.journal.path, offset))
    }

    #[inline]
    fn write(&mut self, inner: &mut dyn Sink, record: Record) -> Result<(), DeliveryError> {
        if self.config.guarantee != Guarantee::ExactlyOnce {
            return self.record(inner, Entry::Record(record));
        }
        if self.txns.open.is_none() {
            let open = Entry::Open {
                txn: self.txns.next_txn,
                opened_ms: self.txns.open_since_ms,
            };
            self.record(inner, open)?;
        }
        self.record(inner, Entry::TxRecord(record))
    }

    fn pre_commit(
        &mut self,
        inner: &mut dyn Sink,
        checkpoint: u64,
        now_ms: u64,
    ) -> Result<(), DeliveryError> {
        match self.config.guarantee {
            Guarantee::None => Ok(()),
            Guarantee::AtLeastOnce => {
                // The journal first: whatever the flush makes visible is known as seen.
                self.sync()?;
                Ok(inner.flush()?)
            }
            Guarantee::ExactlyOnce => {
                if let Some(txn) = self.txns.open.as_ref().map(|tx| tx.txn) {
                    self.record(inner, Entry::PreCommit { txn, checkpoint })?;
                }
                self.txns.open_since_ms = now_ms;
                self.sync()
            }
        }
    }

    /// Commits (or expires) the pending transactions `due` says, and with `abort_rest` aborts
    /// every other unfinished one: markers journaled and synced first, then applied in order.
    fn settle(
        &mut self,
        inner: &mut dyn Sink,
        now_ms: u64,
        due: impl Fn(&Transaction) -> bool,
        abort_rest: bool,
    ) -> Result<(), DeliveryError> {
        let expired = |tx: &Transaction| {
            self.config
                .transaction_timeout_ms
                .is_some_and(|timeout| now_ms.saturating_sub(tx.opened_ms) > timeout)
        };
        let mut markers = Vec::new();
        for tx in &self.txns.pending {
            let txn = tx.txn;
            if due(tx) {
                markers.push(if expired(tx) {
                    Entry::Expire { txn, now_ms }
                } else {
                    Entry::Commit { txn, now_ms }
                });
            } else if abort_rest {
                markers.push(Entry::Abort { txn });
            }
        }
        if abort_rest {
            let others = self.txns.orphans.iter().chain(&self.txns.open);
            markers.extend(others.map(|tx| Entry::Abort { txn: tx.txn }));
        }
        let mut offsets = Vec::with_capacity(markers.len());
        for marker in &markers {
            offsets.push(self.journal.len);
            self.journal.append(marker)?;
        }
        self.sync()?;
        let mut committed = false;
        for (marker, offset) in markers.into_iter().zip(offsets) {
            committed |= matches!(marker, Entry::Commit { .. });
            self.apply(inner, marker)
                .map_err(|e| e.at(&self.journal.path, offset))?;
        }
        if committed {
            inner.flush()?;
        }
        Ok(())
    }

    fn sync(&mut self) -> Result<(), DeliveryError> {
        if self.journal.sync()? {
            self.counters.journal_syncs += 1;
        }
        Ok(())
    }

    /// The one place the state changes: live (after journaling `entry`) and on replay.
    #[inline]
    fn apply(&mut self, inner: &mut dyn Sink, entry: Entry) -> Result<(), ApplyError> {
        match entry {
            Entry::Record(record) => {
                self.counters.records_emitted += 1;
                let received = self.reader.receive(&record, 0, &mut self.counters);
                self.reader.store(inner, &record, received)?;
            }
            Entry::TxRecord(record) => {
                let Some(open) = &mut self.txns.open else {
                    return Err(ApplyError::Inconsistent(
                        "a transaction's record with no transaction open".into(),
                    ));
                };
                open.records.push(record);
                self.counters.records_emitted += 1;
                self.counters.pending_records += 1;
                if self.reader.uncommitted() {
                    self.reader.receive(&record, 0, &mut self.counters);
                }
            }
            Entry::Open { txn, opened_ms } => {
                self.txns.orphan_open();
                let records = self.txns.spare.pop().unwrap_or_default();
                self.txns.open = Some(Transaction {
                    txn,
                    opened_ms,
                    checkpoint: None,
                    records,
                });
                self.txns.next_txn = self.txns.next_txn.max(txn.saturating_add(1));
            }
            Entry::PreCommit { txn, checkpoint } => {
                let Some(mut tx) = self.txns.open.take_if(|tx| tx.txn == txn) else {
                    return Err(ApplyError::Inconsistent(format!(
                        "pre-commit of transaction {txn}, which is not open"
                    )));
                };
                tx.checkpoint = Some(checkpoint);
                self.txns.pending.push(tx);
            }
            Entry::Commit { txn, now_ms } => self.finish(inner, txn, End::Commit { now_ms })?,
            Entry::Expire { txn, .. } => self.finish(inner, txn, End::Expire)?,
            Entry::Abort { txn } => self.finish(inner, txn, End::Abort)?,
        }
        Ok(())
    }

    /// Transaction `txn` ends as `end` says. Only a pre-committed one commits or expires.
    fn finish(&mut self, inner: &mut dyn Sink, txn: u64, end: End) -> Result<(), ApplyError> {
        let pending = self.txns.pending.iter().any(|tx| tx.txn == txn);
        let tx = (pending || end == End::Abort)
            .then(|| self.txns.take(txn))
            .flatten()
            .ok_or_else(|| {
                ApplyError::Inconsistent(format!("end of transaction {txn}, which is not pending"))
            })?;
        let n = tx.records.len() as u64;
        self.counters.pending_records = self.counters.pending_records.saturating_sub(n);
        match end {
            End::Commit { now_ms } => {
                self.counters.transactions_committed += 1;
                let delay = now_ms.saturating_sub(tx.opened_ms);
                for record in &tx.records {
                    // read_uncommitted received it when written.
                    let received = self.reader.uncommitted()
                        || self.reader.receive(record, delay, &mut self.counters);
                    self.reader.store(inner, record, received)?;
                }
            }
            End::Expire => {
                self.counters.transactions_expired += 1;
                self.counters.records_lost += n;
            }
            End::Abort => {
                self.counters.transactions_aborted += 1;
                self.counters.records_aborted += n;
            }
        }
        self.txns.recycle(tx.records);
        Ok(())
    }
}

/// The journal's file in its folder.
pub const JOURNAL_FILE: &str = "delivery.journal";
const MAGIC: &[u8; 4] = b"SBDJ";
const VERSION: u32 = 1;
const HEADER_LEN: u64 = 8;
/// Fields of an entry: at most four u64 words.
const MAX_WORDS: usize = 4;
/// Head word, fields, checksum.
const MAX_ENTRY: usize = 8 + 8 * MAX_WORDS + 4;

const TAG_RECORD: u8 = 1;
const TAG_TX_RECORD: u8 = 2;
const TAG_OPEN: u8 = 3;
const TAG_PRE_COMMIT: u8 = 4;
const TAG_COMMIT: u8 = 5;
const TAG_EXPIRE: u8 = 6;
const TAG_ABORT: u8 = 7;

impl Record {
    fn words(&self) -> [u64; 4] {
        [self.id, self.user, self.window as u64, self.count as u64]
    }

    fn from_words(words: &[u64]) -> Result<Record, String> {
        let [id, user, window, count] = words else {
            return Err(format!("a record of {} fields", words.len()));
        };
        Ok(Record {
            id: *id,
            user: *user,
            window: usize::try_from(*window).map_err(|_| format!("window {window}"))?,
            count: *count as i64,
        })
    }
}

impl Entry {
    /// Its tag, fields, and how many of them there are.
    fn words(&self) -> (u8, [u64; MAX_WORDS], usize) {
        match *self {
            Entry::Record(r) => (TAG_RECORD, r.words(), 4),
            Entry::TxRecord(r) => (TAG_TX_RECORD, r.words(), 4),
            Entry::Open { txn, opened_ms } => (TAG_OPEN, [txn, opened_ms, 0, 0], 2),
            Entry::PreCommit { txn, checkpoint } => (TAG_PRE_COMMIT, [txn, checkpoint, 0, 0], 2),
            Entry::Commit { txn, now_ms } => (TAG_COMMIT, [txn, now_ms, 0, 0], 2),
            Entry::Expire { txn, now_ms } => (TAG_EXPIRE, [txn, now_ms, 0, 0], 2),
            Entry::Abort { txn } => (TAG_ABORT, [txn, 0, 0, 0], 1),
        }
    }

    /// Appends the entry, framed and checksummed, to `out`. Word by word: the checksum is
    /// computed from the words, not read back from bytes just stored (loads spanning several
    /// stores stall), and no copy of a variable length is made.
    #[inline]
    fn encode(&self, out: &mut Vec<u8>) {
        let (tag, fields, n) = self.words();
        let mut words = [0u64; 1 + MAX_WORDS];
        words[0] = head_word(8 * n as u32, tag);
        words[1..].copy_from_slice(&fields);
        let words = &words[..1 + n];
        for word in words {
            out.extend_from_slice(&word.to_le_bytes());
        }
        let crc = Crc32c::new().words(words).finish();
        out.extend_from_slice(&crc.to_le_bytes());
    }

    /// The entry of a tag and its fields (`8 * n` bytes).
    fn decode(tag: u8, fields: &[u8]) -> Result<Entry, String> {
        let mut words = [0u64; MAX_WORDS];
        let n = fields.len() / 8;
        if !fields.len().is_multiple_of(8) || n > MAX_WORDS {
            return Err(format!("fields of {} bytes", fields.len()));
        }
        for (word, bytes) in words.iter_mut().zip(fields.chunks_exact(8)) {
            let mut le = [0u8; 8];
            le.copy_from_slice(bytes);
            *word = u64::from_le_bytes(le);
        }
        let words = &words[..n];
        let entry = match (tag, words) {
            (TAG_RECORD, _) => Entry::Record(Record::from_words(words)?),
            (TAG_TX_RECORD, _) => Entry::TxRecord(Record::from_words(words)?),
            (TAG_OPEN, &[txn, opened_ms]) => Entry::Open { txn, opened_ms },
            (TAG_PRE_COMMIT, &[txn, checkpoint]) => Entry::PreCommit { txn, checkpoint },
            (TAG_COMMIT, &[txn, now_ms]) => Entry::Commit { txn, now_ms },
            (TAG_EXPIRE, &[txn, now_ms]) => Entry::Expire { txn, now_ms },
            (TAG_ABORT, &[txn]) => Entry::Abort { txn },
            (tag, _) => return Err(format!("unknown entry tag {tag} with {n} fields")),
        };
        Ok(entry)
    }
}

/// An entry's head word: the bytes of its fields, its tag, three zero bytes.
fn head_word(field_bytes: u32, tag: u8) -> u64 {
    u64::from(field_bytes) | (u64::from(tag) << 32)
}

/// The append-only journal file.
struct Journal {
    path: PathBuf,
    /// None only in the placeholder a replay starts with.
    file: Option<File>,
    /// Entries not written to the file yet.
    buffer: Vec<u8>,
    /// Length of the file, buffered bytes included.
    len: u64,
    /// Bytes appended since the last sync.
    dirty: bool,
    /// Bytes of a torn tail dropped at open.
    torn_bytes: u64,
}

/// Journal bytes buffered before a write to the file.
const JOURNAL_BUFFER: usize = 64 << 10;
/// Read buffer for the replay.
const REPLAY_BUFFER: usize = 1 << 20;

impl Journal {
    /// A journal with no file: replay applies entries to a tracker before the file is ready.
    fn placeholder(folder: &Path) -> Journal {
        Journal {
            path: folder.join(JOURNAL_FILE),
            file: None,
            buffer: Vec::new(),
            len: 0,
            dirty: false,
            torn_bytes: 0,
        }
    }

    fn io(&self, source: std::io::Error) -> DeliveryError {
        DeliveryError::Io {
            path: self.path.clone(),
            source,
        }
    }

    fn corrupt(&self, offset: u64, reason: impl Into<String>) -> DeliveryError {
        DeliveryError::Corrupt {
            path: self.path.clone(),
            offset,
            reason: reason.into(),
        }
    }

    /// Opens the journal in `folder` (created if missing), calls `replay` on each entry in
    /// order with its offset, drops a torn tail, and positions for appending.
    fn open(
        folder: &Path,
        mut replay: impl FnMut(u64, Entry) -> Result<(), DeliveryError>,
    ) -> Result<Journal, DeliveryError> {
        let mut journal = Journal::placeholder(folder);
        std::fs::create_dir_all(folder).map_err(|e| journal.io(e))?;
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&journal.path)
            .map_err(|e| journal.io(e))?;
        let file_len = file.metadata().map_err(|e| journal.io(e))?.len();
        let mut reader = BufReader::with_capacity(REPLAY_BUFFER, &file);
        let mut header = [0u8; HEADER_LEN as usize];
        let fresh = file_len < HEADER_LEN;
        if fresh {
            // New, or torn while its header was written: nothing in it.
            let mut expected = [0u8; HEADER_LEN as usize];
            expected[..4].copy_from_slice(MAGIC);
            expected[4..].copy_from_slice(&VERSION.to_le_bytes());
            reader
                .read_exact(&mut header[..file_len as usize])
                .map_err(|e| journal.io(e))?;
            if header[..file_len as usize] != expected[..file_len as usize] {
                return Err(journal.corrupt(0, "not a delivery journal"));
            }
            header = expected;
        } else {
            reader.read_exact(&mut header).map_err(|e| journal.io(e))?;
            if &header[..4] != MAGIC {
                return Err(journal.corrupt(0, "not a delivery journal"));
            }
            let version = u32::from_le_bytes([header[4], header[5], header[6], header[7]]);
            if version != VERSION {
                return Err(journal.corrupt(4, format!("version {version}, expected {VERSION}")));
            }
        }
        let mut offset = HEADER_LEN.min(file_len);
        if !fresh {
            offset = journal.replay(&mut reader, file_len, &mut replay)?;
        }
        drop(reader);
        journal.torn_bytes = file_len - offset;
        if fresh || offset < file_len {
            file.set_len(offset).map_err(|e| journal.io(e))?;
        }
        file.seek(SeekFrom::Start(offset))
            .map_err(|e| journal.io(e))?;
        journal.file = Some(file);
        journal.buffer = Vec::with_capacity(JOURNAL_BUFFER);
        if fresh {
            journal.buffer.extend_from_slice(&header);
            offset = HEADER_LEN;
        }
        journal.len = offset;
        journal.dirty = fresh || journal.torn_bytes > 0;
        journal.sync()?;
        if fresh {
            // The new file's name, durable too.
            File::open(folder)
                .and_then(|dir| dir.sync_all())
                .map_err(|e| journal.io(e))?;
        }
        Ok(journal)
    }

    /// Reads entries from `reader` (just past the header) up to `file_len`: where the valid
    /// entries end.
    fn replay(
        &self,
        reader: &mut impl Read,
        file_len: u64,
        replay: &mut impl FnMut(u64, Entry) -> Result<(), DeliveryError>,
    ) -> Result<u64, DeliveryError> {
        let mut offset = HEADER_LEN;
        let mut entry = [0u8; MAX_ENTRY];
        loop {
            let remaining = file_len - offset;
            if remaining < 8 {
                // Nothing more, or a head cut short.
                return Ok(offset);
            }
            reader.read_exact(&mut entry[..8]).map_err(|e| self.io(e))?;
            let mut head = [0u8; 8];
            head.copy_from_slice(&entry[..8]);
            let head = u64::from_le_bytes(head);
            let field_bytes = head as u32;
            let tag = (head >> 32) as u8;
            if head != head_word(field_bytes, tag)
                || !field_bytes.is_multiple_of(8)
                || field_bytes > 8 * MAX_WORDS as u32
            {
                return Err(self.corrupt(offset, format!("entry head {head:#018x}")));
            }
            if head == 0 {
                // Zeros to the end: the file grew but its data never reached the disk.
                let mut rest = Vec::new();
                reader.read_to_end(&mut rest).map_err(|e| self.io(e))?;
                if rest.iter().all(|b| *b == 0) {
                    return Ok(offset);
                }
                return Err(self.corrupt(offset, "an entry of zeros"));
            }
            let end = 8 + field_bytes as usize;
            let total = end + 4;
            if remaining < total as u64 {
                return Ok(offset);
            }
            reader
                .read_exact(&mut entry[8..total])
                .map_err(|e| self.io(e))?;
            let stored =
                u32::from_le_bytes([entry[end], entry[end + 1], entry[end + 2], entry[end + 3]]);
            if crc32c(&entry[..end]) != stored {
                if remaining == total as u64 {
                    // The last entry, written in part.
                    return Ok(offset);
                }
                return Err(self.corrupt(offset, "checksum mismatch"));
            }
            let decoded =
                Entry::decode(tag, &entry[8..end]).map_err(|r| self.corrupt(offset, r))?;
            replay(offset, decoded)?;
            offset += total as u64;
        }
    }

    #[inline]
    fn append(&mut self, entry: &Entry) -> Result<(), DeliveryError> {
        if self.buffer.len() + MAX_ENTRY > JOURNAL_BUFFER {
            self.write_out()?;
        }
        let before = self.buffer.len();
        entry.encode(&mut self.buffer);
        self.len += (self.buffer.len() - before) as u64;
        self.dirty = true;
        Ok(())
    }

    /// Writes the buffered entries to the file (not synced).
    fn write_out(&mut self) -> Result<(), DeliveryError> {
        let Some(file) = &mut self.file else {
            return Err(self.io(std::io::Error::other("the journal is not open")));
        };
        if let Err(e) = file.write_all(&self.buffer) {
            return Err(self.io(e));
        }
        self.buffer.clear();
        Ok(())
    }

    /// Writes the buffer out and fsyncs, if anything was appended since the last sync: whether
    /// it did.
    fn sync(&mut self) -> Result<bool, DeliveryError> {
        if !self.dirty {
            return Ok(false);
        }
        self.write_out()?;
        if let Some(Err(e)) = self.file.as_ref().map(File::sync_data) {
            return Err(self.io(e));
        }
        self.dirty = false;
        Ok(true)
    }
}

impl Drop for Journal {
    /// An orderly end (not a kill) writes what is buffered, as a `BufWriter` would; unsynced.
    fn drop(&mut self) {
        if !self.buffer.is_empty() && self.file.is_some() {
            let _ = self.write_out();
        }
    }
}

/// CRC-32C (Castagnoli, as RocksDB's and ext4's checksums) of `bytes`.
fn crc32c(bytes: &[u8]) -> u32 {
    let mut crc = Crc32c::new();
    let mut chunks = bytes.chunks_exact(8);
    let mut batch = [0u64; 8];
    let mut n = 0;
    for chunk in &mut chunks {
        let mut le = [0u8; 8];
        le.copy_from_slice(chunk);
        batch[n] = u64::from_le_bytes(le);
        n += 1;
        if n == batch.len() {
            crc = crc.words(&batch);
            n = 0;
        }
    }
    crc = crc.words(&batch[..n]);
    for b in chunks.remainder() {
        crc = crc.byte(*b);
    }
    crc.finish()
}

/// A CRC-32C being computed: with the CPU's CRC32 instruction (SSE4.2) where there is one,
/// else eight bytes at a time from tables (slicing-by-8). A record's entry (five words) took
/// 6.5 ns with the instruction, 15 ns from the tables while they were in cache.
#[derive(Clone, Copy)]
struct Crc32c(u32);

impl Crc32c {
    fn new() -> Crc32c {
        Crc32c(!0)
    }

    /// The next `words`, each eight bytes in little-endian order.
    #[inline]
    fn words(self, words: &[u64]) -> Crc32c {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("sse4.2") {
            // SAFETY: the CPU has SSE4.2 (checked just above), the one feature it needs.
            return Crc32c(unsafe { crc32c_sse42(self.0, words) });
        }
        words.iter().fold(self, |crc, word| crc.word(*word))
    }

    /// The next eight bytes, from the tables.
    #[inline]
    fn word(self, word: u64) -> Crc32c {
        let t = &CRC_TABLES;
        let lo = word as u32 ^ self.0;
        let hi = (word >> 32) as u32;
        Crc32c(
            t[7][(lo & 0xff) as usize]
                ^ t[6][((lo >> 8) & 0xff) as usize]
                ^ t[5][((lo >> 16) & 0xff) as usize]
                ^ t[4][(lo >> 24) as usize]
                ^ t[3][(hi & 0xff) as usize]
                ^ t[2][((hi >> 8) & 0xff) as usize]
                ^ t[1][((hi >> 16) & 0xff) as usize]
                ^ t[0][(hi >> 24) as usize],
        )
    }

    #[inline]
    fn byte(self, b: u8) -> Crc32c {
        Crc32c(CRC_TABLES[0][((self.0 ^ u32::from(b)) & 0xff) as usize] ^ (self.0 >> 8))
    }

    fn finish(self) -> u32 {
        !self.0
    }
}

/// [`Crc32c::words`] with the CRC32 instruction (the same polynomial, state kept inverted).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse4.2")]
fn crc32c_sse42(crc: u32, words: &[u64]) -> u32 {
    let mut crc = u64::from(crc);
    for word in words {
        crc = std::arch::x86_64::_mm_crc32_u64(crc, *word);
    }
    crc as u32
}

static CRC_TABLES: [[u32; 256]; 8] = crc_tables();

/// Slicing-by-8 tables of the reflected polynomial 0x82F63B78.
const fn crc_tables() -> [[u32; 256]; 8] {
    let mut t = [[0u32; 256]; 8];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 {
                (c >> 1) ^ 0x82f6_3b78
            } else {
                c >> 1
            };
            k += 1;
        }
        t[0][i] = c;
        i += 1;
    }
    let mut i = 0;
    while i < 256 {
        let mut s = 1;
        while s < 8 {
            let prev = t[s - 1][i];
            t[s][i] = (prev >> 8) ^ t[0][(prev & 0xff) as usize];
            s += 1;
        }
        i += 1;
    }
    t
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use proptest::prelude::*;

    use super::*;
    use crate::durability::sink::MemorySink;

    const HEADER: u64 = HEADER_LEN;
    /// A record's entry: head word, four words, checksum.
    const RECORD_ENTRY: u64 = 8 + 32 + 4;

    fn store() -> Box<dyn Sink> {
        Box::new(MemorySink::new(vec!["1m".into(), "5m".into()]))
    }

    fn config(guarantee: Guarantee, isolation: Isolation, idempotent: bool) -> DeliveryConfig {
        DeliveryConfig {
            guarantee,
            isolation,
            idempotent,
            transaction_timeout_ms: None,
        }
    }

    /// The results of processing event `i`: a count for each of two windows of one user (three
    /// users, so later events overwrite earlier ones' counts).
    fn results(i: u64) -> [Count; 2] {
        [(i % 3, 0, 10 * i as i64), (i % 3, 1, 10 * i as i64 + 1)]
    }

    fn emit(d: &mut Delivery, events: std::ops::Range<u64>) {
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

    fn last_writes(records: impl IntoIterator<Item = Count>) -> Vec<Count> {
        let mut view = BTreeMap::new();
        for (user, window, count) in records {
            view.insert((user, window), count);
        }
        view.into_iter().map(|((u, w), c)| (u, w, c)).collect()
    }

    fn view(d: &mut Delivery) -> Vec<Count> {
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
    fn a_torn_tail_is_dropped_and_the_journal_goes_on() {
        let config = config(Guarantee::AtLeastOnce, Isolation::ReadCommitted, false);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(JOURNAL_FILE);
        let mut d = Delivery::open(store(), config, dir.path(), 0).unwrap();
        emit(&mut d, 0..4);
        d.pre_commit(1, 10).unwrap();
        drop(d);
        let len = std::fs::metadata(&path).unwrap().len();
        assert_eq!(len, HEADER + 8 * RECORD_ENTRY);
        let file = OpenOptions::new().write(true).open(&path).unwrap();
        file.set_len(len - 3).unwrap();
        drop(file);

        let mut d = Delivery::open(store(), config, dir.path(), 20).unwrap();
        let c = d.counters();
        assert_eq!(c.records_emitted, 7);
        assert_eq!(c.journal_torn_bytes, RECORD_ENTRY - 3);
        assert_eq!(c.journal_bytes, HEADER + 7 * RECORD_ENTRY);
        let first_seven = last_writes((0..4).flat_map(results).take(7));
        assert_eq!(view(&mut d), first_seven);
        // Appends continue where the valid entries end.
        emit(&mut d, 4..5);
        d.flush().unwrap();
        drop(d);
        let d = Delivery::open(store(), config, dir.path(), 30).unwrap();
        assert_eq!(d.counters().records_emitted, 9);
        assert_eq!(d.counters().journal_torn_bytes, 0);
    }

    #[test]
    fn a_corrupt_entry_in_the_middle_is_an_error_naming_the_file_and_offset() {
        let config = config(Guarantee::AtLeastOnce, Isolation::ReadCommitted, false);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(JOURNAL_FILE);
        let mut d = Delivery::open(store(), config, dir.path(), 0).unwrap();
        emit(&mut d, 0..4);
        d.flush().unwrap();
        drop(d);
        let mut bytes = std::fs::read(&path).unwrap();
        let fourth = HEADER + 3 * RECORD_ENTRY;
        bytes[fourth as usize + 12] ^= 0x40;
        std::fs::write(&path, &bytes).unwrap();
        let err = Delivery::open(store(), config, dir.path(), 0)
            .err()
            .unwrap();
        assert!(
            matches!(err, DeliveryError::Corrupt { offset, .. } if offset == fourth),
            "{err}"
        );
        assert_eq!(
            err.to_string(),
            format!(
                "delivery journal '{}' is corrupt at offset {fourth}: checksum mismatch",
                path.display()
            )
        );
        // A bad head in the middle too.
        bytes[fourth as usize + 12] ^= 0x40;
        bytes[fourth as usize] = 0xff;
        std::fs::write(&path, &bytes).unwrap();
        let err = Delivery::open(store(), config, dir.path(), 0)
            .err()
            .unwrap();
        assert!(
            err.to_string()
                .ends_with(&format!("offset {fourth}: entry head 0x00000001000000ff")),
            "{err}"
        );
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

    #[test]
    fn entries_round_trip_and_the_checksum_is_crc32c() {
        assert_eq!(crc32c(b"123456789"), 0xe306_9283);
        assert_eq!(crc32c(b""), 0);
        // The instruction and the tables agree.
        let words: Vec<u64> = (0..20u64).map(|i| fmix64(i) ^ (i << 60)).collect();
        let by_table = words.iter().fold(Crc32c::new(), |crc, w| crc.word(*w));
        assert_eq!(Crc32c::new().words(&words).finish(), by_table.finish());
        let record = Record {
            id: u64::MAX,
            user: 7,
            window: 3,
            count: -5,
        };
        for entry in [
            Entry::Record(record),
            Entry::TxRecord(record),
            Entry::Open {
                txn: 1,
                opened_ms: 2,
            },
            Entry::PreCommit {
                txn: 3,
                checkpoint: 4,
            },
            Entry::Commit { txn: 5, now_ms: 6 },
            Entry::Expire { txn: 7, now_ms: 8 },
            Entry::Abort { txn: 9 },
        ] {
            let mut bytes = Vec::new();
            entry.encode(&mut bytes);
            let n = bytes.len();
            let fields = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]) as usize;
            assert_eq!(n, 8 + fields + 4);
            assert_eq!(Entry::decode(bytes[4], &bytes[8..8 + fields]), Ok(entry));
            let crc = u32::from_le_bytes([bytes[n - 4], bytes[n - 3], bytes[n - 2], bytes[n - 1]]);
            assert_eq!(crc32c(&bytes[..n - 4]), crc);
        }
        assert_ne!(record_id(1, 0), record_id(0, 1));
        assert_ne!(record_id(origin(0, 1), 0), record_id(origin(1, 0), 0));
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
