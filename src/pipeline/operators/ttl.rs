//! Flink's state TTL as it reaches RocksDB (`TtlStateFactory`, `AbstractTtlDecorator`,
//! `TtlValueState`, `TtlMapState`):
//! - a value with TTL is Flink's `TtlValue` through `TtlStateFactory.TtlSerializer`, a
//!   CompositeSerializer of (LongSerializer timestamp, user serializer): the last-access
//!   timestamp (8 bytes, big-endian), then the user value. A ValueState stores exactly that; a
//!   MapState value is written null-sensitively: `[0 = not null][timestamp][user value]`;
//! - the timestamp is processing time ("now") at the write (and, with `OnReadAndWrite`, at a
//!   read: the value is rewritten);
//! - `NeverReturnExpired`: a read of a value whose `ts + ttl <= now` returns null, after the
//!   decorator cleared it (`stateClear`: a RocksDB delete).

use crate::backend::ttl_filter::{self, TtlFilterConfig, TtlLayout};
use crate::backend::{BackendError, Cf, StateAccess};
use crate::config::job::dedup::TtlSettings;

/// How a state's values are laid out in RocksDB, with or without TTL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ValueCodec {
    pub ttl: Option<TtlSettings>,
    /// MapState values carry a null flag first (`serializeValueNullSensitive`).
    pub null_flag: bool,
}

impl ValueCodec {
    /// A ValueState's values.
    pub fn value(ttl: Option<TtlSettings>) -> ValueCodec {
        ValueCodec {
            ttl,
            null_flag: false,
        }
    }

    /// A MapState's values.
    pub fn map(ttl: Option<TtlSettings>) -> ValueCodec {
        ValueCodec {
            ttl,
            null_flag: true,
        }
    }

    /// The TTL compaction filter's configuration for this state, when cleanup in compaction
    /// is on.
    pub fn filter_config(&self) -> Option<TtlFilterConfig> {
        let ttl = self.ttl.filter(|t| t.compaction_filter)?;
        Some(TtlFilterConfig {
            ttl_ms: ttl.ttl_ms,
            query_time_after: ttl.query_time_after,
            layout: if self.null_flag {
                TtlLayout::Map
            } else {
                TtlLayout::Value
            },
        })
    }

    /// The state's TTL as its column family declares it (see [`super::CfRole::State`]).
    pub fn decl(&self) -> Option<super::TtlDecl> {
        let ttl = self.ttl?;
        Some(super::TtlDecl {
            ttl_ms: ttl.ttl_ms,
            compaction_filter: ttl.compaction_filter,
            query_time_after: ttl.query_time_after,
            layout: if self.null_flag {
                TtlLayout::Map
            } else {
                TtlLayout::Value
            },
        })
    }

    /// Clears `out` and writes the RocksDB value of user bytes `user` written at `now`.
    pub fn encode(&self, now: i64, user: &[u8], out: &mut Vec<u8>) {
        self.encode_with(now, out, |o| o.extend_from_slice(user));
    }

    /// Clears `out` and writes the RocksDB value whose user part `user` appends.
    pub fn encode_with(&self, now: i64, out: &mut Vec<u8>, user: impl FnOnce(&mut Vec<u8>)) {
        out.clear();
        if self.null_flag {
            out.push(0);
        }
        if self.ttl.is_some() {
            out.extend_from_slice(&now.to_be_bytes());
        }
        user(out);
    }

