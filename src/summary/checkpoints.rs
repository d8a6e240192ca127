//! Checkpoints over a run: sizes and durations (p50 / p99 / max), upload volume, restores, and
//! what the sink's reader saw (duplicates, lost results, visibility delay).

use crate::config::units::human_bytes;
use crate::engine::snapshot::CheckpointOutcome;
pub use crate::model::summary::{CheckpointSummary, Spread};

impl CheckpointSummary {
    pub fn new(outcome: &CheckpointOutcome, run_secs: f64) -> CheckpointSummary {
        let done: Vec<_> = outcome
            .history
            .iter()
            .filter(|c| c.failed.is_none())
            .collect();
        let total: u64 = done.iter().map(|c| c.bytes).sum();
        CheckpointSummary {
            kind: outcome.kind.clone(),
            completed: done.len() as u64,
            failed: (outcome.history.len() - done.len()) as u64,
            failure_reasons: {
                let mut reasons: Vec<(String, u64)> = Vec::new();
                for why in outcome.history.iter().filter_map(|c| c.failed.as_ref()) {
                    match reasons.iter_mut().find(|(r, _)| r == why) {
                        Some((_, n)) => *n += 1,
                        None => reasons.push((why.clone(), 1)),
                    }
                }
                reasons
                    .into_iter()
                    .map(|(r, n)| if n > 1 { format!("{r} ({n})") } else { r })
                    .collect()
            },
            // A changelog checkpoint's own upload is its log; materializations count apart, as
            // Flink reports them.
            upload_bytes: Spread::of(
                done.iter()
                    .filter(|c| c.materialized_bytes == 0)
                    .map(|c| c.bytes as f64)
                    .collect(),
            ),
            sync_ms: Spread::of(done.iter().map(|c| c.sync_ms).collect()),
            async_ms: Spread::of(done.iter().map(|c| c.async_ms).collect()),
            upload_bytes_per_minute: if run_secs > 0.0 {
                total as f64 * 60.0 / run_secs
            } else {
                0.0
            },
            new_flush_bytes: done.iter().map(|c| c.new_flush_bytes).sum(),
            new_compaction_bytes: done.iter().map(|c| c.new_compaction_bytes).sum(),
            restarts: outcome.restores.len() as u64,
            restore_ms: Spread::of(outcome.restores.iter().map(|r| r.restore_ms).collect()),
            records_replayed: outcome.restores.iter().map(|r| r.records_replayed).sum(),
            guarantee: outcome.guarantee.clone(),
            isolation: outcome.isolation.clone(),
            idempotent: outcome.idempotent,
            delivery: outcome.delivery,
            savepoints: outcome.savepoints.clone(),
            changelog: outcome.changelog,
            materialized_bytes: done.iter().map(|c| c.materialized_bytes).sum(),
        }
    }

