//! The search: the start measured, then rounds of candidates judged against the profile kept
//! so far, within the run caps.

use anyhow::Context as _;
use serde::Serialize;

use super::candidates::{Candidate, Kind, apply, candidates};
use super::decide::{Constraints, Decision, decide, decide_candidate, refused_before_running};
pub use super::measured::{Measured, Tried};
use super::rank::Pace;
pub use super::rank::oriented;
use crate::advisor::{Change, Finding};
use crate::cli::Objective;
use crate::commands::Job;
use crate::config::{Profile, Workload};
use crate::engine::EngineConfig;
use crate::preload::PreloadConfig;
use crate::reproduce::proofs;
use crate::summary::Summary;
use crate::summary::scorecard::{Delta, Figure, Verdict};

/// How a search runs: what it improves, within what, and how many runs it may take.
pub struct Settings {
    pub objective: Objective,
    pub constraints: Constraints,
    /// Runs a candidate may take at most.
    pub repeat: usize,
    pub rounds: u32,
    /// Runs of profile candidates one round may take.
    pub round_runs: u32,
    /// Runs the whole search may take, the start's included.
    pub max_runs: u32,
}

/// What a search saw and what it ends with.
pub struct Search {
    /// The figure the objective reads (CPU per event for throughput where the rate bounds it).
    pub objective: Figure,
    /// The profile as given, measured.
    pub start: Measured,
    pub rounds: Vec<Round>,
    /// The last kept candidate's measurement (the start's when none was kept).
    pub last: Measured,
    /// The tuned profile: the start's when nothing was kept, or when the kept changes together
    /// are not better than the start.
    pub tuned: Profile,
    /// The kept changes together against the start (None: nothing was kept).
    pub verdict: Option<(Decision, Vec<Delta>)>,
    pub runs: u32,
    pub max_runs: u32,
    /// The preload every run started from after the start's (its history pinned).
    pub preload: Option<PreloadConfig>,
}

impl Search {
    /// Every profile candidate that ran, in the order tried.
    pub fn ran(&self) -> impl Iterator<Item = &Tried> {
        self.rounds
            .iter()
            .flat_map(|r| &r.tried)
            .filter(|t| t.kind == Kind::Profile && t.measured.is_some())
    }

    /// The job changes measured (never in the profile).
    pub fn job_changes(&self) -> impl Iterator<Item = &Tried> {
        self.rounds
            .iter()
            .flat_map(|r| &r.tried)
            .filter(|t| t.kind == Kind::Job && t.runs > 0)
    }
}

/// What a search reports as it goes: the objective once the start has run, then each round.
pub enum Progress<'a> {
    Objective { figure: Figure, rate_bound: bool },
    Round(u32, &'a Round),
}

#[derive(Serialize)]
pub struct Round {
    pub base: Measured,
    /// The figure this round judged by: CPU per event for throughput once the base keeps a
    /// paced workload's rate (events/s cannot rise above it), the search's objective otherwise.
    pub objective: Figure,
    pub tried: Vec<Tried>,
    /// Index into `tried` of the candidate kept for the next round.
    pub chosen: Option<usize>,
    /// Candidates not tried: the round's or the tune's runs were used up.
    pub not_tried: Vec<String>,
}

/// Runs of the job, counted against the tune's cap.
pub struct Runner<'a> {
    job: &'a Job,
    /// The preloaded state every run starts from, if any (the base is built once per profile's
    /// table options and kept).
    preload: Option<PreloadConfig>,
    pub used: u32,
    pub max: u32,
    /// Who runs, in the progress lines ("tune", "advice").
    label: &'static str,
}

