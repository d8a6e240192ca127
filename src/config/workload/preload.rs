//! The workload's `preload:` section (and `run --preload`'s value): how much history a
//! preloaded state is built from.

use serde::{Deserialize, Serialize};

use crate::config::units::{ByteSize, Millis};

/// How much history a preload builds the state from: the log's first `events` records, its
/// first `span` of event time, or as many records as it takes the state's SST files to reach
/// `size` bytes (RocksDB's live SST size, as Flink's `total-sst-files-size` metric shows it).
/// One of them; the run's own `events` follow.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct PreloadSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub events: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub span: Option<Millis>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<ByteSize>,
    /// Memory the warm-up may hold state in at once (default 1 GiB): more state is built in
    /// key-group batches, each read from the log again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<ByteSize>,
    /// Which levels of the LSM tree the state is written to (default `last`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub levels: Option<Levels>,
    /// Read the blocks the history's last records touched into the block cache before the
    /// run (a job that has run for days); without it the cache starts cold (a restore).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub warm: bool,
}

/// Where a preload puts the state in the LSM tree.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Levels {
    /// All of it in the last level a tree of its size has (the upper levels fill from the run).
    #[default]
    Last,
    /// Every level as a tree of that size holds it in its steady state: the last level the
    /// state as it was earlier in the history, each level above at its target size with what
    /// the history changed after (newer values, deletions), the newest changes at the top.
    Full,
}

impl Levels {
    pub fn parse(text: &str) -> Option<Levels> {
        match text.trim() {
            "last" => Some(Levels::Last),
            "full" => Some(Levels::Full),
            _ => None,
        }
    }
}

impl PreloadSpec {
    /// `events=N`, `span=DURATION` or `size=BYTES` (`run --preload`'s value), with optional
    /// `,memory=BYTES`, `,levels=last|full` and `,warm`.
    pub fn parse(text: &str) -> Result<PreloadSpec, String> {
        let mut spec = PreloadSpec::default();
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            if part == "warm" {
                spec.warm = true;
                continue;
            }
            let Some((name, value)) = part.split_once('=') else {
                return Err(format!(
                    "'{part}' is not NAME=VALUE: give events=N, span=DURATION (e.g. 30m) or size=BYTES (e.g. 1GiB)"
                ));
            };
            let bad = |what: &str| format!("'{part}': {name} must be {what}");
            match name.trim() {
                "events" => {
                    spec.events = Some(value.trim().parse().map_err(|_| bad("a whole number"))?)
                }
                "span" => {
                    spec.span = Some(
                        Millis::parse(value).ok_or_else(|| bad("a duration such as 30m or 24h"))?,
                    )
                }
                "size" => {
                    spec.size = Some(
                        ByteSize::parse(value)
                            .ok_or_else(|| bad("a size such as 512MiB or 10GiB"))?,
                    )
                }
                "memory" => {
                    spec.memory =
                        Some(ByteSize::parse(value).ok_or_else(|| bad("a size such as 1GiB"))?)
                }
                "levels" => {
                    spec.levels = Some(Levels::parse(value).ok_or_else(|| {
                        bad("'last' (the state in the last level) or 'full' (every level at its target size)")
                    })?)
                }
                "warm" => {
                    spec.warm = match value.trim() {
                        "true" => true,
                        "false" => false,
                        _ => return Err(bad("true or false (or 'warm' alone)")),
                    }
                }
                other => {
                    return Err(format!(
                        "'{other}' is not a preload setting: events, span, size, memory, levels or warm"
                    ));
                }
            }
        }
        spec.check()?;
        Ok(spec)
    }

    /// Exactly one amount, each above zero.
    pub fn check(&self) -> Result<(), String> {
        let given = [
            self.events.is_some(),
            self.span.is_some(),
            self.size.is_some(),
        ]
        .iter()
        .filter(|g| **g)
        .count();
        if given != 1 {
            return Err(
                "'preload' needs exactly one of 'events', 'span' or 'size' (how much history to build the state from)"
                    .to_string(),
            );
        }
        if self.events == Some(0)
            || self.span.is_some_and(|s| s.0 == 0)
            || self.size.is_some_and(|s| s.0 == 0)
        {
            return Err("'preload' amounts must be above zero".to_string());
        }
        if self.memory.is_some_and(|m| m.0 < 16 << 20) {
            return Err("'preload.memory' must be at least 16MiB".to_string());
        }
        Ok(())
    }
}
