//! The terminal UI: renders `MetricsSnapshot`s and sends `EngineCommand`s; it never touches
//! RocksDB. `App::update` changes state, `views::render` draws it, `event_loop` connects them
//! to the engines through one event channel.

pub mod app;
pub mod engines;
pub mod event;
pub mod views;

use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use ratatui::Terminal;
use ratatui::backend::Backend;

use crate::config::Profile;
use crate::export::Format;
use crate::util::fs::write_atomically;
use app::{Action, App, Target};
use engines::{Engines, Finished, Settings};
use event::Event;

/// What the TUI runs.
pub struct TuiConfig {
    pub settings: Settings,
    pub profile: Profile,
    pub compare: Option<Profile>,
    pub refresh: Duration,
    /// Where the report will go: each engine run's OPTIONS file is kept beside it (the data
    /// directories are temporary and go away when the TUI ends).
    pub report: Option<PathBuf>,
}

/// How the loop ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoopEnd {
    Quit,
    /// A signal, or the terminal went away: it may not be there to restore.
    Signal,
}

/// Restores the terminal when dropped, also while unwinding from a panic.
struct TerminalGuard;

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        // Quietly: after a hang-up there is no terminal, and printing the failure to a dead
        // stderr would panic before the report is written.
        let _ = ratatui::try_restore();
    }
}

/// Runs the TUI until `q` (or a signal); returns every engine run as it stood, and what
/// failed (a failed run, or the loop, costs no other run its report).
pub fn run(config: TuiConfig) -> anyhow::Result<Finished> {
    let (events_tx, events) = mpsc::channel();
    let mut engines = Engines::start(
        config.settings.clone(),
        &config.profile,
        config.compare.as_ref(),
        events_tx.clone(),
        Instant::now(),
    )?;
    let mut app = App::new(
        config.settings.workload.clone(),
        config.profile.clone(),
        config.compare.clone(),
    );
    app.compare_note = format!(
        "alternating {} slices: one profile runs while the other is paused",
        crate::config::Millis(config.settings.slice.as_millis() as u64)
    );
    // ratatui::init installs a panic hook that restores the terminal before the panic prints.
    let mut terminal = ratatui::init();
    let guard = TerminalGuard;
    {
        let signals = events_tx.clone();
        let _ = ctrlc::set_handler(move || {
            let _ = signals.send(Event::Signal);
        });
    }
    event::read_keys(events_tx.clone());
    let ended = event_loop(
        &mut terminal,
        &mut app,
        &mut engines,
        &events,
        &events_tx,
        config.refresh,
    );
    // Stop every run (RocksDB closes) before the terminal comes back.
    let mut finished = engines.finish(config.report.as_deref());
    if matches!(ended, Ok(LoopEnd::Signal)) {
        // The terminal may be gone: its Drop would try to show the cursor and report the
        // failure on stderr (a panic on a dead terminal). Nothing is left to restore there.
        std::mem::forget(terminal);
        let _ = ratatui::crossterm::execute!(std::io::stdout(), ratatui::crossterm::cursor::Show);
    } else {
        drop(terminal);
    }
    drop(guard);
    if let Err(e) = ended {
        finished.failures.push(format!("{e:#}"));
    }
    Ok(finished)
}

/// Draws `app` on `terminal` and handles events until q or a signal; a run that fails is said
/// on the status line and the others go on. Generic over the backend: tests drive it on
/// ratatui's `TestBackend`.
pub fn event_loop<B: Backend>(
    terminal: &mut Terminal<B>,
    app: &mut App,
    engines: &mut Engines,
    events: &Receiver<Event>,
    events_tx: &Sender<Event>,
    refresh: Duration,
) -> anyhow::Result<LoopEnd> {
    loop {
        if let Some((a, b)) = app.positions() {
            engines.set_positions(a, b);
        }
        engines.tick(Instant::now());
        app.active = engines.active();
        if let Err(e) = terminal.draw(|frame| views::render(app, frame)) {
            // A terminal that hung up fails to draw before (or just as) its SIGHUP arrives:
            // that is a quit, and the report must still be written.
            return match events.recv_timeout(Duration::from_millis(200)) {
                Ok(Event::Signal | Event::TerminalGone) => Ok(LoopEnd::Signal),
                _ => Err(anyhow::anyhow!("cannot draw the terminal: {e}")),
            };
        }
        let first = match events.recv_timeout(refresh) {
            Ok(event) => event,
            Err(RecvTimeoutError::Timeout) => continue,
            Err(RecvTimeoutError::Disconnected) => return Ok(LoopEnd::Signal),
        };
        // Everything that arrived meanwhile, then one redraw.
        for event in std::iter::once(first).chain(events.try_iter()) {
            if let Some(end) = handle(event, app, engines, events_tx)? {
                return Ok(end);
            }
        }
    }
}

