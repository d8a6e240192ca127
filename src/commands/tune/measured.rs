//! What tune measured: a profile's runs (their median summary, findings and scorecard) and a
//! candidate it tried with its verdict.

use serde::Serialize;

use super::candidates::Kind;
use crate::advisor::{Change, Finding};
use crate::config::Profile;
use crate::summary::Summary;
use crate::summary::scorecard::{Context, Delta, Scorecard};

/// The runs of one profile (and workload) on the job, and their scorecard.
#[derive(Clone, Serialize)]
pub struct Measured {
    pub profile: String,
    pub scorecard: Scorecard,
    /// The median run (by events/s): its summary and findings stand for the side.
    pub summary: Summary,
    pub findings: Vec<Finding>,
    /// Every run's summary.
    pub repeats: Vec<Summary>,
    #[serde(skip)]
    pub runs: Vec<(Summary, Vec<Finding>)>,
    #[serde(skip)]
    context: Context,
}

impl Measured {
    pub fn new(profile: &Profile, context: Context, first: (Summary, Vec<Finding>)) -> Measured {
        let mut m = Measured {
            profile: profile.name.clone(),
            scorecard: Scorecard::new(&[], &context),
            summary: Summary::default(),
            findings: Vec::new(),
            repeats: Vec::new(),
            runs: Vec::new(),
            context,
        };
        m.add(first);
        m
    }

    pub fn add(&mut self, run: (Summary, Vec<Finding>)) {
        self.runs.push(run);
        self.repeats = self.runs.iter().map(|r| r.0.clone()).collect();
        self.scorecard = Scorecard::new(&self.repeats, &self.context);
        let mut order: Vec<usize> = (0..self.runs.len()).collect();
        order.sort_by(|&x, &y| {
            self.runs[x]
                .0
                .events_per_sec
                .total_cmp(&self.runs[y].0.events_per_sec)
        });
        let median = order[(order.len() - 1) / 2];
        self.summary = self.runs[median].0.clone();
        self.findings = self.runs[median].1.clone();
    }
}

/// A candidate as tried: its measurement, its scorecard against the round's base, the verdict.
#[derive(Serialize)]
pub struct Tried {
    pub kind: Kind,
    pub finding: &'static str,
    pub source: String,
    pub changes: Vec<String>,
    /// Managed memory it adds, bytes.
    pub memory_cost: u64,
    /// Runs it took (0: refused before running, by a constraint).
    pub runs: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub measured: Option<Measured>,
    pub deltas: Vec<Delta>,
    pub kept: bool,
    pub verdict: String,
}

impl Tried {
    /// Its changes as changes again (they are kept as "key: value").
    pub fn parsed_changes(&self) -> Vec<Change> {
        self.changes
            .iter()
            .filter_map(|c| c.split_once(": ").map(|(k, v)| Change::new(k, v)))
            .collect()
    }
}
