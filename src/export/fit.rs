//! Whether an export squeezes the TaskManager's own memory: the task heap the job's code runs in,
//! Flink's framework heap and off-heap, the JVM overhead, against the cluster's configuration
//! before the export (the user's sizes, or Flink's defaults for the same process size), and what
//! size would keep the task heap.

use crate::config::tm_memory::{TmMemory, TmMemoryConfig, format_memory_size};
use crate::config::units::human_bytes;

/// A part of the TaskManager that shrinks by more than this share is squeezed.
const SQUEEZE_SHARE: f64 = 0.20;
/// Task heap a slot keeps at least, for the job's own objects (records, serializers, windows).
pub(super) const MIN_TASK_HEAP_PER_SLOT: u64 = 256 << 20;

/// One part of the TaskManager the export shrinks too far.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Squeeze {
    pub(super) what: &'static str,
    pub(super) from: u64,
    pub(super) to: u64,
    /// Per slot, when the task heap falls under [`MIN_TASK_HEAP_PER_SLOT`] a slot.
    pub(super) per_slot: Option<u64>,
}

impl Squeeze {
    /// `task heap 3.2 GiB -> 455.7 MiB (-86 %; 113.9 MiB a slot, under 256 MiB)`.
    pub(super) fn describe(&self) -> String {
        let change = if self.from > 0 {
            format!(
                "{:+.0} %",
                (self.to as f64 / self.from as f64 - 1.0) * 100.0
            )
        } else {
            "new".to_string()
        };
        let slot = self
            .per_slot
            .map(|b| {
                format!(
                    "; {} a slot, under {}",
                    human_bytes(b as f64),
                    human_bytes(MIN_TASK_HEAP_PER_SLOT as f64)
                )
            })
            .unwrap_or_default();
        format!(
            "{} {} -> {} ({change}{slot})",
            self.what,
            human_bytes(self.from as f64),
            human_bytes(self.to as f64)
        )
    }
}

/// What `after` squeezes against `before`: a part more than 20 % smaller, or a task heap that
/// shrinks to under 256 MiB a slot.
pub(super) fn squeezes(before: &TmMemory, after: &TmMemory) -> Vec<Squeeze> {
    let parts = [
        ("task heap", before.task_heap, after.task_heap),
        (
            "framework heap",
            before.framework_heap,
            after.framework_heap,
        ),
        (
            "framework off-heap",
            before.framework_off_heap,
            after.framework_off_heap,
        ),
        ("JVM overhead", before.jvm_overhead, after.jvm_overhead),
    ];
    let slots = u64::from(after.slots.max(1));
    parts
        .into_iter()
        .filter_map(|(what, from, to)| {
            let per_slot =
                (what == "task heap" && to < from && to / slots < MIN_TASK_HEAP_PER_SLOT)
                    .then_some(to / slots);
            let shrunk = (to as f64) < from as f64 * (1.0 - SQUEEZE_SHARE);
            (shrunk || per_slot.is_some()).then_some(Squeeze {
                what,
                from,
                to,
                per_slot,
            })
        })
        .collect()
}

/// The smallest total size (the key the cluster sizes its TaskManager by: process size, else
/// total Flink memory), to the MiB, at which `after` keeps `before`'s task heap; `None` when
/// the cluster sets neither (its task heap is then its own size) or no size up to 1 TiB does.
pub(super) fn size_keeping_task_heap(
    after: &TmMemoryConfig,
    before: &TmMemory,
) -> Option<(&'static str, u64)> {
    let (key, current): (&'static str, u64) = match (after.process_size, after.flink_size) {
        (Some(size), _) => (crate::config::tm_memory::PROCESS_SIZE_KEY, size),
        (None, Some(size)) => (crate::config::tm_memory::FLINK_SIZE_KEY, size),
        (None, None) => return None,
    };
    let keeps = |size: u64| {
        let mut config = after.clone();
        if after.process_size.is_some() {
            config.process_size = Some(size);
        } else {
            config.flink_size = Some(size);
        }
        config
            .derive()
            .is_ok_and(|m| m.task_heap >= before.task_heap)
    };
    const MIB: u64 = 1 << 20;
    let mut low = current / MIB;
    let mut high = low.max(1);
    while !keeps(high * MIB) {
        high *= 2;
        if high > 1 << 20 {
            return None;
        }
    }
    // Task heap grows with the size: the smallest MiB that keeps it.
    while low + 1 < high {
        let mid = low + (high - low) / 2;
        if keeps(mid * MIB) {
            high = mid;
        } else {
            low = mid;
        }
    }
    Some((key, high * MIB))
}

