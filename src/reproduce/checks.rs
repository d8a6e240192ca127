//! What a case study's proof checks: a metric of the run's summary and the way the fix must
//! move it (read by the miniature proofs and by their production-size versions alike).

use crate::summary::Summary;

/// A metric the case study cites and the way it must move.
pub struct Check {
    pub metric: &'static str,
    pub read: fn(&Summary) -> f64,
    pub must: Move,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Move {
    Down,
    /// Up by at least this many points (of a percentage).
    UpBy(f64),
    /// Down by at least this factor (before / after).
    DownBy(f64),
    /// Up, or down by less than this much: a figure the miniature cannot move far.
    UpOrWithin(f64),
}

impl Move {
    pub(super) fn holds(self, before: f64, after: f64) -> bool {
        match self {
            Move::Down => after < before,
            Move::UpBy(d) => after >= before + d,
            Move::DownBy(f) => before > 0.0 && after * f <= before,
            Move::UpOrWithin(tol) => after > before - tol,
        }
    }

    pub(super) fn describe(self) -> String {
        match self {
            Move::Down => "down".to_string(),
            Move::UpBy(d) => format!("up {d} points or more"),
            Move::DownBy(f) => format!("down {f:.0}x or more"),
            Move::UpOrWithin(tol) => format!("up, or down < {tol}"),
        }
    }
}

pub(super) fn cache_hit_percent(s: &Summary) -> f64 {
    s.cache_hit_rate.overall.map_or(f64::NAN, |r| r * 100.0)
}

/// Case study 3's evidence at either scale: the active levels, and the seed's estimate of
/// write amplification from them (measured write amplification is shown, not gated).
pub const LEVEL_CHECKS: &[Check] = &[
    Check {
        metric: "active levels (max)",
        read: |s| f64::from(s.active_levels_max),
        must: Move::Down,
    },
    Check {
        metric: "write amp., seed's estimate",
        // The seed's formula with its multiplier, 10 (also the profiles').
        read: |s| 10.0 * f64::from(s.active_levels_max.saturating_sub(1)),
        must: Move::Down,
    },
];
