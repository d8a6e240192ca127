//! RocksDB profiles: the tuning knobs of Flink's RocksDB state backend, with `extends:`
//! inheritance, human units, validation, and Flink's managed-memory derivation.
//!
//! Here: a profile and how it is loaded (a file, a built-in, a Flink configuration, a report's
//! knobs) with its `extends:` chain. The knob table (every knob's key, how Flink sets it, default
//! and whether it can change live) is in `knobs`, the RocksDB options the knobs set (their
//! OPTIONS names) in `options`, the knobs' value types in `values`, and the checks on a
//! profile's knobs (what RocksDB or Flink would refuse) in `validate`.

mod knobs;
mod options;
mod validate;
mod values;

use std::path::{Path, PathBuf};

use serde::Serialize;

pub use super::derived::Derived;
use super::flink_in::{self, FlinkImport};
use super::{ConfigError, Origin, locate, parse_yaml};
pub use knobs::{
    FIXED_PER_SLOT_KEY, FLINK_PARTITIONED_BLOOM_BITS, KNOBS, Knob, KnobInfo, Knobs, Live,
    ProfileSpec, SetBy, is_live,
};
pub use options::{
    BLOOM_FILTER, Form, NOT_SET, OptionInfo, ROCKSDB_OPTIONS, RocksOption, Section, in_section,
    loadable_bloom_filter,
};
pub use values::{
    CheckpointKind, CheckpointingMode, Compression, DeliveryGuarantee, IsolationLevel, KnobValue,
    MemoryMode,
};

/// Profiles compiled into the binary, so `statebench run` works from any directory.
pub const BUILTIN: &[(&str, &str)] = &[
    (
        "flink-default",
        include_str!("../../../profiles/flink-default.yaml"),
    ),
    (
        "minutes-wbm-starved",
        include_str!("../../../profiles/minutes-wbm-starved.yaml"),
    ),
    (
        "minutes-wbm-sized",
        include_str!("../../../profiles/minutes-wbm-sized.yaml"),
    ),
    (
        "hours-monolithic-filter",
        include_str!("../../../profiles/hours-monolithic-filter.yaml"),
    ),
    (
        "hours-partitioned-filter",
        include_str!("../../../profiles/hours-partitioned-filter.yaml"),
    ),
    (
        "hours-levels-default",
        include_str!("../../../profiles/hours-levels-default.yaml"),
    ),
    (
        "hours-levels-sized",
        include_str!("../../../profiles/hours-levels-sized.yaml"),
    ),
];

/// An effective, validated profile.
#[derive(Debug, Clone, Serialize)]
pub struct Profile {
    pub name: String,
    /// Where it was loaded from (a path, or `built-in 'name'`), and its `extends` chain.
    pub source: String,
    pub extends_chain: Vec<String>,
    pub description: Option<String>,
    pub knobs: Knobs,
    /// The knobs this profile sets itself or inherits from a profile other than
    /// `flink-default`, in knob-table order. Every other knob has Flink's default value
    /// (`flink-default` names each RocksDB knob with it), which an export leaves to Flink.
    #[serde(skip)]
    pub set_knobs: Vec<Knob>,
    /// When the file was a Flink configuration: what was read, derived and ignored.
    #[serde(skip)]
    pub flink_import: Option<FlinkImport>,
    /// The Flink configuration file it is or extends (the nearest): its TaskManager's memory
    /// (slots, sizes) is the cluster an export is for, unless told another.
    #[serde(skip)]
    pub flink_config: Option<PathBuf>,
}

