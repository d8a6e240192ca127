//! One run of a failure, checkpoint or savepoint case's setting: flink-default with the
//! setting's edits, on a fresh data directory (shared by the cases of `recovery` and `uploads`).

use crate::config::{Profile, Workload};
use crate::engine::{
    self, CheckpointOutcome, EngineConfig, FailureSpec, RunOutcome, SavepointFormat,
};

/// A profile: flink-default with these edits.
pub fn profile(name: &str, edits: &[(&str, &str)]) -> anyhow::Result<Profile> {
    let mut p = Profile::load("flink-default")?;
    for (k, v) in edits {
        p = p.edited(k, v)?;
    }
    p.name = name.to_string();
    Ok(p)
}

/// One run on a fresh data directory.
pub fn one_run(
    workload: &Workload,
    profile: Profile,
    events: u64,
    failures: FailureSpec,
    savepoints: Vec<(u64, SavepointFormat)>,
) -> anyhow::Result<(RunOutcome, CheckpointOutcome)> {
    run_from(workload, profile, events, failures, savepoints, None)
}

/// One run on a fresh data directory, from a preloaded state if `preload` says so.
pub fn run_from(
    workload: &Workload,
    profile: Profile,
    events: u64,
    failures: FailureSpec,
    savepoints: Vec<(u64, SavepointFormat)>,
    preload: Option<crate::preload::PreloadConfig>,
) -> anyhow::Result<(RunOutcome, CheckpointOutcome)> {
    let dir = tempfile::Builder::new().prefix("statebench-").tempdir()?;
    let mut outcome = engine::run_to_completion(EngineConfig {
        events,
        failures,
        savepoints,
        preload,
        ..EngineConfig::new(workload.clone(), profile, dir.path())
    })?;
    let checkpoints = outcome
        .checkpoints
        .take()
        .ok_or_else(|| anyhow::anyhow!("the run did not checkpoint"))?;
    Ok((outcome, checkpoints))
}
