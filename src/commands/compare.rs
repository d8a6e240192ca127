//! `statebench compare A.json B.json`: two run reports' summaries, number by number.

use std::path::Path;

use anyhow::bail;
use serde_json::Value;

use super::UsageError;
use super::advise::read_segments;

pub fn run(a: &Path, b: &Path, all: bool) -> anyhow::Result<()> {
    let (label_a, left) = last_summary(a)?;
    let (label_b, right) = last_summary(b)?;
    let (mut x, mut y) = (Vec::new(), Vec::new());
    numbers("", &left, &mut x);
    numbers("", &right, &mut y);
    println!(
        "  A: {} ({label_a})\n  B: {} ({label_b})",
        a.display(),
        b.display()
    );
    print!("{}", render(&x, &y, all));
    Ok(())
}

/// The label and summary of a report's last segment (a TUI restart starts a new one).
fn last_summary(path: &Path) -> anyhow::Result<(String, Value)> {
    let segments = read_segments(path)?;
    let Some(last) = segments.last() else {
        bail!(UsageError(format!(
            "{}: the report has no run",
            path.display()
        )));
    };
    let label = last["label"]
        .as_str()
        .or(last["profile"]["name"].as_str())
        .unwrap_or("-")
        .to_string();
    Ok((label, last["summary"].clone()))
}

/// Every number under `value`, as (dotted path, number), in the report's order.
fn numbers(prefix: &str, value: &Value, out: &mut Vec<(String, f64)>) {
    match value {
        Value::Number(n) => {
            if let Some(v) = n.as_f64() {
                out.push((prefix.to_string(), v));
            }
        }
        Value::Bool(b) => out.push((prefix.to_string(), f64::from(u8::from(*b)))),
        Value::Object(map) => {
            for (k, v) in map {
                let path = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                numbers(&path, v, out);
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                numbers(&format!("{prefix}[{i}]"), v, out);
            }
        }
        Value::Null | Value::String(_) => {}
    }
}

/// A's numbers in order, then those only B has; B / A where both are numbers and A is not 0.
fn render(a: &[(String, f64)], b: &[(String, f64)], all: bool) -> String {
    let mut out = format!(
        "  {:<44} {:>16} {:>16} {:>9}\n",
        "metric", "A", "B", "B / A"
    );
    let mut keys: Vec<&str> = a.iter().map(|(k, _)| k.as_str()).collect();
    keys.extend(
        b.iter()
            .map(|(k, _)| k.as_str())
            .filter(|k| !a.iter().any(|(x, _)| x == k)),
    );
    let find =
        |side: &[(String, f64)], key: &str| side.iter().find(|(k, _)| k == key).map(|(_, v)| *v);
    let show = |v: Option<f64>| {
        v.map_or("-".to_string(), |v| {
            format!("{v:.4}")
                .trim_end_matches('0')
                .trim_end_matches('.')
                .to_string()
        })
    };
    let mut equal = 0;
    for key in keys {
        let (x, y) = (find(a, key), find(b, key));
        if !all && x == y {
            equal += 1;
            continue;
        }
        let ratio = match (x, y) {
            (Some(x), Some(y)) if x != 0.0 => format!("{:.3}", y / x),
            _ => "-".to_string(),
        };
        out.push_str(&format!(
            "  {key:<44} {:>16} {:>16} {ratio:>9}\n",
            show(x),
            show(y)
        ));
    }
    if equal > 0 {
        out.push_str(&format!(
            "  ({equal} equal on both sides not shown; --all shows them)\n"
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_numbers_are_compared_by_path_with_ratios() {
        let (mut a, mut b) = (Vec::new(), Vec::new());
        numbers(
            "",
            &serde_json::json!({"flushes": 10, "cache": {"hit": 0.5}, "name": "x", "same": 1}),
            &mut a,
        );
        numbers(
            "",
            &serde_json::json!({"flushes": 25, "cache": {"hit": 0.75}, "same": 1, "new": 3}),
            &mut b,
        );
        let text = render(&a, &b, false);
        assert!(text.contains("flushes") && text.contains("2.500"), "{text}");
        assert!(
            text.contains("cache.hit") && text.contains("1.500"),
            "{text}"
        );
        assert!(text.contains("new") && !text.contains("same "), "{text}");
        assert!(text.contains("1 equal on both sides"), "{text}");
        assert!(render(&a, &b, true).contains("same"));
    }
}
