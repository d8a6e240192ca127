//! Event-time watermarks: bounded out-of-orderness over the events seen so far.

/// Flink's `BoundedOutOfOrdernessWatermarks`: watermark = max event time - out-of-orderness - 1.
#[derive(Debug, Clone)]
pub struct BoundedOutOfOrderness {
    max_seen: i64,
    out_of_orderness: i64,
    emitted: i64,
}

impl BoundedOutOfOrderness {
    pub fn new(out_of_orderness_ms: i64) -> Self {
        // Start so that the first watermark is Long.MIN_VALUE-like without overflowing.
        BoundedOutOfOrderness {
            max_seen: i64::MIN + out_of_orderness_ms + 1,
            out_of_orderness: out_of_orderness_ms,
            emitted: i64::MIN,
        }
    }

    pub fn on_event(&mut self, event_time: i64) {
        self.max_seen = self.max_seen.max(event_time);
    }

    pub fn current(&self) -> i64 {
        self.max_seen - self.out_of_orderness - 1
    }

    /// Emits the current watermark downstream and remembers it.
    pub fn emit(&mut self) -> i64 {
        self.emitted = self.emitted.max(self.current());
        self.emitted
    }

    /// The last watermark emitted (`i64::MIN` before the first).
    pub fn emitted(&self) -> i64 {
        self.emitted
    }

    pub fn max_event_time(&self) -> i64 {
        self.max_seen
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
