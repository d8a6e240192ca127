//! Event-time watermarks: per partition bounded out-of-orderness with idleness, and the valve
//! that forwards the minimum over active partitions, as Flink's Kafka source and
//! `StatusWatermarkValve` do.
//!
//! Processing time (for idleness) is whatever clock the caller passes as `now`; the engine uses
//! a replay clock so that runs are reproducible.

/// Events between two watermark emissions. Flink emits periodic watermarks on a wall-clock
/// interval (200 ms); a fixed event count keeps the state traffic identical run to run.
pub const WATERMARK_EVERY_EVENTS: u64 = 64;

/// Flink's `BoundedOutOfOrderness`: watermark = max event time - out-of-orderness - 1.
#[derive(Debug, Clone)]
pub struct BoundedOutOfOrderness {
    max_seen: i64,
    out_of_orderness: i64,
}

impl BoundedOutOfOrderness {
    pub fn new(out_of_orderness_ms: i64) -> Self {
        // Start so that the first watermark is Long.MIN_VALUE-like without overflowing.
        BoundedOutOfOrderness {
            max_seen: i64::MIN + out_of_orderness_ms + 1,
            out_of_orderness: out_of_orderness_ms,
        }
    }

    pub fn on_event(&mut self, event_time: i64) {
        self.max_seen = self.max_seen.max(event_time);
    }

    pub fn current(&self) -> i64 {
        self.max_seen - self.out_of_orderness - 1
    }

    pub fn max_event_time(&self) -> i64 {
        self.max_seen
    }
}

#[derive(Debug, Clone)]
struct Partition {
    generator: BoundedOutOfOrderness,
    /// Processing time of the last record (or of the start).
    last_record_at: i64,
    idle: bool,
    /// The partition reached its end offset: its split is released from its reader.
    finished: bool,
}

/// A source reader (a parallel instance of the source): the valve's input. Its watermark is the
/// minimum over its active splits; it is idle when every split it still reads is idle.
#[derive(Debug, Clone)]
struct Reader {
    splits: Vec<usize>,
    /// A reader with no partitions is an input that never sees a record: only idleness
    /// (counted from the start) stops it holding the watermark back.
    started_at: i64,
    idle: bool,
    /// Every split reached its end and the reader's final maximum watermark got through.
    finished_with_max: bool,
    finished: bool,
}

/// Flink's `KafkaSourceEnumerator.getSplitOwner`: partitions of a topic go round-robin over
/// the readers, starting at an index derived from the topic name's Java hash code.
pub fn split_owner(topic: &str, partition: u32, readers: u32) -> u32 {
    let hash = topic
        .encode_utf16()
        .fold(0i32, |h, c| h.wrapping_mul(31).wrapping_add(i32::from(c)));
    let start = (hash.wrapping_mul(31) & 0x7FFF_FFFF) as u32 % readers.max(1);
    (start + partition) % readers.max(1)
}

/// The topic name the synthetic log is written to (it decides which reader owns partition 0).
pub const TOPIC: &str = "events";

/// Per-partition watermarks, combined per reader and then over readers into the operator's
/// watermark, as Flink's Kafka source (per-split watermarks) and `StatusWatermarkValve` do.
#[derive(Debug, Clone)]
pub struct WatermarkValve {
    partitions: Vec<Partition>,
    readers: Vec<Reader>,
    /// reader_of[partition]
    reader_of: Vec<usize>,
    idleness: Option<i64>,
    emitted: i64,
    /// Final maximum watermarks dropped because their reader was idle.
    pub dropped_final_watermarks: u64,
}

impl WatermarkValve {
    /// One reader per partition. `idleness`: mark a partition idle after this much processing
    /// time without records (`WatermarkStrategy::withIdleness`); None never marks one idle.
    pub fn new(
        partitions: usize,
        out_of_orderness_ms: i64,
        idleness: Option<i64>,
        now: i64,
    ) -> Self {
        Self::with_readers(partitions, partitions, out_of_orderness_ms, idleness, now)
    }