    /// `(label, value)` lines for the terminal summary.
    pub fn lines(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        let bytes = |s: &Spread| {
            format!(
                "{} / {} / {}",
                human_bytes(s.p50),
                human_bytes(s.p99),
                human_bytes(s.max)
            )
        };
        let ms = |s: &Spread| format!("{:.1} / {:.1} / {:.1} ms", s.p50, s.p99, s.max);
        out.push((
            "checkpoints".to_string(),
            format!(
                "{}: {} completed, {} failed{}; {}/min uploaded",
                self.kind,
                self.completed,
                self.failed,
                if self.failure_reasons.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", self.failure_reasons.join("; "))
                },
                human_bytes(self.upload_bytes_per_minute)
            ),
        ));
        if self.completed > 0 {
            out.push((
                "  upload p50 / p99 / max".to_string(),
                format!(
                    "{} (p99 {:.1}x the median)",
                    bytes(&self.upload_bytes),
                    self.upload_bytes.tail_ratio()
                ),
            ));
            out.push(("  sync p50 / p99 / max".to_string(), ms(&self.sync_ms)));
            out.push(("  async p50 / p99 / max".to_string(), ms(&self.async_ms)));
            let new = self.new_flush_bytes + self.new_compaction_bytes;
            if new > 0 {
                out.push((
                    "  new SST bytes between checkpoints".to_string(),
                    format!(
                        "{} flushed (new data), {} compacted ({:.0} % rewritten by compaction)",
                        human_bytes(self.new_flush_bytes as f64),
                        human_bytes(self.new_compaction_bytes as f64),
                        100.0 * self.new_compaction_bytes as f64 / new as f64
                    ),
                ));
            }
        }
        if let Some(c) = &self.changelog {
            out.push((
                "  changelog".to_string(),
                format!(
                    "materialization {} ({:.0} s old), {} logged since; {} uploaded by materializations; {} skipped{}",
                    c.materialization_id.map_or("none".to_string(), |m| m.to_string()),
                    c.materialization_lag_secs,
                    human_bytes(c.changelog_bytes as f64),
                    human_bytes(self.materialized_bytes as f64),
                    c.skipped,
                    if c.skipped > 0 {
                        format!(
                            " — WARNING: materialization {} was never confirmed (a native savepoint?), the log grows without bound until a restart",
                            c.next_id - 1
                        )
                    } else {
                        String::new()
                    }
                ),
            ));
        }
        for sp in &self.savepoints {
            // No SST file yet (the state all in memtables): there is no ratio to the live SST.
            let against = if sp.live_sst_bytes > 0 {
                let ratio = sp.bytes as f64 / sp.live_sst_bytes as f64;
                format!(
                    "{ratio:.2}x live SST {} ({:+.0} %)",
                    human_bytes(sp.live_sst_bytes as f64),
                    (ratio - 1.0) * 100.0
                )
            } else {
                "no live SST yet (the state was all in memtables): no ratio".to_string()
            };
            out.push((
                format!("{} savepoint", sp.format),
                format!(
                    "{} = {against}, {:.0} ms, {}",
                    human_bytes(sp.bytes as f64),
                    sp.duration_ms,
                    sp.path
                ),
            ));
        }
        if self.restarts > 0 {
            out.push((
                "restores".to_string(),
                format!(
                    "{}; restore time p50 / max {:.1} / {:.1} ms; {} records read twice",
                    self.restarts, self.restore_ms.p50, self.restore_ms.max, self.records_replayed
                ),
            ));
        }
        let d = &self.delivery;
        out.push((
            "sink delivery".to_string(),
            format!(
                "{}, reader {}{}: {} records, {} seen twice{}, {} lost in expired transactions",
                self.guarantee,
                self.isolation,
                if self.idempotent { ", idempotent" } else { "" },
                d.records_emitted,
                d.duplicates_seen,
                if d.duplicates_dropped > 0 {
                    format!(" ({} dropped by id)", d.duplicates_dropped)
                } else {
                    String::new()
                },
                d.records_lost
            ),
        ));
        if d.visibility_delay_ms_max > 0 {
            out.push((
                "  visibility delay mean / max".to_string(),
                format!(
                    "{:.0} / {} ms (committed at checkpoint completion)",
                    d.visibility_delay_ms_sum as f64 / d.visibility_delay_records as f64,
                    d.visibility_delay_ms_max
                ),
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spreads_are_nearest_rank() {
        let s = Spread::of((1..=100).map(f64::from).collect());
        assert_eq!((s.p50, s.p99, s.max), (50.0, 99.0, 100.0));
        let one = Spread::of(vec![7.0]);
        assert_eq!((one.p50, one.p99, one.max), (7.0, 7.0, 7.0));
        assert_eq!(Spread::of(vec![]).tail_ratio(), 0.0);
        assert_eq!(Spread::of(vec![1.0, 1.0, 1.0, 10.0]).tail_ratio(), 10.0);
    }
}
