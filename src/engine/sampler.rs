//! The sampler: when a snapshot is due, what its interval covers, and where it goes (the
//! client's channel and the run's history).

use std::sync::Arc;
use std::sync::mpsc::SyncSender;
use std::time::{Duration, Instant};

use super::snapshot::MetricsSnapshot;
use crate::backend::StateBackend;
use crate::backend::metrics::{RocksDbSample, RocksDbSampler};
use crate::backend::perf::PerfCounts;
use crate::profiler::{CpuProfile, CpuSample, CpuTap};

/// What one sample interval covers, measured by the sampler.
pub struct Interval {
    pub seq: u64,
    pub interval_secs: f64,
    pub events_in_interval: u64,
    pub events_per_sec: f64,
    pub rocksdb: RocksDbSample,
}

/// Takes one snapshot per interval across every job of a run.
pub struct Sampler {
    interval: Duration,
    last_at: Instant,
    /// Records processed (replays included) at the last snapshot.
    last_records: u64,
    last_gets: u64,
    seq: u64,
    rocksdb: RocksDbSampler,
    history: Vec<MetricsSnapshot>,
    channel: SyncSender<Box<MetricsSnapshot>>,
    /// With `--profile-cpu`: where each interval's CPU samples come from.
    cpu: Option<CpuTap>,
}

impl Sampler {
    pub fn new(
        interval: Duration,
        channel: SyncSender<Box<MetricsSnapshot>>,
        now: Instant,
    ) -> Sampler {
        Sampler {
            interval,
            last_at: now,
            last_records: 0,
            last_gets: 0,
            seq: 0,
            rocksdb: RocksDbSampler::default(),
            history: Vec::new(),
            channel,
            cpu: None,
        }
    }

    /// Profiles the CPU: every snapshot takes its interval's samples from `tap`.
    pub fn attach_cpu(&mut self, tap: Option<CpuTap>) {
        self.cpu = tap;
    }

    /// The CPU samples since the last take, for a snapshot that `keep`s them (a paused one
    /// does not: they were another run's, or none).
    pub fn take_cpu(&mut self, keep: bool) -> Option<CpuSample> {
        self.cpu.as_mut().and_then(|tap| tap.take(keep))
    }

    /// The run's whole CPU profile (once: the tap goes with it).
    pub fn take_cpu_profile(&mut self) -> Option<CpuProfile> {
        self.cpu.take().map(CpuTap::into_profile)
    }

    pub fn interval(&self) -> Duration {
        self.interval
    }

    pub fn due(&self, now: Instant) -> bool {
        now.saturating_duration_since(self.last_at) >= self.interval
    }

    /// Snapshots published so far.
    pub fn published(&self) -> u64 {
        self.seq
    }

    /// The next interval starts at `now` (after a pause: it holds only running time).
    pub fn restart_interval(&mut self, now: Instant) {
        self.last_at = now;
    }

    /// A new job: its own counters start from zero; RocksDB's too when it has a new database
    /// (a job restored on the same database continues its RocksDB counters).
    pub fn next_job(&mut self, new_database: bool) {
        if new_database {
            self.rocksdb = RocksDbSampler::default();
        }
        self.last_records = 0;
        self.last_gets = 0;
    }

    /// RocksDB's counts so far are not the run's (a warmed cache's reads).
    pub fn exclude_rocksdb_until_now(&mut self, backends: &[Arc<StateBackend>]) {
        self.rocksdb.exclude_until_now(backends);
    }

    /// The job restarted on a reopened database (a restore after a failure): RocksDB's
    /// counters start again from zero, the run's totals go on from the last snapshot. The job's
    /// own counts go on across attempts.
    pub fn reopened(&mut self) {
        self.rocksdb.reopened();
    }

    /// Publishes the snapshot `build` makes of the interval ending `now`, in which the job
    /// reached `records` records processed (replays included: the interval's rate is the work
    /// done in it) and `gets` point lookups. A full channel means a slow reader:
    /// it misses this snapshot, the history keeps it.
    pub fn publish(
        &mut self,
        now: Instant,
        backends: &[std::sync::Arc<StateBackend>],
        perf: &PerfCounts,
        records: u64,
        gets: u64,
        build: impl FnOnce(Interval) -> MetricsSnapshot,
    ) {
        let interval_secs = now.saturating_duration_since(self.last_at).as_secs_f64();
        let events_in_interval = records.saturating_sub(self.last_records);
        let rocksdb = self.rocksdb.sample(
            backends,
            perf,
            gets.saturating_sub(self.last_gets),
            interval_secs,
        );
        let snapshot = build(Interval {
            seq: self.seq,
            interval_secs,
            events_in_interval,
            events_per_sec: if interval_secs > 0.0 {
                events_in_interval as f64 / interval_secs
            } else {
                0.0
            },
            rocksdb,
        });
        self.seq += 1;
        self.last_at = now;
        self.last_records = records;
        self.last_gets = gets;
        let _ = self.channel.try_send(Box::new(snapshot.clone()));
        self.history.push(snapshot);
    }

    /// Every snapshot published so far (the run's record), leaving none behind.
    pub fn take_history(&mut self) -> Vec<MetricsSnapshot> {
        std::mem::take(&mut self.history)
    }
}
