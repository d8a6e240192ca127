//! What only a LOG shows, as the advisor's findings (same ids, same fixes): flushes the
//! WriteBufferManager forced long before the memtables filled (case study 1), whole-file filters
//! a cache miss reads whole (case study 2), and the write stalls and stops RocksDB announced.

use super::{Instance, NativeMetrics};
use crate::advisor::rules::wbm_budget;
use crate::advisor::{Change, Evidence, Finding, Severity};
use crate::config::Profile;
use crate::config::profile::Derived;
use crate::config::units::human_bytes;

/// A flush storm: at least this many flushes, most of them the WriteBufferManager's ...
const MIN_FLUSHES: usize = 10;
/// ... of memtables holding less than this share of the write buffer (the median).
const SMALL: f64 = 0.25;
/// A whole-file filter at least this big is a finding (16 data blocks of 4 KiB read per miss);
/// at a MiB with direct reads (no page cache behind the block cache) a critical one.
const FILTER_BYTES: u64 = 64 << 10;
const CRITICAL_FILTER_BYTES: u64 = 1 << 20;

/// `operators`: the instances (operators) sharing the slot judged, None if not known.
pub(super) fn check(
    instances: &[Instance],
    profile: &Profile,
    (d, operators): (&Derived, Option<usize>),
    memory_from_config: bool,
    metrics: Option<&NativeMetrics>,
) -> Vec<Finding> {
    let mut out = Vec::new();
    out.extend(flush_storm(
        instances,
        profile,
        (d, operators),
        memory_from_config,
        metrics,
    ));
    out.extend(whole_filters(instances, profile, metrics));
    out.extend(stalls(instances, &out));
    out
}

fn median(mut v: Vec<u64>) -> u64 {
    v.sort_unstable();
    v.get(v.len() / 2).copied().unwrap_or(0)
}

fn stops_and_stalls(instances: &[Instance], matching: &str) -> (u64, u64) {
    let count = |m: &std::collections::BTreeMap<String, u64>| {
        m.iter()
            .filter(|(cause, _)| cause.contains(matching))
            .map(|(_, n)| n)
            .sum::<u64>()
    };
    (
        instances.iter().map(|i| count(&i.log.stops)).sum(),
        instances.iter().map(|i| count(&i.log.stalls)).sum(),
    )
}

fn flush_storm(
    instances: &[Instance],
    profile: &Profile,
    (d, operators): (&Derived, Option<usize>),
    memory_from_config: bool,
    metrics: Option<&NativeMetrics>,
) -> Option<Finding> {
    if !d.shared {
        return None;
    }
    let flushes: Vec<_> = instances.iter().flat_map(|i| &i.log.flushes).collect();
    let by_wbm: Vec<u64> = flushes
        .iter()
        .filter(|f| f.reason.contains("Write Buffer Manager"))
        .map(|f| f.data_bytes)
        .collect();
    let buffer = profile.knobs.write_buffer_size.0;
    if by_wbm.len() < MIN_FLUSHES || by_wbm.len() * 2 < flushes.len() {
        return None;
    }
    let typical = median(by_wbm.clone());
    if typical as f64 >= SMALL * buffer as f64 {
        return None;
    }
    let (stops, stalls) = stops_and_stalls(instances, "memtable");
    let stall_micros = metrics.and_then(|m| m.sum("stall_micros"));
    let (main, alternatives) = wbm_budget::recommended(profile, d, operators)?;
    let severity = if stops > 0 {
        Severity::Critical
    } else if stalls > 0 || stall_micros.is_some_and(|s| s > 0.0) {
        Severity::Warning
    } else {
        Severity::Info
    };
    Some(Finding {
        id: "wbm-budget",
        severity,
        diagnosis: format!(
            "{} of {} flushes were the WriteBufferManager's, of memtables holding {} (the median) of a {} write buffer: its budget ({} for {} column families, about {} each) forces flushes long before memtables fill{}.",
            by_wbm.len(),
            flushes.len(),
            human_bytes(typical as f64),
            human_bytes(buffer as f64),
            human_bytes(d.write_buffer_manager_capacity as f64),
            d.state_column_families,
            human_bytes(d.write_buffer_budget_per_column_family as f64),
            if stops > 0 {
                ", and writes stopped behind them (case study 1)"
            } else {
                ""
            }
        ),
        evidence: vec![
            Evidence::new(
                "flushes by the WriteBufferManager (LOG flush_reason)",
                format!("{} of {}", by_wbm.len(), flushes.len()),
                format!("< {MIN_FLUSHES}, or under half"),
            ),
            Evidence::new(
                "memtable data per such flush (median of total_data_size)",
                human_bytes(typical as f64),
                format!(">= {} ({:.0} % of writebuffer.size)", human_bytes(SMALL * buffer as f64), SMALL * 100.0),
            ),
            Evidence::new("write stops on memtables (LOG lines)", stops, "0"),
            Evidence::new("write stalls on memtables (LOG lines)", stalls, "0"),
        ]
        .into_iter()
        .chain(stall_micros.map(|s| {
            Evidence::new(
                "write stall time (Flink's native metric stall-micros)",
                format!("{:.1} s", s / 1e6),
                "0",
            )
        }))
        .collect(),
        from_secs: 0.0,
        to_secs: instances.iter().map(|i| i.log.span_secs).fold(0.0, f64::max),
        recommendation: main.changes,
        memory_cost: main.memory_cost,
        job_changes: Vec::new(),
        effect: Some(main.effect),
        alternatives,
        note: (!memory_from_config).then(|| {
            "the budget per column family assumes memory.write-buffer-ratio 0.5 (the LOG does not say it): check it in the job's configuration, or put its config.yaml beside the evidence".to_string()
        }),
        cost: None,
        overruled: Vec::new(),
    })
}

