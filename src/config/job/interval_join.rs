//! `kind: interval-join`: Flink's `IntervalJoinOperator` (`KeyedStream.intervalJoin(other)
//! .between(lower, upper)`), two inputs joined per key on event time.
//!
//! ```yaml
//! job:
//!   kind: interval-join
//!   lower: -5s            # a right element joins a left one at t when its time is in
//!   upper: 10s            # [t + lower, t + upper]
//!   lower-inclusive: true # default true, as Flink's between(); false = lowerBoundExclusive()
//!   upper-inclusive: true
//!   right-share: 0.5      # share of the generated events on the right input
//!   sources: two          # a source per input (default with `inputs:`), or one split in two
//!   read: alternate       # both inputs backed up: one element of each in turn (default), or
//!                         # arrival: the log's order (the join keeps up)
//! ```

use std::fmt;
use std::ops::Range;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::config::Millis;

/// A signed duration in milliseconds: `-5s`, `10s`, `+1m`, `0`, or a bare integer (ms).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SignedMillis(pub i64);

impl SignedMillis {
    /// `Millis`'s units with an optional sign; None for anything else or beyond an i64.
    pub fn parse(text: &str) -> Option<SignedMillis> {
        let text = text.trim();
        let (negative, magnitude) = match text.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, text.strip_prefix('+').unwrap_or(text)),
        };
        if magnitude.starts_with(['-', '+']) {
            return None;
        }
        let ms = i64::try_from(Millis::parse(magnitude)?.0).ok()?;
        Some(SignedMillis(if negative { -ms } else { ms }))
    }
}

impl fmt::Display for SignedMillis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sign = if self.0 < 0 { "-" } else { "" };
        write!(f, "{sign}{}", Millis(self.0.unsigned_abs()))
    }
}

#[derive(Deserialize)]
#[serde(untagged)]
enum NumberOrText {
    Number(i64),
    Text(String),
}

impl<'de> Deserialize<'de> for SignedMillis {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match NumberOrText::deserialize(deserializer)? {
            NumberOrText::Number(ms) => Ok(SignedMillis(ms)),
            NumberOrText::Text(text) => SignedMillis::parse(&text).ok_or_else(|| {
                serde::de::Error::custom(format!(
                    "invalid duration '{text}' (expected a signed number with a unit: ms, s, m, h, d; e.g. '-5s', '10s')"
                ))
            }),
        }
    }
}

impl Serialize for SignedMillis {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.to_string())
    }
}

fn yes() -> bool {
    true
}

fn half() -> f64 {
    0.5
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct IntervalJoinSpec {
    /// A right element at `r` joins a left element at `l` when `l + lower <= r <= l + upper`.
    pub lower: SignedMillis,
    pub upper: SignedMillis,
    /// False: `lowerBoundExclusive()` (`l + lower < r`).
    #[serde(default = "yes")]
    pub lower_inclusive: bool,
    /// False: `upperBoundExclusive()` (`r < l + upper`).
    #[serde(default = "yes")]
    pub upper_inclusive: bool,
    /// Share (0..1, both excluded) of the generated events that go to the right input; a
    /// trace's `input` column decides instead.
    #[serde(default = "half")]
    pub right_share: f64,
    /// Where the two inputs come from: a source each (two topics: each input's watermark is
    /// its own source's), or one source whose records a filter splits in two (its watermarks
    /// reach both inputs). None: two with the workload's `inputs:`, else one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sources: Option<JoinSources>,
    /// The order the join's task reads its two inputs in.
    #[serde(default)]
    pub read: ReadOrder,
}

/// Where an interval join's two inputs come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum JoinSources {
    /// `source.filter(left)` and `source.filter(right)`: one source's records and watermarks.
    One,
    /// Two sources (e.g. two topics), each with its own watermarks.
    Two,
}

/// The order a two-input task reads its inputs in (docs/notes/flink-two-inputs.md).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReadOrder {
    /// Both inputs backed up (the join is the bottleneck, as in a backfill): Flink's
    /// `StreamMultipleInputProcessor` takes one element (record or watermark) from each input
    /// in turn, the first input first; an input with nothing buffered is skipped. Deterministic.
    #[default]
    Alternate,
    /// The order the records were written to the log (the join keeps up with its sources).
    Arrival,
}

/// The largest bound (about 73 million years, as the workload's time limits): event time plus
/// a bound stays far from i64's ends.
const BOUND_LIMIT: u64 = (i64::MAX / 4) as u64;

/// The result slots, in slot order.
pub const LABELS: [&str; 2] = ["pairs", "digest"];

