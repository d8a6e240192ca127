//! The advisor's findings as terminal text: each with its evidence, fix, cost and alternatives
//! (a run's summary, `advise`, `tune`, `diagnose`).

use crate::advisor::{Change, Finding};
use crate::config::units::human_bytes;

/// The advisor's findings: diagnosis, evidence, the profile change and what it costs.
pub fn render_findings(findings: &[Finding]) -> String {
    if findings.is_empty() {
        return "  findings                           none: no rule fired\n".to_string();
    }
    let mut out = format!("  findings ({}):\n", findings.len());
    for f in findings {
        let severity = format!("{:?}", f.severity).to_lowercase();
        // Evidence without a time axis (a running job's metrics now) has no span to show.
        let span = if f.to_secs > 0.0 {
            format!(" ({:.0}-{:.0} s)", f.from_secs, f.to_secs)
        } else {
            String::new()
        };
        out.push_str(&format!("  [{severity}] {}{span}: {}\n", f.id, f.diagnosis));
        for e in &f.evidence {
            out.push_str(&format!(
                "      {}: {} (threshold {})\n",
                e.metric, e.value, e.threshold
            ));
        }
        if let Some(cost) = &f.cost {
            out.push_str(&format!("      cost to the job: {cost}\n"));
        }
        if f.recommendation.is_empty() && !f.overruled.is_empty() {
            out.push_str("      fix: none left (below: what was overruled)\n");
        }
        if !f.recommendation.is_empty() {
            let cost = if f.memory_cost > 0 {
                format!(" (+{} managed memory)", human_bytes(f.memory_cost as f64))
            } else {
                String::new()
            };
            out.push_str(&format!(
                "      fix: {}{cost}\n",
                Change::list(&f.recommendation, ": ")
            ));
            if let Some(effect) = &f.effect {
                out.push_str(&format!("        predicted: {effect}\n"));
            }
        }
        for (i, alt) in f.alternatives.iter().enumerate() {
            let what = if alt.changes.is_empty() {
                "in the job".to_string()
            } else {
                Change::list(&alt.changes, ": ")
            };
            let cost = if alt.memory_cost > 0 {
                format!(" (+{} managed memory)", human_bytes(alt.memory_cost as f64))
            } else {
                String::new()
            };
            out.push_str(&format!("      or ({}): {what}{cost}\n", i + 2));
            out.push_str(&format!("        predicted: {}\n", alt.effect));
        }
        for o in &f.overruled {
            let what = if o.was_recommendation {
                "its fix"
            } else {
                "an alternative"
            };
            out.push_str(&format!(
                "      overruled ({what}): {}: {}\n",
                Change::list(&o.changes, ": "),
                o.reason
            ));
        }
        if !f.job_changes.is_empty() {
            out.push_str(&format!(
                "      fix in the job (workload): {}\n",
                Change::list(&f.job_changes, ": ")
            ));
        }
        if let Some(note) = &f.note {
            out.push_str(&format!("      note: {note}\n"));
        }
    }
    out
}
