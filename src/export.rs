//! A profile in the formats users deploy: Flink configuration, a RocksDB OPTIONS file, and
//! statebench's own YAML.

use std::path::Path;

use crate::backend::ttl_filter::QUERY_TIME_AFTER_NUM_ENTRIES;
use crate::backend::{BackendError, StateBackend};
use crate::config::flink::{FACTORY_PREFIX, flink_config};
use crate::config::profile::{FLINK_PARTITIONED_BLOOM_BITS, KNOBS, Knobs};
use crate::config::{Profile, units::human_bytes};

/// What `export` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// A Flink `config.yaml` fragment (`state.backend.*` keys), for `--flink-version`.
    Flink,
    /// The OPTIONS file RocksDB writes for the profile (RocksDB's INI format).
    RocksdbOptions,
    /// statebench's own profile YAML, every knob spelled out.
    Yaml,
}

/// The Flink release a `flink` export is for. Their RocksDB keys are listed, as extracted from
/// each release's `flink-dist` jar by `parity/flink-keys`, in `src/config/flink-1.20.1-keys.txt`
/// and `src/config/flink-2.0.0-keys.txt`. Every key a profile sets kept its name and meaning in
/// Flink 2.0 (and its RocksDBResourceContainer and memory formulas compile to the same
/// bytecode); what changed is the options factory's package and the TTL compaction filter's
/// settings, which became configuration keys.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum FlinkVersion {
    /// Flink 1.20 (FRocksDB 6.20.3), the release statebench imitates.
    #[default]
    #[value(name = "1.20")]
    V1_20,
    /// Flink 2.x (FRocksDB 8.10.0 in 2.0), keys checked against Flink 2.0.0.
    #[value(name = "2.x")]
    V2,
}

impl FlinkVersion {
    /// As users name it (`1.20`, `2.x`).
    pub fn name(self) -> &'static str {
        match self {
            FlinkVersion::V1_20 => "1.20",
            FlinkVersion::V2 => "2.x",
        }
    }

    /// The interface `state.backend.rocksdb.options-factory` names a class of: Flink 2.0 moved
    /// the RocksDB backend to `org.apache.flink.state.rocksdb` (the old interface is deprecated).
    fn options_factory(self) -> &'static str {
        match self {
            FlinkVersion::V1_20 => "org.apache.flink.contrib.streaming.state.RocksDBOptionsFactory",
            FlinkVersion::V2 => "org.apache.flink.state.rocksdb.RocksDBOptionsFactory",
        }
    }
}

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
const TTL_PERIODIC_COMPACTION_DAYS: u32 = 30;

/// Where a job setting (sink, checkpoint storage) is made instead of Flink's configuration.
fn job_setter(key: &str) -> &'static str {
    match key {
        "sink.delivery-guarantee" => {
            "KafkaSink.builder().setDeliveryGuarantee(DeliveryGuarantee.…)"
        }
        "sink.transaction-timeout" => {
            "the producer's transaction.timeout.ms (at most the broker's transaction.max.timeout.ms)"
        }
        "sink.idempotent" => "an upserting sink keyed by record id (dedupe on write)",
        "sink.reader-isolation" => "the downstream consumers' isolation.level",
        "checkpoint.upload-rate-per-sec" => "the bandwidth to the checkpoint storage (HDFS/S3)",
        _ => "the job's code",
    }
}

/// How an options factory sets a knob Flink's configuration has no key for (RocksJava).
fn factory_setter(key: &str) -> &'static str {
    match key {
        "use-direct-reads" => "DBOptions.setUseDirectReads",
        "use-direct-io-for-flush-and-compaction" => "DBOptions.setUseDirectIoForFlushAndCompaction",
        "io.rate-limit-per-sec" => "DBOptions.setRateLimiter(new RateLimiter(bytesPerSecond))",
        "compaction.level.multiplier" => "ColumnFamilyOptions.setMaxBytesForLevelMultiplier",
        "compaction.level0-slowdown-writes-trigger" => {
            "ColumnFamilyOptions.setLevel0SlowdownWritesTrigger"
        }
        "compaction.level0-stop-writes-trigger" => "ColumnFamilyOptions.setLevel0StopWritesTrigger",
        "compaction.soft-pending-compaction-bytes-limit" => {
            "ColumnFamilyOptions.setSoftPendingCompactionBytesLimit"
        }
        "compaction.hard-pending-compaction-bytes-limit" => {
            "ColumnFamilyOptions.setHardPendingCompactionBytesLimit"
        }
        "compaction.disable-auto-compactions" => "ColumnFamilyOptions.setDisableAutoCompactions",
        _ => "a RocksDBOptionsFactory",
    }
}

/// The profile as a Flink 1.20 `config.yaml` fragment (see [`flink_for`]).
pub fn flink(profile: &Profile) -> String {
    flink_for(profile, FlinkVersion::V1_20)
}

