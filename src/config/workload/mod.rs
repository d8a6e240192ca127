//! Workloads: which keys, how many events, how event time moves, which windows the job keeps.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::job::OperatorSpec;
use super::job::frequency::FrequencySpec;
use super::job::interval_join::JoinSources;
use super::job::section::{self, JobSpec};
use super::units::Millis;
use super::{ConfigError, locate, parse_yaml};

mod validate;
use validate::validate;

mod from_trace;
pub mod inputs;
mod preload;
pub use crate::model::summary::SerializerKind;
pub use from_trace::TraceFigures;
pub use inputs::InputSpec;
pub use preload::{Levels, PreloadSpec};

/// Workloads compiled into the binary.
pub const BUILTIN: &[(&str, &str)] = &[
    ("smoke", include_str!("../../../workloads/smoke.yaml")),
    (
        "ads-minutes",
        include_str!("../../../workloads/ads-minutes.yaml"),
    ),
    (
        "ads-hours",
        include_str!("../../../workloads/ads-hours.yaml"),
    ),
    ("ads-days", include_str!("../../../workloads/ads-days.yaml")),
    (
        "hours-state",
        include_str!("../../../workloads/hours-state.yaml"),
    ),
    (
        "backfill-catchup",
        include_str!("../../../workloads/backfill-catchup.yaml"),
    ),
    (
        "dedup-24h",
        include_str!("../../../workloads/dedup-24h.yaml"),
    ),
    (
        "process-example",
        include_str!("../../../workloads/process-example.yaml"),
    ),
    (
        "sessions-process",
        include_str!("../../../workloads/sessions-process.yaml"),
    ),
    (
        "sessions-aggregate",
        include_str!("../../../workloads/sessions-aggregate.yaml"),
    ),
    (
        "sliding-aggregate",
        include_str!("../../../workloads/sliding-aggregate.yaml"),
    ),
    (
        "interval-join",
        include_str!("../../../workloads/interval-join.yaml"),
    ),
    (
        "running-aggregate",
        include_str!("../../../workloads/running-aggregate.yaml"),
    ),
    (
        "dedup-then-sessions",
        include_str!("../../../workloads/dedup-then-sessions.yaml"),
    ),
    (
        "latest-1k",
        include_str!("../../../workloads/latest-1k.yaml"),
    ),
    (
        "orders-payments",
        include_str!("../../../workloads/orders-payments.yaml"),
    ),
    (
        "orders-payments-generated",
        include_str!("../../../workloads/orders-payments-generated.yaml"),
    ),
    (
        "dedup-ids",
        include_str!("../../../workloads/dedup-ids.yaml"),
    ),
    (
        "dedup-ids-10g",
        include_str!("../../../workloads/dedup-ids-10g.yaml"),
    ),
    (
        "sessions-zipf-1m",
        include_str!("../../../workloads/sessions-zipf-1m.yaml"),
    ),
];

/// 2026-01-01T00:00:00Z, the default start of event time.
pub const DEFAULT_EVENT_TIME_START: u64 = 1_767_225_600_000;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Distribution {
    #[default]
    Uniform,
    Zipf,
    HotSet,
}

/// Events per second of wall-clock time: as fast as possible, or paced.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum Rate {
    #[default]
    Max,
    PerSecond(u64),
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct KeysSpec {
    /// Number of distinct users (0: not given; a trace's workload takes its trace's).
    #[serde(default)]
    pub count: u64,
    #[serde(default = "uniform")]
    pub distribution: Distribution,
    /// Zipf exponent (distribution: zipf).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zipf_exponent: Option<f64>,
    /// Share of the keys that are hot (distribution: hot-set), e.g. 0.01.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hot_keys: Option<f64>,
    /// Share of the traffic that goes to hot keys (distribution: hot-set), e.g. 0.9.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hot_traffic: Option<f64>,
    /// Bytes of every key string: `user-N` padded to this length (`user-000…042`). None: the
    /// plain `user-N`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u32>,
}

/// Bytes of an event's value: a fixed size or uniform between two sizes, drawn per event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ValueSize {
    Fixed(u32),
    #[serde(rename_all = "kebab-case")]
    Uniform {
        min: u32,
        max: u32,
    },
}

impl ValueSize {
    pub fn bounds(&self) -> (u32, u32) {
        match *self {
            ValueSize::Fixed(n) => (n, n),
            ValueSize::Uniform { min, max } => (min, max),
        }
    }
}

/// The largest value an event may carry.
pub const MAX_VALUE_SIZE: u32 = 16 << 20;
/// The largest key space.
pub const MAX_KEYS: u64 = 1 << 32;

