//! The delivery journal: the entries that changed the tracked state, appended with a checksum
//! each, replayed on open (format in the module above).

use std::fs::{File, OpenOptions};
use std::io::{BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use super::DeliveryError;
use super::crc32c::{Crc32c, crc32c};

/// One result record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Record {
    pub(super) id: u64,
    pub(super) user: u64,
    pub(super) window: usize,
    pub(super) count: i64,
}

/// One change of the state; the journal is a list of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Entry {
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
pub(super) enum End {
    Commit { now_ms: u64 },
    Expire,
    Abort,
}

/// The journal's file in its folder.
pub const JOURNAL_FILE: &str = "delivery.journal";
pub(super) const MAGIC: &[u8; 4] = b"SBDJ";
pub(super) const VERSION: u32 = 1;
pub(super) const HEADER_LEN: u64 = 8;
/// Fields of an entry: at most four u64 words.
pub(super) const MAX_WORDS: usize = 4;
/// Head word, fields, checksum.
pub(super) const MAX_ENTRY: usize = 8 + 8 * MAX_WORDS + 4;

pub(super) const TAG_RECORD: u8 = 1;
pub(super) const TAG_TX_RECORD: u8 = 2;
pub(super) const TAG_OPEN: u8 = 3;
pub(super) const TAG_PRE_COMMIT: u8 = 4;
pub(super) const TAG_COMMIT: u8 = 5;
pub(super) const TAG_EXPIRE: u8 = 6;
pub(super) const TAG_ABORT: u8 = 7;

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
pub(super) fn head_word(field_bytes: u32, tag: u8) -> u64 {
    u64::from(field_bytes) | (u64::from(tag) << 32)
}

/// The append-only journal file.
pub(super) struct Journal {
    pub(super) path: PathBuf,
    /// None only in the placeholder a replay starts with.
    file: Option<File>,
    /// Entries not written to the file yet.
    buffer: Vec<u8>,
    /// Length of the file, buffered bytes included.
    pub(super) len: u64,
    /// Bytes appended since the last sync.
    dirty: bool,
    /// Bytes of a torn tail dropped at open.
    pub(super) torn_bytes: u64,
}

/// Journal bytes buffered before a write to the file.
pub(super) const JOURNAL_BUFFER: usize = 64 << 10;
/// Read buffer for the replay.
pub(super) const REPLAY_BUFFER: usize = 1 << 20;

impl Journal {
    /// A journal with no file: replay applies entries to a tracker before the file is ready.
    pub(super) fn placeholder(folder: &Path) -> Journal {
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
    pub(super) fn open(
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
    pub(super) fn append(&mut self, entry: &Entry) -> Result<(), DeliveryError> {
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
    pub(super) fn sync(&mut self) -> Result<bool, DeliveryError> {
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

#[cfg(test)]
mod tests {
    use crate::pipeline::output::{fmix64, origin, record_id};
    use std::fs::OpenOptions;

    use super::super::tests::{config, emit, last_writes, results, store, view};
    use super::super::{Delivery, DeliveryError, Guarantee, Isolation};
    use super::*;

    const HEADER: u64 = HEADER_LEN;
    /// A record's entry: head word, four words, checksum.
    const RECORD_ENTRY: u64 = 8 + 32 + 4;

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
}
