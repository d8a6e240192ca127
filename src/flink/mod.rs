//! The bridge to real Flink: `flink run` (a job on a Flink 1.20 session cluster, side by side with
//! statebench's own run of it) and `diagnose` (a real job's RocksDB LOGs, OPTIONS files and REST
//! metrics read back into a profile and findings). Translating a profile to and from Flink's
//! configuration is the configuration's (`config::flink`, `config::flink_in`, `config::tm_memory`)
//! and the export's (`export::flink`) business; both directions are used from here.

pub mod diagnose;
pub mod run;
