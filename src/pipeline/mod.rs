//! The pipeline core: source, watermarks, the keyed operator and its timers. No UI, no printing.

pub mod bits;
pub mod checkpoint;
pub mod delivery;
pub mod hash;
pub mod operators;
pub mod oracle;
pub mod sink;
pub mod source;
pub mod timers;
pub mod trace;
pub mod watermark;
pub mod worker;

use crate::backend::BackendError;

#[derive(Debug, thiserror::Error)]
pub enum PipelineError {
    #[error(transparent)]
    Backend(#[from] BackendError),
    #[error(transparent)]
    Sink(#[from] sink::SinkError),
    #[error(transparent)]
    Trace(#[from] trace::TraceError),
    #[error(transparent)]
    Delivery(#[from] delivery::DeliveryError),
    #[error(transparent)]
    Checkpoint(#[from] checkpoint::CheckpointError),
    #[error("timer key in RocksDB is not valid: {0}")]
    CorruptTimer(String),
    #[error("the operator kind '{0}' is not built yet")]
    NotBuilt(&'static str),
    #[error("the operator registered a timer but has no timer service")]
    NoTimerService,
}

impl From<rocksdb::Error> for PipelineError {
    fn from(e: rocksdb::Error) -> Self {
        PipelineError::Backend(BackendError::RocksDb(e))
    }
}

impl From<checkpoint::store::StoreError> for PipelineError {
    fn from(e: checkpoint::store::StoreError) -> Self {
        PipelineError::Checkpoint(e.into())
    }
}

impl From<checkpoint::snapshot::SnapshotError> for PipelineError {
    fn from(e: checkpoint::snapshot::SnapshotError) -> Self {
        PipelineError::Checkpoint(e.into())
    }
}
