//! `diagnose`'s text: what was read, what it says, the profile, the findings with their case
//! studies, and what to run next.

use std::fmt::Write as _;

use super::{Diagnosis, case_study};
use crate::config::units::human_bytes;
use crate::report::render_findings;

pub fn render(d: &Diagnosis, profile_out: Option<&std::path::Path>) -> String {
    let mut out = String::new();
    for inst in &d.instances {
        let log = &inst.log;
        let _ = writeln!(
            out,
            "instance {}: {} LOG file(s) over {:.1} s, OPTIONS {}",
            inst.dir.display(),
            inst.logs.len(),
            log.span_secs,
            inst.options_path
                .as_ref()
                .and_then(|p| p.file_name())
                .map_or("none".to_string(), |n| n.to_string_lossy().into_owned()),
        );
        let by_reason = |reason: &str| log.flushes.iter().filter(|f| f.reason == reason).count();
        let mut reasons: Vec<&str> = log.flushes.iter().map(|f| f.reason.as_str()).collect();
        reasons.sort_unstable();
        reasons.dedup();
        let _ = writeln!(
            out,
            "  flushes {} ({}); compactions {}; bytes flushed {}, compacted {}",
            log.flushes.len(),
            reasons
                .iter()
                .map(|r| format!("{r} {}", by_reason(r)))
                .collect::<Vec<_>>()
                .join(", "),
            log.compactions,
            human_bytes(log.flush_bytes as f64),
            human_bytes(log.compaction_bytes as f64),
        );
        let stops: u64 = log.stops.values().sum();
        let stalls: u64 = log.stalls.values().sum();
        let _ = writeln!(out, "  write stops {stops}, slowdowns {stalls} (LOG lines)");
        for (cf, active) in &log.active_levels {
            let levels = log
                .levels(cf)
                .into_iter()
                .map(|(l, (files, bytes))| {
                    format!("L{l} {files} files {}", human_bytes(bytes as f64))
                })
                .collect::<Vec<_>>()
                .join(", ");
            let _ = writeln!(out, "  {cf}: up to {active} active levels; now {levels}");
        }
        if let Some(b) = &log.biggest_file {
            let _ = writeln!(
                out,
                "  biggest SST {} ({} entries): filter {}, index {}",
                human_bytes(b.size as f64),
                b.entries,
                human_bytes(b.filter_bytes as f64),
                human_bytes(b.index_bytes as f64),
            );
        }
        let _ = writeln!(
            out,
            "  block caches {} of {}",
            log.caches,
            log.cache_capacities
                .iter()
                .max()
                .map_or("-".to_string(), |c| human_bytes(*c as f64))
        );
    }
    let _ = writeln!(out, "\nthe profile it ran with (OPTIONS and LOG):");
    for line in d.profile_yaml.lines().filter(|l| !l.starts_with('#')) {
        let _ = writeln!(out, "  {line}");
    }
    for note in &d.profile_notes {
        let _ = writeln!(out, "  note: {note}");
    }
    if let Some(path) = profile_out {
        let _ = writeln!(out, "  written to {}", path.display());
    }
    if d.findings.is_empty() {
        let _ = writeln!(out, "\nno finding: nothing in this evidence matches a rule");
        return out;
    }
    let _ = writeln!(out);
    out.push_str(&render_findings(&d.findings));
    let cases: Vec<String> = d
        .findings
        .iter()
        .filter_map(|f| case_study(f.id).map(|(n, name)| (f.id, n, name)))
        .map(|(id, n, name)| {
            format!("  {id}: case study {n} (`statebench reproduce {name}` shows it and its fix)")
        })
        .collect();
    if !cases.is_empty() {
        let _ = writeln!(out, "\ncase studies:");
        for c in cases {
            let _ = writeln!(out, "{c}");
        }
    }
    out
}
