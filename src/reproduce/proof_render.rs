//! How a case study's proof reads: the finding, the fix applied, before / after, the evidence
//! the case study cites and the verdict.

use std::fmt::Write as _;

use super::proofs::{Outcome, Proof};
use crate::config::units::human_bytes;
use crate::report;
use crate::summary::scorecard;

/// The finding, the fix applied, before / after, and the verdict.
pub fn render(proof: &Proof, outcome: &Outcome) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}: {}\n", proof.name, proof.story);
    let history = outcome.before.preload.as_ref().map_or(0, |p| p.records);
    let limit = match outcome.production {
        Some(p) => {
            let _ = writeln!(out, "  at production size: {}\n", p.story);
            Some(p.duration)
        }
        None => proof.limit,
    };
    let _ = writeln!(
        out,
        "  before: {} on {}, {} events{}{}",
        proof.profile,
        proof.workload,
        outcome.before.events,
        if history > 0 {
            format!(" after {history} records of preloaded history")
        } else {
            String::new()
        },
        match limit {
            Some(limit) if outcome.before.events < outcome.requested => format!(
                " (stopped at its {} s limit; the after run {})",
                limit.as_secs(),
                if outcome.production.is_some_and(|p| p.after_as_long) {
                    "runs as long: the checks are per lookup"
                } else {
                    "reads as many"
                }
            ),
            _ => String::new(),
        }
    );
    let Some(finding) = &outcome.named else {
        let found: Vec<&str> = outcome.findings.iter().map(|f| f.id).collect();
        let _ = writeln!(
            out,
            "\n  NOT reproduced: the advisor did not make the '{}' finding (it found: {})",
            proof.finding,
            if found.is_empty() {
                "nothing".to_string()
            } else {
                found.join(", ")
            }
        );
        return out;
    };
    out.push_str(&report::render_findings(std::slice::from_ref(finding)));
    let cost = if outcome.memory_cost > 0 {
        format!(
            " (+{} managed memory)",
            human_bytes(outcome.memory_cost as f64)
        )
    } else {
        String::new()
    };
    let _ = writeln!(out, "\n  applied: {}{cost}", outcome.applied.join(", "));
    if let Some((before, after)) = &outcome.scorecards {
        out.push_str(&scorecard::render(&[("before", before), ("after", after)]));
    }
    let _ = writeln!(out, "\n  the case study's evidence:");
    for (metric, b, a, must, held) in &outcome.checks {
        let _ = writeln!(
            out,
            "    {metric:<28} {b:>12.1} -> {a:<12.1} must go {must:<16} {}",
            if *held { "yes" } else { "NO" }
        );
    }
    let caveat = match outcome.production {
        Some(p) => p.caveat,
        None => proof.caveat,
    };
    if let Some(caveat) = caveat {
        let _ = writeln!(out, "\n  note: {caveat}");
    }
    let _ = writeln!(
        out,
        "\n  {}",
        if outcome.ok {
            format!(
                "reproduced: the advisor named the cause ({}) and its fix moved the evidence as the case study says",
                finding.id
            )
        } else {
            "NOT reproduced: the evidence did not move as the case study says".to_string()
        }
    );
    out
}
