//! The pipeline core: source, watermarks, the keyed operator and its timers. No UI, no printing.

pub mod downstream;
pub mod operators;
pub mod oracle;
pub mod output;
pub mod source;
pub mod timers;
pub mod trace;
pub mod two_inputs;
pub mod watermark;

use crate::backend::BackendError;

#[derive(Debug, thiserror::Error)]
pub enum PipelineError {
    #[error(transparent)]
    Backend(#[from] BackendError),
    #[error(transparent)]
    Trace(#[from] trace::TraceError),
    /// What an implementation of one of the pipeline's interfaces failed with (the delivery
    /// and the serving store behind an [`output::Output`]), or the checkpoint store the
    /// pipeline's state is written to.
    #[error(transparent)]
    Output(#[from] output::OutputError),
    #[error("timer key in RocksDB is not valid: {0}")]
    CorruptTimer(String),
    #[error("the operator registered a timer but has no timer service")]
    NoTimerService,
    #[error("the job has no operator number {0}")]
    NoSuchOperator(usize),
}
