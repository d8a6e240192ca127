//! `statebench tune`: run, advise, apply one finding's fix, re-run the same workload, and keep
//! the change only when the finding behind it is gone and its metric moved outside the spread
//! of the runs before (`--repeat N` runs each side N times).

use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use serde::Serialize;

use super::Job;
use crate::advisor::{Change, Finding, Severity};
use crate::cli::TuneArgs;
use crate::config::Profile;
use crate::config::units::human_bytes;
use crate::engine::EngineConfig;
use crate::report;
use crate::reproduce::proofs;
use crate::summary::Summary;
use crate::util::fs::write_atomically;

/// One profile measured `--repeat` times: the median run (by events/s) and every run.
#[derive(Clone, Serialize)]
struct Measured {
    profile: String,
    /// The median run's summary and findings.
    summary: Summary,
    findings: Vec<Finding>,
    /// Every run's summary (one without --repeat).
    repeats: Vec<Summary>,
    /// Every run's findings, for the judgement.
    #[serde(skip)]
    repeat_findings: Vec<Vec<Finding>>,
}

/// A round: the one finding whose fix was applied, and what the re-run says.
#[derive(Serialize)]
struct Round {
    before: Measured,
    applied: Vec<Applied>,
    /// Fixes passed over because they need more memory than the budget, and how much.
    over_budget: Vec<String>,
    after: Option<Measured>,
}

#[derive(Serialize)]
struct Applied {
    finding: &'static str,
    changes: Vec<String>,
    /// Managed memory the fix adds, bytes.
    memory_cost: u64,
    /// Gone (or less severe) in every re-run, and the finding's own metric moved outside the
    /// spread of the runs before: the change is kept.
    kept: bool,
    /// The measured reason for the verdict.
    verdict: String,
}

/// The number each finding is about, and which way is better: a change is kept only when it
/// moves this number outside the spread of the runs before it.
fn metric(finding: &str) -> (&'static str, fn(&Summary) -> f64, bool) {
    match finding {
        "write-stalls" | "wbm-budget" => (
            "write stalls (ms)",
            |s| s.stall_micros as f64 / 1000.0,
            true,
        ),
        "filter-reads" => (
            "filter bytes read / lookup",
            |s| s.filter_bytes_read_per_lookup,
            true,
        ),
        "bloom-off" => ("bytes read / lookup", |s| s.bytes_read_per_lookup, true),
        "cache-hit-low" => (
            "block cache hit (%)",
            |s| s.cache_hit_rate.overall.unwrap_or(0.0) * 100.0,
            false,
        ),
        // The rule's evidence is the level count (measured write amplification can rise with
        // a bigger base level: docs/correctness.md).
        "level-sizing" => (
            "active levels (max)",
            |s| f64::from(s.active_levels_max),
            true,
        ),
        "arena-vs-wbm" => ("flushes", |s| s.flushes as f64, true),
        _ => ("events/s", |s| s.events_per_sec, false),
    }
}

/// Median and range of `values` (empty: zeros).
fn spread(values: &[f64]) -> (f64, f64, f64) {
    report::median_min_max(values).unwrap_or((0.0, 0.0, 0.0))
}

/// "12.3 (10.1–14.2)" for several runs, "12.3" for one.
fn show_spread(values: &[f64]) -> String {
    let (median, min, max) = spread(values);
    if values.len() > 1 {
        format!("{median:.1} ({min:.1}–{max:.1})")
    } else {
        format!("{median:.1}")
    }
}

/// Whether `after` is better than `before` with no overlap of their ranges.
fn outside_spread(before: &[f64], after: &[f64], lower_is_better: bool) -> bool {
    let (_, bmin, bmax) = spread(before);
    let (_, amin, amax) = spread(after);
    if lower_is_better {
        amax < bmin
    } else {
        amin > bmax
    }
}

