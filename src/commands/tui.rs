//! `statebench tui`: the terminal UI; on quit, the summary and the report of each side.

use std::io::{IsTerminal, Write as _};

use anyhow::{Context as _, bail};

use super::{Job, UsageError};
use crate::cli::TuiArgs;
use crate::report::{self, Report};
use crate::tui::{self, engines};
use crate::util::fs::write_atomically;

pub fn run(args: TuiArgs) -> anyhow::Result<()> {
    let Job {
        workload,
        profile,
        trace,
        events,
        duration,
    } = Job::load(&args.job)?;
    let compare = args
        .compare
        .as_deref()
        .map(super::load_profile)
        .transpose()?;
    if !std::io::stdout().is_terminal() {
        bail!(UsageError(
            "statebench tui needs a terminal; use `statebench run` for headless runs".to_string()
        ));
    }
    let report_path = args.job.report;
    let ended = tui::run(tui::TuiConfig {
        settings: engines::Settings {
            workload: workload.clone(),
            events,
            duration,
            trace,
            slice: args.slice.as_duration(),
            failures: args.failures.spec(),
            savepoints: args.failures.savepoints(),
            cpu: args
                .cpu
                .profile_cpu
                .then(crate::profiler::Session::start)
                .transpose()?
                .map(std::sync::Arc::new),
        },
        profile,
        compare,
        refresh: args.refresh.as_duration(),
        report: report_path.clone(),
    })?;
    // Whatever each side left is reported, also when the other side (or the loop) failed.
    let b_segments: Vec<_> = ended.b.into_iter().collect();
    let scored = |segments| {
        let mut report = Report::new(&workload, segments);
        report.score(|p| super::score_context(&workload, p));
        report
    };
    let report_a = (!ended.a.is_empty()).then(|| scored(&ended.a));
    let report_b = (!b_segments.is_empty()).then(|| scored(&b_segments));
    let comparison = match (report_a.as_ref(), report_b.as_ref()) {
        (Some(a), Some(b)) => a
            .segments
            .last()
            .zip(b.segments.last())
            .map(|(a, b)| report::render_comparison(a, b)),
        _ => None,
    };
    let mut written = Vec::new();
    if let Some(path) = &report_path {
        let mut write = |report: &Report, path: std::path::PathBuf| -> anyhow::Result<()> {
            report
                .write_json(&path)
                .with_context(|| format!("cannot write the report {}", path.display()))?;
            written.push(path);
            Ok(())
        };
        if let Some(report_a) = &report_a {
            write(report_a, path.clone())?;
        }
        if let Some(report_b) = &report_b {
            write(report_b, engines::sibling(path, "-b", None))?;
        }
        // With --profile-cpu: each side's flamegraph and pprof profile beside its report.
        for (segments, report) in [
            (&ended.a, path.clone()),
            (&b_segments, engines::sibling(path, "-b", None)),
        ] {
            if let Some(cpu) = report::cpu_profile(segments) {
                let title = format!("statebench tui: {}", workload.name);
                let files = cpu.write_beside(&report, &title).with_context(|| {
                    format!("cannot write the CPU profile beside {}", report.display())
                })?;
                written.extend(files);
            }
        }
        if let Some(table) = &comparison {
            let path_c = engines::sibling(path, "-compare", Some("txt"));
            write_atomically(&path_c, table.as_bytes())
                .with_context(|| format!("cannot write the comparison {}", path_c.display()))?;
            written.push(path_c);
        }
    }
    // The terminal may be gone (the TUI ended on a hang-up): printing must not panic.
    let mut out = std::io::stdout();
    let ab = report_a.is_some() && report_b.is_some();
    for (label, report) in [("A", &report_a), ("B", &report_b)] {
        if let Some(report) = report {
            let head = if ab {
                format!("{label}:\n")
            } else {
                String::new()
            };
            let _ = write!(out, "{head}{}", report::render_summary(report));
        }
    }
    if let Some(table) = &comparison {
        let _ = write!(out, "\n{table}");
    }
    for path in written {
        let _ = writeln!(out, "  written: {}", path.display());
    }
    if !ended.failures.is_empty() {
        bail!(ended.failures.join("; "));
    }
    Ok(())
}
