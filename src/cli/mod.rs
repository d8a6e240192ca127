//! Command line: `statebench run | profiles | workloads | trace | ...`.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

mod diagnose;
mod flink;
pub mod preload;
mod reproduce;
mod tune;
pub use diagnose::DiagnoseArgs;
pub use flink::{FlinkCommand, FlinkRunArgs, Judge};
pub use reproduce::ReproduceArgs;
pub use tune::{Objective, TuneArgs};

#[derive(Debug, Parser)]
#[command(
    name = "statebench",
    version,
    about = "A workbench for tuning the RocksDB state backend of keyed stream processors (Apache Flink)",
    long_about = "statebench runs a synthetic keyed workload through a faithful copy of Flink's \
RocksDB state access pattern (key-group | key | namespace keys, read-modify-write per event, \
event-time timers in their own column family) against a RocksDB profile, and measures what \
RocksDB does: write stalls and their cause, block-cache hit rates by block type, filter and index \
block reads per lookup, memtable and write-buffer-manager pressure, LSM shape and write \
amplification.\n\nProfiles and workloads are YAML files; built-in ones can be named without a \
path (see `statebench profiles list` and `statebench workloads list`)."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a workload against a profile headless: progress, terminal summary, JSON report.
    Run(RunArgs),
    /// Run a workload in the terminal UI: live dashboard, LSM view, live tuning of the profile,
    /// and an A/B comparison with --compare.
    #[command(
        after_help = "Keys: 1 2 3 4 (or Tab) dashboard / LSM / profile / A/B, p pause, \
q quit (summary printed, --report written), ? help. In the profile view: arrows select a knob, \
Enter edits it (live knobs apply at once with RocksDB's confirmation; others restart the run \
after y), s saves the edited profile as <name>-tuned.yaml."
    )]
    Tui(TuiArgs),
    /// List profiles or show one with Flink's derived memory numbers.
    #[command(subcommand)]
    Profiles(ProfilesCommand),
    /// List workloads or show one.
    #[command(subcommand)]
    Workloads(WorkloadsCommand),
    /// The preloaded bases kept for `run --preload`: list them, remove some, or remove what no
    /// run can use (builds left by a process that is gone).
    #[command(subcommand)]
    Preload(preload::PreloadCommand),
    /// Convert your own CSV or JSON Lines export into a trace (a column mapping), or check a
    /// trace: its events, keys, time span, out-of-orderness and inputs (docs/trace.md).
    #[command(subcommand)]
    Trace(TraceCommand),
    /// Run a field report's configuration trap broken and fixed side by side, or a case study's
    /// "before" profile, the advisor's finding for it and its fix re-run; exit 0 when the
    /// contrast reproduced (the advisor named the cause and the evidence moved), 1 when it did
    /// not. Without a name, list them.
    Reproduce(ReproduceArgs),
    /// Search the advisor's fixes on the scorecard: each round runs candidates (every finding's
    /// recommendation and alternatives, neighbouring values of their knobs, and the findings'
    /// job changes, reported apart) against the profile kept so far, and keeps one only when
    /// the objective improves beyond noise, no constraint breaks and no other figure gets worse
    /// beyond its band unless allowed (or paid for by a 10 % objective gain, the cost printed).
    /// Writes the tuned profile (`extends:` the original; with --report, the proof as JSON).
    Tune(TuneArgs),
    /// A profile in the formats users deploy: a Flink 1.20 or 2.x config.yaml fragment (only
    /// what the profile sets; memory as managed memory for --slots), the RocksDB OPTIONS file
    /// (FRocksDB 6.20.3's for target flink-1.20), or statebench YAML.
    Export {
        /// A profile YAML file or a built-in name.
        #[arg(short, long)]
        profile: String,
        #[command(flatten)]
        format: ExportFormat,
        #[command(flatten)]
        taskmanager: TaskManagerArgs,
        /// With --format flink: merge the export into this Flink configuration (config.yaml,
        /// flat or nested, or flink-conf.yaml) and write the merged file: every key once, set
        /// in place where the file sets it (listed old -> new on stderr), its comments kept;
        /// sized for its TaskManager. The file itself is rewritten only when -o names it.
        #[arg(long, value_name = "FILE", conflicts_with = "taskmanager_memory")]
        into: Option<PathBuf>,
        /// Write here (atomically) instead of standard output.
        #[arg(short, long)]
        output: Option<PathBuf>,
    },
    /// Replay a log of RocksDB operations (`run --record-ops`) on a fresh database with a
    /// profile, with no pipeline, and print how long it took: the yardstick for statebench's
    /// own overhead (see docs/overhead.md).
    #[command(hide = true)]
    ReplayOps {
        /// The operation log.
        log: PathBuf,
        /// The profile the run used (a file or a built-in name).
        #[arg(short, long)]
        profile: String,
        /// Print the result as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Diagnose a Flink job from what its RocksDB left behind: each instance's LOG (flushes and
    /// why, compactions and the LSM's shape, SST files with their filter and index sizes, write
    /// stalls and stops) and OPTIONS file. Prints the profile the job ran with, the workload
    /// the evidence describes, the advisor's findings on that evidence and the case study each
    /// matches.
    #[command(
        after_help = "DIR is a RocksDB instance's directory (Flink: an operator's db/ under state.backend.rocksdb.localdir, or io.tmp.dirs), or a directory holding several, one level down. Files read: LOG, LOG.old.*, flink-LOG* and the newest OPTIONS-*. Run the job here to A/B the fix: statebench run -w WORKLOAD_FILE -p PROFILE_FILE with the files --workload-out and --profile-out wrote. URL (http://host:8081) diagnoses a running job from Flink's REST API alone: its native RocksDB metrics (stall time, stopped writes) and the cluster's configuration (/jobmanager/config); without its LOG only a flush storm's stalls show, and no workload is written."
    )]
    Diagnose(DiagnoseArgs),
    /// Run the workload as a real Flink 1.20 job (an embedded cluster started from Flink's jars,
    /// or yours) beside statebench's own run of the same events and profile.
    #[command(subcommand)]
    Flink(FlinkCommand),
    /// The advisor's findings for a saved JSON report (`run --report`, `tui --report`): what
    /// is wrong, the evidence, and the profile change that fixes it with its memory cost.
    Advise {
        /// A report written by `statebench run --report` or `tui --report` (schema 1 or 2).
        report: PathBuf,
        /// Print the findings as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Run a fixed suite of short workload x profile cases and compare them with a baseline:
    /// counters noise cannot move (RocksDB ops and bytes written per event, result error) and
    /// flush-driven ones with a noise allowance (write amplification, flushes, stalls, block
    /// and filter reads per lookup), and timings as ratios to the suite's first case. Exits 1
    /// on a regression: a CI gate for a state backend configuration (--profile) or statebench.
    Bench(BenchArgs),
    /// Two JSON reports (`run --report`) metric by metric: A, B and B / A for every number of
    /// their summaries (the last segment of each), after a warning when they ran different
    /// workloads, event counts or segments. With --repeat N, N reports per side: medians,
    /// ranges, and which differences are real (outside both ranges).
    Compare {
        /// The reports: A then B; with --repeat N, N reports of A (runs of the same job), then
        /// N of B.
        #[arg(required = true, num_args = 2..)]
        reports: Vec<PathBuf>,
        /// Show every metric, also those equal on both sides.
        #[arg(long)]
        all: bool,
        /// Reports per side: each side's median and range (min–max) are shown, and a
        /// difference is called real only when the two ranges do not overlap.
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=100))]
        repeat: u64,
    },
}

