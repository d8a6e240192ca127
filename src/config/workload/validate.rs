//! The workload's checks beyond its syntax: every field against the others.

use super::super::job::OperatorSpec;
use super::super::job::frequency::FrequencySpec;
use super::super::job::section;
use super::super::units::Millis;
use super::{
    Distribution, MAX_KEYS, MAX_VALUE_SIZE, OffsetReset, Rate, StartingOffsets, WorkloadSpec,
};

pub(super) fn validate(spec: &WorkloadSpec) -> Result<(), String> {
    let mut problems = Vec::new();
    if let Some(preload) = &spec.preload
        && let Err(e) = preload.check()
    {
        problems.push(e);
    }
    // A trace's workload may leave out its keys, events and span: they are the trace's
    // (`Workload::complete_from_trace` checks the whole again once it is read).
    let from_trace = spec.trace.is_some();
    let keys = &spec.keys;
    if keys.count == 0 && !from_trace {
        problems.push(format!(
            "'keys.count' is missing or 0: a generated workload needs 'keys: {{count: N}}', N from 1 to {MAX_KEYS} (2^32) (a workload with 'trace:' takes its keys from the trace)"
        ));
    } else if keys.count > MAX_KEYS {
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
            if spec.inputs.is_some() {
                problems.push(
                    "'inputs' describes a two-input job's inputs, and the frequency counter has one input: leave 'inputs' out".to_string(),
                );
            }
        }
        Some(job) => {
            let kind = job.first().kind();
            if !spec.windows.is_empty() || spec.timer_state_ttl.is_some() {
                problems.push(format!(
                    "'windows' and 'timer-state-ttl' belong to the frequency counter; with 'job: {{kind: {kind}}}' leave them out"
                ));
            }
            let chain = job.is_chain();
            for problem in section::problems(job) {
                problems.push(if chain && !problem.message.starts_with("job[") {
                    format!("{}: {}", problem.path(true), problem.message)
                } else {
                    problem.message
                });
            }
            let left = spec
                .inputs
                .as_ref()
                .and_then(|i| i.first())
                .map(|i| i.partitions);
            if let OperatorSpec::IntervalJoin(join) = job.first()
                && let Err(e) =
                    join.validate_partitions(spec.partitions, left, &spec.idle_partitions)
            {
                problems.push(e);
            }
            match (job.first(), &spec.inputs) {
                (OperatorSpec::IntervalJoin(join), Some(inputs)) => {
                    if let Err(mut e) = super::inputs::check(inputs, spec.partitions) {
                        problems.append(&mut e);
                    }
                    if join.right_share != 0.5 {
                        problems.push(
                            "'job.right-share' and 'inputs' both say how the events split: give the shares in 'inputs' ('share:' of an input) and leave 'right-share' out".to_string(),
                        );
                    }
                }
                (_, Some(_)) => problems.push(format!(
                    "'inputs' describes a two-input job's inputs, and 'job: {{kind: {kind}}}' has one input: leave 'inputs' out"
                )),
                (_, None) => {}
            }
            if spec.inputs.is_some() && spec.trace.is_some() {
                problems.push(
                    "'inputs' generates the two inputs, and 'trace:' replays yours (its 'input' column says each record's): keep one".to_string(),
                );
            }
            if spec.phases.is_some() {
                problems.push(format!(
                    "'phases' (backfill then catch-up) runs the frequency counter only, not 'job: {{kind: {kind}}}'"
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
    if spec.events == 0 && !from_trace {
        problems.push(
            "'events' is missing or 0: a generated workload needs how many events it runs, at least 1 (a workload with 'trace:' runs the trace's records)".to_string(),
        );
    }
    if spec.event_time.span.0 == 0 && !from_trace {
        problems.push(
            "'event-time.span' is missing or 0: a generated workload needs the event time its events cover, e.g. 'event-time: {span: 1h}' (a workload with 'trace:' takes it from the trace)".to_string(),
        );
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
    // A trace's span is not known before the trace is read: the times against it are checked
    // then (`Workload::complete_from_trace`).
    let span_known = span.0 > 0;
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
        if span_known && value.is_some_and(|v| v.0 > span.0.min(limit)) {
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
    if phases.switch_at.0 < longest || (span_known && phases.switch_at.0 >= span.0) {
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
