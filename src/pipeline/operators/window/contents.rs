//! The `window-contents` state, one namespace per (state) window, as Flink's RocksDB states do
//! it: `RocksDBReducingState` / `RocksDBAggregatingState` (get, then put, per element) or
//! `RocksDBListState` (a RocksDB merge per element, one get of the whole list at fire), and their
//! `mergeNamespaces`. Values are Flink's Tuple serializers' bytes (see docs/jobs.md):
//! - reduce: `Tuple3<String key, Long count, Long sum>`,
//! - aggregate: the accumulator `Tuple2<Long count, Long sum>`,
//! - process: elements `Tuple3<String key, Long eventTime, byte[] payload>`, joined by the list
//!   merge operator's `,` delimiter.

use super::assign::TimeWindow;
use crate::backend::keys::{self, CompositeKey};
use crate::backend::{BackendError, Cf, StateAccess};
use crate::config::job::window::FunctionKind;
use crate::pipeline::operators::splitmix64;

/// What a window holds, as its function reports it: elements and the sum of their value sizes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Summary {
    pub count: i64,
    pub sum: i64,
}

/// Flink's list merge operator's delimiter (`RocksDBKeyedStateBackend.MERGE_OPERATOR_NAME`,
/// "stringappendtest" with ',').
const DELIMITER: u8 = b',';

fn corrupt(what: &str) -> BackendError {
    BackendError::Corrupt(format!("window-contents: {what}"))
}

/// Bytes of the one result a window emits per fire: the reduced `Tuple3<String key, Long
/// count, Long sum>` (reduce), or a `Tuple2<Long, Long>` / `(count, sum)` record (aggregate,
/// process: the ProcessWindowFunction emits one record per fire).
pub fn result_size(function: FunctionKind, key: &str) -> u32 {
    match function {
        FunctionKind::Reduce => crate::pipeline::operators::reduced_tuple_size(key),
        FunctionKind::Aggregate | FunctionKind::Process => {
            crate::pipeline::operators::ACCUMULATOR_SIZE
        }
    }
}

/// The element's payload: `value_size` bytes, byte `i` = `(byte) splitmix64(eventTime * 31 + i)`.
pub fn write_payload(out: &mut Vec<u8>, event_time: i64, value_size: u32) {
    let seed = event_time.wrapping_mul(31);
    out.extend((0..i64::from(value_size)).map(|i| splitmix64(seed.wrapping_add(i) as u64) as u8));
}

/// `Tuple3<String, Long, byte[]>` of one element (TupleSerializer: the fields back to back;
/// `BytePrimitiveArraySerializer`: an int length, then the bytes).
pub fn encode_element(out: &mut Vec<u8>, key: &str, event_time: i64, value_size: u32) {
    out.clear();
    keys::write_string(out, key);
    out.extend_from_slice(&event_time.to_be_bytes());
    out.extend_from_slice(&(value_size as i32).to_be_bytes());
    write_payload(out, event_time, value_size);
}

/// Skips a `StringValue`-serialized string; the bytes it used.
fn skip_string(bytes: &[u8]) -> Option<usize> {
    let varint = |at: usize| -> Option<(u32, usize)> {
        let mut value = 0u32;
        for (i, b) in bytes.get(at..)?.iter().enumerate().take(5) {
            value |= u32::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Some((value, at + i + 1));
            }
        }
        None
    };
    let (len_plus_one, mut at) = varint(0)?;
    for _ in 0..len_plus_one.checked_sub(1)? {
        at = varint(at)?.1;
    }
    Some(at)
}

fn long_at(bytes: &[u8], at: usize) -> Option<i64> {
    let b: [u8; 8] = bytes.get(at..at + 8)?.try_into().ok()?;
    Some(i64::from_be_bytes(b))
}

/// `ListDelimitedSerializer.deserializeList` of the element list, summarized.
pub fn summarize_list(bytes: &[u8]) -> Result<Summary, BackendError> {
    let mut summary = Summary::default();
    let mut at = 0;
    while at < bytes.len() {
        let rest = &bytes[at..];
        let key_len = skip_string(rest).ok_or_else(|| corrupt("bad element key"))?;
        let len_at = key_len + 8;
        let len: [u8; 4] = rest
            .get(len_at..len_at + 4)
            .and_then(|b| b.try_into().ok())
            .ok_or_else(|| corrupt("short element"))?;
        let len = i32::from_be_bytes(len);
        let end = len_at + 4 + usize::try_from(len).map_err(|_| corrupt("negative length"))?;
        if end > rest.len() {
            return Err(corrupt("payload past the value's end"));
        }
        summary.count += 1;
        summary.sum += i64::from(len);
        at += end;
        // deserializeNextElement: a delimiter follows every element but the last.
        if at < bytes.len() {
            if bytes[at] != DELIMITER {
                return Err(corrupt("missing list delimiter"));
            }
            at += 1;
        }
    }
    Ok(summary)
}

