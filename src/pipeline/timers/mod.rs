//! Event-time timers persisted in RocksDB, as Flink's RocksDB timer service keeps them.
//!
//! Per key group, a `RocksDBCachingPriorityQueueSet`: an ordered in-memory cache of the
//! smallest timers (write-through to the timers column family), refilled from RocksDB by a
//! prefix scan when it runs dry. Writes go through a write batch of 500 entries that is flushed
//! before every scan, like Flink's `RocksDBWriteBatchWrapper`. A tournament tree over the key
//! groups' heads (Flink's `KeyGroupPartitionedPriorityQueue` keeps a heap) yields timers in
//! timestamp order across key groups.

use std::collections::VecDeque;

use super::PipelineError;
use crate::backend::keys::{self, CompositeKey, MAX_PARALLELISM};
use crate::backend::{Batch, Cf, StateAccess};

pub mod heap;
pub mod raw;
mod service;

pub use heap::HeapTimers;
pub use service::TimerService;

/// Flink's `state.backend.rocksdb.timer-service.cache-size` default (the profile's
/// `timer-service.cache-size` sets it).
pub const CACHE_SIZE: usize = 128;
/// Flink's `RocksDBWriteBatchWrapper` default capacity (entries).
pub const WRITE_BATCH_CAPACITY: usize = 500;

/// A timer that is due.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Timer {
    pub timestamp: i64,
    pub key: String,
    /// The timer's namespace, serialized (VoidNamespace: `[0]`; a window: its start and end).
    pub namespace: Vec<u8>,
}

/// Bytes of timer key kept inline: a generated user's key (`user-N`) needs about 23.
const INLINE_KEY_BYTES: usize = 30;

/// A cached timer's RocksDB key, inline when short, so that a key group's cache is one sorted
/// array whose comparisons read the array itself rather than a heap allocation per key.
#[derive(Clone)]
enum CachedKey {
    Inline {
        len: u8,
        bytes: [u8; INLINE_KEY_BYTES],
    },
    Heap(Box<[u8]>),
}

impl CachedKey {
    fn new(key: &[u8]) -> CachedKey {
        if key.len() <= INLINE_KEY_BYTES {
            let mut bytes = [0u8; INLINE_KEY_BYTES];
            bytes[..key.len()].copy_from_slice(key);
            CachedKey::Inline {
                len: key.len() as u8,
                bytes,
            }
        } else {
            CachedKey::Heap(key.into())
        }
    }

    fn as_bytes(&self) -> &[u8] {
        match self {
            CachedKey::Inline { len, bytes } => &bytes[..usize::from(*len)],
            CachedKey::Heap(bytes) => bytes,
        }
    }
}

// Ordered, and equal, by the key's bytes: RocksDB's order (the first 16 bytes, key group,
// timestamp and the key's start, nearly always decide: `key_order`).
impl Ord for CachedKey {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        crate::backend::memstore::key_order(self.as_bytes(), other.as_bytes())
    }
}

impl PartialOrd for CachedKey {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for CachedKey {
    fn eq(&self, other: &Self) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl Eq for CachedKey {}

impl std::fmt::Debug for CachedKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:02x?}", self.as_bytes())
    }
}

/// A key group's cached timers in ascending order, as Flink's `TreeOrderedSetCache` keeps them:
/// one sorted array searched by bisection. (A B-tree's node chasing cost more here: new timers
/// land near the end and due ones leave from the front, which a ring buffer does in place.)
#[derive(Debug, Default)]
struct SortedCache(VecDeque<CachedKey>);

