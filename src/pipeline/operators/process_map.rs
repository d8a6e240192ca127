//! `kind: process`'s map-state iteration and clear, as Flink's RocksDBMapState does them.

use super::process::{
    ActionPlan, Bufs, MAP_ITERATOR_BATCH, WRITE_BATCH_CAPACITY, read_bytes, term,
};
use super::ttl::ValueCodec;
use crate::backend::keys::CompositeKey;
use crate::backend::{BackendError, Batch, Cf, StateAccess};

/// `RocksDBMapState.RocksDBMapIterator`: entries loaded in batches of up to 128 from a seek.
struct MapIter {
    cache: Vec<(Vec<u8>, Vec<u8>)>,
    index: usize,
    /// No entries of the key are left past the cache.
    expired: bool,
    /// The last entry returned and whether it was removed since.
    current: Option<(Vec<u8>, bool)>,
}

impl MapIter {
    fn new() -> MapIter {
        MapIter {
            cache: Vec::new(),
            index: 0,
            expired: false,
            current: None,
        }
    }

    /// `loadCache`: nothing while cached entries are left or the key's entries ended;
    /// otherwise a seek to the key's prefix (or to the last entry returned, stepping over it
    /// when it was not removed) and up to 128 entries.
    fn load(
        &mut self,
        state: &mut StateAccess,
        cf: &Cf,
        prefix: &[u8],
    ) -> Result<(), BackendError> {
        if self.index < self.cache.len() || self.expired {
            return Ok(());
        }
        self.cache.clear();
        self.index = 0;
        let (from, skip) = match &self.current {
            None => (prefix.to_vec(), None),
            Some((k, deleted)) => (k.clone(), (!deleted).then(|| k.clone())),
        };
        let limit = MAP_ITERATOR_BATCH + usize::from(skip.is_some());
        let cache = &mut self.cache;
        let mut first = true;
        let more = state.iterate_prefix(cf, prefix, &from, limit, |k, v| {
            let skipped = first && skip.as_deref() == Some(k);
            first = false;
            if !skipped {
                cache.push((k.to_vec(), v.to_vec()));
            }
            Ok(())
        })?;
        self.expired = !more;
        Ok(())
    }

    fn has_next(
        &mut self,
        state: &mut StateAccess,
        cf: &Cf,
        prefix: &[u8],
    ) -> Result<bool, BackendError> {
        self.load(state, cf, prefix)?;
        Ok(self.index < self.cache.len())
    }

    /// The next entry (after `has_next` said there is one).
    fn next(&mut self) -> (Vec<u8>, Vec<u8>) {
        let entry = std::mem::take(&mut self.cache[self.index]);
        self.index += 1;
        self.current = Some((entry.0.clone(), false));
        entry
    }
}

/// `iterate`: `for (i = 0; i < N && it.hasNext(); i++) it.next()` over `map.entries()`, with
/// TtlMapState's iterator when the state has a TTL (expired entries removed and skipped, live
/// ones rewritten with OnReadAndWrite).
pub(super) fn iterate(
    a: &ActionPlan,
    codec: &ValueCodec,
    cf: &Cf,
    key: &mut CompositeKey,
    bufs: &mut Bufs,
    state: &mut StateAccess,
    now: i64,
) -> Result<i64, BackendError> {
    let prefix = key.prefix().to_vec();
    let mut it = MapIter::new();
    let mut digest = 0i64;
    let mut read = 0u32;
    let update_on_read = codec.ttl.is_some_and(|t| t.update_on_read);
    while read < a.entries {
        // TtlMapState.EntriesIterator.hasNext: pull entries until a live one.
        let mut live = None;
        while live.is_none() && it.has_next(state, cf, &prefix)? {
            let (k, v) = it.next();
            let (ts, user) = codec.split(&v)?;
            if codec.expired(ts, now) {
                // originalIterator.remove(): RocksDBMapEntry.remove, a delete.
                state.delete(cf, &k)?;
                if let Some(c) = it.current.as_mut() {
                    c.1 = true;
                }
                continue;
            }
            let entry = read_bytes(user)?;
            if update_on_read {
                codec.encode(now, user, &mut bufs.value);
                state.put(cf, &k, &bufs.value)?;
            }
            live = Some((k, entry));
        }
        let Some((k, entry)) = live else { break };
        let uk = k
            .get(k.len().saturating_sub(8)..)
            .and_then(|b| <[u8; 8]>::try_from(b).ok())
            .map(i64::from_be_bytes)
            .ok_or_else(|| BackendError::Corrupt("a map key without its user key".to_string()))?;
        digest = digest.wrapping_add(term::map_entry(a.id, uk as u64, Some(entry)));
        read += 1;
    }
    Ok(digest.wrapping_add(term::iterated(a.id, read)))
}

/// `RocksDBMapState.clear()`: a seek to the key's prefix, a next per entry, and their deletes
/// through a RocksDBWriteBatchWrapper (written every 500 entries and at the end if non-empty).
pub(super) fn clear_map(
    cf: &Cf,
    prefix: &[u8],
    state: &mut StateAccess,
) -> Result<(), BackendError> {
    let mut keys = Vec::new();
    state.iterate_prefix(cf, prefix, prefix, usize::MAX, |k, _| {
        keys.push(k.to_vec());
        Ok(())
    })?;
    for chunk in keys.chunks(WRITE_BATCH_CAPACITY) {
        let mut batch = Batch::default();
        for k in chunk {
            batch.delete_cf(cf, k);
        }
        state.write_batch(batch)?;
    }
    Ok(())
}
