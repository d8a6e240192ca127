//! The TUI's engines: profile A's (restarted on a new profile when the user confirms a change
//! that needs a reopen, one segment per engine run) and, with --compare, profile B's, with the
//! scheduler that lets one of them run at a time. Pause and resume are routed here.

use std::path::{Path, PathBuf};
use std::sync::mpsc::Sender;
use std::time::{Duration, Instant};

use anyhow::Context as _;

use super::event::{Event, Restarted, Target, forward_snapshots};
use crate::config::{Profile, Workload};
use crate::engine::{
    self, EngineCommand, EngineConfig, EngineThread, FailureSpec, RunOutcome, SavepointFormat,
};
use crate::report::{self, RunSegment};

/// What every engine of a TUI session runs.
#[derive(Clone)]
pub struct Settings {
    pub workload: Workload,
    pub events: u64,
    pub duration: Option<Duration>,
    pub trace: Option<std::sync::Arc<Vec<crate::model::event::Event>>>,
    /// A/B: how long one side runs before the other's turn.
    pub slice: Duration,
    /// With --profile-cpu: the process's CPU sampler; each engine run takes its own tap.
    pub cpu: Option<std::sync::Arc<crate::profiler::Session>>,
    /// --fail-at and --fail-every: failures every engine run injects into its job.
    pub failures: FailureSpec,
    /// --savepoint-at: savepoints every engine run takes, by record count.
    pub savepoints: Vec<(u64, SavepointFormat)>,
}

/// One engine run and the temporary RocksDB directory it runs in (kept until the session ends,
/// so its OPTIONS file can be kept beside the report).
pub struct Engine {
    id: u64,
    commands: Sender<EngineCommand>,
    thread: Option<EngineThread>,
    dir: tempfile::TempDir,
    began: String,
    began_at_secs: f64,
    started_on: Profile,
    outcome: Option<RunOutcome>,
    /// Why the run failed, if it did (its outcome is then lost; the others' are not).
    failed: Option<String>,
}

impl Engine {
    fn start(
        settings: &Settings,
        profile: &Profile,
        target: Target,
        id: u64,
        paused: bool,
        events: &Sender<Event>,
    ) -> anyhow::Result<Engine> {
        let dir = tempfile::Builder::new()
            .prefix("statebench-tui-")
            .tempdir()
            .context("cannot create a temporary data directory")?;
        let handle = engine::spawn(EngineConfig {
            events: settings.events,
            duration: settings.duration,
            trace: settings.trace.clone(),
            start_paused: paused,
            cpu: settings.cpu.as_ref().map(|s| s.tap()),
            failures: settings.failures.clone(),
            savepoints: settings.savepoints.clone(),
            ..EngineConfig::new(
                settings.workload.clone(),
                profile.clone(),
                dir.path().to_path_buf(),
            )
        })?;
        forward_snapshots(handle.snapshots, target, id, events.clone());
        Ok(Engine {
            id,
            commands: handle.commands,
            thread: Some(handle.thread),
            dir,
            began: "start".to_string(),
            began_at_secs: 0.0,
            started_on: profile.clone(),
            outcome: None,
            failed: None,
        })
    }

    fn send(&self, command: EngineCommand) {
        // A finished engine has dropped its receiver: nothing to tell it.
        let _ = self.commands.send(command);
    }

    fn finished(&self) -> bool {
        self.thread.is_none()
    }

    /// Waits for the engine's thread (it has ended, or was told to stop) and keeps its outcome,
    /// or why it failed.
    fn join(&mut self) {
        if let Some(thread) = self.thread.take() {
            match thread.join() {
                Ok(outcome) => self.outcome = Some(outcome),
                Err(e) => self.failed = Some(format!("{:#}", anyhow::Error::from(e))),
            }
        }
    }

    fn stop(&mut self) {
        if !self.finished() {
            self.send(EngineCommand::Stop);
        }
        self.join();
    }

    /// The engine's run as a report segment, its OPTIONS file kept as `keep_options_as`.
    fn into_segment(self, keep_options_as: Option<PathBuf>) -> anyhow::Result<Option<RunSegment>> {
        let Some(mut outcome) = self.outcome else {
            return Ok(None);
        };
        // The data directory is temporary: name no file that will not exist.
        let options = outcome.options_file.take();
        if let (Some(options), Some(dest)) = (options, keep_options_as) {
            let kept = report::keep_options_file(Path::new(&options), &dest)?;
            outcome.options_file = Some(kept.display().to_string());
        }
        drop(self.dir);
        Ok(Some(RunSegment {
            began: self.began,
            began_at_secs: self.began_at_secs,
            started_on: self.started_on,
            outcome,
        }))
    }
}

