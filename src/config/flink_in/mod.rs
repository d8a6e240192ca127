//! A Flink configuration read as a profile (`-p path/to/config.yaml`).
//!
//! Three layouts, as Flink reads them: `config.yaml` (Flink 1.19+ and 2.x: standard YAML, keys
//! flat as `state.backend.rocksdb.writebuffer.size: 64mb` or nested as
//! `state: {backend: {rocksdb: {...}}}`, which Flink flattens by joining the keys with dots),
//! and the legacy `flink-conf.yaml` (Flink 1.x: one `key: value` per line, not YAML: a `#`
//! starts a comment anywhere, the line is split at its first `": "`, nothing is unquoted).
//!
//! What is read: the `state.backend.rocksdb.*` keys the knob table names, the checkpointing and
//! changelog keys, the memory keys (turned into managed memory per slot as Flink derives it),
//! and statebench's own `statebench.<knob>` keys (knobs Flink has no key for, which the export
//! writes for an options factory, also as the comments the export writes). Every other key is
//! listed as read but ignored; a key Flink does not know is flagged with the nearest one it does.
//! Values are parsed in Flink's syntax: sizes `64 mb`/`64mb`/`67108864`, durations `10 s`/
//! `10s`/`10000` (ms), booleans, `;`-separated lists (or YAML lists), enum names in any case.
//!
//! Here: what reading finds ([`FlinkImport`]) and [`read`], which takes each key of the file to
//! a knob, to the memory keys or to the ignored ones. The file formats (and telling a Flink file
//! from a profile) are in `format`, Flink's value syntax in `values`, Flink's key lists (the
//! deprecated keys, the keys not applied) in `keys`, and the slot's memory budget in `memory`.

mod format;
mod keys;
mod memory;
mod values;

use std::collections::{HashMap, HashSet};
use std::path::Path;

use super::flink::FACTORY_PREFIX;
use super::profile::{KNOBS, Knob, KnobInfo, KnobValue, MemoryMode};
use super::tm_memory::{self, TmMemoryConfig};
use super::{ConfigError, Origin, nearest};
pub use format::{Format, KeySpan, Layout, SpanValue, detect, legacy_key_spans, yaml_key_spans};
use format::{comment_knobs, flatten_yaml, parse_legacy};
pub use keys::is_flink_key;
use keys::{key_lists, why_ignored};
use memory::{Memory, ROCKSDB_MEMORY_KEYS, is_memory_key};
pub use values::{FlinkValue, FromFlink, parse_flink_duration, parse_flink_size};

const BACKEND_TYPE: &str = "state.backend.type";
/// The knob saying whether a slot's budget is managed memory or fixed-per-slot (when the
/// profile has it).
const MEMORY_MODE: &str = Knob::MemoryMode.key();

/// A key the reader did not apply, and why when there is more to say than "not a knob".
#[derive(Debug, Clone, PartialEq)]
pub struct Ignored {
    pub key: String,
    pub why: Option<String>,
}

