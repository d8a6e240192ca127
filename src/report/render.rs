//! The report for a terminal: each segment's summary, and two profiles side by side.

use super::render_findings;
use super::{Report, Segment};
use crate::config::Workload;
use crate::config::units::human_bytes;
use crate::summary::scorecard;

/// Below this many lookups a hit rate is printed with its lookup count.
pub const FEW_LOOKUPS: u64 = 100;

fn pct(v: f64) -> String {
    format!("{:.1} %", v * 100.0)
}

/// The end-of-run summary for a terminal: each segment's, then what changed.
pub fn render_summary(report: &Report) -> String {
    let mut out = String::new();
    let n = report.segments.len();
    for (i, segment) in report.segments.iter().enumerate() {
        if n > 1 {
            out.push_str(&format!(
                "segment {} of {n} ({}, at {:.1} s):\n",
                i + 1,
                segment.began,
                segment.began_at_secs
            ));
        }
        out.push_str(&render_segment(report.workload, segment));
    }
    if !report.changed.is_empty() {
        out.push_str("  changed during the run:\n");
        for line in &report.changed {
            out.push_str(&format!("    {line}\n"));
        }
    }
    out
}

/// One segment's summary.
/// `json` (an object of plain values, as serde writes it) without its field `name`, the other
/// fields in their order.
fn without_field(json: &str, name: &str) -> String {
    let key = format!("\"{name}\":");
    let Some(at) = json.find(&key) else {
        return json.to_string();
    };
    let end = json[at..].find([',', '}']).map_or(json.len(), |i| at + i);
    // The comma before it goes with it (or, first, the one after).
    if json[..at].ends_with(',') {
        format!("{}{}", &json[..at - 1], &json[end..])
    } else if json[end..].starts_with(',') {
        format!("{}{}", &json[..at], &json[end + 1..])
    } else {
        format!("{}{}", &json[..at], &json[end..])
    }
}