impl SortedCache {
    fn len(&self) -> usize {
        self.0.len()
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn first(&self) -> Option<&CachedKey> {
        self.0.front()
    }

    fn last(&self) -> Option<&CachedKey> {
        self.0.back()
    }

    fn pop_first(&mut self) -> Option<CachedKey> {
        self.0.pop_front()
    }

    fn pop_last(&mut self) -> Option<CachedKey> {
        self.0.pop_back()
    }

    /// Adds `key` in order; false when it was already there.
    fn insert(&mut self, key: CachedKey) -> bool {
        match self.0.binary_search(&key) {
            Ok(_) => false,
            Err(at) => {
                self.0.insert(at, key);
                true
            }
        }
    }

    /// Removes `key`; false when it was not there.
    fn remove(&mut self, key: &CachedKey) -> bool {
        match self.0.binary_search(key) {
            Ok(at) => {
                self.0.remove(at);
                true
            }
            Err(_) => false,
        }
    }

    /// Adds `key`, which nearly always comes after every key here (a scan's keys arrive in
    /// order): appended then, inserted in its place otherwise.
    fn push_in_order(&mut self, key: CachedKey) {
        if self.0.back().is_none_or(|last| *last < key) {
            self.0.push_back(key);
        } else {
            self.insert(key);
        }
    }
}

#[derive(Debug)]
struct KeyGroupQueue {
    cache: SortedCache,
    /// True when the cache holds every timer of this key group that RocksDB holds.
    all_in_cache: bool,
    /// Flink's `seekHint`: the last timer polled when the cache ran dry. A refill seeks here
    /// instead of to the key-group prefix, skipping the tombstones of timers already fired.
    seek_hint: Option<Vec<u8>>,
}

const KEY_GROUPS: usize = MAX_PARALLELISM as usize;

/// The head timestamp of every key group and a tournament tree over them whose root is the key
/// group with the smallest (timestamp, key group). A head that moves replays its 8 matches up
/// one small array (a B-tree set of heads removed and inserted through its nodes, and was a
/// visible share of statebench's own CPU).
struct Heads {
    /// Per key group: its first cached timer's timestamp, if any.
    ts: [Option<i64>; KEY_GROUPS],
    /// Node `i` (1-based; leaves at `KEY_GROUPS + kg`) holds the winner of its subtree.
    winner: [u16; 2 * KEY_GROUPS],
}

impl Heads {
    fn new() -> Heads {
        let mut heads = Heads {
            ts: [None; KEY_GROUPS],
            winner: [0; 2 * KEY_GROUPS],
        };
        for kg in 0..KEY_GROUPS {
            heads.winner[KEY_GROUPS + kg] = kg as u16;
        }
        for node in (1..KEY_GROUPS).rev() {
            heads.winner[node] = heads.play(node);
        }
        heads
    }

    /// The winner of node `node`'s two children: the earlier head, the lower key group on a tie,
    /// a key group with a head before one without.
    fn play(&self, node: usize) -> u16 {
        let (a, b) = (self.winner[2 * node], self.winner[2 * node + 1]);
        match (self.ts[usize::from(a)], self.ts[usize::from(b)]) {
            (Some(x), Some(y)) if (y, b) < (x, a) => b,
            (None, Some(_)) => b,
            _ => a,
        }
    }

    fn get(&self, kg: u16) -> Option<i64> {
        self.ts[usize::from(kg)]
    }

    fn set(&mut self, kg: u16, ts: Option<i64>) {
        self.ts[usize::from(kg)] = ts;
        let mut node = (KEY_GROUPS + usize::from(kg)) / 2;
        while node >= 1 {
            self.winner[node] = self.play(node);
            node /= 2;
        }
    }

    /// The smallest (timestamp, key group) of all heads.
    fn first(&self) -> Option<(i64, u16)> {
        let kg = self.winner[1];
        self.ts[usize::from(kg)].map(|ts| (ts, kg))
    }
}

impl std::fmt::Debug for Heads {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Heads")
            .field("first", &self.first())
            .finish()
    }
}

/// ROCKSDB timers: Flink's `KeyGroupPartitionedPriorityQueue` of
/// `RocksDBCachingPriorityQueueSet`s.
pub struct RocksDbTimers<'a> {
    cf: &'a Cf,
    /// Timers cached per key group (`timer-service.cache-size`).
    cache_size: usize,
    queues: Vec<KeyGroupQueue>,
    /// The head timestamp of every non-empty key group.
    heads: Heads,
    batch: Batch,
    /// The timer key being registered (reused).
    scratch: Vec<u8>,
    /// A fired timer's user key and namespace buffers, back from `recycle`.
    spare_key: String,
    spare_namespace: Vec<u8>,
    pub registered: u64,
    pub fired: u64,
}

impl<'a> RocksDbTimers<'a> {
    /// Opens the timer service on `cf` with Flink's default cache size.
    pub fn open(cf: &'a Cf, state: &mut StateAccess) -> Result<Self, PipelineError> {
        Self::open_with_cache(cf, state, CACHE_SIZE)
    }

