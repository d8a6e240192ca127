//! The state of a preload's warm-up (`run --preload`): every column family's keys and values in
//! key order in memory, with RocksDB's semantics for what the operators do (a merge joins with
//! Flink's list merge operator at once, as a compaction would), so the result can be written
//! out sorted as SST files.

use std::collections::BTreeMap;
use std::collections::btree_map::Entry;
use std::ops::Bound;

use std::hash::Hasher;

use hashbrown::HashTable;

use crate::util::hash::{FastHasher, FastMap};

/// RocksDB's bytewise order of two keys. The first 16 bytes of each, read as one big-endian
/// number (zeros past a shorter key's end), settle most comparisons without a call to `memcmp`:
/// where they differ, at the first byte they differ both keys hold bytes (ordered as bytewise)
/// or the shorter key's padding 0 meets a byte of the longer one, which the shorter is then a
/// prefix of, and so comes first; where they are equal the whole keys decide.
#[inline]
pub fn key_order(a: &[u8], b: &[u8]) -> std::cmp::Ordering {
    head(a).cmp(&head(b)).then_with(|| a.cmp(b))
}

/// A key's first 16 bytes as one big-endian number, zeros past its end ([`key_order`]).
#[inline(always)]
fn head(k: &[u8]) -> u128 {
    chunk(k, 0)
}

/// Bytes `at..at + 16` of `k` as one big-endian number, zeros past its end.
#[inline(always)]
fn chunk(k: &[u8], at: usize) -> u128 {
    let rest = k.get(at..).unwrap_or_default();
    match rest.first_chunk::<16>() {
        Some(bytes) => u128::from_be_bytes(*bytes),
        None => {
            let mut bytes = [0u8; 16];
            bytes[..rest.len()].copy_from_slice(rest);
            u128::from_be_bytes(bytes)
        }
    }
}

/// Bytes at a key's start that [`sort_by_key`] always compares: a Flink key's key group, which
/// the keys of a batch differ in.
const KEEP: usize = crate::backend::keys::KEY_GROUP_PREFIX_BYTES;

/// Sorts `items` by their keys in bytewise order, 16 bytes at a time: by each key's first 16
/// bytes (and whether it ends within them), then each run of keys equal so far by their next
/// 16, and so on. The sort compares numbers held beside each item's index rather than following
/// a pointer to each key per comparison: millions of keys scattered over the heap, with long
/// common prefixes (a key group, a serialized key zero-padded to 36 bytes), made `memcmp` and
/// its cache misses most of a preload's sort.
///
/// Bytes every key has alike after its first [`KEEP`] (a serialized key's length, `user-`
/// and its zero padding) are skipped: they order no two keys, and without them the bytes that
/// do usually fit the first 16, where a 36-byte id's digits took three rounds of 16, each a
/// walk over the keys in an order that is not theirs in memory (a cache miss per key).
fn sort_by_key<T>(items: &mut Vec<T>, key: impl Fn(&T) -> &[u8]) {
    // (16 bytes of the key from `at`, how many bytes it has from `at` (17: more than 16), index)
    type Order = (u128, u8, u32);
    /// Bytes `at..at + 16` of `k` without the `skip` bytes after its first [`KEEP`].
    #[inline(always)]
    fn view(k: &[u8], at: usize, skip: usize) -> (u128, u8) {
        let len = k.len() - skip;
        let rest = len.saturating_sub(at).min(17) as u8;
        if at >= KEEP {
            return (chunk(k, at + skip), rest);
        }
        if skip == 0 {
            return (chunk(k, at), rest);
        }
        // `at` < KEEP (0): the kept bytes, then the key's from past the skipped ones. Every key
        // is at least KEEP + skip bytes long: `common_run` counts only bytes each key holds.
        let mut bytes = [0u8; 16];
        let kept = &k[at..KEEP];
        bytes[..kept.len()].copy_from_slice(kept);
        let tail = &k[KEEP + skip..];
        let n = tail.len().min(16 - kept.len());
        bytes[kept.len()..kept.len() + n].copy_from_slice(&tail[..n]);
        (u128::from_be_bytes(bytes), rest)
    }
    fn sort_run<T>(
        items: &[T],
        key: &impl Fn(&T) -> &[u8],
        run: &mut [Order],
        at: usize,
        skip: usize,
    ) {
        for o in run.iter_mut() {
            let (c, n) = view(key(&items[o.2 as usize]), at, skip);
            *o = (c, n, o.2);
        }
        run.sort_unstable_by_key(|o| (o.0, o.1));
        // Keys alike in these 16 bytes and longer than them: ordered by the next 16.
        let mut start = 0;
        while start < run.len() {
            let (c, n) = (run[start].0, run[start].1);
            let end = start + run[start..].partition_point(|o| o.0 == c && o.1 == n);
            if end - start > 1 && n == 17 {
                sort_run(items, key, &mut run[start..end], at + 16, skip);
            }
            start = end;
        }
    }
    let skip = common_run(items, &key);
    let mut order: Vec<Order> = (0..items.len() as u32).map(|i| (0, 0, i)).collect();
    sort_run(items, &key, &mut order, 0, skip);
    let mut slots: Vec<Option<T>> = items.drain(..).map(Some).collect();
    // Each index is in `order` once: every slot is taken once. The slots are taken in an order
    // that is not theirs: each fetched a few ahead.
    for (i, o) in order.iter().enumerate() {
        if let Some(ahead) = order.get(i + 16) {
            crate::util::prefetch::prefetch(slots.as_ptr().wrapping_add(ahead.2 as usize));
        }
        if let Some(item) = slots[o.2 as usize].take() {
            items.push(item);
        }
    }
}

/// How many bytes after the first [`KEEP`] every key of `items` has alike (0 when a key is
/// shorter than [`KEEP`]): read in the items' own order, which is their order in memory.
fn common_run<T>(items: &[T], key: &impl Fn(&T) -> &[u8]) -> usize {
    let Some(first) = items.first().map(key) else {
        return 0;
    };
    let Some(first) = first.get(KEEP..) else {
        return 0;
    };
    let mut skip = first.len();
    for item in items {
        let Some(k) = key(item).get(KEEP..) else {
            return 0;
        };
        if !k.starts_with(&first[..skip]) {
            skip = k.iter().zip(first).take_while(|(a, b)| a == b).count();
            if skip == 0 {
                return 0;
            }
        }
    }
    skip
}

