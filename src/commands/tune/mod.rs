//! `statebench tune`: a search with constraints. Each round measures candidates against the
//! profile kept so far, on the whole scorecard: the advisor's fixes (each finding's
//! recommendation and alternatives), neighbouring values of the knobs they change, and the
//! findings' job changes (measured and reported apart, never written into the profile). A
//! profile candidate is kept only when the objective improves beyond noise, no constraint
//! breaks, and no other figure gets worse beyond its band unless `--allow`ed or the objective
//! gains at least [`TRADE_OFF_GAIN`] (then the cost is printed). Runs are capped per round and
//! for the whole tune; a candidate whose gain is within the band is run again, up to
//! `--repeat` runs.
//!
//! Here: the command (its arguments, what it prints and writes). The candidates are in
//! `candidates`, the verdict on one in `decide`, the rounds in `search`.

pub mod candidates;
pub mod decide;
mod measured;
mod rank;
pub mod search;

use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Context as _;

use super::{Job, UsageError};
use crate::cli::{Objective, TuneArgs};
use crate::config::Profile;
use crate::config::units::human_bytes;
use crate::report;
use crate::summary::scorecard::{self};
use crate::util::fs::write_atomically;
use candidates::Kind;
pub use decide::TRADE_OFF_GAIN;
use decide::{Constraints, Decision};
use search::{Progress, Round, Settings, moved};

pub fn run(args: TuneArgs) -> anyhow::Result<()> {
    let job = Job::load(&args.job)?;
    let original = job.profile.clone();
    if args.min_task_heap.is_some() && super::task_heap_left(&original).is_none() {
        anyhow::bail!(UsageError(format!(
            "--min-task-heap needs a TaskManager to size: profile '{}' is not (and does not extend) a Flink configuration with the TaskManager's memory (-p path/to/config.yaml, or a profile that extends one)",
            original.name
        )));
    }
    let preload = super::preload_config(&args.preload, &job.workload, true)?;
    let settings = Settings {
        objective: args.objective,
        constraints: Constraints {
            memory_budget: args
                .memory_budget
                .map_or(original.knobs.managed_memory.0, |b| b.0),
            max_write_amp: args.max_write_amp,
            min_task_heap: args.min_task_heap.map(|b| b.0),
            allow: args.allow.clone(),
        },
        repeat: args.repeat.max(1) as usize,
        rounds: args.rounds,
        round_runs: args.round_runs,
        max_runs: args.max_runs,
    };
    let mut out = std::io::stdout();
    let found = search::search(&job, preload.as_ref(), &settings, None, |p| match p {
        Progress::Objective { figure, rate_bound } => {
            let _ = writeln!(
                out,
                "objective: {} ({}){}",
                figure.label(),
                match (args.objective, rate_bound) {
                    (Objective::Throughput, true) =>
                        "throughput: the workload's rate bounds events/s, so the CPU it takes",
                    (Objective::Throughput, false) => "throughput",
                    (Objective::Latency, _) => "latency",
                    (Objective::Memory, _) => "memory",
                },
                describe_constraints(&settings.constraints)
            );
        }
        Progress::Round(n, round) => print_round(&mut out, n, round),
    })?;
    let mut out = std::io::stdout();
    match &found.verdict {
        None => {
            let _ = writeln!(
                out,
                "nothing to change: {}",
                if found
                    .rounds
                    .iter()
                    .flat_map(|r| &r.tried)
                    .all(|t| t.kind == Kind::Job)
                {
                    "no finding with a profile fix to try"
                } else {
                    "no candidate was better on the objective without a cost it does not pay for"
                }
            );
        }
        Some((decision, deltas)) => {
            // After one kept round its table above is this one.
            if found.rounds.iter().filter(|r| r.chosen.is_some()).count() > 1 {
                let _ = writeln!(out, "the tuned profile against the start:");
                let _ = write!(
                    out,
                    "{}",
                    scorecard::render(&[
                        ("start", &found.start.scorecard),
                        ("tuned", &found.last.scorecard)
                    ])
                );
            }
            match decision {
                Decision::Kept(why) => {
                    let changed = found.tuned.knob_differences(&original);
                    let cost = original_cost(&original, &found.tuned);
                    let path =
                        write_profile(&original, &found.tuned, &changed, args.output.as_deref())?;
                    let _ = writeln!(
                        out,
                        "tuned profile: {} ({}; managed memory {}{cost})\n  {why}",
                        path.display(),
                        changed
                            .iter()
                            .map(|(k, old, new)| format!("{k} {old} -> {new}"))
                            .collect::<Vec<_>>()
                            .join(", "),
                        found.tuned.knobs.managed_memory,
                    );
                }
                Decision::Rejected(why) | Decision::Unsure(why) => {
                    let _ = writeln!(
                        out,
                        "not written: the rounds' changes together are not better than the start ({why}); {}",
                        moved(deltas)
                    );
                }
            }
            let _ = write!(out, "{}", report::render_findings(&found.last.findings));
        }
    }
    for t in found.job_changes() {
        let _ = writeln!(
            out,
            "job change ({}, not in the profile: change the job): {} — {}",
            t.finding,
            t.changes.join(", "),
            t.verdict
        );
    }
    if settings.repeat == 1 && found.runs > 1 {
        let _ = writeln!(
            out,
            "note: --repeat 1: a candidate whose gain is within the floor of one run is rejected, not run again"
        );
    }
    let _ = writeln!(out, "runs: {} of at most {}", found.runs, found.max_runs);
    if let Some(path) = &args.job.report {
        let c = &settings.constraints;
        let mut json = serde_json::to_vec_pretty(&serde_json::json!({
            "workload": job.workload.name,
            "profile": original.name,
            "objective": args.objective,
            "objective_figure": found.objective,
            "constraints": {
                "memory_budget": c.memory_budget,
                "max_write_amp": c.max_write_amp,
                "min_task_heap": c.min_task_heap,
                "allow": c.allow,
            },
            "repeat": settings.repeat,
            "runs": found.runs,
            "max_runs": found.max_runs,
            "start": found.start,
            "rounds": found.rounds,
            "final": found.last,
            "tuned": found.tuned.knob_differences(&original).iter().map(|(k, _, v)| format!("{k}: {v}")).collect::<Vec<_>>(),
        }))?;
        json.push(b'\n');
        write_atomically(path, &json)
            .with_context(|| format!("cannot write the proof {}", path.display()))?;
        let _ = writeln!(out, "proof written to {}", path.display());
    }
    Ok(())
}

