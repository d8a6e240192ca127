//! statebench: a workbench for tuning the RocksDB state backend of keyed stream processors.

pub mod backend;
pub mod cli;
pub mod config;
pub mod engine;
pub mod pipeline;
pub mod report;
pub mod reproduce;
pub mod tui;

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context as _, bail};

use cli::{Cli, Command, ProfilesCommand, ReproduceArgs, RunArgs, TuiArgs, WorkloadsCommand};
use config::{ConfigError, Profile, Workload};
use engine::{EngineCommand, EngineConfig, MetricsSnapshot};
use report::Report;

/// Runs one CLI command.
pub fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Run(args) => run_headless(args),
        Command::Tui(args) => run_tui(args),
        Command::Profiles(ProfilesCommand::List { dir }) => list_profiles(dir.as_deref()),
        Command::Profiles(ProfilesCommand::Show {
            name, flink: true, ..
        }) => show_flink_config(&name),
        Command::Profiles(ProfilesCommand::Show { name, derived, .. }) => {
            show_profile(&name, derived)
        }
        Command::Workloads(WorkloadsCommand::List) => {
            for (name, _) in config::workload::BUILTIN {
                let w = Workload::load(name)?;
                println!("{name:<14} {}", w.spec.description.as_deref().unwrap_or(""));
            }
            Ok(())
        }
        Command::Reproduce(args) => run_reproduce(args),
        Command::Workloads(WorkloadsCommand::Show { name }) => {
            let w = Workload::load(&name)?;
            println!("# {} ({})", w.name, w.source);
            print!("{}", serde_norway::to_string(&w.spec)?);
            Ok(())
        }
    }
}

/// Exit code for an error: 2 for bad input (configuration, arguments), 1 for anything else.
pub fn exit_code(err: &anyhow::Error) -> u8 {
    if err
        .chain()
        .any(|e| e.is::<ConfigError>() || e.is::<UsageError>() || data_dir_in_use(e))
    {
        2
    } else {
        1
    }
}

/// Whether `e` says the data directory belongs to another process (a usage error: exit 2).
fn data_dir_in_use(e: &(dyn std::error::Error + 'static)) -> bool {
    use crate::backend::BackendError;
    use crate::engine::EngineError;
    use crate::pipeline::PipelineError;
    let backend = match e.downcast_ref::<EngineError>() {
        Some(EngineError::Backend(b)) => Some(b),
        Some(EngineError::Pipeline(PipelineError::Backend(b))) => Some(b),
        _ => e.downcast_ref::<BackendError>(),
    };
    matches!(backend, Some(BackendError::InUse(_)))
}

/// A command line that cannot be carried out as given.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(String);

fn list_profiles(dir: Option<&Path>) -> anyhow::Result<()> {
    // An explicit --dir must exist; the default folder is listed only where there is one.
    let dir = match dir {
        Some(d) if !d.is_dir() => bail!(UsageError(format!(
            "--dir '{}' is not a folder (give a folder of profile YAML files)",
            d.display()
        ))),
        Some(d) => d,
        None => Path::new("profiles"),
    };
    println!("built-in:");
    for (name, _) in config::profile::BUILTIN {
        let p = Profile::load(name)?;
        println!("  {name:<26} {}", p.description.as_deref().unwrap_or(""));
    }
    if dir.is_dir() {
        let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
            .with_context(|| format!("cannot list {}", dir.display()))?
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "yaml" || e == "yml"))
            .collect();
        files.sort();
        if !files.is_empty() {
            println!("in {}:", dir.display());
        }
        for path in files {
            match Profile::load(&path.to_string_lossy()) {
                Ok(p) => println!(
                    "  {:<26} {}",
                    path.display(),
                    p.description.as_deref().unwrap_or("")
                ),
                Err(e) => println!("  {:<26} INVALID: {e}", path.display()),
            }
        }
    }
    Ok(())
}