#[derive(Debug, Args)]
pub struct BenchArgs {
    /// ci: a case per built-in job, under a minute (what CI runs); full: more cases and events; overhead:
    /// statebench's own overhead against its budgets (a few minutes; no baseline); scale: one
    /// workload from 0.5, 5 and 20 GiB of preloaded state (tens of minutes and ~30 GiB of disk
    /// the first time; the bases are kept for the next); fidelity: a preloaded state against
    /// the same records read through RocksDB; advice: tune on the case studies and issue 33's
    /// jobs against their known fixes (minutes to hours; no baseline); preload: the preload's
    /// build against RocksDB's SstFileWriter writing the same entries, per CPU-second (exit 1
    /// below 0.5x; no baseline).
    #[arg(long, value_enum, default_value = "ci")]
    pub suite: crate::suites::Suite,
    /// Run every case on this profile (YAML file or built-in) instead of its own: the
    /// configuration under test. Cases keep their names, so a baseline still matches.
    #[arg(short, long)]
    pub profile: Option<String>,
    /// Only these cases (comma-separated; --list shows the suite's).
    #[arg(long, value_delimiter = ',')]
    pub case: Vec<String>,
    /// Compare with this baseline (written by --save-baseline) and exit 1 on a regression.
    #[arg(long)]
    pub baseline: Option<PathBuf>,
    /// Write the results as a baseline for later runs.
    #[arg(long)]
    pub save_baseline: Option<PathBuf>,
    /// Percent a metric may get worse before it is a regression (counters with run-to-run
    /// noise get at least their measured noise allowance, shown by --verbose).
    #[arg(long, default_value_t = 5.0)]
    pub max_regression: f64,
    /// Also gate the timings (events/s and p99, as ratios to the suite's first case).
    #[arg(long)]
    pub timings: bool,
    /// Also write the results for benchmark dashboards: github-action-benchmark's
    /// customSmallerIsBetter JSON (throughput as time per event relative to the first case).
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Show every metric of the comparison, not only those that moved.
    #[arg(short, long)]
    pub verbose: bool,
    /// List the suite's cases and exit.
    #[arg(long)]
    pub list: bool,
    /// The overhead suite: rounds of a run, a replay of its RocksDB operations and a run with
    /// sampling off; the median of the run / replay pairs is judged.
    #[arg(long, default_value_t = 5)]
    pub rounds: usize,
    /// The advice suite: runs of each side (the start, the tuned profile, the known fix, the
    /// best single-knob change), interleaved, judged by their bands (at least 2).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(2..=20))]
    pub repeat: u32,
    /// The scale, advice and preload suites: where preloaded bases are kept (default: as `run
    /// --preload`; the preload suite builds in a temporary folder inside it, removed after).
    #[arg(long, value_name = "DIR")]
    pub preload_dir: Option<PathBuf>,
}

