//! `diagnose`'s text: what was read, what it says, the profile, the findings with their case
//! studies, and what to run next.

use std::fmt::Write as _;

use super::{Diagnosis, case_study};
use crate::config::units::human_bytes;
use crate::report::render_findings;

pub fn render(
    d: &Diagnosis,
    profile_out: Option<&std::path::Path>,
    workload_out: Option<&std::path::Path>,
) -> String {
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
    if let Some(j) = &d.rest {
        let _ = writeln!(
            out,
            "Flink {} at {}: job {} '{}' ({}), its native RocksDB metrics summed over its subtasks",
            j.flink_version, j.url, j.job_id, j.job_name, j.job_state
        );
    }
    if let Some(m) = &d.metrics {
        out.push_str(&render_metrics(m));
    }
    let _ = writeln!(
        out,
        "\nthe profile it ran with ({}):",
        if d.instances.is_empty() {
            "the cluster's configuration"
        } else if d.instances.iter().any(|i| i.options.is_some()) {
            "OPTIONS and LOG"
        } else {
            "the LOG alone: no OPTIONS file"
        }
    );
    for line in d.profile_yaml.lines().filter(|l| !l.starts_with('#')) {
        let _ = writeln!(out, "  {line}");
    }
    for note in &d.profile_notes {
        let _ = writeln!(out, "  note: {note}");
    }
    if let Some(path) = profile_out {
        let _ = writeln!(out, "  written to {}", path.display());
    }
    out.push_str(&render_workload(d, workload_out));
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

/// The diagnosis as JSON (`diagnose --json`).
pub fn to_json(d: &Diagnosis) -> serde_json::Value {
    let instances: Vec<serde_json::Value> = d
        .instances
        .iter()
        .map(|inst| {
            let log = &inst.log;
            let levels: serde_json::Map<String, serde_json::Value> = log
                .active_levels
                .iter()
                .map(|(cf, active)| {
                    let live: Vec<serde_json::Value> = log
                        .levels(cf)
                        .into_iter()
                        .map(|(level, (files, bytes))| {
                            serde_json::json!({"level": level, "files": files, "bytes": bytes})
                        })
                        .collect();
                    (
                        cf.clone(),
                        serde_json::json!({"active_levels_max": active, "live": live}),
                    )
                })
                .collect();
            serde_json::json!({
                "dir": inst.dir,
                "logs": inst.logs,
                "options": inst.options_path,
                "span_secs": log.span_secs,
                "flushes": log.flushes.len(),
                "flush_reasons": log.flushes.iter().fold(
                    std::collections::BTreeMap::<&str, u64>::new(),
                    |mut m, f| {
                        *m.entry(f.reason.as_str()).or_default() += 1;
                        m
                    },
                ),
                "compactions": log.compactions,
                "flush_bytes": log.flush_bytes,
                "compaction_bytes": log.compaction_bytes,
                "stops": log.stops,
                "stalls": log.stalls,
                "column_families": levels,
                "biggest_file": log.biggest_file.as_ref().map(|b| serde_json::json!({
                    "column_family": b.cf, "bytes": b.size, "entries": b.entries,
                    "filter_bytes": b.filter_bytes, "index_bytes": b.index_bytes,
                })),
                "block_caches": log.caches,
                "block_cache_capacity": log.cache_capacities.iter().max(),
            })
        })
        .collect();
    let findings: Vec<serde_json::Value> = d
        .findings
        .iter()
        .map(|f| {
            let mut v = serde_json::to_value(f).unwrap_or_default();
            if let Some((n, name)) = case_study(f.id) {
                v["case_study"] = serde_json::json!({"number": n, "reproduce": name});
            }
            v
        })
        .collect();
    let metrics = d.metrics.as_ref().map(|m| {
        let per_cf =
            |metric: &str| serde_json::to_value(m.by_column_family(metric)).unwrap_or_default();
        serde_json::json!({
            "files": m.files,
            "samples": m.samples.len(),
            "stall_micros": m.sum("stall_micros"),
            "block_cache_hit": m.sum("block_cache_hit"),
            "block_cache_miss": m.sum("block_cache_miss"),
            "is_write_stopped": m.sum("is_write_stopped"),
            "estimate_num_keys": per_cf("estimate_num_keys"),
            "estimate_live_data_size": per_cf("estimate_live_data_size"),
        })
    });
    serde_json::json!({
        "instances": instances,
        "native_metrics": metrics,
        "rest": d.rest.as_ref().map(|j| serde_json::json!({
            "url": j.url, "flink_version": j.flink_version, "job_id": j.job_id,
            "job_name": j.job_name, "job_state": j.job_state,
        })),
        "profile": {"yaml": d.profile_yaml, "notes": d.profile_notes},
        "workload": match &d.workload {
            Ok(w) => serde_json::json!({"yaml": w.yaml, "notes": w.notes}),
            Err(why) => serde_json::json!({"error": why}),
        },
        "findings": findings,
    })
}

/// The workload the evidence describes: its YAML's job, keys, events and rate, with how each
/// was found.
fn render_workload(d: &Diagnosis, workload_out: Option<&std::path::Path>) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "\nthe workload it describes (LOG and OPTIONS):");
    match &d.workload {
        Ok(w) => {
            let spec = &w.workload.spec;
            let _ = writeln!(
                out,
                "  {} keys ({:?}), {} events, rate {}",
                spec.keys.count,
                spec.keys.distribution,
                spec.events,
                match spec.rate {
                    crate::config::workload::Rate::Max => "max".to_string(),
                    crate::config::workload::Rate::PerSecond(r) => format!("{r}/s"),
                }
            );
            for note in &w.notes {
                let _ = writeln!(out, "  note: {note}");
            }
            match workload_out {
                Some(path) => {
                    let _ = writeln!(out, "  written to {}", path.display());
                }
                None => {
                    let _ = writeln!(out, "  (--workload-out FILE writes it)");
                }
            }
        }
        Err(why) => {
            let _ = writeln!(out, "  none: {why}");
        }
    }
    out
}

