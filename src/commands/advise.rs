//! `statebench advise REPORT.json`: the advisor's findings for a saved report, offline.

use std::path::Path;

use anyhow::{Context as _, bail};
use serde_json::Value;

use super::UsageError;
use crate::config::Profile;
use crate::engine::MetricsSnapshot;
use crate::report::{self, Segment};
use crate::summary::Summary;

/// A saved report's segments (schema 2), or the one run of a schema-1 report.
pub(super) fn read_segments(path: &Path) -> anyhow::Result<Vec<Value>> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| UsageError(format!("cannot read the report {}: {e}", path.display())))?;
    let report: Value = serde_json::from_str(&text).map_err(|e| {
        UsageError(format!(
            "{} is not a statebench JSON report: {e}",
            path.display()
        ))
    })?;
    match report["schema_version"].as_u64() {
        Some(2) => Ok(report["segments"].as_array().cloned().unwrap_or_default()),
        Some(1) => Ok(vec![report]),
        other => bail!(UsageError(format!(
            "{}: schema_version {} is not one this build reads (1 or 2)",
            path.display(),
            other.map_or("missing".to_string(), |v| v.to_string())
        ))),
    }
}

pub fn run(path: &Path, json: bool) -> anyhow::Result<()> {
    let segments = read_segments(path)?;
    let origin = path.display().to_string();
    let mut all = Vec::new();
    for (i, segment) in segments.iter().enumerate() {
        let at = if segments.len() > 1 {
            format!("{origin}, segment {}", i + 1)
        } else {
            origin.clone()
        };
        let name = segment["profile"]["name"].as_str().unwrap_or("report");
        let profile = Profile::from_report(name, &segment["profile"]["knobs"], &at)?;
        let summary: Summary = serde_json::from_value(segment["summary"].clone())
            .with_context(|| format!("{at}: the summary"))?;
        let snapshots: Vec<MetricsSnapshot> = serde_json::from_value(segment["snapshots"].clone())
            .with_context(|| format!("{at}: the snapshots"))?;
        let derived = profile.derived(summary.state_cf_count());
        let findings = Segment::advise(&profile, &derived, &summary, &snapshots);
        if !json {
            let label = segment["label"].as_str().unwrap_or(name);
            println!("{at} ({label}, {} events):", summary.events);
            print!("{}", report::render_findings(&findings));
        }
        all.push(serde_json::json!({ "profile": name, "findings": findings }));
    }
    if json {
        println!("{}", serde_json::to_string_pretty(&all)?);
    }
    Ok(())
}
