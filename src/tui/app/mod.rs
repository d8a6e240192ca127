//! The TUI's state and how keys and snapshots change it. Rendering only reads it
//! (`views::*::render(&App, ..)`); RocksDB is never touched here.

use crate::advisor::Change;
use crate::config::{Profile, Workload};
use crate::engine::{EngineCommand, MetricsSnapshot, OptionChange, RunState};

pub use crate::tui::event::{Restarted, Target};

mod keys;
mod side;

pub use side::{CHECKPOINT_HISTORY, Mark, MarkKind, Side};

/// Snapshots kept per side for the charts.
pub const HISTORY: usize = 600;

/// Running samples after a live change before the advisor judges the run again.
pub const JUDGE_SAMPLES: usize = 5;

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
}