fn show_profile(name: &str, derived: bool) -> anyhow::Result<()> {
    let profile = Profile::load(name)?;
    println!("# {} ({})", profile.name, profile.source);
    if !profile.extends_chain.is_empty() {
        println!("# extends: {}", profile.extends_chain.join(" -> "));
    }
    if let Some(d) = &profile.description {
        println!("# {d}");
    }
    for (key, value) in profile.knobs.values() {
        let info = config::profile::KNOBS.iter().find(|k| k.key == key);
        let flink = match info.and_then(|k| k.flink_key) {
            Some(f) => format!("  # {f}"),
            // Not a RocksDB option: which Flink's RocksDB the run imitates.
            None if key == "target" => "  # statebench only: whose RocksDB to imitate".to_string(),
            None => "  # no Flink key: set it in a RocksDBOptionsFactory".to_string(),
        };
        println!("{key}: {value}{flink}");
    }
    if derived {
        println!(
            "\nderived (Flink's managed-memory math, M = {}, r = {}):",
            profile.knobs.managed_memory, profile.knobs.write_buffer_ratio
        );
        print!("{}", profile.derived(backend::STATE_COLUMN_FAMILIES.len()));
    }
    Ok(())
}

/// The effective profile as Flink configuration lines (`profiles show --flink`).
fn show_flink_config(name: &str) -> anyhow::Result<()> {
    let profile = Profile::load(name)?;
    println!(
        "# profile '{}' ({}) as Flink 1.20 configuration",
        profile.name, profile.source
    );
    println!(
        "# {}*: knobs Flink has no key for, to be set in a RocksDBOptionsFactory",
        config::flink::FACTORY_PREFIX
    );
    for (key, value) in config::flink::flink_config(&profile) {
        println!("{key}: {value}");
    }
    Ok(())
}

fn run_reproduce(args: ReproduceArgs) -> anyhow::Result<()> {
    let Some(name) = args.name else {
        for s in reproduce::SCENARIOS {
            println!("{:<20} {}", s.name, s.story);
        }
        return Ok(());
    };
    let Some(scenario) = reproduce::find(&name) else {
        let known: Vec<&str> = reproduce::SCENARIOS.iter().map(|s| s.name).collect();
        bail!(UsageError(format!(
            "unknown trap '{name}' (available: {})",
            known.join(", ")
        )));
    };
    eprintln!(
        "running '{}' broken and fixed on '{}'{} ...",
        scenario.name,
        scenario.base,
        args.events
            .map(|n| format!(", {n} events each"))
            .unwrap_or_default()
    );
    let (broken, fixed, ok) = reproduce::run(scenario, args.events)?;
    print!("{}", reproduce::render(scenario, &broken, &fixed, ok));
    if ok {
        Ok(())
    } else {
        bail!("'{}' did not reproduce", scenario.name)
    }
}

/// The RocksDB directory of a run: a caller's folder, or a temporary one removed afterwards.
enum DataDir {
    Given(PathBuf),
    Temporary(tempfile::TempDir),
}

impl DataDir {
    fn path(&self) -> &Path {
        match self {
            DataDir::Given(p) => p,
            DataDir::Temporary(t) => t.path(),
        }
    }
}

fn prepare_data_dir(dir: Option<&Path>, reuse: bool) -> anyhow::Result<DataDir> {
    let Some(dir) = dir else {
        let tmp = tempfile::Builder::new()
            .prefix("statebench-")
            .tempdir()
            .context("cannot create a temporary data directory")?;
        return Ok(DataDir::Temporary(tmp));
    };
    if dir.exists() {
        if !dir.is_dir() {
            bail!(UsageError(format!(
                "--data-dir {} exists and is not a directory",
                dir.display()
            )));
        }
        let non_empty = std::fs::read_dir(dir)
            .with_context(|| format!("cannot read --data-dir {}", dir.display()))?
            .next()
            .is_some();
        if non_empty && !reuse {
            bail!(UsageError(format!(
                "--data-dir {} is not empty; pass --reuse to run on its existing state, or choose an empty or new directory",
                dir.display()
            )));
        }
    } else {
        // A new directory, but not a new tree: a mistyped parent must not silently appear.
        let parent = report::parent_dir(dir);
        if !parent.is_dir() {
            bail!(UsageError(format!(
                "--data-dir {}: its parent folder {} does not exist (create it first, or give an existing place)",
                dir.display(),
                parent.display()
            )));
        }
        std::fs::create_dir(dir)
            .with_context(|| format!("cannot create --data-dir {}", dir.display()))?;
    }
    Ok(DataDir::Given(dir.to_path_buf()))
}