    /// Opens the timer service on `cf`, caching `cache_size` timers per key group, loading the
    /// head of every key group from RocksDB (timers left by an earlier run included), as
    /// Flink's queue does when it is first peeked.
    pub fn open_with_cache(
        cf: &'a Cf,
        state: &mut StateAccess,
        cache_size: usize,
    ) -> Result<Self, PipelineError> {
        let mut service = RocksDbTimers {
            cf,
            cache_size: cache_size.max(1),
            queues: (0..MAX_PARALLELISM)
                .map(|_| KeyGroupQueue {
                    cache: SortedCache::default(),
                    all_in_cache: false,
                    seek_hint: None,
                })
                .collect(),
            heads: Heads::new(),
            batch: Batch::default(),
            scratch: Vec::new(),
            spare_key: String::new(),
            spare_namespace: Vec::new(),
            registered: 0,
            fired: 0,
        };
        for kg in 0..MAX_PARALLELISM {
            service.refill(state, kg)?;
            service.sync_head(kg);
        }
        Ok(service)
    }

    fn flush_batch(&mut self, state: &mut StateAccess) -> Result<(), PipelineError> {
        if !self.batch.is_empty() {
            state.write_batch(std::mem::take(&mut self.batch))?;
        }
        Ok(())
    }

    fn batch_put(&mut self, state: &mut StateAccess, key: &[u8]) -> Result<(), PipelineError> {
        state.batch_put(&mut self.batch, self.cf, key, &[]);
        if self.batch.len() >= WRITE_BATCH_CAPACITY {
            self.flush_batch(state)?;
        }
        Ok(())
    }

    fn batch_delete(&mut self, state: &mut StateAccess, key: &[u8]) -> Result<(), PipelineError> {
        state.batch_delete(&mut self.batch, self.cf, key);
        if self.batch.len() >= WRITE_BATCH_CAPACITY {
            self.flush_batch(state)?;
        }
        Ok(())
    }

    /// `checkRefillCacheFromStore`: loads the smallest timers of a key group from RocksDB
    /// when its cache is empty but RocksDB may hold more. True when it looked.
    fn refill(&mut self, state: &mut StateAccess, kg: u16) -> Result<bool, PipelineError> {
        let q = &self.queues[usize::from(kg)];
        if q.all_in_cache || !q.cache.is_empty() {
            return Ok(false);
        }
        let prefix = keys::key_group_prefix(kg);
        let seek_to = q.seek_hint.clone().unwrap_or_else(|| prefix.clone());
        // Flink's RocksDBWriteBatchWrapper#flush writes the batch before every scan, an empty
        // one too: RocksDB sees a write (and checks its WriteBufferManager) either way.
        state.write_batch(std::mem::take(&mut self.batch))?;
        let q = &mut self.queues[usize::from(kg)];
        let mut short = None;
        let more = state.scan_prefix(self.cf, &prefix, &seek_to, self.cache_size, |key| {
            // Invariant for `keys::timer_timestamp` and friends: every cached key is long enough.
            if key.len() < keys::MIN_TIMER_KEY_LEN {
                short.get_or_insert_with(|| key.to_vec());
            } else {
                q.cache.push_in_order(CachedKey::new(key));
            }
        })?;
        if let Some(bad) = short {
            // Nothing of a corrupt scan stays cached.
            self.queues[usize::from(kg)].cache = SortedCache::default();
            return Err(PipelineError::CorruptTimer(format!(
                "timer key {bad:02x?} in key group {kg} is shorter than {} bytes",
                keys::MIN_TIMER_KEY_LEN
            )));
        }
        q.all_in_cache = !more;
        Ok(true)
    }

    /// Makes `heads` agree with the first cached timer of `kg`.
    fn sync_head(&mut self, kg: u16) {
        let q = &self.queues[usize::from(kg)];
        let new = q.cache.first().map(|k| keys::timer_timestamp(k.as_bytes()));
        if new != self.heads.get(kg) {
            self.heads.set(kg, new);
        }
    }

    /// Registers an event-time timer for the current key (a no-op if it already exists).
    pub fn register(
        &mut self,
        state: &mut StateAccess,
        key: &CompositeKey,
        timestamp: i64,
    ) -> Result<(), PipelineError> {
        let kg = key.key_group();
        self.registered += 1;
        // Whether the cache changed, and so perhaps its head.
        let mut changed = self.refill(state, kg)?;
        let mut bytes = std::mem::take(&mut self.scratch);
        key.write_timer_key(timestamp, &mut bytes);
        let q = &mut self.queues[usize::from(kg)];
        let cache_full = q.cache.len() >= self.cache_size;
        let below_last = q
            .cache
            .last()
            .is_some_and(|last| bytes.as_slice() < last.as_bytes());
        let written = if (!cache_full && q.all_in_cache) || below_last {
            if cache_full {
                // The largest cached timer now lives only in RocksDB.
                q.cache.pop_last();
                q.all_in_cache = false;
            }
            changed = true;
            if q.cache.insert(CachedKey::new(&bytes)) {
                self.batch_put(state, &bytes)
            } else {
                Ok(())
            }
        } else {
            q.all_in_cache = false;
            self.batch_put(state, &bytes)
        };
        self.scratch = bytes;
        written?;
        if changed {
            self.sync_head(kg);
        }
        Ok(())
    }

