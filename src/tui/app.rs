//! The TUI's state and how keys and snapshots change it. Rendering only reads it
//! (`views::*::render(&App, ..)`); RocksDB is never touched here.

use std::collections::VecDeque;

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use crate::advisor::{Change, Finding};
use crate::config::profile::{KNOBS, Knob, is_live};
use crate::config::{Profile, Workload};
use crate::durability::checkpoint::CheckpointRecord;
use crate::engine::{EngineCommand, MetricsSnapshot, OptionChange, RunState, SavepointFormat};
use crate::report::Segment;
use crate::summary::Summary;
pub use crate::tui::event::{Restarted, Target};

/// Snapshots kept per side for the charts.
pub const HISTORY: usize = 600;

/// Running samples after a live change before the advisor judges the run again.
pub const JUDGE_SAMPLES: usize = 5;

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

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum View {
    Dashboard,
    Lsm,
    Profile,
    Compare,
    Advisor,
    Cpu,
}

impl View {
    pub const ALL: [View; 6] = [
        View::Dashboard,
        View::Lsm,
        View::Profile,
        View::Compare,
        View::Advisor,
        View::Cpu,
    ];

    pub fn title(self) -> &'static str {
        match self {
            View::Dashboard => "Dashboard",
            View::Lsm => "LSM",
            View::Profile => "Profile",
            View::Compare => "A/B",
            View::Advisor => "Advisor",
            View::Cpu => "CPU",
        }
    }

    fn index(self) -> usize {
        View::ALL.iter().position(|v| *v == self).unwrap_or(0)
    }
}