fn handle(
    event: Event,
    app: &mut App,
    engines: &mut Engines,
    events_tx: &Sender<Event>,
) -> anyhow::Result<Option<LoopEnd>> {
    match event {
        Event::Key(key) => {
            for action in app.update(key) {
                match action {
                    Action::Quit => return Ok(Some(LoopEnd::Quit)),
                    Action::Pause => engines.pause(),
                    Action::Resume => engines.resume(Instant::now()),
                    Action::Send(target, command) => engines.send(target, command),
                    Action::Restart(profile, label) => {
                        let restarted = engines.restart(&profile, &label, app.paused)?;
                        app.on_restart(restarted, label);
                    }
                    Action::Save(format) => {
                        save_in_background(app.a.profile.clone(), format, events_tx.clone())
                    }
                }
            }
        }
        Event::Snapshot(target, id, snapshot) => {
            if engines.is_current(target, id) {
                app.on_snapshot(target, *snapshot);
            }
        }
        Event::Ended(target, id) => {
            if let Some(e) = engines.ended(target, id) {
                app.status = format!("{}'s run failed: {e}", side_name(target));
            }
        }
        Event::Saved(result) => {
            app.status = match result {
                Ok(path) => format!("saved {}", path.display()),
                Err(e) => format!("not saved: {e}"),
            };
        }
        Event::Signal | Event::TerminalGone => return Ok(Some(LoopEnd::Signal)),
    }
    Ok(None)
}

/// Writes the profile on a thread of its own (no file I/O in the loop); the result comes back
/// as an event.
fn save_in_background(profile: Profile, format: Format, events: Sender<Event>) {
    let _ = std::thread::Builder::new()
        .name("statebench-save".into())
        .spawn(move || {
            let result =
                save_profile(&profile, format, Path::new(".")).map_err(|e| format!("{e:#}"));
            let _ = events.send(Event::Saved(result));
        });
}

/// Writes `profile` in `format` (`statebench export`'s) as `<name>-tuned.yaml`,
/// `<name>-tuned-flink.yaml` or `<name>-tuned.OPTIONS` in `dir`, never over an existing file,
/// atomically (a temporary file renamed into place).
pub fn save_profile(profile: &Profile, format: Format, dir: &Path) -> anyhow::Result<PathBuf> {
    let (suffix, extension) = match format {
        Format::Yaml => ("", "yaml"),
        Format::Flink => ("-flink", "yaml"),
        Format::RocksdbOptions => ("", "OPTIONS"),
    };
    let stem = format!("{}-tuned{suffix}", profile.name);
    let path = (1..100)
        .map(|n| {
            if n == 1 {
                dir.join(format!("{stem}.{extension}"))
            } else {
                dir.join(format!("{stem}-{n}.{extension}"))
            }
        })
        .find(|p| !p.exists())
        .context("too many saved profiles here")?;
    let text = match format {
        Format::Yaml => profile.to_yaml(&format!("{} as edited in statebench tui", profile.name)),
        other => crate::export::export(profile, other)?,
    };
    write_atomically(&path, text.as_bytes())
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(path)
}

/// Which side a view shows.
pub fn side_name(target: Target) -> &'static str {
    match target {
        Target::A => "A",
        Target::B => "B",
    }
}
