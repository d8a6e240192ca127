//! Checkpoints: the store Flink-style checkpoints and savepoints are uploaded to.

pub mod store;
