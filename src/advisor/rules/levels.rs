//! Too many active levels and high write amplification: level sizes fixed from the top down
//! leave the tree deeper than its data needs (case study 3: dynamic level sizing).

use super::Rule;
use crate::advisor::{Change, Evidence, Finding, Input, Severity};

pub const RULE: Rule = Rule {
    id: "level-sizing",
    looks_for: "3 or more active levels with write amplification above 3 and static level sizes",
    check,
};

const LEVELS: u32 = 3;
const WRITE_AMPLIFICATION: f64 = 3.0;

fn check(input: &Input) -> Option<Finding> {
    let s = input.summary;
    let k = &input.profile.knobs;
    if k.dynamic_level_bytes
        || s.active_levels_max < LEVELS
        || s.write_amplification < WRITE_AMPLIFICATION
    {
        return None;
    }
    let (from, to, _) = input.when(|m| m.rocksdb.lsm.active_levels >= LEVELS)?;
    Some(Finding {
        id: RULE.id,
        severity: Severity::Warning,
        diagnosis: format!(
            "The LSM tree uses {} levels and RocksDB writes each byte {:.1} times: with static level sizes the levels are sized from level 1 down, not from the data up. Dynamic level sizes keep the tree as shallow as the data allows.",
            s.active_levels_max, s.write_amplification
        ),
        evidence: vec![
            Evidence::new(
                "active levels (max)",
                s.active_levels_max,
                format!("< {LEVELS}"),
            ),
            Evidence::new(
                "write amplification",
                format!("{:.2}", s.write_amplification),
                format!("< {WRITE_AMPLIFICATION}"),
            ),
        ],
        from_secs: from,
        to_secs: to,
        recommendation: vec![Change::new("compaction.level.use-dynamic-size", true)],
        memory_cost: 0,
        note: None,
    })
}

#[cfg(test)]
mod tests {
    use crate::advisor::testing::{Run, profile};

    fn run(edits: &[(&str, &str)], levels: u32, wa: f64) -> Run {
        Run::new(
            profile("flink-default", edits),
            10,
            |_, s| s.rocksdb.lsm.active_levels = levels,
            |s| {
                s.active_levels_max = levels;
                s.write_amplification = wa;
            },
        )
    }

    #[test]
    fn a_deep_tree_writing_much_recommends_dynamic_level_sizes() {
        let f = &run(&[], 4, 6.5).findings("level-sizing")[0];
        assert_eq!(f.recommendation[0].key, "compaction.level.use-dynamic-size");
    }

    #[test]
    fn shallow_trees_low_amplification_or_dynamic_sizes_are_not_a_finding() {
        assert!(run(&[], 2, 6.5).findings("level-sizing").is_empty());
        assert!(run(&[], 4, 2.9).findings("level-sizing").is_empty());
        let dynamic = [("compaction.level.use-dynamic-size", "true")];
        assert!(run(&dynamic, 4, 6.5).findings("level-sizing").is_empty());
    }
}
