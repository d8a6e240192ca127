//! A trace's workload completed from what its trace holds: the keys, events and span it may
//! leave out.

use super::validate::validate;
use super::{ConfigError, Millis, Workload};

/// What a workload's trace holds: its records, keys, records per input and per partition.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TraceFigures {
    pub records: u64,
    pub keys: u64,
    /// Records of the left (first) and the right (second) input.
    pub inputs: [u64; 2],
    /// Records per partition, partition 0 first.
    pub partitions: Vec<u64>,
    /// The event time its records span.
    pub span: Millis,
}

impl Workload {
    /// What a trace's workload left out (its keys, events, span), from what its trace holds;
    /// then every check again on the whole workload: the source's and the phases' times
    /// against the trace's span, say.
    pub fn complete_from_trace(&mut self, figures: TraceFigures) -> Result<(), ConfigError> {
        let spec = &mut self.spec;
        if spec.keys.count == 0 {
            spec.keys.count = figures.keys;
        }
        if spec.events == 0 {
            spec.events = figures.records;
        }
        if spec.event_time.span.0 == 0 {
            // One millisecond at least: a trace whose records share one time spans it.
            spec.event_time.span = Millis(figures.span.0.max(1));
        }
        self.trace_figures = Some(figures);
        validate(&self.spec).map_err(|message| ConfigError::Invalid {
            origin: self.source.clone(),
            message,
        })
    }
}