/// ", no more memory" or ", 54 MiB more".
fn original_cost(original: &Profile, tuned: &Profile) -> String {
    let cost = tuned
        .knobs
        .managed_memory
        .0
        .saturating_sub(original.knobs.managed_memory.0);
    if cost > 0 {
        format!(", {} more", human_bytes(cost as f64))
    } else {
        ", no more memory".to_string()
    }
}

fn describe_constraints(c: &Constraints) -> String {
    let mut parts = vec![format!(
        "memory budget {}",
        human_bytes(c.memory_budget as f64)
    )];
    if let Some(x) = c.max_write_amp {
        parts.push(format!("write amplification at most {x}"));
    }
    if let Some(h) = c.min_task_heap {
        parts.push(format!("task heap at least {}", human_bytes(h as f64)));
    }
    if !c.allow.is_empty() {
        parts.push(format!(
            "allowed worse: {}",
            c.allow
                .iter()
                .map(|f| f.name())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    format!("; {}", parts.join(", "))
}

/// Every candidate of a round with its verdict, then the base against the chosen one.
pub(crate) fn print_round(out: &mut impl std::io::Write, n: u32, round: &Round) {
    let _ = writeln!(
        out,
        "round {n} (base: {}, {} run{}; judged by {}):",
        round.base.profile,
        round.base.runs.len(),
        if round.base.runs.len() == 1 { "" } else { "s" },
        round.objective.label()
    );
    for (i, t) in round.tried.iter().enumerate() {
        let what = match t.kind {
            Kind::Profile => "",
            Kind::Job => " [job change, not in the profile]",
        };
        let memory = if t.memory_cost > 0 {
            format!("+{} managed memory", human_bytes(t.memory_cost as f64))
        } else {
            "no memory".to_string()
        };
        let _ = writeln!(
            out,
            "  {} {} {}: {} ({memory}, {} run{}){what}",
            match (t.kind, t.kept, round.chosen == Some(i)) {
                (Kind::Job, ..) => "measured",
                (_, true, true) => "KEPT    ",
                (_, true, false) => "better  ",
                (_, false, _) => "rejected",
            },
            t.finding,
            t.source,
            t.changes.join(", "),
            t.runs,
            if t.runs == 1 { "" } else { "s" }
        );
        let _ = writeln!(out, "           {}", t.verdict);
        if t.kind == Kind::Profile && t.runs > 0 {
            let _ = writeln!(out, "           scorecard: {}", moved(&t.deltas));
        }
    }
    for n in &round.not_tried {
        let _ = writeln!(
            out,
            "  not tried (no run left in the round or the tune): {n}"
        );
    }
    if let Some(m) = round.chosen.and_then(|i| round.tried[i].measured.as_ref()) {
        let _ = write!(
            out,
            "{}",
            scorecard::render(&[("base", &round.base.scorecard), ("kept", &m.scorecard)])
        );
    }
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
        "# statebench tune: {} with the changes its search kept.\ndescription: {}\nextends: {}\n",
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
