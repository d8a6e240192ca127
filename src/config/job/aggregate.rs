//! `kind: aggregate`: a keyed running aggregate (count and sum of value sizes) in one ValueState
//! per key, as `keyBy().reduce()` or a KeyedProcessFunction with an accumulator (docs/jobs.md
//! "aggregate").

use serde::{Deserialize, Serialize};

use super::dedup::{Cleanup, TtlSettings, TtlUpdate, ttl_settings};
use crate::config::Millis;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AggregateFunction {
    /// `keyBy().reduce()`: Flink's StreamGroupedReduceOperator, ValueState "_op_state".
    #[default]
    Reduce,
    /// A KeyedProcessFunction with `ValueState<Tuple2<Long, Long>> "acc"` (SQL GROUP BY's
    /// access pattern), optionally with state TTL.
    Aggregate,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct AggregateSpec {
    #[serde(default)]
    pub function: AggregateFunction,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl: Option<Millis>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_update: Option<TtlUpdate>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cleanup: Option<Cleanup>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query_time_after: Option<u64>,
}

impl AggregateSpec {
    pub fn validate(&self) -> Result<(), String> {
        self.ttl_settings().map(|_| ())
    }

    pub fn ttl_settings(&self) -> Result<Option<TtlSettings>, String> {
        if self.function == AggregateFunction::Reduce && self.ttl.is_some() {
            return Err(
                "job.ttl: keyBy().reduce() (Flink's StreamGroupedReduceOperator) has no \
                 state TTL; use job.function: aggregate for an accumulator with a TTL"
                    .to_string(),
            );
        }
        ttl_settings(
            "job",
            self.ttl,
            self.ttl_update,
            self.cleanup,
            self.query_time_after,
        )
    }

    /// The state's name, which is its column family's.
    pub fn state_name(&self) -> &'static str {
        match self.function {
            AggregateFunction::Reduce => "_op_state",
            AggregateFunction::Aggregate => "acc",
        }
    }

    pub fn result_labels(&self) -> Vec<String> {
        vec!["count".into(), "sum".into()]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(yaml: &str) -> Result<AggregateSpec, String> {
        let spec: AggregateSpec = serde_norway::from_str(yaml).map_err(|e| e.to_string())?;
        spec.validate()?;
        Ok(spec)
    }

    #[test]
    fn reduce_by_default_and_aggregate_with_ttl() {
        let s = parse("{}").unwrap();
        assert_eq!(s.function, AggregateFunction::Reduce);
        assert_eq!(s.state_name(), "_op_state");
        assert_eq!(s.result_labels(), ["count", "sum"]);
        let s = parse("function: aggregate\nttl: 10m\ncleanup: none").unwrap();
        let ttl = s.ttl_settings().unwrap().unwrap();
        assert_eq!(ttl.ttl_ms, 600_000);
        assert!(!ttl.compaction_filter);
    }

    #[test]
    fn bad_input_names_the_field() {
        let e = parse("ttl: 10m").unwrap_err();
        assert!(
            e.contains("job.ttl") && e.contains("function: aggregate"),
            "{e}"
        );
        let e = parse("function: avg").unwrap_err();
        assert!(e.contains("avg") && e.contains("reduce"), "{e}");
        let e = parse("function: aggregate\ncleanup: none").unwrap_err();
        assert!(e.contains("job.cleanup needs job.ttl"), "{e}");
    }
}