impl IntervalJoinSpec {
    /// Flink's checks (`IntervalJoinOperator`'s constructor: `lowerBound <= upperBound`), an
    /// interval that exclusive bounds leave empty, and a join without two inputs.
    pub fn validate(&self) -> Result<(), String> {
        for (field, bound) in [("lower", self.lower), ("upper", self.upper)] {
            if bound.0.unsigned_abs() > BOUND_LIMIT {
                return Err(format!(
                    "job.{field} ({bound}) must be within {} of 0",
                    SignedMillis(BOUND_LIMIT as i64)
                ));
            }
        }
        if self.lower > self.upper {
            return Err(format!(
                "job.lower ({}) must not exceed job.upper ({})",
                self.lower, self.upper
            ));
        }
        let (lower, upper) = self.effective_bounds();
        if lower > upper {
            return Err(format!(
                "job.lower ({}) and job.upper ({}) with job.lower-inclusive: {} and \
                 job.upper-inclusive: {} admit no time difference at all, so nothing would ever \
                 join: widen the bounds or make them inclusive",
                self.lower, self.upper, self.lower_inclusive, self.upper_inclusive
            ));
        }
        if !(self.right_share > 0.0 && self.right_share < 1.0) {
            return Err(format!(
                "job.right-share ({}) must be between 0 and 1, both excluded: an interval join \
                 needs events on both of its inputs (0 puts every event on the left, 1 every \
                 event on the right)",
                self.right_share
            ));
        }
        Ok(())
    }

    /// The partitions of each input, (left, right), of the workload's `partitions`: the
    /// first `left` (the workload's `inputs:`), or else the last `round(partitions ×
    /// right-share)` carry the right input, at least one each.
    pub fn input_partitions(&self, partitions: u32, left: Option<u32>) -> (Range<u32>, Range<u32>) {
        let split = match left {
            Some(left) => left.min(partitions),
            None => {
                let right = ((f64::from(partitions) * self.right_share).round() as u32)
                    .clamp(1, partitions.saturating_sub(1).max(1));
                partitions.saturating_sub(right)
            }
        };
        (0..split, split..partitions)
    }

    /// A join needs a partition for each input, and one that carries records.
    pub fn validate_partitions(
        &self,
        partitions: u32,
        left: Option<u32>,
        idle: &[u32],
    ) -> Result<(), String> {
        if partitions < 2 {
            return Err(format!(
                "'partitions' is {partitions} but an interval join needs at least 2: each \
                 input has partitions of its own"
            ));
        }
        let (left, right) = self.input_partitions(partitions, left);
        for (name, range) in [("left", left), ("right", right)] {
            if range.clone().all(|p| idle.contains(&p)) {
                return Err(format!(
                    "'idle-partitions' leaves the {name} input of the interval join (partitions \
                     {}..={}) no partition to carry records",
                    range.start,
                    range.end - 1
                ));
            }
        }
        Ok(())
    }

    /// `pairs`, `digest`.
    pub fn result_labels(&self) -> Vec<String> {
        LABELS.iter().map(|l| l.to_string()).collect()
    }