/// The profile as a `config.yaml` fragment for `version`: every knob with a Flink key under it;
/// knobs Flink has no key for, set away from RocksDB's default, as comments naming the
/// options-factory call that applies them; values Flink overrides said where they stand.
pub fn flink_for(profile: &Profile, version: FlinkVersion) -> String {
    let k = &profile.knobs;
    let derived = profile.derived(crate::backend::STATE_COLUMN_FAMILIES.len());
    let mut out = format!(
        "# statebench profile '{}' as Flink {} configuration (config.yaml).\n\
         # Flink derives from it: block cache {}, WriteBufferManager {} ({} per state column family).\n",
        profile.name,
        version.name(),
        human_bytes(derived.block_cache_capacity as f64),
        human_bytes(derived.write_buffer_manager_capacity as f64),
        human_bytes(derived.write_buffer_budget_per_column_family as f64),
    );
    if version == FlinkVersion::V2 {
        // statebench's targets are Flink 1.20's FRocksDB and RocksDB 11.8, neither of them 2.0's.
        out.push_str(&format!(
            "# Flink 2.0 embeds FRocksDB 8.10.0; statebench measured the profile with target '{}'.\n",
            k.target.name()
        ));
    }
    out.push_str("state.backend.type: rocksdb\n");
    let defaults: Vec<(&str, String)> = Knobs::default().values();
    let mut factory = Vec::new();
    let mut job = Vec::new();
    for ((key, value), ((knob, knob_value), (_, default))) in flink_config(profile)
        .into_iter()
        .zip(k.values().into_iter().zip(defaults))
    {
        if KNOBS.iter().any(|i| i.key == knob && i.is_job_setting()) {
            if knob_value != default {
                job.push(format!("#   {knob}: {value}  ->  {}", job_setter(knob)));
            }
            continue;
        }
        if knob == "execution.checkpointing.interval" && k.checkpoint_interval.0 == 0 {
            // Flink's checkpointing is off while the key is unset.
            out.push_str("# execution.checkpointing.interval: unset (checkpointing off)\n");
            continue;
        }
        if key.starts_with(FACTORY_PREFIX) {
            // `target` is statebench's own: which RocksDB to imitate, nothing to deploy.
            if knob != "target" && knob_value != default {
                factory.push(format!("#   {knob}: {value}  ->  {}", factory_setter(knob)));
            }
            continue;
        }
        out.push_str(&format!("{key}: {value}\n"));
        // Both releases build the partitioned filter with `new BloomFilter(10.0, false)`
        // (RocksDBResourceContainer, read from either jar).
        if knob == "bloom-filter.bits-per-key"
            && k.use_bloom_filter
            && k.partitioned_index_filters
            && k.bloom_bits_per_key != FLINK_PARTITIONED_BLOOM_BITS
        {
            out.push_str(&format!(
                "# ^ not applied: with partitioned index/filters Flink {} uses {FLINK_PARTITIONED_BLOOM_BITS} bits per key\n",
                version.name()
            ));
        }
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
            "# TTL compaction filter ({modelled}); a state's StateTtlConfig overrides these:\n\
             {TTL_QUERY_TIME_KEY}: {QUERY_TIME_AFTER_NUM_ENTRIES}\n\
             {TTL_PERIODIC_COMPACTION_KEY}: {TTL_PERIODIC_COMPACTION_DAYS}d\n"
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
    out
}

/// The OPTIONS file RocksDB writes when it opens the profile's column families (in a temporary
/// directory): the options really in effect, in RocksDB's own INI format.
pub fn rocksdb_options(profile: &Profile) -> Result<String, BackendError> {
    let dir = tempfile::Builder::new()
        .prefix("statebench-export-")
        .tempdir()
        .map_err(|e| BackendError::Setup(format!("cannot create a temporary directory: {e}")))?;
    let backend = StateBackend::open(dir.path(), profile)?;
    let path = backend
        .latest_options_file()?
        .ok_or_else(|| BackendError::Corrupt("RocksDB wrote no OPTIONS file".to_string()))?;
    let text = read(&path)?;
    // RocksDB writes its bloom filter policy by name alone (`filter_policy=bloomfilter`), which
    // LoadOptionsFromFile turns into no filter at all: write the form it loads, with the bits
    // per key RocksDB really uses.
    let text = match profile.knobs.effective_bloom_bits_per_key() {
        Some(bits) => text.replace(
            "filter_policy=bloomfilter\n",
            &format!("filter_policy=bloomfilter:{bits}:false\n"),
        ),
        None => text,
    };
    // Its [Version] section names the RocksDB that wrote it.
    Ok(format!(
        "# statebench profile '{}' (target {}): the OPTIONS file RocksDB wrote for it.\n{text}",
        profile.name,
        profile.knobs.target.name(),
    ))
}

fn read(path: &Path) -> Result<String, BackendError> {
    std::fs::read_to_string(path)
        .map_err(|e| BackendError::Setup(format!("cannot read {}: {e}", path.display())))
}

/// The profile as statebench YAML, every knob spelled out (no `extends:`).
pub fn yaml(profile: &Profile) -> String {
    let description = profile
        .description
        .clone()
        .unwrap_or_else(|| format!("{} (exported by statebench)", profile.name));
    profile.to_yaml(&description)
}

/// The profile in `format` (Flink 1.20's configuration for `flink`).
pub fn export(profile: &Profile, format: Format) -> Result<String, BackendError> {
    export_for(profile, format, FlinkVersion::default())
}

/// The profile in `format`, Flink configuration for `flink_version`.
pub fn export_for(
    profile: &Profile,
    format: Format,
    flink_version: FlinkVersion,
) -> Result<String, BackendError> {
    Ok(match format {
        Format::Flink => flink_for(profile, flink_version),
        Format::RocksdbOptions => rocksdb_options(profile)?,
        Format::Yaml => yaml(profile),
    })
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
        // Every knob is either a Flink key or a comment: nothing is lost silently.
        assert!(
            KNOBS
                .iter()
                .all(|k| k.flink_key.is_none_or(|f| text.contains(f)))
        );
    }
}
