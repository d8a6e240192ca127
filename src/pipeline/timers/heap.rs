//! HEAP timers (`state.backend.rocksdb.timer-service.factory: HEAP`): Flink's
//! `HeapPriorityQueueSetFactory` gives the timer service a `HeapPriorityQueueSet`: one binary
//! heap ordered by timestamp over every key group's timers, and per key group a hash map that
//! deduplicates them. RocksDB never sees a timer: no column family, no write, no scan.
//! Checkpoints write them as raw keyed state ([`super::raw`]).

use std::collections::HashMap;
use std::sync::Arc;

use super::Timer;
use crate::backend::keys::{self, CompositeKey, MAX_PARALLELISM};
use crate::pipeline::PipelineError;

/// Flink's `HeapPriorityQueue.QUEUE_HEAD_INDEX`: the heap array's slot 0 stays unused.
const QUEUE_HEAD_INDEX: usize = 1;

/// One timer in the heap: Flink's `TimerHeapInternalTimer` with its `internalIndex`.
#[derive(Debug)]
struct Slot {
    timestamp: i64,
    /// The timer as the RocksDB queue would key it (`key-group | timestamp | key | namespace`):
    /// its identity (timestamp, key, namespace), and what a fired timer is read from.
    bytes: Arc<[u8]>,
    /// Its index in `heap`.
    index: usize,
}

/// The event-time timers of one operator on the heap.
#[derive(Debug)]
pub struct HeapTimers {
    /// The timer service's name (`getInternalTimerService(name, ...)`).
    service: String,
    /// Flink's `HeapPriorityQueue.queue`: slot ids, from `QUEUE_HEAD_INDEX` on.
    heap: Vec<u32>,
    slots: Vec<Slot>,
    free: Vec<u32>,
    /// `HeapPriorityQueueSet.deduplicationMapsByKeyGroup`.
    dedup: Vec<HashMap<Arc<[u8]>, u32>>,
    /// The namespace serializer's kind, from the first timer registered (snapshots name it).
    namespace: Option<super::raw::NamespaceKind>,
    /// The timer being registered (reused).
    scratch: Vec<u8>,
    spare_key: String,
    spare_namespace: Vec<u8>,
    pub registered: u64,
    pub fired: u64,
}

impl HeapTimers {
    /// An empty queue for the timer service `service`.
    pub fn new(service: &str) -> HeapTimers {
        HeapTimers {
            service: service.to_string(),
            heap: vec![0],
            slots: Vec::new(),
            free: Vec::new(),
            dedup: (0..MAX_PARALLELISM).map(|_| HashMap::new()).collect(),
            namespace: None,
            scratch: Vec::new(),
            spare_key: String::new(),
            spare_namespace: Vec::new(),
            registered: 0,
            fired: 0,
        }
    }

    pub fn service(&self) -> &str {
        &self.service
    }

