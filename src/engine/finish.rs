//! The end of a run's last job: its results and state against the truth, its sources, its
//! operators, and the outcome the run hands back.

use std::sync::Arc;

use super::EngineError;
use super::job::{End, JobRunner};
use super::run::Run;
use super::snapshot::{JobSource, Phase, RunOutcome, RunState};
use crate::backend::StateBackend;

/// Drives the run's last job to its end (unless `ended` says it already ran) and builds the
/// outcome.
pub(super) fn finish(
    run: &mut Run,
    mut job: JobRunner<'_>,
    backends: &[Arc<StateBackend>],
    mut jobs: Vec<JobSource>,
    fresh_state: bool,
    ended: Option<End>,
) -> Result<RunOutcome, EngineError> {
    let config = run.config;
    let end = match ended {
        Some(end) => end,
        None => job.drive(run, Some(config.events))?,
    };
    // Only a Stop (Ctrl-C, q) is "stopped early"; --duration is a bound the user chose.
    let stopped_early = end == End::Stopped;
    // A run that ended inside the backfill never wrote its results: nothing to compare.
    let fresh_state = fresh_state && job.phase != Phase::Backfill;
    // The last job's own running time (the summary describes it; a backfill is in `jobs`).
    let processing_secs = job.running_secs(run);
    // The serving store and the job's state against the exact truth at the last watermark.
    let result_error = job.compare_sink()?;
    // A bounded source read to its end has one right answer whatever the job's watermark did:
    // every window expired. A dropped or stuck final watermark shows here as counts left over.
    let bounded_end = config.workload.spec.bounded_end_delay.is_some()
        && !stopped_early
        && job.phase != Phase::Backfill
        && job.consumer.exhausted();
    let end_of_input_error = if bounded_end {
        let all = job.read_results()?;
        Some(job.oracle.compare_all_expired(all)?)
    } else {
        None
    };
    job.publish(run, RunState::Finished, Some(result_error));
    // The frequency counter's state holds its results (a scan checks them); another kind's
    // results are what it emitted.
    let final_state = match job.job.as_frequency() {
        Some(counter) => counter.state_counts(&mut job.ctx.state)?,
        None => job.read_results()?,
    };
    job.ctx.state.finish_recording()?;
    let state_error = job.oracle.compare(final_state.clone())?;
    // RocksDB's newest OPTIONS file against the profile as it stands, live changes included:
    // every instance's.
    let mut option_mismatches = Vec::new();
    for (i, backend) in backends.iter().enumerate() {
        for m in backend.verify_options(run.live.profile())? {
            option_mismatches.push(match i {
                0 => m.to_string(),
                i => format!("operator {i}: {m}"),
            });
        }
    }
    let options_file = match backends.first() {
        Some(backend) => backend
            .latest_options_file()?
            .map(|p| p.display().to_string()),
        None => None,
    };
    let operators = job.operator_summaries();
    let (mut sst_index_bytes, mut sst_filter_bytes, mut sst_entries) = (0, 0, 0);
    for backend in backends {
        let (index, filter, entries) = backend.sst_index_filter_and_entries()?;
        sst_index_bytes += index;
        sst_filter_bytes += filter;
        sst_entries += entries;
    }
    if job.phase != Phase::Backfill {
        jobs.push(job.job_source(false));
    }
    Ok(RunOutcome {
        snapshots: run.sampler.take_history(),
        latency: job.ctx.state.latency.totals(),
        processing_secs,
        stopped_early,
        profile: run.live.profile().clone(),
        changes: run.live.changes().to_vec(),
        options_file,
        option_mismatches,
        result_error,
        state_error,
        final_state,
        fresh_state,
        jobs,
        end_of_input_error,
        serializer: run.config.workload.spec.serializer,
        cpu_profile: run.sampler.take_cpu_profile(),
        checkpoints: None,
        operators,
        preload: None,
        sst_index_bytes,
        sst_filter_bytes,
        sst_entries,
    })
}
