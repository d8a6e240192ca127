//! A profile in the formats users deploy: Flink configuration, a RocksDB OPTIONS file, and
//! statebench's own YAML.

use std::path::Path;

use crate::backend::{BackendError, StateBackend};
use crate::config::flink::{FACTORY_PREFIX, flink_config};
use crate::config::profile::{FLINK_PARTITIONED_BLOOM_BITS, Knobs};
use crate::config::{Profile, units::human_bytes};

/// What `export` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// A Flink 1.20 `config.yaml` fragment (`state.backend.*` keys).
    Flink,
    /// The OPTIONS file RocksDB writes for the profile (RocksDB's INI format).
    RocksdbOptions,
    /// statebench's own profile YAML, every knob spelled out.
    Yaml,
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

/// The profile as a Flink 1.20 `config.yaml` fragment: every knob with a Flink key under it;
/// knobs Flink has no key for, set away from RocksDB's default, as comments naming the
/// options-factory call that applies them; values Flink overrides said where they stand.
pub fn flink(profile: &Profile) -> String {
    let k = &profile.knobs;
    let derived = profile.derived(crate::backend::STATE_COLUMN_FAMILIES.len());
    let mut out = format!(
        "# statebench profile '{}' as Flink 1.20 configuration (config.yaml).\n\
         # Flink derives from it: block cache {}, WriteBufferManager {} ({} per state column family).\n\
         state.backend.type: rocksdb\n",
        profile.name,
        human_bytes(derived.block_cache_capacity as f64),
        human_bytes(derived.write_buffer_manager_capacity as f64),
        human_bytes(derived.write_buffer_budget_per_column_family as f64),
    );
    let defaults: Vec<(&str, String)> = Knobs::default().values();
    let mut factory = Vec::new();
    for ((key, value), ((knob, knob_value), (_, default))) in flink_config(profile)
        .into_iter()
        .zip(k.values().into_iter().zip(defaults))
    {
        if key.starts_with(FACTORY_PREFIX) {
            // `target` is statebench's own: which RocksDB to imitate, nothing to deploy.
            if knob != "target" && knob_value != default {
                factory.push(format!("#   {knob}: {value}  ->  {}", factory_setter(knob)));
            }
            continue;
        }
        out.push_str(&format!("{key}: {value}\n"));
        if knob == "bloom-filter.bits-per-key"
            && k.use_bloom_filter
            && k.partitioned_index_filters
            && k.bloom_bits_per_key != FLINK_PARTITIONED_BLOOM_BITS
        {
            out.push_str(&format!(
                "# ^ not applied: with partitioned index/filters Flink 1.20 uses {FLINK_PARTITIONED_BLOOM_BITS} bits per key\n"
            ));
        }
    }
    if !factory.is_empty() {
        out.push_str(
            "# Not settable from Flink's configuration: a RocksDBOptionsFactory\n\
             # (state.backend.rocksdb.options-factory) must apply these:\n",
        );
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

/// The profile in `format`.
pub fn export(profile: &Profile, format: Format) -> Result<String, BackendError> {
    Ok(match format {
        Format::Flink => flink(profile),
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
