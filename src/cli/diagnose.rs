//! `statebench diagnose`'s arguments.

use std::path::PathBuf;

use clap::Args;

#[derive(Debug, Args)]
pub struct DiagnoseArgs {
    /// The evidence: a RocksDB instance's directory, or a directory of several; or a running
    /// job's JobManager REST address (http://host:8081): its native RocksDB metrics and its
    /// cluster's configuration alone (no LOG: fewer findings, no workload).
    #[arg(value_name = "DIR|URL")]
    pub dir: PathBuf,
    /// Write the profile the job ran with here (statebench YAML, atomically).
    #[arg(long, value_name = "FILE")]
    pub profile_out: Option<PathBuf>,
    /// Write the workload the evidence describes here (statebench YAML, atomically): the
    /// shipped workload of the operator kind its column families name, with the evidence's
    /// keys, events and rate (how each was found is in its comments).
    #[arg(long, value_name = "FILE")]
    pub workload_out: Option<PathBuf>,
    /// The job's own workload (a shipped name or a YAML file) to take what a LOG does not
    /// show from: windows, event-time span, serializer. Its job must be the kind the column
    /// families name. Default: the shipped workload of that kind.
    #[arg(long, value_name = "WORKLOAD")]
    pub like: Option<String>,
    /// Flink's REST address (http://host:8081): the running job's native RocksDB metrics
    /// (state.backend.rocksdb.metrics.*) are read from there, summed over its subtasks, as
    /// a Prometheus scrape beside the evidence would be.
    #[arg(long, value_name = "URL")]
    pub rest: Option<String>,
    /// The job to read with --rest or a URL (default: the only running one).
    #[arg(long, value_name = "JOB_ID")]
    pub job: Option<String>,
    /// Print the diagnosis as JSON: per instance what the LOG says, the profile (YAML and
    /// notes), the findings with their case studies.
    #[arg(long)]
    pub json: bool,
}
