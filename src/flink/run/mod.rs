//! `statebench flink run`: the workload as a real Flink 1.20 job, and the same events through
//! statebench, side by side.
//!
//! The workload's events are written as a trace; a parity job (parity/job: the field reports'
//! frequency counter on Flink's own `KeyedProcessOperator`, or for the other kinds Flink's own
//! operator, built here into a jar against the distribution's lib/) replays it on a Flink session cluster with the profile's exported
//! `config.yaml`: by default an embedded one on localhost (a JobManager and N TaskManager
//! processes, one slot each), or the user's (`--cluster URL`). Each subtask of the keyed
//! operator measures its RocksDB instance when the input ends (RocksDB's statistics, its LOG).
//! statebench then runs one subtask's share of the trace (the busiest one's, or `--subtask N`:
//! the keys of its key groups, at the rate Flink's subtask reached) on the same profile. A second profile (`--compare`) repeats
//! both, and the change from the first to the second is judged: does Flink's RocksDB move as
//! statebench predicted?

pub mod cluster;
pub mod dist;
mod evidence;
pub mod rest;
mod share;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::config::job::OperatorSpec;
use crate::config::units::human_bytes;
use crate::config::workload::{Rate, SerializerKind};
use crate::config::{Profile, Workload};

pub use evidence::{Change, Side, Verdict, changes as evidence_changes, render, to_json};
use share::{Share, busiest, csv_safe, share_workload, write_share, write_trace};

#[derive(Debug, thiserror::Error)]
pub enum FlinkError {
    /// The machine or the input: no Flink distribution, no JDK, a workload it cannot run.
    #[error("{0}")]
    Setup(String),
    /// Flink's REST API: the cluster down, an error answer, the wrong version.
    #[error("Flink REST: {0}")]
    Rest(String),
    /// The job ran and failed, or its output is missing.
    #[error("{0}")]
    Job(String),
    /// The embedded cluster failed: a JVM ended, or it did not come up in time.
    #[error("{0}")]
    Cluster(String),
    #[error("cancelled: the Flink job was cancelled and the cluster stopped")]
    Cancelled,
}

/// What to run.
pub struct Options {
    pub workload: Workload,
    /// The workload's trace, when it replays one (its records are the job's, in its order).
    pub trace: Option<Arc<Vec<crate::pipeline::source::Event>>>,
    /// The profile, and with `--compare` the one to judge against it.
    pub profiles: Vec<Profile>,
    pub events: u64,
    /// The keyed operator's parallelism on Flink.
    pub parallelism: u32,
    /// TaskManagers of the embedded cluster (one slot each).
    pub taskmanagers: u32,
    /// A running session cluster's REST address instead of the embedded one.
    pub cluster: Option<String>,
    pub dist: Option<PathBuf>,
    /// Where the trace, the configurations, Flink's output and statebench's data go.
    pub work: PathBuf,
    /// Set by Ctrl-C: the running job is cancelled.
    pub cancel: Arc<AtomicBool>,
    /// The subtask compared; None: the one with the most events (the first of those), where a
    /// skewed workload's RocksDB works hardest.
    pub subtask: Option<u32>,
}

/// One profile's two runs.
#[derive(Debug, Clone)]
pub struct ProfileRun {
    pub profile: String,
    pub flink: Side,
    pub statebench: Side,
    /// The subtask compared.
    pub subtask: u32,
    /// Every subtask's events, in subtask order (how the keys spread).
    pub subtask_events: Vec<u64>,
    /// What differs between the two sides' setups (the cluster's own memory, an unknown rate).
    pub notes: Vec<String>,
}

/// The Flink job that runs the workload: its entry class and arguments (besides the trace,
/// configuration and output), and whether it reads trace v2 (value sizes and inputs).
struct FlinkJob {
    entry_class: &'static str,
    args: Vec<String>,
    /// A join: each record's input is its partition too (each input its own partitions).
    join: bool,
    v2: bool,
}