    /// The valve of a job reading `workload`'s log: its partitions, source readers,
    /// out-of-orderness bound and idleness.
    pub fn for_workload(workload: &crate::config::Workload, now: i64) -> Self {
        let spec = &workload.spec;
        let partitions = spec.partitions as usize;
        Self::with_readers(
            partitions,
            spec.source.readers.map_or(partitions, |r| r as usize),
            spec.event_time.out_of_orderness.0 as i64,
            spec.idleness.map(|i| i.0 as i64),
            now,
        )
    }

    /// `readers` parallel source readers share the partitions as Flink assigns them; readers
    /// beyond the partition count get none.
    pub fn with_readers(
        partitions: usize,
        readers: usize,
        out_of_orderness_ms: i64,
        idleness: Option<i64>,
        now: i64,
    ) -> Self {
        let readers = readers.max(1);
        let reader_of: Vec<usize> = (0..partitions)
            .map(|p| split_owner(TOPIC, p as u32, readers as u32) as usize)
            .collect();
        WatermarkValve {
            partitions: (0..partitions)
                .map(|_| Partition {
                    generator: BoundedOutOfOrderness::new(out_of_orderness_ms),
                    last_record_at: now,
                    idle: false,
                    finished: false,
                })
                .collect(),
            readers: (0..readers)
                .map(|r| Reader {
                    splits: (0..partitions).filter(|p| reader_of[*p] == r).collect(),
                    started_at: now,
                    idle: false,
                    finished_with_max: false,
                    finished: false,
                })
                .collect(),
            reader_of,
            idleness,
            emitted: i64::MIN,
            dropped_final_watermarks: 0,
        }
    }

    pub fn on_record(&mut self, partition: usize, event_time: i64, now: i64) {
        if let Some(p) = self.partitions.get_mut(partition) {
            p.generator.on_event(event_time);
            p.last_record_at = now;
            p.idle = false;
            if let Some(r) = self.reader_of.get(partition) {
                self.readers[*r].idle = false;
            }
        }
    }

    fn mark_idle(&mut self, now: i64) {
        let Some(idleness) = self.idleness else {
            return;
        };
        // Flink's IdlenessTimer: idle once strictly more than the timeout has passed.
        for p in &mut self.partitions {
            if !p.finished && now.saturating_sub(p.last_record_at) > idleness {
                p.idle = true;
            }
        }
        for r in &mut self.readers {
            if r.finished_with_max {
                continue;
            }
            // Splits still open; once all are finished the reader keeps its last status.
            let mut open = r
                .splits
                .iter()
                .map(|s| &self.partitions[*s])
                .filter(|p| !p.finished)
                .peekable();
            if r.splits.is_empty() {
                r.idle = now.saturating_sub(r.started_at) > idleness;
            } else if open.peek().is_some() {
                r.idle = open.all(|p| p.idle);
            }
        }
    }

    /// A bounded partition reached its end offset and its split is released. When it was its
    /// reader's last, the reader ends and emits the maximum watermark; if the reader has been
    /// marked idle by then, the valve drops that watermark (the seed's idleness trap).
    pub fn on_partition_finished(&mut self, partition: usize, now: i64) {
        self.mark_idle(now);
        let Some(p) = self.partitions.get_mut(partition) else {
            return;
        };
        if p.finished {
            return;
        }
        p.finished = true;
        let was_idle = p.idle;
        let reader = &mut self.readers[self.reader_of[partition]];
        let all_done = reader.splits.iter().all(|s| self.partitions[*s].finished);
        if !all_done || reader.finished {
            return;
        }
        reader.finished = true;
        // The reader's status when it ends is that of the split it read last.
        if was_idle {
            reader.idle = true;
            self.dropped_final_watermarks += 1;
        } else {
            reader.idle = false;
            reader.finished_with_max = true;
        }
    }

    /// A bounded source ended: readers that were assigned no partition get "no more splits"
    /// and end too, with the maximum watermark (dropped if they are idle by then).
    pub fn on_source_finished(&mut self, now: i64) {
        self.mark_idle(now);
        for r in &mut self.readers {
            if r.splits.is_empty() && !r.finished {
                r.finished = true;
                if r.idle {
                    self.dropped_final_watermarks += 1;
                } else {
                    r.finished_with_max = true;
                }
            }
        }
    }