/// One column family's entries, in RocksDB's bytewise key order.
pub type Entries = Vec<(Box<[u8]>, Box<[u8]>)>;

/// One column family: hashed while only point operations reach it (most states: a B-tree's
/// byte-wise compares of keys with long common prefixes cost several times a hash lookup),
/// ordered from the first scan on (timer queues, map iteration).
#[derive(Debug)]
enum Cf {
    Hashed(Arena),
    Ordered(BTreeMap<OwnedKey, Box<[u8]>>),
}

/// A hashed column family: its entries as records appended to one buffer, and a hash table of
/// where each live record starts, beside its key's hash. Two boxes per entry made freeing a
/// batch's state millions of `free`s (glibc's consolidation of them was a sixth of a preload's
/// CPU), and each lookup followed a pointer to its key; here a state is two allocations, a
/// lookup compares stored hashes before it reads a key, and the table grows without hashing a
/// key again.
///
/// A record is its key's length (`u32`, little-endian; [`DEAD`] set once the record is dead),
/// its value's length (`u32`), the key, the value. A value put over one of the same length is
/// written in place; one of another length is appended anew (in place if its record is the
/// last) and the old record marked dead; a delete marks its record dead (or drops it if it is
/// the last). Dead records' bytes are counted, and once they outweigh the live ones (and
/// [`COMPACT_AFTER`]) the live records are copied to a new buffer: the buffer holds at most
/// twice its live records' bytes plus [`COMPACT_AFTER`], and each byte is copied O(1) times
/// on average.
#[derive(Debug, Default)]
struct Arena {
    records: Vec<u8>,
    table: HashTable<Slot>,
    /// Bytes of dead records in `records`.
    dead: usize,
}

/// Where a live record starts in [`Arena::records`], and its key's hash.
#[derive(Debug, Clone, Copy)]
struct Slot {
    at: usize,
    hash: u64,
}

/// A record's two lengths.
const HEADER: usize = 8;

/// The bit of a record's key length that marks it dead.
const DEAD: u32 = 1 << 31;

/// Dead bytes an arena keeps without compacting, however few its live ones.
const COMPACT_AFTER: usize = 1 << 20;

/// The hash of a key in an [`Arena`].
#[inline]
fn hash(key: &[u8]) -> u64 {
    let mut h = FastHasher::default();
    h.write(key);
    h.finish()
}

/// The record at `at`: whether it is dead, its key's and its value's lengths.
#[inline(always)]
fn header(records: &[u8], at: usize) -> (bool, usize, usize) {
    let h = &records[at..at + HEADER];
    let key = u32::from_le_bytes([h[0], h[1], h[2], h[3]]);
    let value = u32::from_le_bytes([h[4], h[5], h[6], h[7]]);
    (key & DEAD != 0, (key & !DEAD) as usize, value as usize)
}

/// The key and the value of the record at `at`.
#[inline(always)]
fn record(records: &[u8], at: usize) -> (&[u8], &[u8]) {
    let (_, k, v) = header(records, at);
    let key = at + HEADER;
    (&records[key..key + k], &records[key + k..key + k + v])
}

/// Appends a record of `key` and `value` to `records`: where it starts.
fn append(records: &mut Vec<u8>, key: &[u8], value: &[u8]) -> usize {
    // RocksDB takes no key or value of 4 GiB or more (a write batch's lengths are 32-bit
    // varints), and a Flink state's keys are a key group, a serialized key and a namespace:
    // tens of bytes, far from the 2 GiB whose bit marks a dead record.
    assert!(
        key.len() < DEAD as usize && value.len() <= u32::MAX as usize,
        "a key of {} bytes or a value of {} bytes: more than a RocksDB state holds",
        key.len(),
        value.len()
    );
    let at = records.len();
    records.reserve(HEADER + key.len() + value.len());
    records.extend_from_slice(&(key.len() as u32).to_le_bytes());
    records.extend_from_slice(&(value.len() as u32).to_le_bytes());
    records.extend_from_slice(key);
    records.extend_from_slice(value);
    at
}

impl Arena {
    fn len(&self) -> usize {
        self.table.len()
    }

    fn get(&self, key: &[u8]) -> Option<&[u8]> {
        let hash = hash(key);
        let records = &self.records;
        self.table
            .find(hash, |s| s.hash == hash && record(records, s.at).0 == key)
            .map(|s| record(records, s.at).1)
    }

    /// Sets `key`'s value: the length of the value it had, if it had one.
    fn put(&mut self, key: &[u8], value: &[u8]) -> Option<usize> {
        let hash = hash(key);
        let records = &mut self.records;
        let Some(slot) = self
            .table
            .find_mut(hash, |s| s.hash == hash && record(records, s.at).0 == key)
        else {
            let at = append(records, key, value);
            self.table
                .insert_unique(hash, Slot { at, hash }, |s| s.hash);
            return None;
        };
        let (_, k, old) = header(records, slot.at);
        let end = slot.at + HEADER + k + old;
        if old == value.len() {
            records[end - old..end].copy_from_slice(value);
        } else if end == records.len() {
            // The last record: rewritten where it is.
            records.truncate(slot.at);
            slot.at = append(records, key, value);
        } else {
            records[slot.at + 3] |= (DEAD >> 24) as u8;
            self.dead += end - slot.at;
            slot.at = append(records, key, value);
            self.compact_if_wasteful();
        }
        Some(old)
    }

    /// Removes `key`: the length of the value it had, if it had one.
    fn remove(&mut self, key: &[u8]) -> Option<usize> {
        let hash = hash(key);
        let records = &self.records;
        let (slot, _) = self
            .table
            .find_entry(hash, |s| s.hash == hash && record(records, s.at).0 == key)
            .ok()?
            .remove();
        let (_, k, v) = header(&self.records, slot.at);
        let end = slot.at + HEADER + k + v;
        if end == self.records.len() {
            self.records.truncate(slot.at);
        } else {
            self.records[slot.at + 3] |= (DEAD >> 24) as u8;
            self.dead += end - slot.at;
            self.compact_if_wasteful();
        }
        Some(v)
    }