/// What `export` writes: the format, and for `--format flink` the Flink release.
#[derive(Debug, Args)]
pub struct ExportFormat {
    #[arg(long, value_enum)]
    pub format: crate::export::Format,
    /// With `--format flink`: the Flink release the configuration is for [default: 1.20]. 2.x
    /// keys are checked against Flink 2.0.0's option classes.
    #[arg(long, value_enum)]
    pub flink_version: Option<crate::export::FlinkVersion>,
}

/// The TaskManager a `--format flink` export is sized for: its managed memory is written for
/// this many slots, and Flink's whole memory derivation is printed with whether the profile fits.
#[derive(Debug, Args, Default, Clone)]
pub struct TaskManagerArgs {
    /// Slots per TaskManager (`taskmanager.numberOfTaskSlots`, written live): managed memory is
    /// exported as slots x the profile's memory.managed-size [default: the file's, else 1].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub slots: Option<u32>,
    /// The TaskManager's total process memory (`taskmanager.memory.process.size`, written live;
    /// Flink's syntax, e.g. 4g or 1728m): Flink's derivation of it is printed.
    #[arg(long, value_name = "SIZE", conflicts_with = "taskmanager_memory")]
    pub taskmanager_process_size: Option<String>,
    /// The cluster's Flink configuration (config.yaml, nested or flat, or flink-conf.yaml): its
    /// taskmanager.memory.* keys and slots are what the export is sized for and checked against.
    #[arg(long, value_name = "FILE")]
    pub taskmanager_memory: Option<PathBuf>,
}

