//! The pipeline core: source, watermarks, the keyed operator and its timers. No UI, no printing.

pub mod operators;
pub mod oracle;
pub mod source;
pub mod timers;
pub mod trace;
pub mod watermark;

use crate::backend::BackendError;
use crate::durability::checkpoint::{CheckpointError, snapshot::SnapshotError, store::StoreError};
use crate::durability::delivery::DeliveryError;
use crate::durability::sink::SinkError;

#[derive(Debug, thiserror::Error)]
pub enum PipelineError {
    #[error(transparent)]
    Backend(#[from] BackendError),
    #[error(transparent)]
    Sink(#[from] SinkError),
    #[error(transparent)]
    Trace(#[from] trace::TraceError),
    #[error(transparent)]
    Delivery(#[from] DeliveryError),
    #[error(transparent)]
    Checkpoint(#[from] CheckpointError),
    #[error("timer key in RocksDB is not valid: {0}")]
    CorruptTimer(String),
    #[error("the operator registered a timer but has no timer service")]
    NoTimerService,
    #[error("the job has no operator number {0}")]
    NoSuchOperator(usize),
}

impl From<rocksdb::Error> for PipelineError {
    fn from(e: rocksdb::Error) -> Self {
        PipelineError::Backend(BackendError::RocksDb(e))
    }
}

impl From<StoreError> for PipelineError {
    fn from(e: StoreError) -> Self {
        PipelineError::Checkpoint(e.into())
    }
}

impl From<SnapshotError> for PipelineError {
    fn from(e: SnapshotError) -> Self {
        PipelineError::Checkpoint(e.into())
    }
}
