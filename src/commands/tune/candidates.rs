//! A round's candidates: the advisor's fixes, neighbouring values of the knobs they change,
//! and the findings' job changes.

use anyhow::Context as _;
use serde::Serialize;

use crate::advisor::{Change, Finding};
use crate::config::{ByteSize, Profile, Workload};
use crate::reproduce::proofs;

/// What a candidate changes: the profile, or the job (never written into the profile).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Profile,
    Job,
}

/// One candidate: where it came from and what it changes.
pub struct Candidate {
    pub kind: Kind,
    pub finding: &'static str,
    /// "recommendation", "alternative 2", "neighbour of writebuffer.size".
    pub source: String,
    pub changes: Vec<Change>,
    pub profile: Profile,
    pub workload: Workload,
}
/// Neighbouring values of a change's knob: half and twice a size, the other value of a
/// boolean, 5 / 10 / 15 bits per key.
pub fn neighbours(change: &Change) -> Vec<String> {
    let value = change.value.trim();
    match value {
        "true" => return vec!["false".to_string()],
        "false" => return vec!["true".to_string()],
        _ => {}
    }
    if change.key.ends_with("bits-per-key") {
        return ["5", "10", "15"]
            .iter()
            .filter(|v| value.parse::<f64>().ok() != v.parse::<f64>().ok())
            .map(|v| v.to_string())
            .collect();
    }
    // A size says its unit (a plain number is a count or a ratio).
    if value.chars().any(|c| c.is_ascii_alphabetic())
        && let Some(size) = ByteSize::parse(value)
        && size.0 >= 2 << 10
    {
        return vec![
            ByteSize(size.0 / 2).to_string(),
            ByteSize(size.0.saturating_mul(2)).to_string(),
        ];
    }
    Vec::new()
}

/// `profile` with `changes` applied.
pub fn apply(profile: &Profile, id: &str, changes: &[Change]) -> anyhow::Result<Profile> {
    let mut edited = profile.clone();
    for c in changes {
        edited = edited
            .edited(&c.key, &c.value)
            .with_context(|| format!("finding {id}: {} = {}", c.key, c.value))?;
    }
    Ok(edited)
}