fn render_segment(workload: &Workload, segment: &Segment) -> String {
    let s = &segment.summary;
    let mut out = String::new();
    let mut line = |label: &str, value: String| {
        out.push_str(&format!("  {label:<34} {value}\n"));
    };
    line(
        "workload / profile",
        format!("{} / {}", workload.name, segment.label),
    );
    let stopped = if s.stopped_early {
        " (stopped early)"
    } else {
        ""
    };
    // After a restore the job's position and the work done differ: say both, and which rate
    // is which (replayed records are real RocksDB work, not new results).
    if s.records_processed == 0 && s.events > 0 {
        line(
            "events",
            format!(
                "none read: the job was at {} already (the restored state); --events above it reads on",
                s.events
            ),
        );
    } else if s.records_processed != s.events || s.records_replayed > 0 {
        line(
            "events",
            format!("{} (the job's position at the end){stopped}", s.events),
        );
        line(
            "records processed",
            format!(
                "{} in {:.1} s in this process (of which replayed after a restore {})",
                s.records_processed, s.processing_secs, s.records_replayed
            ),
        );
        line(
            "throughput",
            format!(
                "{:.0} records/s processed (replayed ones included); new results {:.0} events/s",
                s.events_per_sec,
                s.new_results_per_sec()
            ),
        );
    } else {
        line(
            "events",
            format!("{} in {:.1} s{stopped}", s.events, s.processing_secs),
        );
        line("throughput", format!("{:.0} events/s", s.events_per_sec));
    }
    if let Some(job) = &s.whole_job {
        // Like for like with an unfailed run: every process's work in every process's time.
        line(
            "whole job (all processes)",
            format!(
                "{:.0} events/s, {:.2} rocksdb ops per event: {} records in {:.1} s over {} processes \
                 (the {} replayed counted; a killed process's work after its last checkpoint is not)",
                job.events_per_sec,
                job.rocksdb_ops_per_event,
                job.records_processed,
                job.processing_secs,
                job.processes,
                job.records_replayed
            ),
        );
    }
    line(
        "event latency p50 / p99 / p999",
        format!(
            "{:.1} / {:.1} / {:.1} µs",
            s.p50_event_latency_us, s.p99_event_latency_us, s.p999_event_latency_us
        ),
    );
    line(
        "state get p99 / put p99 / put max",
        format!(
            "{:.1} / {:.1} / {:.0} µs",
            s.p99_get_latency_us, s.p99_put_latency_us, s.max_put_latency_us
        ),
    );
    // A chain: every operator, in order.
    let operators = workload.operators();
    let job = match operators.as_slice() {
        [one] => serde_json::to_string(one),
        chain => serde_json::to_string(chain),
    }
    .unwrap_or_default();
    // A trace sets each record's input, and `inputs:` how the events split: the join's
    // right-share is not what the job read (the fields keep their order).
    let job = if workload.spec.trace.is_some() || workload.spec.inputs.is_some() {
        without_field(&job, "right-share")
    } else {
        job
    };
    line("job", job);
    if let Some(inputs) = &workload.spec.inputs {
        line("inputs", serde_json::to_string(inputs).unwrap_or_default());
    }
    if let Some(t) = &workload.trace_figures {
        let two_inputs = workload.operator().kind() == "interval-join";
        let inputs = if two_inputs {
            format!(", inputs left {} and right {}", t.inputs[0], t.inputs[1])
        } else {
            String::new()
        };
        let used = t.partitions.iter().filter(|n| **n > 0).count();
        line(
            "trace",
            format!(
                "{} records, {} keys over {}{inputs}, {used} of {} partitions with records",
                t.records,
                t.keys,
                t.span,
                t.partitions.len()
            ),
        );
    }
    let mut more = String::new();
    if s.merges > 0 {
        more.push_str(&format!(", {} merges", s.merges));
    }
    if s.iterator_nexts > 0 {
        more.push_str(&format!(
            ", {} iterator seeks and {} nexts",
            s.iterator_seeks, s.iterator_nexts
        ));
    }
    line(
        "rocksdb ops per event",
        format!(
            "{:.2} ({} gets, {} puts, {} deletes{more}, {} timer batches)",
            s.rocksdb_ops_per_event, s.gets, s.puts, s.deletes, s.batch_writes
        ),
    );
    // A chain: each operator's records and RocksDB operations on its own instance.
    if s.operators.len() > 1 {
        for op in &s.operators {
            line(
                &format!("operator {} ({})", op.index, op.kind),
                format!(
                    "{} records in, {} emitted, {} RocksDB ops ({:.2} per record in)",
                    op.events_in,
                    op.emitted,
                    op.ops.total(),
                    if op.events_in == 0 {
                        0.0
                    } else {
                        op.ops.total() as f64 / op.events_in as f64
                    }
                ),
            );
        }
    }
    let chain = s.operators.len() > 1 || s.state_column_families.iter().any(|c| c.operator > 0);
    for cf in &s.state_column_families {
        let name = if chain {
            format!("op{} state '{}'", cf.operator, cf.name)
        } else {
            format!("state '{}'", cf.name)
        };
        if cf.ops_only {
            let name = if chain {
                format!("op{} '{}'", cf.operator, cf.name)
            } else {
                format!("'{}'", cf.name)
            };
            line(
                &name,
                format!("{} (holds no data)", cf.ops_text(s.records())),
            );
            continue;
        }
        // RocksDB's estimate-num-keys counts a delete against an entry: a state that deletes
        // most of what it writes (timers, TTL) reads ~0 while it holds data.
        let keys = if cf.estimated_keys == 0 && cf.live_sst_bytes + cf.memtable_bytes > 0 {
            "keys not estimated (RocksDB's estimate reads 0: its deletes cancel entries)"
                .to_string()
        } else {
            format!("~{} keys", cf.estimated_keys)
        };
        line(
            &name,
            format!(
                "{}; {} in {} SST files + {} in memtables, {keys}",
                cf.ops_text(s.records()),
                human_bytes(cf.live_sst_bytes as f64),
                cf.sst_files,
                human_bytes(cf.memtable_bytes as f64),
            ),
        );
    }
    line(
        "write stalls",
        format!(
            "{:.1} ms; delays/stops: memtable {}/{}, L0 {}/{}, pending-compaction {}/{}",
            s.stall_micros as f64 / 1000.0,
            s.stall_counts.memtable_limit_delays,
            s.stall_counts.memtable_limit_stops,
            s.stall_counts.l0_file_count_delays,
            s.stall_counts.l0_file_count_stops,
            s.stall_counts.pending_compaction_bytes_delays,
            s.stall_counts.pending_compaction_bytes_stops,
        ),
    );
    // "n/a" when a block type was never looked up (0 % would read as "always missed"); a rate
    // drawn from few lookups says how few.
    let hit = |rate: Option<f64>, accesses: u64| match rate {
        None => "n/a".to_string(),
        Some(r) if accesses < FEW_LOOKUPS => format!("{} of {accesses}", pct(r)),
        Some(r) => pct(r),
    };
    let (r, a) = (&s.cache_hit_rate, &s.cache_accesses);
    line(
        "block cache hit (all/filter/index/data)",
        format!(
            "{} / {} / {} / {}",
            hit(r.overall, a.overall),
            hit(r.filter, a.filter),
            hit(r.index, a.index),
            hit(r.data, a.data)
        ),
    );
    line(
        "filter blocks read per lookup",
        format!(
            "{:.4} ({} per lookup)",
            s.filter_block_reads_per_lookup,
            human_bytes(s.filter_bytes_read_per_lookup)
        ),
    );
    line(
        "index blocks read per lookup",
        format!(
            "{:.4} ({} per lookup)",
            s.index_block_reads_per_lookup,
            human_bytes(s.index_bytes_read_per_lookup)
        ),
    );
    line(
        "bytes read per lookup",
        human_bytes(s.bytes_read_per_lookup),
    );
    line(
        "flushes / compactions",
        if s.wbm_flushes > 0 {
            format!(
                "{} / {} ({} of them forced by the WriteBufferManager, {} of memtable data each)",
                s.flushes,
                s.compactions,
                s.wbm_flushes,
                human_bytes(s.wbm_flush_data_bytes as f64 / s.wbm_flushes as f64)
            )
        } else {
            format!("{} / {}", s.flushes, s.compactions)
        },
    );
    line(
        "L0 files (max) / active levels (max)",
        format!("{} / {}", s.l0_files_max, s.active_levels_max),
    );
    line(
        "write amplification",
        format!(
            "{:.2} (flush {} + compaction {} / user {})",
            s.write_amplification,
            human_bytes(s.flush_bytes_written as f64),
            human_bytes(s.compaction_bytes_written as f64),
            human_bytes(s.user_bytes_written as f64)
        ),
    );
    if s.compaction_filter_drops > 0
        || s.state_column_families
            .iter()
            .any(|c| c.ttl_compaction_filter)
    {
        line(
            "TTL compaction filter",
            format!(
                "{} expired entries dropped in compactions",
                s.compaction_filter_drops
            ),
        );
    }
    line("live SST size", human_bytes(s.live_sst_bytes as f64));
    if s.process_rss_peak_bytes > 0 {
        let memory = if s.rocksdb_memory_unbudgeted {
            format!(
                "process RSS {}; RocksDB {} (every column family's block cache, memtables, table readers) with no budget (memory.mode: unmanaged)",
                human_bytes(s.process_rss_peak_bytes as f64),
                human_bytes(s.rocksdb_memory_max_bytes as f64),
            )
        } else {
            format!(
                "process RSS {}; RocksDB {} (block cache with the memtables charged to it, table readers) of its {} budget",
                human_bytes(s.process_rss_peak_bytes as f64),
                human_bytes(s.rocksdb_memory_max_bytes as f64),
                human_bytes(s.rocksdb_memory_budget_bytes as f64)
            )
        };
        line("memory (peak)", memory);
    }
    if let Some(p) = &s.preload {
        line(
            "preloaded state",
            format!(
                "{} records of history: {} in {} entries, {} in {} SST files at {} ({} in {:.1} s; cloned in {:.2} s; oracle fed in {:.1} s)",
                p.records,
                human_bytes(p.state_bytes as f64),
                p.entries,
                human_bytes(p.file_bytes as f64),
                p.files,
                p.placement(),
                p.origin(),
                p.build_secs,
                p.clone_secs,
                p.oracle_secs
            ),
        );
        line(
            "block cache at the start",
            if p.warmed_records > 0 {
                format!(
                    "warm: the keys of the history's last {} records looked up again ({} lookups in {:.1} s, not counted in the run's figures), as a job that has run for days holds it",
                    p.warmed_records, p.warm_lookups, p.warm_secs
                )
            } else {
                "cold, as after a restore (--preload ...,warm: as a job that has run for days)"
                    .to_string()
            },
        );
    }
    for job in &s.jobs {
        line(
            &format!("{} job", job.phase.name()),
            format!(
                "group '{}', {} records read from {}{}{}{}",
                job.group,
                job.records_read,
                job.started_from,
                match (job.records_before, job.records_replayed) {
                    (0, 0) => String::new(),
                    (0, again) => format!(" ({again} of them replayed after a restore)"),
                    (before, again) => format!(
                        " at offsets {:?} ({before} records in the restored state; {again} of those read here replayed)",
                        job.start
                    ),
                },
                match (job.records_skipped, job.restored) {
                    (0, _) => String::new(),
                    (n, true) => format!(", {n} earlier records not replayed (restored state)"),
                    (n, false) => format!(", SKIPPED {n} it should have read"),
                },
                if job.committed { ", committed" } else { "" }
            ),
        );
    }
    line(
        "serving store writes",
        format!(
            "{} ({}, {} round trips, {:.1} ms waiting)",
            s.sink.writes,
            human_bytes(s.sink.bytes as f64),
            s.sink.flushes,
            s.sink.round_trip_micros as f64 / 1000.0
        ),
    );
    let e = &s.result_error;
    let sampled = match s.preload.as_ref().map_or(1, |p| p.check_sample) {
        n if n > 1 => format!(" (the keys of 1 in {n}: a deterministic sample, docs/preload.md)"),
        _ => String::new(),
    };
    line(
        "result error (sink vs oracle)",
        if !s.result_error_applies {
            "n/a: the run did not start from empty state or never wrote its results".to_string()
        } else if e.is_exact() {
            format!("none: {} counts exact{sampled}", e.compared)
        } else {
            format!(
                "{} over, {} under, {} missing of {}; max |error| {}{sampled}",
                e.over, e.under, e.missing, e.compared, e.max_abs
            )
        },
    );
    if let (Some(e), true) = (&s.end_of_input_error, s.result_error_applies) {
        line(
            "vs end-of-input truth",
            if e.is_exact() {
                "exact: every window expired in the store".to_string()
            } else {
                format!(
                    "{} counts left over (max {}): the final watermark did not get through",
                    e.over + e.under,
                    e.max_abs
                )
            },
        );
    }
    if let Some(c) = &s.checkpoints {
        for (label, value) in c.lines() {
            line(&label, value);
        }
    }
    if let Some(path) = &segment.rocksdb_options_file {
        line("RocksDB OPTIONS file", path.clone());
    }
    if let Some(cpu) = &s.cpu {
        for (label, value) in crate::profiler::summary_lines(cpu) {
            line(&label, value);
        }
    }
    if let Some(card) = &segment.scorecard {
        out.push_str(&scorecard::render(&[("this run", card)]));
    }
    out.push_str(&render_findings(&segment.findings));
    out
}