fn whole_filters(
    instances: &[Instance],
    profile: &Profile,
    metrics: Option<&NativeMetrics>,
) -> Option<Finding> {
    let k = &profile.knobs;
    if !k.use_bloom_filter || k.partitions_index_filters() || !k.memory_mode.is_shared() {
        return None;
    }
    let biggest = instances
        .iter()
        .filter_map(|i| i.log.biggest_file.as_ref())
        .filter(|f| f.index_partitions <= 1)
        .max_by_key(|f| f.filter_bytes)?;
    if biggest.filter_bytes < FILTER_BYTES {
        return None;
    }
    let direct = k.use_direct_reads;
    let severity = if direct && biggest.filter_bytes >= CRITICAL_FILTER_BYTES {
        Severity::Critical
    } else {
        Severity::Warning
    };
    Some(Finding {
        id: "filter-reads",
        severity,
        diagnosis: format!(
            "SST files carry whole-file bloom filters of up to {} ({} keys in one file of {}), in the block cache with index and data blocks: each lookup that misses the cache for it reads all of it{}. Partitioned index and filters read one small partition instead (case study 2).",
            human_bytes(biggest.filter_bytes as f64),
            biggest.entries,
            human_bytes(biggest.size as f64),
            if direct {
                ", and with direct reads no page cache catches the read"
            } else {
                ""
            }
        ),
        evidence: vec![
            Evidence::new(
                "the biggest filter block (LOG table_file_creation filter_size)",
                human_bytes(biggest.filter_bytes as f64),
                format!("< {}", human_bytes(FILTER_BYTES as f64)),
            ),
            Evidence::new("partitioned index and filters (OPTIONS)", "false", "true"),
            Evidence::new("direct reads (OPTIONS use_direct_reads)", direct, "false"),
        ]
        .into_iter()
        .chain(metrics.and_then(NativeMetrics::cache_hit_rate).map(|(rate, hit, miss)| {
            Evidence::new(
                "block cache hit rate, all blocks together (Flink's native metrics)",
                format!("{:.1} % ({hit:.0} hits, {miss:.0} misses)", rate * 100.0),
                "-",
            )
        }))
        .collect(),
        from_secs: 0.0,
        to_secs: instances.iter().map(|i| i.log.span_secs).fold(0.0, f64::max),
        recommendation: vec![Change::new("memory.partitioned-index-filters", true)],
        memory_cost: 0,
        job_changes: Vec::new(),
        effect: None,
        alternatives: Vec::new(),
        note: Some(
            "a LOG shows the filters' sizes, not how often lookups miss the cache for them; Flink's native metrics count all blocks' hits and misses together (state.backend.rocksdb.metrics.block-cache-hit, state.backend.rocksdb.metrics.block-cache-miss), and a run here (`statebench reproduce filter-reads`) measures the filter's own".to_string(),
        ),
        cost: None,
        overruled: Vec::new(),
    })
}

