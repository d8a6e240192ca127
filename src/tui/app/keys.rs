//! What each key does: `App::update` and the commands it sends to the engines.

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::{Action, App, AppliedFix, JUDGE_SAMPLES, View};
use crate::advisor::Change;
use crate::config::profile::{KNOBS, Knob, is_live};
use crate::engine::{EngineCommand, SavepointFormat};
use crate::tui::event::Target;

impl App {
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
