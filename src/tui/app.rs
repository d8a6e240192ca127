//! The TUI's state and how keys and snapshots change it. Rendering only reads it
//! (`views::*::render(&App, ..)`); RocksDB is never touched here.

use std::collections::VecDeque;

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use crate::config::profile::{KNOBS, is_live};
use crate::config::{Profile, Workload};
use crate::engine::{EngineCommand, MetricsSnapshot, RunState};

/// Snapshots kept per side for the charts.
pub const HISTORY: usize = 600;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum View {
    Dashboard,
    Lsm,
    Profile,
    Compare,
}

impl View {
    pub const ALL: [View; 4] = [View::Dashboard, View::Lsm, View::Profile, View::Compare];

    pub fn title(self) -> &'static str {
        match self {
            View::Dashboard => "Dashboard",
            View::Lsm => "LSM",
            View::Profile => "Profile",
            View::Compare => "A/B",
        }
    }

    fn index(self) -> usize {
        View::ALL.iter().position(|v| *v == self).unwrap_or(0)
    }
}

/// Which engine a command is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    A,
    B,
}

/// What the event loop must do after an update.
#[derive(Debug)]
pub enum Action {
    Send(Target, EngineCommand),
    /// Stop the run and start it again on this profile (a knob that needs a reopen); the
    /// label says what changed.
    Restart(Box<Profile>, String),
    /// Write the edited profile as YAML.
    Save,
    Quit,
}

/// A moment worth marking on the charts' time axis.
#[derive(Debug, Clone, PartialEq)]
pub struct Mark {
    /// Seconds since the TUI's run started (restarts continue the axis).
    pub at_secs: f64,
    pub label: String,
}

/// One engine's run as the TUI sees it.
#[derive(Debug, Clone)]
pub struct Side {
    pub profile: Profile,
    pub history: VecDeque<MetricsSnapshot>,
    /// Seconds of earlier runs (restarts) before this one, for a continuous time axis.
    pub offset_secs: f64,
    /// Live changes already turned into marks.
    pub changes_seen: usize,
    pub finished: bool,
}

impl Side {
    pub fn new(profile: Profile) -> Side {
        Side {
            profile,
            history: VecDeque::with_capacity(HISTORY),
            offset_secs: 0.0,
            changes_seen: 0,
            finished: false,
        }
    }

    pub fn last(&self) -> Option<&MetricsSnapshot> {
        self.history.back()
    }

    /// Seconds on the shared time axis of the newest snapshot (history holds axis times).
    pub fn now_secs(&self) -> f64 {
        self.last().map_or(self.offset_secs, |s| s.elapsed_secs)
    }

