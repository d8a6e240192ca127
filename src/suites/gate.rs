//! The gate: every metric of every case against a saved baseline, judged against the allowed
//! regression, the metric's noise and its slack; and the comparison as a table for a CI log.

use std::fmt::Write as _;

use super::metrics::{Better, Kind, METRICS, Metric};
use super::results::{Results, number};

/// How the gate judges.
#[derive(Debug, Clone, Copy)]
pub struct Gate {
    /// Percent a metric may get worse beyond its noise before it is a regression.
    pub max_regression_pct: f64,
    pub timings: bool,
}

/// One metric of one case against its baseline.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub case: String,
    pub metric: &'static str,
    pub baseline: Option<f64>,
    pub now: f64,
    /// How far it may move the wrong way (in its units) before it is a regression.
    pub allowed: Option<f64>,
    pub verdict: Verdict,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Ok,
    Better,
    Regression,
    /// A timing while timings are not gated, or a case or metric the baseline lacks.
    NotGated,
}

/// Every metric of every case of `now` against `baseline`.
pub fn compare(baseline: &Results, now: &Results, gate: Gate) -> Vec<Row> {
    let mut rows = Vec::new();
    for c in &now.cases {
        let base = baseline.cases.iter().find(|b| b.case == c.case);
        for m in METRICS {
            let Some(&value) = c.values.get(m.name) else {
                continue;
            };
            let before = base.and_then(|b| b.values.get(m.name).copied());
            let max = gate.max_regression_pct / 100.0;
            let verdict = match before {
                None => Verdict::NotGated,
                Some(_) if m.kind == Kind::Timing && !gate.timings => Verdict::NotGated,
                Some(b) => judge(m, b, value, max),
            };
            rows.push(Row {
                case: c.case.clone(),
                metric: m.name,
                baseline: before,
                now: value,
                allowed: before.map(|b| allowance(m, b, max)),
                verdict,
            });
        }
    }
    rows
}

fn judge(m: &Metric, before: f64, now: f64, max: f64) -> Verdict {
    // How much worse, in the metric's units (positive: worse).
    let worse = match m.better {
        Better::Lower => now - before,
        Better::Higher => before - now,
    };
    let allowed = allowance(m, before, max);
    if worse > allowed && worse > 1e-9 {
        Verdict::Regression
    } else if -worse > allowed && -worse > 1e-9 {
        Verdict::Better
    } else {
        Verdict::Ok
    }
}

/// How far `m` may move the wrong way from `before`: the larger of the threshold and its noise,
/// relative, or its slack, absolute.
fn allowance(m: &Metric, before: f64, max: f64) -> f64 {
    (before.abs() * max.max(m.noise)).max(m.slack)
}

/// The comparison as a table for a CI log; rows that did not move are left out unless `all`.
pub fn render(rows: &[Row], all: bool) -> String {
    let shown: Vec<&Row> = rows
        .iter()
        .filter(|r| all || (r.verdict != Verdict::Ok && r.verdict != Verdict::NotGated))
        .collect();
    if shown.is_empty() {
        return String::new();
    }
    let mut out = format!(
        "  {:<20} {:<32} {:>14} {:>14} {:>9} {:>12}  {}\n",
        "case", "metric", "baseline", "now", "change", "allowed", "verdict"
    );
    for r in shown {
        let change = match r.baseline {
            Some(b) if b != 0.0 => format!("{:+.1}%", (r.now - b) / b.abs() * 100.0),
            Some(_) if r.now == 0.0 => "0".to_string(),
            Some(_) => "new".to_string(),
            None => "-".to_string(),
        };
        let verdict = match r.verdict {
            Verdict::Ok => "ok",
            Verdict::Better => "better",
            Verdict::Regression => "REGRESSION",
            Verdict::NotGated => "not gated",
        };
        let _ = writeln!(
            out,
            "  {:<20} {:<32} {:>14} {:>14} {:>9} {:>12}  {verdict}",
            r.case,
            r.metric,
            r.baseline.map_or("-".to_string(), number),
            number(r.now),
            change,
            r.allowed
                .map_or("-".to_string(), |a| format!("±{}", number(a)))
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suites::results::tests::results;

    fn verdict(before: &[(&str, f64)], now: &[(&str, f64)], metric: &str, gate: Gate) -> Verdict {
        compare(&results(before), &results(now), gate)
            .into_iter()
            .find(|r| r.metric == metric)
            .map(|r| r.verdict)
            .unwrap()
    }

    const GATE: Gate = Gate {
        max_regression_pct: 5.0,
        timings: false,
    };

    #[test]
    fn exact_counters_gate_at_the_threshold() {
        let ops = "rocksdb ops / event";
        assert_eq!(
            verdict(&[(ops, 30.0)], &[(ops, 31.4)], ops, GATE),
            Verdict::Ok
        );
        assert_eq!(
            verdict(&[(ops, 30.0)], &[(ops, 31.6)], ops, GATE),
            Verdict::Regression
        );
        assert_eq!(
            verdict(&[(ops, 30.0)], &[(ops, 20.0)], ops, GATE),
            Verdict::Better
        );
        // Any result error where there was none.
        let err = "result error (keys)";
        assert_eq!(
            verdict(&[(err, 0.0)], &[(err, 1.0)], err, GATE),
            Verdict::Regression
        );
    }

    #[test]
    fn flush_driven_counters_get_their_noise_and_near_zero_values_their_slack() {
        let f = "flushes";
        // 50 % noise: 12 -> 17 is noise, 12 -> 197 (a starved WriteBufferManager) is not.
        assert_eq!(verdict(&[(f, 12.0)], &[(f, 17.0)], f, GATE), Verdict::Ok);
        assert_eq!(
            verdict(&[(f, 12.0)], &[(f, 197.0)], f, GATE),
            Verdict::Regression
        );
        let stall = "write stalls";
        assert_eq!(
            verdict(&[(stall, 0.0)], &[(stall, 200.0)], stall, GATE),
            Verdict::Ok
        );
        assert_eq!(
            verdict(&[(stall, 0.0)], &[(stall, 8_000.0)], stall, GATE),
            Verdict::Regression
        );
    }

    #[test]
    fn timings_gate_only_when_asked_and_higher_is_better_for_throughput() {
        let eps = "events/s vs reference";
        let m = METRICS.iter().find(|m| m.name == eps).unwrap();
        // 15 % noise allowance: 0.9 of the baseline ratio is noise, 0.8 is not.
        assert_eq!(judge(m, 1.0, 0.8, 0.05), Verdict::Regression);
        assert_eq!(judge(m, 1.0, 0.9, 0.05), Verdict::Ok);
        assert_eq!(judge(m, 1.0, 1.3, 0.05), Verdict::Better);
        // Without --timings a timing is shown, not judged.
        let row = compare(&results(&[(eps, 1.0)]), &results(&[(eps, 1.0)]), GATE);
        assert_eq!(row[0].verdict, Verdict::NotGated);
        let timed = Gate {
            timings: true,
            ..GATE
        };
        let row = compare(&results(&[(eps, 1.0)]), &results(&[(eps, 1.0)]), timed);
        assert_eq!(row[0].verdict, Verdict::Ok);
    }
}
