//! The arena blocks of every state's memtable against the WriteBufferManager: each memtable
//! with data holds at least one arena block (an eighth of writebuffer.size under Flink 1.20),
//! and when those alone exceed the WBM's mutable limit it forces a flush whenever every state
//! has written — long before memtables fill.

use super::Rule;
use crate::advisor::{Change, Evidence, Finding, Input, Severity};
use crate::config::ByteSize;
use crate::config::units::human_bytes;

pub const RULE: Rule = Rule {
    id: "arena-vs-wbm",
    looks_for: "state column families x arena block above the WriteBufferManager's mutable limit",
    check,
};

fn check(input: &Input) -> Option<Finding> {
    let d = input.derived;
    // Without a WriteBufferManager (memory.mode: unmanaged) nothing charges the arena blocks.
    if !d.shared {
        return None;
    }
    let cfs = d.state_column_families as u64;
    let charged = d.arena_block_size * cfs;
    if charged <= d.mutable_limit || input.summary.flushes == 0 {
        return None;
    }
    let (from, to) = input.whole_run();
    // The largest write buffer (in MiB) whose arena blocks fit: cfs * size / 8 <= limit.
    let fits = (d.mutable_limit * 8 / cfs.max(1)) >> 20 << 20;
    let recommendation = if fits >= 1 << 20 {
        vec![Change::new("writebuffer.size", ByteSize(fits))]
    } else {
        Vec::new()
    };
    Some(Finding {
        id: RULE.id,
        severity: Severity::Warning,
        diagnosis: format!(
            "{cfs} state memtables hold at least {} of arena blocks ({} each), above the WriteBufferManager's mutable limit {}: it forces a flush as soon as every state has written, whatever writebuffer.size says.",
            human_bytes(charged as f64),
            human_bytes(d.arena_block_size as f64),
            human_bytes(d.mutable_limit as f64)
        ),
        evidence: vec![
            Evidence::new(
                "state column families x arena block",
                human_bytes(charged as f64),
                format!("<= mutable limit {}", human_bytes(d.mutable_limit as f64)),
            ),
            Evidence::new("flushes", input.summary.flushes, "-"),
        ],
        from_secs: from,
        to_secs: to,
        recommendation,
        memory_cost: 0,
        job_changes: Vec::new(),
        effect: None,
        alternatives: Vec::new(),
        note: Some("or give the WriteBufferManager more memory (memory.managed-size, memory.write-buffer-ratio)".to_string()),
        cost: None,
        overruled: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use crate::advisor::testing::{Run, profile};

    fn run(managed: &str) -> Run {
        Run::new(
            profile("flink-default", &[("memory.managed-size", managed)]),
            5,
            |_, _| {},
            |s| s.flushes = 3_800,
        )
    }

    #[test]
    fn arena_blocks_above_the_mutable_limit_recommend_a_smaller_buffer() {
        // 64 MB managed: WBM 21.3 MiB, mutable limit 18.7 MiB, 3 x 8 MiB arena blocks.
        let f = &run("64mb").findings("arena-vs-wbm")[0];
        assert_eq!(f.recommendation[0].key, "writebuffer.size");
        assert_eq!(f.recommendation[0].value, "49mb");
    }

    #[test]
    fn arena_blocks_within_the_limit_are_not_a_finding() {
        // 256 MB managed: mutable limit 74.7 MiB holds 3 x 8 MiB.
        assert!(run("256mb").findings("arena-vs-wbm").is_empty());
        // 72 MB: limit 21 MiB still under 24 MiB; 84 MB: 24.5 MiB holds it.
        assert!(!run("72mb").findings("arena-vs-wbm").is_empty());
        assert!(run("84mb").findings("arena-vs-wbm").is_empty());
    }

    #[test]
    fn without_a_write_buffer_manager_arena_blocks_are_not_a_finding() {
        let unmanaged = Run::new(
            profile(
                "flink-default",
                &[
                    ("memory.managed-size", "64mb"),
                    ("memory.mode", "unmanaged"),
                ],
            ),
            5,
            |_, _| {},
            |s| s.flushes = 3_800,
        );
        assert!(unmanaged.findings("arena-vs-wbm").is_empty());
    }
}
