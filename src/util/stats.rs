//! Statistics of repeated measurements.

/// The median, minimum and maximum of the finite `values` (`None` when there are none): how
/// `tune`, `compare --repeat` and the A/B table show repeated measurements and judge whether a
/// difference lies outside their spread.
pub fn median_min_max(values: &[f64]) -> Option<(f64, f64, f64)> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let median = if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    };
    Some((median, v[0], v[n - 1]))
}