fn uniform() -> Distribution {
    Distribution::Uniform
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct EventTimeSpec {
    /// Event time of the first event, epoch milliseconds.
    #[serde(default = "default_start")]
    pub start: u64,
    /// Event time covered by `events` events (0: not given; a trace's workload takes its
    /// trace's).
    #[serde(default = "zero_millis")]
    pub span: Millis,
    /// How far an event may lag behind the newest one (bounded out-of-orderness).
    #[serde(default = "zero_millis")]
    pub out_of_orderness: Millis,
    /// Share of events (0..1) that lag further than `out-of-orderness`: late events, which the
    /// job still counts and whose past-due timers fire at the next watermark.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub late_fraction: f64,
}

impl Default for EventTimeSpec {
    fn default() -> Self {
        EventTimeSpec {
            start: DEFAULT_EVENT_TIME_START,
            span: Millis(0),
            out_of_orderness: Millis(0),
            late_fraction: 0.0,
        }
    }
}

fn is_zero(v: &f64) -> bool {
    *v == 0.0
}

fn default_start() -> u64 {
    DEFAULT_EVENT_TIME_START
}
fn zero_millis() -> Millis {
    Millis(0)
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct WorkloadSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The keys; a trace's workload may leave them out (its trace's keys are the keys).
    #[serde(default)]
    pub keys: KeysSpec,
    #[serde(default = "default_partitions")]
    pub partitions: u32,
    #[serde(default)]
    pub rate: Rate,
    /// A trace's workload may leave out the span (the trace's records carry their times).
    #[serde(default)]
    pub event_time: EventTimeSpec,
    /// The keyed operator the job runs, or a chain of them (see `config::job`). None: the
    /// frequency counter of `windows`, `timer-state-ttl` and `serializer` below.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job: Option<JobSpec>,
    /// Sliding windows the frequency counter keeps, e.g. `[1m, 5m, 10m, 30m]` (without `job:`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub windows: Vec<Millis>,
    /// A two-input job's inputs as the generator makes them: their partitions, value sizes,
    /// and the second's records following the first's keys (`inputs.rs`). None: the join's
    /// `right-share` of the events on the right.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inputs: Option<Vec<InputSpec>>,
    /// Bytes of each event's value (the record the operator keeps or aggregates). None: the
    /// event carries no value (the frequency counter stores its own stats).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value_size: Option<ValueSize>,
    #[serde(default)]
    pub serializer: SerializerKind,
    /// Events in the run; also fixes how fast event time advances (span / events). 0: not
    /// given; a trace's workload runs its trace's records.
    #[serde(default)]
    pub events: u64,
    /// Optional wall-clock cap on the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration: Option<Millis>,
    #[serde(default)]
    pub seed: u64,
    /// How often the engine publishes a metrics snapshot.
    #[serde(default = "default_sample_interval")]
    pub sample_interval: Millis,
    /// `WatermarkStrategy.withIdleness`: a partition without records for this long (replay
    /// time) stops holding the watermark back. None: partitions are never idle.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idleness: Option<Millis>,
    /// Partitions that get no records at all (their users go to the other partitions).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub idle_partitions: Vec<u32>,
    /// Bounded source: after its last record each partition reports its end this much later
    /// (replay time) and emits the maximum watermark. None: unbounded, no final watermark.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bounded_end_delay: Option<Millis>,
    /// Replay this trace (CSV or JSON Lines: key, event_time[, partition, value_size, input];
    /// docs/trace.md) instead of the synthetic generator; a relative path is relative to the
    /// workload file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<std::path::PathBuf>,
    /// TTL of the job's timerState (processing time = replay time). None: no TTL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timer_state_ttl: Option<Millis>,
    /// How the job reads the log: readers, consumer group, starting and stopping offsets.
    #[serde(default)]
    pub source: SourceSpec,
    /// Backfill then catch-up (the seed's two-phase switch); None: one streaming job.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phases: Option<PhasesSpec>,
    /// A steady state to start from (`run --preload`): the history the job would have read
    /// before this run, built fast in memory and loaded as SST files. Used when `run --preload`
    /// is given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preload: Option<PreloadSpec>,
}

/// Where a job starts reading when it has no checkpoint (Flink's `OffsetsInitializer`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StartingOffsets {
    /// The oldest record the log retains (the start of event time).
    #[default]
    Earliest,
    /// The end of the log when the job is deployed: only newer records.
    Latest,
    /// The group's committed offsets, or `committed-fallback` when it has none.
    Committed,
    /// The first record written at or after `source.starting-timestamp`.
    Timestamp,
}

