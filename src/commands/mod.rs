//! One module per CLI command, and what `run` and `tui` share: loading a job from the command
//! line, its data directory and its trace.

pub mod advise;
pub mod bench;
pub mod compare;
pub mod diagnose;
pub mod export;
pub mod flink;
pub mod preload;
pub mod profiles;
pub mod replay;
pub mod reproduce;
pub mod run;
pub mod trace;
pub mod tui;
pub mod tune;
pub mod workloads;

use std::path::Path;
use std::time::Duration;

use anyhow::{Context as _, bail};

use crate::config::{Profile, Workload};
use crate::util::fs::parent_dir;
use crate::{cli, pipeline};

pub use crate::util::usage::UsageError;

pub fn check_report_dir(report: Option<&Path>) -> anyhow::Result<()> {
    if let Some(report) = report {
        let parent = parent_dir(report);
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

pub type TraceEvents = std::sync::Arc<Vec<pipeline::source::Event>>;

/// A trace is read and checked whole before anything is created or written. Its key strings
/// go to the workload, whose job keys its records by them (`pipeline::source::KeyNames`).
fn load_trace(workload: &mut Workload) -> anyhow::Result<Option<TraceEvents>> {
    pipeline::trace::Trace::load_into(workload).map_err(|e| UsageError(e.to_string()).into())
}

/// Loads a profile by path or built-in name; a Flink configuration read as one says so on
/// stderr, with the memory it derived and every key it ignored.
pub fn load_profile(name: &str) -> anyhow::Result<Profile> {
    let profile = Profile::load(name)?;
    if let Some(import) = &profile.flink_import {
        for line in import.lines(&profile.source) {
            eprintln!("profile: {line}");
        }
    }
    Ok(profile)
}

/// A job from the command line, loaded and checked before anything is created or written.
pub struct Job {
    pub workload: Workload,
    pub profile: Profile,
    pub trace: Option<TraceEvents>,
    /// Events to process: --events or the workload's, at most the trace's.
    pub events: u64,
    pub duration: Option<Duration>,
}

impl Job {
    pub fn load(args: &cli::JobArgs) -> anyhow::Result<Job> {
        // The cheap checks first: the profile, where the report goes; then the workload.
        let profile = load_profile(&args.profile)?;
        check_report_dir(args.report.as_deref())?;
        let mut workload = Workload::load(&args.workload)?;
        let trace = load_trace(&mut workload)?;
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

/// What a scorecard reads beside a run's summary, for `profile` on `workload`: whether the
/// workload is paced, the profile's managed memory, and the task heap its TaskManager leaves.
pub(crate) fn score_context(
    workload: &Workload,
    profile: &Profile,
) -> crate::summary::scorecard::Context {
    crate::summary::scorecard::Context::of(workload, profile, task_heap_left(profile))
}

/// The task heap the TaskManager of the Flink configuration `profile` is (or extends) has left
/// with the profile's memory in place, as `export` derives it; None: the profile has no
/// TaskManager to size, or Flink would refuse it (`export` says why).
pub(crate) fn task_heap_left(profile: &Profile) -> Option<u64> {
    let path = profile.flink_config.clone()?;
    let cluster = export::cluster(&cli::TaskManagerArgs {
        taskmanager_memory: Some(path),
        ..cli::TaskManagerArgs::default()
    })
    .ok()?;
    crate::export::flink_sized(profile, crate::export::FlinkVersion::default(), &cluster)
        .taskmanager
        .map(|m| m.task_heap)
}

/// The run's preload from `--preload[=SPEC]` and the workload's `preload:` section.
pub fn preload_config(
    args: &crate::cli::PreloadArgs,
    workload: &Workload,
    progress: bool,
) -> anyhow::Result<Option<crate::preload::PreloadConfig>> {
    let Some(given) = args.preload.as_deref() else {
        return Ok(None);
    };
    let usage = |e: String| anyhow::Error::new(UsageError(e));
    let spec = if given.trim().is_empty() {
        workload.spec.preload.ok_or_else(|| {
            usage(format!(
                "--preload without a value uses the workload's 'preload:' section, and {} has none: give --preload events=N, span=DURATION or size=BYTES",
                workload.name
            ))
        })?
    } else {
        let mut spec = crate::config::workload::PreloadSpec::parse(given)
            .map_err(|e| usage(format!("--preload {given}: {e}")))?;
        // The workload's memory bound holds unless the flag gives one.
        if spec.memory.is_none() {
            spec.memory = workload.spec.preload.and_then(|p| p.memory);
        }
        spec
    };
    Ok(Some(crate::preload::PreloadConfig {
        spec,
        dir: preload_dir(args.preload_dir.as_deref())?,
        rebuild: args.preload_rebuild,
        progress,
        check_sample: args.check_sample,
    }))
}

/// The folder preloaded bases are kept in, created if need be: `given`, or by default
/// $XDG_CACHE_HOME/statebench/preload (or ~/.cache/statebench/preload).
pub fn preload_dir(given: Option<&Path>) -> anyhow::Result<std::path::PathBuf> {
    let dir = match given {
        Some(dir) => dir.to_path_buf(),
        None => default_preload_dir()?,
    };
    std::fs::create_dir_all(&dir)
        .with_context(|| format!("cannot create the preload folder {}", dir.display()))?;
    Ok(dir)
}

fn default_preload_dir() -> anyhow::Result<std::path::PathBuf> {
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cache")))
        .ok_or_else(|| {
            anyhow::Error::new(UsageError(
                "neither XDG_CACHE_HOME nor HOME is set: give --preload-dir".to_string(),
            ))
        })?;
    Ok(cache.join("statebench").join("preload"))
}
