//! The run report: JSON with every snapshot and a summary per segment (one per engine run: a
//! restart on a new profile starts the next), and the same for a terminal.

mod findings;
mod render;

use std::path::{Path, PathBuf};

use serde::Serialize;

pub use findings::render_findings;
pub use render::FEW_LOOKUPS;
pub use render::{render_comparison, render_summary};

use crate::advisor::{self, Finding};
use crate::config::profile::Derived;
use crate::config::{Profile, Workload};
use crate::engine::{MetricsSnapshot, OptionChange, RunOutcome};
use crate::summary::Summary;
use crate::summary::scorecard::{Context, Scorecard};
use crate::util::fs::write_atomically;

/// 2: the run is a list of segments, each with its own profile, summary and snapshots.
pub const SCHEMA_VERSION: u32 = 2;

/// One engine run of a statebench run, as the client recorded it.
#[derive(Debug, Clone)]
pub struct RunSegment {
    /// How it began: "start", or the change that restarted the run.
    pub began: String,
    /// Seconds into the whole run (wall time) at which it began.
    pub began_at_secs: f64,
    /// The profile it started on.
    pub started_on: Profile,
    pub outcome: RunOutcome,
}

impl RunSegment {
    /// The segment of a run that never restarted.
    pub fn whole(profile: Profile, outcome: RunOutcome) -> RunSegment {
        RunSegment {
            began: "start".to_string(),
            began_at_secs: 0.0,
            started_on: profile,
            outcome,
        }
    }
}

#[derive(Debug, Serialize)]
pub struct Report<'a> {
    pub schema_version: u32,
    pub statebench_version: &'static str,
    pub workload: &'a Workload,
    pub segments: Vec<Segment<'a>>,
    /// What changed over the run, live and by restarts, one line each (empty: nothing did).
    pub changed: Vec<String>,
}

#[derive(Debug, Serialize)]
pub struct Segment<'a> {
    /// The profile's name, and the knobs that differ from the profile the run started on.
    pub label: String,
    pub began: String,
    pub began_at_secs: f64,
    /// The profile in effect at the segment's end: its start plus the live changes applied.
    pub profile: &'a Profile,
    pub derived: Derived,
    /// Live changes during the segment (seconds into the segment), applied or refused.
    pub changes: &'a [OptionChange],
    /// The OPTIONS file RocksDB wrote: the options really in effect.
    pub rocksdb_options_file: Option<String>,
    /// Knobs the OPTIONS file shows were not applied (empty when the profile is in effect).
    pub option_mismatches: &'a [String],
    pub summary: Summary,
    /// What the advisor finds in this segment, most severe first.
    pub findings: Vec<Finding>,
    /// The figures a Flink user weighs (`Report::score`; None until scored).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scorecard: Option<Scorecard>,
    pub snapshots: &'a [MetricsSnapshot],
}

impl Segment<'_> {
    /// The advisor's findings for a segment's profile, summary and snapshots.
    pub fn advise(
        profile: &Profile,
        derived: &Derived,
        summary: &Summary,
        snapshots: &[MetricsSnapshot],
    ) -> Vec<Finding> {
        advisor::advise(&advisor::Input {
            profile,
            derived,
            summary,
            snapshots,
        })
    }
}

impl<'a> Report<'a> {
    pub fn new(workload: &'a Workload, segments: &'a [RunSegment]) -> Report<'a> {
        let original = segments.first().map(|s| &s.started_on);
        let label = |profile: &Profile| {
            let edits: Vec<String> = original
                .map(|o| profile.knob_differences(o))
                .unwrap_or_default()
                .into_iter()
                .map(|(key, _, new)| format!("{key}={new}"))
                .collect();
            if edits.is_empty() {
                profile.name.clone()
            } else {
                format!("{} (edited: {})", profile.name, edits.join(", "))
            }
        };
        let mut changed = Vec::new();
        for (i, segment) in segments.iter().enumerate() {
            if i > 0 {
                changed.push(format!(
                    "{:.1} s: {} (state starts empty)",
                    segment.began_at_secs, segment.began
                ));
            }
            for c in &segment.outcome.changes {
                changed.push(format!(
                    "{:.1} s: {} = {} live, {}",
                    segment.began_at_secs + c.at_secs,
                    c.key,
                    c.value,
                    if c.applied { "applied" } else { "refused" }
                ));
            }
        }
        Report {
            schema_version: SCHEMA_VERSION,
            statebench_version: env!("CARGO_PKG_VERSION"),
            workload,
            segments: segments
                .iter()
                .map(|s| {
                    let profile = &s.outcome.profile;
                    let summary = Summary::new(&s.outcome).for_job(workload);
                    let derived = profile.derived(summary.state_cf_count());
                    let findings =
                        Segment::advise(profile, &derived, &summary, &s.outcome.snapshots);
                    Segment {
                        label: label(profile),
                        began: s.began.clone(),
                        began_at_secs: s.began_at_secs,
                        profile,
                        derived,
                        changes: &s.outcome.changes,
                        rocksdb_options_file: s.outcome.options_file.clone(),
                        option_mismatches: &s.outcome.option_mismatches,
                        summary,
                        findings,
                        scorecard: None,
                        snapshots: &s.outcome.snapshots,
                    }
                })
                .collect(),
            changed,
        }
    }

    /// Gives every segment its scorecard, with what `context` says of its profile (the
    /// TaskManager it is sized for, whether the workload is paced).
    pub fn score(&mut self, context: impl Fn(&Profile) -> Context) {
        for segment in &mut self.segments {
            let card = Scorecard::new(
                std::slice::from_ref(&segment.summary),
                &context(segment.profile),
            );
            segment.scorecard = Some(card);
        }
    }

    /// Writes the JSON report atomically: a temporary file next to `path`, then a rename, so a
    /// crash never leaves a half-written report.
    pub fn write_json(&self, path: &Path) -> std::io::Result<()> {
        let mut json = serde_json::to_vec_pretty(self)?;
        json.push(b'\n');
        write_atomically(path, &json)
    }
}

/// The CPU profile of a run's segments together (None when none was profiled).
pub fn cpu_profile(segments: &[RunSegment]) -> Option<crate::profiler::CpuProfile> {
    let mut profiles = segments
        .iter()
        .filter_map(|s| s.outcome.cpu_profile.as_ref())
        .peekable();
    profiles.peek()?;
    let mut all = crate::profiler::CpuProfile::default();
    for p in profiles {
        all.add(p);
    }
    Some(all)
}

/// Keeps RocksDB's OPTIONS file `options` (in a data directory about to go away) as `dest`,
/// beside a report, and returns where it is now.
pub fn keep_options_file(options: &Path, dest: &Path) -> anyhow::Result<PathBuf> {
    use anyhow::Context as _;
    let bytes = std::fs::read(options)
        .with_context(|| format!("cannot read RocksDB's OPTIONS file {}", options.display()))?;
    write_atomically(dest, &bytes)
        .with_context(|| format!("cannot keep RocksDB's OPTIONS file as {}", dest.display()))?;
    Ok(dest.to_path_buf())
}