/// Keep `finding`'s fix? Its finding gone or less severe in every re-run, and its metric moved
/// outside the spread of the runs before.
fn judge(finding: &Finding, before: &Measured, after: &Measured) -> (bool, String) {
    let worst_after = after
        .repeat_findings
        .iter()
        .filter_map(|fs| fs.iter().find(|f| f.id == finding.id).map(|f| f.severity))
        .max();
    let (name, read, lower) = metric(finding.id);
    let b: Vec<f64> = before.repeats.iter().map(read).collect();
    let a: Vec<f64> = after.repeats.iter().map(read).collect();
    let moved = format!("{name} {} -> {}", show_spread(&b), show_spread(&a));
    let runs = if after.repeats.len() > 1 {
        format!("in all {} re-runs", after.repeats.len())
    } else {
        "in the re-run".to_string()
    };
    let severity = |s: Severity| format!("{s:?}").to_lowercase();
    match worst_after {
        Some(s) if s >= finding.severity => (
            false,
            format!("{} still {} {runs}; {moved}", finding.id, severity(s)),
        ),
        _ if !outside_spread(&b, &a, lower) => (
            false,
            format!("{moved}: not outside the spread of the runs before, so no real difference"),
        ),
        Some(s) => (
            true,
            format!(
                "{} {} -> {} {runs}; {moved}",
                finding.id,
                severity(finding.severity),
                severity(s)
            ),
        ),
        None => (true, format!("{} gone {runs}; {moved}", finding.id)),
    }
}

/// `profile` with `changes` applied.
fn apply(profile: &Profile, id: &str, changes: &[Change]) -> anyhow::Result<Profile> {
    let mut edited = profile.clone();
    for c in changes {
        edited = edited
            .edited(&c.key, &c.value)
            .with_context(|| format!("finding {id}: {} = {}", c.key, c.value))?;
    }
    Ok(edited)
}

