//! WriteBufferManager budget per column family below `writebuffer.size`: the WBM, not the
//! buffer size, decides when memtables flush — forced small flushes (case study 1).

use super::Rule;
use crate::advisor::{Change, Evidence, Finding, Fix, Input, Severity};
use crate::config::profile::Derived;
use crate::config::units::human_bytes;
use crate::config::{ByteSize, Profile};

pub const RULE: Rule = Rule {
    id: "wbm-budget",
    looks_for: "WBM budget per column family below writebuffer.size, and the WBM full while memtables stay small",
    check,
};

/// The WBM counts as full from this share of its capacity (it flushes at 7/8).
const FULL: f64 = 0.8;
/// Memtables this far under the write buffer were cut short.
const SMALL: f64 = 0.5;
/// The run's flush counts show it (whatever the samples caught): at least this many flushes
/// forced by the WriteBufferManager, at least half of all, each of less memtable data than
/// this share of the write buffer on average (`diagnose` judges a LOG's flushes alike).
const MIN_FORCED: u64 = 10;
const FORCED_SMALL: f64 = 0.25;

fn check(input: &Input) -> Option<Finding> {
    let k = &input.profile.knobs;
    let d = input.derived;
    let buffer = k.write_buffer_size.0;
    if d.write_buffer_budget_per_column_family >= buffer {
        return None;
    }
    // The run shows it: the WBM sits near its capacity while each state's memtables stay far
    // below the buffer (a state too small to fill its budget is not held back by it).
    // Or its flushes do, which no sampling can miss: a short run's few samples may all fall
    // just after a flush.
    let cfs = d.state_column_families.max(1) as f64;
    let seen = input.when(|s| {
        let m = &s.rocksdb.memory;
        m.wbm_capacity > 0
            && m.wbm_usage as f64 >= FULL * m.wbm_capacity as f64
            && (m.memtable_bytes as f64 / cfs) < SMALL * buffer as f64
    });
    let s = input.summary;
    let forced_data = s.wbm_flush_data_bytes as f64 / s.wbm_flushes.max(1) as f64;
    let forced = s.wbm_flushes >= MIN_FORCED
        && 2 * s.wbm_flushes >= s.flushes
        && forced_data < FORCED_SMALL * buffer as f64;
    let (from, to, samples) = match seen {
        Some(seen) => seen,
        None if forced => {
            let (from, to) = input.whole_run();
            (from, to, 0)
        }
        None => return None,
    };
    // Harm measured: writes stalled or stopped. Forced small flushes that stall nothing cost
    // I/O the run did not feel: worth knowing, not worth memory.
    let stalled = s.stall_micros > 0 || s.write_stopped_samples > 0;
    let running_micros = s.processing_secs * 1e6;
    let share = if running_micros > 0.0 {
        s.stall_micros as f64 / running_micros
    } else {
        0.0
    };
    let severity = if !stalled {
        Severity::Info
    } else if share >= CRITICAL_SHARE || s.write_stopped_samples > 0 {
        Severity::Critical
    } else {
        Severity::Warning
    };
    // A chain's operators may share the slot; one operator's states cannot be split.
    let operators = (!s.job.is_empty()).then_some(s.job.len());
    let (main, fixes) = recommended(input.profile, d, operators)?;
    Some(Finding {
        id: RULE.id,
        severity,
        diagnosis: format!(
            "The WriteBufferManager gives each of the {} state column families about {} of memtable memory, less than writebuffer.size {}: it forces flushes before memtables fill, so RocksDB writes many small L0 files{}.",
            d.state_column_families,
            human_bytes(d.write_buffer_budget_per_column_family as f64),
            human_bytes(buffer as f64),
            if stalled {
                " and writes stall behind them"
            } else {
                "; no write stalled in this run, so nothing measured is hurt by it yet"
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
            // Reports written before the flushes forced were counted have none.
            if s.wbm_flushes > 0 {
                Evidence::new(
                    "flushes forced by the WriteBufferManager",
                    format!(
                        "{} of {}, {} of memtable data each (mean)",
                        s.wbm_flushes,
                        s.flushes,
                        human_bytes(forced_data)
                    ),
                    format!(
                        "< {MIN_FORCED}, under half, or >= {} each",
                        human_bytes(FORCED_SMALL * buffer as f64)
                    ),
                )
            } else {
                Evidence::new("flushes", s.flushes, "-")
            },
            Evidence::new(
                "write stalls",
                format!("{:.1} ms", s.stall_micros as f64 / 1000.0),
                "0",
            ),
        ],
        from_secs: from,
        to_secs: to,
        recommendation: main.changes,
        memory_cost: main.memory_cost,
        job_changes: Vec::new(),
        note: None,
        effect: Some(main.effect),
        alternatives: fixes,
        cost: None,
        overruled: Vec::new(),
    })
}

/// The fixes for `profile`'s WriteBufferManager budget below its write buffer, the one to try
/// first apart (`diagnose` proposes them on a LOG's evidence).
/// `operators`: the stateful operators whose states share the slot (None: not known); with
/// one, fewer states per slot is no fix (one operator's states cannot be split).
pub fn recommended(
    profile: &Profile,
    d: &Derived,
    operators: Option<usize>,
) -> Option<(Fix, Vec<Fix>)> {
    let mut all = fixes(profile, d, operators);
    let first = all.iter().position(|f| !f.changes.is_empty())?;
    let main = all.remove(first);
    Some((main, all))
}

/// Stall time from this share of the running time makes the finding critical.
const CRITICAL_SHARE: f64 = 0.01;

/// The largest write-buffer ratio the fixes propose: the memtables (charged to the block
/// cache) and the high-priority pool keep at most half of the cache, so data blocks keep the
/// other half. With Flink's high-priority pool of 0.1 that is Flink's default ratio, 0.5.
fn ratio_cap(high_prio_pool_ratio: f64) -> f64 {
    // 2r / (3 - r) + hp <= 1/2  <=>  r <= 3 (1/2 - hp) / (5/2 - hp).
    let cap = 3.0 * (0.5 - high_prio_pool_ratio) / (2.5 - high_prio_pool_ratio);
    (cap * 100.0 + 1e-9).floor() / 100.0
}

/// A write buffer that fits `budget`: rounded down to a MiB (to 64 KiB under a MiB).
fn buffer_within(budget: u64) -> u64 {
    let unit = if budget >= 1 << 20 { 1 << 20 } else { 64 << 10 };
    budget / unit * unit
}

/// Every fix for a WBM budget per column family below the write buffer, in the order to try
/// them: a larger write-buffer ratio (no memory), a smaller write buffer (no memory, with the
/// ratio raised as far as the cache allows first), fewer states per slot (the job), more
/// managed memory. Each with its predicted effect from Flink's formulas (WBM = 2·M·r/3,
/// cache = (3−r)·M/3, per column family = WBM / states).
fn fixes(profile: &Profile, d: &Derived, operators: Option<usize>) -> Vec<Fix> {
    let k = &profile.knobs;
    let (m, r, n) = (
        k.managed_memory.0 as f64,
        k.write_buffer_ratio,
        d.state_column_families.max(1) as u64,
    );
    let size = k.write_buffer_size.0;
    let wbm = |m: f64, r: f64| (2.0 * m * r / 3.0) as u64;
    let cache = |m: f64, r: f64| ((3.0 - r) * m / 3.0) as u64;
    let h = |b: u64| human_bytes(b as f64);
    let mut fixes = Vec::new();
    let cap = ratio_cap(k.high_prio_pool_ratio);
    // The ratio that gives every state a full buffer at this memory.
    let needed = ((3.0 * (n * size) as f64 / (2.0 * m)) * 100.0).ceil() / 100.0;
    let raised = if needed <= cap && needed > r {
        Some(needed)
    } else if cap > r {
        Some(cap)
    } else {
        None
    };
    if let Some(r1) = raised {
        let per_cf = wbm(m, r1) / n;
        let ratio = format!("{r1:.2}");
        let ratio = ratio.trim_end_matches('0').trim_end_matches('.');
        let mut changes = vec![Change::new("memory.write-buffer-ratio", ratio)];
        let smaller = (per_cf < size).then(|| buffer_within(per_cf));
        if let Some(size1) = smaller {
            changes.push(Change::new("writebuffer.size", ByteSize(size1)));
        }
        if smaller != Some(0) {
            fixes.push(Fix {
                changes,
                memory_cost: 0,
                effect: format!(
                    "WBM {} -> {}, {} -> {} per state ({}writebuffer.size {}); block cache {} -> {}, its data blocks keep at least half; managed memory unchanged",
                    h(d.write_buffer_manager_capacity),
                    h(wbm(m, r1)),
                    h(d.write_buffer_budget_per_column_family),
                    h(per_cf),
                    if smaller.is_some() { ">= the smaller " } else { ">= " },
                    h(smaller.unwrap_or(size)),
                    h(d.block_cache_capacity),
                    h(cache(m, r1)),
                ),
            });
        }
    }
    let size1 = buffer_within(d.write_buffer_budget_per_column_family);
    if size1 > 0 {
        fixes.push(Fix {
            changes: vec![Change::new("writebuffer.size", ByteSize(size1))],
            memory_cost: 0,
            effect: format!(
                "{} per state >= writebuffer.size {} (was {}): memtables flush when full, not when the WBM forces them, at most {} each; WBM and block cache unchanged, managed memory unchanged",
                h(d.write_buffer_budget_per_column_family),
                h(size1),
                h(size),
                h(size1),
            ),
        });
    }
    let fit = d.write_buffer_manager_capacity / size.max(1);
    if fit >= 1 && fit < n && operators != Some(1) {
        fixes.push(Fix {
            changes: Vec::new(),
            memory_cost: 0,
            effect: format!(
                "at most {fit} state column families per slot instead of {n} (fewer stateful operators sharing a slot: slot sharing groups, or more slots for the same memory per slot): each gets {} >= writebuffer.size {}; a change to the job, not the profile",
                h(d.write_buffer_manager_capacity / fit),
                h(size)
            ),
        });
    }
    let memory = d.full_buffer_managed_memory;
    if memory > k.managed_memory.0 {
        fixes.push(Fix {
            changes: vec![Change::new("memory.managed-size", ByteSize(memory))],
            memory_cost: memory - k.managed_memory.0,
            effect: format!(
                "managed memory {} -> {}: WBM {}, {} per state >= writebuffer.size {}; block cache {} -> {}",
                h(k.managed_memory.0),
                h(memory),
                h(wbm(memory as f64, r)),
                h(wbm(memory as f64, r) / n),
                h(size),
                h(d.block_cache_capacity),
                h(cache(memory as f64, r)),
            ),
        });
    }
    fixes
}

#[cfg(test)]
mod tests {
    use crate::advisor::Severity;
    use crate::advisor::testing::{Run, profile};

    fn run(profile_name: &str, wbm_full: f64, memtables: u64, stall_micros: u64) -> Run {
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
                s.stall_micros = stall_micros;
            },
        )
    }

    #[test]
    fn a_starved_wbm_that_stalls_is_fixed_first_by_what_costs_no_memory() {
        // minutes-wbm-starved: 1 MiB per state against a 4 MiB buffer, 76 s stalled.
        let found =
            run("minutes-wbm-starved", 0.9, 3 * (600 << 10), 76_000_000).findings("wbm-budget");
        assert_eq!(found.len(), 1);
        let f = &found[0];
        assert_eq!(f.severity, Severity::Critical);
        assert_eq!((f.from_secs, f.to_secs), (1.0, 10.0));
        // A full buffer each at 18 MiB needs r = 1.0, which leaves no cache: the ratio goes to
        // 0.5 (WBM 6 MiB, 2 MiB per state) and the buffer to 2 MiB. No memory.
        let fix: Vec<(&str, &str)> = f
            .recommendation
            .iter()
            .map(|c| (c.key.as_str(), c.value.as_str()))
            .collect();
        assert_eq!(
            fix,
            [
                ("memory.write-buffer-ratio", "0.5"),
                ("writebuffer.size", "2mb")
            ]
        );
        assert_eq!(f.memory_cost, 0);
        let effect = f.effect.as_deref().unwrap();
        assert!(effect.contains("3.0 MiB -> 6.0 MiB"), "{effect}");
        assert!(
            effect.contains("block cache 16.5 MiB -> 15.0 MiB"),
            "{effect}"
        );
        // Then the buffer alone at the budget (1 MiB), then more memory last:
        // 2 * M * 0.25 / 3 >= 3 * 4 MiB -> M = 72 MiB: 54 MiB more than the profile's 18.
        let alternatives: Vec<String> = f
            .alternatives
            .iter()
            .map(|a| crate::advisor::Change::list(&a.changes, ": "))
            .collect();
        assert_eq!(
            alternatives,
            ["writebuffer.size: 1mb", "memory.managed-size: 72mb"],
            "{:?}",
            f.alternatives
        );
        assert_eq!(f.alternatives[1].memory_cost, 54 << 20);
        assert!(f.alternatives.iter().all(|a| !a.effect.is_empty()));
    }

    #[test]
    fn a_short_budget_that_stalls_nothing_is_info_and_costs_no_memory() {
        // flink-default: 85 MiB WBM, 28.4 MiB per state against 64 MiB buffers. No stall.
        let found = run("flink-default", 0.9, 3 * (10 << 20), 0).findings("wbm-budget");
        let f = &found[0];
        assert_eq!(f.severity, Severity::Info);
        assert_eq!(f.memory_cost, 0);
        // Its ratio is already 0.5: the buffer comes down to the budget instead.
        assert_eq!(f.recommendation[0].key, "writebuffer.size");
        assert_eq!(f.recommendation[0].value, "28mb");
        // One state fits its budget only with 1 state per slot (85 / 64): the job's change,
        // then more memory.
        assert!(
            f.alternatives[0].changes.is_empty()
                && f.alternatives[0]
                    .effect
                    .contains("at most 1 state column families per slot"),
            "{:?}",
            f.alternatives
        );
        assert_eq!(f.alternatives[1].changes[0].key, "memory.managed-size");
        assert_eq!(f.alternatives[1].memory_cost, 320 << 20);
    }

    #[test]
    fn a_ratio_alone_is_proposed_when_it_is_enough() {
        // 256 MiB at r 0.25 with 16 MiB buffers: 14.2 MiB per state; r 0.29 gives 16.5.
        let p = profile(
            "flink-default",
            &[
                ("memory.write-buffer-ratio", "0.25"),
                ("writebuffer.size", "16mb"),
            ],
        );
        let d = p.derived(3);
        let fixes = super::fixes(&p, &d, None);
        assert_eq!(fixes[0].changes.len(), 1);
        assert_eq!(fixes[0].changes[0].key, "memory.write-buffer-ratio");
        assert_eq!(fixes[0].changes[0].value, "0.29");
        assert_eq!(fixes[0].memory_cost, 0);
    }

    #[test]
    fn no_finding_when_the_wbm_is_not_what_holds_memtables_back() {
        // The budget is short but the WBM sits at 70 % (under 80 %): the state is too small.
        assert!(
            run("minutes-wbm-starved", 0.7, 3 * (600 << 10), 1)
                .findings("wbm-budget")
                .is_empty()
        );
        // Memtables already hold half a buffer each.
        assert!(
            run("minutes-wbm-starved", 0.9, 3 * (2 << 20), 1)
                .findings("wbm-budget")
                .is_empty()
        );
        // minutes-wbm-sized: 4.7 MiB per state covers the 4 MiB buffer.
        assert!(
            run("minutes-wbm-sized", 0.9, 3 * (600 << 10), 1)
                .findings("wbm-budget")
                .is_empty()
        );
    }

    /// minutes-wbm-starved where no sample caught the WriteBufferManager full, but `forced` of
    /// `flushes` flushes were its, of `each` bytes of memtable data.
    fn flushed(forced: u64, flushes: u64, each: u64) -> Vec<crate::advisor::Finding> {
        let p = profile("minutes-wbm-starved", &[]);
        Run::new(
            p,
            5,
            |_, s| s.rocksdb.memory.wbm_capacity = 6 << 20,
            |s| {
                s.flushes = flushes;
                s.wbm_flushes = forced;
                s.wbm_flush_data_bytes = forced * each;
                s.stall_micros = 3_000_000;
            },
        )
        .findings("wbm-budget")
    }

    #[test]
    fn the_flushes_the_wbm_forced_show_it_where_the_samples_missed_it() {
        // A short run whose 5 samples all fell after a flush: 37 of 39 flushes were the
        // WriteBufferManager's, of 150 KiB each against a 4 MiB buffer.
        let found = flushed(37, 39, 150 << 10);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].severity, Severity::Critical);
        assert_eq!((found[0].from_secs, found[0].to_secs), (1.0, 5.0));
        let evidence = &found[0].evidence[2];
        assert_eq!(
            evidence.value,
            "37 of 39, 150.0 KiB of memtable data each (mean)"
        );
        // Too few, under half, or memtables a quarter full or more: not shown.
        assert!(flushed(9, 9, 150 << 10).is_empty());
        assert!(flushed(20, 41, 150 << 10).is_empty());
        assert!(flushed(37, 39, 1 << 20).is_empty());
    }
}