impl<'a> Runner<'a> {
    pub fn new(job: &'a Job, preload: Option<&'a PreloadConfig>, max: u32) -> Runner<'a> {
        Runner {
            job,
            preload: preload.cloned(),
            used: 0,
            max: max.max(1),
            label: "tune",
        }
    }

    /// A preload given as a size or a span of event time reads as much history as it takes
    /// for the profile at hand: a filter or a block size changes the SST bytes, so two profiles
    /// would start from different histories and their runs read different events. Pinned to
    /// the records `first`'s base held, every later run starts from that same history. Says so
    /// (None: nothing to pin).
    pub fn pin_history(&mut self, first: &Summary) -> Option<String> {
        let preload = self.preload.as_mut()?;
        let records = first.preload.as_ref()?.records;
        let spec = &mut preload.spec;
        if spec.events.is_some() || records == 0 {
            return None;
        }
        let was = match (spec.size, spec.span) {
            (Some(size), _) => format!("size={size}"),
            (None, Some(span)) => format!("span={span}"),
            (None, None) => return None,
        };
        spec.events = Some(records);
        spec.size = None;
        spec.span = None;
        Some(format!(
            "preload: every later run starts from the start's history, events={records} (what {was} gave its profile), so all runs read the same events"
        ))
    }

    /// The preload the runs start from (pinned to one history once the start has run).
    pub fn preload(&self) -> Option<&PreloadConfig> {
        self.preload.as_ref()
    }

    /// The same runner, its progress lines saying `label` instead of "tune".
    pub fn labelled(self, label: &'static str) -> Runner<'a> {
        Runner { label, ..self }
    }

    pub fn left(&self) -> u32 {
        self.max.saturating_sub(self.used)
    }

    /// One run of `workload` on `profile` in a temporary directory, and the advisor's findings.
    pub fn run(
        &mut self,
        workload: &Workload,
        profile: &Profile,
        what: &str,
    ) -> anyhow::Result<(Summary, Vec<Finding>)> {
        self.used += 1;
        eprintln!(
            "{}: run {} of at most {}: {what} ...",
            self.label, self.used, self.max
        );
        let dir = tempfile::Builder::new()
            .prefix("statebench-tune-")
            .tempdir()
            .context("cannot create a temporary data directory")?;
        proofs::measure(EngineConfig {
            events: self.job.events,
            duration: self.job.duration,
            trace: self.job.trace.clone(),
            preload: self.preload.clone(),
            ..EngineConfig::new(workload.clone(), profile.clone(), dir.path())
        })
    }
}