    /// The bounds as `IntervalJoinOperator` keeps them: an exclusive lower bound moved up by
    /// one ms, an exclusive upper bound down by one, so both are inclusive afterwards.
    pub fn effective_bounds(&self) -> (i64, i64) {
        let lower = if self.lower_inclusive {
            self.lower.0
        } else {
            self.lower.0.wrapping_add(1)
        };
        let upper = if self.upper_inclusive {
            self.upper.0
        } else {
            self.upper.0.wrapping_sub(1)
        };
        (lower, upper)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(yaml: &str) -> Result<IntervalJoinSpec, String> {
        serde_norway::from_str::<IntervalJoinSpec>(yaml).map_err(|e| e.to_string())
    }

    #[test]
    fn signed_durations_parse_and_print_back() {
        assert_eq!(SignedMillis::parse("-5s"), Some(SignedMillis(-5_000)));
        assert_eq!(SignedMillis::parse("+1m"), Some(SignedMillis(60_000)));
        assert_eq!(SignedMillis::parse("250ms"), Some(SignedMillis(250)));
        assert_eq!(SignedMillis::parse("0"), Some(SignedMillis(0)));
        assert_eq!(SignedMillis::parse("--5s"), None);
        assert_eq!(SignedMillis::parse("-"), None);
        assert_eq!(SignedMillis::parse("5 lightyears"), None);
        assert_eq!(SignedMillis::parse("99999999999999999999ms"), None);
        for ms in [-5_000, 0, 10_000, -90_000, 3_600_000] {
            let text = SignedMillis(ms).to_string();
            assert_eq!(SignedMillis::parse(&text), Some(SignedMillis(ms)), "{text}");
        }
        assert_eq!(SignedMillis(-5_000).to_string(), "-5s");
    }

    #[test]
    fn defaults_are_flinks_between() {
        let s = spec("lower: -5s\nupper: 10s\n").unwrap();
        assert!(s.lower_inclusive && s.upper_inclusive);
        assert_eq!(s.right_share, 0.5);
        assert_eq!(s.effective_bounds(), (-5_000, 10_000));
        assert_eq!(s.validate(), Ok(()));
        assert_eq!(s.result_labels(), ["pairs", "digest"]);
        let bare = spec("lower: -500\nupper: 500\n").unwrap();
        assert_eq!(
            (bare.lower, bare.upper),
            (SignedMillis(-500), SignedMillis(500))
        );
    }

    #[test]
    fn each_input_gets_partitions_of_its_own() {
        let mut s = spec("lower: 0s\nupper: 1s\n").unwrap();
        assert_eq!(s.input_partitions(2, None), (0..1, 1..2));
        assert_eq!(s.input_partitions(4, None), (0..2, 2..4));
        assert_eq!(s.input_partitions(5, None), (0..2, 2..5));
        s.right_share = 0.01;
        assert_eq!(s.input_partitions(8, None), (0..7, 7..8));
        s.right_share = 0.99;
        assert_eq!(s.input_partitions(8, None), (0..1, 1..8));
    }

    #[test]
    fn exclusive_bounds_move_inwards_as_in_flink() {
        let s = spec("lower: -5s\nupper: 10s\nlower-inclusive: false\nupper-inclusive: false\n")
            .unwrap();
        assert_eq!(s.effective_bounds(), (-4_999, 9_999));
    }

    #[test]
    fn bad_specs_name_the_field() {
        let err = spec("lower: 10s\nupper: 5s\n")
            .unwrap()
            .validate()
            .unwrap_err();
        assert_eq!(err, "job.lower (10s) must not exceed job.upper (5s)");
        let err = spec("lower: 0s\nupper: 0s\nupper-inclusive: false\n")
            .unwrap()
            .validate()
            .unwrap_err();
        assert!(err.contains("job.upper-inclusive: false"), "{err}");
        for share in ["0", "1", "1.5", "-0.1", ".nan"] {
            let err = spec(&format!("lower: 0s\nupper: 1s\nright-share: {share}\n"))
                .unwrap()
                .validate()
                .unwrap_err();
            assert!(err.starts_with("job.right-share ("), "{err}");
            assert!(err.contains("both of its inputs"), "{err}");
        }
        let err = spec("lower: -9223372036854775807\nupper: 1s\n")
            .unwrap()
            .validate()
            .unwrap_err();
        assert!(
            err.starts_with("job.lower (-9223372036854775807ms) must be within"),
            "{err}"
        );
        let s = spec("lower: 0s\nupper: 1s\n").unwrap();
        assert!(
            s.validate_partitions(1, None, &[])
                .unwrap_err()
                .contains("at least 2")
        );
        assert_eq!(s.validate_partitions(2, None, &[]), Ok(()));
        let err = s.validate_partitions(4, None, &[2, 3]).unwrap_err();
        assert!(
            err.contains("right input of the interval join (partitions 2..=3)"),
            "{err}"
        );
        let err = spec("lower: soon\nupper: 1s\n").unwrap_err();
        assert!(err.contains("invalid duration 'soon'"), "{err}");
        let err = spec("lower: 0s\nupper: 1s\nbound: 3\n").unwrap_err();
        assert!(err.contains("unknown field `bound`"), "{err}");
        let err = spec("lower: 0s\n").unwrap_err();
        assert!(err.contains("missing field `upper`"), "{err}");
    }

    #[test]
    fn a_workload_with_a_bad_join_names_the_file_and_the_field() {
        let load = |job: &str, partitions: u32, idle: &str| {
            let yaml = format!(
                "keys: {{count: 10}}\npartitions: {partitions}\n{idle}event-time: {{span: 1h}}\nevents: 100\njob:\n{job}"
            );
            let spec: crate::config::workload::WorkloadSpec =
                serde_norway::from_str(&yaml).unwrap();
            crate::config::Workload::from_spec("join", "join.yaml", spec).map(|_| ())
        };
        let ok = "  kind: interval-join\n  lower: -5s\n  upper: 5s\n";
        assert!(load(ok, 2, "").is_ok());
        for (job, partitions, idle, needle) in [
            (
                "  kind: interval-join\n  lower: 10s\n  upper: 5s\n",
                2,
                "",
                "job.lower (10s) must not exceed job.upper (5s)",
            ),
            (
                "  kind: interval-join\n  lower: 0s\n  upper: 5s\n  right-share: 0\n",
                2,
                "",
                "job.right-share (0) must be between 0 and 1",
            ),
            (
                ok,
                1,
                "",
                "'partitions' is 1 but an interval join needs at least 2",
            ),
            (
                ok,
                4,
                "idle-partitions: [0, 1]\n",
                "the left input of the interval join",
            ),
        ] {
            let err = load(job, partitions, idle).unwrap_err().to_string();
            assert!(err.contains("join.yaml"), "{err}");
            assert!(err.contains(needle), "{err}");
        }
    }
}
