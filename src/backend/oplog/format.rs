//! The operation log's header (its version and the column families the operations name) and
//! the byte reader both the header and the operations are read with.
//!
//! Version 1 (`SBOPLOG1`, the frequency counter's only): the timerState TTL (i64 LE,
//! `i64::MIN` for none); its column families are the frequency counter's, in the order of
//! [`ALL_COLUMN_FAMILIES`](super::super::ALL_COLUMN_FAMILIES) (event-time timers before
//! processing-time ones, as statebench created them then).
//! Version 2 (`SBOPLOG2`, every operator kind): the operator's column families as the run's
//! database had them (its [`Layout`] after the timer service's choice), each with what decides
//! how RocksDB opens it: a u32 LE count, then per column family its name, its role (0 state,
//! 1 event-time timers, 2 processing-time timers) and for a state whether it merges (ListState)
//! and its TTL (a flag, then the TTL ms i64 LE, the compaction filter flag, the filter's
//! query-time-after-num-entries u64 LE and the timestamp's place: 0 value, 1 map).

use std::path::Path;

use super::super::BackendError;
use super::super::ttl_filter::TtlLayout;
use crate::model::layout::{self, CfDecl, CfRole, Layout, TtlDecl};

/// Every version starts with `SBOPLOG` and a digit.
const MAGIC_PREFIX: &[u8; 7] = b"SBOPLOG";
pub(super) const VERSION: u8 = b'2';

/// A column family's index is a byte: the default one and 255 of the operator's.
pub(super) const MAX_COLUMN_FAMILIES: usize = u8::MAX as usize;

const ROLE_STATE: u8 = 0;
const ROLE_EVENT_TIMERS: u8 = 1;
const ROLE_PROCESSING_TIMERS: u8 = 2;

/// Appends a byte string: its u32 LE length, then the bytes.
pub(super) fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    out.extend_from_slice(&(b.len() as u32).to_le_bytes());
    out.extend_from_slice(b);
}

/// The current version's header for a database with `layout`'s column families.
pub(super) fn encode_header(layout: &Layout) -> Vec<u8> {
    let mut out = MAGIC_PREFIX.to_vec();
    out.push(VERSION);
    out.extend_from_slice(&(layout.cfs.len() as u32).to_le_bytes());
    for cf in &layout.cfs {
        put_bytes(&mut out, cf.name.as_bytes());
        match cf.role {
            CfRole::State { ttl, merge } => {
                out.extend_from_slice(&[ROLE_STATE, u8::from(merge), u8::from(ttl.is_some())]);
                if let Some(t) = ttl {
                    out.extend_from_slice(&t.ttl_ms.to_le_bytes());
                    out.push(u8::from(t.compaction_filter));
                    out.extend_from_slice(&t.query_time_after.to_le_bytes());
                    out.push(match t.layout {
                        TtlLayout::Value => 0,
                        TtlLayout::Map => 1,
                    });
                }
            }
            CfRole::EventTimers => out.push(ROLE_EVENT_TIMERS),
            CfRole::ProcessingTimers => out.push(ROLE_PROCESSING_TIMERS),
        }
    }
    out
}

/// Reads a log written by [`OpRecorder`](super::OpRecorder).
pub(super) struct Reader<'a> {
    pub data: &'a [u8],
    pub at: usize,
    pub path: &'a Path,
}

impl<'a> Reader<'a> {
    pub fn corrupt(&self, what: &str) -> BackendError {
        BackendError::Corrupt(format!(
            "operation log {} at byte {}: {what}",
            self.path.display(),
            self.at
        ))
    }

    pub fn done(&self) -> bool {
        self.at >= self.data.len()
    }

