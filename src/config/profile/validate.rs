//! The checks on a profile's knobs: combinations RocksDB or Flink would refuse, silently fix,
//! or make meaningless, each said with the knob's key, its value and what is valid.

use super::Profile;

impl Profile {
    /// Rejects combinations RocksDB or Flink would refuse, silently fix, or make meaningless.
    pub(super) fn validate(&self) -> Result<(), String> {
        let k = &self.knobs;
        let mut problems = Vec::new();
        if !(k.write_buffer_ratio > 0.0 && k.write_buffer_ratio < 1.0) {
            problems.push(format!(
                "'memory.write-buffer-ratio' is {} but must be between 0 and 1 (exclusive); Flink's default is 0.5",
                k.write_buffer_ratio
            ));
        }
        if !(k.high_prio_pool_ratio > 0.0 && k.high_prio_pool_ratio < 1.0) {
            problems.push(format!(
                "'memory.high-prio-pool-ratio' is {} but must be between 0 and 1 (exclusive); Flink's default is 0.1",
                k.high_prio_pool_ratio
            ));
        }
        // RocksDBMemoryConfiguration#validate: the memtables' share of the cache they are
        // charged to (2r / (3 - r)) and the high-priority pool must leave room for data blocks.
        let memtable_share = 2.0 * k.write_buffer_ratio / (3.0 - k.write_buffer_ratio);
        if memtable_share + k.high_prio_pool_ratio >= 1.0 {
            problems.push(format!(
                "'memory.write-buffer-ratio' {} with 'memory.high-prio-pool-ratio' {} leaves no block cache for data: Flink refuses it (2r/(3-r) + ratio must stay below 1)",
                k.write_buffer_ratio, k.high_prio_pool_ratio
            ));
        }
        if k.checkpoint_interval.0 > 0 && k.checkpoint_interval.0 < 10 {
            problems.push(format!(
                "'execution.checkpointing.interval' is {} but must be 0 (off) or at least 10ms, as Flink requires",
                k.checkpoint_interval
            ));
        }
        if k.checkpoint_timeout.0 < 10 {
            problems.push(format!(
                "'execution.checkpointing.timeout' is {} but must be at least 10ms",
                k.checkpoint_timeout
            ));
        }
        if k.checkpoints_retained < 1 {
            problems.push(
                "'execution.checkpointing.num-retained' is 0 but must be at least 1".to_string(),
            );
        }
        if k.changelog_enabled && k.changelog_materialize_interval.0 == 0 {
            problems.push(
                "'state.changelog.periodic-materialize.interval' must be above 0 with 'state.changelog.enabled: true'"
                    .to_string(),
            );
        }
        problems.extend(crate::config::timer_service::validate(k));
        if k.sink_transaction_timeout.0 == 0 {
            problems.push("'sink.transaction-timeout' must be above 0".to_string());
        }
        if k.partitioned_index_filters && !k.use_bloom_filter {
            problems.push(
                "'memory.partitioned-index-filters: true' needs 'use-bloom-filter: true': there is no filter to partition"
                    .to_string(),
            );
        }
        if k.managed_memory.0 < (1 << 20) {
            problems.push(format!(
                "'memory.managed-size' is {} but must be at least 1mb",
                k.managed_memory
            ));
        }
        if k.write_buffer_size.0 < (64 << 10) {
            problems.push(format!(
                "'writebuffer.size' is {} but must be at least 64kb",
                k.write_buffer_size
            ));
        }
        if k.max_write_buffer_number < 2 {
            problems.push(format!(
                "'writebuffer.count' is {} but must be at least 2 (RocksDB raises smaller values to 2)",
                k.max_write_buffer_number
            ));
        }
        if k.min_write_buffer_number_to_merge < 1
            || k.min_write_buffer_number_to_merge >= k.max_write_buffer_number
        {
            problems.push(format!(
                "'writebuffer.number-to-merge' is {} but must be at least 1 and less than 'writebuffer.count' ({})",
                k.min_write_buffer_number_to_merge, k.max_write_buffer_number
            ));
        }
        if !(k.bloom_bits_per_key >= 1.0 && k.bloom_bits_per_key <= 100.0) {
            problems.push(format!(
                "'bloom-filter.bits-per-key' is {} but must be between 1 and 100",
                k.bloom_bits_per_key
            ));
        }
        for (key, size) in [
            ("block.blocksize", k.block_size),
            ("block.metadata-blocksize", k.metadata_block_size),
        ] {
            if size.0 < 256 || size.0 > (256 << 20) {
                problems.push(format!(
                    "'{key}' is {size} but must be between 256b and 256mb"
                ));
            }
        }
        if k.target_file_size_base.0 < (64 << 10) {
            problems.push(format!(
                "'compaction.level.target-file-size-base' is {} but must be at least 64kb",
                k.target_file_size_base
            ));
        }
        if k.max_bytes_for_level_base.0 < k.target_file_size_base.0 {
            problems.push(format!(
                "'compaction.level.max-size-level-base' ({}) is smaller than 'compaction.level.target-file-size-base' ({}): level 1 could not hold one file",
                k.max_bytes_for_level_base, k.target_file_size_base
            ));
        }
        if k.max_bytes_for_level_multiplier <= 1.0 {
            problems.push(format!(
                "'compaction.level.multiplier' is {} but must be greater than 1",
                k.max_bytes_for_level_multiplier
            ));
        }
        if k.compression_per_level.is_empty() || k.compression_per_level.len() > 7 {
            problems.push(format!(
                "'compression.per.level' has {} entries but needs 1 to 7 (one per level, the last repeats)",
                k.compression_per_level.len()
            ));
        }
        if k.background_jobs < 1 || k.background_jobs > 64 {
            problems.push(format!(
                "'thread.num' is {} but must be between 1 and 64",
                k.background_jobs
            ));
        }
        // RocksDB raises a limit below 20 to 20 (SanitizeOptions): the profile would say what
        // RocksDB does not do.
        if k.max_open_files != -1 && k.max_open_files < 20 {
            problems.push(format!(
                "'files.open' is {} but must be -1 (every file open, Flink's default) or at least 20 (RocksDB raises smaller limits to 20)",
                k.max_open_files
            ));
        }
        if k.level0_slowdown_writes_trigger > k.level0_stop_writes_trigger {
            problems.push(format!(
                "'compaction.level0-slowdown-writes-trigger' ({}) is above 'compaction.level0-stop-writes-trigger' ({}): writes would stop before they slow down",
                k.level0_slowdown_writes_trigger, k.level0_stop_writes_trigger
            ));
        }
        if k.level0_slowdown_writes_trigger < 2 {
            problems.push(format!(
                "'compaction.level0-slowdown-writes-trigger' is {} but must be at least 2",
                k.level0_slowdown_writes_trigger
            ));
        }
        if k.soft_pending_compaction_bytes_limit > k.hard_pending_compaction_bytes_limit {
            problems.push(format!(
                "'compaction.soft-pending-compaction-bytes-limit' ({}) is above 'compaction.hard-pending-compaction-bytes-limit' ({})",
                k.soft_pending_compaction_bytes_limit, k.hard_pending_compaction_bytes_limit
            ));
        }
        if k.io_rate_limit.0 != 0 && k.io_rate_limit.0 < (64 << 10) {
            problems.push(format!(
                "'io.rate-limit-per-sec' is {} but must be 0 (unlimited) or at least 64kb",
                k.io_rate_limit
            ));
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(problems.join("; "))
        }
    }
}
