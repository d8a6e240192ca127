//! `statebench tune`: a search with constraints. Each round measures candidates against the
//! profile kept so far, on the whole scorecard: the advisor's fixes (each finding's
//! recommendation and alternatives), neighbouring values of the knobs they change, and the
//! findings' job changes (measured and reported apart, never written into the profile). A
//! profile candidate is kept only when the objective improves beyond noise, no constraint
//! breaks, and no other figure gets worse beyond its band unless `--allow`ed or the objective
//! gains at least [`TRADE_OFF_GAIN`] (then the cost is printed). Runs are capped per round and
//! for the whole tune; a candidate whose gain is within the band is run again, up to
//! `--repeat` runs.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use serde::Serialize;

use super::{Job, UsageError};
use crate::advisor::{Change, Finding};
use crate::cli::TuneArgs;
use crate::config::units::human_bytes;
use crate::config::{ByteSize, Profile, Workload};
use crate::engine::EngineConfig;
use crate::report;
use crate::reproduce::proofs;
use crate::summary::Summary;
use crate::summary::scorecard::{self, Context, Delta, Figure, Scorecard, Verdict};
use crate::util::fs::write_atomically;

/// An objective gain this large (a share of the start's figure) pays for other figures getting
/// worse: the candidate is kept and the cost printed.
pub const TRADE_OFF_GAIN: f64 = 0.10;

/// What tune improves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Objective {
    /// Events/s; CPU per event where the workload's `rate:` bounds the run (it cannot go
    /// faster).
    #[default]
    Throughput,
    /// Event latency p99.
    Latency,
    /// RocksDB's memory at its peak.
    Memory,
}

impl Objective {
    fn figure(self, rate_bound: bool) -> Figure {
        match self {
            Objective::Throughput if rate_bound => Figure::CpuPerEvent,
            Objective::Throughput => Figure::EventsPerSec,
            Objective::Latency => Figure::P99Latency,
            Objective::Memory => Figure::RocksdbMemory,
        }
    }
}

/// The runs of one profile (and workload) on the job, and their scorecard.
#[derive(Clone, Serialize)]
struct Measured {
    profile: String,
    scorecard: Scorecard,
    /// The median run (by events/s): its summary and findings stand for the side.
    summary: Summary,
    findings: Vec<Finding>,
    /// Every run's summary.
    repeats: Vec<Summary>,
    #[serde(skip)]
    runs: Vec<(Summary, Vec<Finding>)>,
    #[serde(skip)]
    context: Context,
}

impl Measured {
    fn new(profile: &Profile, context: Context, first: (Summary, Vec<Finding>)) -> Measured {
        let mut m = Measured {
            profile: profile.name.clone(),
            scorecard: Scorecard::new(&[], &context),
            summary: Summary::default(),
            findings: Vec::new(),
            repeats: Vec::new(),
            runs: Vec::new(),
            context,
        };
        m.add(first);
        m
    }

    fn add(&mut self, run: (Summary, Vec<Finding>)) {
        self.runs.push(run);
        self.repeats = self.runs.iter().map(|r| r.0.clone()).collect();
        self.scorecard = Scorecard::new(&self.repeats, &self.context);
        let mut order: Vec<usize> = (0..self.runs.len()).collect();
        order.sort_by(|&x, &y| {
            self.runs[x]
                .0
                .events_per_sec
                .total_cmp(&self.runs[y].0.events_per_sec)
        });
        let median = order[(order.len() - 1) / 2];
        self.summary = self.runs[median].0.clone();
        self.findings = self.runs[median].1.clone();
    }
}

/// What a candidate changes: the profile, or the job (never written into the profile).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
enum Kind {
    Profile,
    Job,
}

/// One candidate: where it came from and what it changes.
struct Candidate {
    kind: Kind,
    finding: &'static str,
    /// "recommendation", "alternative 2", "neighbour of writebuffer.size".
    source: String,
    changes: Vec<Change>,
    profile: Profile,
    workload: Workload,
}

/// A candidate as tried: its measurement, its scorecard against the round's base, the verdict.
#[derive(Serialize)]
struct Tried {
    kind: Kind,
    finding: &'static str,
    source: String,
    changes: Vec<String>,
    /// Managed memory it adds, bytes.
    memory_cost: u64,
    /// Runs it took (0: refused before running, by a constraint).
    runs: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    measured: Option<Measured>,
    deltas: Vec<Delta>,
    kept: bool,
    verdict: String,
}

