//! Workloads: which keys, how many events, how event time moves, which windows the job keeps.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::job::OperatorSpec;
use super::job::frequency::FrequencySpec;
use super::units::Millis;
use super::{ConfigError, locate, parse_yaml};

/// Workloads compiled into the binary.
pub const BUILTIN: &[(&str, &str)] = &[
    ("smoke", include_str!("../../workloads/smoke.yaml")),
    (
        "ads-minutes",
        include_str!("../../workloads/ads-minutes.yaml"),
    ),
    ("ads-hours", include_str!("../../workloads/ads-hours.yaml")),
    ("ads-days", include_str!("../../workloads/ads-days.yaml")),
    (
        "hours-state",
        include_str!("../../workloads/hours-state.yaml"),
    ),
    (
        "backfill-catchup",
        include_str!("../../workloads/backfill-catchup.yaml"),
    ),
    ("dedup-24h", include_str!("../../workloads/dedup-24h.yaml")),
    (
        "process-example",
        include_str!("../../workloads/process-example.yaml"),
    ),
    (
        "sessions-process",
        include_str!("../../workloads/sessions-process.yaml"),
    ),
    (
        "sessions-aggregate",
        include_str!("../../workloads/sessions-aggregate.yaml"),
    ),
    (
        "sliding-aggregate",
        include_str!("../../workloads/sliding-aggregate.yaml"),
    ),
    (
        "interval-join",
        include_str!("../../workloads/interval-join.yaml"),
    ),
    (
        "running-aggregate",
        include_str!("../../workloads/running-aggregate.yaml"),
    ),
];

/// 2026-01-01T00:00:00Z, the default start of event time.
pub const DEFAULT_EVENT_TIME_START: u64 = 1_767_225_600_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Distribution {
    Uniform,
    Zipf,
    HotSet,
}

/// How values are serialized: Flink's POJO serializer or its Kryo fallback (`pipeline.force-kryo`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SerializerKind {
    #[default]
    Compact,
    Generic,
}

/// Events per second of wall-clock time: as fast as possible, or paced.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum Rate {
    #[default]
    Max,
    PerSecond(u64),
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct KeysSpec {
    /// Number of distinct users.
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
    /// Event time covered by `events` events.
    pub span: Millis,
    /// How far an event may lag behind the newest one (bounded out-of-orderness).
    #[serde(default = "zero_millis")]
    pub out_of_orderness: Millis,
    /// Share of events (0..1) that lag further than `out-of-orderness`: late events, which the
    /// job still counts and whose past-due timers fire at the next watermark.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub late_fraction: f64,
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
    pub keys: KeysSpec,
    #[serde(default = "default_partitions")]
    pub partitions: u32,
    #[serde(default)]
    pub rate: Rate,
    pub event_time: EventTimeSpec,
    /// The keyed operator the job runs (see `config::job`). None: the frequency counter of
    /// `windows`, `timer-state-ttl` and `serializer` below.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job: Option<OperatorSpec>,
    /// Sliding windows the frequency counter keeps, e.g. `[1m, 5m, 10m, 30m]` (without `job:`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub windows: Vec<Millis>,
    /// Bytes of each event's value (the record the operator keeps or aggregates). None: the
    /// event carries no value (the frequency counter stores its own stats).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value_size: Option<ValueSize>,
    #[serde(default)]
    pub serializer: SerializerKind,
    /// Events in the run; also fixes how fast event time advances (span / events).
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
    pub trace_keys: Option<std::sync::Arc<crate::pipeline::source::TraceKeys>>,
}