    /// Timers pending.
    pub fn len(&self) -> usize {
        self.heap.len() - QUEUE_HEAD_INDEX
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// `InternalTimerServiceImpl.registerEventTimeTimer` -> `HeapPriorityQueueSet.add`: a
    /// timer already there (same timestamp, key and namespace) is not added again.
    pub fn register(&mut self, key: &CompositeKey, timestamp: i64) {
        self.registered += 1;
        let mut bytes = std::mem::take(&mut self.scratch);
        key.write_timer_key(timestamp, &mut bytes);
        self.add_bytes(key.key_group(), timestamp, &bytes);
        self.scratch = bytes;
    }

    /// Adds the timer keyed `bytes` (a timer key of key group `kg`) unless it is there.
    pub(super) fn add_bytes(&mut self, kg: u16, timestamp: i64, bytes: &[u8]) {
        let Some(map) = self.dedup.get_mut(usize::from(kg)) else {
            return;
        };
        if map.contains_key(bytes) {
            return;
        }
        if self.namespace.is_none()
            && let Some((_, ns)) = keys::timer_key_and_namespace(bytes)
        {
            self.namespace = Some(super::raw::NamespaceKind::of(ns));
        }
        let bytes: Arc<[u8]> = Arc::from(bytes);
        let slot = Slot {
            timestamp,
            bytes: Arc::clone(&bytes),
            index: 0,
        };
        let id = match self.free.pop() {
            Some(id) => {
                self.slots[id as usize] = slot;
                id
            }
            None => {
                self.slots.push(slot);
                (self.slots.len() - 1) as u32
            }
        };
        map.insert(bytes, id);
        // HeapPriorityQueue.addInternal: at the end, sifted up.
        self.heap.push(id);
        let at = self.heap.len() - 1;
        self.move_to(id, at);
        self.sift_up(at);
    }

    /// The next timer at or before `watermark`, removed from the queue
    /// (`InternalTimerServiceImpl.advanceWatermark`: peek, then poll).
    pub fn poll_due(&mut self, watermark: i64) -> Result<Option<Timer>, PipelineError> {
        let Some(&head) = self.heap.get(QUEUE_HEAD_INDEX) else {
            return Ok(None);
        };
        if self.slots[head as usize].timestamp > watermark {
            return Ok(None);
        }
        self.remove_at(QUEUE_HEAD_INDEX);
        let bytes = self.forget(head);
        self.fired += 1;
        let (user_key, ns) = keys::timer_key_and_namespace(&bytes)
            .ok_or_else(|| PipelineError::CorruptTimer(format!("{bytes:02x?}")))?;
        let mut key = std::mem::take(&mut self.spare_key);
        key.clear();
        key.push_str(&user_key);
        let mut namespace = std::mem::take(&mut self.spare_namespace);
        namespace.clear();
        namespace.extend_from_slice(ns);
        Ok(Some(Timer {
            timestamp: keys::timer_timestamp(&bytes),
            key,
            namespace,
        }))
    }

    /// `HeapPriorityQueueSet.remove`: the timer of `key`'s current key in `namespace` at
    /// `timestamp`, if there. True when it was the head.
    pub fn remove(&mut self, key: &CompositeKey, namespace: &[u8], timestamp: i64) -> bool {
        let mut bytes = std::mem::take(&mut self.scratch);
        super::write_timer_key_in(key, namespace, timestamp, &mut bytes);
        let found = self
            .dedup
            .get_mut(usize::from(key.key_group()))
            .and_then(|map| map.remove(bytes.as_slice()));
        self.scratch = bytes;
        let Some(id) = found else {
            return false;
        };
        let index = self.slots[id as usize].index;
        self.remove_at(index);
        self.free_slot(id);
        index == QUEUE_HEAD_INDEX
    }

    /// Takes back a fired timer, whose buffers the next one reuses.
    pub fn recycle(&mut self, timer: Timer) {
        self.spare_key = timer.key;
        self.spare_namespace = timer.namespace;
    }

    /// The earliest pending timer, if any.
    pub fn next_timestamp(&self) -> Option<i64> {
        self.heap
            .get(QUEUE_HEAD_INDEX)
            .map(|id| self.slots[*id as usize].timestamp)
    }

    /// `getSubsetForKeyGroup`: the timer keys of key group `kg`, in byte order (Flink's is the
    /// hash map's; a fixed order keeps snapshots and restores reproducible).
    pub fn key_group_timers(&self, kg: u16) -> Vec<&[u8]> {
        let mut out: Vec<&[u8]> = self
            .dedup
            .get(usize::from(kg))
            .map(|m| m.keys().map(|k| &k[..]).collect())
            .unwrap_or_default();
        out.sort_unstable();
        out
    }

    /// The namespace serializer of this service's timers (VoidNamespace before any).
    pub fn namespace_kind(&self) -> super::raw::NamespaceKind {
        self.namespace.unwrap_or(super::raw::NamespaceKind::Void)
    }

    /// Drops the dedup entry of slot `id` and frees it; its key bytes.
    fn forget(&mut self, id: u32) -> Arc<[u8]> {
        let bytes = Arc::clone(&self.slots[id as usize].bytes);
        let kg = keys::timer_key_group(&bytes);
        if let Some(map) = self.dedup.get_mut(usize::from(kg)) {
            map.remove(&bytes[..]);
        }
        self.free_slot(id);
        bytes
    }

    fn free_slot(&mut self, id: u32) {
        self.slots[id as usize].bytes = Arc::from(&[][..]);
        self.free.push(id);
    }

    fn less(&self, a: u32, b: u32) -> bool {
        self.slots[a as usize].timestamp < self.slots[b as usize].timestamp
    }

    fn move_to(&mut self, id: u32, index: usize) {
        self.heap[index] = id;
        self.slots[id as usize].index = index;
    }

    /// `HeapPriorityQueue.removeElementAtIndex`: the last element takes the place, adjusted.
    fn remove_at(&mut self, index: usize) {
        let last = self.heap.len() - 1;
        if index != last {
            let element = self.heap[last];
            self.move_to(element, index);
            self.heap.pop();
            // adjustElementAtIndex: down, then up if it did not move.
            self.sift_down(index);
            if self.heap[index] == element {
                self.sift_up(index);
            }
        } else {
            self.heap.pop();
        }
    }

    fn sift_up(&mut self, mut index: usize) {
        let current = self.heap[index];
        let mut parent = index >> 1;
        while parent > 0 && self.less(current, self.heap[parent]) {
            self.move_to(self.heap[parent], index);
            index = parent;
            parent >>= 1;
        }
        self.move_to(current, index);
    }

    fn sift_down(&mut self, mut index: usize) {
        let size = self.heap.len() - 1;
        let current = self.heap[index];
        let mut first = index << 1;
        if first < size && self.less(self.heap[first + 1], self.heap[first]) {
            first += 1;
        }
        while first <= size && self.less(self.heap[first], current) {
            self.move_to(self.heap[first], index);
            index = first;
            first = index << 1;
            if first < size && self.less(self.heap[first + 1], self.heap[first]) {
                first += 1;
            }
        }
        self.move_to(current, index);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn key(user: &str) -> CompositeKey {
        let mut k = CompositeKey::default();
        k.set_key(user);
        k
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]
        #[test]
        fn every_timer_fires_once_in_timestamp_order_and_removed_ones_never(
            timers in proptest::collection::vec((0u32..40, 0i64..3_000), 1..800),
            removals in proptest::collection::vec((0u32..40, 0i64..3_000), 0..200),
            steps in proptest::collection::vec(0i64..4_000, 1..5),
        ) {
            let mut heap = HeapTimers::new("user-timers");
            let mut expected = std::collections::BTreeSet::new();
            for (u, ts) in &timers {
                heap.register(&key(&format!("user-{u}")), *ts);
                expected.insert((*ts, format!("user-{u}")));
            }
            for (u, ts) in &removals {
                let removed = expected.remove(&(*ts, format!("user-{u}")));
                let before = heap.len();
                heap.remove(&key(&format!("user-{u}")), &[keys::VOID_NAMESPACE], *ts);
                prop_assert_eq!(before - heap.len(), usize::from(removed));
            }
            let mut steps = steps;
            steps.sort();
            steps.push(i64::MAX);
            let mut fired = Vec::new();
            for wm in steps {
                while let Some(t) = heap.poll_due(wm).unwrap() {
                    prop_assert!(t.timestamp <= wm);
                    fired.push((t.timestamp, t.key.clone()));
                    heap.recycle(t);
                }
            }
            for pair in fired.windows(2) {
                prop_assert!(pair[0].0 <= pair[1].0);
            }
            let mut sorted = fired.clone();
            sorted.sort();
            prop_assert_eq!(sorted, expected.into_iter().collect::<Vec<_>>());
            prop_assert!(heap.is_empty());
        }
    }

    #[test]
    fn a_timer_registered_twice_is_kept_once() {
        let mut heap = HeapTimers::new("user-timers");
        let k = key("user-1");
        heap.register(&k, 10);
        heap.register(&k, 10);
        heap.register(&k, 11);
        assert_eq!((heap.len(), heap.registered), (2, 3));
        assert_eq!(heap.next_timestamp(), Some(10));
        assert!(heap.remove(&k, &[keys::VOID_NAMESPACE], 10));
        assert_eq!(heap.next_timestamp(), Some(11));
    }
}
