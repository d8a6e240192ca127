//! A profile in the formats users deploy: Flink configuration, a RocksDB OPTIONS file, and
//! statebench's own YAML.

use crate::backend::BackendError;
use crate::config::Profile;

mod fit;
mod flink;
mod memory;
mod merge;
mod options;

pub use flink::{
    FlinkExport, TTL_PERIODIC_COMPACTION_KEY, TTL_QUERY_TIME_KEY, flink, flink_for, flink_sized,
};
pub use memory::Cluster;
pub use merge::{Change, Merged, merge_into};
pub use options::rocksdb_options;

/// What `export` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// A Flink `config.yaml` fragment (`state.backend.*` keys), for `--flink-version`.
    Flink,
    /// The OPTIONS file RocksDB writes for the profile (RocksDB's INI format), as FRocksDB 6.20.3
    /// loads it for target flink-1.20.
    RocksdbOptions,
    /// statebench's own profile YAML: `extends: flink-default`, the knobs the profile sets, the
    /// others as comments.
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

/// The profile as statebench YAML (see [`Profile::to_yaml`]).
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
