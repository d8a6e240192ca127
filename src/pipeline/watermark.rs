//! Event-time watermarks: per partition bounded out-of-orderness with idleness, and the valve
//! that forwards the minimum over active partitions, as Flink's Kafka source and
//! `StatusWatermarkValve` do.
//!
//! Processing time (for idleness) is whatever clock the caller passes as `now`; the engine uses
//! a replay clock so that runs are reproducible.

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
    /// The partition reached its end and its final maximum watermark got through.
    finished_with_max: bool,
    finished: bool,
}

/// Per-partition watermarks combined into the operator's watermark.
#[derive(Debug, Clone)]
pub struct WatermarkValve {
    partitions: Vec<Partition>,
    idleness: Option<i64>,
    emitted: i64,
    /// Final maximum watermarks dropped because their partition was idle.
    pub dropped_final_watermarks: u64,
}

impl WatermarkValve {
    /// `idleness`: mark a partition idle after this much processing time without records
    /// (`WatermarkStrategy::withIdleness`); None never marks one idle.
    pub fn new(
        partitions: usize,
        out_of_orderness_ms: i64,
        idleness: Option<i64>,
        now: i64,
    ) -> Self {
        WatermarkValve {
            partitions: (0..partitions)
                .map(|_| Partition {
                    generator: BoundedOutOfOrderness::new(out_of_orderness_ms),
                    last_record_at: now,
                    idle: false,
                    finished_with_max: false,
                    finished: false,
                })
                .collect(),
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
        }
    }

    fn mark_idle(&mut self, now: i64) {
        if let Some(idleness) = self.idleness {
            for p in &mut self.partitions {
                // Flink's IdlenessTimer: idle once strictly more than the timeout has passed.
                if !p.finished_with_max && now.saturating_sub(p.last_record_at) > idleness {
                    p.idle = true;
                }
            }
        }
    }

    /// A bounded partition reached its end offset and emits the maximum watermark. If it has
    /// been marked idle by then, the valve drops that watermark (the seed's idleness trap).
    pub fn on_partition_finished(&mut self, partition: usize, now: i64) {
        self.mark_idle(now);
        let Some(p) = self.partitions.get_mut(partition) else {
            return;
        };
        if p.finished {
            return;
        }
        p.finished = true;
        if p.idle {
            self.dropped_final_watermarks += 1;
        } else {
            p.finished_with_max = true;
        }
    }

    /// The combined watermark at `now`: the minimum over partitions that are active; it never
    /// goes back, and it stays put while every partition is idle.
    pub fn advance(&mut self, now: i64) -> i64 {
        self.mark_idle(now);
        let active = self
            .partitions
            .iter()
            .filter(|p| !p.idle)
            .map(|p| {
                if p.finished_with_max {
                    i64::MAX
                } else {
                    p.generator.current()
                }
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

    proptest! {
        #[test]
        fn watermarks_never_go_back(
            ops in proptest::collection::vec((0usize..4, 0i64..10_000, 0u8..10), 1..400),
            idleness in proptest::option::of(1i64..5_000),
        ) {
            let mut v = WatermarkValve::new(4, 100, idleness, 0);
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
                for p in &v.partitions {
                    if !p.idle && !p.finished {
                        prop_assert!(wm <= p.generator.current().max(last), "valve ahead of a partition");
                    }
                }
                last = wm;
            }
        }
    }
}
