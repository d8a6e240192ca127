//! `statebench reproduce`'s arguments.

use clap::Args;

use super::parse_events;

#[derive(Debug, Args)]
pub struct ReproduceArgs {
    /// Traps: ttl-too-short | idle-partition | idleness-too-short | same-consumer-group |
    /// backfill-savepoint. Case studies the advisor solves: wbm-stall | filter-reads |
    /// level-sizing | serializer | list-state-merges | ttl-without-cleanup | join-tombstones.
    /// Failures, checkpoints and savepoints: exactly-once | changelog-uploads |
    /// native-savepoint-changelog | heap-timers. Without a name: the list.
    pub name: Option<String>,
    /// Events per side (default: each case's own, listed by `reproduce` with no name; the
    /// traps run 60000 of `smoke` or `backfill-catchup`). The event-time pace stays the base
    /// workload's.
    #[arg(long, value_parser = parse_events)]
    pub events: Option<u64>,
    /// miniature: memory and data scaled down together (about two minutes a case).
    /// production (wbm-stall, filter-reads, changelog-uploads): the case study at the seed's
    /// own sizes (write buffers, target files, filters, memory, 10 GiB of days-app state),
    /// every side starting from a preloaded steady state of the seed's size (built once, in
    /// about two minutes, or about 10 for changelog-uploads' 10 GiB, and kept under
    /// --preload-dir, then cloned; see docs/correctness.md); level-sizing: the seed's tree
    /// shape (buffers, files, level base and state in its ratios, every level full) at 1/16
    /// of its bytes; --events caps the live records
    #[arg(long, value_enum, default_value_t)]
    pub scale: crate::reproduce::proofs::Scale,
    /// Where --scale production keeps its preloaded bases (default: as `run --preload`'s)
    #[arg(long)]
    pub preload_dir: Option<std::path::PathBuf>,
}