impl Profile {
    /// Loads a profile by path or built-in name, following `extends:`. A Flink configuration
    /// (`config.yaml`, `flink-conf.yaml`, or Flink's keys) is read as a profile that extends
    /// `flink-default` (see `flink_in`).
    pub fn load(name: &str) -> Result<Profile, ConfigError> {
        let in_folder = flink_conf_in_folder(name)?;
        let name = in_folder.as_deref().unwrap_or(name);
        let (origin, text) = locate("profile", name, BUILTIN)?;
        let (mut spec, flink_import) = read_spec(&origin, &text)?;
        let mut set = if is_flink_default(&origin, &text) {
            Vec::new()
        } else {
            spec.set_knobs()
        };
        let name = origin.name();
        let mut chain = vec![name.clone()];
        // Cycles are found by where each profile comes from: a file named like a built-in it
        // extends is not a cycle.
        let mut seen = vec![origin.to_string()];
        let mut parent_origin = origin.clone();
        // A Flink configuration's unset keys are Flink's defaults: the built-in, never a file
        // of that name next to it.
        let mut builtin_parent = flink_import.is_some();
        let file = |o: &Origin| match o {
            Origin::File(path) => Some(path.clone()),
            Origin::Builtin(_) => None,
        };
        let mut flink_config = flink_import.as_ref().and_then(|_| file(&origin));
        while let Some(parent) = spec.extends.clone() {
            let parent_ref = if builtin_parent {
                parent.clone()
            } else {
                resolve_relative(&parent_origin, &parent)
            };
            let (porigin, ptext) =
                locate("profile", &parent_ref, BUILTIN).map_err(|e| match e {
                    ConfigError::NotFound { available, .. } => ConfigError::Invalid {
                        origin: parent_origin.to_string(),
                        message: format!(
                            "extends: profile '{parent}' not found (built-in: {available})"
                        ),
                    },
                    other => other,
                })?;
            let pname = porigin.name();
            if seen.contains(&porigin.to_string()) || chain.len() > 16 {
                chain.push(pname);
                return Err(ConfigError::Cycle(chain.join(" -> ")));
            }
            chain.push(pname);
            seen.push(porigin.to_string());
            let (pspec, pimport) = read_spec(&porigin, &ptext)?;
            builtin_parent = pimport.is_some();
            if builtin_parent && flink_config.is_none() {
                flink_config = file(&porigin);
            }
            if !is_flink_default(&porigin, &ptext) {
                set.extend(pspec.set_knobs());
            }
            spec = spec.inherit(pspec);
            parent_origin = porigin;
        }
        let profile = Profile {
            name,
            source: origin.to_string(),
            extends_chain: chain[1..].to_vec(),
            description: spec.description.clone(),
            knobs: spec.resolve(),
            flink_import,
            flink_config,
            set_knobs: Vec::new(),
        };
        // A knob with a value other than flink-default's is the profile's own even where no
        // file names it (a profile that does not extend flink-default gets the built-in
        // defaults, e.g. 64mb of managed memory).
        set.extend(profile.differences_from_flink_default());
        let profile = Profile {
            set_knobs: in_table_order(&set),
            ..profile
        };
        profile.validate().map_err(|message| ConfigError::Invalid {
            origin: origin.to_string(),
            message: match &profile.flink_import {
                Some(_) => in_flink_words(&message),
                None => message,
            },
        })?;
        Ok(profile)
    }

    /// This profile with knob `key` set to `value` (YAML syntax, e.g. `8mb`), validated as a
    /// profile file would be.
    pub fn edited(&self, key: &str, value: &str) -> Result<Profile, ConfigError> {
        let origin = super::Origin::File(std::path::PathBuf::from(format!("edit of '{key}'")));
        let Some(info) = KNOBS.iter().find(|k| k.key == key) else {
            return Err(ConfigError::Invalid {
                origin: origin.to_string(),
                message: format!("unknown knob '{key}'"),
            });
        };
        let text = format!("{key}: {value}\n");
        // A value of the wrong kind is refused in the knob's words, not the YAML parser's.
        let spec: ProfileSpec = parse_yaml(&text, &origin).map_err(|_| ConfigError::Invalid {
            origin: origin.to_string(),
            message: format!("'{key}' must be {}, not '{value}'", info.expects),
        })?;
        let current = ProfileSpec::from_knobs(&self.knobs);
        let mut profile = self.clone();
        profile.knobs = spec.inherit(current).resolve();
        let mut set = profile.set_knobs.clone();
        set.push(info.knob);
        profile.set_knobs = in_table_order(&set);
        profile.validate().map_err(|message| ConfigError::Invalid {
            origin: origin.to_string(),
            message,
        })?;
        Ok(profile)
    }