    /// Splits a RocksDB value into its timestamp (with TTL) and user bytes.
    pub fn split<'v>(&self, v: &'v [u8]) -> Result<(Option<i64>, &'v [u8]), BackendError> {
        let corrupt = || {
            BackendError::Corrupt(format!(
                "a state value of {} bytes is too short for its layout",
                v.len()
            ))
        };
        let rest = if self.null_flag {
            let (&flag, rest) = v.split_first().ok_or_else(corrupt)?;
            if flag != 0 {
                return Err(BackendError::Corrupt(
                    "a map value with a null flag".to_string(),
                ));
            }
            rest
        } else {
            v
        };
        if self.ttl.is_none() {
            return Ok((None, rest));
        }
        let (ts, user) = rest.split_first_chunk::<8>().ok_or_else(corrupt)?;
        Ok((Some(i64::from_be_bytes(*ts)), user))
    }

    /// Whether a value last accessed at `ts` has expired at `now`.
    pub fn expired(&self, ts: Option<i64>, now: i64) -> bool {
        match (self.ttl, ts) {
            (Some(t), Some(ts)) => ttl_filter::expired(ts, t.ttl_ms, now),
            _ => false,
        }
    }
}

/// What a TTL-aware read found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Read<T> {
    Absent,
    /// A value whose TTL had expired: read as null, and deleted.
    Expired,
    Live(T),
}

impl<T> Read<T> {
    pub fn live(self) -> Option<T> {
        match self {
            Read::Live(t) => Some(t),
            Read::Absent | Read::Expired => None,
        }
    }
}

/// A TTL-aware point read, as `AbstractTtlDecorator.getWithTtlCheckAndUpdate` does it over a
/// RocksDB get: absent -> None; expired -> `stateClear` (a delete of `key`) and None
/// (NeverReturnExpired); live with `OnReadAndWrite` -> the value rewritten with `now` (a put);
/// `decode` sees the user bytes of a live value. `buf` is scratch space.
#[allow(clippy::too_many_arguments)]
pub fn read<T>(
    state: &mut StateAccess,
    cf: &Cf,
    key: &[u8],
    codec: &ValueCodec,
    now: i64,
    buf: &mut Vec<u8>,
    decode: impl FnOnce(&[u8]) -> Result<T, BackendError>,
) -> Result<Read<T>, BackendError> {
    let update_on_read = codec.ttl.is_some_and(|t| t.update_on_read);
    let got = state.get(cf, key, |v| {
        let (ts, user) = codec.split(v)?;
        if codec.expired(ts, now) {
            return Ok(None);
        }
        if update_on_read {
            codec.encode(now, user, buf);
        }
        Ok(Some(decode(user)?))
    })?;
    match got {
        None => Ok(Read::Absent),
        Some(None) => {
            state.delete(cf, key)?;
            Ok(Read::Expired)
        }
        Some(Some(value)) => {
            if update_on_read {
                state.put(cf, key, buf)?;
            }
            Ok(Read::Live(value))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ttl(update_on_read: bool) -> Option<TtlSettings> {
        Some(TtlSettings {
            ttl_ms: 1_000,
            update_on_read,
            compaction_filter: true,
            query_time_after: 1000,
        })
    }

    #[test]
    fn layouts_are_flinks() {
        let mut out = vec![9; 20];
        ValueCodec::value(None).encode(5, &[1], &mut out);
        assert_eq!(out, [1]);
        ValueCodec::value(ttl(false)).encode(5, &[1], &mut out);
        assert_eq!(out, [0, 0, 0, 0, 0, 0, 0, 5, 1]);
        ValueCodec::map(ttl(false)).encode(5, &[1], &mut out);
        assert_eq!(out, [0, 0, 0, 0, 0, 0, 0, 0, 5, 1]);
        ValueCodec::map(None).encode(5, &[1], &mut out);
        assert_eq!(out, [0, 1]);
        let c = ValueCodec::map(ttl(false));
        assert_eq!(
            c.split(&[0, 0, 0, 0, 0, 0, 0, 0, 5, 1]).unwrap(),
            (Some(5), &[1u8][..])
        );
        assert!(c.split(&[0, 0, 0]).is_err());
        assert_eq!(
            c.filter_config().unwrap().layout.timestamp_offset(),
            1,
            "map values have their timestamp after the null flag"
        );
        assert_eq!(
            ValueCodec::value(ttl(false))
                .filter_config()
                .unwrap()
                .layout
                .timestamp_offset(),
            0
        );
        assert_eq!(ValueCodec::value(None).filter_config(), None);
    }
}