#[derive(Serialize)]
struct Round {
    base: Measured,
    tried: Vec<Tried>,
    /// Index into `tried` of the candidate kept for the next round.
    chosen: Option<usize>,
    /// Candidates not tried: the round's or the tune's runs were used up.
    not_tried: Vec<String>,
}

/// The constraints and what the user lets get worse.
struct Constraints {
    memory_budget: u64,
    max_write_amp: Option<f64>,
    min_task_heap: Option<u64>,
    allow: Vec<Figure>,
}

/// The verdict on a profile candidate against the round's base.
#[derive(Debug, PartialEq)]
enum Decision {
    Kept(String),
    Rejected(String),
    /// The objective moved the better way but within the band: more runs may tell.
    Unsure(String),
}

/// Keep `after` over `before`? The objective better beyond noise, `--max-write-amp` held, and
/// no other figure worse beyond its band unless allowed or paid for by a gain of
/// [`TRADE_OFF_GAIN`] or more (said as the cost).
fn decide(
    before: &Scorecard,
    after: &Scorecard,
    objective: Figure,
    constraints: &Constraints,
) -> (Decision, Vec<Delta>) {
    let deltas = scorecard::judge(before, after);
    let Some(obj) = deltas.iter().find(|d| d.figure == objective).copied() else {
        return (
            Decision::Rejected(format!("{} not measured", objective.label())),
            deltas,
        );
    };
    let runs = |c: &Scorecard| {
        if c.runs > 1 {
            format!(" ({} runs)", c.runs)
        } else {
            String::new()
        }
    };
    let band = format!("{}{}", runs(before), runs(after));
    let what = obj.describe();
    let early = match obj.verdict {
        Verdict::Better => None,
        Verdict::Unknown => Some(Decision::Rejected(format!("{what}: not measured"))),
        Verdict::Worse => Some(Decision::Rejected(format!(
            "{what}: worse beyond the band{band}"
        ))),
        Verdict::Same if obj.gain().is_some_and(|g| g > 0.0) => {
            Some(Decision::Unsure(format!("{what}: within the band{band}")))
        }
        Verdict::Same => Some(Decision::Rejected(format!("{what}: not better{band}"))),
    };
    if let Some(decision) = early {
        return (decision, deltas);
    }
    if let (Some(max), Some(wa)) = (constraints.max_write_amp, after.median(Figure::WriteAmp))
        && wa > max
    {
        let d = deltas
            .iter()
            .find(|d| d.figure == Figure::WriteAmp)
            .map_or_else(|| format!("write amplification {wa:.2}"), Delta::describe);
        return (
            Decision::Rejected(format!("{d} over --max-write-amp {max}")),
            deltas,
        );
    }
    let worse: Vec<&Delta> = deltas
        .iter()
        .filter(|d| d.verdict == Verdict::Worse && d.figure != objective)
        .collect();
    let (allowed, costs): (Vec<&Delta>, Vec<&Delta>) = worse
        .into_iter()
        .partition(|d| constraints.allow.contains(&d.figure));
    let list = |ds: &[&Delta]| {
        ds.iter()
            .map(|d| d.describe())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut text = format!("{} beyond the band{band}", obj.describe());
    if !allowed.is_empty() {
        text.push_str(&format!("; allowed worse: {}", list(&allowed)));
    }
    let gain = obj.gain().unwrap_or(0.0);
    if costs.is_empty() {
        text.push_str("; nothing else worse beyond its band");
        (Decision::Kept(text), deltas)
    } else if gain >= TRADE_OFF_GAIN {
        text.push_str(&format!(
            "; COST (paid for by {:+.0} %, at least {:.0} %): {}",
            gain * 100.0,
            TRADE_OFF_GAIN * 100.0,
            list(&costs)
        ));
        (Decision::Kept(text), deltas)
    } else {
        let names: Vec<&str> = costs.iter().map(|d| d.figure.name()).collect();
        (
            Decision::Rejected(format!(
                "{} beyond its band, for {} {:+.0} % (under the {:.0} % that pays for a cost; --allow {} lets it)",
                list(&costs),
                objective.label(),
                gain * 100.0,
                TRADE_OFF_GAIN * 100.0,
                names.join(",")
            )),
            deltas,
        )
    }
}

/// Why `profile` breaks a constraint known before running it (the memory budget, the task heap
/// its TaskManager leaves); None: it may run.
fn refused_before_running(profile: &Profile, constraints: &Constraints) -> Option<String> {
    let managed = profile.knobs.managed_memory;
    if managed.0 > constraints.memory_budget {
        return Some(format!(
            "not run: needs memory.managed-size {managed} ({} over the budget {}; --memory-budget {managed} allows it)",
            human_bytes((managed.0 - constraints.memory_budget) as f64),
            human_bytes(constraints.memory_budget as f64),
        ));
    }
    let min = constraints.min_task_heap?;
    let heap = super::task_heap_left(profile);
    heap.is_none_or(|h| h < min).then(|| {
        format!(
            "not run: task heap left {} under --min-task-heap {}",
            heap.map_or("none (Flink refuses the TaskManager)".to_string(), |h| {
                human_bytes(h as f64)
            }),
            human_bytes(min as f64)
        )
    })
}

/// Neighbouring values of a change's knob: half and twice a size, the other value of a
/// boolean, 5 / 10 / 15 bits per key.
fn neighbours(change: &Change) -> Vec<String> {
    let value = change.value.trim();
    match value {
        "true" => return vec!["false".to_string()],
        "false" => return vec!["true".to_string()],
        _ => {}
    }
    if change.key.ends_with("bits-per-key") {
        return ["5", "10", "15"]
            .iter()
            .filter(|v| value.parse::<f64>().ok() != v.parse::<f64>().ok())
            .map(|v| v.to_string())
            .collect();
    }
    // A size says its unit (a plain number is a count or a ratio).
    if value.chars().any(|c| c.is_ascii_alphabetic())
        && let Some(size) = ByteSize::parse(value)
        && size.0 >= 2 << 10
    {
        return vec![
            ByteSize(size.0 / 2).to_string(),
            ByteSize(size.0.saturating_mul(2)).to_string(),
        ];
    }
    Vec::new()
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

/// The round's candidates from `findings` on `current`, most severe finding first and cheapest
/// first: every recommendation, then the alternatives, then neighbouring values of the
/// recommendations' knobs; the job changes apart. None equals `current` or another candidate.
fn candidates(
    findings: &[Finding],
    current: &Profile,
    workload: &Workload,
) -> anyhow::Result<Vec<Candidate>> {
    let mut out: Vec<Candidate> = Vec::new();
    let mut push = |finding: &Finding,
                    source: String,
                    changes: Vec<Change>|
     -> anyhow::Result<()> {
        if changes.is_empty() {
            return Ok(());
        }
        // A value the knob refuses (a neighbour below its minimum) is no candidate.
        let Ok(profile) = apply(current, finding.id, &changes) else {
            return Ok(());
        };
        if profile.knobs == current.knobs || out.iter().any(|c| c.profile.knobs == profile.knobs) {
            return Ok(());
        }
        out.push(Candidate {
            kind: Kind::Profile,
            finding: finding.id,
            source,
            changes,
            profile,
            workload: workload.clone(),
        });
        Ok(())
    };
    let findings: Vec<&Finding> = findings.iter().collect();
    for f in &findings {
        push(f, "recommendation".to_string(), f.recommendation.clone())?;
    }
    for f in &findings {
        for (i, alt) in f.alternatives.iter().enumerate() {
            push(f, format!("alternative {}", i + 1), alt.changes.clone())?;
        }
    }
    for f in &findings {
        for (i, c) in f.recommendation.iter().enumerate() {
            for value in neighbours(c) {
                let mut changes = f.recommendation.clone();
                changes[i].value = value;
                push(f, format!("neighbour of {}", c.key), changes)?;
            }
        }
    }
    for f in &findings {
        if f.job_changes.is_empty() {
            continue;
        }
        let changed = proofs::apply_job_changes(workload, &f.job_changes)
            .with_context(|| format!("finding {}", f.id))?;
        out.push(Candidate {
            kind: Kind::Job,
            finding: f.id,
            source: "job change".to_string(),
            changes: f.job_changes.clone(),
            profile: current.clone(),
            workload: changed,
        });
    }
    Ok(out)
}

/// Runs of the job, counted against the tune's cap.
struct Runner<'a> {
    job: &'a Job,
    used: u32,
    max: u32,
}

impl Runner<'_> {
    fn left(&self) -> u32 {
        self.max.saturating_sub(self.used)
    }

    /// One run of `workload` on `profile` in a temporary directory, and the advisor's findings.
    fn run(
        &mut self,
        workload: &Workload,
        profile: &Profile,
        what: &str,
    ) -> anyhow::Result<(Summary, Vec<Finding>)> {
        self.used += 1;
        eprintln!(
            "tune: run {} of at most {}: {what} ...",
            self.used, self.max
        );
        let dir = tempfile::Builder::new()
            .prefix("statebench-tune-")
            .tempdir()
            .context("cannot create a temporary data directory")?;
        proofs::measure(EngineConfig {
            events: self.job.events,
            duration: self.job.duration,
            trace: self.job.trace.clone(),
            ..EngineConfig::new(workload.clone(), profile.clone(), dir.path())
        })
    }
}