    pub fn take(&mut self, n: usize) -> Result<&'a [u8], BackendError> {
        let end = self
            .at
            .checked_add(n)
            .filter(|e| *e <= self.data.len())
            .ok_or_else(|| self.corrupt("truncated"))?;
        let out = &self.data[self.at..end];
        self.at = end;
        Ok(out)
    }

    pub fn byte(&mut self) -> Result<u8, BackendError> {
        Ok(self.take(1)?[0])
    }

    fn flag(&mut self) -> Result<bool, BackendError> {
        match self.byte()? {
            0 => Ok(false),
            1 => Ok(true),
            b => Err(self.corrupt(&format!("a flag of {b} (valid: 0, 1)"))),
        }
    }

    pub fn bytes(&mut self) -> Result<&'a [u8], BackendError> {
        let len = self.u32()?;
        self.take(len as usize)
    }

    fn u32(&mut self) -> Result<u32, BackendError> {
        let mut v = [0u8; 4];
        v.copy_from_slice(self.take(4)?);
        Ok(u32::from_le_bytes(v))
    }

    pub fn u64(&mut self) -> Result<u64, BackendError> {
        let mut v = [0u8; 8];
        v.copy_from_slice(self.take(8)?);
        Ok(u64::from_le_bytes(v))
    }

    pub fn i64(&mut self) -> Result<i64, BackendError> {
        Ok(self.u64()? as i64)
    }

    /// A field that was written as a byte string of `N` bytes (the mark, the time, a limit).
    pub fn fixed<const N: usize>(&mut self, what: &str) -> Result<[u8; N], BackendError> {
        let field = self.bytes()?;
        field
            .try_into()
            .map_err(|_| self.corrupt(&format!("{what} of {} bytes (expected {N})", field.len())))
    }

    /// The header: the column families the log's operations name, in creation order (after
    /// RocksDB's default one, index 0).
    pub fn header(&mut self) -> Result<Layout, BackendError> {
        let magic = self
            .take(MAGIC_PREFIX.len() + 1)
            .map_err(|_| self.not_a_log())?;
        if &magic[..MAGIC_PREFIX.len()] != MAGIC_PREFIX {
            return Err(self.not_a_log());
        }
        match magic[MAGIC_PREFIX.len()] {
            b'1' => {
                // The frequency counter's column families, its timerState TTL in the header.
                let ttl = self.i64()?;
                let mut layout = layout::frequency((ttl != i64::MIN).then(|| ttl.max(0)));
                // Version 1 numbered the column families (in its operations and in RocksDB's
                // serialized batches) in the order the counter created them then.
                layout.cfs.sort_by_key(|c| {
                    super::super::ALL_COLUMN_FAMILIES
                        .iter()
                        .position(|n| *n == c.name)
                });
                Ok(layout)
            }
            b'2' => self.layout(),
            v => Err(BackendError::Corrupt(format!(
                "operation log {}: format version '{}', this statebench reads versions 1 and 2 \
                 (record it again with this build's `run --record-ops`)",
                self.path.display(),
                char::from(v).escape_default()
            ))),
        }
    }

    fn not_a_log(&self) -> BackendError {
        BackendError::Corrupt(format!(
            "operation log {}: not a statebench operation log (no SBOPLOG header)",
            self.path.display()
        ))
    }

    fn layout(&mut self) -> Result<Layout, BackendError> {
        let count = self.u32()? as usize;
        if count > MAX_COLUMN_FAMILIES {
            return Err(self.corrupt(&format!(
                "{count} column families (at most {MAX_COLUMN_FAMILIES})"
            )));
        }
        let mut layout = Layout::default();
        for _ in 0..count {
            let name = std::str::from_utf8(self.bytes()?)
                .map_err(|_| self.corrupt("a column family name that is not UTF-8"))?
                .to_string();
            let role = match self.byte()? {
                ROLE_STATE => {
                    let merge = self.flag()?;
                    let ttl = if self.flag()? {
                        Some(TtlDecl {
                            ttl_ms: self.i64()?,
                            compaction_filter: self.flag()?,
                            query_time_after: self.u64()?,
                            layout: match self.byte()? {
                                0 => TtlLayout::Value,
                                1 => TtlLayout::Map,
                                b => {
                                    return Err(self.corrupt(&format!(
                                        "a TTL timestamp place of {b} (valid: 0 value, 1 map)"
                                    )));
                                }
                            },
                        })
                    } else {
                        None
                    };
                    CfRole::State { ttl, merge }
                }
                ROLE_EVENT_TIMERS => CfRole::EventTimers,
                ROLE_PROCESSING_TIMERS => CfRole::ProcessingTimers,
                b => {
                    return Err(self.corrupt(&format!(
                        "column family '{name}' has role {b} (valid: 0 state, 1 event-time \
                         timers, 2 processing-time timers)"
                    )));
                }
            };
            layout.cfs.push(CfDecl { name, role });
        }
        Ok(layout)
    }
}
