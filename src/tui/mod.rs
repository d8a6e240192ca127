//! The terminal UI: renders `MetricsSnapshot`s and sends `EngineCommand`s; it never touches
//! RocksDB. `App::update` changes state, `views::render` draws it.

pub mod app;
pub mod views;

use std::path::PathBuf;
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
            events: config.events,
            duration: config.duration,
            trace: config.trace.clone(),
            ..EngineConfig::new(
                config.workload.clone(),
                profile.clone(),
                dir.path().to_path_buf(),
            )
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
        // Quietly: after a hang-up there is no terminal, and printing the failure to a dead
        // stderr would panic before the report is written.
        let _ = ratatui::try_restore();
    }
}

/// Runs the TUI until `q` (or a signal); returns profile A's run as it stood.
pub fn run(config: TuiConfig) -> anyhow::Result<TuiOutcome> {
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
    // SIGTERM, SIGHUP (the terminal went away) or a Ctrl-C that arrives as a signal quit like q.
    let interrupted = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    {
        let flag = interrupted.clone();
        let _ = ctrlc::set_handler(move || flag.store(true, std::sync::atomic::Ordering::SeqCst));
    }
    // Keys are read on a thread of their own, so the loop never blocks inside the terminal and
    // always sees the flag above.
    let keys = spawn_key_reader();
    let mut scheduler = b
        .as_ref()
        .map(|_| Scheduler::new(config.slice, Instant::now()));
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
            }
            if let (Some(sched), Some(b)) = (scheduler.as_mut(), b.as_ref()) {
                for (target, command) in sched.tick(Instant::now(), a.finished(), b.finished()) {
                    match target {
                        Target::A => a.send(command),
                        Target::B => b.send(command),
                    }
                }
            }
            if interrupted.load(std::sync::atomic::Ordering::SeqCst) {
                return Ok(());
            }
            if let Err(e) = terminal.draw(|frame| views::render(&app, frame)) {
                // A terminal that hung up fails to draw before (or just as) its SIGHUP arrives:
                // that is a quit, and the report must still be written.
                std::thread::sleep(Duration::from_millis(200));
                if interrupted.load(std::sync::atomic::Ordering::SeqCst) {
                    return Ok(());
                }
                return Err(e.into());
            }
            let key = match keys.recv_timeout(config.refresh) {
                Ok(key) => key,
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => continue,
                // The reader stopped: the terminal is gone.
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => return Ok(()),
            };
            for action in app.update(key) {
                match action {
                    Action::Quit => return Ok(()),
                    // With A/B the scheduler owns pause and resume: one side runs at a time.
                    Action::Send(target, command)
                        if scheduler.is_some()
                            && matches!(command, EngineCommand::Pause | EngineCommand::Resume) =>
                    {
                        let (Some(sched), Target::A) = (scheduler.as_mut(), target) else {
                            continue;
                        };
                        let commands = match command {
                            EngineCommand::Pause => sched.pause(),
                            _ => sched.resume(Instant::now()),
                        };
                        for (target, command) in commands {
                            match (target, &b) {
                                (Target::A, _) => a.send(command),
                                (Target::B, Some(b)) => b.send(command),
                                (Target::B, None) => {}
                            }
                        }
                    }
                    Action::Send(Target::A, command) => a.send(command),
                    Action::Send(Target::B, command) => {
                        if let Some(b) = &b {
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
    if let Some(b) = b.as_mut() {
        let _ = b.stop();
    }
    let kept = match (&outcome, &config.keep_options_as) {
        (Ok(Some(o)), Some(dest)) => match &o.options_file {
            Some(options) => std::fs::copy(options, dest)
                .map(|_| Some(dest.clone()))
                .with_context(|| {
                    format!("cannot copy RocksDB's OPTIONS file to {}", dest.display())
                }),
            None => Ok(None),
        },
        _ => Ok(None),
    };
    if interrupted.load(std::sync::atomic::Ordering::SeqCst) {
        // The terminal may be gone: its Drop would try to show the cursor and report the
        // failure on stderr (a panic on a dead terminal). Nothing is left to restore there.
        std::mem::forget(terminal);
        let _ = ratatui::crossterm::execute!(std::io::stdout(), ratatui::crossterm::cursor::Show);
    } else {
        drop(terminal);
    }
    drop(guard);
    result?;
    Ok(TuiOutcome {
        outcome: outcome?,
        profile: app.a.profile.clone(),
        options_kept: kept?,
    })
}

/// What the TUI hands back when it ends.
pub struct TuiOutcome {
    /// Profile A's run (None if it never produced one).
    pub outcome: Option<RunOutcome>,
    /// Profile A as it stood at the end, live changes included.
    pub profile: Profile,
    /// Where RocksDB's final OPTIONS file was kept, if it was.
    pub options_kept: Option<PathBuf>,
}

/// Reads terminal events on a thread of its own and forwards key presses.
fn spawn_key_reader() -> std::sync::mpsc::Receiver<ratatui::crossterm::event::KeyEvent> {
    let (tx, rx) = std::sync::mpsc::channel();
    let _ = std::thread::Builder::new()
        .name("statebench-keys".into())
        .spawn(move || {
            loop {
                match event::read() {
                    Ok(Event::Key(key)) if key.kind == KeyEventKind::Press => {
                        if tx.send(key).is_err() {
                            return;
                        }
                    }
                    Ok(_) => {}
                    // No terminal to read from any more: dropping `tx` tells the loop.
                    Err(_) => return,
                }
            }
        });
    rx
}

/// A/B: one profile runs at a time, switching every slice; a user pause stops both, and a
/// resume continues the side whose turn it was with a fresh slice.
#[derive(Debug)]
pub struct Scheduler {
    slice: Duration,
    active: Target,
    last_switch: Instant,
    paused: bool,
}

impl Scheduler {
    /// A runs first; B must have been started paused.
    pub fn new(slice: Duration, now: Instant) -> Scheduler {
        Scheduler {
            slice,
            active: Target::A,
            last_switch: now,
            paused: false,
        }
    }

    pub fn active(&self) -> Target {
        self.active
    }

    /// Commands due at `now`: switch sides after a slice; once one side has finished, the
    /// other runs alone.
    pub fn tick(
        &mut self,
        now: Instant,
        a_done: bool,
        b_done: bool,
    ) -> Vec<(Target, EngineCommand)> {
        if self.paused {
            return Vec::new();
        }
        let other = |t: Target| if t == Target::A { Target::B } else { Target::A };
        match (a_done, b_done) {
            (false, false) if now.duration_since(self.last_switch) >= self.slice => {
                let (stop, go) = (self.active, other(self.active));
                self.active = go;
                self.last_switch = now;
                vec![(stop, EngineCommand::Pause), (go, EngineCommand::Resume)]
            }
            (true, false) if self.active == Target::A => {
                self.active = Target::B;
                vec![(Target::B, EngineCommand::Resume)]
            }
            (false, true) if self.active == Target::B => {
                self.active = Target::A;
                vec![(Target::A, EngineCommand::Resume)]
            }
            _ => Vec::new(),
        }
    }

    pub fn pause(&mut self) -> Vec<(Target, EngineCommand)> {
        self.paused = true;
        vec![
            (Target::A, EngineCommand::Pause),
            (Target::B, EngineCommand::Pause),
        ]
    }

    pub fn resume(&mut self, now: Instant) -> Vec<(Target, EngineCommand)> {
        self.paused = false;
        self.last_switch = now;
        vec![(self.active, EngineCommand::Resume)]
    }
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
    crate::report::write_atomically(&path, text.as_bytes())
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(path)
}