/// Stalls and stops no other finding explains: by cause.
fn stalls(instances: &[Instance], found: &[Finding]) -> Option<Finding> {
    let explained = found.iter().any(|f| f.id == "wbm-budget");
    let mut causes: std::collections::BTreeMap<String, (u64, u64)> = Default::default();
    for inst in instances {
        for (cause, n) in &inst.log.stops {
            causes.entry(cause.clone()).or_default().0 += n;
        }
        for (cause, n) in &inst.log.stalls {
            causes.entry(cause.clone()).or_default().1 += n;
        }
    }
    causes.retain(|cause, _| !(explained && cause.contains("memtable")));
    if causes.is_empty() {
        return None;
    }
    let stops: u64 = causes.values().map(|c| c.0).sum();
    Some(Finding {
        id: "write-stalls",
        severity: if stops > 0 {
            Severity::Critical
        } else {
            Severity::Warning
        },
        diagnosis: format!(
            "RocksDB slowed or stopped writes: {}.",
            causes
                .iter()
                .map(|(c, (stop, stall))| format!("{c} ({stop} stops, {stall} slowdowns)"))
                .collect::<Vec<_>>()
                .join("; ")
        ),
        evidence: causes
            .iter()
            .map(|(c, (stop, stall))| Evidence::new(&format!("stops / slowdowns: {c}"), format!("{stop} / {stall}"), "0"))
            .collect(),
        from_secs: 0.0,
        to_secs: instances.iter().map(|i| i.log.span_secs).fold(0.0, f64::max),
        recommendation: Vec::new(),
        memory_cost: 0,
        job_changes: Vec::new(),
        effect: None,
        alternatives: Vec::new(),
        note: Some("level-0 files: compactions fall behind (more thread.num, bigger or fewer flushes); pending compaction bytes: the same, or the limits".to_string()),
        cost: None,
        overruled: Vec::new(),
    })
}