/// A's engine (and its earlier runs), B's, and who runs when.
pub struct Engines {
    settings: Settings,
    /// When the session began: restarts are placed on its time axis.
    started: Instant,
    a: Engine,
    /// A's earlier engine runs, oldest first (restarts).
    retired: Vec<Engine>,
    b: Option<Engine>,
    scheduler: Option<Scheduler>,
    next_id: u64,
    events: Sender<Event>,
}

impl Engines {
    /// Starts A (and B, paused: A runs first).
    pub fn start(
        settings: Settings,
        a: &Profile,
        b: Option<&Profile>,
        events: Sender<Event>,
        now: Instant,
    ) -> anyhow::Result<Engines> {
        let mut engine_a = Engine::start(&settings, a, Target::A, 0, false, &events)?;
        let engine_b = match b
            .map(|p| Engine::start(&settings, p, Target::B, 1, true, &events))
            .transpose()
        {
            Ok(b) => b,
            Err(e) => {
                // A's RocksDB closes before its temporary directory goes.
                engine_a.stop();
                return Err(e);
            }
        };
        Ok(Engines {
            started: now,
            scheduler: engine_b
                .as_ref()
                .map(|_| Scheduler::new(settings.slice, now)),
            settings,
            a: engine_a,
            retired: Vec::new(),
            b: engine_b,
            next_id: 2,
            events,
        })
    }

    fn engine(&self, target: Target) -> Option<&Engine> {
        match target {
            Target::A => Some(&self.a),
            Target::B => self.b.as_ref(),
        }
    }

    /// Whether `id` is `target`'s current engine (snapshots of a replaced one are late).
    pub fn is_current(&self, target: Target, id: u64) -> bool {
        self.engine(target).is_some_and(|e| e.id == id)
    }

    pub fn send(&self, target: Target, command: EngineCommand) {
        if let Some(e) = self.engine(target) {
            e.send(command);
        }
    }

    fn send_all(&self, commands: Vec<(Target, EngineCommand)>) {
        for (target, command) in commands {
            self.send(target, command);
        }
    }

    /// Pauses every engine (the scheduler remembers whose turn it was).
    pub fn pause(&mut self) {
        match self.scheduler.as_mut() {
            Some(s) => {
                let commands = s.pause();
                self.send_all(commands);
            }
            None => self.a.send(EngineCommand::Pause),
        }
    }

    /// Resumes: alone, A; with A/B, the side whose turn it was, on a fresh slice.
    pub fn resume(&mut self, now: Instant) {
        match self.scheduler.as_mut() {
            Some(s) => {
                let commands = s.resume(now);
                self.send_all(commands);
            }
            None => self.a.send(EngineCommand::Resume),
        }
    }

    /// A/B: the events each side has read (from its snapshots), for the scheduler's pacing.
    pub fn set_positions(&mut self, a: u64, b: u64) {
        if let Some(s) = self.scheduler.as_mut() {
            s.set_positions(a, b);
        }
    }

    /// A/B: switches sides when a slice is over (to the side behind in the workload).
    pub fn tick(&mut self, now: Instant) {
        let done_b = self.b.as_ref().is_none_or(Engine::finished);
        if let Some(s) = self.scheduler.as_mut() {
            let commands = s.tick(now, self.a.finished(), done_b);
            self.send_all(commands);
        }
    }

    /// The side whose turn it is (A without --compare).
    pub fn active(&self) -> Target {
        self.scheduler.as_ref().map_or(Target::A, Scheduler::active)
    }

    /// `target`'s engine `id` ended: keep its outcome. Returns why it failed, if it did.
    pub fn ended(&mut self, target: Target, id: u64) -> Option<String> {
        let engine = match target {
            Target::A if self.a.id == id => &mut self.a,
            Target::B => self.b.as_mut().filter(|b| b.id == id)?,
            // A replaced engine: joined when it was replaced.
            Target::A => return None,
        };
        engine.join();
        engine.failed.clone()
    }

