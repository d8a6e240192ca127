//! The terminal UI: renders `MetricsSnapshot`s and sends `EngineCommand`s; it never touches
//! RocksDB. `App::update` changes state, `views::render` draws it.

pub mod app;
pub mod views;

use std::path::{Path, PathBuf};
use std::sync::mpsc::TryRecvError;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use ratatui::crossterm::event::{self, Event, KeyEventKind};

use crate::config::{Profile, Workload};
use crate::engine::{self, EngineCommand, EngineConfig, EngineHandle, RunOutcome};
use app::{Action, App, Target};

/// What the TUI runs.
pub struct TuiConfig {
    pub workload: Workload,
    pub profile: Profile,
    pub compare: Option<Profile>,
    pub events: u64,
    pub duration: Option<Duration>,
    pub trace: Option<std::sync::Arc<Vec<crate::pipeline::source::Event>>>,
    pub refresh: Duration,
    pub slice: Duration,
    /// Copy RocksDB's final OPTIONS file of profile A's run here (its data directory is
    /// temporary and goes away when the TUI ends).
    pub keep_options_as: Option<PathBuf>,
}

/// One engine and the temporary RocksDB directory it runs in.
struct Engine {
    handle: Option<EngineHandle>,
    _dir: tempfile::TempDir,
    outcome: Option<RunOutcome>,
}

impl Engine {
    fn start(config: &TuiConfig, profile: &Profile) -> anyhow::Result<Engine> {
        let dir = tempfile::Builder::new()
            .prefix("statebench-tui-")
            .tempdir()
            .context("cannot create a temporary data directory")?;
        let handle = engine::spawn(EngineConfig {
            workload: config.workload.clone(),
            profile: profile.clone(),
            data_dir: dir.path().to_path_buf(),
            events: config.events,
            duration: config.duration,
            sink: Default::default(),
            trace: config.trace.clone(),
        })?;
        Ok(Engine {
            handle: Some(handle),
            _dir: dir,
            outcome: None,
        })
    }

    fn send(&self, command: EngineCommand) {
        if let Some(h) = &self.handle {
            // A finished engine has dropped its receiver: nothing to tell it.
            let _ = h.commands.send(command);
        }
    }

    /// Snapshots waiting on the channel; joins the engine once it has finished.
    fn drain(&mut self, into: &mut Vec<engine::MetricsSnapshot>) -> anyhow::Result<()> {
        let Some(h) = &self.handle else {
            return Ok(());
        };
        loop {
            match h.snapshots.try_recv() {
                Ok(s) => into.push(*s),
                Err(TryRecvError::Empty) => return Ok(()),
                Err(TryRecvError::Disconnected) => {
                    if let Some(h) = self.handle.take() {
                        self.outcome = Some(h.join().context("the run failed")?);
                    }
                    return Ok(());
                }
            }
        }
    }

    fn finished(&self) -> bool {
        self.handle.is_none()
    }

    /// Stops the run (RocksDB closes) and returns its outcome.
    fn stop(&mut self) -> anyhow::Result<Option<RunOutcome>> {
        if let Some(h) = self.handle.take() {
            let _ = h.commands.send(EngineCommand::Stop);
            // Drain so the engine never blocks on a full channel while stopping.
            for _ in h.snapshots.iter() {}
            self.outcome = Some(h.join().context("the run failed")?);
        }
        Ok(self.outcome.take())
    }
}

/// Restores the terminal when dropped, also while unwinding from a panic.
struct TerminalGuard;

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        ratatui::restore();
    }
}

