//! `statebench flink ...`'s arguments.

use std::path::PathBuf;

use clap::{Args, Subcommand};

#[derive(Debug, Subcommand)]
pub enum FlinkCommand {
    /// Run the workload as a real Flink 1.20 job and the same events through statebench, and
    /// print them side by side: flushes (and those the WriteBufferManager forced), write stops
    /// and stall time, bytes written, flushed and compacted; the read path (block-cache hits by
    /// block type, data, filter and index blocks read per point lookup, iterator seeks, nexts
    /// and skipped entries per element, live SST), from each side's own RocksDB statistics and
    /// LOG. With --compare, both again on a second profile, and whether Flink's RocksDB moved as
    /// statebench predicted; exit 1 if it did not.
    #[command(after_help = AFTER_HELP)]
    Run(FlinkRunArgs),
}

const AFTER_HELP: &str = "How: the workload's events are written as a trace (WORK/trace.csv). The job (the field reports' frequency counter on Flink's own KeyedProcessOperator, or Flink's own operator for the workload's other kind, compiled here against the distribution's lib/ with javac) replays it with the profile's exported config.yaml (WORK/<profile>/job-conf), its keyed operator at --parallelism, on an embedded session cluster started from the distribution's jars: a JobManager (StandaloneSessionClusterEntrypoint) and --taskmanagers TaskManager processes (TaskManagerRunner, memory from Flink's own calculator), one slot each, on localhost; logs in WORK/<profile>/logs. Each subtask measures its RocksDB instance when the input ends (WORK/<profile>/flink/subtask-N). statebench then runs one subtask's share of the trace (the keys of its key groups; the busiest subtask, or --subtask N) at the rate Flink's subtask reached.

With --cluster URL the job runs on your session cluster through its REST API (upload, run, poll; Ctrl-C cancels the job). Its TaskManagers must read WORK (the trace) and write into it (their measurements): a cluster on this machine or a shared file system. Its memory settings are the cluster's own: its managed memory per slot is read from /taskmanagers and statebench runs with it; only the job's state backend settings come from the profile.

Needs a JDK (java, javac, jar) and a Flink 1.20 distribution: --flink-dist, FLINK_HOME, or PyPI's apache-flink-libraries 1.20.1 in ~/.cache/flink as parity/setup.sh fetches it.

Exit codes: 0 done (and with --compare, as predicted), 1 the job or the embedded cluster failed, or Flink did not move as predicted, 2 bad input or a missing JDK or distribution, 3 Flink's REST API (cluster down, wrong version), 130 cancelled with Ctrl-C (the job is cancelled and the cluster stopped first).";

#[derive(Debug, Args)]
pub struct FlinkRunArgs {
    /// Workload (a shipped name or a YAML file): one keyed operator, any kind.
    #[arg(short, long, value_name = "WORKLOAD")]
    pub workload: String,
    /// Profile (a shipped name or a YAML file).
    #[arg(short, long, value_name = "PROFILE")]
    pub profile: String,
    /// A second profile: both sides run again on it, and the change is judged.
    #[arg(long, value_name = "PROFILE")]
    pub compare: Option<String>,
    /// Events of the workload (default: its own).
    #[arg(long)]
    pub events: Option<u64>,
    /// The keyed operator's parallelism on Flink: its key groups spread over this many
    /// subtasks, each with its own RocksDB instance and slot.
    #[arg(long, default_value_t = 2)]
    pub parallelism: u32,
    /// The subtask whose RocksDB is compared (0 to parallelism - 1). Default: the one with
    /// the most events, where a skewed workload's RocksDB works hardest.
    #[arg(long, value_name = "N")]
    pub subtask: Option<u32>,
    /// TaskManager processes of the embedded cluster, one slot each.
    #[arg(long, default_value_t = 2)]
    pub taskmanagers: u32,
    /// A running Flink 1.20 session cluster's REST address (http://host:8081) instead of the
    /// embedded one.
    #[arg(long, value_name = "URL")]
    pub cluster: Option<String>,
    /// A Flink 1.20 distribution (DIR/lib and DIR/bin/bash-java-utils.jar).
    #[arg(long, value_name = "DIR")]
    pub flink_dist: Option<PathBuf>,
    /// Working directory: the trace, configurations, Flink's logs and measurements,
    /// statebench's data. Kept after the run.
    #[arg(long, value_name = "DIR", default_value = "statebench-flink")]
    pub work: PathBuf,
    /// Print the side by side as JSON: per profile both sides' numbers, and each judged change.
    #[arg(long)]
    pub json: bool,
    /// Which judged changes decide the exit code with --compare: all, write (flushes, stops,
    /// stall time: a memory or write-buffer fix) or read (blocks read per lookup, iteration per
    /// element: a filter, block or index fix). Every verdict is shown either way.
    #[arg(long, value_enum, default_value = "all")]
    pub judge: Judge,
}

/// Which judged changes decide `flink run --compare`'s exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Judge {
    All,
    Write,
    Read,
}