/// What `committed` does for a group that has never committed (Kafka's auto.offset.reset).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OffsetReset {
    #[default]
    Earliest,
    Latest,
    /// Fail: the job refuses to start without committed offsets.
    None,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct SourceSpec {
    /// Parallel source readers (default: one per partition). More readers than partitions
    /// leaves readers without a partition; like Flink's Kafka source they hold the watermark
    /// back unless `idleness` is set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub readers: Option<u32>,
    /// The consumer group the job commits its offsets to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    #[serde(default)]
    pub starting_offsets: StartingOffsets,
    /// Only with `starting-offsets: committed` (default earliest).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub committed_fallback: Option<OffsetReset>,
    /// For `starting-offsets: timestamp`: event time after `event-time.start`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub starting_timestamp: Option<Millis>,
    /// How much of the log (event time after `event-time.start`) is written when the job is
    /// deployed; `latest` starts there, and the backlog before it is read at deploy time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deployed_at: Option<Millis>,
    /// Stop at the offsets of this time (after `event-time.start`) instead of the log's end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_at: Option<Millis>,
}

/// How the catch-up job decides to write a count to the serving store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WriteCondition {
    /// The change's own event time (the event's, or the timer's) is at or after the switch.
    #[default]
    EventTime,
    /// The job's current watermark is at or after the switch (the seed's trap: one idle
    /// partition holds the watermark back and blocks every write).
    Watermark,
}

/// Where the catch-up job's state comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CatchUpState {
    /// Empty: rebuilt from the log, with timers.
    #[default]
    Fresh,
    /// The backfill's final state and offsets, as if restored from its savepoint (the seed's
    /// trap: the backfill registered no timers, so its counts never decrease).
    BackfillSavepoint,
}

/// Backfill then catch-up: the backfill counts the history before the switch (+1 only, no
/// timers), writes the serving store once and finishes; the catch-up rebuilds the state with
/// timers from the log and writes the store only from the switch on.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct PhasesSpec {
    /// The switch point (the seed's SCAN_END), event time after `event-time.start`; both jobs
    /// are deployed then.
    pub switch_at: Millis,
    #[serde(default = "backfill_group")]
    pub backfill_group: String,
    /// A group of its own; the same as `backfill-group` is the seed's trap (the committed
    /// offsets are past the catch-up range, which is silently skipped).
    #[serde(default = "catch_up_group")]
    pub catch_up_group: String,
    #[serde(default)]
    pub catch_up_writes: WriteCondition,
    #[serde(default)]
    pub catch_up_state: CatchUpState,
}

fn backfill_group() -> String {
    "backfill".to_string()
}
fn catch_up_group() -> String {
    "catch-up".to_string()
}

fn default_partitions() -> u32 {
    4
}
fn default_sample_interval() -> Millis {
    Millis(1000)
}

/// A validated workload.
#[derive(Debug, Clone, Serialize)]
pub struct Workload {
    pub name: String,
    pub source: String,
    #[serde(flatten)]
    pub spec: WorkloadSpec,
    /// The key strings of the workload's trace, once it is loaded (`commands::Job::load`):
    /// the job keys its records by them (`pipeline::source::KeyNames`). None: generated keys.
    #[serde(skip)]
    pub trace_keys: Option<std::sync::Arc<crate::model::trace_keys::TraceKeys>>,
    /// What the workload's trace holds, once it is loaded (the summary says it rather than the
    /// generator's settings).
    #[serde(skip)]
    pub trace_figures: Option<TraceFigures>,
}

impl Workload {
    pub fn load(name: &str) -> Result<Workload, ConfigError> {
        let (origin, text) = locate("workload", name, BUILTIN)?;
        let spec: WorkloadSpec =
            parse_yaml(&text, &origin).map_err(|e| section::job_error(&text, e))?;
        let name = origin.name();
        let mut spec = spec;
        // A trace path is relative to the workload file that names it (a shipped workload's
        // file is workloads/<name>.yaml).
        if let Some(trace) = &spec.trace
            && trace.is_relative()
        {
            let folder = match &origin {
                super::Origin::File(file) => file.parent().unwrap_or(std::path::Path::new(".")),
                _ => std::path::Path::new("workloads"),
            };
            spec.trace = Some(folder.join(trace));
        }
        // A chain's problems name `job[i].<field>` and their line.
        if let Some(job) = &spec.job
            && let Some(e) = section::chain_error(&text, &origin.to_string(), job)
        {
            return Err(e);
        }
        Workload::from_spec(&name, &origin.to_string(), spec)
    }

