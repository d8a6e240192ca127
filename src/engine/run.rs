//! What every job of a run shares: the run's configuration, running clock, live profile,
//! sampler and command channel. They carry across jobs (backfill -> catch-up).

use std::sync::mpsc::Receiver;
use std::time::Instant;

use super::clock::RunClock;
use super::live::LiveProfile;
use super::sampler::Sampler;
use super::{EngineCommand, EngineConfig, FailureSpec};
use crate::pipeline::source::OffsetStore;

/// What every job of a run shares.
pub struct Run<'c> {
    pub config: &'c EngineConfig,
    pub clock: RunClock,
    pub live: LiveProfile,
    pub sampler: Sampler,
    pub commands: Receiver<EngineCommand>,
    /// The first job waits for Resume before its first event.
    pub start_paused: bool,
    /// The broker's committed offsets (in the data directory).
    pub broker: OffsetStore,
    /// Savepoints still to take, by records processed: each once per run, whatever restarts
    /// or jobs come after.
    pub savepoints_due: Vec<(u64, super::SavepointFormat)>,
    pub failures: Failures,
}

/// Wall-clock time, epoch ms: what a broker ages transactions by.
pub fn epoch_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// The failures still to inject.
#[derive(Debug)]
pub struct Failures {
    /// Record counts, ascending; each fires once.
    at_events: Vec<u64>,
    every: Option<std::time::Duration>,
    /// When the job last (re)started.
    since: Instant,
    /// A failure asked for by a command.
    requested: bool,
    pub injected: u64,
}

impl Failures {
    pub fn new(spec: &FailureSpec, now: Instant) -> Failures {
        let mut at_events = spec.at_events.clone();
        at_events.sort_unstable();
        at_events.dedup();
        Failures {
            at_events,
            every: spec.every,
            since: now,
            requested: false,
            injected: 0,
        }
    }

    pub fn request(&mut self) {
        self.requested = true;
    }

    /// The job restarted at `now`.
    pub fn restarted(&mut self, now: Instant) {
        self.since = now;
    }

    /// True when the job must fail now: it has processed `processed` records, and has
    /// completed `checkpoints` checkpoints since it last started.
    pub fn due(&mut self, processed: u64, checkpoints: u64, now: Instant) -> bool {
        let at = self.at_events.first().is_some_and(|at| processed >= *at);
        if at {
            self.at_events.remove(0);
        }
        let every = self
            .every
            .is_some_and(|d| checkpoints > 0 && now.duration_since(self.since) >= d);
        let fail = at || every || std::mem::take(&mut self.requested);
        if fail {
            self.injected += 1;
        }
        fail
    }
}