/// What to run and how far: shared by `run` and `tui`.
#[derive(Debug, Args)]
pub struct JobArgs {
    /// Workload: a YAML file or a built-in name.
    #[arg(short, long, default_value = "smoke")]
    pub workload: String,
    /// RocksDB profile: a statebench profile YAML, a Flink config.yaml / flink-conf.yaml (Flink's
    /// keys, read as a profile; see docs/profiles.md), or a built-in name (profile A with
    /// `tui --compare`).
    #[arg(short, long, default_value = "flink-default")]
    pub profile: String,
    /// Process this many events instead of the workload's count (event time keeps the
    /// workload's pace, so a shorter run is a prefix of the full one).
    #[arg(long, value_parser = parse_events)]
    pub events: Option<u64>,
    /// Stop after this much running time (e.g. 30s, 2m; pauses do not count), or at --events,
    /// whichever is first.
    #[arg(long, value_parser = parse_duration)]
    pub duration: Option<crate::config::Millis>,
    /// Write the JSON report (summary, findings and every snapshot, per segment: a TUI restart
    /// on a new profile starts one) to this file, and RocksDB's OPTIONS file beside it. With
    /// `tui --compare`, B's report goes to <name>-b.json and the A/B table to
    /// <name>-compare.txt; `tune` writes its proof (every round) here.
    #[arg(long)]
    pub report: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub job: JobArgs,
    /// RocksDB directory. Default: a fresh temporary directory, removed after the run.
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
    /// Allow --data-dir to point at a non-empty directory (its state is reused).
    #[arg(long, requires = "data_dir")]
    pub reuse: bool,
    /// Serving store for the results: `memory` (in process) or a Redis URL
    /// (`redis://127.0.0.1:6379`); Redis keys go under the job's prefix (--sink-prefix).
    #[arg(long, default_value = "memory")]
    pub sink: SinkArg,
    /// With a Redis sink: the prefix of the job's keys (PREFIX + freq:user-N:WINDOW; letters,
    /// digits and ':_-./'). Default: the prefix of the job in --data-dir (chosen at its first
    /// run and kept in <data-dir>/job.json, so --restore and --reuse write the same keys), or a
    /// new 'statebench:<time>-<pid>:' for a new job. A prefix other than the stored one is
    /// refused.
    #[arg(long, value_name = "PREFIX")]
    pub sink_prefix: Option<String>,
    /// No progress output; only the summary.
    #[arg(short, long)]
    pub quiet: bool,
    /// Also write the job's final state as CSV lines `key,window,count` (sorted), e.g. to
    /// compare it with another engine's (`parity/`).
    #[arg(long)]
    pub final_counts: Option<PathBuf>,
    /// Record every RocksDB operation of the run to this file, for `replay-ops` (overhead
    /// measurement; a workload without phases).
    #[arg(long, hide = true)]
    pub record_ops: Option<PathBuf>,
    /// Start from a checkpoint instead of the source's starting offsets: `latest` (the newest
    /// completed checkpoint in --data-dir's checkpoint store, e.g. after a crash or kill -9) or
    /// a checkpoint's or savepoint's folder. State, timers and source offsets are rewound
    /// together; the sink's pending transactions are committed if their checkpoint completed,
    /// aborted otherwise. Needs --data-dir (its broker, sink journal and checkpoints).
    #[arg(long, requires = "data_dir", value_name = "latest|DIR")]
    pub restore: Option<String>,
    #[command(flatten)]
    pub preload: PreloadArgs,
    #[command(flatten)]
    pub failures: FailureArgs,
    #[command(flatten)]
    pub cpu: CpuArgs,
}

