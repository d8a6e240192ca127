//! The advisor's rules: one file each, one entry in `RULES`.

mod arena;
mod bloom;
mod cache;
mod filter_reads;
mod levels;
mod list_state;
mod memory_overshoot;
mod overrides;
mod serializer;
mod stalls;
mod tombstones;
mod ttl_cleanup;
pub(crate) mod wbm_budget;

use super::{Finding, Input};

/// A rule: its id, what it looks for, and the check that makes its finding.
pub struct Rule {
    pub id: &'static str,
    pub looks_for: &'static str,
    pub check: fn(&Input) -> Option<Finding>,
}

pub const RULES: &[Rule] = &[
    wbm_budget::RULE,
    stalls::RULE,
    filter_reads::RULE,
    bloom::RULE,
    cache::RULE,
    levels::RULE,
    arena::RULE,
    overrides::RULE,
    serializer::RULE,
    list_state::RULE,
    ttl_cleanup::RULE,
    tombstones::RULE,
    memory_overshoot::RULE,
];
