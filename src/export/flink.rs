//! A profile as Flink configuration: a `config.yaml` fragment for a Flink release and a
//! TaskManager, knobs Flink has no key for as the options-factory calls that set them.

use super::FlinkVersion;
use super::memory::{Cluster, memory_lines};
use crate::backend::ttl_filter::QUERY_TIME_AFTER_NUM_ENTRIES;
use crate::config::flink::{FACTORY_PREFIX, flink_config};
use crate::config::profile::{FLINK_PARTITIONED_BLOOM_BITS, KNOBS, Knob, KnobInfo, SetBy};
use crate::config::tm_memory::TmMemory;

use crate::config::{Profile, units::human_bytes};

/// Flink 2.x's keys for the TTL compaction filter it attaches to states with a TTL; Flink 1.20
/// takes both from each state's `StateTtlConfig` only.
pub const TTL_QUERY_TIME_KEY: &str =
    "state.backend.rocksdb.compaction.filter.query-time-after-num-entries";
pub const TTL_PERIODIC_COMPACTION_KEY: &str =
    "state.backend.rocksdb.compaction.filter.periodic-compaction-time";
/// The filter's periodic compaction: Flink's default in both releases (`StateTtlConfig`'s in
/// 1.20, the key's in 2.x), and what statebench's column family with its TTL filter gets
/// (RocksDB's own default with a compaction filter): `periodic_compaction_seconds=2592000` in
/// both OPTIONS files.
pub(super) const TTL_PERIODIC_COMPACTION_DAYS: u32 = 30;

/// How a job, or an options factory, sets a knob Flink's configuration has no key for.
fn setter(info: &KnobInfo) -> &'static str {
    match info.set_by {
        SetBy::Job(setter) | SetBy::Factory(setter) => setter,
        SetBy::Flink(_) | SetBy::MemoryKeys | SetBy::Statebench => "a RocksDBOptionsFactory",
    }
}

/// A share of managed memory as the header says it (`83.3 %`).
fn fraction(share: f64) -> String {
    format!("{:.1} %", share * 100.0)
}

/// The profile as a Flink 1.20 `config.yaml` fragment (see [`flink_for`]).
pub fn flink(profile: &Profile) -> String {
    flink_for(profile, FlinkVersion::V1_20)
}

/// The profile as a `config.yaml` fragment for `version`, for a TaskManager of Flink's default
/// one slot (see [`flink_sized`]).
pub fn flink_for(profile: &Profile, version: FlinkVersion) -> String {
    flink_sized(profile, version, &Cluster::default()).text
}

/// A `flink` export and whether the profile fits the TaskManager it was sized for.
#[derive(Debug, Clone)]
pub struct FlinkExport {
    pub text: String,
    /// The fragment's live `key: value` lines, in order.
    pub keys: Vec<(String, String)>,
    /// The header's lines on the keys a configuration may set already (part of `text`).
    pub note: String,
    /// What the profile squeezes in the TaskManager (task heap, framework, JVM overhead), one
    /// sentence each (the export says them in comments too).
    pub warnings: Vec<String>,
    /// `Some(reason)` when the profile's memory does not fit the given TaskManager (the export
    /// says so in a comment too).
    pub misfit: Option<String>,
    /// The TaskManager's memory as Flink derives it with the export's lines in place.
    pub taskmanager: Option<TmMemory>,
}