/// Two segments side by side (A/B): the numbers that tell profiles apart, with B / A.
pub fn render_comparison(a: &Segment, b: &Segment) -> String {
    let (x, y) = (&a.summary, &b.summary);
    let mut out = format!("  A: {}\n  B: {}\n", a.label, b.label);
    if let (Some(ca), Some(cb)) = (&a.scorecard, &b.scorecard) {
        out.push_str(&scorecard::render(&[("A", ca), ("B", cb)]));
    }
    if x.events != y.events {
        // Quit mid-run: the scheduler keeps the sides within a slice of each other, but not
        // at the same event.
        out.push_str(&format!(
            "  note: A read {} events, B {}: totals differ for that alone (the TUI's A/B view compares both at the same events)\n",
            x.events, y.events
        ));
    }
    out.push_str(&format!(
        "  {:<32} {:>16} {:>16} {:>8}\n",
        "A/B (running time only)", "A", "B", "B / A"
    ));
    let mut row = |label: &str, va: f64, vb: f64, show: &dyn Fn(f64) -> String| {
        let ratio = if va.is_nan() || vb.is_nan() {
            "-".to_string()
        } else if va != 0.0 {
            format!("{:.2}", vb / va)
        } else if vb == 0.0 {
            "1.00".to_string()
        } else {
            "-".to_string()
        };
        out.push_str(&format!(
            "  {label:<32} {:>16} {:>16} {ratio:>8}\n",
            show(va),
            show(vb)
        ));
    };
    let count = |v: f64| format!("{v:.0}");
    let us = |v: f64| format!("{v:.1} µs");
    row("events", x.events as f64, y.events as f64, &count);
    row(
        "throughput (events/s)",
        x.events_per_sec,
        y.events_per_sec,
        &count,
    );
    row(
        "event latency p99",
        x.p99_event_latency_us,
        y.p99_event_latency_us,
        &us,
    );
    row(
        "state get p99",
        x.p99_get_latency_us,
        y.p99_get_latency_us,
        &us,
    );
    row(
        "state put p99",
        x.p99_put_latency_us,
        y.p99_put_latency_us,
        &us,
    );
    row(
        "write stalls (ms)",
        x.stall_micros as f64 / 1000.0,
        y.stall_micros as f64 / 1000.0,
        &|v| format!("{v:.1}"),
    );
    row("flushes", x.flushes as f64, y.flushes as f64, &count);
    row(
        "compactions",
        x.compactions as f64,
        y.compactions as f64,
        &count,
    );
    row(
        "L0 files (max)",
        x.l0_files_max as f64,
        y.l0_files_max as f64,
        &count,
    );
    row(
        "write amplification",
        x.write_amplification,
        y.write_amplification,
        &|v| format!("{v:.2}"),
    );
    row(
        "filter bytes read per lookup",
        x.filter_bytes_read_per_lookup,
        y.filter_bytes_read_per_lookup,
        &human_bytes,
    );
    let hit = |v: f64| {
        if v.is_nan() {
            "n/a".to_string()
        } else {
            pct(v)
        }
    };
    row(
        "block cache hit",
        x.cache_hit_rate.overall.unwrap_or(f64::NAN),
        y.cache_hit_rate.overall.unwrap_or(f64::NAN),
        &hit,
    );
    // A rate drawn from few lookups says how few.
    let (la, lb) = (x.cache_accesses.overall, y.cache_accesses.overall);
    if la < FEW_LOOKUPS || lb < FEW_LOOKUPS {
        row("block cache lookups", la as f64, lb as f64, &count);
    }
    row(
        "result errors (counts off)",
        (x.result_error.over + x.result_error.under + x.result_error.missing) as f64,
        (y.result_error.over + y.result_error.under + y.result_error.missing) as f64,
        &count,
    );
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_field_leaves_the_job_line_with_its_comma_the_others_in_their_order() {
        let job = r#"{"kind":"interval-join","lower":"-2m","right-share":0.25,"upper":"10m"}"#;
        assert_eq!(
            super::without_field(job, "right-share"),
            r#"{"kind":"interval-join","lower":"-2m","upper":"10m"}"#
        );
        assert_eq!(
            super::without_field(r#"{"right-share":0.5,"kind":"x"}"#, "right-share"),
            r#"{"kind":"x"}"#
        );
        assert_eq!(
            super::without_field(r#"{"kind":"x"}"#, "right-share"),
            r#"{"kind":"x"}"#
        );
    }
}