    /// The next timer at or before `watermark`, removed from the queue and from RocksDB.
    pub fn poll_due(
        &mut self,
        state: &mut StateAccess,
        watermark: i64,
    ) -> Result<Option<Timer>, PipelineError> {
        let Some((ts, kg)) = self.heads.first() else {
            return Ok(None);
        };
        if ts > watermark {
            return Ok(None);
        }
        let q = &mut self.queues[usize::from(kg)];
        let Some(bytes) = q.cache.pop_first() else {
            return Err(PipelineError::CorruptTimer(format!(
                "key group {kg} has a head but an empty cache"
            )));
        };
        let bytes = bytes.as_bytes();
        if q.cache.is_empty() {
            q.seek_hint = Some(bytes.to_vec());
        }
        self.batch_delete(state, bytes)?;
        self.refill(state, kg)?;
        self.sync_head(kg);
        self.fired += 1;
        let (user_key, ns) = keys::timer_key_and_namespace(bytes)
            .ok_or_else(|| PipelineError::CorruptTimer(format!("{bytes:02x?}")))?;
        // The buffers of a timer handed back by `recycle`: no allocation per timer.
        let mut key = std::mem::take(&mut self.spare_key);
        key.clear();
        key.push_str(&user_key);
        let mut namespace = std::mem::take(&mut self.spare_namespace);
        namespace.clear();
        namespace.extend_from_slice(ns);
        Ok(Some(Timer {
            timestamp: keys::timer_timestamp(bytes),
            key,
            namespace,
        }))
    }

    /// Takes back a fired timer, whose buffers the next one reuses.
    pub fn recycle(&mut self, timer: Timer) {
        self.spare_key = timer.key;
        self.spare_namespace = timer.namespace;
    }

    /// Writes out buffered timer changes (before a snapshot or at the end of a run).
    pub fn flush(&mut self, state: &mut StateAccess) -> Result<(), PipelineError> {
        self.flush_batch(state)
    }

    /// The earliest pending timer, if any.
    pub fn next_timestamp(&self) -> Option<i64> {
        self.heads.first().map(|(ts, _)| ts)
    }
}

/// Deleting timers, as the window operator's triggers do.
impl RocksDbTimers<'_> {
    /// Deletes the event-time timer of the current key in `namespace` at `timestamp`, as
    /// Flink's `RocksDBCachingPriorityQueueSet.remove` does: refill an empty cache first
    /// (`checkRefillCacheFromStore`); nothing when the key group then holds no timer at all;
    /// else a delete of the timer's key in the write batch, whether or not it exists, and out
    /// of the cache. True when the key group's head changed (or it became empty).
    pub fn remove(
        &mut self,
        state: &mut StateAccess,
        key: &CompositeKey,
        namespace: &[u8],
        timestamp: i64,
    ) -> Result<bool, PipelineError> {
        let kg = key.key_group();
        self.refill(state, kg)?;
        let q = &self.queues[usize::from(kg)];
        let Some(old_head) = q.cache.first().cloned() else {
            return Ok(false);
        };
        let mut bytes = std::mem::take(&mut self.scratch);
        write_timer_key_in(key, namespace, timestamp, &mut bytes);
        let written = self.batch_delete(state, &bytes);
        let q = &mut self.queues[usize::from(kg)];
        q.cache.remove(&CachedKey::new(&bytes));
        let changed = if q.cache.is_empty() {
            // Flink's seekHint: the removed timer's key.
            q.seek_hint = Some(bytes.clone());
            true
        } else {
            q.cache.first() != Some(&old_head)
        };
        self.scratch = bytes;
        written?;
        if changed {
            self.sync_head(kg);
        }
        Ok(changed)
    }
}