/// The round's candidates from `findings` on `current` (the advisor's order: most severe finding
/// first, cheapest first): the most severe finding's recommendation and its alternatives, then
/// the other recommendations, then their alternatives, then neighbouring values of the
/// recommendations' knobs; the job changes apart. None equals `current` or another candidate.
/// The worst harm's own options come before the lesser findings': on case study 1 (stalls of
/// 10 s) a round's first runs went to the write-stalls and bloom-off fixes, and the team's
/// memory fix, wbm-budget's second alternative, was never run.
pub fn candidates(
    findings: &[Finding],
    current: &Profile,
    workload: &Workload,
) -> anyhow::Result<Vec<Candidate>> {
    let mut out: Vec<Candidate> = Vec::new();
    let mut push = |finding: &Finding,
                    source: String,
                    changes: Vec<Change>|
     -> anyhow::Result<()> {
        if changes.is_empty() {
            return Ok(());
        }
        // A value the knob refuses (a neighbour below its minimum) is no candidate.
        let Ok(profile) = apply(current, finding.id, &changes) else {
            return Ok(());
        };
        if profile.knobs == current.knobs || out.iter().any(|c| c.profile.knobs == profile.knobs) {
            return Ok(());
        }
        out.push(Candidate {
            kind: Kind::Profile,
            finding: finding.id,
            source,
            changes,
            profile,
            workload: workload.clone(),
        });
        Ok(())
    };
    let findings: Vec<&Finding> = findings.iter().collect();
    let alternatives = |f: &Finding| -> Vec<(String, Vec<Change>)> {
        f.alternatives
            .iter()
            .enumerate()
            .map(|(i, alt)| (format!("alternative {}", i + 1), alt.changes.clone()))
            .collect()
    };
    for (n, f) in findings.iter().enumerate() {
        push(f, "recommendation".to_string(), f.recommendation.clone())?;
        if n == 0 {
            for (source, changes) in alternatives(f) {
                push(f, source, changes)?;
            }
        }
    }
    for f in findings.iter().skip(1) {
        for (source, changes) in alternatives(f) {
            push(f, source, changes)?;
        }
    }
    for f in &findings {
        for (i, c) in f.recommendation.iter().enumerate() {
            for value in neighbours(c) {
                let mut changes = f.recommendation.clone();
                changes[i].value = value;
                push(f, format!("neighbour of {}", c.key), changes)?;
            }
        }
    }
    for f in &findings {
        if f.job_changes.is_empty() {
            continue;
        }
        let changed = proofs::apply_job_changes(workload, &f.job_changes)
            .with_context(|| format!("finding {}", f.id))?;
        out.push(Candidate {
            kind: Kind::Job,
            finding: f.id,
            source: "job change".to_string(),
            changes: f.job_changes.clone(),
            profile: current.clone(),
            workload: changed,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::advisor::Severity;

    #[test]
    fn neighbours_are_half_and_twice_a_size_the_other_bool_and_bits_per_key() {
        let n = |k: &str, v: &str| neighbours(&Change::new(k, v));
        assert_eq!(n("writebuffer.size", "2mb"), ["1mb", "4mb"]);
        assert_eq!(n("use-bloom-filter", "true"), ["false"]);
        assert_eq!(n("bloom-filter.bits-per-key", "10"), ["5", "15"]);
        // A count or a ratio: none.
        assert!(n("writebuffer.count", "3").is_empty());
        assert!(n("memory.write-buffer-ratio", "0.5").is_empty());
    }

    #[test]
    fn candidates_come_cheapest_first_and_job_changes_apart() {
        let profile = Profile::load("flink-default").unwrap();
        let workload = Workload::load("sessions-process").unwrap();
        let finding = |id: &'static str, rec: Vec<Change>, jobs: Vec<Change>| Finding {
            id,
            severity: Severity::Warning,
            diagnosis: String::new(),
            evidence: Vec::new(),
            from_secs: 0.0,
            to_secs: 1.0,
            recommendation: rec,
            memory_cost: 0,
            job_changes: jobs,
            note: None,
            effect: None,
            alternatives: vec![crate::advisor::Fix {
                changes: vec![Change::new("writebuffer.count", 3)],
                memory_cost: 0,
                effect: String::new(),
            }],
            cost: None,
            overruled: Vec::new(),
        };
        let findings = [
            finding(
                "a",
                vec![Change::new("writebuffer.size", "8mb")],
                Vec::new(),
            ),
            finding(
                "b",
                Vec::new(),
                vec![Change::new("job.function", "aggregate")],
            ),
            finding(
                "c",
                vec![Change::new("use-bloom-filter", "true")],
                Vec::new(),
            ),
        ];
        let c = candidates(&findings, &profile, &workload).unwrap();
        let names: Vec<String> = c
            .iter()
            .map(|c| {
                format!(
                    "{} {}: {}",
                    c.finding,
                    c.source,
                    Change::list(&c.changes, "=")
                )
            })
            .collect();
        // The most severe finding's alternative before the others' recommendations; b's and c's
        // alternative is a's: tried once.
        assert_eq!(
            names,
            [
                "a recommendation: writebuffer.size=8mb",
                "a alternative 1: writebuffer.count=3",
                "c recommendation: use-bloom-filter=true",
                "a neighbour of writebuffer.size: writebuffer.size=4mb",
                "a neighbour of writebuffer.size: writebuffer.size=16mb",
                "b job change: job.function=aggregate",
            ]
        );
        let job = c.last().unwrap();
        assert_eq!(job.kind, Kind::Job);
        assert_eq!(
            job.profile.knobs, profile.knobs,
            "a job change leaves the profile"
        );
        assert!(format!("{:?}", job.workload.spec.job).contains("Aggregate"));
    }
}
