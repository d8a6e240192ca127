//! The keyed operators a job can run, one file per kind behind one small interface: the column
//! families it declares ([`Layout`]), what it does per record and per timer
//! ([`KeyedOperator`]), and what its oracle computes ([`oracle`]).
//!
//! Every kind does to RocksDB what Flink 1.20's own runtime operator does, call for call; each
//! file names the Flink classes it mirrors.

pub mod aggregate;
mod context;
pub mod dedup;
pub mod frequency;
pub mod interval_join;
pub mod process;
mod process_truth;
#[cfg(test)]
mod testkit;
#[cfg(test)]
mod trace_keys;
pub mod ttl;
pub mod valgen;
pub mod window;

pub use context::Context;
pub use frequency::{FrequencyJob, JobMode};

use super::PipelineError;
use super::oracle::Oracle;
use super::source::Event;
use super::timers::Timer;
use crate::backend::StateBackend;
use crate::config::Workload;
use crate::config::job::OperatorSpec;

/// One column family the operator creates, in Flink's creation order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CfDecl {
    pub name: String,
    pub role: CfRole,
}

/// What a column family holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CfRole {
    /// A keyed state (Value, List, Map, Reducing, Aggregating). `ttl`: its `StateTtlConfig`,
    /// whose compaction filter RocksDB runs on this column family when cleanup is on; `merge`:
    /// the state appends with RocksDB's merge operator (Flink's ListState).
    State { ttl: Option<TtlDecl>, merge: bool },
    /// A timer service's event-time queue (`_timer_state/event_<service>`).
    EventTimers,
    /// Its processing-time queue (`_timer_state/processing_<service>`).
    ProcessingTimers,
}

/// A state's TTL as Flink's `StateTtlConfig` gives it to RocksDB.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TtlDecl {
    /// Time to live, processing-time ms.
    pub ttl_ms: i64,
    /// `cleanupInRocksdbCompactFilter`: expired entries are dropped in compactions.
    pub compaction_filter: bool,
    /// The filter asks for the current time after this many entries.
    pub query_time_after: u64,
    /// Where the state's values keep their TTL timestamp (value or map state).
    pub layout: crate::backend::ttl_filter::TtlLayout,
}

/// The column families of one operator, in creation order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Layout {
    pub cfs: Vec<CfDecl>,
}

impl Layout {
    /// A keyed state's column family.
    pub fn state(mut self, name: &str, ttl: Option<TtlDecl>, merge: bool) -> Layout {
        self.cfs.push(CfDecl {
            name: name.to_string(),
            role: CfRole::State { ttl, merge },
        });
        self
    }

    /// A timer service named `service`: its processing-time queue, then its event-time one, the
    /// order Flink 1.20.1 creates them in (`InternalTimeServiceManagerImpl.registerOrGetTimerService`
    /// passes `createTimerPriorityQueue("_timer_state/processing_" + name)` before
    /// `createTimerPriorityQueue("_timer_state/event_" + name)` to `InternalTimerServiceImpl`'s
    /// constructor; `RocksDBPriorityQueueSetFactory.create` creates each column family at once).
    pub fn timer_service(mut self, service: &str) -> Layout {
        self.cfs.push(CfDecl {
            name: format!("_timer_state/processing_{service}"),
            role: CfRole::ProcessingTimers,
        });
        self.cfs.push(CfDecl {
            name: format!("_timer_state/event_{service}"),
            role: CfRole::EventTimers,
        });
        self
    }

    /// Every column family's name, in creation order.
    pub fn names(&self) -> Vec<String> {
        self.cfs.iter().map(|c| c.name.clone()).collect()
    }

    /// The column families that hold data (states and event-time timers): what shares the
    /// WriteBufferManager in practice (a processing-time queue nothing registers stays empty).
    pub fn data_cfs(&self) -> Vec<String> {
        self.cfs
            .iter()
            .filter(|c| c.role != CfRole::ProcessingTimers)
            .map(|c| c.name.clone())
            .collect()
    }

    /// The event-time timer queue's column family, if the operator has a timer service.
    pub fn event_timers(&self) -> Option<&str> {
        self.cfs
            .iter()
            .find(|c| c.role == CfRole::EventTimers)
            .map(|c| c.name.as_str())
    }