    /// Events per second over the snapshots where this side was running (pauses excluded).
    pub fn running_throughput(&self) -> f64 {
        let (events, secs) = self
            .history
            .iter()
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
}

pub struct App {
    pub workload: Workload,
    pub a: Side,
    pub b: Option<Side>,
    pub view: View,
    pub help: bool,
    pub paused: bool,
    pub editor: Editor,
    pub marks: Vec<Mark>,
    /// The last thing worth telling the user (applied, refused, saved, ...).
    pub status: String,
    /// For the A/B view: how the two engines share the machine.
    pub compare_note: String,
}

impl App {
    pub fn new(workload: Workload, a: Profile, b: Option<Profile>) -> App {
        App {
            workload,
            a: Side::new(a),
            b: b.map(Side::new),
            view: View::Dashboard,
            help: false,
            paused: false,
            editor: Editor::default(),
            marks: Vec::new(),
            status: String::from("press ? for keys"),
            compare_note: String::new(),
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
        let new_changes: Vec<_> =
            snapshot.changes[side.changes_seen.min(snapshot.changes.len())..].to_vec();
        side.changes_seen = snapshot.changes.len();
        let offset = side.offset_secs;
        snapshot.elapsed_secs += offset;
        if side.history.len() == HISTORY {
            side.history.pop_front();
        }
        side.history.push_back(snapshot);
        for change in new_changes {
            if target == Target::A && change.applied {
                // The profile on screen follows what RocksDB accepted.
                if let Ok(p) = self.a.profile.edited(&change.key, &change.value) {
                    self.a.profile = p;
                }
            }
            self.status = if change.applied {
                format!(
                    "applied {} = {}: {}",
                    change.key, change.value, change.detail
                )
            } else {
                format!(
                    "NOT applied {} = {}: {}",
                    change.key, change.value, change.detail
                )
            };
            self.marks.push(Mark {
                at_secs: offset + change.at_secs,
                label: format!(
                    "{}{}={}",
                    if change.applied { "" } else { "refused " },
                    change.key,
                    change.value
                ),
            });
        }
    }

    /// The run was restarted on a new profile: continue the time axis, mark it.
    pub fn on_restart(&mut self, profile: Profile, label: String) {
        let at = self.a.now_secs();
        self.a.offset_secs = at;
        self.a.changes_seen = 0;
        self.a.finished = false;
        self.a.profile = profile;
        self.marks.push(Mark {
            at_secs: at,
            label: format!("restart {label}"),
        });
        self.status = format!("restarted on the new profile ({label})");
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
        if self.view == View::Profile
            && let Some(actions) = self.update_editor(key)
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
                let command = || {
                    if self.paused {
                        EngineCommand::Pause
                    } else {
                        EngineCommand::Resume
                    }
                };
                self.status = if self.paused { "paused" } else { "resumed" }.to_string();
                let mut out = vec![Action::Send(Target::A, command())];
                if self.b.is_some() {
                    out.push(Action::Send(Target::B, command()));
                }
                out
            }
            KeyCode::Tab | KeyCode::Right => {
                self.view = View::ALL[(self.view.index() + 1) % View::ALL.len()];
                Vec::new()
            }
            KeyCode::BackTab | KeyCode::Left => {
                self.view = View::ALL[(self.view.index() + View::ALL.len() - 1) % View::ALL.len()];
                Vec::new()
            }
            KeyCode::Char(c @ '1'..='4') => {
                self.view = View::ALL[(c as usize) - ('1' as usize)];
                Vec::new()
            }
            _ => Vec::new(),
        }
    }

    /// Keys of the profile view; None when the key is not the editor's.
    fn update_editor(&mut self, key: KeyEvent) -> Option<Vec<Action>> {
        if let Some((profile, label)) = self.editor.confirm.take() {
            return Some(match key.code {
                KeyCode::Char('y') | KeyCode::Char('Y') => {
                    self.status = format!("restarting on {label} ...");
                    vec![Action::Restart(profile, label)]
                }
                _ => {
                    self.status = format!("kept the running profile ({label} not applied)");
                    Vec::new()
                }
            });
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
            KeyCode::Enter | KeyCode::Char('e') => {
                let key = KNOBS[self.editor.selected].key;
                let current = self.knob_value(key);
                self.editor.input = Some(current);
                Some(Vec::new())
            }
            KeyCode::Char('s') => Some(vec![Action::Save]),
            _ => None,
        }
    }

    /// The running profile's value of `key`, in YAML syntax.
    pub fn knob_value(&self, key: &str) -> String {
        self.a
            .profile
            .knobs
            .values()
            .into_iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| v)
            .unwrap_or_default()
    }

    fn submit(&mut self, value: String) -> Vec<Action> {
        let key = KNOBS[self.editor.selected].key;
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
        if self.a.finished && is_live(key) {
            self.status = "the run has finished: nothing to apply to live".to_string();
            Vec::new()
        } else if is_live(key) {
            self.status = format!("applying {key} = {value} ...");
            vec![Action::Send(
                Target::A,
                EngineCommand::Apply {
                    key: key.to_string(),
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
