//! RocksDB's OPTIONS file: what RocksDB really runs with. statebench reads it back after opening
//! and checks every knob of the profile against it — a setting in a YAML file is not proof that
//! it is in effect (case study 2).

use std::collections::BTreeMap;

use crate::config::Profile;
use crate::config::profile::{Knob, Knobs};
use crate::config::target::TargetOptions;

/// Sections (`DBOptions`, `CFOptions "name"`, `TableOptions/BlockBasedTable "name"`) to key/values.
#[derive(Debug, Default, Clone)]
pub struct OptionsFile {
    pub sections: BTreeMap<String, BTreeMap<String, String>>,
}

impl OptionsFile {
    pub fn parse(text: &str) -> OptionsFile {
        let mut file = OptionsFile::default();
        let mut current = String::new();
        for line in text.lines() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            if let Some(section) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
                current = section.to_string();
                file.sections.entry(current.clone()).or_default();
            } else if let Some((k, v)) = line.split_once('=') {
                file.sections
                    .entry(current.clone())
                    .or_default()
                    .insert(k.trim().to_string(), v.trim().to_string());
            }
        }
        file
    }

    pub fn get(&self, section: &str, key: &str) -> Option<&str> {
        self.sections.get(section)?.get(key).map(String::as_str)
    }

    pub fn db(&self, key: &str) -> Option<&str> {
        self.get("DBOptions", key)
    }

    pub fn cf(&self, cf: &str, key: &str) -> Option<&str> {
        self.get(&format!("CFOptions \"{cf}\""), key)
    }

    pub fn table(&self, cf: &str, key: &str) -> Option<&str> {
        self.get(&format!("TableOptions/BlockBasedTable \"{cf}\""), key)
    }
}

/// One knob whose value in the OPTIONS file is not what the profile asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch {
    pub section: String,
    pub option: String,
    pub expected: String,
    pub found: Option<String>,
}

impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "[{}] {}: expected {}, RocksDB has {}",
            self.section,
            self.option,
            self.expected,
            self.found.as_deref().unwrap_or("nothing")
        )
    }
}

/// Whether RocksDB's `found` is the value we set: the same text, or the same number
/// (RocksDB writes doubles as `10.000000`).
pub fn same_value(found: &str, expected: &str) -> bool {
    found == expected
        || matches!(
            (found.parse::<f64>(), expected.parse::<f64>()),
            (Ok(f), Ok(e)) if (f - e).abs() < 1e-9
        )
}

/// A profile knob that is one plain column-family option.
pub struct CfOption {
    /// The knob that sets it.
    pub knob: Knob,
    /// RocksDB's name, as in the OPTIONS file and SetOptions.
    pub option: &'static str,
    pub value: String,
}

/// Every knob that maps onto column-family options (one row per option), with the value `k` gives it:
/// what `verify` checks in the OPTIONS file and what live tuning sets (compression per level
/// and the table options are checked on their own).
pub fn cf_options(k: &Knobs) -> Vec<CfOption> {
    let o = |knob, option, value: String| CfOption {
        knob,
        option,
        value,
    };
    vec![
        o(
            Knob::WriteBufferSize,
            "write_buffer_size",
            k.write_buffer_size.0.to_string(),
        ),
        // The memtable arena block follows the write buffer as the target's RocksDB sizes it
        // (Flink 1.20: an eighth of it), so a live change of the buffer moves it too.
        o(
            Knob::WriteBufferSize,
            "arena_block_size",
            TargetOptions::new(k.target, k.write_buffer_size.0, k.use_direct_reads)
                .arena_block_size
                .to_string(),
        ),
        o(
            Knob::MaxWriteBufferNumber,
            "max_write_buffer_number",
            k.max_write_buffer_number.to_string(),
        ),
        o(
            Knob::MinWriteBufferNumberToMerge,
            "min_write_buffer_number_to_merge",
            k.min_write_buffer_number_to_merge.to_string(),
        ),
        o(
            Knob::TargetFileSizeBase,
            "target_file_size_base",
            k.target_file_size_base.0.to_string(),
        ),
        o(
            Knob::MaxBytesForLevelBase,
            "max_bytes_for_level_base",
            k.max_bytes_for_level_base.0.to_string(),
        ),
        o(
            Knob::MaxBytesForLevelMultiplier,
            "max_bytes_for_level_multiplier",
            k.max_bytes_for_level_multiplier.to_string(),
        ),
        o(
            Knob::DynamicLevelBytes,
            "level_compaction_dynamic_level_bytes",
            k.dynamic_level_bytes.to_string(),
        ),
        o(
            Knob::Level0SlowdownWritesTrigger,
            "level0_slowdown_writes_trigger",
            k.level0_slowdown_writes_trigger.to_string(),
        ),
        o(
            Knob::Level0StopWritesTrigger,
            "level0_stop_writes_trigger",
            k.level0_stop_writes_trigger.to_string(),
        ),
        o(
            Knob::SoftPendingCompactionBytesLimit,
            "soft_pending_compaction_bytes_limit",
            k.soft_pending_compaction_bytes_limit.0.to_string(),
        ),
        o(
            Knob::HardPendingCompactionBytesLimit,
            "hard_pending_compaction_bytes_limit",
            k.hard_pending_compaction_bytes_limit.0.to_string(),
        ),
        o(
            Knob::DisableAutoCompactions,
            "disable_auto_compactions",
            k.disable_auto_compactions.to_string(),
        ),
    ]
}