    /// Copies the live records to a new buffer once the dead ones outweigh them.
    fn compact_if_wasteful(&mut self) {
        let live = self.records.len() - self.dead;
        if self.dead <= live || self.dead <= COMPACT_AFTER {
            return;
        }
        let mut records = Vec::with_capacity(live);
        for slot in self.table.iter_mut() {
            let (_, k, v) = header(&self.records, slot.at);
            let at = records.len();
            records.extend_from_slice(&self.records[slot.at..slot.at + HEADER + k + v]);
            slot.at = at;
        }
        self.records = records;
        self.dead = 0;
    }

    /// The live entries in the order they were written.
    fn iter(&self) -> impl Iterator<Item = (&[u8], &[u8])> + '_ {
        let records = &self.records[..];
        let mut at = 0;
        std::iter::from_fn(move || {
            while at < records.len() {
                let (dead, k, v) = header(records, at);
                let this = at;
                at += HEADER + k + v;
                if !dead {
                    return Some(record(records, this));
                }
            }
            None
        })
    }

    /// The live entries `keep` keeps, in key order (picked in the records' order in
    /// memory, before the sort, where each value would be a cache miss after it).
    fn sorted(&self, keep: &dyn Fn(&[u8], &[u8]) -> bool) -> Vec<(&[u8], &[u8])> {
        let mut refs = Vec::with_capacity(self.len());
        refs.extend(self.iter().filter(|(k, v)| keep(k, v)));
        sort_by_key(&mut refs, |e| e.0);
        refs
    }
}

/// A key of an ordered column family: ordered by [`key_order`] (bytewise), so that a B-tree's
/// many comparisons of keys with long common prefixes (a timer queue's key group and
/// timestamp) are mostly one comparison of two numbers. Held in the B-tree's node up to
/// [`INLINE`] bytes (a timer's key group, timestamp, key and namespace), on the heap beyond:
/// a boxed key per timer was an allocation for each registration and a `free` for each when
/// a preload's batch is dropped (`ads-days` at 16 M users: the tree's drop was 8 % of the
/// build's CPU, its inserts another 8 %).
#[derive(Debug)]
enum OwnedKey {
    Inline { len: u8, bytes: [u8; INLINE] },
    Heap(Box<[u8]>),
}

/// Bytes of a key an [`OwnedKey`] holds inline: 48 bytes with its tag and length, what a boxed
/// key of up to 24 bytes took before (the box's 16 bytes and the allocator's 32).
const INLINE: usize = 46;
const _: () = assert!(std::mem::size_of::<OwnedKey>() == 48);

impl OwnedKey {
    fn new(key: &[u8]) -> OwnedKey {
        if key.len() <= INLINE {
            let mut bytes = [0; INLINE];
            bytes[..key.len()].copy_from_slice(key);
            OwnedKey::Inline {
                len: key.len() as u8,
                bytes,
            }
        } else {
            OwnedKey::Heap(key.into())
        }
    }

    #[inline]
    fn as_bytes(&self) -> &[u8] {
        match self {
            OwnedKey::Inline { len, bytes } => &bytes[..usize::from(*len)],
            OwnedKey::Heap(b) => b,
        }
    }

    fn into_boxed(self) -> Box<[u8]> {
        match self {
            OwnedKey::Heap(b) => b,
            inline => inline.as_bytes().into(),
        }
    }
}

impl PartialEq for OwnedKey {
    fn eq(&self, other: &Self) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl Eq for OwnedKey {}

/// What an [`OwnedKey`] is looked up by, without copying the key.
#[derive(Debug, PartialEq, Eq)]
#[repr(transparent)]
struct Key([u8]);

impl Key {
    fn new(key: &[u8]) -> &Key {
        // SAFETY: `Key` is `repr(transparent)` over `[u8]`: the same layout and pointer
        // metadata, so the cast keeps the slice's address, length and lifetime.
        unsafe { &*(key as *const [u8] as *const Key) }
    }
}

impl Ord for Key {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        key_order(&self.0, &other.0)
    }
}

impl PartialOrd for Key {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for OwnedKey {
    #[inline]
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        key_order(self.as_bytes(), other.as_bytes())
    }
}

impl PartialOrd for OwnedKey {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl std::borrow::Borrow<Key> for OwnedKey {
    fn borrow(&self) -> &Key {
        Key::new(self.as_bytes())
    }
}

impl Default for Cf {
    fn default() -> Self {
        Cf::Hashed(Arena::default())
    }
}

impl Cf {
    fn len(&self) -> usize {
        match self {
            Cf::Hashed(a) => a.len(),
            Cf::Ordered(m) => m.len(),
        }
    }

    fn get(&self, key: &[u8]) -> Option<&[u8]> {
        match self {
            Cf::Hashed(a) => a.get(key),
            Cf::Ordered(m) => m.get(Key::new(key)).map(|v| &**v),
        }
    }

    /// Sets `key`'s value: the length of the value it had, if it had one.
    fn put(&mut self, key: &[u8], value: &[u8]) -> Option<usize> {
        match self {
            Cf::Hashed(a) => a.put(key, value),
            // One search of the tree, not a lookup and then an insert (a timer's key is new).
            Cf::Ordered(m) => match m.entry(OwnedKey::new(key)) {
                Entry::Occupied(mut old) => Some(old.insert(value.into()).len()),
                Entry::Vacant(slot) => {
                    slot.insert(value.into());
                    None
                }
            },
        }
    }

    /// Removes `key`: the length of the value it had, if it had one.
    fn remove(&mut self, key: &[u8]) -> Option<usize> {
        match self {
            Cf::Hashed(a) => a.remove(key),
            Cf::Ordered(m) => m.remove(Key::new(key)).map(|v| v.len()),
        }
    }

