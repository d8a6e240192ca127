//! `statebench compare A.json B.json`: two run reports' scorecards, then their summaries number
//! by number (with `--repeat N`, N reports per side: medians, ranges, and which differences are
//! real), after warnings when the reports did not run the same workload, event count or
//! segments.

use std::path::{Path, PathBuf};

use anyhow::bail;
use serde_json::Value;

use super::UsageError;
use super::advise::read_segments;
use crate::config::ByteSize;
use crate::summary::Summary;
use crate::summary::scorecard::{self, Context, Figure, Scorecard};

/// One report as compare reads it: its last segment's summary, and what it ran.
struct Loaded {
    path: String,
    label: String,
    summary: Value,
    workload: Value,
    segments: usize,
    /// What its scorecard reads beside the summary.
    context: Context,
}

/// `compare A.json B.json`, or with `--repeat N` N reports of A then N of B (runs of the same
/// job): every number of the summaries, B / A, and with repeats each side's median and range,
/// a difference called real only when the ranges do not overlap. Warns first when the reports
/// did not run the same workload, event count or segments.
pub fn run(reports: &[PathBuf], repeat: usize, all: bool) -> anyhow::Result<()> {
    let repeat = repeat.max(1);
    if reports.len() != 2 * repeat {
        bail!(UsageError(format!(
            "compare takes {} reports with --repeat {repeat} ({repeat} of A, then {repeat} of B), got {}",
            2 * repeat,
            reports.len()
        )));
    }
    let loaded: Vec<Loaded> = reports
        .iter()
        .map(|p| load(p))
        .collect::<anyhow::Result<_>>()?;
    let (a, b) = loaded.split_at(repeat);
    for w in warnings(a, b) {
        println!("warning: {w}");
    }
    for (side, runs) in [("A", a), ("B", b)] {
        for r in runs {
            println!("  {side}: {} ({})", r.path, r.label);
        }
    }
    print!(
        "{}",
        scorecard::render(&[("A", &score(a)?), ("B", &score(b)?)])
    );
    if repeat == 1 {
        let (mut x, mut y) = (Vec::new(), Vec::new());
        numbers("", &a[0].summary, &mut x);
        numbers("", &b[0].summary, &mut y);
        print!("{}", render(&x, &y, all));
    } else {
        let side = |runs: &[Loaded]| -> Vec<Vec<(String, f64)>> {
            runs.iter()
                .map(|r| {
                    let mut v = Vec::new();
                    numbers("", &r.summary, &mut v);
                    v
                })
                .collect()
        };
        print!("{}", render_repeats(&side(a), &side(b), all));
    }
    Ok(())
}

fn load(path: &Path) -> anyhow::Result<Loaded> {
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
    // The workload is the report's (schema 2) or the run's own (schema 1).
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let whole: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
    // The scorecard's context as the run scored it; a report written before scorecards: the
    // workload's rate and the profile's managed memory, no TaskManager.
    let context = match serde_json::from_value::<Scorecard>(last["scorecard"].clone()) {
        Ok(card) => Context {
            paced: card.paced,
            managed_memory: card.median(Figure::ManagedMemory).map_or(0, |m| m as u64),
            task_heap: card.median(Figure::TaskHeap).map(|h| h as u64),
        },
        Err(_) => Context {
            paced: whole["workload"]["rate"].is_u64(),
            managed_memory: last["profile"]["knobs"]["memory.managed-size"]
                .as_str()
                .and_then(ByteSize::parse)
                .map_or(0, |b| b.0),
            task_heap: None,
        },
    };
    Ok(Loaded {
        path: path.display().to_string(),
        label,
        summary: last["summary"].clone(),
        workload: whole["workload"].clone(),
        segments: segments.len(),
        context,
    })
}

/// One side's scorecard over its reports.
fn score(runs: &[Loaded]) -> anyhow::Result<Scorecard> {
    let summaries = runs
        .iter()
        .map(|r| {
            serde_json::from_value::<Summary>(r.summary.clone()).map_err(|e| {
                UsageError(format!("{}: its summary cannot be read: {e}", r.path)).into()
            })
        })
        .collect::<anyhow::Result<Vec<Summary>>>()?;
    let context = runs.first().map_or_else(Context::default, |r| r.context);
    Ok(Scorecard::new(&summaries, &context))
}

