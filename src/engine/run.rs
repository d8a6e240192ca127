//! What every job of a run shares: the run's configuration, running clock, live profile,
//! sampler and command channel. They carry across jobs (backfill -> catch-up).

use std::sync::mpsc::Receiver;

use super::clock::RunClock;
use super::live::LiveProfile;
use super::sampler::Sampler;
use super::{EngineCommand, EngineConfig};

/// What every job of a run shares.
pub struct Run<'c> {
    pub config: &'c EngineConfig,
    pub clock: RunClock,
    pub live: LiveProfile,
    pub sampler: Sampler,
    pub commands: Receiver<EngineCommand>,
    /// The first job waits for Resume before its first event.
    pub start_paused: bool,
}
