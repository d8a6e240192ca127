//! `statebench tune`: run, advise, apply the recommendations, re-run the same workload, and
//! keep a change only when the finding behind it is gone.

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
use crate::report::{self, Summary};
use crate::reproduce::proofs;

/// One measured run of a profile.
#[derive(Clone, Serialize)]
struct Measured {
    profile: String,
    summary: Summary,
    findings: Vec<Finding>,
}

/// A round: what was applied for which finding, and what the re-run says.
#[derive(Serialize)]
struct Round {
    before: Measured,
    applied: Vec<Applied>,
    /// Findings whose fix needs more memory than the budget, and how much.
    over_budget: Vec<String>,
    after: Option<Measured>,
}

#[derive(Serialize)]
struct Applied {
    finding: &'static str,
    changes: Vec<String>,
    /// Gone (or less severe) in the re-run: the change is kept.
    kept: bool,
}

pub fn run(args: TuneArgs) -> anyhow::Result<()> {
    let job = Job::load(&args.job)?;
    let original = job.profile.clone();
    let budget = args
        .memory_budget
        .map_or(original.knobs.managed_memory.0, |b| b.0);
    let mut current = original.clone();
    let mut rounds: Vec<Round> = Vec::new();
    let mut before = measure(&job, &current, "the profile as given")?;
    for round in 1..=args.rounds {
        let open: Vec<&Finding> = before
            .findings
            .iter()
            .filter(|f| f.severity >= Severity::Warning && !f.recommendation.is_empty())
            .collect();
        if open.is_empty() {
            break;
        }
        // Every finding's delta that stays inside the memory budget, most severe first.
        let mut candidate = current.clone();
        let mut applied = Vec::new();
        let mut over_budget = Vec::new();
        for f in open {
            let mut edited = candidate.clone();
            for c in &f.recommendation {
                edited = edited
                    .edited(&c.key, &c.value)
                    .with_context(|| format!("finding {}: {} = {}", f.id, c.key, c.value))?;
            }
            if edited.knobs.managed_memory.0 > budget {
                over_budget.push(format!(
                    "{}: needs memory.managed-size {} ({} more than the budget {}); --memory-budget {} applies it",
                    f.id,
                    edited.knobs.managed_memory,
                    human_bytes((edited.knobs.managed_memory.0 - budget) as f64),
                    human_bytes(budget as f64),
                    edited.knobs.managed_memory
                ));
                continue;
            }
            candidate = edited;
            applied.push(Applied {
                finding: f.id,
                changes: f
                    .recommendation
                    .iter()
                    .map(|c| format!("{}: {}", c.key, c.value))
                    .collect(),
                kept: false,
            });
        }
        if applied.is_empty() {
            rounds.push(Round {
                before: before.clone(),
                applied,
                over_budget,
                after: None,
            });
            break;
        }
        let after = measure(&job, &candidate, &format!("round {round}"))?;
        // A change stays when its finding is gone or less severe in the re-run.
        for a in &mut applied {
            let severity = |m: &Measured| {
                m.findings
                    .iter()
                    .find(|f| f.id == a.finding)
                    .map(|f| f.severity)
            };
            a.kept = match (severity(&before), severity(&after)) {
                (_, None) => true,
                (Some(b), Some(x)) => x < b,
                (None, Some(_)) => false,
            };
        }
        let any_kept = applied.iter().any(|a| a.kept);
        let round_before = before.clone();
        if applied.iter().all(|a| a.kept) {
            current = candidate;
            before = after.clone();
        } else if any_kept {
            // Keep only the confirmed changes, and measure what that profile does.
            for a in applied.iter().filter(|a| a.kept) {
                for change in &a.changes {
                    if let Some((k, v)) = change.split_once(": ") {
                        current = current.edited(k, v)?;
                    }
                }
            }
            before = measure(
                &job,
                &current,
                &format!("round {round}, confirmed changes only"),
            )?;
        }
        rounds.push(Round {
            before: round_before,
            applied,
            over_budget,
            after: Some(after),
        });
        if !any_kept {
            break;
        }
    }
    // The last measurement is what the tuned profile does.
    let mut out = std::io::stdout();
    for (i, r) in rounds.iter().enumerate() {
        let _ = writeln!(out, "round {}:", i + 1);
        for a in &r.applied {
            let _ = writeln!(
                out,
                "  {} {}: {}",
                if a.kept { "kept   " } else { "dropped" },
                a.finding,
                a.changes.join(", ")
            );
        }
        for o in &r.over_budget {
            let _ = writeln!(out, "  not applied, over the memory budget: {o}");
        }
        if let Some(after) = &r.after {
            let _ = write!(
                out,
                "{}",
                report::render_before_after(&r.before.summary, &after.summary)
            );
        }
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
        if rounds
            .iter()
            .any(|r| r.over_budget.iter().any(|o| o.starts_with(id)))
        {
            "its fix needs more memory than the budget".to_string()
        } else if rounds
            .iter()
            .any(|r| r.applied.iter().any(|a| a.finding == id && !a.kept))
        {
            "its fix did not remove it in the re-run".to_string()
        } else if f.recommendation.is_empty() {
            "nothing in the profile fixes it".to_string()
        } else {
            "no round left".to_string()
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
                String::new()
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
            "rounds": rounds,
            "final": before,
        }))?;
        json.push(b'\n');
        report::write_atomically(path, &json)
            .with_context(|| format!("cannot write the proof {}", path.display()))?;
        let _ = writeln!(out, "proof written to {}", path.display());
    }
    Ok(())
}

/// Runs the job on `profile` in a temporary directory and asks the advisor.
fn measure(job: &Job, profile: &Profile, what: &str) -> anyhow::Result<Measured> {
    eprintln!("tune: running {} ({what}) ...", profile.name);
    let dir = tempfile::Builder::new()
        .prefix("statebench-tune-")
        .tempdir()
        .context("cannot create a temporary data directory")?;
    let (summary, findings) = proofs::measure(EngineConfig {
        events: job.events,
        duration: job.duration,
        trace: job.trace.clone(),
        ..EngineConfig::new(job.workload.clone(), profile.clone(), dir.path())
    })?;
    Ok(Measured {
        profile: profile.name.clone(),
        summary,
        findings,
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
    report::write_atomically(&path, text.as_bytes())
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