    /// The processing-time timer queue's column family, if the operator has a timer service.
    pub fn processing_timers(&self) -> Option<&str> {
        self.cfs
            .iter()
            .find(|c| c.role == CfRole::ProcessingTimers)
            .map(|c| c.name.as_str())
    }
}

/// Counters the job keeps about itself (carried in checkpoints).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct JobCounters {
    pub events: u64,
    pub increments: u64,
    pub decrements: u64,
    /// Timers that found no timerState entry and so decremented nothing.
    pub missing_decrements: u64,
    /// timerState reads that found an entry whose TTL had expired (returned as null).
    pub expired_timer_state: u64,
    /// Decrements that took a count below zero (more -1 than +1: double firing, a bad restore).
    pub negative_counts: u64,
    /// Records the operator emitted (window results, join pairs, deduplicated records, ...).
    pub emitted: u64,
    /// Records dropped as late (behind the watermark by more than the allowed lateness).
    pub dropped_late: u64,
    /// State values read back expired (state TTL) and so treated as absent.
    pub expired_state: u64,
}

/// A keyed stream operator: what it does per record, per timer and per watermark.
pub trait KeyedOperator<'a> {
    fn on_event(&mut self, event: &Event, ctx: &mut Context<'a>) -> Result<(), PipelineError>;

    fn on_timer(&mut self, _timer: &Timer, _ctx: &mut Context<'a>) -> Result<(), PipelineError> {
        Ok(())
    }

    fn on_watermark(
        &mut self,
        _watermark: i64,
        _ctx: &mut Context<'a>,
    ) -> Result<(), PipelineError> {
        Ok(())
    }

    /// The job's counters (at least `events`).
    fn counters(&self) -> JobCounters;

    /// Goes on from a checkpoint's counters.
    fn restore_counters(&mut self, counters: JobCounters);

    /// Results the operator keeps outside Flink state, as (key, slot, value): running totals of
    /// what it emitted (a join's pairs), which Flink would keep in the downstream operator's
    /// checkpointed state. A checkpoint carries them; none by default.
    fn results_snapshot(&self) -> Vec<(u64, usize, i64)> {
        Vec::new()
    }

    /// Goes on from a checkpoint's [`KeyedOperator::results_snapshot`].
    fn restore_results(&mut self, _results: &[(u64, usize, i64)]) {}

    /// The frequency counter, for its backfill's sync and its checks.
    fn as_frequency(&self) -> Option<&FrequencyJob<'a>> {
        None
    }
}

/// The column families `spec`'s operator creates, in Flink's creation order.
pub fn layout(spec: &OperatorSpec) -> Layout {
    match spec {
        OperatorSpec::Frequency(f) => frequency::layout(f),
        OperatorSpec::Dedup(d) => dedup::layout(d),
        OperatorSpec::Aggregate(a) => aggregate::layout(a),
        OperatorSpec::Process(p) => process::layout(p),
        OperatorSpec::Window(w) => window::layout(w),
        OperatorSpec::IntervalJoin(j) => interval_join::layout(j),
    }
}

/// The workload's operator on `backend` (opened with [`layout`]'s column families).
pub fn build<'a>(
    backend: &'a StateBackend,
    workload: &Workload,
    mode: JobMode,
) -> Result<Box<dyn KeyedOperator<'a> + 'a>, PipelineError> {
    match workload.operator() {
        OperatorSpec::Frequency(_) => {
            Ok(Box::new(FrequencyJob::with_mode(backend, workload, mode)?))
        }
        OperatorSpec::Dedup(d) => Ok(Box::new(dedup::Dedup::new(&d, backend, workload)?)),
        OperatorSpec::Aggregate(a) => {
            Ok(Box::new(aggregate::Aggregate::new(&a, backend, workload)?))
        }
        OperatorSpec::Process(p) => Ok(Box::new(process::Process::new(&p, backend, workload)?)),
        OperatorSpec::Window(w) => Ok(Box::new(window::WindowOperator::new(
            &w, backend, workload,
        )?)),
        OperatorSpec::IntervalJoin(j) => Ok(Box::new(interval_join::IntervalJoin::new(
            backend, workload, &j,
        )?)),
    }
}

