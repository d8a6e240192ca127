//! How tune orders what it measured: a candidate's objective, higher the better, and a paced
//! workload's rate, at which events/s stops telling candidates apart.

use super::measured::{Measured, Tried};
use crate::commands::Job;
use crate::summary::scorecard::{self, Figure};

/// A paced workload's rate, which bounds its events/s.
pub(super) struct Pace(Option<f64>);

impl Pace {
    pub(super) fn of(job: &Job, start: &Measured) -> Pace {
        Pace(match job.workload.spec.rate {
            crate::config::workload::Rate::PerSecond(rate) if start.scorecard.paced => {
                Some(rate as f64)
            }
            _ => None,
        })
    }

    /// Whether `m`'s median run kept the rate (within the timing floor).
    pub(super) fn kept_by(&self, m: &Measured) -> bool {
        self.0
            .is_some_and(|rate| m.summary.events_per_sec >= rate * (1.0 - scorecard::TIMING_FLOOR))
    }

    /// `x` against `y` by `objective`, the better one greater: events/s at the
    /// rate or above counts as the rate (runs that keep it differ only by noise), then CPU per
    /// event decides. Case study 1 paced at 10,000 events/s: two write-buffer fixes both ran
    /// at the rate, one at 63 µs of CPU per event and 10 % more live SST, the other at 75 µs
    /// and 34 % more; events/s alone left the choice to noise.
    pub(super) fn order(&self, x: &Tried, y: &Tried, objective: Figure) -> std::cmp::Ordering {
        let (x, y) = (self.rank(x, objective), self.rank(y, objective));
        x.0.total_cmp(&y.0).then(x.1.total_cmp(&y.1))
    }

    fn rank(&self, t: &Tried, objective: Figure) -> (f64, f64) {
        let Some(m) = &t.measured else {
            return (f64::MIN, f64::MIN);
        };
        let first = match (objective, self.0) {
            (Figure::EventsPerSec, Some(rate)) => m
                .scorecard
                .median(objective)
                .map(|v| v.min(rate * (1.0 - scorecard::TIMING_FLOOR))),
            _ => oriented(t, objective),
        };
        let cpu = m.scorecard.median(Figure::CpuPerEvent).map(|v| -v);
        (first.unwrap_or(f64::MIN), cpu.unwrap_or(f64::MIN))
    }
}

/// A candidate's objective median, higher the better whichever way the figure is better.
pub fn oriented(t: &Tried, objective: Figure) -> Option<f64> {
    t.measured
        .as_ref()
        .and_then(|m| m.scorecard.median(objective))
        .map(|v| match objective.better() {
            scorecard::Better::Higher => v,
            scorecard::Better::Lower => -v,
        })
}