/// A preloaded steady state to start from (`run --preload`).
#[derive(Debug, Args)]
pub struct PreloadArgs {
    /// Start from the state the job holds after a history of the log: `events=N` (its first N
    /// records), `span=DURATION` (its first e.g. 24h of event time) or `size=BYTES` (as long as
    /// it takes the state's SST files to reach e.g. 10GiB), optionally `,memory=BYTES` (what the build may
    /// hold in memory at once; default 1GiB) and `,levels=full` (every level of each state's
    /// tree at about its target size, the newest changes at the top and two flushes' worth
    /// in L0, as a long-running job's tree is; default `last`: all of it in its last level)
    /// and `,warm` (the block cache as a job that has run for days holds it: the history's
    /// last records' keys looked up again before the run, not counted in its figures;
    /// default: cold, as after a restore). Without a value: the workload's `preload:` section. The state is built in memory by the job's own operator, written as
    /// SST files into the level an LSM tree of that size keeps its data in, and kept under
    /// --preload-dir; later runs of the same workload, profile and amount clone it (hard
    /// links) in seconds. The run's events follow the history; its results are checked
    /// against the truth of the whole log.
    #[arg(long, value_name = "SPEC", num_args = 0..=1, default_missing_value = "")]
    pub preload: Option<String>,
    /// Where preloaded bases are kept. Default: $XDG_CACHE_HOME/statebench/preload (or
    /// ~/.cache/statebench/preload).
    #[arg(long, value_name = "DIR", requires = "preload")]
    pub preload_dir: Option<PathBuf>,
    /// Build the base again even if one is kept.
    #[arg(long, requires = "preload")]
    pub preload_rebuild: bool,
    /// Check the results of the keys of one in N (a deterministic sample by key hash) instead
    /// of the automatic choice (every key up to about a million results, then a sample).
    #[arg(long, value_name = "N", requires = "preload", value_parser = clap::value_parser!(u64).range(1..))]
    pub check_sample: Option<u64>,
}

/// Failure injection, for `run` and `tui`.
#[derive(Debug, Args)]
pub struct FailureArgs {
    /// Kill the job once it has processed this many records, and restart it from its last
    /// completed checkpoint (comma-separated for several: 20000,45000).
    #[arg(long, value_delimiter = ',', value_parser = parse_events, value_name = "EVENTS")]
    pub fail_at: Vec<u64>,
    /// Kill the job every this long of running time (e.g. 10s), each time once it has completed
    /// a checkpoint since it last started, and restart it from that checkpoint.
    #[arg(long, value_parser = parse_duration, value_name = "DURATION")]
    pub fail_every: Option<crate::config::Millis>,
    /// Take a savepoint once the job has processed this many records (comma-separated for
    /// several), into the data directory's checkpoints/savepoints/. It commits nothing.
    #[arg(long, value_delimiter = ',', value_parser = parse_events, value_name = "EVENTS")]
    pub savepoint_at: Vec<u64>,
    /// The savepoints' format: canonical (every key, uncompressed, portable) or native
    /// (RocksDB's own files).
    #[arg(long, value_parser = parse_savepoint_format, default_value = "canonical")]
    pub savepoint_format: crate::engine::SavepointFormat,
}

fn parse_savepoint_format(text: &str) -> Result<crate::engine::SavepointFormat, String> {
    match text {
        "canonical" => Ok(crate::engine::SavepointFormat::Canonical),
        "native" => Ok(crate::engine::SavepointFormat::Native),
        _ => Err(format!(
            "'{text}' is not a savepoint format: canonical or native"
        )),
    }
}

impl FailureArgs {
    /// The savepoints asked for, by record count.
    pub fn savepoints(&self) -> Vec<(u64, crate::engine::SavepointFormat)> {
        self.savepoint_at
            .iter()
            .map(|at| (*at, self.savepoint_format))
            .collect()
    }

    pub fn spec(&self) -> crate::engine::FailureSpec {
        crate::engine::FailureSpec {
            at_events: self.fail_at.clone(),
            every: self.fail_every.map(|d| d.as_duration()),
        }
    }
}

