//! `statebench bench`: a fixed set of short workload × profile cases, measured in counters that
//! machine noise cannot move (or moves little) and in timings relative to a reference case of
//! the same run, compared against a saved baseline. Pure: running the cases is the command's
//! job (`commands::bench`); this module defines the suites, the metrics and the gate.
//!
//! Here: the suites and their cases. What each case measures is in `metrics`, a suite's results
//! (and how they are shown and saved for a dashboard) in `results`, the comparison against a
//! baseline in `gate`.

pub mod advice;
mod gate;
mod metrics;
pub mod overhead;
mod results;

use serde::{Deserialize, Serialize};

use crate::config::{ConfigError, Profile};
pub use gate::{Gate, Row, Verdict, compare, render};
pub use metrics::{Better, Kind, METRICS, Metric};
pub mod fidelity;
pub mod preload;
pub mod scale;
mod table;
pub use results::{CaseResult, Results, SCHEMA_VERSION, render_results};

/// Which cases to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Suite {
    /// Under a minute: the built-in workloads on the case studies' good profiles (what CI
    /// runs). The "before" profiles are left out: their flush timing makes their counters
    /// swing from run to run; run them with --profile to see a configuration caught.
    Ci,
    /// The ci cases on more events, and the case studies' other profiles.
    Full,
    /// statebench's own overhead against its budgets (a few minutes): its CPU share, the run
    /// against a replay of its RocksDB operations, and the cost of metrics sampling.
    Overhead,
    /// How cost grows with state: one workload from 0.5, 5 and 20 GiB of preloaded state
    /// (`run --preload`; the bases are built once and kept), its RocksDB work per event, cache
    /// hit rates and memory at each size, and the ratios between sizes. Needs about 30 GiB of
    /// disk and tens of minutes the first time; no baseline.
    Scale,
    /// Is a preloaded state faithful? 1 GiB preloaded plus 300,000 records against the same
    /// 3.3 M records all read through RocksDB: the LSM tree, index and filter bytes, cache hit
    /// rates and flush and compaction work per record over the last 300,000, within stated
    /// tolerances (exit 1 beyond). A few minutes.
    Fidelity,
    /// Is the advice worth taking? `tune` on each of `reproduce`'s proof cases and issue 33's
    /// three jobs, then the tuned profile side by side (3 runs each, interleaved) with the
    /// case's known fix and the best single-knob change tune tried. Minutes to hours; the jobs
    /// need their trace (scripts/orders-payments-trace.py) and a preloaded base (built once).
    Advice,
    /// Is the preload's build fast enough? `run --preload`'s build of dedup-ids (100 MiB on
    /// flink-default, about 30 s here), fresh, against RocksDB's own SstFileWriter writing the
    /// same entries from memory with the same options, in entries per CPU-second: exit 1 below
    /// 0.5x. With each stage's rate, the build's peak memory and its files' sizes; no
    /// baseline. `--case dedup-10g` (10 GiB, an hour or more) runs only when named.
    Preload,
}

/// A workload on a profile for a number of events. Its name is what baselines match on, so a
/// case run with `--profile` (the configuration under test) compares with its baseline.
#[derive(Debug, Clone, Copy)]
pub struct Case {
    pub name: &'static str,
    pub workload: &'static str,
    pub profile: &'static str,
    pub events: u64,
    /// Managed memory per slot for this case, whatever the profile's: a block cache smaller
    /// than the case's working set, so that its lookups read from storage on every run.
    pub memory: Option<&'static str>,
    /// Start from a preloaded state (`run --preload`'s value: `size=...`, `events=...`).
    pub preload: Option<&'static str>,
}

impl Case {
    /// The case's profile: the configuration under test (`bench --profile`) or the case's own,
    /// with the case's managed memory.
    pub fn profile(&self, under_test: Option<&Profile>) -> Result<Profile, ConfigError> {
        let profile = match under_test {
            Some(p) => p.clone(),
            None => Profile::load(self.profile)?,
        };
        match self.memory {
            Some(size) => profile.edited("memory.managed-size", size),
            None => Ok(profile),
        }
    }

    /// What the case runs, for listings and reports.
    pub fn describe(&self, profile: &str) -> String {
        let memory = self
            .memory
            .map(|m| format!(" with memory.managed-size {m}"))
            .unwrap_or_default();
        let preload = self
            .preload
            .map(|p| format!(" from a preloaded state ({p})"))
            .unwrap_or_default();
        format!(
            "{} on {profile}{memory}{preload}, {} events",
            self.workload, self.events
        )
    }
}

