//! A job that starts from a preload's base (`run --preload`): the base loaded into its fresh
//! database, its source after the history, its results, truth and HEAP timers resumed.

use std::sync::Arc;
use std::time::Instant;

use super::EngineError;
use super::folders::scratch_dir;
use super::job::{JobRunner, Resume};
use super::run::Run;
use crate::backend::StateBackend;
use crate::durability::delivery::Delivery;
use crate::pipeline::oracle::thread::OracleThread;
use crate::pipeline::source::{Log, ReadPlan};
use crate::preload::{self, PreloadReport};

/// Loads a preload's `base` into the job's fresh database (`fresh_state`): `plan` reads on
/// from the record after the history, whose results (in `sink` and the job's own) and truth
/// (a primed oracle) the job resumes with. The build and the load are not running time.
pub(super) fn start_from_base(
    run: &mut Run,
    base: preload::Base,
    backends: &[Arc<StateBackend>],
    log: &Log,
    plan: &mut ReadPlan,
    sink: &mut Delivery,
    fresh_state: bool,
) -> Result<StartedFromBase, EngineError> {
    if !fresh_state {
        return Err(EngineError::Source(
            "--preload starts from its own state: give an empty --data-dir (not --reuse of one with state)"
                .to_string(),
        ));
    }
    let staging = scratch_dir(&run.config.data_dir).join("preload-ingest");
    let pre = preload::load(
        base,
        backends,
        &staging,
        (&run.config.workload, log, plan),
        sink,
        run.config
            .preload
            .as_ref()
            .map_or((None, false), |p| (p.check_sample, p.spec.warm)),
    )?;
    // A warmed cache's reads are not the run's.
    if pre.report.warmed_records > 0 {
        run.sampler.exclude_rocksdb_until_now(backends);
    }
    // The live job reads on from the record after the history, whose results the serving
    // store holds and whose truth the oracle has seen; a checkpoint's truth counts from the
    // log's start (`truth_origin`), so a restore rebuilds the history's truth too.
    let after = pre.manifest.offsets.clone();
    plan.start_reason = format!(
        "after the preloaded history ({} records)",
        pre.manifest.records
    );
    plan.start.clone_from(&after);
    plan.truth_start.clone_from(&after);
    plan.covered = Some(after);
    let resume = Resume {
        processed: 0,
        counters: Default::default(),
        results: pre.own_results,
        truth_origin: vec![0; log.partitions()],
        operators: pre.downstream,
    };
    run.clock.prepared(Instant::now());
    Ok(StartedFromBase {
        resume,
        truth: (pre.oracle, pre.oracle_watermark),
        report: pre.report,
        heap_timers: pre.heap_timers,
    })
}

/// What a job starting from a preload's base resumes with.
pub(super) struct StartedFromBase {
    pub resume: Resume,
    pub truth: (OracleThread, i64),
    pub report: PreloadReport,
    /// HEAP timers pending after the history (raw keyed state streams), with the operator
    /// (chain order) whose timer service takes them.
    pub heap_timers: Vec<(usize, Vec<u8>)>,
}

impl StartedFromBase {
    /// Puts the history's pending HEAP timers into the timer service of the operator of `job`
    /// each belongs to.
    pub fn add_heap_timers(
        heap_timers: &[(usize, Vec<u8>)],
        job: &mut JobRunner,
    ) -> Result<(), EngineError> {
        for (op, raw) in heap_timers {
            let timers = match op {
                0 => job.ctx.timers.as_mut(),
                _ => job
                    .chain
                    .stages
                    .iter_mut()
                    .find(|s| s.index == *op)
                    .and_then(|s| s.ctx.timers.as_mut()),
            };
            if let Some(timers) = timers {
                timers.add_raw_keyed_state(raw)?;
            }
        }
        Ok(())
    }
}
