//! `statebench run`: a headless run with progress, the terminal summary and the JSON report.

use std::path::Path;

use anyhow::Context as _;

use super::{Job, UsageError};
use crate::cli::{RunArgs, SinkArg};
use crate::config::Workload;
use crate::engine::{
    self, DataDir, DataDirError, EngineCommand, EngineConfig, SinkConfig, identity,
};
use crate::pipeline;
use crate::profiler;
use crate::progress::Progress;
use crate::report::{self, Report, RunSegment};
use crate::util::fs::write_atomically;

pub fn run(args: RunArgs) -> anyhow::Result<()> {
    let Job {
        workload,
        profile,
        trace,
        events,
        duration,
    } = Job::load(&args.job)?;
    let preload = super::preload_config(&args.preload, &workload, !args.quiet)?;
    if preload.is_some() {
        let others =
            args.restore.is_some() || args.failures.spec().any() || args.record_ops.is_some();
        if let Some(why) = crate::preload::refusal(&workload, others) {
            anyhow::bail!(UsageError(format!(
                "--preload on {} with {}: {why}",
                workload.name, profile.name
            )));
        }
    }
    // Refused before anything is created: a restore needs an earlier run's checkpoint.
    let restore = args
        .restore
        .as_deref()
        .map(|arg| engine::RestoreFrom::from_arg(arg, args.data_dir.as_deref()))
        .transpose()
        .map_err(UsageError)?;
    // A bad --sink-prefix is refused before anything is created.
    match (&args.sink, args.sink_prefix.as_deref()) {
        (SinkArg::Memory, Some(_)) => anyhow::bail!(UsageError(
            "--sink-prefix applies to a Redis sink: give --sink redis://HOST:PORT too".to_string()
        )),
        (SinkArg::Redis(_), Some(prefix)) => identity::validate_prefix(prefix)
            .map_err(|e| anyhow::Error::new(UsageError(e.to_string())))?,
        _ => {}
    }
    // A restore runs on the data directory's state: it is reused by definition.
    let data_dir = DataDir::prepare(args.data_dir.as_deref(), args.reuse || restore.is_some())
        .map_err(|e| match e {
            DataDirError::Usage(why) => anyhow::Error::new(UsageError(why)),
            io => anyhow::Error::new(io),
        })?;
    let sink = match args.sink {
        SinkArg::Memory => SinkConfig::Memory,
        SinkArg::Redis(url) => {
            // One job, one set of keys: a restored or reused job writes under the prefix its
            // data directory's job chose at its first run.
            let (prefix, origin) = identity::sink_prefix(
                data_dir.path(),
                args.sink_prefix.as_deref(),
                identity::new_job_prefix,
            )
            .map_err(|e| match e {
                identity::IdentityError::BadPrefix(..)
                | identity::IdentityError::Conflict { .. }
                | identity::IdentityError::Invalid { .. } => {
                    anyhow::Error::new(UsageError(e.to_string()))
                }
                other => anyhow::Error::new(other),
            })?;
            let whose = match origin {
                identity::PrefixOrigin::Given => "--sink-prefix",
                identity::PrefixOrigin::Stored => "the data directory's job",
                identity::PrefixOrigin::New => "a new job",
            };
            eprintln!(
                "results go to {url} under '{prefix}' ({whose}; kept in {})",
                identity::JobIdentity::path(data_dir.path()).display()
            );
            SinkConfig::Redis { url, prefix }
        }
    };

    // Sampling starts before the engine so that RocksDB's opening is in the profile too.
    let cpu = args
        .cpu
        .profile_cpu
        .then(profiler::Session::start)
        .transpose()?;
    let cpu_at_start = crate::util::process_cpu::seconds();
    let handle = engine::spawn(EngineConfig {
        events,
        duration,
        sink,
        trace,
        cpu: cpu.as_ref().map(profiler::Session::tap),
        record_ops: args.record_ops.clone(),
        restore,
        failures: args.failures.spec(),
        savepoints: args.failures.savepoints(),
        preload,
        ..EngineConfig::new(
            workload.clone(),
            profile.clone(),
            data_dir.path().to_path_buf(),
        )
    })?;
    // Ctrl-C or SIGTERM stops the run cleanly: RocksDB closes, the summary prints and the
    // report is written for what ran. A second signal kills the process as usual.
    let stop = handle.commands.clone();
    let stopping = std::sync::atomic::AtomicBool::new(false);
    let _ = ctrlc::set_handler(move || {
        if stopping.swap(true, std::sync::atomic::Ordering::SeqCst) {
            std::process::exit(130);
        }
        if crate::preload::cancel() {
            eprintln!("\nstopping: the preload's build stops and removes its partial files");
        } else {
            eprintln!(
                "\nstopping: finishing the current sample and writing the report (Ctrl-C again to abort)"
            );
        }
        let _ = stop.send(EngineCommand::Stop);
    });
    let progress = Progress::new(events, args.quiet);
    // The engine drops its sender when it finishes, which ends this loop.
    for snapshot in handle.snapshots.iter() {
        progress.update(&snapshot);
    }
    let mut outcome = handle.join().context("the run failed")?;
    let cpu_secs = cpu_at_start
        .zip(crate::util::process_cpu::seconds())
        .map(|(a, b)| (b - a).max(0.0));
    drop(cpu);
    progress.finish();

    for mismatch in &outcome.option_mismatches {
        eprintln!("warning: profile knob not in effect: {mismatch}");
    }
    if let DataDir::Temporary(_) = &data_dir {
        // The temporary data directory goes away: keep RocksDB's OPTIONS file beside the
        // report, and name no file that will not exist.
        let options = outcome.options_file.take();
        if let (Some(options), Some(path)) = (options, &args.job.report) {
            let kept =
                report::keep_options_file(Path::new(&options), &path.with_extension("OPTIONS"))?;
            outcome.options_file = Some(kept.display().to_string());
        }
    }
    let cpu_files = match (&outcome.cpu_profile, &args.job.report) {
        (Some(cpu), Some(path)) => {
            let title = format!("statebench run: {} on {}", workload.name, profile.name);
            Some(cpu.write_beside(path, &title).with_context(|| {
                format!("cannot write the CPU profile beside {}", path.display())
            })?)
        }
        _ => None,
    };
    if let Some(path) = &args.final_counts {
        write_final_counts(path, &workload, &outcome.final_state)
            .with_context(|| format!("cannot write the final counts {}", path.display()))?;
    }
    let segments = [RunSegment::whole(profile, outcome)];
    let mut report = Report::new(&workload, &segments);
    for segment in &mut report.segments {
        segment.summary.process_cpu_secs = cpu_secs;
    }
    report.score(|p| super::score_context(&workload, p));
    if let Some(path) = &args.job.report {
        report
            .write_json(path)
            .with_context(|| format!("cannot write the report {}", path.display()))?;
    }
    println!("{}", report::render_summary(&report));
    if let Some(path) = &args.job.report {
        println!("  report written to {}", path.display());
    }
    if let Some([svg, pb]) = &cpu_files {
        println!(
            "  CPU flamegraph {} and pprof profile {}",
            svg.display(),
            pb.display()
        );
    } else if args.cpu.profile_cpu {
        println!("  (give --report FILE to keep the CPU flamegraph and pprof profile beside it)");
    }
    Ok(())
}

/// The job's results as sorted CSV lines `key,label,value` (the frequency counter: its final
/// state, `key,window,count`), keys named `user-N` (a trace's: its own key strings), slots by
/// result label.
fn write_final_counts(
    path: &Path,
    workload: &Workload,
    state: &[(u64, usize, i64)],
) -> std::io::Result<()> {
    let labels = if workload.is_frequency() {
        workload.window_labels()
    } else {
        workload.result_labels()
    };
    // Generated keys keep their plain `user-N` here (as parity's Flink jobs name them).
    let names = match &workload.trace_keys {
        Some(keys) => pipeline::source::KeyNames::Trace(std::sync::Arc::clone(keys)),
        None => pipeline::source::KeyNames::Generated { size: None },
    };
    let mut lines: Vec<String> = state
        .iter()
        .map(|(user, window, count)| {
            let mut key = String::new();
            names.write(*user, &mut key);
            let label = labels.get(*window).map_or("?", String::as_str);
            format!("{key},{label},{count}\n")
        })
        .collect();
    lines.sort();
    write_atomically(path, lines.concat().as_bytes())
}
