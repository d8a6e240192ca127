//! RocksDB's OPTIONS file: what RocksDB really runs with. statebench reads it back after opening
//! and checks every knob of the profile against it — a setting in a YAML file is not proof that
//! it is in effect (case study 2).

use std::collections::BTreeMap;

use crate::config::Profile;
use crate::config::profile::{OptionInfo, RocksOption, Section, in_section, loadable_bloom_filter};

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
        self.get(&Section::Db.header(""), key)
    }

    pub fn cf(&self, cf: &str, key: &str) -> Option<&str> {
        self.get(&Section::Cf.header(cf), key)
    }

    pub fn table(&self, cf: &str, key: &str) -> Option<&str> {
        self.get(&Section::Table.header(cf), key)
    }

    /// `option`'s value: in DBOptions, or in column family `cf`'s section.
    pub fn option(&self, cf: &str, option: RocksOption) -> Option<&str> {
        let info = option.info();
        self.get(&info.section.header(cf), info.name)
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

/// Checks that RocksDB applied every knob of `profile` to `column_families`: every row of the
/// knobs' RocksDB options (`config::profile::ROCKSDB_OPTIONS`), DBOptions once and the column
/// families' sections for each.
pub fn verify(profile: &Profile, file: &OptionsFile, column_families: &[&str]) -> Vec<Mismatch> {
    let k = &profile.knobs;
    let mut out = Vec::new();
    let mut check = |section: String, option: &OptionInfo| {
        let found = file.get(&section, option.name);
        let value = option.value(k);
        let (expected, ok) = match k.effective_bloom_bits_per_key() {
            // RocksDB 11 writes a policy built in code by its class name alone (its bits per
            // key are checked from the SST files' table properties,
            // `measured_bloom_bits_per_key`); one loaded from an OPTIONS file (statebench
            // export) with its bits, which must be the effective ones.
            Some(bits) if option.option == RocksOption::FilterPolicy => {
                let loaded = loadable_bloom_filter(bits);
                let ok = found == Some(value.as_str()) || found == Some(loaded.as_str());
                (format!("{value} or {loaded}"), ok)
            }
            _ => {
                let ok = found.is_some_and(|f| same_value(f, &value));
                (value, ok)
            }
        };
        if !ok {
            out.push(Mismatch {
                section,
                option: option.name.to_string(),
                expected,
                found: found.map(str::to_string),
            });
        }
    };
    for option in in_section(Section::Db) {
        check(Section::Db.header(""), option);
    }
    for cf in column_families {
        for section in [Section::Cf, Section::Table] {
            for option in in_section(section) {
                check(section.header(cf), option);
            }
        }
    }
    out
}