fn check_report_dir(report: Option<&Path>) -> anyhow::Result<()> {
    if let Some(report) = report {
        let parent = report::parent_dir(report);
        if !parent.is_dir() {
            bail!(UsageError(format!(
                "--report {}: directory {} does not exist",
                report.display(),
                parent.display()
            )));
        }
    }
    Ok(())
}

type TraceEvents = std::sync::Arc<Vec<pipeline::source::Event>>;

/// A trace is read and checked whole before anything is created or written.
fn load_trace(workload: &Workload) -> anyhow::Result<Option<TraceEvents>> {
    Ok(match &workload.spec.trace {
        Some(path) => {
            let trace = pipeline::trace::Trace::load(path, workload.spec.partitions)
                .map_err(|e| UsageError(e.to_string()))?;
            Some(std::sync::Arc::new(trace.events))
        }
        None => None,
    })
}

/// A job from the command line, loaded and checked before anything is created or written.
struct Job {
    workload: Workload,
    profile: Profile,
    trace: Option<TraceEvents>,
    /// Events to process: --events or the workload's, at most the trace's.
    events: u64,
    duration: Option<Duration>,
}

impl Job {
    fn load(args: &cli::JobArgs) -> anyhow::Result<Job> {
        let workload = Workload::load(&args.workload)?;
        let profile = Profile::load(&args.profile)?;
        check_report_dir(args.report.as_deref())?;
        let trace = load_trace(&workload)?;
        let events = args
            .events
            .unwrap_or(workload.spec.events)
            .min(trace.as_ref().map_or(u64::MAX, |t| t.len() as u64));
        let duration = args
            .duration
            .or(workload.spec.duration)
            .map(|d| d.as_duration());
        Ok(Job {
            workload,
            profile,
            trace,
            events,
            duration,
        })
    }
}

fn run_tui(args: TuiArgs) -> anyhow::Result<()> {
    let Job {
        workload,
        profile,
        trace,
        events,
        duration,
    } = Job::load(&args.job)?;
    let compare = args.compare.as_deref().map(Profile::load).transpose()?;
    if !std::io::stdout().is_terminal() {
        bail!(UsageError(
            "statebench tui needs a terminal; use `statebench run` for headless runs".to_string()
        ));
    }
    let report_path = args.job.report;
    let ended = tui::run(tui::TuiConfig {
        workload: workload.clone(),
        profile,
        compare,
        events,
        duration,
        trace,
        refresh: args.refresh.as_duration(),
        slice: args.slice.as_duration(),
        keep_options_as: report_path.as_ref().map(|r| r.with_extension("OPTIONS")),
    })?;
    let Some(outcome) = ended.outcome else {
        return Ok(());
    };
    let mut report = Report::new(&workload, &ended.profile, &outcome);
    // The TUI's data directory was temporary: its OPTIONS file was kept beside the report.
    report.rocksdb_options_file = ended.options_kept.map(|p| p.display().to_string());
    if let Some(path) = &report_path {
        report
            .write_json(path)
            .with_context(|| format!("cannot write the report {}", path.display()))?;
    }
    // The terminal may be gone (the TUI ended on a hang-up): printing must not panic.
    use std::io::Write as _;
    let mut out = std::io::stdout();
    let _ = writeln!(out, "{}", report::render_summary(&report));
    if let Some(path) = &report_path {
        let _ = writeln!(out, "  report written to {}", path.display());
    }
    Ok(())
}

