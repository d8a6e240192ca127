//! What carries a job across its attempts: a job restarted after a failure (or in a new
//! process, from a checkpoint) is the same job, and its counts and rates hold every attempt's
//! work; the truth, the serving store and the checkpoint coordinator outlive a failure.

use std::time::Duration;

use super::job::JobRunner;
use super::snapshot::LatencyRecorder;
use crate::backend::AccessCounters;
use crate::durability::checkpoint::{Checkpointer, JobWork};
use crate::durability::delivery::Delivery;
use crate::durability::sink::SinkCounters;
use crate::pipeline::oracle::thread::OracleThread;
use crate::pipeline::source::Offsets;

/// What a job's earlier attempts in this process did: a job restarted after a failure is the same
/// job, and its counts and rates hold every attempt's work (the replayed records too).
#[derive(Default)]
pub struct Attempts {
    /// Records read (replays included).
    pub records: u64,
    /// Of those, read again after a restore.
    pub replayed: u64,
    /// RocksDB operations issued.
    pub ops: AccessCounters,
    /// Of those, each operator's (a chain's; empty before the first attempt ended).
    pub op_ops: Vec<AccessCounters>,
    /// Each operator's operations per column family (`StateAccess::column_families`), in
    /// chain order.
    pub cf_ops: Vec<Vec<crate::backend::CfOps>>,
    /// Latencies recorded (the run-long histograms go on).
    pub latency: Option<LatencyRecorder>,
    /// The first attempt's start, in the run's running time.
    pub started_at: Option<Duration>,
    /// Records the job's state covered when its first attempt started.
    pub records_before: Option<u64>,
    /// Where and why the first attempt started reading.
    pub started_from: Option<(String, Offsets)>,
    /// The serving store's counters when the first attempt started.
    pub sink_base: Option<SinkCounters>,
    /// The job's work in the processes before this one (restored from another process's
    /// checkpoint); None when the job started in this process.
    pub earlier_processes: Option<JobWork>,
}

/// What outlives a job that failed: the exact truth (it saw every record once, and must not
/// see a replayed one again), the serving store, the checkpoint coordinator.
pub struct Survivors {
    pub oracle: OracleThread,
    pub oracle_watermark: i64,
    pub sink: Delivery,
    pub checkpointer: Option<Checkpointer>,
    /// The failed job's position: its truth has seen every record before it.
    pub position: Offsets,
    pub processed: u64,
    pub truth_origin: Offsets,
    /// Its work and that of the attempts before it.
    pub attempts: Attempts,
}

impl JobRunner<'_> {
    /// This attempt goes on from `earlier` ones, and reads again the records up to
    /// `replay_until` (the count the failed attempt, or the killed process, had reached).
    pub fn continue_from(&mut self, mut earlier: Attempts, replay_until: u64) {
        if let Some(latency) = earlier.latency.take() {
            self.ctx.state.latency = latency;
        }
        if let Some(at) = earlier.started_at {
            self.started_at = at;
        }
        if let Some(base) = earlier.sink_base {
            self.sink_base = base;
        }
        self.earlier = earlier;
        self.replay_until = replay_until;
    }

    /// What outlives this job once it failed. Its checkpoint under way is abandoned.
    pub fn into_survivors(mut self) -> Survivors {
        if let Some(c) = &mut self.checkpointer {
            c.detach();
        }
        let attempts = Attempts {
            records: self.records_read(),
            replayed: self.records_replayed(),
            ops: self.ops(),
            op_ops: self.op_ops(),
            cf_ops: self.cf_ops(),
            latency: Some(std::mem::take(&mut self.ctx.state.latency)),
            started_at: Some(self.started_at),
            records_before: Some(self.earlier.records_before.unwrap_or(self.start_processed)),
            started_from: Some(self.earlier.started_from.take().unwrap_or_else(|| {
                let plan = self.consumer.plan();
                (plan.start_reason.clone(), plan.start.clone())
            })),
            sink_base: Some(self.sink_base),
            earlier_processes: self.earlier.earlier_processes,
        };
        Survivors {
            attempts,
            // A two-input job's truth has not seen what it read ahead.
            position: match &self.two_inputs {
                Some(reader) => reader.taken(self.consumer.position()),
                None => self.consumer.position().clone(),
            },
            processed: self.processed,
            oracle: self.oracle,
            oracle_watermark: self.oracle_watermark,
            sink: self.ctx.sink,
            checkpointer: self.checkpointer,
            truth_origin: self.truth_origin,
        }
    }
}
