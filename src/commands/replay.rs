//! `statebench replay-ops` (hidden): a recorded run's RocksDB operations, replayed with no
//! pipeline on a fresh database: how fast RocksDB alone does the run's state traffic.

use std::path::Path;

use anyhow::Context as _;

use crate::backend::oplog;

pub fn run(log: &Path, profile: &str, json: bool) -> anyhow::Result<()> {
    let profile = super::load_profile(profile)?;
    let dir = tempfile::Builder::new()
        .prefix("statebench-replay-")
        .tempdir()
        .context("cannot create a temporary data directory")?;
    let stats = oplog::replay(log, dir.path(), &profile)
        .with_context(|| format!("cannot replay {}", log.display()))?;
    if json {
        let value = serde_json::json!({
            "gets": stats.gets,
            "puts": stats.puts,
            "deletes": stats.deletes,
            "merges": stats.merges,
            "batches": stats.batches,
            "empty_batches": stats.empty_batches,
            "batch_entries": stats.batch_entries,
            "scans": stats.scans,
            "iterations": stats.iterations,
            "iterator_nexts": stats.iterator_nexts,
            "marked_secs": stats.marked.as_secs_f64(),
            "total_secs": stats.total.as_secs_f64(),
        });
        println!("{value}");
    } else {
        println!(
            "replayed {} gets, {} puts, {} deletes, {} merges, {} batches ({} entries, {} empty), \
{} scans, {} iterations ({} nexts): {:.3} s between the run's marks, {:.3} s in all",
            stats.gets,
            stats.puts,
            stats.deletes,
            stats.merges,
            stats.batches,
            stats.batch_entries,
            stats.empty_batches,
            stats.scans,
            stats.iterations,
            stats.iterator_nexts,
            stats.marked.as_secs_f64(),
            stats.total.as_secs_f64()
        );
    }
    Ok(())
}