/// `taskmanager.memory.process.size: 13272mb keeps the task heap at 3.2 GiB`.
pub(super) fn keeping(key: &str, size: u64, task_heap: u64) -> String {
    format!(
        "{key}: {} keeps the task heap at {}",
        format_memory_size(size),
        human_bytes(task_heap as f64)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn derive(pairs: &[(&str, &str)]) -> (TmMemoryConfig, TmMemory) {
        let config = TmMemoryConfig::from_pairs(pairs.iter().copied()).unwrap();
        let memory = config.derive().unwrap();
        (config, memory)
    }

    #[test]
    fn a_managed_size_that_eats_the_task_heap_is_a_squeeze_with_the_size_that_keeps_it() {
        let (_, before) = derive(&[
            ("taskmanager.memory.process.size", "8g"),
            ("taskmanager.numberOfTaskSlots", "4"),
        ]);
        let (after_config, after) = derive(&[
            ("taskmanager.memory.process.size", "8g"),
            ("taskmanager.numberOfTaskSlots", "4"),
            ("taskmanager.memory.managed.size", "5970004616b"),
        ]);
        let found = squeezes(&before, &after);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].what, "task heap");
        assert!(found[0].per_slot.is_some());
        let (key, size) = size_keeping_task_heap(&after_config, &before).unwrap();
        assert_eq!(key, "taskmanager.memory.process.size");
        // The size keeps the task heap, a MiB less does not.
        let at = |bytes: u64| {
            let mut c = after_config.clone();
            c.process_size = Some(bytes);
            c.derive().unwrap().task_heap
        };
        assert!(at(size) >= before.task_heap);
        assert!(at(size - (1 << 20)) < before.task_heap);
        // Less managed memory than Flink's default gives the heap more: nothing squeezed.
        let (_, roomy) = derive(&[
            ("taskmanager.memory.process.size", "8g"),
            ("taskmanager.numberOfTaskSlots", "4"),
            ("taskmanager.memory.managed.size", "1g"),
        ]);
        assert_eq!(squeezes(&before, &roomy), []);
    }

    #[test]
    fn framework_memory_and_jvm_overhead_are_weighed_like_the_task_heap() {
        let (_, before) = derive(&[("taskmanager.memory.process.size", "4g")]);
        let mut after = before;
        // 21 % less JVM overhead is squeezed, 19 % less framework heap is not.
        after.jvm_overhead = before.jvm_overhead * 79 / 100;
        after.framework_heap = before.framework_heap * 81 / 100;
        let found = squeezes(&before, &after);
        assert_eq!(
            found.iter().map(|s| s.what).collect::<Vec<_>>(),
            ["JVM overhead"]
        );
        assert!(
            found[0]
                .describe()
                .starts_with("JVM overhead 409.6 MiB -> 323.6 MiB (-21 %")
        );
        // One slot with a task heap under 256 MiB that shrank by 10 %: squeezed a slot.
        let (_, small) = derive(&[("taskmanager.memory.process.size", "1g")]);
        let mut less = small;
        less.task_heap = small.task_heap * 9 / 10;
        let found = squeezes(&small, &less);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].per_slot, Some(less.task_heap));
        // The same small heap, not shrunk by the export: the cluster's own, not a squeeze.
        assert_eq!(squeezes(&small, &small), []);
    }
}
