//! The state of a preload's warm-up (`run --preload`): every column family's keys and values in
//! key order in memory, with RocksDB's semantics for what the operators do (a merge joins with
//! Flink's list merge operator at once, as a compaction would), so the result can be written
//! out sorted as SST files.

use std::collections::BTreeMap;
use std::ops::Bound;

use crate::util::hash::FastMap;

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

/// Sorts `items` by their keys in bytewise order, 16 bytes at a time: by each key's first 16
/// bytes (and whether it ends within them), then each run of keys equal so far by their next
/// 16, and so on. The sort compares numbers held beside each item's index rather than following
/// a pointer to each key per comparison: millions of keys scattered over the heap, with long
/// common prefixes (a key group, a serialized key zero-padded to 36 bytes), made `memcmp` and
/// its cache misses most of a preload's sort.
fn sort_by_key<T>(items: &mut Vec<T>, key: impl Fn(&T) -> &[u8]) {
    // (16 bytes of the key from `at`, how many bytes it has from `at` (17: more than 16), index)
    type Order = (u128, u8, u32);
    fn sort_run<T>(items: &[T], key: &impl Fn(&T) -> &[u8], run: &mut [Order], at: usize) {
        for o in run.iter_mut() {
            let k = key(&items[o.2 as usize]);
            *o = (chunk(k, at), k.len().saturating_sub(at).min(17) as u8, o.2);
        }
        run.sort_unstable_by_key(|o| (o.0, o.1));
        // Keys alike in these 16 bytes and longer than them: ordered by the next 16.
        let mut start = 0;
        while start < run.len() {
            let (c, n) = (run[start].0, run[start].1);
            let end = start + run[start..].partition_point(|o| o.0 == c && o.1 == n);
            if end - start > 1 && n == 17 {
                sort_run(items, key, &mut run[start..end], at + 16);
            }
            start = end;
        }
    }
    let mut order: Vec<Order> = (0..items.len() as u32).map(|i| (0, 0, i)).collect();
    sort_run(items, &key, &mut order, 0);
    let mut slots: Vec<Option<T>> = items.drain(..).map(Some).collect();
    // Each index is in `order` once: every slot is taken once.
    items.extend(order.iter().filter_map(|o| slots[o.2 as usize].take()));
}

/// One column family's entries, in RocksDB's bytewise key order.
pub type Entries = Vec<(Box<[u8]>, Box<[u8]>)>;

/// One column family: hashed while only point operations reach it (most states: a B-tree's
/// byte-wise compares of keys with long common prefixes cost several times a hash lookup),
/// ordered from the first scan on (timer queues, map iteration).
#[derive(Debug)]
enum Cf {
    Hashed(FastMap<Box<[u8]>, Box<[u8]>>),
    Ordered(BTreeMap<OwnedKey, Box<[u8]>>),
}

/// A key of an ordered column family: ordered by [`key_order`] (bytewise), so that a B-tree's
/// many comparisons of keys with long common prefixes (a timer queue's key group and
/// timestamp) are mostly one comparison of two numbers.
#[derive(Debug, PartialEq, Eq)]
struct OwnedKey(Box<[u8]>);

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
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        key_order(&self.0, &other.0)
    }
}

impl PartialOrd for OwnedKey {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl std::borrow::Borrow<Key> for OwnedKey {
    fn borrow(&self) -> &Key {
        Key::new(&self.0)
    }
}

impl Default for Cf {
    fn default() -> Self {
        Cf::Hashed(FastMap::default())
    }
}

impl Cf {
    fn len(&self) -> usize {
        match self {
            Cf::Hashed(m) => m.len(),
            Cf::Ordered(m) => m.len(),
        }
    }

    fn get(&self, key: &[u8]) -> Option<&[u8]> {
        match self {
            Cf::Hashed(m) => m.get(key).map(|v| &**v),
            Cf::Ordered(m) => m.get(Key::new(key)).map(|v| &**v),
        }
    }

    fn get_mut(&mut self, key: &[u8]) -> Option<&mut Box<[u8]>> {
        match self {
            Cf::Hashed(m) => m.get_mut(key),
            Cf::Ordered(m) => m.get_mut(Key::new(key)),
        }
    }

    fn insert(&mut self, key: Box<[u8]>, value: Box<[u8]>) {
        match self {
            Cf::Hashed(m) => {
                m.insert(key, value);
            }
            Cf::Ordered(m) => {
                m.insert(OwnedKey(key), value);
            }
        }
    }

    fn remove(&mut self, key: &[u8]) -> Option<Box<[u8]>> {
        match self {
            Cf::Hashed(m) => m.remove(key),
            Cf::Ordered(m) => m.remove(Key::new(key)),
        }
    }

    /// The entries in an ordered map from now on.
    fn ordered(&mut self) -> &BTreeMap<OwnedKey, Box<[u8]>> {
        if let Cf::Hashed(m) = self {
            *self = Cf::Ordered(
                std::mem::take(m)
                    .into_iter()
                    .map(|(k, v)| (OwnedKey(k), v))
                    .collect(),
            );
        }
        match self {
            Cf::Ordered(m) => m,
            // Just made ordered above.
            Cf::Hashed(_) => unreachable!("a column family made ordered is ordered"),
        }
    }

    /// Every entry in key order.
    fn into_sorted(self) -> Entries {
        match self {
            Cf::Hashed(m) => {
                let mut v: Entries = m.into_iter().collect();
                sort_by_key(&mut v, |e| &e.0);
                v
            }
            Cf::Ordered(m) => m.into_iter().map(|(k, v)| (k.0, v)).collect(),
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
        match self.cfs.get(cf) {
            Some(Cf::Ordered(m)) => m.iter().map(|(k, v)| (&*k.0, &**v)).collect(),
            Some(Cf::Hashed(m)) => {
                let mut refs: Vec<(&[u8], &[u8])> = m.iter().map(|(k, v)| (&**k, &**v)).collect();
                sort_by_key(&mut refs, |e| e.0);
                refs
            }
            None => Vec::new(),
        }
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
        self.bytes += value.len() as u64;
        let existed = match map.get_mut(key) {
            Some(old) => {
                self.bytes -= old.len() as u64;
                *old = value.into();
                true
            }
            None => {
                self.bytes += key.len() as u64;
                map.insert(key.into(), value.into());
                false
            }
        };
        if let Some(c) = &mut self.changes {
            c.note(cf, key, existed);
        }
    }

    pub fn delete(&mut self, cf: usize, key: &[u8]) {
        let old = self.cfs.get_mut(cf).and_then(|m| m.remove(key));
        if let Some(old) = &old {
            self.bytes -= (key.len() + old.len()) as u64;
        }
        if let Some(c) = &mut self.changes {
            c.note(cf, key, old.is_some());
        }
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
            .map(|(k, v)| (&*k.0, &**v))
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
}
