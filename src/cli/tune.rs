//! `statebench tune`'s arguments and what it improves.

use std::path::PathBuf;

use clap::Args;
use serde::Serialize;

use crate::summary::scorecard::Figure;

#[derive(Debug, Args)]
pub struct TuneArgs {
    #[command(flatten)]
    pub job: super::JobArgs,
    /// Every run (the start, each candidate and repeat) from the same preloaded state: a
    /// candidate that changes the table options (a filter, the block size) builds its own base
    /// once, and keeps it.
    #[command(flatten)]
    pub preload: super::PreloadArgs,
    /// Rounds of advise, apply and re-run at most.
    #[arg(long, default_value_t = 3)]
    pub rounds: u32,
    /// Managed memory the tuned profile may use (default: the profile's own). A fix that needs
    /// more is not applied; tune says how much it needs.
    #[arg(long, value_parser = super::parse_size)]
    pub memory_budget: Option<crate::config::ByteSize>,
    /// Where to write the tuned profile (default: <profile>-tuned.yaml here, never over a file).
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Runs a candidate may take at most: one first, more (with the base run again to give it
    /// a band) while its objective gain is within the band; the tables show median (min–max).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=50))]
    pub repeat: u32,
    /// What the search improves: throughput (events/s, or CPU per event where the workload's
    /// rate bounds it), latency (event p99) or memory (RocksDB's peak).
    #[arg(long, value_enum, default_value = "throughput")]
    pub objective: Objective,
    /// A candidate whose write amplification exceeds this is rejected.
    #[arg(long, value_name = "X")]
    pub max_write_amp: Option<f64>,
    /// A candidate that leaves the TaskManager less task heap than this is not run (the
    /// profile must be, or extend, a Flink configuration with the TaskManager's memory).
    #[arg(long, value_name = "SIZE", value_parser = super::parse_size)]
    pub min_task_heap: Option<crate::config::ByteSize>,
    /// Scorecard figures a candidate may make worse (comma-separated): events-per-sec,
    /// cpu-per-event, p99, p999, write-amp, bytes-written-per-event, flushes, compactions,
    /// stall-time, bytes-per-lookup, live-sst, rocksdb-memory, managed-memory, task-heap.
    #[arg(long, value_name = "FIGURE[,FIGURE]", value_delimiter = ',', value_parser = crate::summary::scorecard::Figure::parse)]
    pub allow: Vec<crate::summary::scorecard::Figure>,
    /// Runs the whole tune may take (the start's, every candidate's and repeat's).
    #[arg(long, default_value_t = 12, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub max_runs: u32,
    /// Runs of profile candidates one round may take, repeats included (the job changes' are
    /// apart): every fresh candidate gets one run before any is run again.
    #[arg(long, default_value_t = 6, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub round_runs: u32,
}

/// What tune improves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Objective {
    /// Events/s; CPU per event where the workload's `rate:` bounds the run (it cannot go
    /// faster).
    #[default]
    Throughput,
    /// Event latency p99.
    Latency,
    /// RocksDB's memory at its peak.
    Memory,
}

impl Objective {
    pub fn figure(self, rate_bound: bool) -> Figure {
        match self {
            Objective::Throughput if rate_bound => Figure::CpuPerEvent,
            Objective::Throughput => Figure::EventsPerSec,
            Objective::Latency => Figure::P99Latency,
            Objective::Memory => Figure::RocksdbMemory,
        }
    }
}
