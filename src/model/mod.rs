//! The plain data every layer shares: column-family layouts, a trace's key strings, a job's
//! records, counters and offsets, RocksDB's metric values, CPU shares, checkpoint records, the
//! snapshots a run produces and the summary of a run. It imports nothing of statebench's own:
//! any layer may name it, and it names none. What computes the data lives with what measures it
//! (the backend's sampler, the profiler, the summary), sometimes as an `impl` block there.

pub mod checkpoint;
pub mod counters;
pub mod cpu;
pub mod event;
pub mod layout;
pub mod metrics;
pub mod snapshot;
pub mod summary;
pub mod trace_keys;