/// Checks that RocksDB applied every knob of `profile` to `column_families`.
pub fn verify(profile: &Profile, file: &OptionsFile, column_families: &[&str]) -> Vec<Mismatch> {
    let k = &profile.knobs;
    let mut out = Vec::new();
    let mut check =
        |section: String, option: &str, found: Option<&str>, expected: String, ok: bool| {
            if !ok {
                out.push(Mismatch {
                    section,
                    option: option.to_string(),
                    expected,
                    found: found.map(str::to_string),
                });
            }
        };
    let db = |key: &str| file.db(key);
    for (option, expected) in [
        ("use_direct_reads", k.use_direct_reads.to_string()),
        (
            "use_direct_io_for_flush_and_compaction",
            k.use_direct_io_for_flush_and_compaction.to_string(),
        ),
        ("max_background_jobs", k.background_jobs.to_string()),
        ("max_open_files", k.max_open_files.to_string()),
    ] {
        let found = db(option);
        check(
            "DBOptions".into(),
            option,
            found,
            expected.clone(),
            found == Some(expected.as_str()),
        );
    }
    let target = profile.target_options();
    let found = db("compaction_readahead_size");
    let expected = target.compaction_readahead_size.to_string();
    check(
        "DBOptions".into(),
        "compaction_readahead_size",
        found,
        expected.clone(),
        found == Some(expected.as_str()),
    );
    for cf in column_families {
        let section = format!("CFOptions \"{cf}\"");
        for CfOption { option, value, .. } in cf_options(k) {
            let found = file.cf(cf, option);
            let ok = found.is_some_and(|f| same_value(f, &value));
            check(section.clone(), option, found, value, ok);
        }
        let expected_levels: Vec<&str> = (0..7)
            .map(|l| k.compression_for_level(l).rocksdb_name())
            .collect();
        let expected = expected_levels.join(":");
        let found = file.cf(cf, "compression_per_level");
        check(
            section.clone(),
            "compression_per_level",
            found,
            expected.clone(),
            found == Some(expected.as_str()),
        );

        let section = format!("TableOptions/BlockBasedTable \"{cf}\"");
        for (option, expected) in [
            ("block_size", k.block_size.0.to_string()),
            ("metadata_block_size", k.metadata_block_size.0.to_string()),
            (
                "partition_filters",
                k.partitions_index_filters().to_string(),
            ),
            (
                "index_type",
                if k.partitions_index_filters() {
                    "kTwoLevelIndexSearch"
                } else {
                    "kBinarySearch"
                }
                .to_string(),
            ),
            // In the cache with a shared budget; in the table readers without.
            (
                "cache_index_and_filter_blocks",
                k.memory_mode.is_shared().to_string(),
            ),
            (
                "pin_l0_filter_and_index_blocks_in_cache",
                k.memory_mode.is_shared().to_string(),
            ),
            ("format_version", target.format_version.to_string()),
            ("checksum", target.checksum.rocksdb_name().to_string()),
            (
                "optimize_filters_for_memory",
                target.optimize_filters_for_memory.to_string(),
            ),
            (
                "decouple_partitioned_filters",
                target.decouple_partitioned_filters.to_string(),
            ),
        ] {
            let found = file.table(cf, option);
            check(
                section.clone(),
                option,
                found,
                expected.clone(),
                found == Some(expected.as_str()),
            );
        }
        // RocksDB 11 writes a policy built in code by its class name alone, not its bits per
        // key (those are checked from the SST files' table properties,
        // `measured_bloom_bits_per_key`); one loaded from an OPTIONS file (statebench export)
        // as `bloomfilter:<bits>:false`, whose bits must be the effective ones.
        let found = file.table(cf, "filter_policy");
        let (expected, ok) = match k.effective_bloom_bits_per_key() {
            Some(bits) => {
                let loaded = format!("bloomfilter:{bits}:false");
                let ok = found == Some("bloomfilter") || found == Some(loaded.as_str());
                (format!("bloomfilter or {loaded}"), ok)
            }
            None => ("nullptr".to_string(), found == Some("nullptr")),
        };
        check(section, "filter_policy", found, expected, ok);
    }
    out
}