    /// Stops A and starts it again, with state empty, on the profile A ended with plus
    /// `label`'s edit (`key=value`; `profile` if A's run left no profile): the next segment.
    pub fn restart(
        &mut self,
        profile: &Profile,
        label: &str,
        paused: bool,
    ) -> anyhow::Result<Restarted> {
        self.a.stop();
        // The engine's own profile has every live change, also one whose snapshot the TUI had
        // not seen yet when the restart was confirmed.
        let ended = self.a.outcome.as_ref();
        let profile = match (ended, label.split_once('=')) {
            (Some(o), Some((key, value))) => o.profile.edited(key, value)?,
            _ => profile.clone(),
        };
        let changes = ended.map(|o| o.changes.clone()).unwrap_or_default();
        let id = self.next_id;
        self.next_id += 1;
        let at_secs = self.started.elapsed().as_secs_f64();
        let mut next = Engine::start(
            &self.settings,
            &profile,
            Target::A,
            id,
            paused,
            &self.events,
        )?;
        next.began = format!("restart on {label}");
        next.began_at_secs = at_secs;
        self.retired.push(std::mem::replace(&mut self.a, next));
        Ok(Restarted {
            profile,
            at_secs,
            changes,
        })
    }

    /// Stops every engine (RocksDB closes) and returns what each run left: A's segments, B's
    /// run, each OPTIONS file kept beside `report` when there is one (A's as <report>.OPTIONS,
    /// a later segment's as <report>-2.OPTIONS, B's as <report>-b.OPTIONS), and the failures
    /// (a run that failed, an OPTIONS file not kept): one does not cost the others.
    pub fn finish(mut self, report: Option<&Path>) -> Finished {
        self.a.stop();
        if let Some(b) = self.b.as_mut() {
            b.stop();
        }
        let keep = |suffix: &str| report.map(|r| sibling(r, suffix, Some("OPTIONS")));
        let mut failures = Vec::new();
        let mut collect = |engine: Engine, suffix: &str, side: &str| -> Option<RunSegment> {
            if let Some(e) = &engine.failed {
                failures.push(format!("{side}'s run failed: {e}"));
            }
            engine.into_segment(keep(suffix)).unwrap_or_else(|e| {
                failures.push(format!("{side}: {e:#}"));
                None
            })
        };
        let mut a = Vec::new();
        for (i, engine) in self.retired.into_iter().chain([self.a]).enumerate() {
            let suffix = if i == 0 {
                String::new()
            } else {
                format!("-{}", i + 1)
            };
            a.extend(collect(engine, &suffix, "A"));
        }
        let b = self.b.and_then(|b| collect(b, "-b", "B"));
        Finished { a, b, failures }
    }
}

/// What the engines of a session left when it ended.
#[derive(Default)]
pub struct Finished {
    /// Profile A's engine runs, one segment each (a restart starts the next).
    pub a: Vec<RunSegment>,
    /// Profile B's run, with --compare.
    pub b: Option<RunSegment>,
    /// What went wrong on the way (runs that failed, files not kept).
    pub failures: Vec<String>,
}

/// `<dir>/<stem><suffix>.<extension>` beside `path`, with `path`'s own extension when None
/// (`r.json`, `-b` → `r-b.json`; `r.json`, `-b`, `OPTIONS` → `r-b.OPTIONS`).
pub fn sibling(path: &Path, suffix: &str, extension: Option<&str>) -> PathBuf {
    let stem = path
        .file_stem()
        .map_or_else(|| "report".into(), |s| s.to_string_lossy().into_owned());
    let extension = extension
        .map(str::to_string)
        .or_else(|| path.extension().map(|e| e.to_string_lossy().into_owned()));
    match extension {
        Some(ext) => path.with_file_name(format!("{stem}{suffix}.{ext}")),
        None => path.with_file_name(format!("{stem}{suffix}")),
    }
}

/// A/B: one profile runs at a time, switching every slice to the side behind in the workload
/// (the faster side waits for the slower, so they are compared at the same events); a user
/// pause stops both, and a resume continues the side whose turn it was with a fresh slice.
#[derive(Debug)]
pub struct Scheduler {
    slice: Duration,
    active: Target,
    last_switch: Instant,
    paused: bool,
    /// Events each side has read (A, B), as its snapshots said: at the end of a slice the side
    /// behind runs, so the faster side waits and both are compared at the same events.
    positions: Option<(u64, u64)>,
}

impl Scheduler {
    /// A runs first; B must have been started paused.
    pub fn new(slice: Duration, now: Instant) -> Scheduler {
        Scheduler {
            slice,
            active: Target::A,
            last_switch: now,
            paused: false,
            positions: None,
        }
    }

    /// The events each side has read so far.
    pub fn set_positions(&mut self, a: u64, b: u64) {
        self.positions = Some((a, b));
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
                // The side behind in the workload keeps the machine for another slice: the
                // faster one is paced to the slower, so both reach the same events.
                let behind = match (self.positions, self.active) {
                    (Some((a, b)), Target::A) => a < b,
                    (Some((a, b)), Target::B) => b < a,
                    (None, _) => false,
                };
                if behind {
                    self.last_switch = now;
                    return Vec::new();
                }
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
