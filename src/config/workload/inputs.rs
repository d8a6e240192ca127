//! `inputs:`: the two inputs of a two-input job (an interval join) as the generator makes them.
//! Each input has partitions of its own and its own value sizes; the second either takes a
//! share of the events (as the join's `right-share` shorthand says), or follows the first:
//! most of the first input's records get one record of the same key on the second some time
//! later (an order, then its payment), a share never does, and the second may have keys of its
//! own.
//!
//! ```yaml
//! partitions: 4
//! inputs:
//!   - name: orders
//!     partitions: 2
//!     value-size: 300
//!   - name: payments
//!     partitions: 2
//!     value-size: 150
//!     follows:
//!       unmatched: 0.03            # 3 % of the orders are never paid
//!       delay: {distribution: uniform, min: 30s, max: 8m}
//! ```

use serde::{Deserialize, Serialize};

use super::{MAX_VALUE_SIZE, ValueSize};
use crate::config::Millis;

/// One input of a two-input job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct InputSpec {
    /// What the summary calls it (`orders`); by default `left` and `right`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Its partitions: this many of the workload's, after those of the input before it.
    pub partitions: u32,
    /// Share of the generated events on this input (0..1), for inputs that do not follow.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub share: Option<f64>,
    /// Bytes of each of its events' values (the workload's `value-size` otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value_size: Option<ValueSize>,
    /// The second input's records follow the first's keys.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub follows: Option<Follows>,
}

/// How the second input follows the first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Follows {
    /// Share of the first input's records that get no record here (0..1).
    #[serde(default)]
    pub unmatched: f64,
    /// Records of keys of its own (keys the first input never has), per record of the first.
    #[serde(default)]
    pub own: f64,
    /// How much later its record is written to the log than the first input's (each record's
    /// event time then lags behind its write as the workload's out-of-orderness says, so in
    /// event time the gap is this delay give or take that lag).
    pub delay: Delay,
}

/// A delay drawn per record, never above `max`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "distribution", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Delay {
    /// Uniform between `min` and `max`.
    Uniform { min: Millis, max: Millis },
    /// `min` plus an exponential with mean `mean`, redrawn above `max`.
    #[serde(rename_all = "kebab-case")]
    Exponential {
        #[serde(default = "zero")]
        min: Millis,
        mean: Millis,
        max: Millis,
    },
    /// A lognormal of median `median` and shape `sigma` (of the logarithm), redrawn outside
    /// `min`..`max`.
    #[serde(rename_all = "kebab-case")]
    Lognormal {
        #[serde(default = "zero")]
        min: Millis,
        median: Millis,
        sigma: f64,
        max: Millis,
    },
}

fn zero() -> Millis {
    Millis(0)
}

impl Delay {
    /// The bounds every drawn delay lies within.
    pub fn bounds(&self) -> (u64, u64) {
        match *self {
            Delay::Uniform { min, max }
            | Delay::Exponential { min, max, .. }
            | Delay::Lognormal { min, max, .. } => (min.0, max.0),
        }
    }

    fn check(&self) -> Result<(), String> {
        let (min, max) = self.bounds();
        if min > max {
            return Err(format!(
                "min ({}) is above max ({})",
                Millis(min),
                Millis(max)
            ));
        }
        match *self {
            Delay::Uniform { .. } => Ok(()),
            Delay::Exponential { mean, .. } if mean.0 == 0 => {
                Err("mean must be longer than 0".to_string())
            }
            Delay::Lognormal { median, .. } if median.0 == 0 => {
                Err("median must be longer than 0".to_string())
            }
            Delay::Lognormal { sigma, .. } if !(sigma > 0.0 && sigma <= 10.0) => Err(format!(
                "sigma is {sigma} but must be above 0 and at most 10"
            )),
            Delay::Lognormal { median, .. } if median.0 > max || median.0 < min => Err(format!(
                "median ({median}) must lie between min ({}) and max ({})",
                Millis(min),
                Millis(max)
            )),
            _ => Ok(()),
        }
    }
}

/// The second input's share of the events when it does not follow: the first input's share
/// given, the second's, or half.
pub fn right_share(inputs: &[InputSpec]) -> f64 {
    match (
        inputs.first().and_then(|i| i.share),
        inputs.get(1).and_then(|i| i.share),
    ) {
        (_, Some(right)) => right,
        (Some(left), None) => 1.0 - left,
        (None, None) => 0.5,
    }
}

/// Checks `inputs` of a workload with `partitions` partitions and a two-input job; `Err` says
/// what is wrong with which field.
pub(super) fn check(inputs: &[InputSpec], partitions: u32) -> Result<(), Vec<String>> {
    let mut problems = Vec::new();
    if inputs.len() != 2 {
        return Err(vec![format!(
            "'inputs' lists {} inputs but an interval join has two: the left (first) and the right",
            inputs.len()
        )]);
    }
    let sum: u32 = inputs.iter().map(|i| i.partitions).sum();
    if sum != partitions {
        problems.push(format!(
            "'inputs' take {sum} partitions ({} + {}) but the workload has 'partitions: {partitions}': each input has partitions of its own, and together they are the workload's",
            inputs[0].partitions, inputs[1].partitions
        ));
    }
    for (i, input) in inputs.iter().enumerate() {
        let at = format!("inputs[{i}]");
        if input.partitions == 0 {
            problems.push(format!(
                "'{at}.partitions' is 0 but an input needs at least one"
            ));
        }
        if let Some(share) = input.share
            && !(share > 0.0 && share < 1.0)
        {
            problems.push(format!(
                "'{at}.share' is {share} but must be between 0 and 1, both excluded"
            ));
        }
        if let Some(v) = input.value_size {
            let (min, max) = v.bounds();
            if min > max || max > MAX_VALUE_SIZE {
                problems.push(format!(
                    "'{at}.value-size' must be at most {MAX_VALUE_SIZE} bytes, its min at most its max"
                ));
            }
        }
    }
    if inputs[0].follows.is_some() {
        problems.push(
            "'inputs[0].follows': the first input is the one followed; give 'follows' to the second"
                .to_string(),
        );
    }
    match &inputs[1].follows {
        Some(f) => {
            if inputs.iter().any(|i| i.share.is_some()) {
                problems.push(
                    "'inputs[1].follows' fixes how many records each input has: leave 'share' out"
                        .to_string(),
                );
            }
            if !(0.0..1.0).contains(&f.unmatched) {
                problems.push(format!(
                    "'inputs[1].follows.unmatched' is {} but must be at least 0 and below 1",
                    f.unmatched
                ));
            }
            if !(0.0..=10.0).contains(&f.own) {
                problems.push(format!(
                    "'inputs[1].follows.own' is {} but must be between 0 and 10 (records of its own keys per record of the first input)",
                    f.own
                ));
            }
            if let Err(e) = f.delay.check() {
                problems.push(format!("'inputs[1].follows.delay': {e}"));
            }
        }
        None => {
            if let (Some(a), Some(b)) = (inputs[0].share, inputs[1].share)
                && (a + b - 1.0).abs() > 1e-9
            {
                problems.push(format!(
                    "'inputs[0].share' ({a}) and 'inputs[1].share' ({b}) must add up to 1"
                ));
            }
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems)
    }
}
