//! A profile as Flink configuration lines: every knob under the Flink key the knob table names,
//! in the value syntax Flink parses; knobs Flink has no key for under `statebench.<knob>`, for a
//! `RocksDBOptionsFactory` to apply (the parity job in `parity/` reads them).

use super::Profile;
use super::profile::{Compression, KNOBS};

/// Prefix of the lines for knobs Flink has no configuration key for.
pub const FACTORY_PREFIX: &str = "statebench.";

/// Flink's `CompressionType` name for a compression (the value syntax of its per-level key).
fn flink_compression(c: Compression) -> &'static str {
    match c {
        Compression::None => "NO_COMPRESSION",
        Compression::Snappy => "SNAPPY_COMPRESSION",
        Compression::Lz4 => "LZ4_COMPRESSION",
        Compression::Lz4hc => "LZ4HC_COMPRESSION",
        Compression::Zstd => "ZSTD_COMPRESSION",
        Compression::Zlib => "ZLIB_COMPRESSION",
        Compression::Bzip2 => "BZLIB2_COMPRESSION",
    }
}

/// `(key, value)` for every knob of `profile`, in knob-table order: the Flink key where the
/// knob table names one, `statebench.<knob>` otherwise. Values are in the syntax the profile
/// YAML uses (sizes like `64mb`, which Flink's `MemorySize` parses), but for the compression
/// list, which Flink writes as `;`-separated `CompressionType` names.
pub fn flink_config(profile: &Profile) -> Vec<(String, String)> {
    let k = &profile.knobs;
    k.values()
        .into_iter()
        .map(|(key, value)| {
            let flink_key = KNOBS
                .iter()
                .find(|knob| knob.key == key)
                .and_then(|knob| knob.flink_key);
            let value = if key == COMPRESSION_KEY {
                let names: Vec<&str> = k
                    .compression_per_level
                    .iter()
                    .map(|c| flink_compression(*c))
                    .collect();
                names.join(";")
            } else {
                value
            };
            let key = flink_key.map_or_else(|| format!("{FACTORY_PREFIX}{key}"), str::to_string);
            (key, value)
        })
        .collect()
}

/// The knob whose value Flink writes in its own syntax.
const COMPRESSION_KEY: &str = "compression.per.level";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_knob_has_one_line_in_flinks_syntax() {
        let profile = Profile::load("flink-default").unwrap();
        let lines = flink_config(&profile);
        assert_eq!(lines.len(), KNOBS.len());
        let get = |key: &str| {
            lines
                .iter()
                .find(|(k, _)| k == key)
                .map(|(_, v)| v.as_str())
        };
        assert_eq!(
            get("state.backend.rocksdb.memory.fixed-per-slot"),
            Some("256mb")
        );
        assert_eq!(get("state.backend.rocksdb.writebuffer.count"), Some("2"));
        assert_eq!(get("state.backend.rocksdb.use-bloom-filter"), Some("false"));
        assert_eq!(get("statebench.use-direct-reads"), Some("false"));
        assert_eq!(
            get("state.backend.rocksdb.compression.per.level"),
            Some("SNAPPY_COMPRESSION")
        );
    }
}