fn run_headless(args: RunArgs) -> anyhow::Result<()> {
    let Job {
        workload,
        profile,
        trace,
        events,
        duration,
    } = Job::load(&args.job)?;
    let data_dir = prepare_data_dir(args.data_dir.as_deref(), args.reuse)?;
    let sink_config = match args.sink.as_str() {
        "memory" => engine::SinkConfig::Memory,
        url if url.starts_with("redis://") => {
            let stamp = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_millis())
                .unwrap_or_default();
            let prefix = format!("statebench:{stamp}-{}:", std::process::id());
            eprintln!("results go to {url} under '{prefix}'");
            engine::SinkConfig::Redis {
                url: url.to_string(),
                prefix,
            }
        }
        other => bail!(UsageError(format!(
            "--sink '{other}': expected 'memory' or a Redis URL such as redis://127.0.0.1:6379"
        ))),
    };

    let handle = engine::spawn(EngineConfig {
        events,
        duration,
        sink: sink_config,
        trace,
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
        eprintln!(
            "\nstopping: finishing the current sample and writing the report (Ctrl-C again to abort)"
        );
        let _ = stop.send(EngineCommand::Stop);
    });
    let progress = Progress::new(events, args.quiet);
    // The engine drops its sender when it finishes, which ends this loop.
    for snapshot in handle.snapshots.iter() {
        progress.update(&snapshot);
    }
    let outcome = handle.join().context("the run failed")?;
    progress.finish();

    for mismatch in &outcome.option_mismatches {
        eprintln!("warning: profile knob not in effect: {mismatch}");
    }
    let mut report = Report::new(&workload, &profile, &outcome);
    if let DataDir::Temporary(_) = &data_dir {
        // The temporary data directory goes away: keep RocksDB's OPTIONS file beside the
        // report, and name no file that will not exist.
        report.rocksdb_options_file = None;
        if let (Some(options), Some(path)) = (&outcome.options_file, &args.job.report) {
            let kept = path.with_extension("OPTIONS");
            std::fs::copy(options, &kept).with_context(|| {
                format!("cannot copy RocksDB's OPTIONS file to {}", kept.display())
            })?;
            report.rocksdb_options_file = Some(kept.display().to_string());
        }
    }
    if let Some(path) = &args.job.report {
        report
            .write_json(path)
            .with_context(|| format!("cannot write the report {}", path.display()))?;
    }
    if let Some(path) = &args.final_counts {
        write_final_counts(path, &workload, &outcome.final_state)
            .with_context(|| format!("cannot write the final counts {}", path.display()))?;
    }
    println!("{}", report::render_summary(&report));
    if let Some(path) = &args.job.report {
        println!("  report written to {}", path.display());
    }
    Ok(())
}

/// The job's final state as sorted CSV lines `key,window,count`, keys as the job keys them
/// (`user-N`) and windows by label.
fn write_final_counts(
    path: &Path,
    workload: &Workload,
    state: &[(u64, usize, i64)],
) -> std::io::Result<()> {
    let labels = workload.window_labels();
    let mut lines: Vec<String> = state
        .iter()
        .map(|(user, window, count)| {
            let mut key = String::new();
            pipeline::source::Generator::user_key(*user, &mut key);
            let label = labels.get(*window).map_or("?", String::as_str);
            format!("{key},{label},{count}\n")
        })
        .collect();
    lines.sort();
    report::write_atomically(path, lines.concat().as_bytes())
}

/// A progress bar on a terminal, plain lines otherwise.
enum Progress {
    Bar(indicatif::ProgressBar),
    Lines,
    Quiet,
}

impl Progress {
    fn new(events: u64, quiet: bool) -> Progress {
        if quiet {
            return Progress::Quiet;
        }
        if !std::io::stderr().is_terminal() {
            return Progress::Lines;
        }
        let bar = indicatif::ProgressBar::new(events);
        let style = indicatif::ProgressStyle::with_template(
            "{elapsed_precise} [{bar:30}] {pos}/{len} events ({eta} left) {msg}",
        )
        .map(|s| s.progress_chars("=> "))
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar());
        bar.set_style(style);
        bar.enable_steady_tick(Duration::from_millis(250));
        Progress::Bar(bar)
    }

    fn update(&self, s: &MetricsSnapshot) {
        let r = &s.rocksdb;
        // With backfill and catch-up, say which job the numbers belong to.
        let job = match s.pipeline.phase {
            engine::Phase::Streaming => String::new(),
            phase => format!("[{}] ", phase.name()),
        };
        let msg = format!(
            "{job}{:>8.0} ev/s  put p99 {:>7.1} µs  stall {:>5.1} %  L0 {:>2}  cache {}",
            s.events_per_sec,
            s.latency.put_latency.p99_us,
            r.stall.share * 100.0,
            r.lsm.l0_files,
            r.cache
                .overall
                .rate
                .map_or("   -".to_string(), |v| format!("{:>4.1} %", v * 100.0)),
        );
        match self {
            Progress::Bar(bar) => {
                bar.set_position(s.events);
                bar.set_message(msg);
            }
            Progress::Lines => {
                eprintln!("[{:>6.1}s] {:>10} events  {msg}", s.elapsed_secs, s.events)
            }
            Progress::Quiet => {}
        }
    }

    fn finish(&self) {
        if let Progress::Bar(bar) = self {
            bar.finish_and_clear();
        }
    }
}
