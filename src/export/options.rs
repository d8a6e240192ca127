//! A profile as a RocksDB OPTIONS file: RocksDB's own, and as FRocksDB 6.20.3 (Flink 1.20's)
//! loads it.

use std::path::Path;

use crate::backend::{BackendError, StateBackend};
use crate::config::Profile;
use crate::config::profile::{BLOOM_FILTER, RocksOption, loadable_bloom_filter};
use crate::config::target::Target;

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
        Some(bits) => {
            let policy = RocksOption::FilterPolicy.name();
            text.replace(
                &format!("{policy}={BLOOM_FILTER}\n"),
                &format!("{policy}={}\n", loadable_bloom_filter(bits)),
            )
        }
        None => text,
    };
    // What loading the file does not give: the cache and the WriteBufferManager are objects.
    let derived = profile.derived(crate::model::layout::frequency_data_column_families());
    // The rate limiter is an object too, and statebench's stands for the disk it measured with.
    let limiter = match profile.knobs.io_rate_limit.0 {
        0 => String::new(),
        rate => format!(
            "# Not in the file either: the RateLimiter of {rate} bytes/s (io.rate-limit-per-sec) that stands for\n\
             # the disk statebench measured with, not a setting to deploy; RocksDB derived\n\
             # delayed_write_rate={rate} from it (its own default is 16777216, Flink's too).\n"
        ),
    };
    let memory = if derived.shared {
        format!(
            "# Not in the file (objects, not options): one LRU block cache of {} bytes (high-priority pool\n\
             # {}) shared by every column family, and a WriteBufferManager of {} bytes charged to it.\n{limiter}",
            derived.block_cache_capacity,
            derived.high_pri_pool_ratio,
            derived.write_buffer_manager_capacity
        )
    } else {
        format!(
            "# Not in the file (an object, not an option): each column family's own LRU block cache of {} bytes\n\
             # (memory.mode unmanaged); no WriteBufferManager.\n{limiter}",
            derived.block_cache_capacity
        )
    };
    if profile.knobs.target == Target::Flink120 {
        // Flink 1.20's FRocksDB 6.20.3 refuses options it does not know (and a newer version
        // header does not make it lenient): its version, its options only.
        let (text, dropped) = for_frocksdb_6_20(&text);
        let mut listed = String::from("#  ");
        let mut width = 3;
        for (i, name) in dropped.iter().enumerate() {
            let item = if i + 1 < dropped.len() {
                format!(" {name},")
            } else {
                format!(" {name}")
            };
            if width + item.len() > 100 {
                listed.push_str("\n#  ");
                width = 3;
            }
            width += item.len();
            listed.push_str(&item);
        }
        return Ok(format!(
            "# statebench profile '{}' (target {}): the OPTIONS file RocksDB wrote for it, as FRocksDB 6.20.3\n\
             # (Flink 1.20) reads it: its version header, only the options it knows. Left out, {} options\n\
             # of RocksDB 11.8 that 6.20.3 does not have:\n{listed}\n{memory}{text}",
            profile.name,
            profile.knobs.target.name(),
            dropped.len(),
        ));
    }
    // Its [Version] section names the RocksDB that wrote it.
    Ok(format!(
        "# statebench profile '{}' (target {}): the OPTIONS file RocksDB wrote for it.\n{memory}{text}",
        profile.name,
        profile.knobs.target.name(),
    ))
}

/// The OPTIONS file FRocksDB 6.20.3 writes (parity/job's `OptionsFileCheck template`): the
/// option names it knows per section and the fields of its struct-valued options.
pub(super) const FROCKSDB_6_20_OPTIONS: &str = include_str!("../config/frocksdb-6.20.3-OPTIONS");

/// The kind of an OPTIONS section header (`[CFOptions "default"]` -> `CFOptions`).
pub(super) fn section_kind(line: &str) -> Option<&str> {
    let inner = line.trim().strip_prefix('[')?.strip_suffix(']')?;
    Some(inner.split(' ').next().unwrap_or(inner))
}

/// The `a=1;b={x=2;};` fields of a struct value (braces stripped), split at the top level.
pub(super) fn struct_fields(value: &str) -> Option<Vec<&str>> {
    let inner = value.trim().strip_prefix('{')?.strip_suffix('}')?;
    let mut fields = Vec::new();
    let (mut depth, mut start) = (0usize, 0usize);
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            ';' if depth == 0 => {
                if i > start {
                    fields.push(&inner[start..i]);
                }
                start = i + 1;
            }
            _ => {}
        }
    }
    if start < inner.len() {
        fields.push(&inner[start..]);
    }
    Some(fields)
}