    /// The entries in an ordered map from now on.
    fn ordered(&mut self) -> &BTreeMap<OwnedKey, Box<[u8]>> {
        if let Cf::Hashed(a) = self {
            let map = a
                .iter()
                .map(|(k, v)| (OwnedKey::new(k), v.into()))
                .collect();
            *self = Cf::Ordered(map);
        }
        match self {
            Cf::Ordered(m) => m,
            // Just made ordered above.
            Cf::Hashed(_) => unreachable!("a column family made ordered is ordered"),
        }
    }

    /// Every entry `keep` keeps, in key order, without taking them.
    fn sorted(&self, keep: &dyn Fn(&[u8], &[u8]) -> bool) -> Vec<(&[u8], &[u8])> {
        match self {
            Cf::Hashed(a) => a.sorted(keep),
            Cf::Ordered(m) => m
                .iter()
                .map(|(k, v)| (k.as_bytes(), &**v))
                .filter(|(k, v)| keep(k, v))
                .collect(),
        }
    }

    /// Every entry in key order.
    fn into_sorted(self) -> Entries {
        match self {
            Cf::Hashed(a) => a
                .sorted(&|_, _| true)
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
            Cf::Ordered(m) => m.into_iter().map(|(k, v)| (k.into_boxed(), v)).collect(),
        }
    }
}

/// Every column family's entries, by the column family's index in
/// `StateBackend::column_families`.
#[derive(Debug, Default)]
pub struct MemStore {
    cfs: Vec<Cf>,
    /// Bytes of the keys and values held (what the SST files will hold, before encoding).
    bytes: u64,
    /// The keys changed since tracking started or the changes were last taken.
    changes: Option<Changes>,
}

/// Stretches of the history a change is noted in ([`MemStore::set_epoch`]).
pub const EPOCHS: usize = 256;

/// What [`MemStore`] notes of a changed key.
#[derive(Debug, Clone, Copy, Default)]
pub struct Changed {
    /// The key held a value when the changes began.
    pub existed: bool,
    /// The epochs (bits, of [`EPOCHS`]) it changed in.
    pub epochs: [u64; EPOCHS / 64],
}

impl Changed {
    /// The latest epoch before `before` it changed in.
    pub fn last_before(&self, before: usize) -> Option<usize> {
        let before = before.min(EPOCHS);
        (0..before.div_ceil(64)).rev().find_map(|word| {
            // The word's bits below `before`.
            let below = before - word * 64;
            let mask = if below >= 64 {
                u64::MAX
            } else {
                (1u64 << below) - 1
            };
            let bits = self.epochs[word] & mask;
            (bits != 0).then(|| word * 64 + 63 - bits.leading_zeros() as usize)
        })
    }
}

/// One column family's changed entries in key order: the value now, or None where the key
/// was deleted.
pub type ChangedEntries = Vec<(Box<[u8]>, Option<Box<[u8]>>)>;

#[derive(Debug, Default)]
struct Changes {
    /// Per column family, the keys changed; None: its changes are not noted.
    cfs: Vec<Option<FastMap<Box<[u8]>, Changed>>>,
    epoch: usize,
}

impl Changes {
    fn note(&mut self, cf: usize, key: &[u8], existed: bool) {
        let Some(Some(map)) = self.cfs.get_mut(cf) else {
            return;
        };
        let (word, bit) = (self.epoch / 64, 1u64 << (self.epoch % 64));
        match map.get_mut(key) {
            Some(c) => c.epochs[word] |= bit,
            None => {
                let mut c = Changed {
                    existed,
                    ..Changed::default()
                };
                c.epochs[word] |= bit;
                map.insert(key.into(), c);
            }
        }
    }
}

impl MemStore {
    pub fn new(column_families: usize) -> MemStore {
        MemStore {
            cfs: (0..column_families).map(|_| Cf::default()).collect(),
            bytes: 0,
            changes: None,
        }
    }

    /// Notes every key changed from now on ([`MemStore::take_changes`], [`MemStore::changed`]).
    pub fn track_changes(&mut self) {
        self.changes = Some(Changes {
            cfs: (0..self.cfs.len())
                .map(|_| Some(FastMap::default()))
                .collect(),
            epoch: 0,
        });
    }

    /// The stretch of the history (of [`EPOCHS`]) changes are noted in from now on.
    pub fn set_epoch(&mut self, epoch: usize) {
        if let Some(c) = &mut self.changes {
            c.epoch = epoch.min(EPOCHS - 1);
        }
    }

    /// Each changed key of `cf`, with its bytes now (key and value, or the key alone for a
    /// deletion).
    pub fn changed(&self, cf: usize) -> impl Iterator<Item = (&Changed, u64)> + '_ {
        self.changes
            .iter()
            .filter_map(move |c| c.cfs.get(cf).and_then(Option::as_ref))
            .flatten()
            .map(move |(key, changed)| {
                let value = self.get(cf, key).map_or(0, <[u8]>::len);
                (changed, (key.len() + value) as u64)
            })
    }

    /// The keys of `cf` changed since tracking started or its last take, in key order, each
    /// with its value now (None: deleted); a key made and deleted since is left out. Tracking
    /// goes on from here.
    pub fn take_changes(&mut self, cf: usize) -> ChangedEntries {
        let Some(Some(map)) = self.changes.as_mut().and_then(|c| c.cfs.get_mut(cf)) else {
            return Vec::new();
        };
        let taken = std::mem::take(map);
        let mut out: ChangedEntries = taken
            .into_iter()
            .filter_map(|(key, changed)| match self.get(cf, &key) {
                Some(v) => Some((key, Some(v.into()))),
                None if changed.existed => Some((key, None)),
                None => None,
            })
            .collect();
        sort_by_key(&mut out, |e| &e.0);
        out
    }

    /// Notes `cf`'s changes from here on only (and from now on: the other column families'
    /// are noted only if they were).
    pub fn restart_changes(&mut self, cf: usize) {
        let cfs = self.cfs.len();
        let changes = self.changes.get_or_insert_with(|| Changes {
            cfs: (0..cfs).map(|_| None).collect(),
            epoch: 0,
        });
        if let Some(slot) = changes.cfs.get_mut(cf) {
            *slot = Some(FastMap::default());
        }
    }

