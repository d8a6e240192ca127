//! `statebench trace convert | check`: a user's own export turned into a trace, and what a
//! trace holds (docs/trace.md).

use std::path::Path;

use anyhow::{Context as _, bail};

use super::UsageError;
use crate::cli::{TraceCheckArgs, TraceConvertArgs};
use crate::pipeline::trace::convert::{self, Mapping, OutputFormat, SizeColumn};
use crate::pipeline::trace::time::format_rfc3339;
use crate::pipeline::trace::{Trace, TraceSummary};

pub fn convert(args: TraceConvertArgs) -> anyhow::Result<()> {
    let mapping = Mapping {
        key: args.key,
        time: args.time,
        time_format: args.time_format,
        partition: args.partition,
        size: match (args.value_size, args.payload) {
            (Some(c), _) => Some(SizeColumn::ValueSize(c)),
            (None, Some(c)) => Some(SizeColumn::Payload(c)),
            (None, None) => None,
        },
        input: args.input,
        input_values: args.input_values.map(|v| (v.left, v.right)),
    };
    let parent = crate::util::fs::parent_dir(&args.to);
    if !parent.is_dir() {
        bail!(UsageError(format!(
            "--to {}: directory {} does not exist",
            args.to.display(),
            parent.display()
        )));
    }
    let format = args
        .format
        .unwrap_or_else(|| OutputFormat::for_path(&args.to));
    let converted =
        convert::convert(&args.file, &mapping, format).map_err(|e| UsageError(e.to_string()))?;
    crate::util::fs::write_atomically(&args.to, converted.text.as_bytes())
        .with_context(|| format!("cannot write the trace {}", args.to.display()))?;
    println!(
        "{}: {} records ({} keys) read as {}, written to {} as {}",
        args.file.display(),
        converted.records.len(),
        converted.keys,
        converted.read_as,
        args.to.display(),
        match format {
            OutputFormat::Csv => "CSV",
            OutputFormat::Jsonl => "JSON Lines",
        }
    );
    // Read back as a run reads it: what was written is a trace.
    let summary = TraceSummary::of(&args.to).map_err(|e| {
        anyhow::anyhow!("the written trace does not read back (a bug in statebench): {e}")
    })?;
    print_summary(&args.to, &summary);
    Ok(())
}

pub fn check(args: TraceCheckArgs) -> anyhow::Result<()> {
    let summary = TraceSummary::of(&args.file).map_err(|e| UsageError(e.to_string()))?;
    if let Some(partitions) = args.partitions {
        Trace::load(&args.file, partitions).map_err(|e| UsageError(e.to_string()))?;
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&summary)?);
    } else {
        print_summary(&args.file, &summary);
    }
    Ok(())
}

fn percent(part: u64, whole: u64) -> f64 {
    100.0 * part as f64 / whole.max(1) as f64
}

fn print_summary(path: &Path, s: &TraceSummary) {
    println!("trace {}", path.display());
    println!("  events          {}", s.events);
    println!("  keys            {}", s.keys);
    let span = s.max_event_time - s.min_event_time;
    println!(
        "  event time      {} .. {} ({}.{:03} s); the first event at {}",
        format_rfc3339(s.min_event_time),
        format_rfc3339(s.max_event_time),
        span / 1000,
        span % 1000,
        format_rfc3339(s.first_event_time)
    );
    println!(
        "  out of order    {} of {} events ({:.1} %), at most {} ms behind the newest before them",
        s.out_of_order_events,
        s.events,
        percent(s.out_of_order_events, s.events),
        s.max_out_of_orderness
    );
    println!(
        "  inputs          left {}, right {}",
        s.inputs[0], s.inputs[1]
    );
    if s.partitions.is_empty() {
        println!("  partitions      none given (each key keyed into the workload's partitions)");
    } else {
        let counts: Vec<String> = s
            .partitions
            .iter()
            .map(|(p, n)| format!("{p}: {n}"))
            .collect();
        println!(
            "  partitions      {} ({} given); {} without one (keyed by key)",
            counts.join(", "),
            s.events - s.unpartitioned,
            s.unpartitioned
        );
    }
    if s.value_sizes == 0 {
        println!("  value sizes     none given (value_size 0)");
    } else {
        println!(
            "  value sizes     {} given: min {}, mean {:.1}, max {} bytes; {} bytes in all",
            s.value_sizes,
            s.min_value_size,
            s.total_value_size as f64 / s.value_sizes as f64,
            s.max_value_size,
            s.total_value_size
        );
    }
}
