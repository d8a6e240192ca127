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

/// A knob's value in Flink's syntax: sizes as statebench writes them (`64mb`, which Flink's
/// `MemorySize` parses), lists of compressions as Flink's `;`-separated enum names.
fn flink_value(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Array(items) => items
            .iter()
            .map(|item| {
                serde_json::from_value::<Compression>(item.clone())
                    .map(|c| flink_compression(c).to_string())
                    .unwrap_or_else(|_| flink_value(item))
            })
            .collect::<Vec<_>>()
            .join(";"),
        other => other.to_string(),
    }
}

/// `(key, value)` for every knob of `profile`, in knob-table order: the Flink key where the
/// knob table names one, `statebench.<knob>` otherwise.
pub fn flink_config(profile: &Profile) -> Vec<(String, String)> {
    let values = serde_json::to_value(&profile.knobs).unwrap_or_default();
    KNOBS
        .iter()
        .filter_map(|knob| {
            let value = flink_value(values.get(knob.key)?);
            let key = match knob.flink_key {
                Some(flink) => flink.to_string(),
                None => format!("{FACTORY_PREFIX}{}", knob.key),
            };
            Some((key, value))
        })
        .collect()
}

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