    /// The combined watermark at `now`: the minimum over readers that are active, each the
    /// minimum over its active splits; it never goes back, and it stays put while every reader
    /// is idle.
    pub fn advance(&mut self, now: i64) -> i64 {
        self.mark_idle(now);
        let partitions = &self.partitions;
        let active = self
            .readers
            .iter()
            .filter(|r| !r.idle)
            .map(|r| {
                if r.finished_with_max {
                    return i64::MAX;
                }
                r.splits
                    .iter()
                    .map(|s| &partitions[*s])
                    .filter(|p| !p.idle && !p.finished)
                    .map(|p| p.generator.current())
                    .min()
                    // An active reader without splits holds the watermark at its start.
                    .unwrap_or(i64::MIN)
            })
            .min();
        if let Some(min) = active {
            self.emitted = self.emitted.max(min);
        }
        self.emitted
    }

    pub fn emitted(&self) -> i64 {
        self.emitted
    }

    /// The newest event time seen on any partition.
    pub fn max_event_time(&self) -> i64 {
        self.partitions
            .iter()
            .map(|p| p.generator.max_event_time())
            .max()
            .unwrap_or(i64::MIN)
    }

    /// Processing time of each partition's last record (or of the start, for none yet).
    pub fn last_record_times(&self) -> Vec<i64> {
        self.partitions.iter().map(|p| p.last_record_at).collect()
    }

    pub fn idle_partitions(&self) -> usize {
        self.partitions.iter().filter(|p| p.idle).count()
    }

    /// Readers the valve currently ignores as idle.
    /// Every reader is idle: the source sends `WatermarkStatus.IDLE` downstream.
    pub fn all_idle(&self) -> bool {
        self.readers.iter().all(|r| r.idle)
    }

    pub fn idle_readers(&self) -> usize {
        self.readers.iter().filter(|r| r.idle).count()
    }