/// The non-same figures of `deltas`: "events/s 3532 -> 6770 (1.92x) better, ...".
fn moved(deltas: &[Delta]) -> String {
    let parts = moved_parts(deltas.iter());
    if parts.is_empty() {
        "nothing beyond its band".to_string()
    } else {
        parts.join(", ")
    }
}

fn moved_parts<'a>(deltas: impl Iterator<Item = &'a Delta>) -> Vec<String> {
    deltas
        .filter(|d| matches!(d.verdict, Verdict::Better | Verdict::Worse))
        .map(|d| {
            format!(
                "{} {}",
                d.describe(),
                if d.verdict == Verdict::Better {
                    "better"
                } else {
                    "worse"
                }
            )
        })
        .collect()
}

/// A job change's measured effect: the objective's ratio whatever its verdict, then every
/// other figure that moved beyond its band ("events/s 1.69x (within the band), live SST ...").
fn job_effect(deltas: &[Delta], objective: Figure) -> String {
    let mut parts = Vec::new();
    if let Some(d) = deltas.iter().find(|d| d.figure == objective) {
        parts.push(format!(
            "{} {}",
            d.describe(),
            match d.verdict {
                Verdict::Better => "better",
                Verdict::Worse => "worse",
                Verdict::Same => "(within the band)",
                Verdict::Unknown => "(not measured)",
            }
        ));
    }
    parts.extend(moved_parts(deltas.iter().filter(|d| d.figure != objective)));
    if parts.is_empty() {
        parts.push("nothing beyond its band".to_string());
    }
    parts.join(", ")
}

