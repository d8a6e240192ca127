//! One engine's run as the TUI sees it: its snapshots, checkpoints, marks and findings.

use std::collections::VecDeque;

use super::{HISTORY, JUDGE_SAMPLES};
use crate::advisor::Finding;
use crate::config::{Profile, Workload};
use crate::model::checkpoint::CheckpointRecord;
use crate::model::snapshot::{MetricsSnapshot, RunState};
use crate::model::summary::Summary;
use crate::report::Segment;

/// `snapshot` with its cumulative counters (RocksDB's tickers and stall causes, the job's
/// operations and events) counted from `base` on: what the interval since `base` did.
fn since(snapshot: &MetricsSnapshot, base: Option<&MetricsSnapshot>) -> MetricsSnapshot {
    let mut s = snapshot.clone();
    let Some(base) = base else {
        return s;
    };
    s.rocksdb.tickers = minus(&s.rocksdb.tickers, &base.rocksdb.tickers);
    s.rocksdb.stall.causes = minus(&s.rocksdb.stall.causes, &base.rocksdb.stall.causes);
    s.ops = minus(&s.ops, &base.ops);
    s.events = s.events.saturating_sub(base.events);
    s
}

/// Field by field `now - base` (at least 0) of a struct of cumulative counters.
fn minus<T: serde::Serialize + serde::de::DeserializeOwned + Clone>(now: &T, base: &T) -> T {
    let (Ok(mut a), Ok(b)) = (serde_json::to_value(now), serde_json::to_value(base)) else {
        return now.clone();
    };
    if let (Some(a), Some(b)) = (a.as_object_mut(), b.as_object()) {
        for (key, value) in a.iter_mut() {
            if let (Some(x), Some(y)) = (value.as_u64(), b.get(key).and_then(|v| v.as_u64())) {
                *value = serde_json::Value::from(x.saturating_sub(y));
            }
        }
    }
    serde_json::from_value(a).unwrap_or_else(|_| now.clone())
}
/// Checkpoints kept per side for the dashboard's timeline (wider than any panel).
pub const CHECKPOINT_HISTORY: usize = 160;
/// A moment worth marking on the charts' time axis.
#[derive(Debug, Clone, PartialEq)]
pub struct Mark {
    /// Seconds since the TUI's run started (restarts continue the axis).
    pub at_secs: f64,
    pub label: String,
    pub kind: MarkKind,
}

/// What a mark is: the chart's legend always names restarts and failures (a rate's break is
/// read by them), and may count live changes when the line is full.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MarkKind {
    /// A live change, applied or refused.
    Change,
    /// The run restarted: on a new profile, or from its last checkpoint after a failure.
    Restart,
}
/// One engine's run as the TUI sees it.
#[derive(Debug, Clone)]
pub struct Side {
    pub profile: Profile,
    pub history: VecDeque<MetricsSnapshot>,
    /// Seconds of earlier runs (restarts) before this one, for a continuous time axis.
    pub offset_secs: f64,
    pub finished: bool,
    /// Running intervals shorter than this are too short to show as the side's rate.
    pub min_interval_secs: f64,
    /// Live changes of the current segment already marked.
    pub changes_seen: usize,
    /// The advisor's findings for the current segment, refreshed with every snapshot: after a
    /// live change, judged only on the intervals that began after it took effect.
    pub findings: Vec<Finding>,
    /// Axis seconds of the last live change applied in this segment (0: none): findings are
    /// judged on the intervals after it, once there are `JUDGE_SAMPLES` of them.
    pub judged_from_secs: f64,
    /// While too few intervals follow the last change to judge it: what the advisor waits for.
    pub judging: Option<String>,
    /// The current segment's checkpoints, oldest first, one per id: each snapshot brings its
    /// run's latest one.
    pub checkpoints: VecDeque<CheckpointRecord>,
}

impl Side {
    pub fn new(profile: Profile) -> Side {
        Side {
            min_interval_secs: 0.0,
            changes_seen: 0,
            findings: Vec::new(),
            judged_from_secs: 0.0,
            judging: None,
            checkpoints: VecDeque::new(),
            profile,
            history: VecDeque::with_capacity(HISTORY),
            offset_secs: 0.0,
            finished: false,
        }
    }

    pub fn last(&self) -> Option<&MetricsSnapshot> {
        self.history.back()
    }