/// The exact oracle of the workload's operator.
pub fn oracle(workload: &Workload) -> Oracle {
    match workload.operator() {
        OperatorSpec::Frequency(f) => {
            let windows: Vec<i64> = f.windows.iter().map(|w| w.0 as i64).collect();
            Oracle::new(&windows)
        }
        OperatorSpec::Dedup(d) => Oracle::with_model(
            d.result_labels().len(),
            Box::new(dedup::DedupTruth::new(&d)),
        ),
        OperatorSpec::Aggregate(a) => Oracle::with_model(
            a.result_labels().len(),
            Box::new(aggregate::AggregateTruth::new(&a)),
        ),
        OperatorSpec::Process(p) => Oracle::with_model(
            p.result_labels().len(),
            Box::new(process_truth::ProcessTruth::new(
                &p,
                super::source::KeyNames::of(workload),
            )),
        ),
        OperatorSpec::Window(w) => match window::WindowTruth::new(&w) {
            Ok(model) => Oracle::with_model(w.result_labels().len(), Box::new(model)),
            // A spec that does not validate never runs.
            Err(_) => Oracle::with_model(w.result_labels().len(), Box::new(Nothing)),
        },
        OperatorSpec::IntervalJoin(j) => Oracle::with_model(
            j.result_labels().len(),
            Box::new(interval_join::JoinTruth::new(&j)),
        ),
    }
}

/// The model of a kind not built yet: no results.
#[derive(Clone)]
struct Nothing;

impl super::oracle::TruthModel for Nothing {
    fn on_event(&mut self, _: &Event, _: i64, _: &mut super::oracle::Truths) {}
    fn on_watermark(&mut self, _: i64, _: i64, _: &mut super::oracle::Truths) {}
    fn boxed_clone(&self) -> Box<dyn super::oracle::TruthModel> {
        Box::new(self.clone())
    }
}

/// SplitMix64's finalizer: a well-mixed 64-bit hash of `x` (also the value-size draw).
pub fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The results' digest of four numbers (DESIGN: the same in the Flink parity job):
/// `h = a; h = h * 1000003 ^ b; h = h * 1000003 ^ c; h = h * 1000003 ^ d; splitmix64(h)`.
pub fn mix(a: i64, b: i64, c: i64, d: i64) -> i64 {
    let mut h = a as u64;
    for x in [b, c, d] {
        h = h.wrapping_mul(1_000_003) ^ (x as u64);
    }
    splitmix64(h) as i64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mix_matches_the_java_definition() {
        // Computed with Java longs: mix(1767225600000L, 1767225660000L, 3L, 96L).
        assert_eq!(splitmix64(0), 0xE220_A839_7B1D_CDAF);
        let a = mix(1_767_225_600_000, 1_767_225_660_000, 3, 96);
        assert_eq!(a, mix(1_767_225_600_000, 1_767_225_660_000, 3, 96));
        assert_ne!(a, mix(1_767_225_600_000, 1_767_225_660_000, 96, 3));
    }

    #[test]
    fn a_timer_service_creates_its_processing_time_queue_first() {
        // Flink 1.20.1's OPTIONS of a KeyedProcessOperator with ValueState "seen" (parity/run-kinds,
        // dedup-first): default, seen, _timer_state/processing_user-timers, _timer_state/event_user-timers.
        let layout = Layout::default()
            .state("seen", None, false)
            .timer_service("user-timers");
        assert_eq!(
            layout.names(),
            [
                "seen",
                "_timer_state/processing_user-timers",
                "_timer_state/event_user-timers"
            ]
        );
        assert_eq!(layout.cfs[1].role, CfRole::ProcessingTimers);
        assert_eq!(layout.cfs[2].role, CfRole::EventTimers);
        assert_eq!(
            layout.event_timers(),
            Some("_timer_state/event_user-timers")
        );
        assert_eq!(
            layout.processing_timers(),
            Some("_timer_state/processing_user-timers")
        );
    }
}