/// What reading a Flink configuration found: shown on stderr by the commands, and by
/// `profiles show`.
#[derive(Debug, Clone, PartialEq)]
pub struct FlinkImport {
    pub layout: Layout,
    /// Why the file was read as a Flink configuration.
    pub detected_by: String,
    /// Flink keys applied to knobs (flink key, knob).
    pub applied: Vec<(String, &'static str)>,
    /// How managed memory per slot was found.
    pub memory: String,
    /// Knobs read from the comments statebench's export writes (`knob: value`).
    pub from_comments: Vec<String>,
    pub ignored: Vec<Ignored>,
    /// Anything else the user should know (deprecated keys, a non-RocksDB state backend, …).
    pub notes: Vec<String>,
}

impl FlinkImport {
    /// The import as lines of text (no prefix).
    pub fn lines(&self, origin: &str) -> Vec<String> {
        let mut out = vec![format!(
            "{origin} read as a Flink configuration ({}), because {}",
            self.layout.describe(),
            self.detected_by
        )];
        out.push(format!(
            "{} Flink key(s) applied to the profile's knobs; unset ones keep Flink's defaults (profile flink-default)",
            self.applied.len()
        ));
        out.push(format!("managed memory per slot: {}", self.memory));
        if !self.from_comments.is_empty() {
            out.push(format!(
                "read from the comments statebench's export writes (for an options factory or the job): {}",
                self.from_comments.join(", ")
            ));
        }
        for note in &self.notes {
            out.push(note.clone());
        }
        if !self.ignored.is_empty() {
            let keys: Vec<String> = self
                .ignored
                .iter()
                .map(|i| match &i.why {
                    Some(why) => format!("{} ({why})", i.key),
                    None => i.key.clone(),
                })
                .collect();
            out.push(format!("read but ignored: {}", keys.join(", ")));
        }
        out
    }
}

/// One key a Flink configuration file sets, flattened as Flink flattens it, its value as a
/// string in Flink's syntax (a YAML list joined by `;`), and its line (1-based; 0 when unknown).
#[derive(Debug, Clone, PartialEq)]
pub struct SetKey {
    pub key: String,
    pub value: String,
    pub line: usize,
}

/// A Flink configuration file as Flink reads it: which format, how its keys are written, and
/// every key it sets in the order written.
#[derive(Debug, Clone, PartialEq)]
pub struct FlinkFile {
    pub format: Format,
    pub layout: Layout,
    pub keys: Vec<SetKey>,
    /// Lines Flink skips (a legacy file's lines that are not `key: value`).
    pub notes: Vec<String>,
}

impl FlinkFile {
    /// The value Flink ends up with for `key`: a later line wins, as in Flink.
    pub fn get(&self, key: &str) -> Option<&SetKey> {
        self.keys.iter().rev().find(|k| k.key == key)
    }
}

/// The format of a Flink configuration: Flink 1.x's legacy `flink-conf.yaml` by its name (as
/// Flink chooses), standard YAML otherwise; a file of another name that is not YAML but all
/// `key: value` lines is read as the legacy format.
fn format_of(origin: &Origin, text: &str) -> Format {
    let name = match origin {
        Origin::File(path) => path.file_name().and_then(|f| f.to_str()).unwrap_or(""),
        _ => "",
    };
    if name.ends_with("flink-conf.yaml") || name.ends_with("flink-conf.yml") {
        return Format::Legacy;
    }
    let named = name == "config.yaml" || name == "config.yml";
    if !named && serde_norway::from_str::<serde_norway::Value>(text).is_err() {
        let mut notes = Vec::new();
        let entries = parse_legacy(text, &mut notes);
        if notes.is_empty() && !entries.is_empty() {
            return Format::Legacy;
        }
    }
    Format::Yaml
}

/// Reads the keys of the Flink configuration `text` (from `origin`) as Flink does: the one
/// reader of Flink configuration files for every command (profiles, `--taskmanager-memory`,
/// `export --into`). Errors name the file and the line.
pub fn read_keys(origin: &Origin, text: &str) -> Result<FlinkFile, ConfigError> {
    read_keys_in(origin, text, format_of(origin, text))
}

/// [`read_keys`] of a file in `format`.
pub fn read_keys_in(origin: &Origin, text: &str, format: Format) -> Result<FlinkFile, ConfigError> {
    let mut notes = Vec::new();
    let (entries, layout) = match format {
        Format::Legacy => (parse_legacy(text, &mut notes), Layout::Legacy),
        // Comments alone: a configuration that sets nothing yet.
        Format::Yaml
            if matches!(
                serde_norway::from_str::<serde_norway::Value>(text),
                Ok(serde_norway::Value::Null)
            ) =>
        {
            (Vec::new(), Layout::Flat)
        }
        Format::Yaml => flatten_yaml(origin, text)?,
    };
    let keys = entries
        .into_iter()
        .map(|e| SetKey {
            value: match &e.value {
                FlinkValue::List(items) => items.join(";"),
                other => other.show(),
            },
            key: e.key,
            line: e.line,
        })
        .collect();
    Ok(FlinkFile {
        format,
        layout,
        keys,
        notes,
    })
}

/// The current key of a key Flink 1.20 or 2.0 deprecated (`state.backend` ->
/// `state.backend.type`).
pub fn current_key(deprecated: &str) -> Option<&'static str> {
    key_lists().deprecated.get(deprecated).copied()
}