    pub fn from_spec(
        name: &str,
        source: &str,
        mut spec: WorkloadSpec,
    ) -> Result<Workload, ConfigError> {
        let invalid = |message: String| ConfigError::Invalid {
            origin: source.to_string(),
            message,
        };
        // `job: {kind: frequency, ...}` is the top-level form's other spelling: keep one.
        if let Some(job) = &spec.job
            && let [OperatorSpec::Frequency(f)] = job.operators()
        {
            if !spec.windows.is_empty() || spec.timer_state_ttl.is_some() {
                return Err(invalid(
                    "'windows' and 'timer-state-ttl' are given both at the top level and in 'job:'; keep them in 'job:' only".to_string(),
                ));
            }
            spec.windows = f.windows.clone();
            spec.timer_state_ttl = f.timer_state_ttl;
            spec.job = None;
        }
        validate(&spec).map_err(|message| ConfigError::Invalid {
            origin: source.to_string(),
            message,
        })?;
        // A join's sources, said once (the summary shows them): a source per input with
        // `inputs:` (two topics), else one source split in two.
        let two_topics = spec.inputs.is_some();
        if let Some(job) = &mut spec.job
            && let OperatorSpec::IntervalJoin(join) = job.first_mut()
        {
            join.sources.get_or_insert(if two_topics {
                JoinSources::Two
            } else {
                JoinSources::One
            });
        }
        Ok(Workload {
            name: name.to_string(),
            source: source.to_string(),
            spec,
            trace_keys: None,
            trace_figures: None,
        })
    }

    /// Event-time distance between consecutive events, in milliseconds (fractional).
    pub fn event_time_step(&self) -> f64 {
        self.spec.event_time.span.0 as f64 / self.spec.events.max(1) as f64
    }

    pub fn window_label(window: Millis) -> String {
        window.to_string()
    }

    /// The keyed operator the job runs (a chain's first, which reads the source): the `job:`
    /// section, or the frequency counter of the top-level `windows`.
    pub fn operator(&self) -> OperatorSpec {
        match &self.spec.job {
            Some(job) => job.first().clone(),
            None => OperatorSpec::Frequency(FrequencySpec {
                windows: self.spec.windows.clone(),
                timer_state_ttl: self.spec.timer_state_ttl,
            }),
        }
    }

    /// Every operator of the job, in chain order (one for a job of a single operator).
    pub fn operators(&self) -> Vec<OperatorSpec> {
        match &self.spec.job {
            Some(job) => job.operators().to_vec(),
            None => vec![self.operator()],
        }
    }

    /// Whether the job chains several operators.
    pub fn is_chain(&self) -> bool {
        self.spec.job.as_ref().is_some_and(JobSpec::is_chain)
    }

    /// Per operator, the first of its result slots in the job's (the serving store's)
    /// numbering: 0 for the first, then the slots of every operator before it.
    pub fn slot_bases(&self) -> Vec<usize> {
        let mut base = 0;
        self.operators()
            .iter()
            .map(|op| {
                let at = base;
                base += op.result_labels().len();
                at
            })
            .collect()
    }

    /// Whether the job is the frequency counter (the only kind with backfill phases).
    pub fn is_frequency(&self) -> bool {
        self.spec.job.is_none()
    }

    /// The job's result slots (the serving store's `<key>:<label>`), in order: a single
    /// operator's labels, or in a chain every operator's labels prefixed `op<i>.`.
    pub fn result_labels(&self) -> Vec<String> {
        if !self.is_chain() {
            return self.operator().result_labels();
        }
        self.operators()
            .iter()
            .enumerate()
            .flat_map(|(i, op)| {
                op.result_labels()
                    .into_iter()
                    .map(move |label| format!("op{i}.{label}"))
            })
            .collect()
    }

    /// The label of every window, in the workload's order (the MapState's user keys).
    pub fn window_labels(&self) -> Vec<String> {
        self.spec
            .windows
            .iter()
            .map(|w| Self::window_label(*w))
            .collect()
    }
}

impl<'de> Deserialize<'de> for Rate {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Number(u64),
            Text(String),
        }
        match Raw::deserialize(deserializer)? {
            Raw::Number(n) => Ok(Rate::PerSecond(n)),
            Raw::Text(t) if t == "max" => Ok(Rate::Max),
            Raw::Text(t) => Err(serde::de::Error::custom(format!(
                "invalid rate '{t}' (expected 'max' or events per second, e.g. 20000)"
            ))),
        }
    }
}

impl Serialize for Rate {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Rate::Max => serializer.serialize_str("max"),
            Rate::PerSecond(n) => serializer.serialize_u64(*n),
        }
    }
}