/// Runs the TUI until `q`; returns profile A's outcome and profile as it stood (live changes
/// included).
pub fn run(config: TuiConfig) -> anyhow::Result<(Option<RunOutcome>, Profile)> {
    let mut a = Engine::start(&config, &config.profile)?;
    let mut b = match &config.compare {
        Some(p) => {
            let engine = Engine::start(&config, p)?;
            engine.send(EngineCommand::Pause);
            Some(engine)
        }
        None => None,
    };
    let mut app = App::new(
        config.workload.clone(),
        config.profile.clone(),
        config.compare.clone(),
    );
    app.compare_note = format!(
        "alternating {} slices: one profile runs while the other is paused",
        crate::config::Millis(config.slice.as_millis() as u64)
    );
    // ratatui::init installs a panic hook that restores the terminal before the panic prints.
    let mut terminal = ratatui::init();
    let guard = TerminalGuard;
    // SIGTERM (or a Ctrl-C that reaches us as a signal) quits like q: the terminal comes back.
    let interrupted = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    {
        let flag = interrupted.clone();
        let _ = ctrlc::set_handler(move || flag.store(true, std::sync::atomic::Ordering::SeqCst));
    }
    let mut active = Target::A;
    let mut last_switch = Instant::now();
    let mut incoming = Vec::new();
    let result: anyhow::Result<()> = (|| {
        loop {
            a.drain(&mut incoming)?;
            for s in incoming.drain(..) {
                app.on_snapshot(Target::A, s);
            }
            if let Some(b) = b.as_mut() {
                b.drain(&mut incoming)?;
                for s in incoming.drain(..) {
                    app.on_snapshot(Target::B, s);
                }
                // Alternate the machine between the two profiles, one slice each.
                let alone = a.finished() || b.finished();
                if !app.paused && !alone && last_switch.elapsed() >= config.slice {
                    let (stop, go) = match active {
                        Target::A => (&a, &*b),
                        Target::B => (&*b, &a),
                    };
                    stop.send(EngineCommand::Pause);
                    go.send(EngineCommand::Resume);
                    active = if active == Target::A {
                        Target::B
                    } else {
                        Target::A
                    };
                    last_switch = Instant::now();
                } else if alone && !app.paused {
                    a.send(EngineCommand::Resume);
                    b.send(EngineCommand::Resume);
                }
            }
            terminal.draw(|frame| views::render(&app, frame))?;
            if interrupted.load(std::sync::atomic::Ordering::SeqCst) {
                return Ok(());
            }
            if !event::poll(config.refresh)? {
                continue;
            }
            let Event::Key(key) = event::read()? else {
                continue;
            };
            if key.kind != KeyEventKind::Press {
                continue;
            }
            for action in app.update(key) {
                match action {
                    Action::Quit => return Ok(()),
                    Action::Send(Target::A, command) => a.send(command),
                    Action::Send(Target::B, command) => {
                        if let Some(b) = &b {
                            // In A/B mode only the active side runs; pause applies to both.
                            b.send(command);
                        }
                    }
                    Action::Restart(profile, label) => {
                        a.stop()?;
                        a = Engine::start(&config, &profile)?;
                        if app.paused {
                            a.send(EngineCommand::Pause);
                        }
                        app.on_restart(*profile, label);
                    }
                    Action::Save => {
                        app.status = match save_profile(&app.a.profile) {
                            Ok(path) => format!("saved {}", path.display()),
                            Err(e) => format!("not saved: {e:#}"),
                        };
                    }
                }
            }
        }
    })();
    // Stop both runs (RocksDB closes) before the terminal comes back.
    let outcome = a.stop();
    if let (Ok(Some(o)), Some(dest)) = (&outcome, &config.keep_options_as)
        && let Some(options) = &o.options_file
    {
        std::fs::copy(options, dest)
            .with_context(|| format!("cannot copy RocksDB's OPTIONS file to {}", dest.display()))?;
    }
    if let Some(b) = b.as_mut() {
        let _ = b.stop();
    }
    drop(terminal);
    drop(guard);
    result?;
    Ok((outcome?, app.a.profile.clone()))
}

/// Writes `profile` as `<name>-tuned.yaml` in the current directory, never over an existing
/// file, atomically (a temporary file renamed into place).
fn save_profile(profile: &Profile) -> anyhow::Result<PathBuf> {
    let stem = format!("{}-tuned", profile.name);
    let path = (1..100)
        .map(|n| {
            if n == 1 {
                PathBuf::from(format!("{stem}.yaml"))
            } else {
                PathBuf::from(format!("{stem}-{n}.yaml"))
            }
        })
        .find(|p| !p.exists())
        .context("too many saved profiles here")?;
    let text = profile.to_yaml(&format!("{} as edited in statebench tui", profile.name));
    write_atomically(&path, &text)?;
    Ok(path)
}

fn write_atomically(path: &Path, text: &str) -> anyhow::Result<()> {
    use std::io::Write;
    let dir = crate::report::parent_dir(path);
    let mut tmp = tempfile::NamedTempFile::new_in(dir)
        .with_context(|| format!("cannot write in {}", dir.display()))?;
    tmp.write_all(text.as_bytes())?;
    tmp.persist(path)
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}