/// Options the export takes from FRocksDB 6.20.3's own file rather than from the RocksDB 11.8
/// statebench runs: 11.8's default, which 6.20 does not keep when it opens a database with it,
/// and no profile or target sets. (section kind, option, why)
pub(super) const FROCKSDB_6_20_OWN: &[(&str, &str, &str)] = &[(
    "DBOptions",
    "write_dbid_to_manifest",
    "where the DB id is recorded; 6.20 loads true but opens with false",
)];

/// An option's value in FRocksDB 6.20.3's own file.
pub(super) fn template_value(kind: &str, key: &str) -> Option<String> {
    let mut current = "";
    for line in FROCKSDB_6_20_OPTIONS.lines() {
        if let Some(k) = section_kind(line) {
            current = k;
            continue;
        }
        if current == kind
            && let Some((k, v)) = line.trim().split_once('=')
            && k == key
        {
            return Some(v.to_string());
        }
    }
    None
}

/// Section kind -> option -> the fields 6.20 knows of a struct-valued option (None: a plain
/// value).
pub(super) type KnownOptions =
    std::collections::HashMap<String, std::collections::HashMap<String, Option<Vec<String>>>>;

pub(super) fn frocksdb_6_20_options() -> KnownOptions {
    let mut known = KnownOptions::new();
    let mut kind = String::new();
    for line in FROCKSDB_6_20_OPTIONS.lines() {
        if let Some(k) = section_kind(line) {
            kind = k.to_string();
            continue;
        }
        let Some((key, value)) = line.trim().split_once('=') else {
            continue;
        };
        let fields = struct_fields(value).map(|fields| {
            fields
                .iter()
                .filter_map(|f| f.split_once('=').map(|(name, _)| name.to_string()))
                .collect()
        });
        known
            .entry(kind.clone())
            .or_default()
            .insert(key.to_string(), fields);
    }
    known
}

/// RocksDB 11.8's OPTIONS text as FRocksDB 6.20.3 loads it: 6.20.3's version header, only the
/// options (and struct fields) 6.20.3 knows. Returns the text and the options left out.
pub(super) fn for_frocksdb_6_20(text: &str) -> (String, Vec<String>) {
    let known = frocksdb_6_20_options();
    let mut out = String::new();
    let mut dropped: Vec<String> = Vec::new();
    let mut kind = String::new();
    for line in text.lines() {
        if let Some(k) = section_kind(line) {
            kind = k.to_string();
            out.push_str(line);
            out.push('\n');
            if kind == "Version" {
                out.push_str("  rocksdb_version=6.20.3\n  options_file_version=1.1\n");
            }
            continue;
        }
        let Some((key, value)) = line.trim().split_once('=') else {
            out.push_str(line);
            out.push('\n');
            continue;
        };
        if kind == "Version" {
            continue;
        }
        let indent = &line[..line.len() - line.trim_start().len()];
        if let Some(value) = FROCKSDB_6_20_OWN
            .iter()
            .find(|(k, o, _)| *k == kind && *o == key)
            .and_then(|_| template_value(&kind, key))
        {
            out.push_str(&format!("{indent}{key}={value}\n"));
            continue;
        }
        match known.get(&kind).and_then(|options| options.get(key)) {
            None => {
                let name = format!("{kind}.{key}");
                if !dropped.contains(&name) {
                    dropped.push(name);
                }
            }
            Some(Some(fields)) => {
                let kept: Vec<&str> = struct_fields(value)
                    .unwrap_or_default()
                    .into_iter()
                    .filter(|f| {
                        f.split_once('=')
                            .is_some_and(|(name, _)| fields.iter().any(|k| k == name))
                    })
                    .collect();
                let body: String = kept.iter().map(|f| format!("{f};")).collect();
                out.push_str(&format!("{indent}{key}={{{body}}}\n"));
            }
            Some(None) => {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    (out, dropped)
}

pub(super) fn read(path: &Path) -> Result<String, BackendError> {
    std::fs::read_to_string(path)
        .map_err(|e| BackendError::Setup(format!("cannot read {}: {e}", path.display())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::profile::ROCKSDB_OPTIONS;

    /// The record of the knobs' RocksDB options says which of them FRocksDB 6.20.3 has: its own
    /// OPTIONS file must agree (the flink-1.20 export leaves out the others).
    #[test]
    fn frocksdb_6_20_has_exactly_the_options_the_record_says_it_has() {
        let known = frocksdb_6_20_options();
        for o in ROCKSDB_OPTIONS {
            let has = known
                .get(o.section.kind())
                .is_some_and(|options| options.contains_key(o.name));
            assert_eq!(has, o.frocksdb_6_20, "{} {}", o.section.kind(), o.name);
        }
    }
}