/// The frequency counter runs as the parity job (windows, out-of-orderness, the timerState TTL,
/// 0: none, the serializer); every other operator kind as the kinds job, Flink's own operator
/// for it, reading the workload's `job:` section from `workload_file`.
fn flink_job(workload: &Workload, workload_file: &Path) -> Result<FlinkJob, FlinkError> {
    if workload.operators().len() > 1 {
        return Err(FlinkError::Setup(format!(
            "workload '{}': a chain of operators; flink run runs one keyed operator (parity/run-kinds runs chains in a MiniCluster)",
            workload.name
        )));
    }
    // The job's source paced to the workload's `rate:` (unpaced for `max`).
    let rate = match workload.spec.rate {
        Rate::PerSecond(r) => r,
        Rate::Max => 0,
    };
    let watermarks = [
        "--watermark-every".to_string(),
        crate::engine::WATERMARK_EVERY_EVENTS.to_string(),
        "--events-per-second".to_string(),
        rate.to_string(),
    ];
    let OperatorSpec::Frequency(f) = workload.operator() else {
        let mut args = vec![
            "--workload".to_string(),
            workload_file.display().to_string(),
        ];
        args.extend(watermarks);
        return Ok(FlinkJob {
            entry_class: dist::KINDS_ENTRY_CLASS,
            args,
            join: workload.operator().kind() == "interval-join",
            v2: true,
        });
    };
    let windows: Vec<String> = f
        .windows
        .iter()
        .map(|w| format!("{}={}", Workload::window_label(*w), w.0))
        .collect();
    let mut args = vec![
        "--windows".into(),
        windows.join(","),
        "--out-of-orderness".into(),
        workload.spec.event_time.out_of_orderness.0.to_string(),
        "--ttl".into(),
        f.timer_state_ttl.map_or(0, |t| t.0).to_string(),
        "--serializer".into(),
        match workload.spec.serializer {
            SerializerKind::Compact => "pojo",
            SerializerKind::Generic => "kryo",
        }
        .into(),
    ];
    args.extend(watermarks);
    Ok(FlinkJob {
        entry_class: dist::ENTRY_CLASS,
        args,
        join: false,
        v2: false,
    })
}

/// The exported configuration's knobs Flink's configuration cannot set (`#   knob: value  ->
/// call` comments), as the parity job's options factory reads them.
fn factory_knobs(config: &str) -> String {
    config
        .lines()
        .filter_map(|l| l.strip_prefix("#   "))
        .filter_map(|l| l.split_once("  ->  ").map(|(kv, _)| kv))
        .map(|kv| format!("{kv}\n"))
        .collect()
}