/// The non-same figures of `deltas`: "events/s 3532 -> 6770 (1.92x) better, ...".
pub fn moved(deltas: &[Delta]) -> String {
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

/// Searches from `job`'s profile: the start measured (or `started`, its run already made and
/// counted as the search's first), then up to `settings.rounds` rounds of candidates from the
/// base's findings, within the run caps. `progress` hears the objective once the start has run
/// and each round when it ends.
pub fn search(
    job: &Job,
    preload: Option<&PreloadConfig>,
    settings: &Settings,
    started: Option<(Summary, Vec<Finding>)>,
    mut progress: impl FnMut(Progress<'_>),
) -> anyhow::Result<Search> {
    let original = job.profile.clone();
    let context = |p: &Profile, w: &Workload| crate::commands::score_context(w, p);
    let constraints = &settings.constraints;
    let mut runner = Runner::new(job, preload, settings.max_runs);
    let first = match started {
        Some(run) => {
            runner.used += 1;
            run
        }
        None => runner.run(&job.workload, &original, "the profile as given")?,
    };
    if let Some(note) = runner.pin_history(&first.0) {
        eprintln!("{note}");
    }
    let start = Measured::new(&original, context(&original, &job.workload), first);
    // Throughput of a paced workload that keeps its rate is bounded by the rate: CPU per event.
    let pace = Pace::of(job, &start);
    let rate_bound = pace.kept_by(&start);
    let objective = settings.objective.figure(rate_bound);
    progress(Progress::Objective {
        figure: objective,
        rate_bound,
    });
    let mut current = original.clone();
    let mut base = start.clone();
    let mut rounds: Vec<Round> = Vec::new();
    let mut tried_profiles: Vec<crate::config::profile::Knobs> = Vec::new();
    let mut tried_jobs: Vec<String> = Vec::new();
    // Changes rejected in a round: not tried again on a later round's base (twelve runs do not
    // afford it; case study 1's writebuffer.count: 3 once took five of them).
    let mut rejected: Vec<String> = Vec::new();
    for round_no in 1..=settings.rounds {
        let all = candidates(&base.findings, &current, &job.workload)?;
        let fresh: Vec<Candidate> = all
            .into_iter()
            .filter(|c| {
                let label = Change::list(&c.changes, ": ");
                match c.kind {
                    Kind::Profile => {
                        !tried_profiles.contains(&c.profile.knobs) && !rejected.contains(&label)
                    }
                    Kind::Job => !tried_jobs.contains(&label),
                }
            })
            .collect();
        if fresh.is_empty() {
            break;
        }
        // Once a kept fix brings a paced job up to its rate, the next rounds weigh CPU per event.
        let objective = settings.objective.figure(pace.kept_by(&base));
        let mut round = Round {
            base: base.clone(),
            objective,
            tried: Vec::new(),
            chosen: None,
            not_tried: Vec::new(),
        };
        let mut round_runs = 0;
        // Candidates whose gain was within the band after their first run: run again once every
        // fresh candidate has had its run (breadth first), as the round's runs allow.
        let mut unsure: Vec<(usize, Candidate)> = Vec::new();
        for cand in fresh {
            let label = Change::list(&cand.changes, ": ");
            let memory_cost = cand
                .profile
                .knobs
                .managed_memory
                .0
                .saturating_sub(current.knobs.managed_memory.0);
            let tried = Tried {
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
                verdict: String::new(),
            };
            // Constraints known before running cost no run.
            if cand.kind == Kind::Profile
                && let Some(why) = refused_before_running(&cand.profile, constraints)
            {
                tried_profiles.push(cand.profile.knobs.clone());
                round.tried.push(Tried {
                    verdict: why,
                    ..tried
                });
                continue;
            }
            // Once a candidate waits for a second run, two runs (its and the base's) are kept
            // for it: a round of first runs alone would confirm nothing.
            let reserve = if unsure.is_empty() { 0 } else { 2 };
            if runner.left() <= reserve
                || (cand.kind == Kind::Profile && round_runs + reserve >= settings.round_runs)
            {
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
            let measured = Measured::new(
                &cand.profile,
                ctx,
                runner.run(&cand.workload, &cand.profile, &what)?,
            );
            if cand.kind == Kind::Profile {
                round_runs += 1;
            }
            let (decision, deltas) =
                decide_candidate(&base.scorecard, &measured.scorecard, objective, constraints);
            let (kept, verdict) = match (cand.kind, decision) {
                (Kind::Job, _) => (false, job_effect(&deltas, objective)),
                (_, Decision::Kept(why)) => (true, why),
                (_, Decision::Rejected(why)) => (false, why),
                (_, Decision::Unsure(why)) => {
                    unsure.push((round.tried.len(), cand));
                    (false, why)
                }
            };
            round.tried.push(Tried {
                runs: measured.runs.len(),
                measured: Some(measured),
                deltas,
                kept,
                verdict,
                ..tried
            });
        }
        // The unsure ones again, the best first, within --repeat and the run caps: the
        // candidate's runs, and the base's to give it a band too.
        unsure.sort_by(|(x, _), (y, _)| pace.order(&round.tried[*y], &round.tried[*x], objective));
        for (i, cand) in unsure {
            let label = Change::list(&cand.changes, ": ");
            let what = format!(
                "round {round_no}, {} {}: {label}",
                cand.finding, cand.source
            );
            let Some(mut measured) = round.tried[i].measured.take() else {
                continue;
            };
            let (kept, verdict, deltas) = loop {
                let (decision, deltas) =
                    decide_candidate(&base.scorecard, &measured.scorecard, objective, constraints);
                match decision {
                    Decision::Kept(why) => break (true, why, deltas),
                    Decision::Rejected(why) => break (false, why, deltas),
                    Decision::Unsure(why) => {
                        let base_too = base.runs.len() < measured.runs.len() + 1;
                        let needs = 1 + u32::from(base_too);
                        if measured.runs.len() >= settings.repeat
                            || runner.left() < needs
                            || round_runs + needs > settings.round_runs
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
            let t = &mut round.tried[i];
            t.runs = measured.runs.len();
            t.measured = Some(measured);
            t.deltas = deltas;
            t.kept = kept;
            t.verdict = verdict;
        }
        for t in round
            .tried
            .iter()
            .filter(|t| t.kind == Kind::Profile && !t.kept)
        {
            rejected.push(t.changes.join(", "));
        }
        // The kept candidate with the best objective goes on.
        round.chosen = round
            .tried
            .iter()
            .enumerate()
            .filter(|(_, t)| t.kept)
            .max_by(|(_, x), (_, y)| pace.order(x, y, objective))
            .map(|(i, _)| i);
        // The base may have run again: the round's record shows it as judged.
        round.base = base.clone();
        if let Some(i) = round.chosen {
            let t = &round.tried[i];
            current = apply(&current, t.finding, &t.parsed_changes())?;
            if let Some(m) = &t.measured {
                base = m.clone();
                // The next rounds' base is no longer the profile as given: say so.
                base.profile = format!("{} with the changes kept", original.name);
            }
        }
        progress(Progress::Round(round_no, &round));
        rounds.push(round);
        if runner.left() == 0 {
            break;
        }
    }
    // The guarantee: never worse than the start beyond a band unless allowed or paid for, on
    // the start's objective.
    let objective = settings.objective.figure(rate_bound);
    let verdict = (!current.knob_differences(&original).is_empty())
        .then(|| decide(&start.scorecard, &base.scorecard, objective, constraints));
    let tuned = match &verdict {
        Some((Decision::Kept(_), _)) => current,
        _ => original,
    };
    Ok(Search {
        objective,
        start,
        rounds,
        last: base,
        tuned,
        verdict,
        runs: runner.used,
        max_runs: runner.max,
        preload: runner.preload().cloned(),
    })
}
