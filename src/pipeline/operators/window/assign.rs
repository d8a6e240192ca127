//! Flink's `TimeWindow` and its event-time assigners, and the iteration order of a Java
//! `HashSet<TimeWindow>` (it decides which state window survives a session merge and in which
//! order merged windows' timers are deleted).

use crate::config::job::window::Assigner;

/// Flink's `TimeWindow`: `[start, end)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TimeWindow {
    pub start: i64,
    pub end: i64,
}

/// Bytes of a serialized `TimeWindow` (`TimeWindow.Serializer`: start, end as longs).
pub const WINDOW_BYTES: usize = 16;

impl TimeWindow {
    pub fn new(start: i64, end: i64) -> TimeWindow {
        TimeWindow { start, end }
    }

    /// `TimeWindow.maxTimestamp()`: `end - 1`.
    pub fn max_timestamp(&self) -> i64 {
        self.end.wrapping_sub(1)
    }

    /// `TimeWindow.intersects`: `start <= other.end && end >= other.start` (touching windows
    /// intersect).
    pub fn intersects(&self, other: &TimeWindow) -> bool {
        self.start <= other.end && self.end >= other.start
    }

    /// `TimeWindow.cover`.
    pub fn cover(&self, other: &TimeWindow) -> TimeWindow {
        TimeWindow::new(self.start.min(other.start), self.end.max(other.end))
    }

    /// `TimeWindow.Serializer.serialize`: start then end, 8 bytes big-endian each. This is the
    /// namespace of the window's state and timers (fixed length: Flink writes no length
    /// suffix after it).
    pub fn to_bytes(&self) -> [u8; WINDOW_BYTES] {
        let mut out = [0u8; WINDOW_BYTES];
        out[..8].copy_from_slice(&self.start.to_be_bytes());
        out[8..].copy_from_slice(&self.end.to_be_bytes());
        out
    }

    pub fn from_bytes(bytes: &[u8]) -> Option<TimeWindow> {
        if bytes.len() != WINDOW_BYTES {
            return None;
        }
        let long = |at: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&bytes[at..at + 8]);
            i64::from_be_bytes(b)
        };
        Some(TimeWindow::new(long(0), long(8)))
    }

    /// `TimeWindow.hashCode()`: `MathUtils.longToIntWithBitMixing(start + end)`.
    pub fn java_hash(&self) -> i32 {
        let mut x = self.start.wrapping_add(self.end) as u64;
        x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        x ^= x >> 31;
        x as i32
    }
}

/// `TimeWindow.getWindowStartWithOffset`.
pub fn window_start_with_offset(timestamp: i64, offset: i64, size: i64) -> i64 {
    let remainder = timestamp.wrapping_sub(offset) % size;
    if remainder < 0 {
        timestamp - (remainder + size)
    } else {
        timestamp - remainder
    }
}

/// The windows `assigner.assignWindows` gives an element, in Flink's order.
pub fn assign_windows(assigner: &Assigner, timestamp: i64, out: &mut Vec<TimeWindow>) {
    out.clear();
    match *assigner {
        // TumblingEventTimeWindows.assignWindows (WindowStagger.ALIGNED: no stagger offset).
        Assigner::Tumbling { size, offset } => {
            let start = window_start_with_offset(timestamp, offset % size, size);
            out.push(TimeWindow::new(start, start + size));
        }
        // SlidingEventTimeWindows.assignWindows: the latest start first.
        Assigner::Sliding {
            size,
            slide,
            offset,
        } => {
            let last_start = window_start_with_offset(timestamp, offset, slide);
            let mut start = last_start;
            while start > timestamp - size {
                out.push(TimeWindow::new(start, start + size));
                start -= slide;
            }
        }
        // EventTimeSessionWindows.assignWindows.
        Assigner::Session { gap } => out.push(TimeWindow::new(timestamp, timestamp + gap)),
    }
}

/// `WindowOperator.cleanupTime` for an event-time assigner: `maxTimestamp + allowedLateness`,
/// or `Long.MAX_VALUE` when that overflows.
pub fn cleanup_time(window: &TimeWindow, allowed_lateness: i64) -> i64 {
    let max = window.max_timestamp();
    let cleanup = max.wrapping_add(allowed_lateness);
    if cleanup >= max { cleanup } else { i64::MAX }
}

