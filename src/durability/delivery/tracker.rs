//! The state of a tracked delivery: the open transactions, what the reader has received and the
//! store's own dedupe. It changes only by journal entries.

use std::path::Path;

use super::journal::{End, Entry, Journal, Record};
use super::{DeliveryConfig, DeliveryCounters, DeliveryError, Guarantee, Isolation};
use crate::durability::sink::{Sink, SinkError};
use crate::util::hash::{FastMap, FastSet};

/// A transaction with records.
#[derive(Debug)]
pub(super) struct Transaction {
    /// Its number, from 0 in the journal's order.
    txn: u64,
    /// When it started: the barrier (or open, or recovery) before its first record.
    opened_ms: u64,
    /// The checkpoint it was pre-committed for; None while open.
    pub(super) checkpoint: Option<u64>,
    records: Vec<Record>,
}

/// An entry that does not fit the state it is applied to, or a store that failed.
pub(super) enum ApplyError {
    Sink(SinkError),
    Inconsistent(String),
}

impl From<SinkError> for ApplyError {
    fn from(e: SinkError) -> Self {
        ApplyError::Sink(e)
    }
}

impl ApplyError {
    pub(super) fn at(self, path: &Path, offset: u64) -> DeliveryError {
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
pub(super) struct Reader {
    idempotent: bool,
    /// Ids of the records the reader received.
    seen: FastSet<u64>,
    /// Ids the idempotent store holds, when they differ from `seen` (read_uncommitted: the
    /// reader receives records the store only gets at commit, or never).
    stored: Option<FastSet<u64>>,
    /// read_uncommitted: the latest count written for every (user, window), in write order.
    pub(super) overlay: Option<FastMap<(u64, usize), i64>>,
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
pub(super) struct Transactions {
    /// The open transaction, once it has a record.
    open: Option<Transaction>,
    /// Pre-committed, in order.
    pending: Vec<Transaction>,
    /// Left open by a process that died: aborted by the next recovery.
    orphans: Vec<Transaction>,
    /// The number of the next transaction.
    next_txn: u64,
    /// When the next transaction starts: the last barrier, open or recovery.
    pub(super) open_since_ms: u64,
    /// Emptied record lists, to reuse.
    spare: Vec<Vec<Record>>,
}

/// Record lists kept for reuse.
pub(super) const SPARE_LISTS: usize = 4;

impl Transactions {
    pub(super) fn orphan_open(&mut self) {
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
pub(super) struct Tracker {
    pub(super) config: DeliveryConfig,
    pub(super) journal: Journal,
    pub(super) reader: Reader,
    pub(super) txns: Transactions,
    pub(super) counters: DeliveryCounters,
}

impl Tracker {
    pub(super) fn new(config: DeliveryConfig, journal: Journal) -> Tracker {
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
    pub(super) fn write(
        &mut self,
        inner: &mut dyn Sink,
        record: Record,
    ) -> Result<(), DeliveryError> {
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

    pub(super) fn pre_commit(
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
    pub(super) fn settle(
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

    pub(super) fn sync(&mut self) -> Result<(), DeliveryError> {
        if self.journal.sync()? {
            self.counters.journal_syncs += 1;
        }
        Ok(())
    }

    /// The one place the state changes: live (after journaling `entry`) and on replay.
    #[inline]
    pub(super) fn apply(&mut self, inner: &mut dyn Sink, entry: Entry) -> Result<(), ApplyError> {
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
