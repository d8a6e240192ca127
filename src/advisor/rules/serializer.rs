//! State values serialized by Flink's generic (Kryo) fallback: every value carries Kryo's class
//! tags (a `java.util.HashMap` value names its class in every entry), so the same state costs
//! more bytes in memtables, SST files, the block cache and checkpoints — and, in the JVM, the
//! CPU of reflective serialization (case study 6: about 20 % of CPU, 12 % with a POJO
//! serializer). statebench writes Kryo's bytes, measured equal to Flink's; it does not model
//! the JVM's CPU cost, so the evidence is the bytes the job hands to RocksDB.

use super::Rule;
use crate::advisor::{Change, Evidence, Finding, Input, Severity};
use crate::config::workload::SerializerKind;

pub const RULE: Rule = Rule {
    id: "generic-serializer",
    looks_for: "state values serialized by Kryo (generic types) while state traffic is heavy",
    check,
};

/// Bytes of state keys and values written per event above which serialization matters.
const BYTES_PER_EVENT: f64 = 64.0;

fn check(input: &Input) -> Option<Finding> {
    let s = input.summary;
    // Only the frequency counter's state values go through the workload's `serializer` (the
    // other kinds write their values as Flink's own serializers for their types do).
    if s.serializer != SerializerKind::Generic
        || s.records() == 0
        || s.runs("frequency") == Some(false)
    {
        return None;
    }
    let last = input.snapshots.last()?;
    let bytes_per_event = last.ops.put_bytes as f64 / s.records() as f64;
    if bytes_per_event < BYTES_PER_EVENT {
        return None;
    }
    let (from, to) = input.whole_run();
    Some(Finding {
        id: RULE.id,
        severity: Severity::Warning,
        diagnosis: format!(
            "State values go through Kryo (Flink's generic-type fallback): {:.1} bytes per state write, class tags in every value, and in the JVM the CPU of reflective serialization. A POJO (or custom TypeSerializer) writes the same state in fewer bytes.",
            s.bytes_per_write
        ),
        evidence: vec![
            Evidence::new("serializer", "generic (Kryo)", "a POJO serializer"),
            Evidence::new(
                "state bytes written per event",
                format!("{bytes_per_event:.0}"),
                format!(">= {BYTES_PER_EVENT:.0}"),
            ),
            Evidence::new(
                "bytes per state write",
                format!("{:.1}", s.bytes_per_write),
                "-",
            ),
        ],
        from_secs: from,
        to_secs: to,
        recommendation: Vec::new(),
        memory_cost: 0,
        job_changes: vec![Change::new("serializer", "compact")],
        effect: None,
        alternatives: Vec::new(),
        note: Some(
            "make the state types POJOs (public no-argument constructor, public or getter/setter fields); pipeline.generic-types: false makes Flink refuse the Kryo fallback instead of using it silently".to_string(),
        ),
        cost: None,
        overruled: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use crate::advisor::testing::{Run, profile};
    use crate::config::workload::SerializerKind;

    fn run(serializer: SerializerKind, put_bytes: u64) -> Run {
        Run::new(
            profile("flink-default", &[]),
            5,
            |i, s| {
                s.ops.puts = 8_000 * (i + 1);
                s.ops.put_bytes = put_bytes * (i + 1);
            },
            |s| {
                s.serializer = serializer;
                s.bytes_per_write = put_bytes as f64 / 8_000.0;
            },
        )
    }

    #[test]
    fn kryo_values_with_heavy_state_traffic_recommend_a_pojo_serializer() {
        // 5 seconds of 1,000 events, 300 bytes written per event.
        let f = &run(SerializerKind::Generic, 300_000).findings("generic-serializer")[0];
        assert_eq!(f.job_changes[0].key, "serializer");
        assert_eq!(f.job_changes[0].value, "compact");
        assert!(f.recommendation.is_empty(), "not a profile change");
        assert_eq!(f.evidence[1].value, "300");
    }

    #[test]
    fn only_the_frequency_counters_values_take_the_serializer() {
        let with_job = |kinds: &[&str]| {
            let mut r = run(SerializerKind::Generic, 300_000);
            r.summary.job = kinds.iter().map(|k| k.to_string()).collect();
            r.findings("generic-serializer")
        };
        assert_eq!(with_job(&["frequency"]).len(), 1);
        assert!(with_job(&["dedup"]).is_empty());
        assert!(with_job(&["window", "aggregate"]).is_empty());
    }

    #[test]
    fn light_state_traffic_or_a_compact_serializer_is_not_a_finding() {
        // 63 bytes per event: under the threshold.
        assert!(
            run(SerializerKind::Generic, 63_000)
                .findings("generic-serializer")
                .is_empty()
        );
        assert!(
            !run(SerializerKind::Generic, 64_000)
                .findings("generic-serializer")
                .is_empty()
        );
        assert!(
            run(SerializerKind::Compact, 300_000)
                .findings("generic-serializer")
                .is_empty()
        );
    }
}