    /// This side's profile's value of `key`, in YAML syntax.
    pub fn knob_value(&self, key: &str) -> String {
        self.profile
            .knobs
            .values()
            .into_iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| v)
            .unwrap_or_default()
    }

    /// Seconds on the shared time axis of the newest snapshot (history holds axis times).
    pub fn now_secs(&self) -> f64 {
        self.last().map_or(self.offset_secs, |s| s.elapsed_secs)
    }

    /// The snapshots of the current segment (since the last restart).
    pub fn segment(&self) -> impl DoubleEndedIterator<Item = &MetricsSnapshot> {
        let start = self.offset_secs;
        self.history
            .iter()
            .filter(move |s| start == 0.0 || s.elapsed_secs > start)
    }

    /// The newest snapshot taken while this side was running, in the current segment: what
    /// its rate and latency panels show while the other side of an A/B (or a pause) runs. A
    /// pause closes the running interval early: slivers under a quarter of the sample
    /// interval (a few events in a millisecond) are passed over, their rates are noise.
    pub fn last_running(&self) -> Option<&MetricsSnapshot> {
        self.segment()
            .rev()
            .find(|s| s.state != RunState::Paused && s.interval_secs >= self.min_interval_secs)
            .or_else(|| self.segment().next_back())
    }

    /// The advisor on the current segment's snapshots (at most the last `HISTORY`): what a
    /// report of the run so far would say, with the worst interval's latencies. After a live
    /// change only the intervals that began after it count, their cumulative counters (stall
    /// time and causes, flushes, cache tickers, operations) taken from the change on: stalls
    /// that ended when the change went in are no evidence against the new setting.
    pub(super) fn refresh_findings(&mut self, workload: &Workload) {
        // The segment is the history's tail (times only grow): read it in place, no copies.
        let start = self.offset_secs;
        let from = self.judged_from_secs;
        let history = self.history.make_contiguous();
        let first = history
            .iter()
            .position(|s| start == 0.0 || s.elapsed_secs > start)
            .unwrap_or(history.len());
        let segment = &history[first..];
        let rebased: Vec<MetricsSnapshot>;
        let snapshots = if from > 0.0 {
            // Intervals that began at or after the change (a millisecond's slack for rounding).
            let after = segment
                .iter()
                .position(|s| s.elapsed_secs - s.interval_secs >= from - 1e-3)
                .unwrap_or(segment.len());
            let window = &segment[after..];
            let running = window
                .iter()
                .filter(|s| s.state == RunState::Running)
                .count();
            if running < JUDGE_SAMPLES {
                self.findings.clear();
                self.judging = Some(format!(
                    "judging the change at {from:.0} s: {running} of {JUDGE_SAMPLES} running samples after it so far"
                ));
                return;
            }
            let base = after.checked_sub(1).map(|i| &segment[i]);
            rebased = window.iter().map(|s| since(s, base)).collect();
            &rebased[..]
        } else {
            segment
        };
        self.judging = None;
        let running_secs = snapshots
            .iter()
            .filter(|s| s.state != RunState::Paused)
            .map(|s| s.interval_secs)
            .sum();
        let summary = Summary::of_snapshots(snapshots, running_secs, workload.spec.serializer)
            .for_job(workload);
        let derived = self.profile.derived(summary.state_cf_count());
        self.findings = Segment::advise(&self.profile, &derived, &summary, snapshots);
    }

    /// Keeps `record` in the checkpoint timeline: a new id is appended (the oldest dropped past
    /// `CHECKPOINT_HISTORY`), a known one replaced.
    pub(super) fn remember_checkpoint(&mut self, record: &CheckpointRecord) {
        match self.checkpoints.iter_mut().find(|c| c.id == record.id) {
            Some(known) => *known = record.clone(),
            None => {
                if self.checkpoints.len() == CHECKPOINT_HISTORY {
                    self.checkpoints.pop_front();
                }
                self.checkpoints.push_back(record.clone());
            }
        }
    }

    /// Events per second over the current segment's running snapshots (pauses excluded).
    pub fn running_throughput(&self) -> f64 {
        let (events, secs) = self
            .segment()
            .filter(|s| s.state == RunState::Running)
            .fold((0u64, 0.0f64), |(e, t), s| {
                (e + s.events_in_interval, t + s.interval_secs)
            });
        if secs > 0.0 {
            events as f64 / secs
        } else {
            0.0
        }
    }
}
