//! `bench --suite advice`: is the advice worth taking? `tune` on each of `reproduce`'s proof
//! cases and on issue 33's three jobs, then the tuned profile measured side by side (repeats,
//! interleaved) against the case's known fix and against the best single change `tune`
//! tried: it must reach the known fix or measure no worse than it, and end no worse on its
//! objective than that single change, in at most [`MAX_RUNS`] runs of tune.
//!
//! Here: the cases and what is known to fix each. Running them is the command's
//! (`commands::bench::advice`).

use super::Case;
use crate::reproduce::proofs::{self, Proof};

/// Runs `tune` may take per case (the start's included).
pub const MAX_RUNS: u32 = 12;

/// What is known to fix a case.
#[derive(Clone, Copy)]
pub enum Known {
    /// A proof's: the fix of the finding that names the seed's cause (profile keys, and job
    /// changes where the fix is in the job), as `reproduce` applies it.
    Proof(&'static Proof),
    /// Profile keys measured to fix it.
    Profile(&'static [(&'static str, &'static str)]),
    /// A change to the job measured to fix it (tune measures job changes apart).
    Job(&'static [(&'static str, &'static str)]),
    /// No fix is known to pay: the answer is a profile no worse than the start.
    Nothing(&'static str),
}

/// The suite's cases: the proofs in miniature, then the three jobs as shipped.
pub const CASES: &[Case] = &[
    proof_case("wbm-stall"),
    proof_case("filter-reads"),
    proof_case("level-sizing"),
    proof_case("serializer"),
    proof_case("list-state-merges"),
    proof_case("ttl-without-cleanup"),
    proof_case("join-tombstones"),
    Case {
        name: "orders-payments",
        workload: "orders-payments",
        profile: "flink-default",
        events: 984_856,
        memory: None,
        preload: None,
    },
    Case {
        name: "dedup-ids",
        workload: "dedup-ids",
        profile: "profiles/flink/tm-8g-4-slots",
        events: 500_000,
        memory: None,
        preload: Some("size=210MiB"),
    },
    Case {
        name: "sessions-zipf-1m",
        workload: "sessions-zipf-1m",
        profile: "flink-default",
        events: 1_500_000,
        memory: None,
        preload: None,
    },
];

/// A proof's row in the case list (`--list`); what it runs is the proof's own.
const fn proof_case(name: &'static str) -> Case {
    Case {
        name,
        workload: "(the proof's)",
        profile: "(the proof's)",
        events: 0,
        memory: None,
        preload: None,
    }
}

/// The proof a case is, if it is one.
pub fn proof(case: &Case) -> Option<&'static Proof> {
    proofs::find(case.name)
}

/// What is known to fix `case`.
pub fn known(case: &Case) -> Known {
    if let Some(p) = proof(case) {
        return Known::Proof(p);
    }
    match case.name {
        // Issue 33: a bloom filter (no memory) read 1.1 KiB -> 96 B per lookup. Partitioned:
        // this history's whole-file filters (4.2 MiB in 9.3 MiB cache shards) once read a
        // whole filter per lookup for over ten minutes (see the bloom-off rule).
        "dedup-ids" => Known::Profile(&[
            ("use-bloom-filter", "true"),
            ("memory.partitioned-index-filters", "true"),
        ]),
        // Issue 33: the same sessions with an AggregateFunction ran 1.69x faster.
        "sessions-zipf-1m" => Known::Job(&[("job.function", "aggregate")]),
        _ => Known::Nothing(
            "none known: the 1 MB write buffer iterator-tombstones once advised cost 5x the write amplification for +5 % events/s",
        ),
    }
}

/// Every proof has a case, so the suite covers what `reproduce` proves.
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_proof_is_a_case_and_every_job_loads() {
        for p in proofs::PROOFS {
            assert!(CASES.iter().any(|c| c.name == p.name), "{}", p.name);
        }
        for c in CASES.iter().filter(|c| proof(c).is_none()) {
            crate::config::Workload::load(c.workload).unwrap();
            assert!(!matches!(known(c), Known::Proof(_)), "{}", c.name);
        }
        assert_eq!(CASES.len(), proofs::PROOFS.len() + 3);
    }
}
