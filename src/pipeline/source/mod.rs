//! The source: what events a run has (`generator`), and the Kafka stand-in that holds them
//! in partitions and hands them to consumers (`log`).

mod generator;
mod keys;
mod log;

pub use generator::{Event, EventSource, Generator};
pub use keys::{KeyNames, TraceKeys};
pub use log::{Consumer, Log, OffsetStore, Offsets, ReadPlan, resolve_start};