/// Runs everything `options` asks for; `progress` hears each step.
pub fn run(options: &Options, progress: &dyn Fn(&str)) -> Result<Vec<ProfileRun>, FlinkError> {
    let workload = &options.workload;
    // The job's trace is CSV, split at commas, trimmed, `#` lines skipped and a first line
    // naming the columns taken for a header: a trace's own keys must read back as themselves.
    if let Some(keys) = &workload.trace_keys
        && let Some(key) = (0..keys.len() as u64)
            .filter_map(|id| keys.name(id))
            .find(|k| !csv_safe(k))
    {
        return Err(FlinkError::Setup(format!(
            "the trace of '{}' has the key {key:?}, which Flink's job cannot read back from the CSV trace flink run hands it (a comma, a line break, space at either end, '#' or '{{' first, or a column's name): rename such keys",
            workload.name
        )));
    }
    // Refused before anything is written (the file is named once the work folder exists).
    flink_job(workload, Path::new("workload.yaml"))?;
    let max = u32::from(crate::backend::keys::MAX_PARALLELISM);
    if options.parallelism == 0 || options.taskmanagers == 0 || options.parallelism > max {
        return Err(FlinkError::Setup(format!(
            "--parallelism must be 1 to {max} (the job's key groups) and --taskmanagers at least 1"
        )));
    }
    if let Some(k) = options.subtask.filter(|k| *k >= options.parallelism) {
        return Err(FlinkError::Setup(format!(
            "--subtask {k}: the keyed operator's subtasks are 0 to {} (--parallelism {})",
            options.parallelism - 1,
            options.parallelism
        )));
    }
    if options.cluster.is_none() && options.taskmanagers < options.parallelism {
        return Err(FlinkError::Setup(format!(
            "--parallelism {} needs {} slots: the embedded cluster has one per TaskManager, and --taskmanagers is {}",
            options.parallelism, options.parallelism, options.taskmanagers
        )));
    }
    if workload.spec.phases.is_some() {
        return Err(FlinkError::Setup(format!(
            "workload '{}' has backfill and catch-up phases: flink run runs one job",
            workload.name
        )));
    }
    // The user's cluster answers, and runs Flink 1.20, before anything is built or written.
    if let Some(url) = &options.cluster {
        let rest = rest::Rest::new(url);
        let version = rest.check_version(dist::FLINK_VERSION)?;
        rest.check_slots(options.parallelism)?;
        progress(&format!("cluster {url}: Flink {version}"));
    }
    // With --cluster too: the job jar is compiled against a distribution's lib/.
    let dist = dist::locate(options.dist.as_deref())?;
    dist::check_jdk()?;
    let work = &options.work;
    std::fs::create_dir_all(work)
        .map_err(|e| FlinkError::Setup(format!("{}: {e}", work.display())))?;
    let work = work
        .canonicalize()
        .map_err(|e| FlinkError::Setup(format!("{}: {e}", work.display())))?;
    progress("building the job jar (once per distribution)");
    let jar = dist::job_jar(&dist, &work.join("job-jar"))?;
    progress(&format!(
        "writing {} events of '{}' as the job's trace",
        options.events, workload.name
    ));
    // The kinds job reads the workload's job: section and event time from the file.
    let workload_file = work.join("workload.yaml");
    let yaml = serde_norway::to_string(&workload.spec)
        .map_err(|e| FlinkError::Setup(format!("the workload as YAML: {e}")))?;
    std::fs::write(&workload_file, yaml)
        .map_err(|e| FlinkError::Setup(format!("{}: {e}", workload_file.display())))?;
    let job = flink_job(workload, &workload_file)?;
    let subtask_events = write_trace(
        workload,
        options.trace.clone(),
        &job,
        options.events,
        options.parallelism,
        &work,
    )?;
    let subtask = options.subtask.unwrap_or_else(|| busiest(&subtask_events));
    let share = write_share(&work, options.parallelism, subtask)?;
    let mut runs = Vec::new();
    for (i, profile) in options.profiles.iter().enumerate() {
        let dir = work.join(format!("{}-{}", ["a", "b"][i.min(1)], profile.name));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("job-conf"))
            .and_then(|()| std::fs::create_dir_all(dir.join("conf")))
            .map_err(|e| FlinkError::Setup(format!("{}: {e}", dir.display())))?;
        let mut notes = Vec::new();
        let (flink, memory) = flink_side(
            options, profile, &dist, &jar, &job, &dir, &work, subtask, &mut notes, progress,
        )?;
        if options.cancel.load(Ordering::Relaxed) {
            return Err(FlinkError::Cancelled);
        }
        // A user's cluster keeps its own managed memory: statebench runs with what Flink had.
        let mut profile = profile.clone();
        if let Some(per_slot) = memory
            && profile.knobs.memory_mode == crate::config::profile::MemoryMode::Managed
            && per_slot != profile.knobs.managed_memory.0
        {
            notes.push(format!(
                "the cluster's managed memory is {} a slot, not the profile's {}: statebench ran with the cluster's",
                human_bytes(per_slot as f64),
                human_bytes(profile.knobs.managed_memory.0 as f64)
            ));
            profile = profile
                .edited("memory.managed-size", &format!("{per_slot}b"))
                .map_err(|e| FlinkError::Setup(e.to_string()))?;
        }
        let statebench = statebench_side(
            options, &profile, &flink, &dir, &share, &mut notes, progress,
        )?;
        runs.push(ProfileRun {
            profile: profile.name.clone(),
            flink,
            statebench,
            subtask,
            subtask_events: subtask_events.clone(),
            notes,
        });
    }
    Ok(runs)
}