/// The profile as a `config.yaml` fragment for `version` and `cluster`: only what the profile
/// sets (itself or through a profile other than `flink-default` it extends) is a live line;
/// every key it merely inherits keeps Flink's default, which `flink-default` holds. Memory is
/// managed memory sized for the cluster's slots (`memory.mode: managed`, Flink's default) or
/// `fixed-per-slot` with the task off-heap memory that must cover it; knobs Flink has no key
/// for are comments naming the options-factory call that applies them; values Flink overrides
/// are said where they stand; with a TaskManager size, Flink's whole memory derivation and
/// whether the profile fits.
pub fn flink_sized(profile: &Profile, version: FlinkVersion, cluster: &Cluster) -> FlinkExport {
    let k = &profile.knobs;
    let derived = profile.derived(crate::model::layout::frequency_data_column_families());
    let derives = if derived.shared {
        // A profile that sets no memory writes none: the cluster's managed memory per slot
        // decides, and these sizes hold at the one statebench measured with.
        let at = if profile.sets(Knob::ManagedMemory) || profile.sets(Knob::MemoryMode) {
            String::new()
        } else {
            format!(
                " at statebench's {} of managed memory a slot; the profile sets none, so your cluster's decides (the cache is {} of it, the WriteBufferManager {})",
                human_bytes(k.managed_memory.0 as f64),
                fraction((3.0 - k.write_buffer_ratio) / 3.0),
                fraction(2.0 * k.write_buffer_ratio / 3.0),
            )
        };
        format!(
            "block cache {}, WriteBufferManager {} ({} per state column family) per slot{at}",
            human_bytes(derived.block_cache_capacity as f64),
            human_bytes(derived.write_buffer_manager_capacity as f64),
            human_bytes(derived.write_buffer_budget_per_column_family as f64),
        )
    } else {
        format!(
            "a block cache of {} and memtables of up to {} x {} per column family, no budget",
            human_bytes(derived.block_cache_capacity as f64),
            k.max_write_buffer_number,
            human_bytes(k.write_buffer_size.0 as f64),
        )
    };
    let mut out = format!(
        "# statebench profile '{}' as Flink {} configuration (config.yaml).\n\
         # Only what the profile sets is written; every other key keeps Flink's default (statebench's flink-default).\n\
         # Flink derives from it: {derives}.\n",
        profile.name,
        version.name(),
    );
    if version == FlinkVersion::V2 {
        // statebench's targets are Flink 1.20's FRocksDB and RocksDB 11.8, neither of them 2.0's.
        out.push_str(&format!(
            "# Flink 2.0 embeds FRocksDB 8.10.0; statebench measured the profile with target '{}'.\n",
            k.target.name()
        ));
    }
    out.push_str("state.backend.type: rocksdb\n");
    let memory = memory_lines(profile, cluster);
    out.push_str(&memory.text);
    let mut factory = Vec::new();
    let mut disk = Vec::new();
    let mut job = Vec::new();
    let mut inherited = 0;
    for ((key, value), info) in flink_config(profile).into_iter().zip(KNOBS) {
        let knob = info.key;
        if matches!(
            info.knob,
            Knob::ManagedMemory | Knob::MemoryMode | Knob::Target
        ) {
            // Memory is written above; `target` is statebench's own (which RocksDB to imitate).
            continue;
        }
        if !profile.sets(info.knob) {
            inherited += 1;
            continue;
        }
        if info.is_job_setting() {
            job.push(format!("#   {knob}: {value}  ->  {}", setter(info)));
            continue;
        }
        if info.knob == Knob::CheckpointInterval && k.checkpoint_interval.0 == 0 {
            // Flink's checkpointing is off while the key is unset.
            out.push_str("# execution.checkpointing.interval: unset (checkpointing off)\n");
            continue;
        }
        if info.knob == Knob::IoRateLimit {
            // The disk statebench measured with (flink run's jobs apply it as this line says).
            disk.push(format!("#   {knob}: {value}  ->  {}", setter(info)));
            continue;
        }
        if key.starts_with(FACTORY_PREFIX) {
            factory.push(format!("#   {knob}: {value}  ->  {}", setter(info)));
            continue;
        }
        out.push_str(&format!("{key}: {value}\n"));
        if info.knob == Knob::PartitionedIndexFilters
            && k.partitioned_index_filters
            && !k.memory_mode.is_shared()
        {
            out.push_str(
                "# ^ not applied: Flink partitions index and filters only with a shared budget (not with memory.managed: false)\n",
            );
        }
        if info.knob == Knob::BlockCacheSize && k.memory_mode.is_shared() {
            out.push_str(
                "# ^ not applied: with a shared budget Flink replaces every column family's cache by the slot's\n",
            );
        }
        // Both releases build the partitioned filter with `new BloomFilter(10.0, false)`
        // (RocksDBResourceContainer, read from either jar).
        if info.knob == Knob::BloomBitsPerKey
            && k.use_bloom_filter
            && k.partitions_index_filters()
            && k.bloom_bits_per_key != FLINK_PARTITIONED_BLOOM_BITS
        {
            out.push_str(&format!(
                "# ^ not applied: with partitioned index/filters Flink {} uses {FLINK_PARTITIONED_BLOOM_BITS} bits per key\n",
                version.name()
            ));
        }
    }
    if inherited > 0 {
        out.push_str(&format!(
            "# {inherited} more knobs are Flink's defaults here: not written (`statebench profiles show {}` lists them).\n",
            profile.name
        ));
    }
    // The TTL compaction filter Flink attaches to states with a TTL; target rocksdb-11.8
    // measures without it.
    let modelled = if profile.target_options().ttl_compaction_filter {
        "as statebench reproduces it"
    } else {
        "statebench's target attaches none"
    };
    match version {
        FlinkVersion::V1_20 => out.push_str(&format!(
            "# TTL compaction filter ({modelled}): Flink 1.20 takes its settings from each state's\n\
             # StateTtlConfig (cleanupInRocksdbCompactFilter; defaults {QUERY_TIME_AFTER_NUM_ENTRIES} entries, {TTL_PERIODIC_COMPACTION_DAYS} days).\n"
        )),
        FlinkVersion::V2 => out.push_str(&format!(
            "# TTL compaction filter ({modelled}); Flink 2.x's defaults, which a state's StateTtlConfig overrides:\n\
             # {TTL_QUERY_TIME_KEY}: {QUERY_TIME_AFTER_NUM_ENTRIES}\n\
             # {TTL_PERIODIC_COMPACTION_KEY}: {TTL_PERIODIC_COMPACTION_DAYS}d\n"
        )),
    }
    if !job.is_empty() {
        out.push_str("# Settings of the job's sink and its checkpoint storage, not of Flink's configuration:\n");
        for line in job {
            out.push_str(&line);
            out.push('\n');
        }
    }
    if !factory.is_empty() {
        out.push_str(&format!(
            "# Not settable from Flink's configuration: a RocksDBOptionsFactory\n\
             # ({}, named by\n\
             # state.backend.rocksdb.options-factory) must apply these:\n",
            version.options_factory()
        ));
        for line in factory {
            out.push_str(&line);
            out.push('\n');
        }
    }
    if !disk.is_empty() {
        out.push_str(
            "# The disk statebench measured with, not a setting to deploy: this caps flush and compaction\n\
             # writes to stand for the disk's write bandwidth (a slot's share of a network disk). A\n\
             # RateLimiter set in production caps them there too; only to reproduce the measurement:\n",
        );
        for line in disk {
            out.push_str(&line);
            out.push('\n');
        }
    }
    out.push_str(&memory.report);
    let keys = live_keys(&out);
    let note = super::merge::paste_note(&keys, cluster);
    if let Some(at) = out.find("state.backend.type: rocksdb\n") {
        out.insert_str(at, &note);
    }
    FlinkExport {
        text: out,
        keys,
        note,
        misfit: memory.misfit,
        warnings: memory.warnings,
        taskmanager: memory.taskmanager,
    }
}

/// The `key: value` lines of a fragment this module wrote (every other line is a comment).
fn live_keys(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .filter_map(|l| l.split_once(": "))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::profile::KNOBS;

    #[test]
    fn factory_only_knobs_are_comments_with_the_call_that_sets_them() {
        let text = flink(&Profile::load("hours-monolithic-filter").unwrap());
        assert!(text.contains("state.backend.type: rocksdb\n"));
        assert!(text.contains("#   use-direct-reads: true  ->  DBOptions.setUseDirectReads"));
        assert!(!text.lines().any(|l| l.starts_with(FACTORY_PREFIX)));
        // Every knob the profile sets is a Flink key or a comment: nothing is lost silently.
        let profile = Profile::load("hours-monolithic-filter").unwrap();
        for info in KNOBS.iter().filter(|k| profile.sets(k.knob)) {
            let found = match (info.knob, info.flink_key) {
                (Knob::ManagedMemory, _) => text.contains("taskmanager.memory.managed.size: 32mb"),
                (_, Some(key)) => text.contains(key),
                (_, None) => text.contains(&format!("#   {}: ", info.key)),
            };
            assert!(found, "{}: {text}", info.key);
        }
    }
}