    /// The knobs whose values differ from `flink-default`'s, in knob-table order.
    fn differences_from_flink_default(&self) -> Vec<Knob> {
        let Ok(default) = flink_default_knobs() else {
            // flink-default is compiled in and its loading tested: every knob counts as set
            // if it ever failed to parse.
            return KNOBS.iter().map(|k| k.knob).collect();
        };
        self.knobs
            .values()
            .into_iter()
            .zip(default.values())
            .zip(KNOBS)
            .filter(|(((_, here), (_, there)), _)| here != there)
            .map(|(_, info)| info.knob)
            .collect()
    }

    /// Whether the profile sets `knob` (itself or through a parent other than
    /// `flink-default`): false means the knob has Flink's default value.
    pub fn sets(&self, knob: Knob) -> bool {
        self.set_knobs.contains(&knob)
    }

    /// The knobs whose values differ from `from`'s: (key, value in `from`, value here).
    pub fn knob_differences(&self, from: &Profile) -> Vec<(&'static str, String, String)> {
        from.knobs
            .values()
            .into_iter()
            .zip(self.knobs.values())
            .filter(|((_, old), (_, new))| old != new)
            .map(|((key, old), (_, new))| (key, old, new))
            .collect()
    }

    /// The profile as one YAML file: `extends: flink-default`, the knobs it sets, and every
    /// other knob as a comment with its value (Flink's default, which `flink-default` gives).
    /// It loads back as the same profile, setting the same knobs.
    pub fn to_yaml(&self, description: &str) -> String {
        let mut out = format!(
            "description: {}\nextends: {FLINK_DEFAULT}\n",
            serde_json::to_string(description).unwrap_or_default()
        );
        let mut defaults = Vec::new();
        for ((key, value), info) in self.knobs.values().into_iter().zip(KNOBS) {
            if self.sets(info.knob) {
                out.push_str(&format!("{key}: {value}\n"));
            } else {
                defaults.push(format!("# {key}: {value}\n"));
            }
        }
        if !defaults.is_empty() {
            out.push_str("# Flink's defaults (from flink-default), not set by this profile:\n");
            out.extend(defaults);
        }
        out
    }

    /// The profile a report recorded: its `knobs` object (knobs a report lacks, from an older
    /// build, take their defaults), validated as a profile file is.
    pub fn from_report(
        name: &str,
        knobs: &serde_json::Value,
        origin: &str,
    ) -> Result<Profile, ConfigError> {
        let spec: ProfileSpec =
            serde_json::from_value(knobs.clone()).map_err(|e| ConfigError::Invalid {
                origin: origin.to_string(),
                message: format!("the profile's knobs: {e}"),
            })?;
        Profile::from_knobs(name, spec.resolve()).map_err(|e| match e {
            ConfigError::Invalid { message, .. } => ConfigError::Invalid {
                origin: origin.to_string(),
                message,
            },
            other => other,
        })
    }

    /// A profile from knobs built in code (tests, live tuning): it sets the knobs whose values
    /// differ from `flink-default`'s.
    pub fn from_knobs(name: &str, knobs: Knobs) -> Result<Profile, ConfigError> {
        let mut profile = Profile {
            name: name.to_string(),
            source: "in-memory".to_string(),
            extends_chain: Vec::new(),
            description: None,
            knobs,
            flink_import: None,
            flink_config: None,
            set_knobs: Vec::new(),
        };
        profile.set_knobs = profile.differences_from_flink_default();
        profile.validate().map_err(|message| ConfigError::Invalid {
            origin: name.to_string(),
            message,
        })?;
        Ok(profile)
    }
}