/// What Flink's native metrics add: stall time, cache hits, whether writes are stopped now,
/// keys and live data per column family.
fn render_metrics(m: &super::NativeMetrics) -> String {
    let mut out = String::new();
    let files: Vec<String> = m
        .files
        .iter()
        .filter_map(|f| f.file_name().map(|n| n.to_string_lossy().into_owned()))
        .collect();
    let _ = writeln!(
        out,
        "Flink's native RocksDB metrics ({}, {} samples):",
        if files.is_empty() {
            "through the REST API".to_string()
        } else {
            files.join(", ")
        },
        m.samples.len()
    );
    if let Some(stall) = m.sum("stall_micros") {
        let _ = writeln!(out, "  write stall time {:.1} s", stall / 1e6);
    }
    if let Some((rate, hit, miss)) = m.cache_hit_rate() {
        let _ = writeln!(
            out,
            "  block cache hit rate {:.1} % ({hit:.0} hits, {miss:.0} misses; all blocks together)",
            rate * 100.0
        );
    }
    if let Some(stopped) = m.sum("is_write_stopped") {
        let _ = writeln!(out, "  writes stopped when scraped: {}", stopped > 0.0);
    }
    for (metric, what) in [
        ("estimate_num_keys", "keys (estimate)"),
        ("estimate_live_data_size", "live data"),
        ("cur_size_all_mem_tables", "memtables"),
    ] {
        let per_cf = m.by_column_family(metric);
        if per_cf.is_empty() {
            continue;
        }
        let shown: Vec<String> = per_cf
            .iter()
            .map(|(cf, v)| {
                if metric == "estimate_num_keys" {
                    format!("{cf} {v:.0}")
                } else {
                    format!("{cf} {}", human_bytes(*v))
                }
            })
            .collect();
        let _ = writeln!(out, "  {what}: {}", shown.join(", "));
    }
    out
}
