//! Running time: a run's clock that stops while the run is paused.

use std::time::{Duration, Instant};

/// Wall time since the run started, and how much of it the run spent paused.
#[derive(Debug, Clone)]
pub struct RunClock {
    started: Instant,
    paused: Duration,
    paused_since: Option<Instant>,
}

impl RunClock {
    pub fn start(now: Instant) -> RunClock {
        RunClock {
            started: now,
            paused: Duration::ZERO,
            paused_since: None,
        }
    }

    /// Wall time since the start, paused time included.
    pub fn wall(&self, now: Instant) -> Duration {
        now.saturating_duration_since(self.started)
    }

    /// Time spent running: wall time less every pause (the current one too).
    pub fn running(&self, now: Instant) -> Duration {
        let current = self
            .paused_since
            .map_or(Duration::ZERO, |since| now.saturating_duration_since(since));
        self.wall(now).saturating_sub(self.paused + current)
    }

    /// Everything up to `now` was preparation (a preload's build and load), not running time:
    /// --duration and the rates count from here.
    pub fn prepared(&mut self, now: Instant) {
        self.paused += self.running(now);
    }

    pub fn pause(&mut self, now: Instant) {
        if self.paused_since.is_none() {
            self.paused_since = Some(now);
        }
    }

    pub fn resume(&mut self, now: Instant) {
        if let Some(since) = self.paused_since.take() {
            self.paused += now.saturating_duration_since(since);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paused_time_is_not_running_time() {
        let t0 = Instant::now();
        let s = Duration::from_secs;
        let mut clock = RunClock::start(t0);
        clock.pause(t0 + s(2));
        assert_eq!(clock.running(t0 + s(5)), s(2), "the current pause counts");
        // A second pause while paused changes nothing.
        clock.pause(t0 + s(4));
        clock.resume(t0 + s(7));
        assert_eq!(clock.running(t0 + s(10)), s(5));
        assert_eq!(clock.wall(t0 + s(10)), s(10));
        // Resuming a running clock changes nothing.
        clock.resume(t0 + s(11));
        assert_eq!(clock.running(t0 + s(12)), s(7));
        clock.prepared(t0 + s(13));
        assert_eq!(
            clock.running(t0 + s(15)),
            s(2),
            "preparation is not running time"
        );
    }
}