/// The `window-contents` state of one window operator.
pub struct Contents<'a> {
    pub cf: &'a Cf,
    pub function: FunctionKind,
    /// `CountEvictor.of(n)`: Flink's `EvictingWindowOperator`, whose window state is a
    /// `ListState<StreamRecord<IN>>` whatever the function.
    evictor: Option<i64>,
    value: Vec<u8>,
}

impl<'a> Contents<'a> {
    pub fn new(cf: &'a Cf, function: FunctionKind, evictor: Option<i64>) -> Self {
        Contents {
            cf,
            function,
            evictor,
            value: Vec::new(),
        }
    }

    /// Whether the state is a list (merge per element, read whole at fire).
    fn is_list(&self) -> bool {
        self.evictor.is_some() || self.function == FunctionKind::Process
    }

    /// An element as the evicting operator stores it: `StreamElementSerializer` of a
    /// `StreamRecord` with a timestamp (tag 0, the timestamp, the value), the value being the
    /// function's input: reduce `(key, 1, valueSize)`, else `(key, eventTime, payload)`.
    fn encode_record(&mut self, key: &str, event_time: i64, value_size: u32) {
        self.value.clear();
        self.value.push(0);
        self.value.extend_from_slice(&event_time.to_be_bytes());
        let mut element = Vec::new();
        match self.function {
            FunctionKind::Reduce => {
                keys::write_string(&mut element, key);
                element.extend_from_slice(&1i64.to_be_bytes());
                element.extend_from_slice(&i64::from(value_size).to_be_bytes());
            }
            _ => encode_element(&mut element, key, event_time, value_size),
        }
        self.value.extend_from_slice(&element);
    }