    /// Readers that were assigned no partition (parallelism above the partition count).
    pub fn readers_without_partitions(&self) -> usize {
        self.readers.iter().filter(|r| r.splits.is_empty()).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn watermark_trails_max_event_time_and_never_goes_back() {
        let mut wm = BoundedOutOfOrderness::new(5);
        let mut last = wm.current();
        for t in [100, 90, 120, 119, 200] {
            wm.on_event(t);
            assert!(wm.current() >= last);
            last = wm.current();
        }
        assert_eq!(wm.current(), 200 - 5 - 1);
    }

    #[test]
    fn the_valve_forwards_the_minimum_over_partitions() {
        let mut v = WatermarkValve::new(2, 0, None, 0);
        v.on_record(0, 100, 1);
        assert_eq!(v.advance(1), i64::MIN, "partition 1 has seen nothing yet");
        v.on_record(1, 50, 2);
        assert_eq!(v.advance(2), 49);
        v.on_record(1, 300, 3);
        assert_eq!(v.advance(3), 99);
    }

    #[test]
    fn trap_an_idle_partition_without_idleness_holds_the_watermark_back_forever() {
        let mut v = WatermarkValve::new(3, 0, None, 0);
        for t in 0..10_000 {
            v.on_record(0, t, t);
            v.on_record(1, t, t);
        }
        // Partition 2 never gets a record: the watermark never moves.
        assert_eq!(v.advance(10_000), i64::MIN);
        // With idleness, the silent partition stops holding it back.
        let mut fixed = WatermarkValve::new(3, 0, Some(60_000), 0);
        for t in 0..100_000 {
            fixed.on_record(0, t, t);
            fixed.on_record(1, t, t);
        }
        assert_eq!(fixed.advance(100_000), 99_998);
        assert_eq!(fixed.idle_partitions(), 1);
    }

    #[test]
    fn trap_idleness_shorter_than_the_end_of_a_bounded_partition_drops_its_final_watermark() {
        // Both partitions read their last record at t = 1000 and report their end 2 s later.
        let run = |idleness: i64| {
            let mut v = WatermarkValve::new(2, 0, Some(idleness), 0);
            for t in 0..=1_000 {
                v.on_record(0, t, t);
                v.on_record(1, t, t);
                v.advance(t);
            }
            v.on_partition_finished(0, 3_000);
            v.on_partition_finished(1, 3_000);
            (v.advance(3_000), v.dropped_final_watermarks)
        };
        // 1 s idleness: both are idle when they finish, both final watermarks are dropped.
        assert_eq!(run(1_000), (999, 2));
        // 60 s idleness: the final maximum watermark gets through.
        assert_eq!(run(60_000), (i64::MAX, 0));
    }

    #[test]
    fn partitions_go_to_readers_as_flinks_kafka_enumerator_assigns_them() {
        // Golden values from Flink's formula run on the JVM for topic "events".
        let owners = |readers| {
            (0..4)
                .map(|p| split_owner(TOPIC, p, readers))
                .collect::<Vec<_>>()
        };
        assert_eq!(owners(6), [5, 0, 1, 2]);
        assert_eq!(owners(3), [2, 0, 1, 2]);
    }

    #[test]
    fn readers_beyond_the_partition_count_hold_the_watermark_back_without_idleness() {
        let feed = |v: &mut WatermarkValve| {
            for t in 0..100_000 {
                for p in 0..4 {
                    v.on_record(p, t, t);
                }
            }
            v.advance(100_000)
        };
        // 6 readers, 4 partitions: two readers get no partition and never see a record.
        let mut stuck = WatermarkValve::with_readers(4, 6, 0, None, 0);
        assert_eq!(stuck.readers_without_partitions(), 2);
        assert_eq!(feed(&mut stuck), i64::MIN);
        let mut fixed = WatermarkValve::with_readers(4, 6, 0, Some(60_000), 0);
        assert_eq!(feed(&mut fixed), 99_998);
        assert_eq!(fixed.idle_readers(), 2);
        // Fewer readers than partitions: the minimum over all partitions still rules.
        let mut shared = WatermarkValve::with_readers(4, 2, 0, None, 0);
        for p in 0..4 {
            shared.on_record(p, 1_000 * (p as i64 + 1), 0);
        }
        assert_eq!(shared.advance(0), 999);
    }

    #[test]
    fn a_reader_ends_with_its_last_partition() {
        // Two partitions on one reader: the first to finish releases its split, the reader's
        // final maximum watermark comes only with the second.
        let mut v = WatermarkValve::with_readers(2, 1, 0, Some(60_000), 0);
        v.on_record(0, 500, 0);
        v.on_record(1, 100, 0);
        v.on_partition_finished(1, 10);
        assert_eq!(
            v.advance(10),
            499,
            "the finished split no longer holds it back"
        );
        v.on_partition_finished(0, 20);
        assert_eq!(v.advance(20), i64::MAX);
        assert_eq!(v.dropped_final_watermarks, 0);
    }

    proptest! {
        #[test]
        fn watermarks_never_go_back(
            ops in proptest::collection::vec((0usize..4, 0i64..10_000, 0u8..10), 1..400),
            idleness in proptest::option::of(1i64..5_000),
            readers in 1usize..7,
        ) {
            let mut v = WatermarkValve::with_readers(4, readers, 100, idleness, 0);
            let mut now = 0;
            let mut last = v.emitted();
            for (partition, event_time, action) in ops {
                now += 17;
                match action {
                    0 => v.on_partition_finished(partition, now),
                    1..=2 => { prop_assert!(v.advance(now) >= last); }
                    _ => v.on_record(partition, event_time, now),
                }
                let wm = v.advance(now);
                prop_assert!(wm >= last, "{} < {}", wm, last);
                // The valve never runs ahead of a partition it waits for: an active partition
                // that has not finished never sees the combined watermark pass its own.
                for (i, p) in v.partitions.iter().enumerate() {
                    if !p.idle && !p.finished && !v.readers[v.reader_of[i]].idle {
                        prop_assert!(wm <= p.generator.current().max(last), "valve ahead of a partition");
                    }
                }
                last = wm;
            }
        }
    }
}