/// A running job seen through Flink's REST API alone (`diagnose URL`): no LOG says why it
/// flushed, but a WriteBufferManager budget per column family below the write buffer (its
/// configuration) and write stall time or stopped writes (its native metrics) are the flush
/// storm of case study 1 as far as metrics can show it.
/// `operators`: the job's operators with RocksDB metrics (they may share a slot).
pub(super) fn stalls_under_a_short_budget(
    profile: &Profile,
    d: &Derived,
    metrics: &NativeMetrics,
    operators: Option<usize>,
) -> Option<Finding> {
    let buffer = profile.knobs.write_buffer_size.0;
    if !d.shared || d.write_buffer_budget_per_column_family >= buffer {
        return None;
    }
    let stall_micros = metrics.sum("stall_micros").unwrap_or(0.0);
    let stopped = metrics.sum("is_write_stopped").unwrap_or(0.0);
    if stall_micros <= 0.0 && stopped <= 0.0 {
        return None;
    }
    let (main, alternatives) = wbm_budget::recommended(profile, d, operators)?;
    let k = &profile.knobs;
    // Flink's gauges are now, the stall time is since the start: a compaction-side cause
    // (too many L0 files, too many pending compaction bytes) may show now or may have passed.
    let l0 = metrics.max_of_one("num_files_at_level0");
    let pending = metrics.max_of_one("estimate_pending_compaction_bytes");
    let immutable = metrics.max_of_one("num_immutable_mem_table");
    // A soft limit of 0 is RocksDB's "no limit".
    let soft = k.soft_pending_compaction_bytes_limit.0;
    let compaction_behind = l0.is_some_and(|n| n >= f64::from(k.level0_slowdown_writes_trigger))
        || pending.is_some_and(|b| soft > 0 && b >= soft as f64);
    let cause = if compaction_behind {
        format!(
            "That is consistent with a flush storm (case study 1), but compaction is behind too (L0 files {}, slowdown at {}; pending compaction bytes {}), which stalls writes by itself: the job's RocksDB LOG says which stalled them (\"Stalling writes because ...\", diagnose DIR).",
            l0.map_or("-".to_string(), |n| format!("{n:.0}")),
            k.level0_slowdown_writes_trigger,
            pending.map_or("-".to_string(), human_bytes),
        )
    } else {
        let seen = match (l0, pending) {
            (None, None) => "Flink's metrics here show neither L0 files nor pending compaction bytes (enable num-files-at-level and estimate-pending-compaction-bytes to rule compaction out)".to_string(),
            (Some(_), None) => "no compaction-side cause shows now in L0 (its files under the slowdown trigger; pending compaction bytes are not reported)".to_string(),
            (None, Some(_)) => "no compaction-side cause shows now in pending compaction bytes (under the soft limit; L0 files are not reported)".to_string(),
            (Some(_), Some(_)) => "no compaction-side cause shows now (L0 files and pending compaction bytes under their limits)".to_string(),
        };
        format!(
            "That is consistent with the flush storm of case study 1: forced flushes before memtables fill; {seen}. Flink's metrics do not say why each flush happened or why writes stalled; the job's RocksDB LOG does (diagnose DIR)."
        )
    };
    let mut evidence = vec![
        Evidence::new(
            "WBM budget per column family (the cluster's configuration)",
            human_bytes(d.write_buffer_budget_per_column_family as f64),
            format!(">= writebuffer.size {}", human_bytes(buffer as f64)),
        ),
        Evidence::new(
            "write stall time (Flink's native metric stall-micros)",
            format!("{:.1} s", stall_micros / 1e6),
            "0",
        ),
        Evidence::new(
            "writes stopped now (is-write-stopped, summed over subtasks and column families)",
            format!("{stopped:.0}"),
            "0",
        ),
    ];
    if let Some(n) = immutable {
        evidence.push(Evidence::new(
            "immutable memtables now (num-immutable-mem-table, the most of one column family)",
            format!("{n:.0}"),
            // RocksDB stops writes when the immutable memtables reach writebuffer.count.
            format!(
                "< writebuffer.count {} (writes stop at it)",
                k.max_write_buffer_number
            ),
        ));
    }
    if let Some(n) = l0 {
        evidence.push(Evidence::new(
            "L0 files now (num-files-at-level0, the most of one column family)",
            format!("{n:.0}"),
            format!(
                "< {}, the slowdown trigger",
                k.level0_slowdown_writes_trigger
            ),
        ));
    }
    Some(Finding {
        id: "wbm-budget",
        // Stopped writes are critical whatever else stopped them; a flush storm's many small
        // L0 files can themselves reach the slowdown trigger.
        severity: if stopped > 0.0 {
            Severity::Critical
        } else {
            Severity::Warning
        },
        diagnosis: format!(
            "The WriteBufferManager gives each of the {} state column families about {} of memtable memory, less than writebuffer.size {}, and writes stalled. {cause}",
            d.state_column_families,
            human_bytes(d.write_buffer_budget_per_column_family as f64),
            human_bytes(buffer as f64)
        ),
        evidence,
        from_secs: 0.0,
        to_secs: 0.0,
        recommendation: main.changes,
        memory_cost: main.memory_cost,
        job_changes: Vec::new(),
        effect: Some(main.effect),
        alternatives,
        note: None,
        cost: None,
        overruled: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_stall_time_a_short_budget_alone_is_no_finding() {
        // flink-default: 28.4 MiB of WriteBufferManager per state against 64 MiB buffers.
        let p = Profile::load("flink-default").unwrap();
        let d = p.derived(3);
        assert!(d.write_buffer_budget_per_column_family < p.knobs.write_buffer_size.0);
        assert!(stalls_under_a_short_budget(&p, &d, &NativeMetrics::default(), None).is_none());
    }

    #[test]
    fn stalls_with_compaction_behind_are_not_blamed_on_the_budget_alone() {
        let p = Profile::load("minutes-wbm-starved").unwrap();
        let d = p.derived(3);
        let scrape = |l0: u32| {
            let mut m = NativeMetrics::default();
            m.add(&format!(
                "flink_taskmanager_job_task_operator_rocksdb_stall_micros{{subtask_index=\"0\"}} 2000000\n\
                 flink_taskmanager_job_task_operator_column_family_rocksdb_is_write_stopped{{column_family=\"s\",subtask_index=\"0\"}} 1\n\
                 flink_taskmanager_job_task_operator_column_family_rocksdb_num_files_at_level0{{column_family=\"s\",subtask_index=\"0\"}} {l0}\n\
                 flink_taskmanager_job_task_operator_column_family_rocksdb_num_files_at_level0{{column_family=\"s\",subtask_index=\"1\"}} 4\n"
            ));
            stalls_under_a_short_budget(&p, &d, &m, Some(1)).unwrap()
        };
        let storm = scrape(3);
        assert_eq!(storm.severity, Severity::Critical);
        assert!(
            storm.diagnosis.contains("consistent with the flush storm"),
            "{}",
            storm.diagnosis
        );
        // One subtask's L0 at the slowdown trigger (the sum over subtasks would not count):
        // still critical while writes are stopped, but not blamed on the budget alone.
        let behind = scrape(p.knobs.level0_slowdown_writes_trigger);
        assert_eq!(behind.severity, Severity::Critical);
        assert!(
            behind.diagnosis.contains("compaction is behind too"),
            "{}",
            behind.diagnosis
        );
        let l0 = behind
            .evidence
            .iter()
            .find(|e| e.metric.contains("L0 files"))
            .unwrap();
        assert_eq!(l0.value, p.knobs.level0_slowdown_writes_trigger.to_string());
    }
}
