//! `statebench bench`: run a suite's cases, print them, compare them with a baseline, and exit
//! non-zero on a regression.

use std::path::Path;

use anyhow::{Context as _, bail};

use super::UsageError;
use crate::bench::{self, CaseResult, Gate, Results, Verdict};
use crate::cli::BenchArgs;
use crate::config::{Profile, Workload};
use crate::engine::EngineConfig;
use crate::report::{self, Summary};

pub fn run(args: BenchArgs) -> anyhow::Result<()> {
    let all = args.suite.cases();
    if args.list {
        for c in all {
            println!(
                "{:<20} {} on {}, {} events",
                c.name, c.workload, c.profile, c.events
            );
        }
        return Ok(());
    }
    if let Some(unknown) = args.case.iter().find(|n| !all.iter().any(|c| c.name == *n)) {
        let known: Vec<&str> = all.iter().map(|c| c.name).collect();
        bail!(UsageError(format!(
            "--case {unknown}: no such case in suite {} (available: {})",
            args.suite.name(),
            known.join(", ")
        )));
    }
    if !(args.max_regression >= 0.0 && args.max_regression.is_finite()) {
        bail!(UsageError(format!(
            "--max-regression {}: give a percentage of 0 or more (e.g. 5)",
            args.max_regression
        )));
    }
    // Read the baseline first: a bad one is known before minutes of running.
    let baseline = args.baseline.as_deref().map(read_results).transpose()?;
    for path in [args.save_baseline.as_deref(), args.json.as_deref()]
        .into_iter()
        .flatten()
    {
        super::check_report_dir(Some(path))?;
    }
    let override_profile = args.profile.as_deref().map(Profile::load).transpose()?;
    let cases: Vec<_> = all
        .iter()
        .filter(|c| args.case.is_empty() || args.case.iter().any(|n| n == c.name))
        .collect();
    let mut measured = Vec::new();
    for (i, case) in cases.iter().enumerate() {
        let profile = match &override_profile {
            Some(p) => p.clone(),
            None => Profile::load(case.profile)?,
        };
        let workload = Workload::load(case.workload)?;
        eprintln!(
            "bench {}/{}: {} ({} on {}, {} events) ...",
            i + 1,
            cases.len(),
            case.name,
            case.workload,
            profile.name,
            case.events
        );
        let summary = measure(workload, profile.clone(), case.events)
            .with_context(|| format!("bench case {} failed", case.name))?;
        measured.push(CaseResult::new(case, &profile.name, &summary));
    }
    let results = Results::new(args.suite, measured);
    if let Some(path) = &args.save_baseline {
        write_json(path, &serde_json::to_value(&results)?)?;
        eprintln!("baseline written to {}", path.display());
    }
    if let Some(path) = &args.json {
        write_json(path, &results.dashboard())?;
        eprintln!(
            "dashboard JSON (customSmallerIsBetter) written to {}",
            path.display()
        );
    }
    let Some(baseline) = baseline else {
        print!("{}", bench::render_results(&results));
        return Ok(());
    };
    let gate = Gate {
        max_regression_pct: args.max_regression,
        timings: args.timings,
    };
    let rows = bench::compare(&baseline, &results, gate);
    if !rows.iter().any(|r| r.baseline.is_some()) {
        bail!(UsageError(format!(
            "the baseline {} has none of these cases (it holds: {})",
            args.baseline
                .as_deref()
                .map_or(String::new(), |p| p.display().to_string()),
            baseline
                .cases
                .iter()
                .map(|c| c.case.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    print!("{}", bench::render(&rows, args.verbose));
    let regressions = rows
        .iter()
        .filter(|r| r.verdict == Verdict::Regression)
        .count();
    let gated = rows
        .iter()
        .filter(|r| r.verdict != Verdict::NotGated)
        .count();
    if regressions > 0 {
        bail!(
            "{regressions} of {gated} gated metrics regressed beyond {}% (and their noise allowance)",
            args.max_regression
        );
    }
    println!(
        "no regression: {gated} metrics within {}% of the baseline (and their noise allowance){}",
        args.max_regression,
        if args.timings {
            ""
        } else {
            "; timings shown, not gated (--timings gates them)"
        }
    );
    Ok(())
}

fn measure(workload: Workload, profile: Profile, events: u64) -> anyhow::Result<Summary> {
    let dir = tempfile::Builder::new()
        .prefix("statebench-bench-")
        .tempdir()
        .context("cannot create a temporary data directory")?;
    let outcome = crate::engine::run_to_completion(EngineConfig {
        events,
        ..EngineConfig::new(workload, profile, dir.path())
    })?;
    Ok(Summary::new(&outcome))
}

fn read_results(path: &Path) -> anyhow::Result<Results> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| UsageError(format!("cannot read the baseline {}: {e}", path.display())))?;
    let results: Results = serde_json::from_str(&text).map_err(|e| {
        UsageError(format!(
            "{} is not a statebench bench baseline (written by --save-baseline): {e}",
            path.display()
        ))
    })?;
    if results.schema_version != bench::SCHEMA_VERSION {
        bail!(UsageError(format!(
            "{}: schema_version {} is not the {} this build reads",
            path.display(),
            results.schema_version,
            bench::SCHEMA_VERSION
        )));
    }
    Ok(results)
}

fn write_json(path: &Path, value: &serde_json::Value) -> anyhow::Result<()> {
    let mut bytes = serde_json::to_vec_pretty(value)?;
    bytes.push(b'\n');
    report::write_atomically(path, &bytes)
        .with_context(|| format!("cannot write {}", path.display()))
}
