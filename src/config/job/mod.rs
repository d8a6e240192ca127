//! The workload's `job:` section: the keyed operator the pipeline runs, one of Flink's kinds.
//!
//! Each kind's parameters live in their own file; this module dispatches to them. Without a
//! `job:` section the job is the field reports' frequency counter built from the workload's
//! top-level `windows:` and `timer-state-ttl:`.

pub mod aggregate;
pub mod dedup;
pub mod frequency;
pub mod interval_join;
pub mod process;
pub mod section;
pub mod window;

pub use section::JobSpec;

use serde::{Deserialize, Serialize};

/// One keyed operator: which of Flink's operators it is, with that operator's parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum OperatorSpec {
    /// The field reports' per-user frequency counter (a KeyedProcessFunction).
    Frequency(frequency::FrequencySpec),
    /// Keep the first (or last) record per key, in a ValueState with an optional TTL.
    Dedup(dedup::DedupSpec),
    /// A keyed running aggregate (`keyBy().reduce()`, a SQL GROUP BY).
    Aggregate(aggregate::AggregateSpec),
    /// A KeyedProcessFunction described as data.
    Process(process::ProcessSpec),
    /// Flink's WindowOperator: tumbling, sliding or session windows.
    Window(window::WindowSpec),
    /// Flink's IntervalJoinOperator over two inputs.
    IntervalJoin(interval_join::IntervalJoinSpec),
}

/// Every kind's name, for error messages.
pub const KINDS: &str = "frequency, dedup, aggregate, process, window, interval-join";

impl OperatorSpec {
    /// The kind's name as the workload file spells it.
    pub fn kind(&self) -> &'static str {
        match self {
            OperatorSpec::Frequency(_) => "frequency",
            OperatorSpec::Dedup(_) => "dedup",
            OperatorSpec::Aggregate(_) => "aggregate",
            OperatorSpec::Process(_) => "process",
            OperatorSpec::Window(_) => "window",
            OperatorSpec::IntervalJoin(_) => "interval-join",
        }
    }

    /// Checks the kind's parameters; the message names the field (`job.<field>`).
    pub fn validate(&self) -> Result<(), String> {
        match self {
            OperatorSpec::Frequency(s) => s.validate(),
            OperatorSpec::Dedup(s) => s.validate(),
            OperatorSpec::Aggregate(s) => s.validate(),
            OperatorSpec::Process(s) => s.validate(),
            OperatorSpec::Window(s) => s.validate(),
            OperatorSpec::IntervalJoin(s) => s.validate(),
        }
    }

    /// The job's result slots, in order: what the serving store keeps per key
    /// (`<key>:<label>`) and the oracle checks.
    pub fn result_labels(&self) -> Vec<String> {
        match self {
            OperatorSpec::Frequency(s) => s.result_labels(),
            OperatorSpec::Dedup(s) => s.result_labels(),
            OperatorSpec::Aggregate(s) => s.result_labels(),
            OperatorSpec::Process(s) => s.result_labels(),
            OperatorSpec::Window(s) => s.result_labels(),
            OperatorSpec::IntervalJoin(s) => s.result_labels(),
        }
    }

    /// Whether the job reads two inputs (a join).
    pub fn two_inputs(&self) -> bool {
        matches!(self, OperatorSpec::IntervalJoin(_))
    }
}
