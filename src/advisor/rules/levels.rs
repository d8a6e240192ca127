//! A tree a level deeper than its data needs: with static level sizes L1 is sized by
//! `max-size-level-base` and every level below it ten times the one above, from the top down,
//! so a state a little bigger than the level base already spreads over L1 and L2. Case study 3
//! raised the level base and the target file size four times and sized levels from the data up
//! (dynamic level sizes): one active level fewer, and write amplification, which the seed
//! estimated as multiplier x (active levels - 1), down from 20 to 10.

use super::Rule;
use crate::advisor::{Change, Evidence, Finding, Input, Severity};
use crate::config::ByteSize;
use crate::config::units::human_bytes;

pub const RULE: Rule = Rule {
    id: "level-sizing",
    looks_for: "3 or more active levels with static level sizes, where a bigger level base sized from the data up needs one level fewer",
    check,
};

/// Active levels (L0 included) from which the rule looks.
const LEVELS: u32 = 3;
/// The largest level-base raise the rule recommends: case study 3's 4x (a bigger base makes
/// every L0 compaction rewrite more of it).
const MAX_RAISE: u64 = 4;

/// Levels below L0 that `data` bytes take when levels are sized from the data up: the last
/// level holds the data, each level above it a multiplier less, down to the first level at or
/// under the level base (RocksDB's `CalculateBaseBytes`, `level_compaction_dynamic_level_bytes`).
fn dynamic_levels(data: u64, level_base: u64, multiplier: f64) -> u32 {
    let mut levels = 1;
    let mut size = data as f64;
    while size > level_base as f64 && levels < 6 {
        size /= multiplier.max(1.01);
        levels += 1;
    }
    levels
}