/// The job on Flink with `profile`: subtask `subtask`'s measurements.
#[allow(clippy::too_many_arguments)]
fn flink_side(
    options: &Options,
    profile: &Profile,
    dist: &dist::Dist,
    jar: &Path,
    job: &FlinkJob,
    dir: &Path,
    work: &Path,
    subtask: u32,
    notes: &mut Vec<String>,
    progress: &dyn Fn(&str),
) -> Result<(Side, Option<u64>), FlinkError> {
    let write = |p: PathBuf, text: &str| {
        std::fs::write(&p, text).map_err(|e| FlinkError::Setup(format!("{}: {e}", p.display())))
    };
    let config = crate::export::flink(profile);
    write(dir.join("job-conf/config.yaml"), &config)?;
    write(dir.join("factory-knobs.txt"), &factory_knobs(&config))?;
    let (_cluster, rest, memory) = match &options.cluster {
        Some(url) => {
            let rest = rest::Rest::new(url);
            rest.check_version(dist::FLINK_VERSION)?;
            let memory = rest.managed_per_slot()?;
            (None, rest, memory)
        }
        None => {
            let [port, rpc_port] = cluster::free_ports()?;
            let managed =
                if profile.knobs.memory_mode == crate::config::profile::MemoryMode::Managed {
                    profile.knobs.managed_memory.0
                } else {
                    0
                };
            let (shape, note) = cluster::taskmanager_shape(
                profile,
                options.taskmanagers,
                managed,
                cluster::available_memory(),
            );
            if let Some(note) = note {
                progress(&format!("profile '{}': {note}", profile.name));
                notes.push(note);
            }
            write(
                dir.join("conf/config.yaml"),
                &(config.clone() + &cluster::cluster_settings(port, rpc_port, dir, &shape)),
            )?;
            let c = cluster::Cluster::start(
                dist,
                &dir.join("conf"),
                port,
                options.taskmanagers,
                dir,
                &options.cancel,
                progress,
            )?;
            let rest = c.rest.clone();
            rest.check_version(dist::FLINK_VERSION)?;
            (Some(c), rest, None)
        }
    };
    progress(&format!(
        "profile '{}': uploading and running the job (parallelism {})",
        profile.name, options.parallelism
    ));
    let jar_id = rest.upload(jar)?;
    let out = dir.join("flink");
    let mut args: Vec<String> = vec![
        "--trace".into(),
        work.join("trace.csv").display().to_string(),
    ];
    args.extend(job.args.iter().cloned());
    args.extend([
        "--flink-conf-dir".into(),
        dir.join("job-conf").display().to_string(),
        "--factory-knobs".into(),
        dir.join("factory-knobs.txt").display().to_string(),
        "--out".into(),
        out.display().to_string(),
        "--environment".into(),
        "context".into(),
        "--parallelism".into(),
        options.parallelism.to_string(),
    ]);
    std::fs::create_dir_all(&out)
        .map_err(|e| FlinkError::Setup(format!("{}: {e}", out.display())))?;
    let job_id = rest.run_jar(&jar_id, job.entry_class, &args);
    rest.delete_jar(&jar_id);
    let job_id = job_id?;
    let started = Instant::now();
    let mut said = Instant::now();
    let mut failed_polls = 0;
    loop {
        if options.cancel.load(Ordering::Relaxed) {
            progress(&format!("cancelling job {job_id}"));
            rest.cancel(&job_id)?;
            let until = Instant::now() + Duration::from_secs(60);
            while Instant::now() < until
                && !rest
                    .job_state(&job_id)
                    .is_ok_and(|s| ["CANCELED", "FINISHED", "FAILED"].contains(&s.as_str()))
            {
                std::thread::sleep(Duration::from_millis(500));
            }
            return Err(FlinkError::Cancelled);
        }
        // A poll that fails is tried again; several in a row cancel the job (it must not run
        // on unwatched on a user's cluster) and end the run.
        let state = match rest.job_state(&job_id) {
            Ok(state) => {
                failed_polls = 0;
                state
            }
            Err(e) if failed_polls < 5 => {
                failed_polls += 1;
                progress(&format!(
                    "  polling job {job_id} failed ({e}); trying again"
                ));
                std::thread::sleep(Duration::from_secs(2));
                continue;
            }
            Err(e) => {
                let _ = rest.cancel(&job_id);
                return Err(e);
            }
        };
        match state.as_str() {
            "FINISHED" => break,
            "FAILED" | "CANCELED" | "SUSPENDED" => {
                let why = rest
                    .failure(&job_id)
                    .unwrap_or_else(|| "no exception recorded".into());
                let logs = match &options.cluster {
                    Some(url) => format!("the cluster's own, and {url}/#/job/completed/{job_id}"),
                    None => dir.join("logs").display().to_string(),
                };
                return Err(FlinkError::Job(format!(
                    "the Flink job {job_id} ended {state}: {why} (logs: {logs})"
                )));
            }
            _ => {}
        }
        if said.elapsed() >= Duration::from_secs(5) {
            progress(&format!(
                "  job {job_id} {state}, {:.0} s",
                started.elapsed().as_secs_f64()
            ));
            said = Instant::now();
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    progress(&format!(
        "  job {job_id} FINISHED in {:.1} s",
        started.elapsed().as_secs_f64()
    ));
    let sub = if options.parallelism == 1 {
        out.clone()
    } else {
        out.join(format!("subtask-{subtask}"))
    };
    Ok((evidence::flink_side(&sub)?, memory))
}

/// statebench on `subtask`'s share of the trace (`share`), at the rate Flink's subtask reached.
fn statebench_side(
    options: &Options,
    profile: &Profile,
    flink: &Side,
    dir: &Path,
    share: &Share,
    notes: &mut Vec<String>,
    progress: &dyn Fn(&str),
) -> Result<Side, FlinkError> {
    let mut workload = share_workload(&options.workload, &share.trace);
    let subtask = share.subtask;
    // Flush and stall counts follow write speed against flush speed: Flink's pace.
    let rate = flink.events_per_sec.round() as u64;
    workload.spec.rate = if rate > 0 {
        Rate::PerSecond(rate)
    } else {
        notes.push(format!(
            "Flink's subtask {subtask} recorded no processing time: statebench ran unpaced"
        ));
        Rate::Max
    };
    let trace = crate::pipeline::trace::Trace::load_into(&mut workload)
        .map_err(|e| FlinkError::Setup(e.to_string()))?;
    let events = trace.as_ref().map_or(0, |t| t.len() as u64);
    progress(&format!(
        "profile '{}': statebench on subtask {subtask}'s {events} events at {} (Flink's subtask {subtask})",
        profile.name,
        if rate > 0 {
            format!("{rate} events/s")
        } else {
            "full speed".to_string()
        }
    ));
    let data = dir.join("statebench");
    let config = crate::engine::EngineConfig {
        events,
        trace,
        ..crate::engine::EngineConfig::new(workload, profile.clone(), &data)
    };
    let outcome = crate::engine::run_to_completion(config)
        .map_err(|e| FlinkError::Job(format!("statebench's run failed: {e:#}")))?;
    let summary = crate::summary::Summary::new(&outcome);
    let tickers = outcome
        .snapshots
        .last()
        .map(|s| s.rocksdb.tickers)
        .unwrap_or_default();
    evidence::statebench_side(&summary, &tickers, &data)
}

/// Whether Ctrl-C was pressed (for the command's handler).
pub fn cancel_flag() -> Arc<AtomicBool> {
    Arc::new(AtomicBool::new(false))
}