impl Workload {
    pub fn load(name: &str) -> Result<Workload, ConfigError> {
        let (origin, text) = locate("workload", name, BUILTIN)?;
        let spec: WorkloadSpec = parse_yaml(&text, &origin).map_err(|e| job_error(&text, e))?;
        let name = origin.name();
        let mut spec = spec;
        // A trace path is relative to the workload file that names it.
        if let (Some(trace), super::Origin::File(file)) = (&spec.trace, &origin)
            && trace.is_relative()
        {
            spec.trace = Some(
                file.parent()
                    .unwrap_or(std::path::Path::new("."))
                    .join(trace),
            );
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
        if let Some(OperatorSpec::Frequency(f)) = &spec.job {
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
        Ok(Workload {
            name: name.to_string(),
            source: source.to_string(),
            spec,
            trace_keys: None,
        })
    }

    /// Event-time distance between consecutive events, in milliseconds (fractional).
    pub fn event_time_step(&self) -> f64 {
        self.spec.event_time.span.0 as f64 / self.spec.events.max(1) as f64
    }

    pub fn window_label(window: Millis) -> String {
        window.to_string()
    }

    /// The keyed operator the job runs: the `job:` section, or the frequency counter of the
    /// top-level `windows`.
    pub fn operator(&self) -> OperatorSpec {
        match &self.spec.job {
            Some(job) => job.clone(),
            None => OperatorSpec::Frequency(FrequencySpec {
                windows: self.spec.windows.clone(),
                timer_state_ttl: self.spec.timer_state_ttl,
            }),
        }
    }

    /// Whether the job is the frequency counter (the only kind with backfill phases).
    pub fn is_frequency(&self) -> bool {
        self.spec.job.is_none()
    }

    /// The job's result slots (the serving store's `<key>:<label>`), in order.
    pub fn result_labels(&self) -> Vec<String> {
        self.operator().result_labels()
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

/// serde cannot say where inside `job:` (an internally tagged section) a key is missing or
/// wrong: it points at the file's first line. A `job:` section that fails on its own is that
/// error, named after `job` and placed at its line.
fn job_error(text: &str, error: ConfigError) -> ConfigError {
    let job_line = text.lines().position(|l| l.starts_with("job:"));
    let Some(job_line) = job_line else {
        return error;
    };
    let fails_alone = || -> Option<String> {
        let value = serde_norway::from_str::<serde_norway::Value>(text).ok()?;
        let job_text = serde_norway::to_string(value.get("job")?).ok()?;
        let e = serde_norway::from_str::<OperatorSpec>(&job_text).err()?;
        let full = e.to_string();
        Some(full.split(" at line ").next().unwrap_or(&full).to_string())
    };
    match error {
        ConfigError::Parse { origin, .. } if let Some(message) = fails_alone() => {
            ConfigError::Parse {
                origin,
                line: job_line + 1,
                key: Some("job".to_string()),
                message: format!("in the job section: {message}"),
            }
        }
        ConfigError::UnknownKey {
            origin,
            key,
            suggestion,
            ..
        } if fails_alone().is_some() => {
            // The unknown key's own line inside the job section.
            let line = text
                .lines()
                .enumerate()
                .skip(job_line)
                .find(|(_, l)| {
                    l.trim_start()
                        .trim_start_matches("- ")
                        .starts_with(&format!("{key}:"))
                })
                .map_or(job_line + 1, |(i, _)| i + 1);
            ConfigError::UnknownKey {
                origin,
                line,
                key,
                suggestion,
            }
        }
        other => other,
    }
}

fn validate(spec: &WorkloadSpec) -> Result<(), String> {
    let mut problems = Vec::new();
    let keys = &spec.keys;
    if keys.count == 0 || keys.count > MAX_KEYS {
        problems.push(format!(
            "'keys.count' is {} but must be between 1 and {MAX_KEYS} (2^32)",
            keys.count
        ));
    }
    match keys.distribution {
        Distribution::Zipf => match keys.zipf_exponent {
            Some(s) if s > 0.0 && s.is_finite() => {}
            Some(s) => problems.push(format!(
                "'keys.zipf-exponent' is {s} but must be greater than 0"
            )),
            None => problems.push(
                "'keys.distribution: zipf' needs 'keys.zipf-exponent' (e.g. 1.1)".to_string(),
            ),
        },
        Distribution::HotSet => {
            for (key, value) in [
                ("hot-keys", keys.hot_keys),
                ("hot-traffic", keys.hot_traffic),
            ] {
                match value {
                    Some(v) if v > 0.0 && v < 1.0 => {}
                    Some(v) => problems.push(format!(
                        "'keys.{key}' is {v} but must be between 0 and 1 (exclusive)"
                    )),
                    None => problems.push(format!(
                        "'keys.distribution: hot-set' needs 'keys.{key}' (a share between 0 and 1)"
                    )),
                }
            }
        }
        Distribution::Uniform => {}
    }
    if keys.distribution != Distribution::Zipf && keys.zipf_exponent.is_some() {
        problems
            .push("'keys.zipf-exponent' is set but 'keys.distribution' is not zipf".to_string());
    }
    if spec.partitions == 0 || spec.partitions > 1024 {
        problems.push(format!(
            "'partitions' is {} but must be between 1 and 1024",
            spec.partitions
        ));
    }
    match &spec.job {
        None => {
            if let Err(e) = (FrequencySpec {
                windows: spec.windows.clone(),
                timer_state_ttl: spec.timer_state_ttl,
            })
            .validate()
            {
                problems.push(e);
            }
        }
        Some(job) => {
            if !spec.windows.is_empty() || spec.timer_state_ttl.is_some() {
                problems.push(format!(
                    "'windows' and 'timer-state-ttl' belong to the frequency counter; with 'job: {{kind: {}}}' leave them out",
                    job.kind()
                ));
            }
            if let Err(e) = job.validate() {
                problems.push(e);
            }
            if let OperatorSpec::IntervalJoin(join) = job
                && let Err(e) = join.validate_partitions(spec.partitions, &spec.idle_partitions)
            {
                problems.push(e);
            }
            if spec.phases.is_some() {
                problems.push(format!(
                    "'phases' (backfill then catch-up) runs the frequency counter only, not 'job: {{kind: {}}}'",
                    job.kind()
                ));
            }
        }
    }
    if let Some(size) = spec.value_size {
        let (min, max) = size.bounds();
        if min > max {
            problems.push(format!(
                "'value-size.min' ({min}) must not exceed 'value-size.max' ({max})"
            ));
        }
        if max > MAX_VALUE_SIZE {
            problems.push(format!(
                "'value-size' ({max} bytes) must be at most {MAX_VALUE_SIZE} (16 MiB)"
            ));
        }
    }
    if keys.size.is_some() && spec.trace.is_some() {
        problems.push(
            "'keys.size' cannot be combined with 'trace': a trace's records are keyed by the trace's own key strings".to_string(),
        );
    }
    if let Some(size) = keys.size {
        let needed = format!("user-{}", keys.count.saturating_sub(1)).len() as u32;
        if size < needed || size > 1024 {
            problems.push(format!(
                "'keys.size' is {size} but must be between {needed} (the longest key, 'user-{}') and 1024",
                keys.count.saturating_sub(1)
            ));
        }
    }
    if keys.distribution == Distribution::HotSet && keys.count < 2 {
        problems.push(
            "'keys.distribution: hot-set' needs 'keys.count' of at least 2 (hot and cold keys)"
                .to_string(),
        );
    }
    // Event time, spans and windows are milliseconds in an i64; keep far from overflow.
    let longest = spec.windows.iter().map(|w| w.0).max().unwrap_or(0);
    let limit = (i64::MAX / 4) as u64;
    if spec.event_time.start > limit
        || spec.event_time.span.0 > limit
        || longest > limit
        || spec.event_time.start + spec.event_time.span.0 + longest > limit
    {
        problems.push(format!(
            "'event-time.start' + 'event-time.span' + the longest window must stay below {limit} ms"
        ));
    }
    if let Some(bad) = spec.idle_partitions.iter().find(|p| **p >= spec.partitions) {
        problems.push(format!(
            "'idle-partitions' names partition {bad} but there are only {} (0..{})",
            spec.partitions,
            spec.partitions.saturating_sub(1)
        ));
    }
    if !spec.idle_partitions.is_empty() && spec.idle_partitions.len() as u32 >= spec.partitions {
        problems.push("'idle-partitions' leaves no partition to carry records".to_string());
    }
    for (key, value) in [
        (
            "event-time.out-of-orderness",
            Some(spec.event_time.out_of_orderness),
        ),
        ("idleness", spec.idleness),
        ("bounded-end-delay", spec.bounded_end_delay),
        ("timer-state-ttl", spec.timer_state_ttl),
    ] {
        if value.is_some_and(|v| v.0 > limit) {
            problems.push(format!("'{key}' must be below {limit} ms"));
        }
    }
    if !(0.0..=1.0).contains(&spec.event_time.late_fraction) {
        problems.push(format!(
            "'event-time.late-fraction' is {} but must be between 0 and 1",
            spec.event_time.late_fraction
        ));
    }
    if spec.idleness.is_some_and(|t| t.0 == 0) {
        problems.push(
            "'idleness' must be longer than 0 (leave it out to never mark partitions idle)"
                .to_string(),
        );
    }
    if spec.timer_state_ttl.is_some_and(|t| t.0 == 0) {
        problems
            .push("'timer-state-ttl' must be longer than 0 (leave it out for no TTL)".to_string());
    }
    if spec.events == 0 {
        problems.push("'events' must be at least 1".to_string());
    }
    if spec.event_time.span.0 == 0 {
        problems.push("'event-time.span' must be longer than 0".to_string());
    }
    if spec.sample_interval.0 < 50 {
        problems.push(format!(
            "'sample-interval' is {} but must be at least 50ms",
            spec.sample_interval
        ));
    }
    validate_source(spec, limit, &mut problems);
    if let Rate::PerSecond(0) = spec.rate {
        problems
            .push("'rate' is 0; use 'max' or a positive number of events per second".to_string());
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("; "))
    }
}

fn validate_source(spec: &WorkloadSpec, limit: u64, problems: &mut Vec<String>) {
    let source = &spec.source;
    let span = spec.event_time.span;
    if let Some(r) = source.readers.filter(|r| *r == 0 || *r > 1024) {
        problems.push(format!(
            "'source.readers' is {r} but must be between 1 and 1024"
        ));
    }
    match (source.starting_offsets, source.committed_fallback) {
        (StartingOffsets::Committed, Some(OffsetReset::None)) if spec.phases.is_none() => problems
            .push(
                "'source.committed-fallback: none' can never start: a run's broker starts empty \
                 and only backfill/catch-up phases commit; use earliest | latest"
                    .to_string(),
            ),
        (StartingOffsets::Committed, _) | (_, None) => {}
        (_, Some(_)) => problems.push(
            "'source.committed-fallback' is set but 'source.starting-offsets' is not committed"
                .to_string(),
        ),
    }
    if source.group.as_ref().is_some_and(|g| g.trim().is_empty()) {
        problems.push("'source.group' is empty; name the consumer group".to_string());
    }
    for (key, value) in [
        ("source.starting-timestamp", source.starting_timestamp),
        ("source.deployed-at", source.deployed_at),
        ("source.stop-at", source.stop_at),
    ] {
        if value.is_some_and(|v| v.0 > span.0.min(limit)) {
            problems.push(format!(
                "'{key}' is past the end of the log ('event-time.span' is {span})"
            ));
        }
    }
    match (source.starting_offsets, source.starting_timestamp) {
        (StartingOffsets::Timestamp, None) => problems.push(
            "'source.starting-offsets: timestamp' needs 'source.starting-timestamp' (e.g. 10m)"
                .to_string(),
        ),
        (StartingOffsets::Timestamp, Some(_)) | (_, None) => {}
        (other, Some(_)) => problems.push(format!(
            "'source.starting-timestamp' is set but 'source.starting-offsets' is {}, not timestamp",
            serde_json::to_string(&other).unwrap_or_default()
        )),
    }
    if let (Some(stop), Some(from)) = (source.stop_at, source.starting_timestamp)
        && stop.0 <= from.0
    {
        problems.push(format!(
            "'source.stop-at' ({stop}) must be after 'source.starting-timestamp' ({from}): \
             the job would read nothing"
        ));
    }
    if let Some(from) = source.starting_timestamp
        && from.0 > source.deployed_at.map_or(0, |d| d.0)
    {
        problems.push(format!(
            "'source.starting-timestamp' ({from}) is after 'source.deployed-at' ({}): Kafka \
             resolves a timestamp against the log at deploy time, so the job would start at \
             the log's end; set 'source.deployed-at' at or after it",
            source.deployed_at.unwrap_or(Millis(0))
        ));
    }
    if let (StartingOffsets::Latest, Some(stop)) = (source.starting_offsets, source.stop_at)
        && stop.0 <= source.deployed_at.map_or(0, |d| d.0)
    {
        problems.push(format!(
            "'source.stop-at' ({stop}) is not after 'source.deployed-at': starting at latest, \
             the job would read nothing"
        ));
    }
    if source.stop_at.is_some_and(|s| s.0 == 0) {
        problems.push("'source.stop-at' must be after the start of the log".to_string());
    }
    let Some(phases) = &spec.phases else {
        return;
    };
    let longest = spec.windows.iter().map(|w| w.0).max().unwrap_or(0);
    if phases.switch_at.0 < longest || phases.switch_at.0 >= span.0 {
        problems.push(format!(
            "'phases.switch-at' is {} but must be at least the longest window ({}) and before the \
             end of the log ('event-time.span' {span}): the backfill needs a full window of history \
             and the catch-up something after the switch",
            phases.switch_at,
            Millis(longest)
        ));
    }
    if source.starting_offsets != StartingOffsets::Earliest
        || source.deployed_at.is_some()
        || source.stop_at.is_some()
        || source.group.is_some()
    {
        problems.push(
            "'phases' set the jobs' groups, starting offsets and deploy time themselves; leave \
             'source.group', 'source.starting-offsets', 'source.deployed-at' and \
             'source.stop-at' out"
                .to_string(),
        );
    }
    for (key, group) in [
        ("phases.backfill-group", &phases.backfill_group),
        ("phases.catch-up-group", &phases.catch_up_group),
    ] {
        if group.trim().is_empty() {
            problems.push(format!("'{key}' is empty; name the consumer group"));
        }
    }
    if spec.trace.is_some() {
        problems.push("'phases' cannot be combined with 'trace' yet".to_string());
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