/// The CPU profiler, for `run` and `tui`.
#[derive(Debug, Args)]
pub struct CpuArgs {
    /// Sample the CPU of every thread (RocksDB's background threads too) while the run goes:
    /// shares by cause (filter-block reads, block reads, checksums, compaction, serialization,
    /// ...) in every snapshot and the summary, and with --report a flamegraph
    /// (<report>.cpu.svg) and a pprof profile (<report>.cpu.pb) beside the report.
    #[arg(long)]
    pub profile_cpu: bool,
}

#[derive(Debug, Args)]
pub struct TuiArgs {
    #[command(flatten)]
    pub job: JobArgs,
    /// A second profile (B): both run the workload in alternating time slices, side by side in
    /// the A/B view.
    #[arg(long)]
    pub compare: Option<String>,
    /// Screen refresh interval (e.g. 250ms). Snapshots arrive at the workload's sample interval.
    #[arg(long, value_parser = parse_duration, default_value = "250ms")]
    pub refresh: crate::config::Millis,
    /// With --compare: how long each profile runs before the other gets the machine.
    #[arg(long, value_parser = parse_duration, default_value = "2s")]
    pub slice: crate::config::Millis,
    #[command(flatten)]
    pub failures: FailureArgs,
    #[command(flatten)]
    pub cpu: CpuArgs,
}

#[derive(Debug, Subcommand)]
pub enum ProfilesCommand {
    /// List the built-in profiles and those in a folder.
    List {
        /// Also list the profiles in this folder (default: ./profiles, when there is one).
        #[arg(long)]
        dir: Option<PathBuf>,
    },
    /// Print the effective profile (after `extends:`), and with --derived Flink's memory math.
    Show {
        /// A profile file or built-in name.
        name: String,
        /// Also print the block cache, WriteBufferManager and per-column-family budget Flink
        /// derives, and settings Flink overrides.
        #[arg(long)]
        derived: bool,
        /// Print the profile as Flink configuration lines instead (`key: value`, Flink's keys;
        /// knobs Flink has no key for as `statebench.<knob>`, for a RocksDBOptionsFactory).
        #[arg(long, conflicts_with = "derived")]
        flink: bool,
        /// With --derived: the TaskManager the profile runs on (--slots,
        /// --taskmanager-process-size or --taskmanager-memory FILE): Flink's derivation of its
        /// memory with the profile's managed memory in place, and whether it fits.
        #[command(flatten)]
        taskmanager: TaskManagerArgs,
    },
}

#[derive(Debug, Subcommand)]
pub enum TraceCommand {
    /// Convert an export (CSV with a header line, or JSON Lines of objects) into a trace:
    /// every line is checked first, and the trace is written whole or not at all.
    #[command(
        after_help = "Example: statebench trace convert clicks.jsonl --to clicks.csv --key user_id \\
--time timestamp --time-format rfc3339 --partition partition --payload value"
    )]
    Convert(Box<TraceConvertArgs>),
    /// Read and check a trace as a run would, and show what it holds.
    Check(TraceCheckArgs),
}