/// What the event loop must do after an update.
#[derive(Debug)]
pub enum Action {
    Send(Target, EngineCommand),
    /// Pause every engine (with A/B the scheduler remembers whose turn it was).
    Pause,
    /// Resume: alone, A; with A/B, the side whose turn it was.
    Resume,
    /// Stop the run and start it again on this profile (a knob that needs a reopen); the
    /// label says what changed.
    Restart(Box<Profile>, String),
    /// Write the edited profile in this format (`statebench export`'s).
    Save(crate::export::Format),
    Quit,
}

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
    fn refresh_findings(&mut self, workload: &Workload) {
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
        let summary = Summary::of_snapshots(snapshots, running_secs, workload.spec.serializer);
        let derived = self.profile.derived(summary.state_cf_count());
        self.findings = Segment::advise(&self.profile, &derived, &summary, snapshots);
    }

    /// Keeps `record` in the checkpoint timeline: a new id is appended (the oldest dropped past
    /// `CHECKPOINT_HISTORY`), a known one replaced.
    fn remember_checkpoint(&mut self, record: &CheckpointRecord) {
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

/// The profile view's editor: the selected knob, and the value being typed.
#[derive(Debug, Clone, Default)]
pub struct Editor {
    pub selected: usize,
    pub input: Option<String>,
    /// A change that needs a restart, waiting for y/n.
    pub confirm: Option<(Box<Profile>, String)>,
    /// `s` was pressed: the next key picks the format.
    pub save_prompt: bool,
    /// The advisor view's selected finding.
    pub finding: usize,
}

pub struct App {
    pub workload: Workload,
    pub a: Side,
    pub b: Option<Side>,
    /// With A/B: the side the dashboard, LSM and profile views show (`b` switches).
    pub focus: Target,
    /// With A/B: the side whose turn it is.
    pub active: Target,
    pub view: View,
    pub help: bool,
    pub paused: bool,
    pub editor: Editor,
    pub marks: Vec<Mark>,
    /// The last thing worth telling the user (applied, refused, saved, ...).
    pub status: String,
    /// For the A/B view: how the two engines share the machine.
    pub compare_note: String,
    /// Fixes applied to A with `a` in this segment: one is not applied again until the run
    /// after it shows its finding again.
    pub applied_fixes: Vec<AppliedFix>,
}

/// The A/B table's common ground: the events both sides have read, and each side's
/// snapshots that fall in it.
#[derive(Debug, Clone)]
pub struct Compared {
    /// Events before the range (the oldest snapshot both histories still hold).
    pub from: u64,
    /// The slower side's position: the range ends here.
    pub to: u64,
    /// Events each side (A, B) has read.
    pub read: (u64, u64),
    /// Each side's last snapshot in the range (its position nearest `to`).
    pub at: (u64, u64),
    pub a: Vec<MetricsSnapshot>,
    pub b: Vec<MetricsSnapshot>,
}

/// A finding's fix sent to A's engine, and when RocksDB took it (None: not confirmed yet).
#[derive(Debug, Clone)]
pub struct AppliedFix {
    pub finding: &'static str,
    pub changes: Vec<Change>,
    pub at_secs: Option<f64>,
}

impl App {
    pub fn new(workload: Workload, a: Profile, b: Option<Profile>) -> App {
        let min_interval_secs = workload.spec.sample_interval.as_duration().as_secs_f64() / 4.0;
        let side = |profile| Side {
            min_interval_secs,
            ..Side::new(profile)
        };
        App {
            workload,
            a: side(a),
            b: b.map(side),
            focus: Target::A,
            active: Target::A,
            view: View::Dashboard,
            help: false,
            paused: false,
            editor: Editor::default(),
            marks: Vec::new(),
            status: String::from("press ? for keys"),
            compare_note: String::new(),
            applied_fixes: Vec::new(),
        }
    }

    /// A snapshot from an engine: history (on the shared time axis, which continues across
    /// restarts), and marks for live changes it reports.
    pub fn on_snapshot(&mut self, target: Target, mut snapshot: MetricsSnapshot) {
        let side = match target {
            Target::A => &mut self.a,
            Target::B => match self.b.as_mut() {
                Some(b) => b,
                None => return,
            },
        };
        side.finished = snapshot.state == RunState::Finished;
        // Each live change arrives once, in the snapshot of the interval it happened in.
        let new_changes = std::mem::take(&mut snapshot.changes);
        snapshot.elapsed_secs += side.offset_secs;
        let before = side
            .segment()
            .next_back()
            .and_then(|s| s.pipeline.checkpoints.as_ref())
            .map_or((0, 0), |c| (c.restarts, c.savepoints));
        let restarted = snapshot
            .pipeline
            .checkpoints
            .as_ref()
            .is_some_and(|c| c.restarts > before.0);
        let news = snapshot.pipeline.checkpoints.as_ref().and_then(|c| {
            for record in c.recent.iter().chain(&c.last) {
                side.remember_checkpoint(record);
            }
            if c.restarts > before.0 {
                Some(format!(
                    "restarted from its last completed checkpoint{}",
                    c.last_restore_ms
                        .map(|ms| format!(" (restore {ms:.0} ms)"))
                        .unwrap_or_default()
                ))
            } else if c.savepoints > before.1 {
                Some(format!("savepoint {} taken", c.savepoints))
            } else {
                None
            }
        });
        if side.history.len() == HISTORY {
            side.history.pop_front();
        }
        side.history.push_back(snapshot);
        side.refresh_findings(&self.workload);
        if let Some(news) = news {
            self.status = format!("{}{news}", self.side_prefix(target));
        }
        if target == Target::A {
            if restarted {
                // In the interval that ends with this snapshot, where the rate breaks.
                let at_secs = self.a.history.back().map_or(0.0, |s| s.elapsed_secs);
                self.marks.push(Mark {
                    at_secs,
                    label: "failed, restored".to_string(),
                    kind: MarkKind::Restart,
                });
            }
            for change in &new_changes {
                self.on_change(change);
            }
            if let Some(s) = self.a.history.back_mut() {
                s.changes = new_changes;
            }
            if self.a.judged_from_secs > 0.0 {
                // A change in this interval: judge from it on (no finding until enough follow).
                self.a.refresh_findings(&self.workload);
            }
        }
    }

    /// A live change A's engine applied or refused: the profile on screen follows what RocksDB
    /// accepted, and the change is marked on the time axis.
    fn on_change(&mut self, change: &OptionChange) {
        self.a.changes_seen += 1;
        if change.applied
            && let Ok(p) = self.a.profile.edited(&change.key, &change.value)
        {
            self.a.profile = p;
            // What the run showed before the change is no evidence against the new setting.
            let at = self.a.offset_secs + change.at_secs;
            self.a.judged_from_secs = self.a.judged_from_secs.max(at);
            self.a.findings.clear();
            for fix in self
                .applied_fixes
                .iter_mut()
                .filter(|f| f.at_secs.is_none())
            {
                if fix
                    .changes
                    .iter()
                    .any(|c| c.key == change.key && c.value == change.value)
                {
                    fix.at_secs = Some(at);
                }
            }
        }
        if !change.applied {
            // A refused fix is not in effect: it may be tried again.
            self.applied_fixes.retain(|f| {
                f.at_secs.is_some()
                    || !f
                        .changes
                        .iter()
                        .any(|c| c.key == change.key && c.value == change.value)
            });
        }
        let verdict = if change.applied {
            "applied"
        } else {
            "NOT applied"
        };
        self.status = format!(
            "{verdict} {} = {}: {}",
            change.key, change.value, change.detail
        );
        self.marks.push(Mark {
            at_secs: self.a.offset_secs + change.at_secs,
            label: format!(
                "{}{}={}",
                if change.applied { "" } else { "refused " },
                change.key,
                change.value
            ),
            kind: MarkKind::Change,
        });
    }

    /// A's run was restarted: marks for live changes its snapshots never brought (the last
    /// ones can end with the run), then the new segment on the time axis.
    pub fn on_restart(&mut self, restarted: Restarted, label: String) {
        for change in restarted.changes.iter().skip(self.a.changes_seen) {
            self.on_change(change);
        }
        let at = restarted.at_secs;
        self.a.offset_secs = at;
        self.a.changes_seen = 0;
        self.a.finished = false;
        self.a.profile = restarted.profile;
        self.a.findings.clear();
        self.a.judged_from_secs = 0.0;
        self.a.judging = None;
        self.applied_fixes.clear();
        self.a.checkpoints.clear();
        self.marks.push(Mark {
            at_secs: at,
            label: format!("restart {label}"),
            kind: MarkKind::Restart,
        });
        self.status = format!("restarted on the new profile ({label})");
    }

    /// With A/B: the events each side has read (its newest snapshot, 0 before the first).
    pub fn positions(&self) -> Option<(u64, u64)> {
        let b = self.b.as_ref()?;
        let at = |s: &Side| s.last().map_or(0, |m| m.events);
        Some((at(&self.a), at(b)))
    }

    /// With A/B: the workload range both sides have read (events after the first and up to the
    /// last snapshot both histories hold), and each side's snapshots in it. The A/B table
    /// compares these, never one side's later events with the other's earlier ones.
    pub fn common_range(&self) -> Option<Compared> {
        let b = self.b.as_ref()?;
        let (pa, pb) = self.positions()?;
        // A history that dropped its oldest snapshots starts where its oldest one does.
        let first = |s: &Side| {
            if s.history.len() < HISTORY {
                return 0;
            }
            s.segment()
                .next()
                .map_or(0, |m| m.events.saturating_sub(m.events_in_interval))
        };
        let from = first(&self.a).max(first(b));
        let to = pa.min(pb);
        let within = |s: &Side| -> Vec<MetricsSnapshot> {
            s.segment()
                .filter(|m| m.events <= to && (from == 0 || m.events > from))
                .cloned()
                .collect()
        };
        let (a, b_snapshots) = (within(&self.a), within(b));
        Some(Compared {
            from,
            to,
            read: (pa, pb),
            at: (
                a.last().map_or(from, |m| m.events),
                b_snapshots.last().map_or(from, |m| m.events),
            ),
            a,
            b: b_snapshots,
        })
    }

    /// The side the single-side views show.
    pub fn focused(&self) -> &Side {
        match (self.focus, self.b.as_ref()) {
            (Target::B, Some(b)) => b,
            _ => &self.a,
        }
    }

    /// "A: flink-default" with A/B, the profile's name alone otherwise.
    pub fn side_label(&self, target: Target) -> String {
        let side = match (target, self.b.as_ref()) {
            (Target::B, Some(b)) => b,
            _ => &self.a,
        };
        if self.b.is_some() {
            format!("{}: {}", crate::tui::side_name(target), side.profile.name)
        } else {
            side.profile.name.clone()
        }
    }

    /// "B: " with A/B, nothing otherwise: who a status message is about.
    fn side_prefix(&self, target: Target) -> String {
        if self.b.is_some() {
            format!("{}: ", crate::tui::side_name(target))
        } else {
            String::new()
        }
    }

    /// F, S and N: a failure or a savepoint for the focused side's job (A alone, or the side
    /// `b` shows with A/B). Refused where the engine could not do what the key says: a
    /// failure without checkpoints would end the run, a workload with phases takes no
    /// savepoint.
    fn job_command(&mut self, command: EngineCommand) -> Vec<Action> {
        let target = if self.b.is_some() {
            self.focus
        } else {
            Target::A
        };
        let who = self.side_prefix(target);
        let side = self.focused();
        let refusal = if side.finished {
            Some("the run has finished: no job to fail or to savepoint".to_string())
        } else {
            // A run started with --fail-* restarts (from scratch, without checkpoints): its
            // snapshots carry checkpoint data. One that does not would simply end.
            let restarts = side.profile.knobs.checkpoint_kind().is_some()
                || side
                    .segment()
                    .next_back()
                    .is_some_and(|s| s.pipeline.checkpoints.is_some());
            match &command {
                EngineCommand::InjectFailure if !restarts => Some(format!(
                    "{who}no checkpoint to restart from: set execution.checkpointing.interval in the profile"
                )),
                _ => None,
            }
        };
        if let Some(refusal) = refusal {
            self.status = refusal;
            return Vec::new();
        }
        let changelog = side.profile.knobs.checkpoint_kind()
            == Some(crate::config::profile::CheckpointKind::Changelog);
        self.status = match &command {
            EngineCommand::InjectFailure => format!(
                "{who}failure injected: the job restarts from its last completed checkpoint"
            ),
            EngineCommand::Savepoint(SavepointFormat::Native) if changelog => format!(
                "{who}native savepoint requested: with the changelog on, materializations stop"
            ),
            EngineCommand::Savepoint(format) => {
                format!("{who}{} savepoint requested", format.name())
            }
            other => format!("{who}{other:?} sent"),
        };
        vec![Action::Send(target, command)]
    }

    pub fn update(&mut self, key: KeyEvent) -> Vec<Action> {
        if key.code == KeyCode::Char('c') && key.modifiers.contains(KeyModifiers::CONTROL) {
            return vec![Action::Quit];
        }
        if self.help {
            // Any key closes the help overlay; q still quits.
            self.help = false;
            return if key.code == KeyCode::Char('q') {
                vec![Action::Quit]
            } else {
                Vec::new()
            };
        }
        if let Some((profile, label)) = self.editor.confirm.take() {
            return match key.code {
                KeyCode::Char('y') | KeyCode::Char('Y') => {
                    self.status = format!("restarting on {label} ...");
                    vec![Action::Restart(profile, label)]
                }
                _ => {
                    self.status = format!("kept the running profile ({label} not applied)");
                    Vec::new()
                }
            };
        }
        if self.view == View::Profile
            && let Some(actions) = self.update_editor(key)
        {
            return actions;
        }
        if self.view == View::Advisor
            && let Some(actions) = self.update_advisor(key)
        {
            return actions;
        }
        match key.code {
            KeyCode::Char('q') => vec![Action::Quit],
            KeyCode::Char('?') => {
                self.help = true;
                Vec::new()
            }
            KeyCode::Char('p') => {
                self.paused = !self.paused;
                self.status = if self.paused { "paused" } else { "resumed" }.to_string();
                vec![if self.paused {
                    Action::Pause
                } else {
                    Action::Resume
                }]
            }
            KeyCode::Char('b') if self.b.is_some() => {
                self.focus = match self.focus {
                    Target::A => Target::B,
                    Target::B => Target::A,
                };
                self.status = format!(
                    "showing {}: {}",
                    crate::tui::side_name(self.focus),
                    self.focused().profile.name
                );
                Vec::new()
            }
            KeyCode::Char('F') => self.job_command(EngineCommand::InjectFailure),
            KeyCode::Char('S') => {
                self.job_command(EngineCommand::Savepoint(SavepointFormat::Canonical))
            }
            KeyCode::Char('N') => {
                self.job_command(EngineCommand::Savepoint(SavepointFormat::Native))
            }
            KeyCode::Tab | KeyCode::Right => {
                self.view = View::ALL[(self.view.index() + 1) % View::ALL.len()];
                Vec::new()
            }
            KeyCode::BackTab | KeyCode::Left => {
                self.view = View::ALL[(self.view.index() + View::ALL.len() - 1) % View::ALL.len()];
                Vec::new()
            }
            KeyCode::Char(c @ '1'..='6') => {
                self.view = View::ALL[(c as usize) - ('1' as usize)];
                Vec::new()
            }
            _ => Vec::new(),
        }
    }

    /// Keys of the profile view; None when the key is not the editor's.
    fn update_editor(&mut self, key: KeyEvent) -> Option<Vec<Action>> {
        if std::mem::take(&mut self.editor.save_prompt) {
            use crate::export::Format;
            let format = match key.code {
                KeyCode::Char('y') => Format::Yaml,
                KeyCode::Char('f') => Format::Flink,
                KeyCode::Char('o') => Format::RocksdbOptions,
                _ => {
                    self.status = "not saved".to_string();
                    return Some(Vec::new());
                }
            };
            self.status = "saving ...".to_string();
            return Some(vec![Action::Save(format)]);
        }
        if let Some(input) = self.editor.input.as_mut() {
            match key.code {
                KeyCode::Esc => self.editor.input = None,
                KeyCode::Backspace => {
                    input.pop();
                }
                KeyCode::Char(c) => input.push(c),
                KeyCode::Enter => {
                    let value = input.trim().to_string();
                    self.editor.input = None;
                    return Some(self.submit(value));
                }
                _ => {}
            }
            return Some(Vec::new());
        }
        match key.code {
            KeyCode::Up | KeyCode::Char('k') => {
                self.editor.selected = self.editor.selected.saturating_sub(1);
                Some(Vec::new())
            }
            KeyCode::Down | KeyCode::Char('j') => {
                self.editor.selected = (self.editor.selected + 1).min(KNOBS.len() - 1);
                Some(Vec::new())
            }
            KeyCode::Enter | KeyCode::Char('e') if self.focus == Target::B => {
                self.status = "B's profile is fixed for a fair comparison: edit A (press b)".into();
                Some(Vec::new())
            }
            KeyCode::Enter | KeyCode::Char('e') => {
                let key = KNOBS[self.editor.selected].key;
                let current = self.knob_value(key);
                self.editor.input = Some(current);
                Some(Vec::new())
            }
            KeyCode::Char('s') => {
                self.editor.save_prompt = true;
                self.status =
                    "save A's profile as: y YAML, f Flink config.yaml, o RocksDB OPTIONS (other key: cancel)"
                        .to_string();
                Some(Vec::new())
            }
            _ => None,
        }
    }

    /// Keys of the advisor view; None when the key is not the advisor's.
    fn update_advisor(&mut self, key: KeyEvent) -> Option<Vec<Action>> {
        let count = self.focused().findings.len();
        match key.code {
            KeyCode::Up | KeyCode::Char('k') => {
                self.editor.finding = self.editor.finding.saturating_sub(1);
                Some(Vec::new())
            }
            KeyCode::Down | KeyCode::Char('j') => {
                self.editor.finding = (self.editor.finding + 1).min(count.saturating_sub(1));
                Some(Vec::new())
            }
            KeyCode::Char('a') | KeyCode::Enter => Some(self.apply_finding()),
            _ => None,
        }
    }

    /// The selected finding's fix on A's running profile: live knobs at once, the others by a
    /// confirmed restart (all of the fix in one, live knobs included).
    fn apply_finding(&mut self) -> Vec<Action> {
        if self.focus == Target::B {
            self.status = "B's profile is fixed for a fair comparison: apply to A (press b)".into();
            return Vec::new();
        }
        let Some(f) = self
            .a
            .findings
            .get(
                self.editor
                    .finding
                    .min(self.a.findings.len().saturating_sub(1)),
            )
            .cloned()
        else {
            self.status = "no finding to apply".to_string();
            return Vec::new();
        };
        let list = |changes: &[Change]| Change::list(changes, "=");
        // The same fix twice needs the finding's evidence renewed: intervals after the first
        // took effect that show it again.
        if let Some(done) = self.applied_fixes.iter().rev().find(|d| d.finding == f.id) {
            let renewed = done.at_secs.is_some_and(|at| f.from_secs > at);
            if !renewed {
                self.status = match done.at_secs {
                    None => format!(
                        "{}'s fix {} is on its way to RocksDB: wait for it, then for the run to show the finding again",
                        f.id,
                        list(&done.changes)
                    ),
                    Some(at) => format!(
                        "{}'s fix {} went in at {at:.0} s: not again until the run after it shows the finding again",
                        f.id,
                        list(&done.changes)
                    ),
                };
                return Vec::new();
            }
        }
        if f.recommendation.is_empty() {
            self.status = if f.job_changes.is_empty() {
                format!("nothing in the profile fixes {}", f.id)
            } else {
                format!(
                    "{}'s fix is in the job ({}): start statebench again with the workload changed",
                    f.id,
                    list(&f.job_changes)
                )
            };
            return Vec::new();
        }
        let mut edited = self.a.profile.clone();
        for c in &f.recommendation {
            match edited.edited(&c.key, &c.value) {
                Ok(p) => edited = p,
                Err(e) => {
                    self.status = format!("{}'s fix not applied: {e}", f.id);
                    return Vec::new();
                }
            }
        }
        let label = list(&f.recommendation);
        let cost = if f.memory_cost > 0 {
            format!(
                " (+{} managed memory)",
                crate::config::units::human_bytes(f.memory_cost as f64)
            )
        } else {
            String::new()
        };
        let knobs: Option<Vec<Knob>> = f
            .recommendation
            .iter()
            .map(|c| Knob::from_key(&c.key).filter(|_| is_live(&c.key)))
            .collect();
        match knobs {
            Some(_) if self.a.finished => {
                self.status = "the run has finished: nothing to apply to live".to_string();
                Vec::new()
            }
            Some(knobs) => {
                self.status = format!(
                    "applying {}'s fix: {label}{cost} ... (findings then judge the {JUDGE_SAMPLES} samples after it)",
                    f.id
                );
                self.applied_fixes.push(AppliedFix {
                    finding: f.id,
                    changes: f.recommendation.clone(),
                    at_secs: None,
                });
                knobs
                    .into_iter()
                    .zip(&f.recommendation)
                    .map(|(knob, c)| {
                        Action::Send(
                            Target::A,
                            EngineCommand::Apply {
                                knob,
                                value: c.value.clone(),
                            },
                        )
                    })
                    .collect()
            }
            None if self.b.is_some() => {
                self.status = format!(
                    "{}'s fix needs a reopen, which A/B cannot do fairly mid-run: start statebench again with {label}",
                    f.id
                );
                Vec::new()
            }
            None => {
                self.editor.confirm = Some((Box::new(edited), label.clone()));
                self.status = format!(
                    "{}'s fix needs a reopen: restart on {label}{cost}? (y/n) — state starts empty",
                    f.id
                );
                Vec::new()
            }
        }
    }

    /// The running profile's value of `key`, in YAML syntax.
    pub fn knob_value(&self, key: &str) -> String {
        self.a.knob_value(key)
    }

    fn submit(&mut self, value: String) -> Vec<Action> {
        let info = &KNOBS[self.editor.selected];
        let key = info.key;
        let edited = match self.a.profile.edited(key, &value) {
            Ok(p) => p,
            Err(e) => {
                self.status = format!("not applied: {e}");
                return Vec::new();
            }
        };
        if edited.knobs == self.a.profile.knobs {
            self.status = format!("{key} is already {value}");
            return Vec::new();
        }
        if self.a.finished && info.is_live() {
            self.status = "the run has finished: nothing to apply to live".to_string();
            Vec::new()
        } else if info.is_live() {
            self.status = format!("applying {key} = {value} ...");
            vec![Action::Send(
                Target::A,
                EngineCommand::Apply {
                    knob: info.knob,
                    value,
                },
            )]
        } else if self.b.is_some() {
            self.status = format!(
                "{key} needs a reopen, which A/B cannot do fairly mid-run: start statebench again with the new profile"
            );
            Vec::new()
        } else {
            self.editor.confirm = Some((Box::new(edited), format!("{key}={value}")));
            self.status = format!(
                "{key} needs a reopen: restart the run on the new profile? (y/n) — state starts empty"
            );
            Vec::new()
        }
    }
}