/// The order a Java `HashSet<TimeWindow>` built by adding `inserted` (in that order, duplicates
/// by equality dropped) iterates in: by bucket `(h ^ h >>> 16) & (capacity - 1)`, insertion
/// order within a bucket (a resize keeps it), the table growing from 16 buckets at a load of
/// 0.75. (Buckets of 8 or more, where Java builds a tree, cannot occur: a session merge takes
/// at most three windows.)
pub fn java_hash_set_order(inserted: &[TimeWindow]) -> Vec<TimeWindow> {
    let mut distinct: Vec<TimeWindow> = Vec::with_capacity(inserted.len());
    for w in inserted {
        if !distinct.contains(w) {
            distinct.push(*w);
        }
    }
    let mut capacity = 16usize;
    while distinct.len() > capacity * 3 / 4 {
        capacity *= 2;
    }
    let bucket = |w: &TimeWindow| {
        let h = w.java_hash() as u32;
        ((h ^ (h >> 16)) as usize) & (capacity - 1)
    };
    let mut order: Vec<(usize, usize, TimeWindow)> = distinct
        .into_iter()
        .enumerate()
        .map(|(i, w)| (bucket(&w), i, w))
        .collect();
    order.sort_by_key(|(b, i, _)| (*b, *i));
    order.into_iter().map(|(_, _, w)| w).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn assigners_give_flinks_windows() {
        let mut out = Vec::new();
        assign_windows(
            &Assigner::Tumbling {
                size: 10,
                offset: 0,
            },
            25,
            &mut out,
        );
        assert_eq!(out, [TimeWindow::new(20, 30)]);
        assign_windows(
            &Assigner::Tumbling {
                size: 10,
                offset: 3,
            },
            -5,
            &mut out,
        );
        assert_eq!(out, [TimeWindow::new(-7, 3)]);
        assign_windows(
            &Assigner::Sliding {
                size: 10,
                slide: 5,
                offset: 0,
            },
            12,
            &mut out,
        );
        assert_eq!(out, [TimeWindow::new(10, 20), TimeWindow::new(5, 15)]);
        assign_windows(
            &Assigner::Sliding {
                size: 10,
                slide: 5,
                offset: 0,
            },
            10,
            &mut out,
        );
        assert_eq!(out, [TimeWindow::new(10, 20), TimeWindow::new(5, 15)]);
        assign_windows(&Assigner::Session { gap: 30 }, 100, &mut out);
        assert_eq!(out, [TimeWindow::new(100, 130)]);
        assert_eq!(TimeWindow::new(100, 130).max_timestamp(), 129);
    }

    #[test]
    fn window_helpers_match_flink() {
        let w = TimeWindow::new(0, 30);
        assert!(
            w.intersects(&TimeWindow::new(30, 60)),
            "touching windows intersect"
        );
        assert!(!w.intersects(&TimeWindow::new(31, 60)));
        assert_eq!(w.cover(&TimeWindow::new(20, 50)), TimeWindow::new(0, 50));
        assert_eq!(cleanup_time(&w, 0), 29);
        assert_eq!(cleanup_time(&w, 10), 39);
        assert_eq!(cleanup_time(&TimeWindow::new(0, i64::MAX), 10), i64::MAX);
        let bytes = TimeWindow::new(1, -1).to_bytes();
        assert_eq!(
            bytes,
            [
                0, 0, 0, 0, 0, 0, 0, 1, 255, 255, 255, 255, 255, 255, 255, 255
            ]
        );
        assert_eq!(TimeWindow::from_bytes(&bytes), Some(TimeWindow::new(1, -1)));
        // TimeWindow.hashCode() on the JVM (Flink 1.20.1).
        for (start, end, hash) in [
            (0, 30, 1_775_512_178),
            (100, 130, -627_143_563),
            (-5, 25, 1_382_288_114),
            (1_767_225_600_000, 1_767_227_400_000, 2_009_779_167),
        ] {
            assert_eq!(
                TimeWindow::new(start, end).java_hash(),
                hash,
                "{start}..{end}"
            );
        }
    }

    #[test]
    fn hash_set_order_is_by_bucket_then_insertion() {
        let ws: Vec<TimeWindow> = (0..5).map(|i| TimeWindow::new(i * 7, i * 7 + 30)).collect();
        let order = java_hash_set_order(&ws);
        assert_eq!(order.len(), 5);
        // A java.util.HashSet of the same windows iterates (JVM): 14 28 0 21 7.
        let starts: Vec<i64> = order.iter().map(|w| w.start).collect();
        assert_eq!(starts, [14, 28, 0, 21, 7]);
        // 20 windows: the table has grown to 32 buckets.
        let ws: Vec<TimeWindow> = (0..20)
            .map(|i| TimeWindow::new(i * 1000, i * 1000 + 1_800_000))
            .collect();
        let starts: Vec<i64> = java_hash_set_order(&ws)
            .iter()
            .map(|w| w.start / 1000)
            .collect();
        assert_eq!(
            starts,
            [
                1, 18, 0, 10, 13, 17, 14, 11, 5, 16, 6, 19, 12, 2, 3, 15, 7, 4, 8, 9
            ]
        );
        // Duplicates are dropped.
        assert_eq!(java_hash_set_order(&[ws[0], ws[0]]), [ws[0]]);
    }
}
