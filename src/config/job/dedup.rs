//! `kind: dedup`: keep the first (or last) record per key in a ValueState, optionally with
//! Flink's state TTL (see docs/jobs.md "dedup").

use serde::{Deserialize, Serialize};

use crate::config::Millis;

/// Which record per key the job keeps.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Keep {
    /// `ValueState<Boolean> "seen"`: emit an element only when the key has no (live) value.
    #[default]
    First,
    /// `ValueState<Tuple2<Long, byte[]>> "last"`: store and emit every element.
    Last,
}

/// `StateTtlConfig.UpdateType`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TtlUpdate {
    #[default]
    OnCreateAndWrite,
    OnReadAndWrite,
}

/// How expired state leaves RocksDB.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Cleanup {
    /// Flink's default: FRocksDB's TTL compaction filter (`cleanupInRocksdbCompactFilter`).
    #[default]
    Compaction,
    /// `disableCleanupInBackground()`: only a read of an expired value removes it.
    None,
}

/// `StateTtlConfig.RocksdbCompactFilterCleanupStrategy`'s default `queryTimeAfterNumEntries`.
pub const DEFAULT_QUERY_TIME_AFTER: u64 = 1000;

/// A state's TTL, checked: what the operator and the backend need.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TtlSettings {
    pub ttl_ms: i64,
    /// `UpdateType.OnReadAndWrite`: a read of a live value rewrites it with a new timestamp.
    pub update_on_read: bool,
    /// Cleanup in compaction (FRocksDB's FlinkCompactionFilter) is on.
    pub compaction_filter: bool,
    pub query_time_after: u64,
}

/// Checks a state's TTL fields (`field` names them in messages, e.g. "job" or
/// "job.states[1]") and returns the TTL, if any.
pub fn ttl_settings(
    field: &str,
    ttl: Option<Millis>,
    update: Option<TtlUpdate>,
    cleanup: Option<Cleanup>,
    query_time_after: Option<u64>,
) -> Result<Option<TtlSettings>, String> {
    let Some(ttl) = ttl else {
        for (name, given) in [
            ("ttl-update", update.is_some()),
            ("cleanup", cleanup.is_some()),
            ("query-time-after", query_time_after.is_some()),
        ] {
            if given {
                return Err(format!(
                    "{field}.{name} needs {field}.ttl (a state TTL such as 24h)"
                ));
            }
        }
        return Ok(None);
    };
    if ttl.0 == 0 || ttl.0 > i64::MAX as u64 {
        return Err(format!(
            "{field}.ttl ({ttl}) must be a positive duration such as 30m or 24h"
        ));
    }
    let cleanup = cleanup.unwrap_or_default();
    if cleanup == Cleanup::None && query_time_after.is_some() {
        return Err(format!(
            "{field}.query-time-after applies only with {field}.cleanup: compaction"
        ));
    }
    Ok(Some(TtlSettings {
        ttl_ms: ttl.0 as i64,
        update_on_read: update.unwrap_or_default() == TtlUpdate::OnReadAndWrite,
        compaction_filter: cleanup == Cleanup::Compaction,
        query_time_after: query_time_after.unwrap_or(DEFAULT_QUERY_TIME_AFTER),
    }))
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct DedupSpec {
    #[serde(default)]
    pub keep: Keep,
    /// State TTL (processing time).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl: Option<Millis>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_update: Option<TtlUpdate>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cleanup: Option<Cleanup>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query_time_after: Option<u64>,
}

impl DedupSpec {
    pub fn validate(&self) -> Result<(), String> {
        self.ttl_settings().map(|_| ())
    }

    pub fn ttl_settings(&self) -> Result<Option<TtlSettings>, String> {
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
        match self.keep {
            Keep::First => "seen",
            Keep::Last => "last",
        }
    }

    pub fn result_labels(&self) -> Vec<String> {
        match self.keep {
            Keep::First => vec!["emitted".into()],
            Keep::Last => vec!["emitted".into(), "last-time".into()],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(yaml: &str) -> Result<DedupSpec, String> {
        let spec: DedupSpec = serde_norway::from_str(yaml).map_err(|e| e.to_string())?;
        spec.validate()?;
        Ok(spec)
    }

    #[test]
    fn defaults_and_full_spec() {
        let s = parse("{}").unwrap();
        assert_eq!(s.keep, Keep::First);
        assert_eq!(s.ttl_settings().unwrap(), None);
        assert_eq!(s.result_labels(), ["emitted"]);
        let s = parse("keep: last\nttl: 24h\nttl-update: on-read-and-write\nquery-time-after: 10")
            .unwrap();
        assert_eq!(
            s.ttl_settings().unwrap(),
            Some(TtlSettings {
                ttl_ms: 86_400_000,
                update_on_read: true,
                compaction_filter: true,
                query_time_after: 10,
            })
        );
        assert_eq!(s.result_labels(), ["emitted", "last-time"]);
        assert_eq!(s.state_name(), "last");
    }

    #[test]
    fn bad_input_names_the_field() {
        let e = parse("keep: middle").unwrap_err();
        assert!(e.contains("middle") && e.contains("first"), "{e}");
        let e = parse("ttl-update: on-read-and-write").unwrap_err();
        assert!(e.contains("job.ttl-update needs job.ttl"), "{e}");
        let e = parse("ttl: 0s").unwrap_err();
        assert!(e.contains("job.ttl"), "{e}");
        let e = parse("ttl: 1h\ncleanup: none\nquery-time-after: 5").unwrap_err();
        assert!(e.contains("job.query-time-after"), "{e}");
        let e = parse("tll: 1h").unwrap_err();
        assert!(e.contains("tll"), "{e}");
    }
}
