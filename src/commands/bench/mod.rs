//! `statebench bench`: run a suite's cases, print them, compare them with a baseline, and exit
//! non-zero on a regression.

use std::path::Path;

mod advice;
mod preload;

use anyhow::{Context as _, bail};

use super::UsageError;
use crate::backend::oplog;
use crate::cli::BenchArgs;
use crate::config::units::Millis;
use crate::config::{Profile, Workload};
use crate::engine::EngineConfig;
use crate::suites::overhead::Overhead;
use crate::suites::{self, CaseResult, Gate, Results, Suite, Verdict};
use crate::summary::Summary;
use crate::util::fs::write_atomically;

pub fn run(args: BenchArgs) -> anyhow::Result<()> {
    let all = args.suite.cases();
    if args.list && !matches!(args.suite, Suite::Advice | Suite::Preload) {
        for c in all {
            println!("{:<20} {}", c.name, c.describe(c.profile));
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
    if args.suite == Suite::Overhead {
        return overhead(&args);
    }
    if args.suite == Suite::Scale {
        return scale(&args);
    }
    if args.suite == Suite::Fidelity {
        return fidelity(&args);
    }
    if args.suite == Suite::Advice {
        return advice::run(&args);
    }
    if args.suite == Suite::Preload {
        return preload::run(&args);
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
    let override_profile = args
        .profile
        .as_deref()
        .map(super::load_profile)
        .transpose()?;
    let cases = selected(all, &args);
    let mut measured = Vec::new();
    for (i, case) in cases.iter().enumerate() {
        let profile = case.profile(override_profile.as_ref())?;
        let workload = Workload::load(case.workload)?;
        eprintln!(
            "bench {}/{}: {} ({}) ...",
            i + 1,
            cases.len(),
            case.name,
            case.describe(&profile.name)
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
        print!("{}", suites::render_results(&results));
        return Ok(());
    };
    let gate = Gate {
        max_regression_pct: args.max_regression,
        timings: args.timings,
    };
    let rows = suites::compare(&baseline, &results, gate);
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
    print!("{}", suites::render(&rows, args.verbose));
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
    measure_with(workload, profile, events, |_| {})
}

/// One run of `events` on a fresh data directory, with `setup` changing its configuration.
fn measure_with(
    workload: Workload,
    profile: Profile,
    events: u64,
    setup: impl FnOnce(&mut EngineConfig),
) -> anyhow::Result<Summary> {
    measure_snapshots(workload, profile, events, setup).map(|(summary, _)| summary)
}

/// `measure_with`, and the run's snapshots.
fn measure_snapshots(
    workload: Workload,
    profile: Profile,
    events: u64,
    setup: impl FnOnce(&mut EngineConfig),
) -> anyhow::Result<(Summary, Vec<crate::engine::MetricsSnapshot>)> {
    let dir = temp_dir()?;
    let mut config = EngineConfig {
        events,
        ..EngineConfig::new(workload, profile, dir.path())
    };
    setup(&mut config);
    let job = Summary::default().for_job(&config.workload).job;
    let outcome = crate::engine::run_to_completion(config)?;
    let summary = Summary {
        job,
        ..Summary::new(&outcome)
    };
    Ok((summary, outcome.snapshots))
}

fn temp_dir() -> anyhow::Result<tempfile::TempDir> {
    tempfile::Builder::new()
        .prefix("statebench-bench-")
        .tempdir()
        .context("cannot create a temporary data directory")
}

/// The scale suite: each case from its preloaded state (the bases built once and kept under
/// --preload-dir), then the table of figures per size and their ratios.
fn scale(args: &BenchArgs) -> anyhow::Result<()> {
    if args.baseline.is_some() || args.save_baseline.is_some() || args.timings {
        bail!(UsageError(
            "the scale suite shows how cost grows with state, not a regression: drop --baseline, --save-baseline and --timings"
                .to_string()
        ));
    }
    let dir = super::preload_dir(args.preload_dir.as_deref())?;
    let override_profile = args
        .profile
        .as_deref()
        .map(super::load_profile)
        .transpose()?;
    let cases = selected(Suite::Scale.cases(), args);
    let mut rows = Vec::new();
    for (i, case) in cases.iter().enumerate() {
        let profile = case.profile(override_profile.as_ref())?;
        let workload = Workload::load(case.workload)?;
        let size = case.preload.unwrap_or("size=512MiB");
        eprintln!(
            "bench {}/{}: {} ({}) ...",
            i + 1,
            cases.len(),
            case.name,
            case.describe(&profile.name)
        );
        let spec = crate::config::workload::PreloadSpec::parse(&format!("{size},memory=4GiB"))
            .map_err(|e| anyhow::anyhow!("bench case {}: {e}", case.name))?;
        let summary = measure_with(workload, profile, case.events, |config| {
            config.preload = Some(preload(spec, &dir));
        })
        .with_context(|| format!("bench case {} failed", case.name))?;
        rows.push(suites::scale::ScaleRow::new(case.name, size, &summary));
    }
    print!("{}", suites::scale::render(&rows));
    if let Some(path) = &args.json {
        write_json(path, &serde_json::to_value(&rows)?)?;
    }
    Ok(())
}

/// The cases of `all` that --case names (all of them without it).
fn selected<'c>(all: &'c [suites::Case], args: &BenchArgs) -> Vec<&'c suites::Case> {
    all.iter()
        .filter(|c| args.case.is_empty() || args.case.iter().any(|n| n == c.name))
        .collect()
}

/// A bench run's preload: bases kept in `dir`, its build's progress shown.
fn preload(
    spec: crate::config::workload::PreloadSpec,
    dir: &Path,
) -> crate::preload::PreloadConfig {
    crate::preload::PreloadConfig {
        spec,
        dir: dir.to_path_buf(),
        rebuild: false,
        progress: true,
        check_sample: None,
    }
}

/// Records per second every fidelity run is capped at.
const FIDELITY_RATE: u64 = 15_000;
/// Bytes each record of the fidelity case writes (its state's value size).
const FIDELITY_RECORD_BYTES: u64 = 1024;

/// The fidelity suite: its case's history preloaded (all in the last level, and with every
/// level full) and its records read live, against the history and the records all read through
/// RocksDB; a table for each kind of base, exit 1 beyond a tolerance.
fn fidelity(args: &BenchArgs) -> anyhow::Result<()> {
    use crate::suites::fidelity::{Tree, Window, compare, render};
    if args.baseline.is_some() || args.save_baseline.is_some() || args.timings {
        bail!(UsageError(
            "the fidelity suite judges a preloaded state against one built by records, not a baseline: drop --baseline, --save-baseline and --timings"
                .to_string()
        ));
    }
    let Some(case) = Suite::Fidelity.cases().first() else {
        return Ok(());
    };
    let dir = super::preload_dir(args.preload_dir.as_deref())?;
    let profile = match args.profile.as_deref() {
        Some(p) => super::load_profile(p)?,
        // Bloom filters on, so that filter bytes and filter cache hits are compared too.
        None => Profile::load(case.profile)?.edited("use-bloom-filter", "true")?,
    };
    let mut workload = Workload::load(case.workload)?;
    // 1 M keys of 1 KiB: about 1 GiB. Samples every 100 ms, to find where the history ends.
    workload.spec.keys.count = 1_000_000;
    workload.spec.sample_interval = Millis(100);
    // Both at a rate this machine's compactions keep up with (a job's steady state, not a
    // burst that leaves compaction debt behind: unpaced, the run built by records ended with
    // 13 L0 files, L1 at 2.4x its target and 1.8 GiB of SST for 0.95 GiB of data).
    workload.spec.rate = crate::config::workload::Rate::PerSecond(FIDELITY_RATE);
    let amount = case.preload.unwrap_or("events=3000000");
    let spec = crate::config::workload::PreloadSpec::parse(&format!("{amount},memory=4GiB"))
        .map_err(|e| anyhow::anyhow!("bench case {}: {e}", case.name))?;
    let history = spec.events.unwrap_or(0);
    // The preloaded run's history ends one L1 of writes earlier and it reads those records
    // live first: the levels above the base fill from live writes, and only then does its
    // compaction work per record settle (measured: 0.27x of the built run's without them).
    // One L1 (256 MiB at Flink's default max-size-level-base) of 1 KiB records.
    let settle =
        (profile.knobs.max_bytes_for_level_base.0 / FIDELITY_RECORD_BYTES).min(history / 2);
    let mut spec = spec;
    spec.events = Some(history - settle);
    eprintln!(
        "fidelity 1/3: {} from {} records preloaded, then {settle} records to settle and {} compared",
        case.workload,
        history - settle,
        case.events
    );
    let (pre, pre_snaps) = measure_snapshots(
        workload.clone(),
        profile.clone(),
        settle + case.events,
        |c| {
            c.preload = Some(preload(spec, &dir));
        },
    )
    .context("the preloaded run failed")?;
    // The whole history preloaded with every level full (`levels=full`): its upper levels
    // need no records to fill, so the compared records are its first.
    let mut full = spec;
    full.events = Some(history);
    full.levels = Some(crate::config::workload::Levels::Full);
    eprintln!(
        "fidelity 2/3: {} from {history} records preloaded with every level full, then {} compared",
        case.workload, case.events
    );
    let (pre_full, full_snaps) =
        measure_snapshots(workload.clone(), profile.clone(), case.events, |c| {
            c.preload = Some(preload(full, &dir));
        })
        .context("the run preloaded with every level full failed")?;
    eprintln!(
        "fidelity 3/3: {} with all {} records read through RocksDB",
        case.workload,
        history + case.events
    );
    let (built, built_snaps) = measure_snapshots(workload, profile, history + case.events, |_| {})
        .context("the run built by records failed")?;
    let (Some(pw), Some(fw), Some(bw)) = (
        Window::of(&pre_snaps, settle),
        Window::of(&full_snaps, 0),
        Window::of(&built_snaps, history),
    ) else {
        bail!("a run ended before its snapshots covered the compared records");
    };
    let built = (&Tree::of(&built, &built_snaps), &bw);
    let mut all_ok = true;
    for (title, pre) in [
        (
            format!(
                "preloaded: all in the last level (levels=last), {settle} records read live to fill the levels above, then the compared ones"
            ),
            (&Tree::of(&pre, &pre_snaps), &pw),
        ),
        (
            "preloaded: every level full (levels=full), the compared records read live at once"
                .to_string(),
            (&Tree::of(&pre_full, &full_snaps), &fw),
        ),
    ] {
        let (table, ok) = render(&compare(pre, built));
        println!("{title}\n{table}");
        all_ok &= ok;
    }
    if !all_ok {
        bail!("a preloaded state differs from the one built by records beyond a tolerance");
    }
    println!("fidelity: every judged figure within its tolerance, for both kinds of base");
    Ok(())
}

/// Profiled runs whose CPU samples (a) is read from.
const PROFILED_RUNS: usize = 3;

/// The overhead suite (see `suites::overhead`): one recorded run, then `--rounds` of a run, a
/// replay and a run with sampling off (the run first in odd rounds, last in even ones), then
/// three profiled runs.
fn overhead(args: &BenchArgs) -> anyhow::Result<()> {
    if args.baseline.is_some() || args.save_baseline.is_some() || args.timings {
        bail!(UsageError(
            "the overhead suite is judged against its budgets (docs/overhead.md), not a \
             baseline: drop --baseline, --save-baseline and --timings"
                .to_string()
        ));
    }
    if args.rounds == 0 {
        bail!(UsageError(
            "--rounds 0: give at least 1 (5 or more for a median worth quoting)".to_string()
        ));
    }
    if let Some(path) = args.json.as_deref() {
        super::check_report_dir(Some(path))?;
    }
    let case = args.suite.cases()[0];
    let profile = super::load_profile(args.profile.as_deref().unwrap_or(case.profile))?;
    let mut every_second = Workload::load(case.workload)?;
    every_second.spec.sample_interval = Millis(1000);
    // Sampling off: an interval no run of this size reaches.
    let mut sampling_off = every_second.clone();
    sampling_off.spec.sample_interval = Millis(3_600_000);
    let events = case.events;
    let steps = 1 + args.rounds + PROFILED_RUNS;
    let work = temp_dir()?;
    let log = work.path().join("ops.log");
    eprintln!(
        "overhead 1/{steps}: {} on {}, {events} events, recording its RocksDB operations ...",
        case.workload, profile.name
    );
    measure_with(every_second.clone(), profile.clone(), events, |c| {
        c.record_ops = Some(log.clone());
    })?;
    let mut run_vs_replay = Vec::new();
    let mut sampling_cost = Vec::new();
    for round in 1..=args.rounds {
        // The run first in odd rounds (run, replay, sampling off), last in even ones (sampling
        // off, replay, run): what one leaves behind (page cache, freed memory, a warm CPU)
        // favours neither side of either pair's median.
        let replay = || -> anyhow::Result<f64> {
            let replay_dir = temp_dir()?;
            Ok(oplog::replay(&log, replay_dir.path(), &profile)
                .context("cannot replay the recorded operations")?
                .marked
                .as_secs_f64())
        };
        let run = || -> anyhow::Result<f64> {
            Ok(measure(every_second.clone(), profile.clone(), events)?.processing_secs)
        };
        let off = || -> anyhow::Result<f64> {
            Ok(measure(sampling_off.clone(), profile.clone(), events)?.processing_secs)
        };
        let (run, replay, off) = if round % 2 == 1 {
            let run = run()?;
            let replay = replay()?;
            (run, replay, off()?)
        } else {
            let off = off()?;
            let replay = replay()?;
            (run()?, replay, off)
        };
        eprintln!(
            "overhead {}/{steps}: run {run:.2} s, replay {replay:.2} s, run with sampling off \
             {off:.2} s",
            round + 1
        );
        if run > 0.0 {
            // Same events: events/s of the run / of the replay = replay time / run time.
            run_vs_replay.push(replay / run);
            sampling_cost.push(1.0 - off / run);
        }
    }
    // Three profiled runs, their samples added: one run of this size gives about 1,000, too few
    // to read a 10 % share to better than about ±1 %.
    let mut profiled = Vec::new();
    for i in 1..=PROFILED_RUNS {
        eprintln!(
            "overhead {}/{steps}: the run with the CPU profiler ({i} of {PROFILED_RUNS}) ...",
            args.rounds + 1 + i
        );
        let session = crate::profiler::Session::start()?;
        let summary = measure_with(every_second.clone(), profile.clone(), events, |c| {
            c.cpu = Some(session.tap());
        })?;
        // The run's tap is gone with the run: wait for sampling to stop before the next.
        session.stop();
        profiled.push(
            summary
                .cpu
                .context("the profiled run reported no CPU samples")?,
        );
    }
    let cpu = crate::profiler::CpuSample::merge(&profiled);
    let shares = cpu.shares_without_profiler();
    let result = Overhead {
        workload: case.workload.to_string(),
        profile: profile.name.clone(),
        events,
        cpu_samples: shares.samples,
        own_share: shares.statebench,
        unattributed_share: shares.other,
        profiler_share: shares.profiler,
        sampling_cpu_share: shares.metrics_sampling,
        run_vs_replay,
        sampling_cost,
    };
    if let Some(path) = &args.json {
        write_json(path, &result.dashboard())?;
        eprintln!(
            "dashboard JSON (customSmallerIsBetter) written to {}",
            path.display()
        );
    }
    print!("{}", result.render());
    let over: Vec<&str> = result
        .figures()
        .iter()
        .filter(|f| !f.within)
        .map(|f| f.name)
        .collect();
    if !over.is_empty() {
        bail!("over budget: {}", over.join(", "));
    }
    println!("every figure within its budget");
    Ok(())
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
    if results.schema_version != suites::SCHEMA_VERSION {
        bail!(UsageError(format!(
            "{}: schema_version {} is not the {} this build reads",
            path.display(),
            results.schema_version,
            suites::SCHEMA_VERSION
        )));
    }
    Ok(results)
}

fn write_json(path: &Path, value: &serde_json::Value) -> anyhow::Result<()> {
    let mut bytes = serde_json::to_vec_pretty(value)?;
    bytes.push(b'\n');
    write_atomically(path, &bytes).with_context(|| format!("cannot write {}", path.display()))
}
