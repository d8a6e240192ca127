//! Durability: what survives a failure. Checkpoints and savepoints of a job (its source offsets,
//! its RocksDB state, its sink's transaction) in a checkpoint store and the restore from them;
//! the sink's delivery guarantees between the operator and the serving store; the serving
//! store itself. The pipeline writes through this layer; the engine drives its checkpoints.

pub mod checkpoint;
pub mod delivery;
pub mod progress_mark;
pub mod sink;