pub fn run(args: TuneArgs) -> anyhow::Result<()> {
    let job = Job::load(&args.job)?;
    let repeat = args.repeat.max(1);
    let original = job.profile.clone();
    let budget = args
        .memory_budget
        .map_or(original.knobs.managed_memory.0, |b| b.0);
    let mut current = original.clone();
    let mut rounds: Vec<Round> = Vec::new();
    let mut before = measure(&job, &current, "the profile as given", repeat)?;
    // Fixes tried so far: (finding, changes).
    let mut tried: Vec<(&'static str, String)> = Vec::new();
    for round in 1..=args.rounds {
        // One finding per round, the most severe first (warning or worse), with its first fix
        // not tried yet that stays inside the memory budget: the recommendation, then its
        // alternatives (what costs no memory comes first).
        let mut over_budget = Vec::new();
        let mut pick = None;
        'findings: for f in before
            .findings
            .iter()
            .filter(|f| f.severity >= Severity::Warning)
        {
            let fixes = std::iter::once(&f.recommendation)
                .chain(f.alternatives.iter().map(|a| &a.changes))
                .filter(|c| !c.is_empty());
            for changes in fixes {
                let label = Change::list(changes, ": ");
                if tried.contains(&(f.id, label.clone())) {
                    continue;
                }
                let edited = apply(&current, f.id, changes)?;
                if edited.knobs.managed_memory.0 > budget {
                    over_budget.push(format!(
                        "{}: {label} needs memory.managed-size {} ({} more than the budget {}); --memory-budget {} allows it",
                        f.id,
                        edited.knobs.managed_memory,
                        human_bytes((edited.knobs.managed_memory.0 - budget) as f64),
                        human_bytes(budget as f64),
                        edited.knobs.managed_memory
                    ));
                    continue;
                }
                pick = Some((f.clone(), changes.clone(), label, edited));
                break 'findings;
            }
        }
        let Some((finding, changes, label, candidate)) = pick else {
            if !over_budget.is_empty() {
                rounds.push(Round {
                    before: before.clone(),
                    applied: Vec::new(),
                    over_budget,
                    after: None,
                });
            }
            break;
        };
        tried.push((finding.id, label));
        let after = measure(&job, &candidate, &format!("round {round}"), repeat)?;
        let (kept, verdict) = judge(&finding, &before, &after);
        let round_before = before.clone();
        let memory_cost = candidate
            .knobs
            .managed_memory
            .0
            .saturating_sub(current.knobs.managed_memory.0);
        if kept {
            current = candidate;
            before = after.clone();
        }
        rounds.push(Round {
            before: round_before,
            applied: vec![Applied {
                finding: finding.id,
                changes: changes
                    .iter()
                    .map(|c| format!("{}: {}", c.key, c.value))
                    .collect(),
                memory_cost,
                kept,
                verdict,
            }],
            over_budget,
            after: Some(after),
        });
    }
    // The last kept measurement is what the tuned profile does.
    let mut out = std::io::stdout();
    for (i, r) in rounds.iter().enumerate() {
        let _ = writeln!(out, "round {}:", i + 1);
        for a in &r.applied {
            let _ = writeln!(
                out,
                "  {} {}: {}{}",
                if a.kept { "kept   " } else { "dropped" },
                a.finding,
                a.changes.join(", "),
                if a.memory_cost > 0 {
                    format!(" (+{} managed memory)", human_bytes(a.memory_cost as f64))
                } else {
                    " (no memory)".to_string()
                }
            );
            let _ = writeln!(out, "          {}", a.verdict);
        }
        for o in &r.over_budget {
            let _ = writeln!(out, "  not applied, over the memory budget: {o}");
        }
        if let Some(after) = &r.after {
            let _ = write!(out, "{}", render_rounds(&r.before, after));
        }
    }
    if repeat == 1 && rounds.iter().any(|r| !r.applied.is_empty()) {
        let _ = writeln!(
            out,
            "note: one run each side (--repeat 1): a verdict on a figure that varies from run to run (stall time, cache hit rate) can flip in another tune; --repeat 3 keeps a change only when its figure moves outside the spread of three runs before"
        );
    }
    let changed = current.knob_differences(&original);
    let left: Vec<&Finding> = before
        .findings
        .iter()
        .filter(|f| f.severity >= Severity::Warning)
        .collect();
    // Why each finding still stands.
    let why = |f: &Finding| {
        let id = f.id;
        if f.recommendation.is_empty() && !f.job_changes.is_empty() {
            return format!(
                "its fix is in the job, not the profile: {}",
                Change::list(&f.job_changes, ": ")
            );
        }
        let dropped: Vec<String> = rounds
            .iter()
            .flat_map(|r| &r.applied)
            .filter(|a| a.finding == id && !a.kept)
            .map(|a| format!("{} ({})", a.changes.join(", "), a.verdict))
            .collect();
        let over: Vec<&String> = rounds
            .iter()
            .flat_map(|r| &r.over_budget)
            .filter(|o| o.starts_with(id))
            .collect();
        let mut reasons = Vec::new();
        if !dropped.is_empty() {
            reasons.push(format!("tried and dropped: {}", dropped.join("; ")));
        }
        if let Some(o) = over.last() {
            reasons.push(format!("over the memory budget: {o}"));
        }
        if reasons.is_empty() {
            if f.recommendation.is_empty() {
                "nothing in the profile fixes it".to_string()
            } else {
                "no round left (--rounds)".to_string()
            }
        } else {
            reasons.join("; ")
        }
    };
    let left_text: Vec<String> = left
        .iter()
        .map(|f| format!("{} ({})", f.id, why(f)))
        .collect();
    if changed.is_empty() {
        let _ = writeln!(
            out,
            "nothing to change: {}",
            if left.is_empty() {
                "no finding worth a change (warning or worse)".to_string()
            } else {
                format!("left: {}", left_text.join(", "))
            }
        );
    } else {
        let cost = current
            .knobs
            .managed_memory
            .0
            .saturating_sub(original.knobs.managed_memory.0);
        let path = write_profile(&original, &current, &changed, args.output.as_deref())?;
        let _ = writeln!(
            out,
            "tuned profile: {} ({}; managed memory {}{})",
            path.display(),
            changed
                .iter()
                .map(|(k, old, new)| format!("{k} {old} -> {new}"))
                .collect::<Vec<_>>()
                .join(", "),
            current.knobs.managed_memory,
            if cost > 0 {
                format!(", {} more", human_bytes(cost as f64))
            } else {
                ", no more memory".to_string()
            }
        );
        if !left_text.is_empty() {
            let _ = writeln!(out, "left: {}", left_text.join(", "));
        }
        let _ = write!(out, "{}", report::render_findings(&before.findings));
    }
    if let Some(path) = &args.job.report {
        let mut json = serde_json::to_vec_pretty(&serde_json::json!({
            "workload": job.workload.name,
            "profile": original.name,
            "memory_budget": budget,
            "repeat": repeat,
            "rounds": rounds,
            "final": before,
        }))?;
        json.push(b'\n');
        write_atomically(path, &json)
            .with_context(|| format!("cannot write the proof {}", path.display()))?;
        let _ = writeln!(out, "proof written to {}", path.display());
    }
    Ok(())
}

/// Reads one number of a summary.
type Read = fn(&Summary) -> f64;

/// Before / after: with one run each the summary table, with --repeat every row as median
/// (min–max) of the runs.
fn render_rounds(before: &Measured, after: &Measured) -> String {
    if before.repeats.len() <= 1 && after.repeats.len() <= 1 {
        return report::render_before_after(&before.summary, &after.summary);
    }
    let rows: [(&str, Read); 7] = [
        ("events/s", |s| s.events_per_sec),
        ("event latency p99 (µs)", |s| s.p99_event_latency_us),
        ("flushes", |s| s.flushes as f64),
        ("write stalls (ms)", |s| s.stall_micros as f64 / 1000.0),
        ("L0 files (max)", |s| s.l0_files_max as f64),
        ("write amplification", |s| s.write_amplification),
        ("block cache hit (%)", |s| {
            s.cache_hit_rate.overall.unwrap_or(f64::NAN) * 100.0
        }),
    ];
    let mut out = format!(
        "  {:<24} {:>26} {:>26}  {}\n",
        "median (min–max)",
        format!("before, {} runs", before.repeats.len()),
        format!("after, {} runs", after.repeats.len()),
        "difference"
    );
    for (name, read) in rows {
        let b: Vec<f64> = before.repeats.iter().map(read).collect();
        let a: Vec<f64> = after.repeats.iter().map(read).collect();
        let real = if outside_spread(&b, &a, true) || outside_spread(&b, &a, false) {
            "real"
        } else {
            "within the spread"
        };
        out.push_str(&format!(
            "  {name:<24} {:>26} {:>26}  {real}\n",
            show_spread(&b),
            show_spread(&a)
        ));
    }
    out
}

/// Runs the job on `profile` `repeat` times, each in a temporary directory, and asks the
/// advisor; the median run by events/s stands for them.
fn measure(job: &Job, profile: &Profile, what: &str, repeat: u32) -> anyhow::Result<Measured> {
    let mut runs = Vec::new();
    for i in 1..=repeat {
        if repeat > 1 {
            eprintln!(
                "tune: running {} ({what}, {i} of {repeat}) ...",
                profile.name
            );
        } else {
            eprintln!("tune: running {} ({what}) ...", profile.name);
        }
        let dir = tempfile::Builder::new()
            .prefix("statebench-tune-")
            .tempdir()
            .context("cannot create a temporary data directory")?;
        runs.push(proofs::measure(EngineConfig {
            events: job.events,
            duration: job.duration,
            trace: job.trace.clone(),
            ..EngineConfig::new(job.workload.clone(), profile.clone(), dir.path())
        })?);
    }
    let mut order: Vec<usize> = (0..runs.len()).collect();
    order.sort_by(|&x, &y| {
        runs[x]
            .0
            .events_per_sec
            .total_cmp(&runs[y].0.events_per_sec)
    });
    let median = order[(order.len() - 1) / 2];
    Ok(Measured {
        profile: profile.name.clone(),
        summary: runs[median].0.clone(),
        findings: runs[median].1.clone(),
        repeats: runs.iter().map(|r| r.0.clone()).collect(),
        repeat_findings: runs.into_iter().map(|r| r.1).collect(),
    })
}

/// Writes the tuned profile as the original plus its changes (`extends:` the original, so the
/// diff reads), at `output` or `<name>-tuned.yaml` here, never over an existing file.
fn write_profile(
    original: &Profile,
    tuned: &Profile,
    changed: &[(&'static str, String, String)],
    output: Option<&Path>,
) -> anyhow::Result<PathBuf> {
    let path = match output {
        Some(p) => p.to_path_buf(),
        None => (1..100)
            .map(|n| {
                let suffix = if n == 1 {
                    String::new()
                } else {
                    format!("-{n}")
                };
                PathBuf::from(format!("{}-tuned{suffix}.yaml", original.name))
            })
            .find(|p| !p.exists())
            .context("too many tuned profiles here")?,
    };
    super::check_report_dir(Some(&path))?;
    // A built-in by name; a file by its absolute path (extends resolves relative to the file).
    let parent = if original.source.starts_with("built-in") {
        original.name.clone()
    } else {
        std::fs::canonicalize(&original.source)
            .map_or(original.source.clone(), |p| p.display().to_string())
    };
    let mut text = format!(
        "# statebench tune: {} with the advisor's confirmed changes.\ndescription: {}\nextends: {}\n",
        original.name,
        serde_json::to_string(&format!("{} tuned by statebench", original.name))?,
        parent
    );
    for (key, old, new) in changed {
        text.push_str(&format!("{key}: {new}  # was {old}\n"));
    }
    write_atomically(&path, text.as_bytes())
        .with_context(|| format!("cannot write {}", path.display()))?;
    // It must load back as the tuned profile.
    let back = Profile::load(&path.to_string_lossy())?;
    anyhow::ensure!(
        back.knobs == tuned.knobs,
        "the tuned profile {} does not load back as tuned",
        path.display()
    );
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::advisor::Evidence;

    fn finding(id: &'static str, severity: Severity) -> Finding {
        Finding {
            id,
            severity,
            diagnosis: String::new(),
            evidence: vec![Evidence::new("x", 1, 0)],
            from_secs: 0.0,
            to_secs: 1.0,
            recommendation: vec![Change::new("writebuffer.count", 3)],
            memory_cost: 0,
            job_changes: Vec::new(),
            note: None,
            effect: None,
            alternatives: Vec::new(),
            cost: None,
            overruled: Vec::new(),
        }
    }

    /// Runs with these stall times (ms), each with or without a write-stalls finding.
    fn measured(stalls_ms: &[u64], found: &[Option<Severity>]) -> Measured {
        let repeats: Vec<Summary> = stalls_ms
            .iter()
            .map(|ms| Summary {
                stall_micros: ms * 1000,
                ..Summary::default()
            })
            .collect();
        let repeat_findings: Vec<Vec<Finding>> = found
            .iter()
            .map(|s| s.map(|s| finding("write-stalls", s)).into_iter().collect())
            .collect();
        Measured {
            profile: "p".into(),
            summary: repeats[0].clone(),
            findings: repeat_findings[0].clone(),
            repeats,
            repeat_findings,
        }
    }

    #[test]
    fn a_change_is_kept_only_when_its_finding_goes_and_its_number_leaves_the_spread() {
        let f = finding("write-stalls", Severity::Critical);
        let before = measured(&[900, 1_200, 1_500], &[Some(Severity::Critical); 3]);
        // Gone in every re-run and the stalls below the lowest run before: kept.
        let after = measured(&[0, 0, 40], &[None, None, None]);
        let (kept, why) = judge(&f, &before, &after);
        assert!(kept, "{why}");
        assert!(
            why.contains("1200.0 (900.0–1500.0) -> 0.0 (0.0–40.0)"),
            "{why}"
        );
        // Gone, but one re-run stalled as long as a run before: within the spread, dropped.
        let after = measured(&[100, 950, 200], &[None, None, None]);
        let (kept, why) = judge(&f, &before, &after);
        assert!(!kept && why.contains("not outside the spread"), "{why}");
        // Still critical in one re-run: dropped.
        let after = measured(&[0, 0, 0], &[None, Some(Severity::Critical), None]);
        let (kept, why) = judge(&f, &before, &after);
        assert!(!kept && why.contains("still critical"), "{why}");
    }
}