fn check(input: &Input) -> Option<Finding> {
    let s = input.summary;
    let k = &input.profile.knobs;
    if k.dynamic_level_bytes || s.active_levels_max < LEVELS {
        return None;
    }
    // The column family with the most data below L0, as the last snapshot shows it.
    let last = input.snapshots.last()?;
    let (data, levels) = last
        .rocksdb
        .lsm
        .column_families
        .iter()
        .map(|c| {
            let below: Vec<_> = c
                .levels
                .iter()
                .filter(|l| l.level > 0 && l.files > 0)
                .collect();
            (
                below.iter().map(|l| l.bytes).sum::<u64>(),
                below.len() as u32,
            )
        })
        .max()?;
    if levels < 2 {
        return None;
    }
    let base = k.max_bytes_for_level_base.0;
    let m = k.max_bytes_for_level_multiplier;
    // The smallest power-of-two raise of the level base that, sized from the data up, needs a
    // level fewer.
    let raise = (1..=MAX_RAISE.ilog2())
        .map(|p| 1u64 << p)
        .find(|r| dynamic_levels(data, base * r, m) < levels)?;
    let new_base = ByteSize(base * raise);
    let (from, to, _) = input.when(|m| m.rocksdb.lsm.active_levels >= LEVELS)?;
    let estimate = |levels: u32| m * f64::from(levels.saturating_sub(1));
    Some(Finding {
        id: RULE.id,
        severity: Severity::Warning,
        diagnosis: format!(
            "The fullest column family's {} spread over {levels} levels below L0: static level sizes fill L1 ({}) first and push the rest a level down. A level base of {new_base} sized from the data up holds it in {} level(s): one active level fewer for every read. Write amplification falls with it only where what is written flows down to the last level; state overwritten in place (counters, timers) mostly collapses in the L0 compactions, which then rewrite a bigger base level: measure it (case study 3 measured here: it rises).",
            human_bytes(data as f64),
            human_bytes(base as f64),
            dynamic_levels(data, new_base.0, m)
        ),
        evidence: vec![
            Evidence::new(
                "active levels (max)",
                s.active_levels_max,
                format!("< {LEVELS}"),
            ),
            Evidence::new(
                "data below L0 in the fullest column family",
                human_bytes(data as f64),
                format!("<= level base {}", human_bytes(base as f64)),
            ),
            Evidence::new(
                "write amplification (measured)",
                format!("{:.2}", s.write_amplification),
                "-",
            ),
            Evidence::new(
                "write amplification as the seed estimates it, multiplier x (levels - 1)",
                format!(
                    "{:.0} ({:.0} with a level fewer)",
                    estimate(s.active_levels_max),
                    estimate(s.active_levels_max - 1)
                ),
                "-",
            ),
        ],
        from_secs: from,
        to_secs: to,
        recommendation: vec![
            Change::new("compaction.level.use-dynamic-size", true),
            Change::new("compaction.level.max-size-level-base", new_base),
            Change::new(
                "compaction.level.target-file-size-base",
                ByteSize(k.target_file_size_base.0 * raise),
            ),
        ],
        memory_cost: 0,
        job_changes: Vec::new(),
        effect: None,
        alternatives: Vec::new(),
        note: Some(
            "dynamic level sizes cannot be switched on a running RocksDB: a restart (Flink: from a savepoint) applies them".to_string(),
        ),
        cost: None,
        overruled: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use crate::advisor::testing::{Run, profile};
    use crate::model::metrics::{ColumnFamilyLsm, LevelSample};

    const MB: u64 = 1 << 20;

    /// A run whose last snapshot has one column family with `levels` (level, bytes).
    fn run(edits: &[(&str, &str)], levels: &[(u32, u64)]) -> Run {
        let active = levels.len() as u32;
        let cf = ColumnFamilyLsm {
            name: "window-stats".to_string(),
            levels: levels
                .iter()
                .map(|&(level, bytes)| LevelSample {
                    level,
                    files: 1,
                    bytes,
                    ..LevelSample::default()
                })
                .collect(),
            ..ColumnFamilyLsm::default()
        };
        Run::new(
            profile(
                "flink-default",
                &[
                    &[
                        ("compaction.level.target-file-size-base", "1mb"),
                        ("compaction.level.max-size-level-base", "4mb"),
                    ],
                    edits,
                ]
                .concat(),
            ),
            10,
            |_, s| {
                s.rocksdb.lsm.active_levels = active;
                s.rocksdb.lsm.column_families = vec![cf.clone()];
            },
            |s| {
                s.active_levels_max = active;
                s.write_amplification = 1.5;
            },
        )
    }

    #[test]
    fn data_just_past_the_level_base_recommends_a_bigger_base_sized_from_the_data_up() {
        // 4 MiB in L1 and 3 MiB in L2: a 8 MiB base sized from the data up holds the 7 MiB in
        // one level.
        let f = &run(&[], &[(0, MB), (1, 4 * MB), (2, 3 * MB)]).findings("level-sizing")[0];
        let values: Vec<(&str, &str)> = f
            .recommendation
            .iter()
            .map(|c| (c.key.as_str(), c.value.as_str()))
            .collect();
        assert_eq!(
            values,
            [
                ("compaction.level.use-dynamic-size", "true"),
                ("compaction.level.max-size-level-base", "8mb"),
                ("compaction.level.target-file-size-base", "2mb"),
            ]
        );
    }

    #[test]
    fn shallow_trees_data_far_past_the_base_or_dynamic_sizes_are_not_a_finding() {
        assert!(
            run(&[], &[(0, MB), (1, 3 * MB)])
                .findings("level-sizing")
                .is_empty()
        );
        // 4 + 40 + 300 MiB: even a 4x base (16 MiB) sized from the data up needs 3 levels.
        let deep = [(0, MB), (1, 4 * MB), (2, 40 * MB), (3, 300 * MB)];
        assert!(run(&[], &deep).findings("level-sizing").is_empty());
        // 4 + 40 + 30 MiB: a 4x base holds it in 2 levels, one fewer.
        let fewer = [(0, MB), (1, 4 * MB), (2, 40 * MB), (3, 30 * MB)];
        assert!(!run(&[], &fewer).findings("level-sizing").is_empty());
        let dynamic = [("compaction.level.use-dynamic-size", "true")];
        let spread = [(0, MB), (1, 4 * MB), (2, 3 * MB)];
        assert!(run(&dynamic, &spread).findings("level-sizing").is_empty());
    }
}
