//! The TUI's one event channel: keys, each engine's snapshots and end, finished saves and
//! signals all arrive on it, each from a thread of its own, so the loop waits in one place.

use std::path::PathBuf;
use std::sync::mpsc::{Receiver, Sender};

use ratatui::crossterm::event::{self as term, KeyEvent, KeyEventKind};

use crate::config::Profile;
use crate::model::snapshot::{MetricsSnapshot, OptionChange};

/// Which engine a command is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    A,
    B,
}

/// What a restart did: the profile the new run started on, when (seconds since the session
/// began: the time axis), and the live changes of the run it replaced.
pub struct Restarted {
    pub profile: Profile,
    pub at_secs: f64,
    pub changes: Vec<OptionChange>,
}

pub enum Event {
    Key(KeyEvent),
    /// A snapshot from `target`'s engine run `id`.
    Snapshot(Target, u64, Box<MetricsSnapshot>),
    /// `target`'s engine run `id` ended (finished, stopped or failed): join it.
    Ended(Target, u64),
    /// A profile save finished (where it went, or why not).
    Saved(Result<PathBuf, String>),
    /// SIGTERM, SIGHUP or a Ctrl-C that arrived as a signal: quit like q.
    Signal,
    /// The terminal is gone: no more keys will come.
    TerminalGone,
}

/// Forwards engine run `id`'s snapshots as events, then its end.
pub fn forward_snapshots(
    snapshots: Receiver<Box<MetricsSnapshot>>,
    target: Target,
    id: u64,
    events: Sender<Event>,
) {
    let _ = std::thread::Builder::new()
        .name("statebench-snapshots".into())
        .spawn(move || {
            for s in snapshots.iter() {
                if events.send(Event::Snapshot(target, id, s)).is_err() {
                    // The TUI has ended; the engine's own sends never block on us.
                    return;
                }
            }
            let _ = events.send(Event::Ended(target, id));
        });
}

/// Reads terminal events on a thread of its own and forwards key presses.
pub fn read_keys(events: Sender<Event>) {
    let _ = std::thread::Builder::new()
        .name("statebench-keys".into())
        .spawn(move || {
            loop {
                match term::read() {
                    Ok(term::Event::Key(key)) if key.kind == KeyEventKind::Press => {
                        if events.send(Event::Key(key)).is_err() {
                            return;
                        }
                    }
                    Ok(_) => {}
                    Err(_) => {
                        let _ = events.send(Event::TerminalGone);
                        return;
                    }
                }
            }
        });
}