    /// The records of an evicting window's list: each one's bytes and value size, in order.
    fn records<'v>(&self, bytes: &'v [u8]) -> Result<Vec<(&'v [u8], i64)>, BackendError> {
        let mut out = Vec::new();
        let mut at = 0;
        while at < bytes.len() {
            let rest = &bytes[at..];
            if rest.first() != Some(&0) {
                return Err(corrupt("a record without its timestamp tag"));
            }
            let value = rest.get(9..).ok_or_else(|| corrupt("short record"))?;
            let key_len = skip_string(value).ok_or_else(|| corrupt("bad record key"))?;
            let (len, size) = match self.function {
                FunctionKind::Reduce => (
                    key_len + 16,
                    long_at(value, key_len + 8).ok_or_else(|| corrupt("short record"))?,
                ),
                _ => {
                    let n: [u8; 4] = value
                        .get(key_len + 8..key_len + 12)
                        .and_then(|b| b.try_into().ok())
                        .ok_or_else(|| corrupt("short record"))?;
                    let n = i32::from_be_bytes(n);
                    let n_bytes = usize::try_from(n).map_err(|_| corrupt("negative length"))?;
                    (key_len + 12 + n_bytes, i64::from(n))
                }
            };
            let end = 9 + len;
            if end > rest.len() {
                return Err(corrupt("record past the value's end"));
            }
            out.push((&rest[..end], size));
            at += end;
            if at < bytes.len() {
                if bytes[at] != DELIMITER {
                    return Err(corrupt("missing list delimiter"));
                }
                at += 1;
            }
        }
        Ok(out)
    }

    fn encode_acc(&mut self, key: &str, acc: Summary) {
        self.value.clear();
        if self.function == FunctionKind::Reduce {
            keys::write_string(&mut self.value, key);
        }
        self.value.extend_from_slice(&acc.count.to_be_bytes());
        self.value.extend_from_slice(&acc.sum.to_be_bytes());
    }

    fn decode_acc(&self, bytes: &[u8]) -> Result<Summary, BackendError> {
        let at = match self.function {
            FunctionKind::Reduce => skip_string(bytes).ok_or_else(|| corrupt("bad key"))?,
            _ => 0,
        };
        if bytes.len() != at + 16 {
            return Err(corrupt("accumulator of the wrong length"));
        }
        Ok(Summary {
            count: long_at(bytes, at).ok_or_else(|| corrupt("short"))?,
            sum: long_at(bytes, at + 8).ok_or_else(|| corrupt("short"))?,
        })
    }

    /// `windowState.add(element)` in the namespace `composite` is set to.
    /// Reduce/aggregate (`RocksDBReducingState.add`, `RocksDBAggregatingState.add`): get, then
    /// put of the reduced value (the element itself, or a new accumulator plus it, when absent).
    /// Process (`RocksDBListState.add`): one merge of the serialized element.
    pub fn add(
        &mut self,
        state: &mut StateAccess,
        composite: &[u8],
        key: &str,
        event_time: i64,
        value_size: u32,
    ) -> Result<(), BackendError> {
        if self.evictor.is_some() {
            // EvictingWindowOperator: evictingWindowState.add(element), a RocksDBListState.
            self.encode_record(key, event_time, value_size);
            return state.merge(self.cf, composite, &self.value);
        }
        match self.function {
            FunctionKind::Reduce | FunctionKind::Aggregate => {
                let old = state.get(self.cf, composite, |v| self.decode_acc(v))?;
                let old = old.unwrap_or_default();
                let acc = Summary {
                    count: old.count + 1,
                    sum: old.sum + i64::from(value_size),
                };
                self.encode_acc(key, acc);
                state.put(self.cf, composite, &self.value)
            }
            FunctionKind::Process => {
                encode_element(&mut self.value, key, event_time, value_size);
                state.merge(self.cf, composite, &self.value)
            }
        }
    }

    /// What FIRE reads and emits: `windowState.get()`, one RocksDB get; `None` when the window
    /// holds nothing. With an evictor (`EvictingWindowOperator.emitWindowContents`): the list,
    /// `CountEvictor.evictBefore` (the first elements beyond the count go), the function over
    /// the rest, and `windowState.update(rest)`: a put of the kept list, evicted or not.
    pub fn fire(
        &mut self,
        state: &mut StateAccess,
        composite: &[u8],
    ) -> Result<Option<Summary>, BackendError> {
        let Some(max) = self.evictor else {
            return match self.function {
                FunctionKind::Process => state.get(self.cf, composite, summarize_list),
                _ => state.get(self.cf, composite, |v| self.decode_acc(v)),
            };
        };
        let Some(list) = state.get(self.cf, composite, |v| Ok(v.to_vec()))? else {
            return Ok(None);
        };
        let records = self.records(&list)?;
        let evicted = records
            .len()
            .saturating_sub(usize::try_from(max).unwrap_or(usize::MAX));
        let kept = &records[evicted..];
        let mut summary = Summary::default();
        self.value.clear();
        for (i, (bytes, size)) in kept.iter().enumerate() {
            summary.count += 1;
            summary.sum += size;
            if i > 0 {
                self.value.push(DELIMITER);
            }
            self.value.extend_from_slice(bytes);
        }
        if kept.is_empty() {
            state.delete(self.cf, composite)?;
        } else {
            state.put(self.cf, composite, &self.value)?;
        }
        Ok(Some(summary))
    }

    /// `windowState.clear()`: one delete.
    pub fn clear(&mut self, state: &mut StateAccess, composite: &[u8]) -> Result<(), BackendError> {
        state.delete(self.cf, composite)
    }

    /// `mergeNamespaces(target, sources)` for the current key of `composite` (left in the last
    /// namespace it touched). `RocksDBListState`: per source a get and, when present, a delete
    /// and a merge of its whole list into the target. `RocksDBReducingState` /
    /// `RocksDBAggregatingState`: per source a get and, when present, a delete; then, if any
    /// source held something, a get of the target and a put of everything merged.
    pub fn merge_namespaces(
        &mut self,
        state: &mut StateAccess,
        composite: &mut CompositeKey,
        key: &str,
        target: &TimeWindow,
        sources: &[TimeWindow],
    ) -> Result<(), BackendError> {
        if sources.is_empty() {
            return Ok(());
        }
        composite.set_namespace(&target.to_bytes());
        let target_key = composite.prefix().to_vec();
        let mut source_key = |w: &TimeWindow| {
            composite.set_namespace(&w.to_bytes());
            composite.prefix().to_vec()
        };
        match self.is_list() {
            true => {
                for source in sources {
                    let k = source_key(source);
                    if let Some(bytes) = state.get(self.cf, &k, |v| Ok(v.to_vec()))? {
                        state.delete(self.cf, &k)?;
                        state.merge(self.cf, &target_key, &bytes)?;
                    }
                }
            }
            false => {
                let mut merged: Option<Summary> = None;
                for source in sources {
                    let k = source_key(source);
                    if let Some(value) = state.get(self.cf, &k, |v| self.decode_acc(v))? {
                        state.delete(self.cf, &k)?;
                        merged = Some(add(merged, value));
                    }
                }
                if let Some(mut merged) = merged {
                    if let Some(old) = state.get(self.cf, &target_key, |v| self.decode_acc(v))? {
                        merged = add(Some(merged), old);
                    }
                    self.encode_acc(key, merged);
                    state.put(self.cf, &target_key, &self.value)?;
                }
            }
        }
        Ok(())
    }
}

fn add(a: Option<Summary>, b: Summary) -> Summary {
    let a = a.unwrap_or_default();
    Summary {
        count: a.count + b.count,
        sum: a.sum + b.sum,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elements_have_the_tuple_serializers_layout_and_lists_summarize() {
        let mut e = Vec::new();
        encode_element(&mut e, "u7", 5, 3);
        assert_eq!(&e[..3], &[3, b'u', b'7']);
        assert_eq!(&e[3..11], &5i64.to_be_bytes());
        assert_eq!(&e[11..15], &3i32.to_be_bytes());
        assert_eq!(e.len(), 15 + 3);
        assert_eq!(e[15], splitmix64(5 * 31) as u8);
        let mut list = e.clone();
        list.push(DELIMITER);
        encode_element(&mut e, "u7", 9, 10);
        list.extend_from_slice(&e);
        assert_eq!(
            summarize_list(&list).unwrap(),
            Summary { count: 2, sum: 13 }
        );
        assert!(summarize_list(&list[..list.len() - 1]).is_err());
        assert_eq!(summarize_list(&[]).unwrap(), Summary::default());
    }
}