/// The first case of each suite is the reference its timings are relative to.
const CI: &[Case] = &[
    Case {
        name: "smoke",
        workload: "smoke",
        profile: "flink-default",
        events: 30_000,
        memory: None,
        preload: None,
    },
    Case {
        name: "minutes-sized",
        workload: "ads-minutes",
        profile: "minutes-wbm-sized",
        events: 30_000,
        memory: None,
        preload: None,
    },
    // A block cache (8 MB of managed memory) smaller than the filter, index and data blocks
    // lookups need, so they read filter partitions from storage on every run: 0.034-0.041
    // blocks and 103-128 B per lookup in 5 runs at 30,000-40,000 events, where the same case
    // with monolithic filters read 8,309 B (tests/bench.rs checks the gate catches that). On
    // the profile's own 32 MB the cache held almost every partition: 0-46 B per lookup, from
    // run to run, which no gate could judge.
    Case {
        name: "hours-filter",
        workload: "ads-hours",
        profile: "hours-partitioned-filter",
        events: 30_000,
        memory: Some("8mb"),
        preload: None,
    },
    Case {
        name: "hours-levels",
        workload: "hours-state",
        profile: "hours-levels-sized",
        events: 100_000,
        memory: None,
        preload: None,
    },
    // One case per operator kind beyond the frequency counter (issue 19), each a few seconds:
    // their RocksDB calls per event (merges, iterator steps) and exact results are gated.
    Case {
        name: "dedup",
        workload: "dedup-24h",
        profile: "flink-default",
        events: 30_000,
        memory: None,
        preload: None,
    },
    Case {
        name: "aggregate",
        workload: "running-aggregate",
        profile: "flink-default",
        events: 30_000,
        memory: None,
        preload: None,
    },
    Case {
        name: "process",
        workload: "process-example",
        profile: "flink-default",
        events: 20_000,
        memory: None,
        preload: None,
    },
    Case {
        name: "window-sessions",
        workload: "sessions-process",
        profile: "flink-default",
        events: 20_000,
        memory: None,
        preload: None,
    },
    Case {
        name: "interval-join",
        workload: "interval-join",
        profile: "flink-default",
        events: 20_000,
        memory: None,
        preload: None,
    },
];

const FULL: &[Case] = &[
    Case {
        name: "smoke",
        workload: "smoke",
        profile: "flink-default",
        events: 100_000,
        memory: None,
        preload: None,
    },
    Case {
        name: "minutes-sized",
        workload: "ads-minutes",
        profile: "minutes-wbm-sized",
        events: 150_000,
        memory: None,
        preload: None,
    },
    Case {
        name: "hours-filter",
        workload: "ads-hours",
        profile: "hours-partitioned-filter",
        events: 120_000,
        memory: None,
        preload: None,
    },
    Case {
        name: "hours-levels",
        workload: "hours-state",
        profile: "hours-levels-sized",
        events: 250_000,
        memory: None,
        preload: None,
    },
    Case {
        name: "hours-levels-static",
        workload: "hours-state",
        profile: "hours-levels-default",
        events: 250_000,
        memory: None,
        preload: None,
    },
    Case {
        name: "days",
        workload: "ads-days",
        profile: "flink-default",
        events: 150_000,
        memory: None,
        preload: None,
    },
];

/// The scale suite: the latest 1 KiB value per key, read and rewritten per record, from three
/// sizes of preloaded state on Flink's defaults (64 MiB of managed memory), 300,000 records.
const SCALE: &[Case] = &[
    Case {
        name: "scale-0.5g",
        workload: "latest-1k",
        profile: "flink-default",
        events: 300_000,
        memory: None,
        preload: Some("size=512MiB"),
    },
    Case {
        name: "scale-5g",
        workload: "latest-1k",
        profile: "flink-default",
        events: 300_000,
        memory: None,
        preload: Some("size=5GiB"),
    },
    Case {
        name: "scale-20g",
        workload: "latest-1k",
        profile: "flink-default",
        events: 300_000,
        memory: None,
        preload: Some("size=20GiB"),
    },
];

/// The fidelity suite's one case: 1 M keys of the scale suite's workload (about 1 GiB),
/// 3 M records of history, on Flink's defaults with bloom filters (so filter bytes count).
const FIDELITY: &[Case] = &[Case {
    name: "fidelity-1g",
    workload: "latest-1k",
    profile: "flink-default",
    events: 300_000,
    memory: None,
    preload: Some("events=3000000"),
}];

/// The overhead suite's one case: the workload and profile the budget was set on.
const OVERHEAD: &[Case] = &[Case {
    name: "overhead",
    workload: "ads-minutes",
    profile: "flink-default",
    events: 100_000,
    memory: None,
    preload: None,
}];

impl Suite {
    pub fn cases(self) -> &'static [Case] {
        match self {
            Suite::Ci => CI,
            Suite::Full => FULL,
            Suite::Overhead => OVERHEAD,
            Suite::Scale => SCALE,
            Suite::Fidelity => FIDELITY,
            Suite::Advice => advice::CASES,
            Suite::Preload => preload::CASES,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Suite::Ci => "ci",
            Suite::Full => "full",
            Suite::Overhead => "overhead",
            Suite::Scale => "scale",
            Suite::Fidelity => "fidelity",
            Suite::Advice => "advice",
            Suite::Preload => "preload",
        }
    }
}