    /// Every entry of `cf` in key order, without taking them.
    pub fn sorted(&self, cf: usize) -> Vec<(&[u8], &[u8])> {
        self.sorted_where(cf, &|_, _| true)
    }

    /// The entries of `cf` that `keep` keeps (given each key and value), in key order, without
    /// taking them.
    pub fn sorted_where(
        &self,
        cf: usize,
        keep: &dyn Fn(&[u8], &[u8]) -> bool,
    ) -> Vec<(&[u8], &[u8])> {
        self.cfs.get(cf).map(|c| c.sorted(keep)).unwrap_or_default()
    }

    /// The column families held (`StateBackend::column_families`).
    pub fn column_families(&self) -> usize {
        self.cfs.len()
    }

    /// Keys and values held, in bytes.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Entries held over every column family.
    pub fn len(&self) -> usize {
        self.cfs.iter().map(Cf::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Takes every column family's entries in key order, leaving the store empty.
    pub fn take(&mut self) -> Vec<Entries> {
        self.bytes = 0;
        self.cfs
            .iter_mut()
            .map(|cf| std::mem::take(cf).into_sorted())
            .collect()
    }

    pub fn get(&self, cf: usize, key: &[u8]) -> Option<&[u8]> {
        self.cfs.get(cf)?.get(key)
    }

    pub fn put(&mut self, cf: usize, key: &[u8], value: &[u8]) {
        let Some(map) = self.cfs.get_mut(cf) else {
            return;
        };
        let old = map.put(key, value);
        self.bytes += value.len() as u64;
        match old {
            Some(old) => self.bytes -= old as u64,
            None => self.bytes += key.len() as u64,
        }
        if let Some(c) = &mut self.changes {
            c.note(cf, key, old.is_some());
        }
    }

    pub fn delete(&mut self, cf: usize, key: &[u8]) {
        let old = self.cfs.get_mut(cf).and_then(|m| m.remove(key));
        if let Some(old) = old {
            self.bytes -= (key.len() + old) as u64;
        }
        if let Some(c) = &mut self.changes {
            c.note(cf, key, old.is_some());
        }
    }

    /// Removes every entry of `cf` whose value `drops` picks, as a compaction filter leaves a
    /// state, without noting it as a change: the entries and the bytes of keys and values
    /// removed.
    pub fn expire(&mut self, cf: usize, drops: impl Fn(&[u8]) -> bool) -> (u64, u64) {
        let Some(map) = self.cfs.get_mut(cf) else {
            return (0, 0);
        };
        let gone: Vec<Box<[u8]>> = match map {
            Cf::Hashed(a) => a
                .iter()
                .filter(|(_, v)| drops(v))
                .map(|(k, _)| k.into())
                .collect(),
            Cf::Ordered(m) => m
                .iter()
                .filter(|(_, v)| drops(v))
                .map(|(k, _)| k.as_bytes().into())
                .collect(),
        };
        let mut bytes = 0u64;
        for key in &gone {
            if let Some(old) = map.remove(key) {
                bytes += (key.len() + old) as u64;
            }
        }
        self.bytes -= bytes.min(self.bytes);
        (gone.len() as u64, bytes)
    }

    /// Flink's list merge (`StringAppendTESTOperator`, as `backend::string_append` does it):
    /// the value so far, then `operand`, joined by ',' unless the value so far is empty.
    pub fn merge(&mut self, cf: usize, key: &[u8], operand: &[u8]) {
        let joined = match self.get(cf, key) {
            Some(old) => {
                let mut v = Vec::with_capacity(old.len() + 1 + operand.len());
                v.extend_from_slice(old);
                if !v.is_empty() {
                    v.push(b',');
                }
                v.extend_from_slice(operand);
                v
            }
            None => operand.to_vec(),
        };
        self.put(cf, key, &joined);
    }

    /// Up to `limit` entries of `cf` from `seek_to` on that start with `prefix`, each to `each`:
    /// how many it saw, and whether more follow (as `StateAccess::iterate_prefix`).
    pub fn scan<E>(
        &mut self,
        cf: usize,
        prefix: &[u8],
        seek_to: &[u8],
        limit: usize,
        mut each: impl FnMut(&[u8], &[u8]) -> Result<(), E>,
    ) -> Result<(u64, bool), E> {
        let mut seen = 0;
        for (k, v) in self.range_from(cf, seek_to) {
            if !k.starts_with(prefix) {
                break;
            }
            if seen == limit {
                return Ok((seen as u64, true));
            }
            each(k, v)?;
            seen += 1;
        }
        Ok((seen as u64, false))
    }

    /// Entries of `cf` from `seek_to` on, in key order (the column family stays ordered).
    pub fn range_from<'s>(
        &'s mut self,
        cf: usize,
        seek_to: &'s [u8],
    ) -> impl Iterator<Item = (&'s [u8], &'s [u8])> + 's {
        self.cfs
            .get_mut(cf)
            .map(Cf::ordered)
            .into_iter()
            .flat_map(move |m| {
                m.range::<Key, _>((Bound::Included(Key::new(seek_to)), Bound::Unbounded))
            })
            .map(|(k, v)| (k.as_bytes(), &**v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_order_is_bytewise_order() {
        let mut keys: Vec<Vec<u8>> = vec![
            vec![],
            vec![0],
            vec![0, 0],
            vec![1],
            vec![1, 0],
            vec![0xff; 15],
            vec![0xff; 16],
            vec![0xff; 17],
        ];
        // Keys of every length around the 16 bytes, sharing long prefixes.
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for len in 0..40 {
            for _ in 0..8 {
                let mut k = vec![7u8; len];
                for b in k.iter_mut().skip(len.saturating_sub(3)) {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    *b = (x % 3) as u8;
                }
                keys.push(k);
            }
        }
        for a in &keys {
            for b in &keys {
                assert_eq!(key_order(a, b), a.cmp(b), "{a:?} against {b:?}");
            }
        }
        // The sort 16 bytes at a time: bytewise order too (distinct keys, as a map holds).
        keys.sort();
        keys.dedup();
        let mut shuffled = keys.clone();
        shuffled.reverse();
        shuffled.rotate_left(keys.len() / 3);
        sort_by_key(&mut shuffled, |k| k);
        assert_eq!(shuffled, keys);
    }

    #[test]
    fn keys_alike_after_their_key_group_sort_bytewise_without_those_bytes() {
        // Flink's keys of a batch: two bytes of key group, then a run every key has alike (a
        // length byte, `user-`, zero padding), then the bytes that differ, of many lengths, some
        // the start of others.
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut keys = Vec::new();
        for alike in [0usize, 1, 13, 14, 15, 30] {
            keys.clear();
            for i in 0..600u32 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let mut k = vec![(x % 3) as u8, (x >> 8) as u8 % 4];
                k.extend(std::iter::repeat_n(b'0', alike));
                // A byte of two values that ends the run alike, 20 bytes alike again, then
                // bytes of their own: keys that tie past their first 16 bytes.
                k.push((x >> 12) as u8 % 2);
                k.extend((0..20u8).map(|j| j % 5));
                let tail = (x >> 16) as usize % 12;
                k.extend((0..tail).map(|j| (x >> (20 + j % 40)) as u8 % 5));
                if i % 7 == 0 {
                    // A key that is the start of the one before.
                    if let Some(last) = keys.last() {
                        let last: &Vec<u8> = last;
                        k = last[..last.len().saturating_sub(1).max(2 + alike)].to_vec();
                    }
                }
                keys.push(k);
            }
            let run = common_run(&keys, &|k: &Vec<u8>| k.as_slice());
            assert!(run >= alike, "{run} bytes alike where {alike} were made so");
            let mut want = keys.clone();
            want.sort();
            want.dedup();
            let mut got = want.clone();
            got.reverse();
            got.rotate_left(want.len() / 3);
            sort_by_key(&mut got, |k| k);
            assert_eq!(got, want, "{alike} bytes alike");
        }
    }

    #[test]
    fn expiring_removes_what_the_filter_picks_in_both_kinds_of_column_family() {
        for ordered in [false, true] {
            let mut s = MemStore::new(1);
            for i in 0..100u8 {
                s.put(0, &[b'k', i], &[i % 3]);
            }
            if ordered {
                let _ = s.range_from(0, b"").count();
            }
            let before = s.bytes();
            let (n, bytes) = s.expire(0, |v| v[0] == 0);
            assert_eq!((n, bytes), (34, 34 * 3), "ordered: {ordered}");
            assert_eq!(s.bytes(), before - bytes);
            assert_eq!(s.len(), 66);
            assert!(s.sorted(0).iter().all(|(_, v)| v[0] != 0));
            assert_eq!(s.get(0, &[b'k', 1]), Some(&[1u8][..]));
        }
    }

    #[test]
    fn puts_deletes_and_merges_keep_the_byte_count_and_the_order() {
        let mut s = MemStore::new(2);
        s.put(0, b"b", b"22");
        s.put(0, b"a", b"1");
        s.put(1, b"a", b"x");
        assert_eq!(s.bytes(), 3 + 2 + 2);
        s.put(0, b"b", b"2");
        assert_eq!(s.bytes(), 2 + 2 + 2);
        s.merge(0, b"a", b"9");
        assert_eq!(s.get(0, b"a"), Some(&b"1,9"[..]));
        s.merge(0, b"c", b"7");
        assert_eq!(s.get(0, b"c"), Some(&b"7"[..]));
        let keys: Vec<&[u8]> = s.range_from(0, b"a\0").map(|(k, _)| k).collect();
        assert_eq!(keys, vec![&b"b"[..], &b"c"[..]]);
        s.delete(0, b"a");
        s.delete(0, b"nothing");
        assert_eq!(s.get(0, b"a"), None);
        // b=2 and c=7 in the first column family, a=x in the second.
        assert_eq!(s.bytes(), 2 + 2 + 2);
        assert_eq!(s.len(), 3);
        // Still answers point lookups once ordered.
        assert_eq!(s.get(0, b"b"), Some(&b"2"[..]));
        s.put(1, b"0", b"y");
        let taken = s.take();
        assert_eq!(taken[0].len(), 2);
        let keys: Vec<&[u8]> = taken[1].iter().map(|(k, _)| &**k).collect();
        assert_eq!(keys, vec![&b"0"[..], &b"a"[..]], "sorted on the way out");
        assert!(s.is_empty() && s.bytes() == 0);
    }

    #[test]
    fn changes_are_the_keys_touched_since_the_last_take_with_their_values_now() {
        let mut s = MemStore::new(2);
        s.put(0, b"old", b"1");
        s.put(0, b"gone", b"1");
        s.put(1, b"kept", b"1");
        s.track_changes();
        s.put(0, b"old", b"2");
        s.delete(0, b"gone");
        s.put(0, b"brief", b"x");
        s.delete(0, b"brief");
        s.set_epoch(3);
        s.merge(0, b"new", b"y");
        let sizes: u64 = s.changed(0).map(|(_, bytes)| bytes).sum();
        // old=2 and new=y count key and value, gone and brief (deleted) their keys.
        assert_eq!(sizes, 4 + 4 + 4 + 5);
        assert_eq!(s.changed(1).count(), 0);
        let epochs: Vec<Option<usize>> = s
            .changed(0)
            .filter(|(c, _)| c.existed)
            .map(|(c, _)| c.last_before(256))
            .collect();
        assert_eq!(epochs, vec![Some(0), Some(0)]);
        let new = s
            .changed(0)
            .find(|(c, _)| !c.existed && c.last_before(256) == Some(3));
        let new = new.unwrap().0;
        // The latest epoch before a bound, across the words of the bit set.
        assert_eq!((new.last_before(4), new.last_before(3)), (Some(3), None));
        let mut far = Changed::default();
        for e in [5, 64, 130, 255] {
            far.epochs[e / 64] |= 1 << (e % 64);
        }
        let found: Vec<_> = [256, 255, 131, 130, 65, 64, 6, 5]
            .map(|b| far.last_before(b))
            .to_vec();
        assert_eq!(
            found,
            [
                Some(255),
                Some(130),
                Some(130),
                Some(64),
                Some(64),
                Some(5),
                Some(5),
                None
            ]
        );
        let taken = [s.take_changes(0), s.take_changes(1)];
        let first: Vec<(&[u8], Option<&[u8]>)> =
            taken[0].iter().map(|(k, v)| (&**k, v.as_deref())).collect();
        // A key made and deleted since is no change; one deleted that existed is a deletion.
        assert_eq!(
            first,
            vec![
                (&b"gone"[..], None),
                (&b"new"[..], Some(&b"y"[..])),
                (&b"old"[..], Some(&b"2"[..]))
            ]
        );
        assert!(taken[1].is_empty());
        s.put(1, b"kept", b"2");
        s.put(0, b"old", b"3");
        s.restart_changes(0);
        assert!(s.take_changes(0).is_empty() && s.take_changes(1).len() == 1);
        let sorted: Vec<&[u8]> = s.sorted(0).into_iter().map(|(k, _)| k).collect();
        assert_eq!(sorted, vec![&b"new"[..], &b"old"[..]]);
    }

    #[test]
    fn restarting_one_column_familys_changes_notes_no_other() {
        let mut s = MemStore::new(2);
        s.restart_changes(1);
        s.put(0, b"a", b"1");
        s.put(1, b"b", b"1");
        assert_eq!(
            s.changed(0).count(),
            0,
            "a build notes only the layered state's"
        );
        assert_eq!(s.take_changes(1).len(), 1);
        s.restart_changes(0);
        s.put(0, b"c", b"1");
        s.put(1, b"d", b"1");
        assert_eq!((s.take_changes(0).len(), s.take_changes(1).len()), (1, 1));
    }

    #[test]
    fn a_merge_onto_an_empty_value_adds_no_separator_as_rocksdb_does() {
        let mut s = MemStore::new(1);
        s.put(0, b"k", b"");
        s.merge(0, b"k", b"x");
        assert_eq!(s.get(0, b"k"), Some(&b"x"[..]));
    }
    /// A model of a column family: what every key holds.
    type Model = BTreeMap<Vec<u8>, Vec<u8>>;

    /// `cf` of `s` holds what `model` holds: each key's value, the entries in key order, the
    /// count, and (over the whole store) the bytes of keys and values.
    fn holds(s: &MemStore, cf: usize, model: &Model) {
        for (k, v) in model {
            assert_eq!(s.get(cf, k), Some(&v[..]), "key {k:?}");
        }
        let sorted: Vec<(Vec<u8>, Vec<u8>)> = s
            .sorted(cf)
            .into_iter()
            .map(|(k, v)| (k.to_vec(), v.to_vec()))
            .collect();
        let expected: Vec<(Vec<u8>, Vec<u8>)> =
            model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        assert_eq!(sorted, expected);
        assert_eq!(s.cfs[cf].len(), model.len());
    }

    fn model_bytes(model: &Model) -> u64 {
        model.iter().map(|(k, v)| (k.len() + v.len()) as u64).sum()
    }

    /// The arena of `cf`.
    fn arena(s: &MemStore, cf: usize) -> &Arena {
        match &s.cfs[cf] {
            Cf::Hashed(a) => a,
            Cf::Ordered(_) => panic!("column family {cf} is ordered"),
        }
    }

    #[test]
    fn an_overwrite_by_a_longer_or_shorter_value_leaves_one_entry_with_the_new_value() {
        let mut s = MemStore::new(1);
        s.put(0, b"a", b"1234");
        s.put(0, b"b", b"xy");
        // Not the last record: the longer value is appended, the old record dead.
        s.put(0, b"a", b"123456");
        assert_eq!(arena(&s, 0).dead, HEADER + 1 + 4);
        s.put(0, b"b", b"z");
        s.put(0, b"a", b"1");
        // The same length: in place.
        s.put(0, b"b", b"w");
        let mut model = Model::new();
        model.insert(b"a".to_vec(), b"1".to_vec());
        model.insert(b"b".to_vec(), b"w".to_vec());
        holds(&s, 0, &model);
        assert_eq!(s.bytes(), model_bytes(&model));
        // The last record rewritten where it is: no dead bytes for it.
        let a = arena(&s, 0);
        assert_eq!(a.records.len() - a.dead, 2 * (HEADER + 2));
        let dead = a.dead;
        s.put(0, b"a", b"a much longer value");
        s.put(0, b"a", b"");
        assert_eq!(arena(&s, 0).dead, dead);
        model.insert(b"a".to_vec(), Vec::new());
        holds(&s, 0, &model);
        assert_eq!(s.bytes(), model_bytes(&model));
    }

    #[test]
    fn a_key_deleted_and_put_again_is_one_entry() {
        let mut s = MemStore::new(1);
        s.put(0, b"k", b"first");
        s.put(0, b"other", b"o");
        s.delete(0, b"k");
        assert_eq!((s.get(0, b"k"), s.len()), (None, 1));
        s.delete(0, b"k");
        s.put(0, b"k", b"second");
        s.delete(0, b"other");
        s.put(0, b"other", b"p");
        let mut model = Model::new();
        model.insert(b"k".to_vec(), b"second".to_vec());
        model.insert(b"other".to_vec(), b"p".to_vec());
        holds(&s, 0, &model);
        assert_eq!(s.bytes(), model_bytes(&model));
        // Deleting every key leaves nothing to iterate, live or dead.
        s.delete(0, b"k");
        s.delete(0, b"other");
        assert!(s.sorted(0).is_empty() && s.is_empty() && s.bytes() == 0);
    }

    #[test]
    fn keys_of_one_hash_are_told_apart() {
        // The fast hash of the empty key and of zero words is 0 for each.
        assert_eq!(hash(b""), hash(&[0; 8]));
        assert_eq!(hash(b""), hash(&[0; 16]));
        let mut s = MemStore::new(1);
        s.put(0, &[0; 8], b"eight");
        s.put(0, b"", b"none");
        s.put(0, &[0; 16], b"sixteen");
        s.delete(0, &[0; 8]);
        s.put(0, &[0; 16], b"16");
        let mut model = Model::new();
        model.insert(Vec::new(), b"none".to_vec());
        model.insert(vec![0; 16], b"16".to_vec());
        holds(&s, 0, &model);
        assert_eq!(s.get(0, &[0; 8]), None);
    }

    /// A state of random puts, deletes and merges over `keys` keys sharing a 40-byte prefix,
    /// values of 0 to 40 bytes, against a model; every `check` operations the two agree.
    fn random_ops(s: &mut MemStore, model: &mut Model, ops: usize, keys: u64, check: usize) {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for i in 0..ops {
            let r = next();
            let mut key = vec![b'p'; 40];
            key.extend_from_slice(&(r % keys).to_be_bytes()[5..]);
            let value = vec![(r >> 8) as u8; ((r >> 16) % 41) as usize];
            match (r >> 32) % 8 {
                0 => {
                    s.delete(0, &key);
                    model.remove(&key);
                }
                1 => {
                    s.merge(0, &key, &value);
                    let v = model.entry(key).or_default();
                    if !v.is_empty() {
                        v.push(b',');
                    }
                    v.extend_from_slice(&value);
                }
                _ => {
                    s.put(0, &key, &value);
                    model.insert(key, value);
                }
            }
            if (i + 1) % check == 0 {
                holds(s, 0, model);
                assert_eq!(s.bytes(), model_bytes(model));
            }
        }
    }

    #[test]
    fn many_keys_of_one_prefix_over_a_growing_and_compacted_arena_match_a_model() {
        let mut s = MemStore::new(1);
        let mut model = Model::new();
        // The buffer and the table grow many times over, while overwrites and deletes leave
        // dead records to compact.
        random_ops(&mut s, &mut model, 400_000, 20_000, 100_000);
        let a = arena(&s, 0);
        let live = a.records.len() - a.dead;
        assert!(a.dead <= live.max(COMPACT_AFTER), "{} dead", a.dead);
        assert_eq!(
            live,
            model
                .iter()
                .map(|(k, v)| HEADER + k.len() + v.len())
                .sum::<usize>()
        );
    }

    #[test]
    fn compacting_keeps_every_live_entry() {
        let mut s = MemStore::new(1);
        let mut model = Model::new();
        // Values growing by merges, each appended anew: the dead bytes pass the live ones.
        let value = vec![b'v'; 1000];
        for round in 0..40 {
            for k in 0..100u32 {
                s.merge(0, &k.to_be_bytes(), &value);
                let v = model.entry(k.to_be_bytes().to_vec()).or_default();
                if round > 0 {
                    v.push(b',');
                }
                v.extend_from_slice(&value);
            }
        }
        let a = arena(&s, 0);
        let live = a.records.len() - a.dead;
        assert!(a.dead <= live.max(COMPACT_AFTER));
        // 40 rounds of 100 values, each round's merges copying every value so far: far more
        // than was kept, had nothing been compacted.
        assert!(a.records.len() < 3 * live);
        holds(&s, 0, &model);
    }

    #[test]
    fn a_column_family_made_ordered_keeps_every_live_entry_and_no_dead_one() {
        let mut s = MemStore::new(1);
        let mut model = Model::new();
        random_ops(&mut s, &mut model, 20_000, 2_000, 20_000);
        assert!(arena(&s, 0).dead > 0, "the test wants dead records");
        let scanned: Vec<(Vec<u8>, Vec<u8>)> = s
            .range_from(0, b"")
            .map(|(k, v)| (k.to_vec(), v.to_vec()))
            .collect();
        let expected: Vec<(Vec<u8>, Vec<u8>)> =
            model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        assert_eq!(scanned, expected);
        assert!(matches!(s.cfs[0], Cf::Ordered(_)));
        // And goes on as the model does once ordered.
        random_ops(&mut s, &mut model, 5_000, 2_000, 5_000);
        let taken: Vec<(Vec<u8>, Vec<u8>)> = s.take()[0]
            .iter()
            .map(|(k, v)| (k.to_vec(), v.to_vec()))
            .collect();
        let expected: Vec<(Vec<u8>, Vec<u8>)> = model.into_iter().collect();
        assert_eq!(taken, expected);
    }

    #[test]
    fn an_ordered_column_family_holds_keys_inline_and_on_the_heap_alike() {
        let mut s = MemStore::new(1);
        let mut model = Model::new();
        let _ = s.range_from(0, b"").count();
        // Keys of 0 to 80 bytes, across the inline length, sharing prefixes so that inline and
        // heap keys compare with each other.
        let key_of = |i: u32| {
            let len = i as usize % 81;
            let mut key = vec![b'k'; len];
            let tail = len.min(2);
            key[len - tail..].copy_from_slice(&(i as u16).to_be_bytes()[2 - tail..]);
            key
        };
        for i in 0..4_000u32 {
            if i % 5 == 4 {
                // A key put three steps before: inline or on the heap as its length says.
                let key = key_of(i - 3);
                s.delete(0, &key);
                model.remove(&key);
            } else {
                let value = i.to_be_bytes().to_vec();
                s.put(0, &key_of(i), &value);
                model.insert(key_of(i), value);
            }
        }
        assert!(matches!(s.cfs[0], Cf::Ordered(_)));
        assert!(model.keys().any(|k| k.len() > INLINE) && model.keys().any(|k| k.len() == INLINE));
        for (k, v) in &model {
            assert_eq!(s.get(0, k), Some(&v[..]));
        }
        let scanned: Vec<(Vec<u8>, Vec<u8>)> = s
            .range_from(0, b"")
            .map(|(k, v)| (k.to_vec(), v.to_vec()))
            .collect();
        let expected: Vec<(Vec<u8>, Vec<u8>)> = model.clone().into_iter().collect();
        assert_eq!(scanned, expected);
        let taken: Vec<(Vec<u8>, Vec<u8>)> = s.take()[0]
            .iter()
            .map(|(k, v)| (k.to_vec(), v.to_vec()))
            .collect();
        assert_eq!(taken, expected);
    }
}