#[derive(Debug, Args)]
pub struct TraceConvertArgs {
    /// The export: CSV with a header line, or JSON Lines (read as such when it starts with '{').
    #[arg(value_name = "IN")]
    pub file: PathBuf,
    /// The trace to write (replaced atomically).
    #[arg(long, value_name = "OUT")]
    pub to: PathBuf,
    /// The trace's format [default: jsonl for a .jsonl/.ndjson/.json file, else csv].
    #[arg(long, value_enum)]
    pub format: Option<crate::pipeline::trace::convert::OutputFormat>,
    /// The column (CSV header name or JSON field; a.b for a nested field) of the key the job
    /// is keyed by.
    #[arg(long, value_name = "COL")]
    pub key: String,
    /// The column of the event time.
    #[arg(long, value_name = "COL")]
    pub time: String,
    /// How the event time is written.
    #[arg(long, value_enum, default_value = "epoch-ms")]
    pub time_format: crate::pipeline::trace::convert::TimeFormat,
    /// The column of the source partition (a non-negative integer) [default: none; a run keys
    /// each key into the workload's partitions].
    #[arg(long, value_name = "COL")]
    pub partition: Option<String>,
    /// The column of the value's size in bytes.
    #[arg(long, value_name = "COL", conflicts_with = "payload")]
    pub value_size: Option<String>,
    /// The column of the value itself: its size is its length in bytes (a JSON value that is
    /// not a string: the length of its compact JSON).
    #[arg(long, value_name = "COL")]
    pub payload: Option<String>,
    /// The column of the input a record belongs to, for a two-input job (a join): 0 or left,
    /// 1 or right (or your own values with --input-values).
    #[arg(long, value_name = "COL")]
    pub input: Option<String>,
    /// The --input column's values for the left and the right input, e.g. clicks,impressions.
    #[arg(long, value_name = "LEFT,RIGHT", requires = "input", value_parser = parse_input_values)]
    pub input_values: Option<InputValues>,
}

/// `--input-values LEFT,RIGHT`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputValues {
    pub left: String,
    pub right: String,
}

fn parse_input_values(text: &str) -> Result<InputValues, String> {
    match text.split_once(',') {
        Some((left, right))
            if !left.is_empty() && !right.is_empty() && left != right && !right.contains(',') =>
        {
            Ok(InputValues {
                left: left.to_string(),
                right: right.to_string(),
            })
        }
        _ => Err(format!(
            "'{text}': expected two different values separated by a comma, the left input's then the right's (e.g. clicks,impressions)"
        )),
    }
}

#[derive(Debug, Args)]
pub struct TraceCheckArgs {
    /// The trace (CSV or JSON Lines).
    pub file: PathBuf,
    /// Also check every partition number against a workload's partition count.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub partitions: Option<u32>,
    /// Print the summary as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Subcommand)]
pub enum WorkloadsCommand {
    /// List the built-in workloads.
    List,
    /// Print a workload as statebench reads it.
    Show {
        /// A workload file or built-in name.
        name: String,
    },
}

fn parse_duration(text: &str) -> Result<crate::config::Millis, String> {
    let duration = crate::config::Millis::parse(text)
        .ok_or_else(|| format!("invalid duration '{text}' (expected e.g. 30s, 2m, 500ms)"))?;
    if duration.0 == 0 {
        return Err(format!(
            "'{text}' is no time at all: a run that processes nothing measures nothing (give e.g. 30s, 2m, 500ms)"
        ));
    }
    Ok(duration)
}

fn parse_events(text: &str) -> Result<u64, String> {
    let events: u64 = text
        .parse()
        .map_err(|_| format!("invalid number of events '{text}' (expected e.g. 100000)"))?;
    if events == 0 {
        return Err(
            "0 events: a run that processes nothing measures nothing (give at least 1, or leave --events out for the workload's count)"
                .to_string(),
        );
    }
    Ok(events)
}

/// `--sink`: where the job's results go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SinkArg {
    Memory,
    /// A Redis server's URL (`redis://host:port`).
    Redis(String),
}

impl std::str::FromStr for SinkArg {
    type Err = String;

    fn from_str(s: &str) -> Result<SinkArg, String> {
        match s {
            "memory" => Ok(SinkArg::Memory),
            url if url.starts_with("redis://") && url.len() > "redis://".len() => {
                Ok(SinkArg::Redis(url.to_string()))
            }
            other => Err(format!(
                "'{other}': expected 'memory' or a Redis URL such as redis://127.0.0.1:6379"
            )),
        }
    }
}

fn parse_size(text: &str) -> Result<crate::config::ByteSize, String> {
    crate::config::ByteSize::parse(text)
        .filter(|s| s.0 > 0)
        .ok_or_else(|| format!("invalid size '{text}' (expected e.g. 72mb, 1gb)"))
}