/// A profile file's spec, or a Flink configuration's (which extends `flink-default`) with
/// what reading it found.
fn read_spec(
    origin: &Origin,
    text: &str,
) -> Result<(ProfileSpec, Option<FlinkImport>), ConfigError> {
    if let Some((format, detected_by)) = flink_in::detect(origin, text) {
        let (yaml, import) = flink_in::read(origin, text, format, detected_by)?;
        let mut spec: ProfileSpec = if yaml.is_empty() {
            ProfileSpec::default()
        } else {
            parse_yaml(&yaml, origin)?
        };
        spec.extends = Some("flink-default".to_string());
        spec.description = Some(format!("Flink configuration {origin}"));
        return Ok((spec, Some(import)));
    }
    if text
        .lines()
        .all(|l| l.trim().is_empty() || l.trim_start().starts_with('#'))
    {
        return Err(ConfigError::Invalid {
            origin: origin.to_string(),
            message: "the profile is empty: write 'extends: flink-default' for Flink's defaults, then the knobs that differ".to_string(),
        });
    }
    Ok((parse_yaml(text, origin)?, None))
}

/// A folder given as a profile is Flink's configuration folder: its `config.yaml`, else its
/// `flink-conf.yaml` (the order Flink 1.19 and 1.20 look in).
fn flink_conf_in_folder(name: &str) -> Result<Option<String>, ConfigError> {
    let dir = Path::new(name);
    if !dir.is_dir() {
        return Ok(None);
    }
    ["config.yaml", "flink-conf.yaml"]
        .iter()
        .map(|f| dir.join(f))
        .find(|p| p.is_file())
        .map(|p| Some(p.to_string_lossy().into_owned()))
        .ok_or_else(|| ConfigError::Invalid {
            origin: dir.display().to_string(),
            message: "a folder with neither a config.yaml nor a flink-conf.yaml in it: give a profile file, a Flink configuration file or folder, or a built-in profile's name".to_string(),
        })
}

/// A validation message about a Flink configuration, with Flink's keys for the knobs'.
fn in_flink_words(message: &str) -> String {
    let mut out = message.to_string();
    for info in KNOBS {
        let flink = match (info.knob, info.flink_key) {
            (Knob::ManagedMemory, _) => "managed memory per slot".to_string(),
            (_, Some(key)) => key.to_string(),
            (_, None) => format!("{}{}", super::flink::FACTORY_PREFIX, info.key),
        };
        out = out.replace(&format!("'{}'", info.key), &format!("'{flink}'"));
    }
    out
}

/// The built-in profile whose knobs are Flink's defaults.
pub const FLINK_DEFAULT: &str = "flink-default";

/// Whether a profile text is `flink-default`'s: the built-in, or a copy of its file.
fn is_flink_default(origin: &Origin, text: &str) -> bool {
    matches!(origin, Origin::Builtin(name) if *name == FLINK_DEFAULT)
        || BUILTIN
            .iter()
            .any(|(name, builtin)| *name == FLINK_DEFAULT && *builtin == text)
}

/// `flink-default`'s knobs.
fn flink_default_knobs() -> Result<Knobs, ConfigError> {
    let (origin, text) = locate("profile", FLINK_DEFAULT, BUILTIN)?;
    let spec: ProfileSpec = parse_yaml(&text, &origin)?;
    Ok(spec.resolve())
}

/// `knobs` without repeats, in knob-table order.
fn in_table_order(knobs: &[Knob]) -> Vec<Knob> {
    KNOBS
        .iter()
        .map(|k| k.knob)
        .filter(|k| knobs.contains(k))
        .collect()
}

/// `extends: x` in a file is looked up next to that file first, then among the built-ins.
fn resolve_relative(origin: &Origin, parent: &str) -> String {
    if let Origin::File(path) = origin {
        let dir = path.parent().unwrap_or(Path::new("."));
        let itself = std::fs::canonicalize(path).ok();
        for candidate in [dir.join(parent), dir.join(format!("{parent}.yaml"))] {
            // A file cannot extend itself: `extends: flink-default` in a saved
            // `flink-default.yaml` means the built-in.
            if candidate.is_file() && std::fs::canonicalize(&candidate).ok() != itself {
                return candidate.to_string_lossy().into_owned();
            }
        }
    }
    parent.to_string()
}