/// What makes the reports' numbers not comparable: different workloads (name or settings),
/// event counts, or segments (a restart starts a new one; compare reads the last).
fn warnings(a: &[Loaded], b: &[Loaded]) -> Vec<String> {
    let mut out = Vec::new();
    let all: Vec<(&str, &Loaded)> = a
        .iter()
        .map(|r| ("A", r))
        .chain(b.iter().map(|r| ("B", r)))
        .collect();
    let (_, first) = all[0];
    let name = |r: &Loaded| r.workload["name"].as_str().unwrap_or("?").to_string();
    for (side, r) in &all[1..] {
        if name(r) != name(first) {
            out.push(format!(
                "{side} ({}) ran workload {}, A ({}) ran {}: the numbers are of different jobs",
                r.path,
                name(r),
                first.path,
                name(first)
            ));
            continue;
        }
        // The same name, other settings (a file edited between the runs).
        let differ: Vec<String> = match (first.workload.as_object(), r.workload.as_object()) {
            (Some(x), Some(y)) => x
                .keys()
                .chain(y.keys().filter(|k| !x.contains_key(*k)))
                .filter(|k| !matches!(k.as_str(), "source" | "name" | "events" | "duration"))
                .filter(|k| x.get(*k) != y.get(*k))
                .cloned()
                .collect(),
            _ => Vec::new(),
        };
        if !differ.is_empty() {
            out.push(format!(
                "{side} ({}) ran workload {} with other settings than A ({}): {} differ",
                r.path,
                name(r),
                first.path,
                differ.join(", ")
            ));
        }
    }
    let events = |r: &Loaded| r.summary["events"].as_u64();
    if all.iter().any(|(_, r)| events(r) != events(first)) {
        out.push(format!(
            "the runs read different numbers of events ({}): totals and anything that grows with the run differ for that alone",
            all.iter()
                .map(|(side, r)| format!(
                    "{side} {}",
                    events(r).map_or("?".to_string(), |e| e.to_string())
                ))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    // Replayed records (restarts after failures) and restored processes: the rates and totals
    // count other work than a clean run's.
    for (side, r) in &all {
        let n = |k: &str| r.summary[k].as_u64().unwrap_or(0);
        let (events, records, replayed) =
            (n("events"), n("records_processed"), n("records_replayed"));
        if !r.summary["whole_job"].is_null() {
            out.push(format!(
                "{side} ({}) is a process restored from another's checkpoint: it processed {records} of the job's {events} records, and its totals and rates are this process's alone (its report's whole_job holds the job's)",
                r.path
            ));
        } else if replayed > 0 {
            let secs = r.summary["processing_secs"].as_f64().unwrap_or(0.0);
            out.push(format!(
                "{side} ({}) processed {records} records for its {events} events ({replayed} replayed after restores): its events_per_sec and per-event figures count the replayed work; its results came at {:.0} events/s (results_per_sec)",
                r.path,
                if secs > 0.0 {
                    records.saturating_sub(replayed) as f64 / secs
                } else {
                    0.0
                }
            ));
        }
    }
    for (side, r) in &all {
        if r.segments > 1 {
            out.push(format!(
                "{side} ({}) has {} segments (the run restarted): compared is its last, {}",
                r.path, r.segments, r.label
            ));
        }
    }
    out
}

/// Per metric, each side's median and range over its runs, B / A of the medians, and whether
/// the ranges are apart ("real") or overlap ("within the spread").
fn render_repeats(a: &[Vec<(String, f64)>], b: &[Vec<(String, f64)>], all: bool) -> String {
    let mut out = format!(
        "  {:<40} {:>24} {:>24} {:>8}  {}\n",
        "metric: median (min–max)",
        format!("A, {} runs", a.len()),
        format!("B, {} runs", b.len()),
        "B / A",
        "difference"
    );
    let mut keys: Vec<&str> = Vec::new();
    for run in a.iter().chain(b) {
        for (k, _) in run {
            if !keys.contains(&k.as_str()) {
                keys.push(k);
            }
        }
    }
    let values = |side: &[Vec<(String, f64)>], key: &str| -> Vec<f64> {
        side.iter()
            .filter_map(|run| run.iter().find(|(k, _)| k == key).map(|(_, v)| *v))
            .collect()
    };
    let stats = crate::util::stats::median_min_max;
    let num = |v: f64| {
        format!("{v:.4}")
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_string()
    };
    let show = |s: Option<(f64, f64, f64)>| {
        s.map_or("-".to_string(), |(m, lo, hi)| {
            if lo == hi {
                num(m)
            } else {
                format!("{} ({}–{})", num(m), num(lo), num(hi))
            }
        })
    };
    let mut equal = 0;
    for key in keys {
        let (x, y) = (values(a, key), values(b, key));
        let (sx, sy) = (stats(&x), stats(&y));
        let same = !x.is_empty() && x.iter().chain(&y).all(|v| *v == x[0]) && y.len() == b.len();
        if !all && same {
            equal += 1;
            continue;
        }
        let ratio = match (sx, sy) {
            (Some((mx, ..)), Some((my, ..))) if mx != 0.0 => format!("{:.3}", my / mx),
            _ => "-".to_string(),
        };
        let verdict = match (sx, sy) {
            (Some((_, xlo, xhi)), Some((_, ylo, yhi))) if yhi < xlo || ylo > xhi => "real",
            (Some(_), Some(_)) if same => "equal",
            (Some(_), Some(_)) => "within the spread",
            _ => "-",
        };
        out.push_str(&format!(
            "  {key:<40} {:>24} {:>24} {ratio:>8}  {verdict}\n",
            show(sx),
            show(sy)
        ));
    }
    if equal > 0 {
        out.push_str(&format!(
            "  ({equal} equal in every run on both sides not shown; --all shows them)\n"
        ));
    }
    out
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

    fn loaded(path: &str, workload: Value, events: u64, segments: usize) -> Loaded {
        Loaded {
            path: path.to_string(),
            label: "flink-default".to_string(),
            summary: serde_json::json!({ "events": events, "flushes": 3 }),
            workload,
            segments,
            context: Context::default(),
        }
    }

    #[test]
    fn each_side_is_scored_from_its_summaries_with_its_reports_context() {
        let mut a = loaded("a.json", serde_json::json!({ "name": "w" }), 1_000, 1);
        a.summary = serde_json::json!({
            "events": 1_000, "records_processed": 1_000, "events_per_sec": 500.0, "flushes": 4,
        });
        a.context = Context {
            paced: false,
            managed_memory: 1 << 20,
            task_heap: Some(3 << 30),
        };
        let card = score(&[a]).unwrap();
        assert_eq!(card.median(Figure::Flushes), Some(4.0));
        assert_eq!(card.show(Figure::TaskHeap), "3.0 GiB");
        assert_eq!(card.show(Figure::ManagedMemory), "1.0 MiB");
        // A summary of the wrong shape names its report.
        let mut bad = loaded("b.json", serde_json::json!({ "name": "w" }), 1_000, 1);
        bad.summary = serde_json::json!({ "flushes": "many" });
        let err = score(&[bad]).unwrap_err().to_string();
        assert!(
            err.contains("b.json") && err.contains("cannot be read"),
            "{err}"
        );
    }

    #[test]
    fn replayed_and_restored_runs_are_warned_about() {
        let mut failed = loaded("b.json", serde_json::json!({ "name": "w" }), 40_000, 1);
        failed.summary = serde_json::json!({
            "events": 40_000, "records_processed": 62_032, "records_replayed": 22_032,
            "processing_secs": 3.38,
        });
        let clean = loaded("a.json", serde_json::json!({ "name": "w" }), 40_000, 1);
        let w = warnings(&[clean], &[failed]);
        assert!(
            w.iter()
                .any(|w| w.contains("22032 replayed") && w.contains("11834 events/s")),
            "{w:?}"
        );
        let mut restored = loaded("r.json", serde_json::json!({ "name": "w" }), 150_000, 1);
        restored.summary = serde_json::json!({
            "events": 150_000, "records_processed": 95_120, "records_replayed": 3_808,
            "whole_job": { "processes": 2 },
        });
        let clean = loaded("a.json", serde_json::json!({ "name": "w" }), 150_000, 1);
        let w = warnings(&[clean], &[restored]);
        assert!(
            w.iter()
                .any(|w| w.contains("restored") && w.contains("95120 of the job's 150000")),
            "{w:?}"
        );
    }

    #[test]
    fn reports_of_different_workloads_events_or_segments_are_warned_about() {
        let minutes = serde_json::json!({"name": "ads-minutes", "seed": 1, "source": "x"});
        let same = loaded("a.json", minutes.clone(), 40_000, 1);
        // The same job: no warning (the workload's file path may differ).
        let mut elsewhere = minutes.clone();
        elsewhere["source"] = "y".into();
        assert!(warnings(&[same], &[loaded("b.json", elsewhere, 40_000, 1)]).is_empty());
        let a = [loaded("a.json", minutes.clone(), 40_000, 1)];
        let hours = serde_json::json!({"name": "ads-hours", "seed": 1});
        let w = warnings(&a, &[loaded("b.json", hours, 40_000, 1)]);
        assert!(
            w[0].contains("ran workload ads-hours") && w[0].contains("ads-minutes"),
            "{w:?}"
        );
        let mut reseeded = minutes.clone();
        reseeded["seed"] = 2.into();
        let w = warnings(&a, &[loaded("b.json", reseeded, 40_000, 1)]);
        assert!(w[0].contains("seed differ"), "{w:?}");
        let w = warnings(&a, &[loaded("b.json", minutes.clone(), 30_000, 1)]);
        assert!(w[0].contains("A 40000, B 30000"), "{w:?}");
        let w = warnings(&a, &[loaded("b.json", minutes, 40_000, 3)]);
        assert!(w[0].contains("has 3 segments"), "{w:?}");
    }

    #[test]
    fn with_repeats_a_difference_is_real_only_outside_both_ranges() {
        let side = |values: &[f64]| -> Vec<Vec<(String, f64)>> {
            values
                .iter()
                .map(|v| {
                    vec![
                        ("events_per_sec".to_string(), *v),
                        ("same".to_string(), 1.0),
                    ]
                })
                .collect()
        };
        // 100-120 against 125-130: apart.
        let text = render_repeats(
            &side(&[100.0, 110.0, 120.0]),
            &side(&[125.0, 128.0, 130.0]),
            false,
        );
        assert!(
            text.contains("110 (100–120)") && text.contains("128 (125–130)"),
            "{text}"
        );
        assert!(text.contains("1.164  real"), "{text}");
        assert!(text.contains("1 equal in every run"), "{text}");
        // 100-120 against 115-130: the ranges overlap.
        let text = render_repeats(
            &side(&[100.0, 110.0, 120.0]),
            &side(&[115.0, 128.0, 130.0]),
            false,
        );
        assert!(text.contains("within the spread"), "{text}");
        assert!(!text.contains(" real"), "{text}");
    }
}
