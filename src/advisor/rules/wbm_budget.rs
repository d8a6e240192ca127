//! WriteBufferManager budget per column family below `writebuffer.size`: the WBM, not the
//! buffer size, decides when memtables flush — forced small flushes (case study 1).

use super::Rule;
use crate::advisor::{Change, Evidence, Finding, Input, Severity};
use crate::config::units::human_bytes;

pub const RULE: Rule = Rule {
    id: "wbm-budget",
    looks_for: "WBM budget per column family below writebuffer.size, and the WBM full while memtables stay small",
    check,
};

/// The WBM counts as full from this share of its capacity (it flushes at 7/8).
const FULL: f64 = 0.8;
/// Memtables this far under the write buffer were cut short.
const SMALL: f64 = 0.5;

fn check(input: &Input) -> Option<Finding> {
    let k = &input.profile.knobs;
    let d = input.derived;
    let buffer = k.write_buffer_size.0;
    if d.write_buffer_budget_per_column_family >= buffer {
        return None;
    }
    // The run shows it: the WBM sits near its capacity while each state's memtables stay far
    // below the buffer (a state too small to fill its budget is not held back by it).
    let cfs = d.state_column_families.max(1) as f64;
    let (from, to, samples) = input.when(|s| {
        let m = &s.rocksdb.memory;
        m.wbm_capacity > 0
            && m.wbm_usage as f64 >= FULL * m.wbm_capacity as f64
            && (m.memtable_bytes as f64 / cfs) < SMALL * buffer as f64
    })?;
    let memory = d.full_buffer_managed_memory;
    let stalled = input.summary.stall_micros > 0;
    Some(Finding {
        id: RULE.id,
        severity: if stalled {
            Severity::Critical
        } else {
            Severity::Warning
        },
        diagnosis: format!(
            "The WriteBufferManager gives each of the {} state column families about {} of memtable memory, less than writebuffer.size {}: it forces flushes before memtables fill, so RocksDB writes many small L0 files{}.",
            d.state_column_families,
            human_bytes(d.write_buffer_budget_per_column_family as f64),
            human_bytes(buffer as f64),
            if stalled {
                " and writes stall behind them"
            } else {
                ""
            }
        ),
        evidence: vec![
            Evidence::new(
                "WBM budget per column family",
                human_bytes(d.write_buffer_budget_per_column_family as f64),
                format!(">= writebuffer.size {}", human_bytes(buffer as f64)),
            ),
            Evidence::new(
                "samples with the WBM >= 80 % full and memtables < half a buffer",
                format!("{samples} of {}", input.snapshots.len()),
                "0",
            ),
            Evidence::new("flushes", input.summary.flushes, "-"),
            Evidence::new(
                "write stalls",
                format!("{:.1} ms", input.summary.stall_micros as f64 / 1000.0),
                "0",
            ),
        ],
        from_secs: from,
        to_secs: to,
        recommendation: vec![Change::new(
            "memory.managed-size",
            crate::config::ByteSize(memory),
        )],
        memory_cost: memory.saturating_sub(k.managed_memory.0),
        job_changes: Vec::new(),
        note: None,
    })
}

#[cfg(test)]
mod tests {
    use crate::advisor::testing::{Run, profile};

    fn run(profile_name: &str, wbm_full: f64, memtables: u64) -> Run {
        let p = profile(profile_name, &[]);
        let d = p.derived(3);
        Run::new(
            p,
            10,
            |_, s| {
                let m = &mut s.rocksdb.memory;
                m.wbm_capacity = d.write_buffer_manager_capacity;
                m.wbm_usage = (wbm_full * d.write_buffer_manager_capacity as f64) as u64;
                m.memtable_bytes = memtables;
            },
            |s| {
                s.flushes = 1_500;
                s.stall_micros = 76_000_000;
            },
        )
    }

    #[test]
    fn a_starved_wbm_full_of_small_memtables_is_found_with_the_memory_that_fixes_it() {
        // minutes-wbm-starved: 1 MiB per state against a 4 MiB buffer.
        let found = run("minutes-wbm-starved", 0.9, 3 * (600 << 10)).findings("wbm-budget");
        assert_eq!(found.len(), 1);
        let f = &found[0];
        assert_eq!(f.severity, crate::advisor::Severity::Critical);
        // 2 * M * 0.25 / 3 >= 3 * 4 MiB -> M = 72 MiB: 54 MiB more than the profile's 18.
        assert_eq!(f.recommendation[0].key, "memory.managed-size");
        assert_eq!(f.recommendation[0].value, "72mb");
        assert_eq!(f.memory_cost, 54 << 20);
        assert_eq!((f.from_secs, f.to_secs), (1.0, 10.0));
    }

    #[test]
    fn no_finding_when_the_wbm_is_not_what_holds_memtables_back() {
        // The budget is short but the WBM sits at 70 % (under 80 %): the state is too small.
        assert!(
            run("minutes-wbm-starved", 0.7, 3 * (600 << 10))
                .findings("wbm-budget")
                .is_empty()
        );
        // Memtables already hold half a buffer each.
        assert!(
            run("minutes-wbm-starved", 0.9, 3 * (2 << 20))
                .findings("wbm-budget")
                .is_empty()
        );
        // minutes-wbm-sized: 4.7 MiB per state covers the 4 MiB buffer.
        assert!(
            run("minutes-wbm-sized", 0.9, 3 * (600 << 10))
                .findings("wbm-budget")
                .is_empty()
        );
    }
}