/// The timer key of `key`'s current key in `namespace` (not necessarily its current one).
pub(crate) fn write_timer_key_in(
    key: &CompositeKey,
    namespace: &[u8],
    timestamp: i64,
    out: &mut Vec<u8>,
) {
    key.write_timer_key(timestamp, out);
    out.truncate(out.len() - key.namespace().len());
    out.extend_from_slice(namespace);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::{CF_TIMERS, StateBackend};
    use crate::config::Profile;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    fn fire_all(timers: &[(String, i64)], watermark_steps: &[i64]) -> Vec<Timer> {
        let dir = tempfile::tempdir().unwrap();
        let profile = Profile::load("flink-default").unwrap();
        let backend = StateBackend::open(dir.path(), &profile).unwrap();
        let mut state = StateAccess::new(&backend);
        let mut service = RocksDbTimers::open(backend.cf(CF_TIMERS).unwrap(), &mut state).unwrap();
        let mut key = CompositeKey::default();
        for (user, ts) in timers {
            key.set_key(user);
            service.register(&mut state, &key, *ts).unwrap();
        }
        let mut fired = Vec::new();
        for wm in watermark_steps {
            while let Some(t) = service.poll_due(&mut state, *wm).unwrap() {
                assert!(t.timestamp <= *wm);
                fired.push(t);
            }
        }
        service.flush(&mut state).unwrap();
        fired
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]
        #[test]
        fn every_timer_fires_once_in_timestamp_order(
            timers in proptest::collection::vec((0u32..40, 0i64..5_000), 1..1_500),
            steps in proptest::collection::vec(0i64..6_000, 1..6),
        ) {
            let timers: Vec<(String, i64)> = timers.into_iter().map(|(u, t)| (format!("user-{u}"), t)).collect();
            let mut steps = steps;
            steps.sort();
            steps.push(i64::MAX);
            let fired = fire_all(&timers, &steps);
            let mut expected: Vec<(i64, String)> = timers.iter().map(|(u, t)| (*t, u.clone())).collect();
            expected.sort();
            expected.dedup();
            prop_assert_eq!(fired.len(), expected.len());
            for pair in fired.windows(2) {
                prop_assert!(pair[0].timestamp <= pair[1].timestamp);
            }
            let mut got: Vec<(i64, String)> = fired.into_iter().map(|t| (t.timestamp, t.key)).collect();
            got.sort();
            prop_assert_eq!(got, expected);
        }
    }

    proptest! {
        #[test]
        fn the_heads_tree_yields_what_an_ordered_set_would(
            moves in proptest::collection::vec((0u16..MAX_PARALLELISM, proptest::option::of(0i64..50)), 1..400),
        ) {
            let mut heads = Heads::new();
            let mut set = BTreeSet::new();
            for (kg, ts) in moves {
                if let Some(old) = heads.get(kg) {
                    set.remove(&(old, kg));
                }
                if let Some(ts) = ts {
                    set.insert((ts, kg));
                }
                heads.set(kg, ts);
                prop_assert_eq!(heads.first(), set.first().copied());
            }
        }
    }

    proptest! {
        #[test]
        fn cached_keys_order_as_their_bytes_do(
            a in proptest::collection::vec(prop_oneof![Just(0u8), Just(1), any::<u8>()], 0..40),
            b in proptest::collection::vec(prop_oneof![Just(0u8), Just(1), any::<u8>()], 0..40),
            shared in 0usize..40,
        ) {
            // Often a common start, so that the full comparison is reached too.
            let b: Vec<u8> = a.iter().take(shared).chain(b.iter()).copied().collect();
            prop_assert_eq!(CachedKey::new(&a).cmp(&CachedKey::new(&b)), a.cmp(&b));
            prop_assert_eq!(CachedKey::new(&a) == CachedKey::new(&b), a == b);
        }
    }

    #[test]
    fn remove_deletes_as_rocksdbs_caching_priority_queue_set_does() {
        let dir = tempfile::tempdir().unwrap();
        let profile = Profile::load("flink-default").unwrap();
        let backend = StateBackend::open(dir.path(), &profile).unwrap();
        let mut state = StateAccess::new(&backend);
        let cf = backend.cf(CF_TIMERS).unwrap();
        let mut service = RocksDbTimers::open(cf, &mut state).unwrap();
        let mut key = CompositeKey::default();
        let ns = keys::time_window_namespace(0, 10);
        key.set_key_ns("user-1", &ns);
        let entries = |state: &StateAccess| state.counters.batch_entries;
        // A key group with no timer: nothing to delete, nothing written.
        assert!(!service.remove(&mut state, &key, &ns, 9).unwrap());
        service.flush(&mut state).unwrap();
        assert_eq!(entries(&state), 0);
        service.register(&mut state, &key, 9).unwrap();
        service.register(&mut state, &key, 19).unwrap();
        service.flush(&mut state).unwrap();
        assert_eq!(entries(&state), 2);
        // The head goes: a delete, and the head moves.
        assert!(service.remove(&mut state, &key, &ns, 9).unwrap());
        // A timer that is not there, in a key group that has one: still a delete.
        assert!(!service.remove(&mut state, &key, &ns, 9).unwrap());
        service.flush(&mut state).unwrap();
        assert_eq!(entries(&state), 4);
        assert_eq!(service.next_timestamp(), Some(19));
        // The last one: the key group is empty and no timer fires.
        assert!(service.remove(&mut state, &key, &ns, 19).unwrap());
        assert_eq!(service.next_timestamp(), None);
        assert!(service.poll_due(&mut state, i64::MAX).unwrap().is_none());
        service.flush(&mut state).unwrap();
        assert_eq!(entries(&state), 5);
        let mut left = 0;
        state
            .for_each(cf, |_, _| {
                left += 1;
                Ok(())
            })
            .unwrap();
        assert_eq!(left, 0, "every timer deleted from RocksDB");
    }

    #[test]
    fn a_removed_timer_in_rocksdb_only_is_deleted_after_a_refill() {
        // More timers than the cache holds: the removed one lives only in RocksDB.
        let dir = tempfile::tempdir().unwrap();
        let profile = Profile::load("flink-default").unwrap();
        let backend = StateBackend::open(dir.path(), &profile).unwrap();
        let mut state = StateAccess::new(&backend);
        let cf = backend.cf(CF_TIMERS).unwrap();
        let mut service = RocksDbTimers::open(cf, &mut state).unwrap();
        let mut key = CompositeKey::default();
        key.set_key("user-1");
        let n = 2 * CACHE_SIZE as i64;
        for ts in 0..n {
            service.register(&mut state, &key, ts).unwrap();
        }
        service
            .remove(&mut state, &key, &[keys::VOID_NAMESPACE], n - 1)
            .unwrap();
        let mut fired = Vec::new();
        while let Some(t) = service.poll_due(&mut state, i64::MAX).unwrap() {
            fired.push(t.timestamp);
        }
        assert_eq!(fired, (0..n - 1).collect::<Vec<_>>());
    }

    #[test]
    fn timers_left_in_rocksdb_by_an_earlier_run_fire_after_reopening() {
        let dir = tempfile::tempdir().unwrap();
        let profile = Profile::load("flink-default").unwrap();
        let backend = StateBackend::open(dir.path(), &profile).unwrap();
        let mut state = StateAccess::new(&backend);
        let cf = backend.cf(CF_TIMERS).unwrap();
        let mut key = CompositeKey::default();
        let mut expected = Vec::new();
        {
            let mut first = RocksDbTimers::open(cf, &mut state).unwrap();
            for user in 0..300 {
                key.set_key(&format!("user-{user}"));
                for ts in [10, 500 + user as i64] {
                    first.register(&mut state, &key, ts).unwrap();
                    expected.push((ts, format!("user-{user}")));
                }
            }
            // Fire some, keep the rest in RocksDB.
            while first.poll_due(&mut state, 10).unwrap().is_some() {}
            first.flush(&mut state).unwrap();
        }
        expected.retain(|(ts, _)| *ts > 10);
        expected.sort();
        let mut second = RocksDbTimers::open(cf, &mut state).unwrap();
        let mut fired = Vec::new();
        while let Some(t) = second.poll_due(&mut state, i64::MAX).unwrap() {
            fired.push((t.timestamp, t.key));
        }
        assert_eq!(fired, expected);
    }

    #[test]
    fn more_timers_than_the_cache_holds_spill_to_rocksdb_and_come_back() {
        // One key, so one key group: 3x the cache size forces eviction and refills.
        let timers: Vec<(String, i64)> = (0..(3 * CACHE_SIZE as i64))
            .rev()
            .map(|t| ("user-1".to_string(), t))
            .collect();
        let fired = fire_all(&timers, &[i64::MAX]);
        let stamps: Vec<i64> = fired.iter().map(|t| t.timestamp).collect();
        assert_eq!(stamps, (0..(3 * CACHE_SIZE as i64)).collect::<Vec<_>>());
    }
}