/// Reads one file: its errors name the file, the key and the line. (Its memory keys are read in
/// `memory`.)
struct Reader<'a> {
    origin: &'a Origin,
}

impl Reader<'_> {
    fn bad(&self, key: &str, line: usize, message: String) -> ConfigError {
        ConfigError::Parse {
            origin: self.origin.to_string(),
            line,
            key: Some(key.to_string()),
            message,
        }
    }
}

/// Reads the Flink configuration `text` (from `origin`, in `format`) into a profile's YAML
/// (statebench keys, values in its syntax) and what the reading found. The caller parses the
/// YAML as a profile that extends `flink-default`.
pub fn read(
    origin: &Origin,
    text: &str,
    format: Format,
    detected_by: String,
) -> Result<(String, FlinkImport), ConfigError> {
    let reader = Reader { origin };
    let mut notes = Vec::new();
    let (entries, layout) = match format {
        Format::Legacy => (parse_legacy(text, &mut notes), Layout::Legacy),
        Format::Yaml => flatten_yaml(origin, text)?,
    };
    if entries.is_empty() {
        return Err(ConfigError::Invalid {
            origin: origin.to_string(),
            message: "the Flink configuration sets no key".to_string(),
        });
    }
    let lists = key_lists();
    // A later line with the same key wins, as in Flink; a deprecated key counts only when its
    // current key is not set.
    let mut last: HashMap<String, usize> = HashMap::new();
    for (i, e) in entries.iter().enumerate() {
        last.insert(e.key.clone(), i);
    }
    let set_keys: HashSet<&str> = entries.iter().map(|e| e.key.as_str()).collect();
    let mut ignored = Vec::new();
    let mut applied: Vec<(String, &'static str)> = Vec::new();
    let mut spec: Vec<(&'static str, String)> = Vec::new();
    let mut mem = Memory::default();
    for (i, entry) in entries.iter().enumerate() {
        if let Some(&later) = last.get(&entry.key)
            && later != i
        {
            let again = entries[later].line;
            ignored.push(Ignored {
                key: entry.key.clone(),
                why: Some(format!("set again on line {again}, which counts")),
            });
            continue;
        }
        let mut key = entry.key.as_str();
        if let Some(current) = lists.deprecated.get(key).copied()
            && is_read(current)
        {
            if set_keys.contains(current) {
                ignored.push(Ignored {
                    key: key.to_string(),
                    why: Some(format!("deprecated; {current} is set and counts")),
                });
                continue;
            }
            notes.push(format!(
                "'{key}' is deprecated: read as {current}, as Flink does"
            ));
            key = current;
        }
        if let Some(knob) = key.strip_prefix(FACTORY_PREFIX) {
            match KNOBS.iter().find(|i| i.key == knob) {
                Some(info) if info.flink_key.is_none() => {
                    let value = entry.value.scalar().map_err(|m| {
                        reader.bad(
                            key,
                            entry.line,
                            format!("{m} where '{key}' must be {}", info.expects),
                        )
                    })?;
                    check_profile_value(info, value).map_err(|m| reader.bad(key, entry.line, m))?;
                    spec.push((info.key, value.to_string()));
                    applied.push((key.to_string(), info.key));
                }
                Some(info) => ignored.push(Ignored {
                    key: key.to_string(),
                    why: Some(format!(
                        "Flink has a key for this knob: {}",
                        info.flink_key.unwrap_or_default()
                    )),
                }),
                None => {
                    let names: Vec<&str> = KNOBS.iter().map(|i| i.key).collect();
                    ignored.push(Ignored {
                        key: key.to_string(),
                        why: Some(match nearest(knob, &names) {
                            Some(n) => {
                                format!("not a statebench knob; did you mean {FACTORY_PREFIX}{n}?")
                            }
                            None => "not a statebench knob".to_string(),
                        }),
                    });
                }
            }
            continue;
        }
        if let Some(info) = KNOBS
            .iter()
            .find(|i| i.flink_key == Some(key) && i.knob != Knob::ManagedMemory)
        {
            let value =
                (info.from_flink)(&entry.value).map_err(|m| reader.bad(key, entry.line, m))?;
            spec.push((info.key, value));
            applied.push((key.to_string(), info.key));
            continue;
        }
        if let Some(&name) = ROCKSDB_MEMORY_KEYS.iter().find(|k| **k == key) {
            mem.values.insert(name, (entry.value.clone(), entry.line));
            continue;
        }
        if TmMemoryConfig::is_memory_key(key) {
            mem.tm
                .push((key.to_string(), entry.value.clone(), entry.line));
            continue;
        }
        if let Some(name) = key.strip_prefix(&format!("{}.", tm_memory::CONSUMER_WEIGHTS_KEY)) {
            mem.weight_entries
                .push((name.to_string(), entry.value.clone(), entry.line));
            continue;
        }
        if key == BACKEND_TYPE {
            let value = entry.value.show();
            if !value.to_ascii_lowercase().contains("rocksdb") {
                notes.push(format!(
                    "{BACKEND_TYPE} is '{value}' (line {}), not rocksdb: statebench measures the RocksDB state backend with this file's state.backend.rocksdb.* keys",
                    entry.line
                ));
            }
            continue;
        }
        ignored.push(Ignored {
            key: key.to_string(),
            why: why_ignored(key),
        });
    }
    // The export's comments for knobs Flink has no key for, unless a key set them.
    let mut from_comments = Vec::new();
    for (info, value, line) in comment_knobs(text) {
        if spec.iter().any(|(k, _)| *k == info.key) {
            continue;
        }
        check_profile_value(info, &value).map_err(|m| {
            reader.bad(
                &format!("{FACTORY_PREFIX}{}", info.key),
                line,
                format!("in a comment statebench's export writes: {m}"),
            )
        })?;
        from_comments.push(format!("{}: {value}", info.key));
        spec.push((info.key, value));
    }
    let memory = reader.memory(&mem)?;
    if let Some(bytes) = memory.bytes {
        spec.push((Knob::ManagedMemory.key(), bytes.to_string()));
    }
    // Where the budget lives (the profile's `memory.mode`), unless a comment said it.
    if (memory.bytes.is_some() || memory.mode == MemoryMode::Unmanaged)
        && !spec.iter().any(|(k, _)| *k == MEMORY_MODE)
    {
        spec.push((MEMORY_MODE, memory.mode.show()));
    }
    // Flink replaces every column family's own cache by the slot's shared one.
    if memory.mode.is_shared()
        && let Some(at) = spec
            .iter()
            .position(|(k, _)| *k == Knob::BlockCacheSize.key())
        && let Some(key) = Knob::BlockCacheSize.info().flink_key
    {
        spec.remove(at);
        applied.retain(|(k, _)| k != key);
        ignored.push(Ignored {
            key: key.to_string(),
            why: Some(
                "RocksDB's memory is shared (managed or fixed-per-slot): Flink replaces every column family's cache by the slot's shared one"
                    .to_string(),
            ),
        });
    }
    ignored.extend(memory.unused);
    applied.extend(
        memory
            .used
            .into_iter()
            .map(|k| (k, Knob::ManagedMemory.key())),
    );
    applied.retain(|(k, _)| !ignored.iter().any(|i| i.key == *k));
    let mut yaml = String::new();
    for (key, value) in &spec {
        yaml.push_str(&format!("{key}: {value}\n"));
    }
    Ok((
        yaml,
        FlinkImport {
            layout,
            detected_by,
            applied,
            memory: memory.explanation,
            from_comments,
            ignored,
            notes,
        },
    ))
}

/// Whether the reader applies `key` (so that its deprecated spelling is read as it).
fn is_read(key: &str) -> bool {
    is_memory_key(key) || key == BACKEND_TYPE || KNOBS.iter().any(|i| i.flink_key == Some(key))
}

/// A value in the profile's syntax for a knob Flink has no key for.
fn check_profile_value(info: &KnobInfo, value: &str) -> Result<(), String> {
    let origin = Origin::File(Path::new("value").to_path_buf());
    super::parse_yaml::<super::profile::ProfileSpec>(&format!("{}: {value}\n", info.key), &origin)
        .map(|_| ())
        .map_err(|_| format!("invalid value '{value}': must be {}", info.expects))
}