pub fn run(args: TuneArgs) -> anyhow::Result<()> {
    let job = Job::load(&args.job)?;
    let repeat = args.repeat.max(1) as usize;
    let original = job.profile.clone();
    let context = |p: &Profile, w: &Workload| super::score_context(w, p);
    let start_context = context(&original, &job.workload);
    if args.min_task_heap.is_some() && start_context.task_heap.is_none() {
        anyhow::bail!(UsageError(format!(
            "--min-task-heap needs a TaskManager to size: profile '{}' is not (and does not extend) a Flink configuration with the TaskManager's memory (-p path/to/config.yaml, or a profile that extends one)",
            original.name
        )));
    }
    let constraints = Constraints {
        memory_budget: args
            .memory_budget
            .map_or(original.knobs.managed_memory.0, |b| b.0),
        max_write_amp: args.max_write_amp,
        min_task_heap: args.min_task_heap.map(|b| b.0),
        allow: args.allow.clone(),
    };
    let mut runner = Runner {
        job: &job,
        used: 0,
        max: args.max_runs.max(1),
    };
    let start = Measured::new(
        &original,
        start_context,
        runner.run(&job.workload, &original, "the profile as given")?,
    );
    // Throughput of a paced workload that kept its rate is bounded by the rate: CPU per event.
    let rate_bound = start_context.paced
        && match job.workload.spec.rate {
            crate::config::workload::Rate::PerSecond(rate) => {
                start.summary.events_per_sec >= rate as f64 * (1.0 - scorecard::TIMING_FLOOR)
            }
            crate::config::workload::Rate::Max => false,
        };
    let objective = args.objective.figure(rate_bound);
    let mut out = std::io::stdout();
    let _ = writeln!(
        out,
        "objective: {} ({}){}",
        objective.label(),
        match (args.objective, rate_bound) {
            (Objective::Throughput, true) =>
                "throughput: the workload's rate bounds events/s, so the CPU it takes",
            (Objective::Throughput, false) => "throughput",
            (Objective::Latency, _) => "latency",
            (Objective::Memory, _) => "memory",
        },
        describe_constraints(&constraints)
    );
    let mut current = original.clone();
    let mut base = start.clone();
    let mut rounds: Vec<Round> = Vec::new();
    let mut tried_profiles: Vec<crate::config::profile::Knobs> = Vec::new();
    let mut tried_jobs: Vec<String> = Vec::new();
    for round_no in 1..=args.rounds {
        let all = candidates(&base.findings, &current, &job.workload)?;
        let fresh: Vec<Candidate> = all
            .into_iter()
            .filter(|c| match c.kind {
                Kind::Profile => !tried_profiles.contains(&c.profile.knobs),
                Kind::Job => !tried_jobs.contains(&Change::list(&c.changes, ": ")),
            })
            .collect();
        if fresh.is_empty() {
            break;
        }
        let mut round = Round {
            base: base.clone(),
            tried: Vec::new(),
            chosen: None,
            not_tried: Vec::new(),
        };
        let mut round_runs = 0;
        for cand in fresh {
            let label = Change::list(&cand.changes, ": ");
            let memory_cost = cand
                .profile
                .knobs
                .managed_memory
                .0
                .saturating_sub(current.knobs.managed_memory.0);
            let refuse = |verdict: String| Tried {
                kind: cand.kind,
                finding: cand.finding,
                source: cand.source.clone(),
                changes: cand
                    .changes
                    .iter()
                    .map(|c| format!("{}: {}", c.key, c.value))
                    .collect(),
                memory_cost,
                runs: 0,
                measured: None,
                deltas: Vec::new(),
                kept: false,
                verdict,
            };
            // Constraints known before running cost no run.
            if cand.kind == Kind::Profile
                && let Some(why) = refused_before_running(&cand.profile, &constraints)
            {
                tried_profiles.push(cand.profile.knobs.clone());
                round.tried.push(refuse(why));
                continue;
            }
            if runner.left() == 0 || (cand.kind == Kind::Profile && round_runs >= args.round_runs) {
                round
                    .not_tried
                    .push(format!("{} {}: {label}", cand.finding, cand.source));
                continue;
            }
            match cand.kind {
                Kind::Profile => tried_profiles.push(cand.profile.knobs.clone()),
                Kind::Job => tried_jobs.push(label.clone()),
            }
            let what = format!(
                "round {round_no}, {} {}: {label}",
                cand.finding, cand.source
            );
            let ctx = context(&cand.profile, &cand.workload);
            let mut measured = Measured::new(
                &cand.profile,
                ctx,
                runner.run(&cand.workload, &cand.profile, &what)?,
            );
            if cand.kind == Kind::Profile {
                round_runs += 1;
            }
            let (kept, verdict, deltas) = loop {
                let (decision, deltas) = decide(
                    &base.scorecard,
                    &measured.scorecard,
                    objective,
                    &constraints,
                );
                if cand.kind == Kind::Job {
                    break (false, job_effect(&deltas, objective), deltas);
                }
                match decision {
                    Decision::Kept(why) => break (true, why, deltas),
                    Decision::Rejected(why) => break (false, why, deltas),
                    Decision::Unsure(why) => {
                        // More runs where noise demands, within --repeat and the run caps: the
                        // candidate's, and the base's to give it a band too.
                        let base_too = base.runs.len() < measured.runs.len() + 1;
                        let needs = 1 + u32::from(base_too);
                        if measured.runs.len() >= repeat
                            || runner.left() < needs
                            || round_runs + needs > args.round_runs
                        {
                            break (false, format!("{why}: no run left to tell"), deltas);
                        }
                        measured.add(runner.run(&cand.workload, &cand.profile, &what)?);
                        round_runs += 1;
                        if base_too {
                            let again = runner.run(
                                &job.workload,
                                &current,
                                &format!("round {round_no}, the base again"),
                            )?;
                            base.add(again);
                            round_runs += 1;
                        }
                    }
                }
            };
            round.tried.push(Tried {
                runs: measured.runs.len(),
                measured: Some(measured),
                deltas,
                kept,
                verdict,
                ..refuse(String::new())
            });
        }
        // The kept candidate with the best objective goes on.
        let better = |t: &Tried| {
            t.measured
                .as_ref()
                .and_then(|m| m.scorecard.median(objective))
                .map(|v| match objective.better() {
                    scorecard::Better::Higher => v,
                    scorecard::Better::Lower => -v,
                })
        };
        round.chosen = round
            .tried
            .iter()
            .enumerate()
            .filter(|(_, t)| t.kept)
            .max_by(|(_, x), (_, y)| {
                better(x)
                    .unwrap_or(f64::MIN)
                    .total_cmp(&better(y).unwrap_or(f64::MIN))
            })
            .map(|(i, _)| i);
        // The base may have run again: the round's record shows it as judged.
        round.base = base.clone();
        if let Some(i) = round.chosen {
            let t = &round.tried[i];
            let changes: Vec<Change> = t
                .changes
                .iter()
                .filter_map(|c| c.split_once(": ").map(|(k, v)| Change::new(k, v)))
                .collect();
            current = apply(&current, t.finding, &changes)?;
            if let Some(m) = &t.measured {
                base = m.clone();
            }
        }
        print_round(&mut out, round_no, &round);
        rounds.push(round);
        if runner.left() == 0 {
            break;
        }
    }
    let changed = current.knob_differences(&original);
    if changed.is_empty() {
        let _ = writeln!(
            out,
            "nothing to change: {}",
            if rounds
                .iter()
                .flat_map(|r| &r.tried)
                .all(|t| t.kind == Kind::Job)
            {
                "no finding with a profile fix to try".to_string()
            } else {
                "no candidate was better on the objective without a cost it does not pay for"
                    .to_string()
            }
        );
    } else {
        // The guarantee: never worse than the start beyond a band unless allowed or paid for.
        let (decision, deltas) = decide(&start.scorecard, &base.scorecard, objective, &constraints);
        // After one kept round its table above is this one.
        if rounds.iter().filter(|r| r.chosen.is_some()).count() > 1 {
            let _ = writeln!(out, "the tuned profile against the start:");
            let _ = write!(
                out,
                "{}",
                scorecard::render(&[("start", &start.scorecard), ("tuned", &base.scorecard)])
            );
        }
        match decision {
            Decision::Kept(why) => {
                let cost = original_cost(&original, &current);
                let path = write_profile(&original, &current, &changed, args.output.as_deref())?;
                let _ = writeln!(
                    out,
                    "tuned profile: {} ({}; managed memory {}{cost})\n  {why}",
                    path.display(),
                    changed
                        .iter()
                        .map(|(k, old, new)| format!("{k} {old} -> {new}"))
                        .collect::<Vec<_>>()
                        .join(", "),
                    current.knobs.managed_memory,
                );
            }
            Decision::Rejected(why) | Decision::Unsure(why) => {
                let _ = writeln!(
                    out,
                    "not written: the rounds' changes together are not better than the start ({why}); {}",
                    moved(&deltas)
                );
                current = original.clone();
            }
        }
        let _ = write!(out, "{}", report::render_findings(&base.findings));
    }
    let jobs: Vec<&Tried> = rounds
        .iter()
        .flat_map(|r| &r.tried)
        .filter(|t| t.kind == Kind::Job && t.runs > 0)
        .collect();
    for t in &jobs {
        let _ = writeln!(
            out,
            "job change ({}, not in the profile: change the job): {} — {}",
            t.finding,
            t.changes.join(", "),
            t.verdict
        );
    }
    if repeat == 1 && runner.used > 1 {
        let _ = writeln!(
            out,
            "note: --repeat 1: a candidate whose gain is within the floor of one run is rejected, not run again"
        );
    }
    let _ = writeln!(out, "runs: {} of at most {}", runner.used, runner.max);
    if let Some(path) = &args.job.report {
        let mut json = serde_json::to_vec_pretty(&serde_json::json!({
            "workload": job.workload.name,
            "profile": original.name,
            "objective": args.objective,
            "objective_figure": objective,
            "constraints": {
                "memory_budget": constraints.memory_budget,
                "max_write_amp": constraints.max_write_amp,
                "min_task_heap": constraints.min_task_heap,
                "allow": constraints.allow,
            },
            "repeat": repeat,
            "runs": runner.used,
            "max_runs": runner.max,
            "start": start,
            "rounds": rounds,
            "final": base,
            "tuned": current.knob_differences(&original).iter().map(|(k, _, v)| format!("{k}: {v}")).collect::<Vec<_>>(),
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
fn print_round(out: &mut impl std::io::Write, n: u32, round: &Round) {
    let _ = writeln!(
        out,
        "round {n} (base: {}, {} run{}):",
        round.base.profile,
        round.base.runs.len(),
        if round.base.runs.len() == 1 { "" } else { "s" }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::advisor::Severity;

    /// Scorecards of `n` runs with these events/s, p999 latency (µs) and write amplification.
    fn card(eps: &[f64], p999: f64, write_amp: f64) -> Scorecard {
        let runs: Vec<Summary> = eps
            .iter()
            .map(|e| Summary {
                events: 10_000,
                records_processed: 10_000,
                events_per_sec: *e,
                p999_event_latency_us: p999,
                write_amplification: write_amp,
                ..Summary::default()
            })
            .collect();
        Scorecard::new(
            &runs,
            &Context {
                paced: false,
                managed_memory: 64 << 20,
                task_heap: None,
            },
        )
    }

    fn constraints() -> Constraints {
        Constraints {
            memory_budget: 64 << 20,
            max_write_amp: None,
            min_task_heap: None,
            allow: Vec::new(),
        }
    }

    #[test]
    fn a_gain_within_noise_is_unsure_and_a_cost_unpaid_is_rejected() {
        let before = card(&[1000.0], 1500.0, 0.31);
        // +5 % events/s, one run a side: within the 10 % floor, worth more runs.
        let (d, _) = decide(
            &before,
            &card(&[1050.0], 1500.0, 0.31),
            Figure::EventsPerSec,
            &constraints(),
        );
        assert!(
            matches!(&d, Decision::Unsure(w) if w.contains("within the band")),
            "{d:?}"
        );
        // With repeats the bands apart: +8 % is real, but write amplification 0.31 -> 1.65 is a
        // cost 8 % does not pay for.
        let before = card(&[1000.0, 1010.0, 1020.0], 1500.0, 0.31);
        let after = card(&[1090.0, 1100.0, 1110.0], 1500.0, 1.65);
        let (d, _) = decide(&before, &after, Figure::EventsPerSec, &constraints());
        assert!(
            matches!(&d, Decision::Rejected(w) if w.contains("write amplification 0.31 -> 1.65") && w.contains("--allow write-amp")),
            "{d:?}"
        );
        // Allowed, it is kept, and the allowance is said.
        let allowed = Constraints {
            allow: vec![Figure::WriteAmp],
            ..constraints()
        };
        let (d, _) = decide(&before, &after, Figure::EventsPerSec, &allowed);
        assert!(
            matches!(&d, Decision::Kept(w) if w.contains("allowed worse: write amplification")),
            "{d:?}"
        );
        // A hard constraint holds whatever the gain.
        let capped = Constraints {
            max_write_amp: Some(1.0),
            ..allowed
        };
        let (d, _) = decide(&before, &after, Figure::EventsPerSec, &capped);
        assert!(
            matches!(&d, Decision::Rejected(w) if w.contains("0.31 -> 1.65 (5.32x) over --max-write-amp 1")),
            "{d:?}"
        );
    }

    #[test]
    fn a_gain_of_ten_percent_pays_for_a_cost_and_says_it() {
        let before = card(&[1000.0, 1010.0, 1020.0], 1500.0, 0.31);
        let after = card(&[1500.0, 1510.0, 1520.0], 1500.0, 1.65);
        let (d, _) = decide(&before, &after, Figure::EventsPerSec, &constraints());
        assert!(
            matches!(&d, Decision::Kept(w) if w.contains("COST") && w.contains("write amplification 0.31 -> 1.65")),
            "{d:?}"
        );
        // A latency objective: p999 worse is the objective worse.
        let (d, _) = decide(
            &card(&[1000.0], 1500.0, 0.31),
            &card(&[1000.0], 3000.0, 0.31),
            Figure::P999Latency,
            &constraints(),
        );
        assert!(
            matches!(&d, Decision::Rejected(w) if w.contains("worse beyond the band")),
            "{d:?}"
        );
    }

    #[test]
    fn a_candidate_over_the_budget_or_squeezing_the_task_heap_is_refused_before_running() {
        // A 4-slot, 8 GB TaskManager: 711.7 MiB of managed memory a slot, 3.2 GiB of task heap.
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/valid/flink-4-slots-8g/config.yaml"
        );
        let profile = Profile::load(path).unwrap();
        let heap = crate::commands::task_heap_left(&profile).unwrap();
        assert_eq!(human_bytes(heap as f64), "3.2 GiB");
        let constraints = Constraints {
            memory_budget: 2 << 30,
            max_write_amp: None,
            min_task_heap: Some(2 << 30),
            allow: Vec::new(),
        };
        assert_eq!(refused_before_running(&profile, &constraints), None);
        // 1.5 GiB a slot: 6 GiB of managed memory leaves the job's own heap under 2 GiB.
        let squeezed = profile.edited("memory.managed-size", "1536mb").unwrap();
        let why = refused_before_running(&squeezed, &constraints).unwrap();
        assert!(
            why.starts_with("not run: task heap left")
                && why.ends_with("under --min-task-heap 2.0 GiB"),
            "{why}"
        );
        let over = profile.edited("memory.managed-size", "3gb").unwrap();
        let why = refused_before_running(&over, &constraints).unwrap();
        assert!(
            why.contains("needs memory.managed-size 3gb")
                && why.contains("over the budget 2.0 GiB"),
            "{why}"
        );
    }

    #[test]
    fn neighbours_are_half_and_twice_a_size_the_other_bool_and_bits_per_key() {
        let n = |k: &str, v: &str| neighbours(&Change::new(k, v));
        assert_eq!(n("writebuffer.size", "2mb"), ["1mb", "4mb"]);
        assert_eq!(n("use-bloom-filter", "true"), ["false"]);
        assert_eq!(n("bloom-filter.bits-per-key", "10"), ["5", "15"]);
        // A count or a ratio: none.
        assert!(n("writebuffer.count", "3").is_empty());
        assert!(n("memory.write-buffer-ratio", "0.5").is_empty());
    }

    #[test]
    fn candidates_come_cheapest_first_and_job_changes_apart() {
        let profile = Profile::load("flink-default").unwrap();
        let workload = Workload::load("sessions-process").unwrap();
        let finding = |id: &'static str, rec: Vec<Change>, jobs: Vec<Change>| Finding {
            id,
            severity: Severity::Warning,
            diagnosis: String::new(),
            evidence: Vec::new(),
            from_secs: 0.0,
            to_secs: 1.0,
            recommendation: rec,
            memory_cost: 0,
            job_changes: jobs,
            note: None,
            effect: None,
            alternatives: vec![crate::advisor::Fix {
                changes: vec![Change::new("writebuffer.count", 3)],
                memory_cost: 0,
                effect: String::new(),
            }],
            cost: None,
            overruled: Vec::new(),
        };
        let findings = [
            finding(
                "a",
                vec![Change::new("writebuffer.size", "8mb")],
                Vec::new(),
            ),
            finding(
                "b",
                Vec::new(),
                vec![Change::new("job.function", "aggregate")],
            ),
        ];
        let c = candidates(&findings, &profile, &workload).unwrap();
        let names: Vec<String> = c
            .iter()
            .map(|c| {
                format!(
                    "{} {}: {}",
                    c.finding,
                    c.source,
                    Change::list(&c.changes, "=")
                )
            })
            .collect();
        // b's alternative is a's: tried once.
        assert_eq!(
            names,
            [
                "a recommendation: writebuffer.size=8mb",
                "a alternative 1: writebuffer.count=3",
                "a neighbour of writebuffer.size: writebuffer.size=4mb",
                "a neighbour of writebuffer.size: writebuffer.size=16mb",
                "b job change: job.function=aggregate",
            ]
        );
        let job = c.last().unwrap();
        assert_eq!(job.kind, Kind::Job);
        assert_eq!(
            job.profile.knobs, profile.knobs,
            "a job change leaves the profile"
        );
        assert!(format!("{:?}", job.workload.spec.job).contains("Aggregate"));
    }
}
