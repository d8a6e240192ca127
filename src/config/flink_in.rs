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

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;
use std::sync::OnceLock;

use super::flink::FACTORY_PREFIX;
use super::profile::{Compression, KNOBS, Knob, KnobInfo};
use super::tm_memory::{self, TmMemoryConfig, TmMemoryError};
use super::{ByteSize, ConfigError, Origin, nearest};

/// Flink's keys as `parity/flink-keys` extracted them from each release's `flink-dist` jar.
const KEYS_1_20: &str = include_str!("flink-1.20.1-keys.txt");
const KEYS_2_0: &str = include_str!("flink-2.0.0-keys.txt");

/// Key families the key lists hold whole: a key in them that neither list has is not Flink's.
const COVERED_FAMILIES: &[&str] = &[
    "state.backend.rocksdb.",
    "state.changelog.",
    "state.checkpoints.",
    "state.savepoints.",
    "execution.checkpointing.",
    "taskmanager.memory.",
];

/// First segments of Flink's configuration keys: a file with a top-level key in one of these
/// namespaces (flat or nested) is read as a Flink configuration.
const FLINK_NAMESPACES: &[&str] = &[
    "state",
    "execution",
    "taskmanager",
    "jobmanager",
    "pipeline",
    "parallelism",
    "rest",
    "web",
    "high-availability",
    "restart-strategy",
    "metrics",
    "env",
    "blob",
    "classloader",
    "cluster",
    "security",
    "kubernetes",
    "yarn",
    "akka",
    "pekko",
    "io",
    "fs",
    "s3",
    "table",
    "heartbeat",
    "slot",
    "slotmanager",
    "resourcemanager",
    "process",
    "historyserver",
    "statebench",
];

/// The memory keys statebench reads (a slot's RocksDB budget is derived from them).
const FIXED_PER_SLOT: &str = "state.backend.rocksdb.memory.fixed-per-slot";
const FIXED_PER_TM: &str = "state.backend.rocksdb.memory.fixed-per-tm";
const USE_MANAGED: &str = "state.backend.rocksdb.memory.managed";
const BACKEND_TYPE: &str = "state.backend.type";
/// The knob saying whether a slot's budget is managed memory or fixed-per-slot (when the
/// profile has it).
const MEMORY_MODE: &str = "memory.mode";
const MANAGED_SIZE: &str = tm_memory::MANAGED_SIZE_KEY;
const MANAGED_FRACTION: &str = tm_memory::MANAGED_FRACTION_KEY;
const PROCESS_SIZE: &str = tm_memory::PROCESS_SIZE_KEY;
const FLINK_SIZE: &str = tm_memory::FLINK_SIZE_KEY;
const SLOTS: &str = tm_memory::SLOTS_KEY;

/// Keys that change what RocksDB does but that statebench does not apply, and what it does
/// instead: said next to the key in the list of ignored keys.
const NOT_APPLIED: &[(&str, &str)] = &[
    (
        "state.backend.rocksdb.predefined-options",
        "statebench applies DEFAULT; set the options it changes as keys",
    ),
    (
        "state.backend.rocksdb.options-factory",
        "statebench cannot run a Java factory; it reads the statebench.* keys the export writes for one",
    ),
    (
        "state.backend.rocksdb.block.cache-size",
        "Flink uses it only without a shared budget, which statebench does not model",
    ),
    (
        "state.backend.rocksdb.compaction.style",
        "statebench compacts by LEVEL, Flink's default",
    ),
    (
        "state.backend.rocksdb.timer-service.factory",
        "statebench keeps timers in RocksDB, Flink's default",
    ),
    (
        "state.backend.rocksdb.files.open",
        "statebench leaves RocksDB's max_open_files at Flink's default",
    ),
    (
        "state.backend.rocksdb.compaction.filter.query-time-after-num-entries",
        "statebench's TTL compaction filter has Flink's default, 1000",
    ),
    (
        "state.backend.rocksdb.compaction.filter.periodic-compaction-time",
        "statebench's TTL compaction filter has Flink's default, 30 days",
    ),
    (
        "state.backend.rocksdb.write-batch-size",
        "statebench writes state one key at a time",
    ),
];

/// A value as the file holds it: text, a list (a YAML list, or `a;b` split later), or nothing.
#[derive(Debug, Clone, PartialEq)]
pub enum FlinkValue {
    Scalar(String),
    List(Vec<String>),
    Null,
}

impl FlinkValue {
    fn show(&self) -> String {
        match self {
            FlinkValue::Scalar(s) => s.clone(),
            FlinkValue::List(items) => format!("[{}]", items.join(", ")),
            FlinkValue::Null => String::new(),
        }
    }

    pub(crate) fn scalar(&self) -> Result<&str, String> {
        match self {
            FlinkValue::Scalar(s) => Ok(s.trim()),
            FlinkValue::List(_) => Err(format!("a list '{}'", self.show())),
            FlinkValue::Null => Err("no value".to_string()),
        }
    }
}

/// A knob's value in Flink's syntax, turned into the profile's: `Err` says what is valid.
pub trait FromFlink {
    fn from_flink(value: &FlinkValue) -> Result<String, String>;
}

fn expected(value: &FlinkValue, what: &str) -> String {
    match value.scalar() {
        Ok(text) => format!("invalid value '{text}': Flink expects {what}"),
        Err(got) => format!("{got} where Flink expects {what}"),
    }
}

const SIZE_SYNTAX: &str = "a whole number of bytes with an optional unit (b, k/kb, m/mb, g/gb, t/tb, any case, a space allowed), e.g. '64 mb', '64mb' or '67108864'";
const DURATION_SYNTAX: &str = "a whole number with an optional unit (ms, s, min/m, h, d, also spelt out as seconds, minutes, …; none = milliseconds), e.g. '10 s', '10s' or '10000'";

/// Flink's `MemorySize.parse` (the TaskManager derivation's parser).
pub fn parse_flink_size(text: &str) -> Option<u64> {
    super::tm_memory::parse_memory_size(text).ok()
}

/// Flink's `TimeUtils.parseDuration`, in whole milliseconds.
pub fn parse_flink_duration(text: &str) -> Option<u64> {
    let text = text.trim();
    let end = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let number: u64 = text[..end].parse().ok()?;
    let unit = text[end..].trim().to_lowercase();
    let nanos_per: u128 = match unit.as_str() {
        "ns" | "nano" | "nanos" | "nanosecond" | "nanoseconds" => 1,
        "µs" | "micro" | "micros" | "microsecond" | "microseconds" => 1_000,
        "" | "ms" | "milli" | "millis" | "millisecond" | "milliseconds" => 1_000_000,
        "s" | "sec" | "secs" | "second" | "seconds" => 1_000_000_000,
        "m" | "min" | "minute" | "minutes" => 60_000_000_000,
        "h" | "hour" | "hours" => 3_600_000_000_000,
        "d" | "day" | "days" => 86_400_000_000_000,
        _ => return None,
    };
    let nanos = u128::from(number) * nanos_per;
    // statebench counts whole milliseconds.
    nanos
        .is_multiple_of(1_000_000)
        .then(|| u64::try_from(nanos / 1_000_000).ok())
        .flatten()
}

impl FromFlink for super::ByteSize {
    fn from_flink(value: &FlinkValue) -> Result<String, String> {
        value
            .scalar()
            .ok()
            .and_then(parse_flink_size)
            .map(|b| b.to_string())
            .ok_or_else(|| expected(value, SIZE_SYNTAX))
    }
}

impl FromFlink for super::Millis {
    fn from_flink(value: &FlinkValue) -> Result<String, String> {
        value
            .scalar()
            .ok()
            .and_then(parse_flink_duration)
            .map(|ms| ms.to_string())
            .ok_or_else(|| expected(value, DURATION_SYNTAX))
    }
}

impl FromFlink for bool {
    fn from_flink(value: &FlinkValue) -> Result<String, String> {
        match value.scalar().map(str::to_ascii_lowercase).as_deref() {
            Ok("true") => Ok("true".to_string()),
            Ok("false") => Ok("false".to_string()),
            _ => Err(expected(value, "true or false")),
        }
    }
}

impl FromFlink for u32 {
    fn from_flink(value: &FlinkValue) -> Result<String, String> {
        value
            .scalar()
            .ok()
            .and_then(|s| s.parse::<u32>().ok())
            .map(|n| n.to_string())
            .ok_or_else(|| expected(value, "a whole number such as 4"))
    }
}

impl FromFlink for super::profile::MemoryMode {
    fn from_flink(value: &FlinkValue) -> Result<String, String> {
        match value.scalar().map(str::to_ascii_lowercase).as_deref() {
            Ok("managed") => Ok("managed".to_string()),
            Ok("fixed-per-slot") => Ok("fixed-per-slot".to_string()),
            _ => Err(expected(value, "managed or fixed-per-slot")),
        }
    }
}

impl FromFlink for f64 {
    fn from_flink(value: &FlinkValue) -> Result<String, String> {
        value
            .scalar()
            .ok()
            .and_then(|s| s.trim_end_matches(['d', 'D', 'f', 'F']).parse::<f64>().ok())
            .filter(|f| f.is_finite())
            .map(|f| format!("{f}"))
            .ok_or_else(|| expected(value, "a number such as 0.5"))
    }
}

/// Flink's `CompressionType` names (FRocksDB's enum); matched in any case, as Flink does.
const COMPRESSION_TYPES: &[(&str, Option<Compression>)] = &[
    ("NO_COMPRESSION", Some(Compression::None)),
    ("SNAPPY_COMPRESSION", Some(Compression::Snappy)),
    ("ZLIB_COMPRESSION", Some(Compression::Zlib)),
    ("BZLIB2_COMPRESSION", Some(Compression::Bzip2)),
    ("LZ4_COMPRESSION", Some(Compression::Lz4)),
    ("LZ4HC_COMPRESSION", Some(Compression::Lz4hc)),
    ("ZSTD_COMPRESSION", Some(Compression::Zstd)),
    ("XPRESS_COMPRESSION", None),
    ("DISABLE_COMPRESSION_OPTION", None),
];

impl FromFlink for Vec<Compression> {
    fn from_flink(value: &FlinkValue) -> Result<String, String> {
        let valid = "CompressionType names, one per level, L0 first, separated by ';' (or a YAML list): NO_COMPRESSION, SNAPPY_COMPRESSION, LZ4_COMPRESSION, LZ4HC_COMPRESSION, ZSTD_COMPRESSION, ZLIB_COMPRESSION, BZLIB2_COMPRESSION";
        let items: Vec<String> = match value {
            FlinkValue::Scalar(s) => s.split(';').map(|i| i.trim().to_string()).collect(),
            FlinkValue::List(items) => items.iter().map(|i| i.trim().to_string()).collect(),
            FlinkValue::Null => return Err(format!("no value where Flink expects {valid}")),
        };
        let mut names = Vec::new();
        for item in &items {
            match COMPRESSION_TYPES
                .iter()
                .find(|(name, _)| name.eq_ignore_ascii_case(item))
            {
                Some((_, Some(c))) => names.push(format!("{c:?}").to_lowercase()),
                Some((name, None)) => {
                    return Err(format!(
                        "'{name}' in '{}' is not one statebench's RocksDB builds with; valid: {valid}",
                        value.show()
                    ));
                }
                None => {
                    return Err(format!(
                        "invalid compression '{item}' in '{}': Flink expects {valid}",
                        value.show()
                    ));
                }
            }
        }
        Ok(format!("[{}]", names.join(", ")))
    }
}

impl FromFlink for super::profile::CheckpointingMode {
    fn from_flink(value: &FlinkValue) -> Result<String, String> {
        match value.scalar().map(str::to_ascii_uppercase).as_deref() {
            Ok(m @ ("EXACTLY_ONCE" | "AT_LEAST_ONCE")) => Ok(m.to_string()),
            _ => Err(expected(value, "EXACTLY_ONCE or AT_LEAST_ONCE")),
        }
    }
}

/// Knobs Flink has no key for are only read from `statebench.<knob>`, in the profile's syntax.
macro_rules! statebench_syntax {
    ($($ty:ty),*) => {$(
        impl FromFlink for $ty {
            fn from_flink(value: &FlinkValue) -> Result<String, String> {
                value.scalar().map(str::to_string)
            }
        }
    )*};
}
statebench_syntax!(
    super::target::Target,
    super::profile::DeliveryGuarantee,
    super::profile::IsolationLevel
);

/// Which of Flink's file formats a configuration is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `config.yaml` of Flink 1.19+ and 2.x: standard YAML.
    Yaml,
    /// `flink-conf.yaml` of Flink 1.x: `key: value` lines.
    Legacy,
}

/// How the keys of a `config.yaml` are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    Flat,
    Nested,
    Mixed,
    Legacy,
}

impl Layout {
    fn describe(self) -> &'static str {
        match self {
            Layout::Flat => "config.yaml format (Flink 1.19+/2.x standard YAML), flat keys",
            Layout::Nested => "config.yaml format (Flink 1.19+/2.x standard YAML), nested keys",
            Layout::Mixed => {
                "config.yaml format (Flink 1.19+/2.x standard YAML), flat and nested keys"
            }
            Layout::Legacy => "legacy flink-conf.yaml format (Flink 1.x: 'key: value' lines)",
        }
    }
}

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

/// Flink's keys (both releases): every key, and the current key of each deprecated one.
struct KeyLists {
    known: HashSet<&'static str>,
    sorted: Vec<&'static str>,
    deprecated: HashMap<&'static str, &'static str>,
}

fn key_lists() -> &'static KeyLists {
    static LISTS: OnceLock<KeyLists> = OnceLock::new();
    LISTS.get_or_init(|| {
        let mut known = HashSet::new();
        let mut deprecated = HashMap::new();
        for line in KEYS_1_20
            .lines()
            .chain(KEYS_2_0.lines())
            .filter(|l| !l.starts_with('#'))
        {
            let mut fields = line.split('\t');
            let (Some(key), Some(_class), Some(kind)) =
                (fields.next(), fields.next(), fields.next())
            else {
                continue;
            };
            known.insert(key);
            if let Some(current) = kind.strip_prefix("deprecated of ") {
                deprecated.entry(key).or_insert(current);
            }
        }
        let mut sorted: Vec<&'static str> = known.iter().copied().collect();
        sorted.sort_unstable();
        KeyLists {
            known,
            sorted,
            deprecated,
        }
    })
}

/// Whether Flink 1.20.1 or 2.0.0 has `key` (the families the key lists cover).
pub fn is_flink_key(key: &str) -> bool {
    key_lists().known.contains(key)
}

/// One `key: value` of the file, flattened, with the line it is on (0 when unknown).
#[derive(Debug, Clone)]
struct Entry {
    key: String,
    value: FlinkValue,
    line: usize,
}

/// Whether `text` from `origin` is a Flink configuration, and why: by its file name
/// (`config.yaml`, `flink-conf.yaml`), or by a key in one of Flink's namespaces (flat or
/// nested) that is not a statebench profile's. A file whose keys are all a profile's stays a
/// profile (they share the checkpointing keys).
pub fn detect(origin: &Origin, text: &str) -> Option<(Format, String)> {
    let Origin::File(path) = origin else {
        return None;
    };
    let file = path.file_name().and_then(|f| f.to_str()).unwrap_or("");
    if file.ends_with("flink-conf.yaml") || file.ends_with("flink-conf.yml") {
        return Some((
            Format::Legacy,
            format!("its name is {file} (Flink 1.x's legacy file)"),
        ));
    }
    let named = file == "config.yaml" || file == "config.yml";
    let value: serde_norway::Value = match serde_norway::from_str(text) {
        Ok(v) => v,
        // A config.yaml with a YAML error is reported by the Flink reader; any other file by
        // the profile reader, as before.
        Err(_) => {
            return named.then(|| (Format::Yaml, format!("its name is {file}")));
        }
    };
    let serde_norway::Value::Mapping(map) = value else {
        return named.then(|| (Format::Yaml, format!("its name is {file}")));
    };
    let keys: Vec<(String, bool)> = map
        .iter()
        .map(|(k, v)| (scalar_text(k), v.is_mapping()))
        .collect();
    // `extends:` and `description:` are a profile's alone.
    if keys
        .iter()
        .any(|(k, _)| k == "extends" || k == "description")
    {
        return None;
    }
    let knob_key = |k: &str| Knob::from_key(k).is_some();
    if named {
        return Some((Format::Yaml, format!("its name is {file}")));
    }
    if keys.iter().all(|(k, _)| knob_key(k)) {
        return None;
    }
    let lines = yaml_key_lines(text);
    keys.iter()
        .find(|(k, nested)| {
            !knob_key(k)
                && (is_flink_key(k)
                    || FLINK_NAMESPACES.contains(&k.split('.').next().unwrap_or(""))
                        && (k.contains('.') || *nested))
        })
        .map(|(k, _)| {
            let line = lines.get(k.as_str()).copied().unwrap_or(0);
            let at = if line > 0 {
                format!(" (line {line})")
            } else {
                String::new()
            };
            (
                Format::Yaml,
                format!("key '{k}'{at} is Flink's, not a statebench profile's"),
            )
        })
}

fn scalar_text(value: &serde_norway::Value) -> String {
    match value {
        serde_norway::Value::String(s) => s.clone(),
        serde_norway::Value::Bool(b) => b.to_string(),
        serde_norway::Value::Number(n) => n.to_string(),
        serde_norway::Value::Null => String::new(),
        serde_norway::Value::Tagged(t) => scalar_text(&t.value),
        other => serde_norway::to_string(other)
            .map(|s| s.trim().to_string())
            .unwrap_or_default(),
    }
}

/// The line of each key of a block-style YAML file, by its flattened (dotted) path.
fn yaml_key_lines(text: &str) -> HashMap<String, usize> {
    let mut lines = HashMap::new();
    let mut stack: Vec<(usize, String)> = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let content = line.trim_start();
        if content.is_empty()
            || content.starts_with('#')
            || content.starts_with("- ")
            || content.starts_with("---")
        {
            continue;
        }
        let indent = line.len() - content.len();
        let Some(colon) = content
            .char_indices()
            .find(|&(i, c)| c == ':' && content[i + 1..].chars().next().is_none_or(|n| n == ' '))
            .map(|(i, _)| i)
        else {
            continue;
        };
        let key = content[..colon]
            .trim()
            .trim_matches(['"', '\''])
            .to_string();
        while stack.last().is_some_and(|(i, _)| *i >= indent) {
            stack.pop();
        }
        let mut path: Vec<&str> = stack.iter().map(|(_, k)| k.as_str()).collect();
        path.push(&key);
        lines.entry(path.join(".")).or_insert(n + 1);
        stack.push((indent, key));
    }
    lines
}

/// The line of `key`, or of the nearest enclosing key written on a line of its own (a key in a
/// flow mapping `{...}` has none).
fn line_of(lines: &HashMap<String, usize>, key: &str) -> usize {
    let mut path = key;
    loop {
        if let Some(line) = lines.get(path) {
            return *line;
        }
        match path.rfind('.') {
            Some(dot) => path = &path[..dot],
            None => return 0,
        }
    }
}

/// Flattens a config.yaml as Flink does: nested maps joined with dots.
fn flatten_yaml(origin: &Origin, text: &str) -> Result<(Vec<Entry>, Layout), ConfigError> {
    let value: serde_norway::Value =
        serde_norway::from_str(text).map_err(|err| ConfigError::Parse {
            origin: origin.to_string(),
            line: err.location().map_or(0, |l| l.line()),
            key: None,
            message: {
                let full = err.to_string();
                match full.find(" at line ") {
                    Some(at) => full[..at].to_string(),
                    None => full,
                }
            },
        })?;
    let map = match value {
        serde_norway::Value::Mapping(map) => map,
        serde_norway::Value::Null => {
            return Err(ConfigError::Invalid {
                origin: origin.to_string(),
                message: "the Flink configuration is empty: it sets no key".to_string(),
            });
        }
        _ => {
            return Err(ConfigError::Invalid {
                origin: origin.to_string(),
                message: "a Flink config.yaml is a mapping of keys to values ('key: value' lines)"
                    .to_string(),
            });
        }
    };
    let lines = yaml_key_lines(text);
    let mut entries = Vec::new();
    let (mut flat, mut nested) = (false, false);
    fn walk(
        prefix: &str,
        map: &serde_norway::Mapping,
        entries: &mut Vec<Entry>,
        lines: &HashMap<String, usize>,
        nested: &mut bool,
    ) {
        for (k, v) in map {
            let key = if prefix.is_empty() {
                scalar_text(k)
            } else {
                format!("{prefix}.{}", scalar_text(k))
            };
            match v {
                serde_norway::Value::Mapping(inner) => {
                    *nested = true;
                    walk(&key, inner, entries, lines, nested);
                }
                other => {
                    let value = match other {
                        serde_norway::Value::Sequence(items) => {
                            FlinkValue::List(items.iter().map(scalar_text).collect())
                        }
                        serde_norway::Value::Null => FlinkValue::Null,
                        scalar => FlinkValue::Scalar(scalar_text(scalar)),
                    };
                    let line = line_of(lines, &key);
                    entries.push(Entry { key, value, line });
                }
            }
        }
    }
    walk("", &map, &mut entries, &lines, &mut nested);
    for (k, v) in &map {
        if !v.is_mapping() && scalar_text(k).contains('.') {
            flat = true;
        }
    }
    let layout = match (flat, nested) {
        (true, true) => Layout::Mixed,
        (false, true) => Layout::Nested,
        _ => Layout::Flat,
    };
    Ok((entries, layout))
}

/// Flink 1.x's `GlobalConfiguration.loadYAMLResource`: lines it cannot split are skipped (and
/// said so here); a later line with the same key wins.
fn parse_legacy(text: &str, notes: &mut Vec<String>) -> Vec<Entry> {
    let mut entries = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let conf = line.split('#').next().unwrap_or("").trim();
        if conf.is_empty() {
            continue;
        }
        match conf.split_once(": ") {
            Some((k, v)) if !k.trim().is_empty() && !v.trim().is_empty() => entries.push(Entry {
                key: k.trim().to_string(),
                value: FlinkValue::Scalar(v.trim().to_string()),
                line: n + 1,
            }),
            _ => notes.push(format!(
                "line {} skipped, as Flink skips it: '{conf}' is not a 'key: value' pair (a space after ':' and a value are needed)",
                n + 1
            )),
        }
    }
    entries
}

/// The knobs statebench's export writes as comments: `#   knob: value  ->  setter` (options
/// factory and job settings) and `# statebench.knob: value`.
fn comment_knobs(text: &str) -> Vec<(&'static KnobInfo, String, usize)> {
    let mut found = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let Some(comment) = line.trim_start().strip_prefix('#') else {
            continue;
        };
        let body = comment.trim();
        let (body, arrow) = match body.split_once("  ->  ") {
            Some((b, _)) => (b.trim(), true),
            None => (body, false),
        };
        let Some((key, value)) = body.split_once(": ") else {
            continue;
        };
        let (key, prefixed) = match key.strip_prefix(FACTORY_PREFIX) {
            Some(k) => (k, true),
            None => (key, false),
        };
        if !(arrow || prefixed) {
            continue;
        }
        if let Some(info) = KNOBS.iter().find(|i| i.key == key && i.flink_key.is_none()) {
            found.push((info, value.trim().to_string(), n + 1));
        }
    }
    found
}

/// The memory keys, as read: RocksDB's own, and the TaskManager's (`tm_memory` reads those).
#[derive(Default)]
struct Memory {
    values: BTreeMap<&'static str, (FlinkValue, usize)>,
    /// TaskManager memory keys in file order: (key, value, line).
    tm: Vec<(String, FlinkValue, usize)>,
    /// `consumer-weights.<NAME>: weight` (a nested map, which Flink reads as the map's entries).
    weight_entries: Vec<(String, FlinkValue, usize)>,
}

/// RocksDB's memory keys, which say where a slot's budget comes from.
const ROCKSDB_MEMORY_KEYS: &[&str] = &[FIXED_PER_SLOT, FIXED_PER_TM, USE_MANAGED];

fn is_memory_key(key: &str) -> bool {
    ROCKSDB_MEMORY_KEYS.contains(&key) || TmMemoryConfig::is_memory_key(key)
}

/// A slot's managed memory for RocksDB, how it was found, the memory keys that counted and
/// those that were read but did not count (with why).
struct MemoryOutcome {
    bytes: Option<u64>,
    /// Whether the budget is fixed-per-slot (outside managed memory) rather than managed.
    fixed_per_slot: bool,
    explanation: String,
    used: Vec<String>,
    unused: Vec<Ignored>,
}

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

    fn size(&self, mem: &Memory, key: &str) -> Result<Option<u64>, ConfigError> {
        mem.values
            .get(key)
            .map(|(v, line)| {
                v.scalar()
                    .ok()
                    .and_then(parse_flink_size)
                    .ok_or_else(|| self.bad(key, *line, expected(v, SIZE_SYNTAX)))
            })
            .transpose()
    }

    /// The TaskManager memory keys, parsed as Flink parses them; legacy keys `tm_memory` does
    /// not derive from come back apart (key, line, why).
    #[allow(clippy::type_complexity)]
    fn tm_config(
        &self,
        mem: &Memory,
    ) -> Result<(TmMemoryConfig, Vec<(String, usize, String)>), ConfigError> {
        let mut config = TmMemoryConfig::default();
        let mut legacy = Vec::new();
        let mut weights: Vec<String> = Vec::new();
        let mut weights_line = 0;
        for (key, value, line) in &mem.tm {
            let text = match value {
                FlinkValue::List(items) if key == tm_memory::CONSUMER_WEIGHTS_KEY => {
                    items.join(",")
                }
                other => other
                    .scalar()
                    .map_err(|m| self.bad(key, *line, format!("{m} where Flink expects a value")))?
                    .to_string(),
            };
            if key == tm_memory::CONSUMER_WEIGHTS_KEY {
                weights.push(text);
                weights_line = *line;
                continue;
            }
            match config.set(key, &text) {
                Ok(_) => {}
                Err(TmMemoryError::BadValue { value, expects, .. }) => {
                    return Err(self.bad(
                        key,
                        *line,
                        format!("invalid value '{value}': Flink expects {expects}"),
                    ));
                }
                Err(TmMemoryError::Unsupported { why, .. }) => {
                    legacy.push((key.clone(), *line, why.to_string()));
                }
                Err(TmMemoryError::Invalid(message)) => {
                    return Err(self.bad(key, *line, message));
                }
            }
        }
        for (name, value, line) in &mem.weight_entries {
            weights.push(format!("{name}:{}", value.show()));
            weights_line = *line;
        }
        if !weights.is_empty() {
            let key = tm_memory::CONSUMER_WEIGHTS_KEY;
            let text = weights.join(",");
            config.set(key, &text).map_err(|e| match e {
                TmMemoryError::BadValue { value, expects, .. } => self.bad(
                    key,
                    weights_line,
                    format!("invalid value '{value}': Flink expects {expects}"),
                ),
                other => self.bad(key, weights_line, other.to_string()),
            })?;
        }
        Ok((config, legacy))
    }

    fn memory(&self, mem: &Memory) -> Result<MemoryOutcome, ConfigError> {
        let line_of = |key: &str| {
            mem.values
                .get(key)
                .map(|(_, l)| *l)
                .or_else(|| mem.tm.iter().find(|(k, _, _)| k == key).map(|(_, _, l)| *l))
                .unwrap_or(0)
        };
        let (tm, legacy) = self.tm_config(mem)?;
        let slots = u64::from(tm.slots.unwrap_or(1));
        let use_managed = match mem.values.get(USE_MANAGED) {
            Some((v, line)) => {
                <bool as FromFlink>::from_flink(v).map_err(|m| self.bad(USE_MANAGED, *line, m))?
                    == "true"
            }
            None => true,
        };
        let fixed_slot = self.size(mem, FIXED_PER_SLOT)?;
        let fixed_tm = self.size(mem, FIXED_PER_TM)?;
        // The keys read, but for the RocksDB budget found another way.
        let tm_keys: Vec<String> = mem
            .tm
            .iter()
            .map(|(k, _, _)| k.clone())
            .chain(
                (!mem.weight_entries.is_empty())
                    .then(|| tm_memory::CONSUMER_WEIGHTS_KEY.to_string()),
            )
            .collect();
        let unused_because = |keys: &[String], why: &str| -> Vec<Ignored> {
            keys.iter()
                .map(|k| Ignored {
                    key: k.clone(),
                    why: Some(why.to_string()),
                })
                .collect()
        };
        let slots_said = if tm.slots.is_some() {
            format!("{slots} slot(s) ({SLOTS})")
        } else {
            "1 slot (Flink's default taskmanager.numberOfTaskSlots)".to_string()
        };
        // RocksDBSharedResourcesFactory#from: fixed-per-slot first, then managed memory, then
        // fixed-per-tm; without any of them each column family gets its own cache.
        if let Some(bytes) = fixed_slot {
            let mut others: Vec<String> = tm_keys.clone();
            others.extend(
                [FIXED_PER_TM, USE_MANAGED]
                    .iter()
                    .filter(|k| mem.values.contains_key(**k))
                    .map(|k| k.to_string()),
            );
            return Ok(MemoryOutcome {
                bytes: Some(bytes),
                fixed_per_slot: true,
                explanation: format!(
                    "{} from {FIXED_PER_SLOT} (memory outside managed memory, which the TaskManager's off-heap budget must cover; in Flink it takes precedence over managed memory)",
                    ByteSize(bytes)
                ),
                used: vec![FIXED_PER_SLOT.to_string()],
                unused: others
                    .iter()
                    .map(|k| Ignored {
                        key: k.clone(),
                        why: Some(if k == tm_memory::TASK_OFF_HEAP_KEY {
                            "the off-heap memory that must cover fixed-per-slot; RocksDB is measured with fixed-per-slot".to_string()
                        } else {
                            "fixed-per-slot is set: RocksDB's budget is outside managed memory".to_string()
                        }),
                    })
                    .collect(),
            });
        }
        if !use_managed {
            if let Some(tm_bytes) = fixed_tm {
                let per_slot = tm_bytes / slots;
                let others: Vec<String> = tm_keys
                    .iter()
                    .filter(|k| k.as_str() != SLOTS)
                    .cloned()
                    .collect();
                return Ok(MemoryOutcome {
                    bytes: Some(per_slot),
                    fixed_per_slot: true,
                    explanation: format!(
                        "{} = {FIXED_PER_TM} {} / {slots_said}: with {USE_MANAGED}: false Flink shares one budget among all slots of the TaskManager; statebench runs one slot with an equal share, so a slot that would use more than its share in Flink is measured with less",
                        ByteSize(per_slot),
                        ByteSize(tm_bytes),
                    ),
                    used: [FIXED_PER_TM, USE_MANAGED, SLOTS]
                        .iter()
                        .filter(|k| mem.values.contains_key(**k) || tm_keys.iter().any(|t| t == *k))
                        .map(|k| k.to_string())
                        .collect(),
                    unused: unused_because(
                        &others,
                        "state.backend.rocksdb.memory.managed is false: RocksDB does not use managed memory",
                    ),
                });
            }
            return Err(self.bad(
                USE_MANAGED,
                line_of(USE_MANAGED),
                format!(
                    "with 'false' and neither {FIXED_PER_SLOT} nor {FIXED_PER_TM} set, Flink gives every column family its own block cache (state.backend.rocksdb.block.cache-size) and memtables with no shared budget; statebench always runs RocksDB under one budget per slot (its block cache and WriteBufferManager), so it cannot measure that setup: set {FIXED_PER_SLOT} to the memory a slot's RocksDB may use, or remove '{USE_MANAGED}: false'"
                ),
            ));
        }
        let mut unused = Vec::new();
        if mem.values.contains_key(FIXED_PER_TM) {
            unused.push(Ignored {
                key: FIXED_PER_TM.to_string(),
                why: Some("used only with state.backend.rocksdb.memory.managed: false".to_string()),
            });
        }
        // ManagedMemoryUtils: STATE_BACKEND's weight, else the older DATAPROC's; unnamed is 0.
        if let Some(weights) = &tm.consumer_weights {
            let weight = |name: &str| weights.iter().find(|(c, _)| c == name).map(|(_, w)| *w);
            if weight("STATE_BACKEND").or(weight("DATAPROC")).unwrap_or(0) == 0 {
                return Err(self.bad(
                    tm_memory::CONSUMER_WEIGHTS_KEY,
                    line_of(tm_memory::CONSUMER_WEIGHTS_KEY).max(
                        mem.weight_entries.last().map_or(0, |(_, _, l)| *l),
                    ),
                    "gives the state backend (STATE_BACKEND, or DATAPROC) no weight: Flink would give RocksDB no managed memory; give STATE_BACKEND a weight above 0 (Flink's default is OPERATOR:70,STATE_BACKEND:70,PYTHON:30)".to_string(),
                ));
            }
        }
        let share = "the state backend is the only managed-memory consumer of statebench's job (a streaming job: no Python, no batch operators), so it gets all of the slot's managed memory";
        let derives =
            tm.process_size.is_some() || tm.flink_size.is_some() || tm.task_heap.is_some();
        if derives {
            // The TaskManager's memory as Flink derives it (it refuses what Flink refuses).
            let derived = tm.derive().map_err(|e| {
                let key = [PROCESS_SIZE, FLINK_SIZE, MANAGED_SIZE]
                    .into_iter()
                    .find(|k| tm_keys.iter().any(|t| t == k))
                    .unwrap_or(PROCESS_SIZE);
                self.bad(
                    key,
                    line_of(key),
                    format!("Flink refuses this TaskManager memory configuration: {e}"),
                )
            })?;
            let per_slot = derived.state_backend_per_slot();
            let how = if tm.managed_size.is_some() {
                format!("{MANAGED_SIZE} {}", ByteSize(derived.managed))
            } else {
                format!(
                    "managed memory {} ({MANAGED_FRACTION} {} of total Flink memory {}{})",
                    ByteSize(derived.managed),
                    tm.managed_fraction
                        .map_or("0.4 (Flink's default)".to_string(), |f| f.to_string()),
                    ByteSize(derived.total_flink()),
                    if tm.flink_size.is_some() {
                        String::new()
                    } else {
                        format!(
                            ", derived from {PROCESS_SIZE} {}",
                            ByteSize(derived.total_process())
                        )
                    }
                )
            };
            unused.extend(legacy.iter().map(|(k, _, why)| Ignored {
                key: k.clone(),
                why: Some(format!(
                    "{why}; statebench does not derive memory from it, the other memory keys count"
                )),
            }));
            return Ok(MemoryOutcome {
                bytes: Some(per_slot),
                fixed_per_slot: false,
                explanation: format!("{} = {how} / {slots_said}; {share}", ByteSize(per_slot)),
                used: tm_keys,
                unused,
            });
        }
        if let Some(size) = tm.managed_size {
            let per_slot = size / slots;
            let (used, not_needed): (Vec<String>, Vec<String>) =
                tm_keys.into_iter().partition(|k| {
                    [MANAGED_SIZE, SLOTS, tm_memory::CONSUMER_WEIGHTS_KEY].contains(&k.as_str())
                });
            unused.extend(unused_because(
                &not_needed,
                "no TaskManager size (process, Flink or task heap) is set to derive from, and managed memory is given",
            ));
            unused.extend(legacy.iter().map(|(k, _, why)| Ignored {
                key: k.clone(),
                why: Some(why.clone()),
            }));
            return Ok(MemoryOutcome {
                bytes: Some(per_slot),
                fixed_per_slot: false,
                explanation: format!(
                    "{} = {MANAGED_SIZE} {} / {slots_said}; {share}",
                    ByteSize(per_slot),
                    ByteSize(size)
                ),
                used,
                unused,
            });
        }
        if let Some((key, line, why)) = legacy.first() {
            return Err(self.bad(
                key,
                *line,
                format!(
                    "{key} is {why}: statebench does not derive memory from it; set {MANAGED_SIZE} (or {PROCESS_SIZE}) and {SLOTS}"
                ),
            ));
        }
        if !tm_keys.is_empty() {
            return Err(self.bad(
                &tm_keys[0],
                line_of(&tm_keys[0]),
                format!(
                    "managed memory cannot be derived from the TaskManager keys given: set {MANAGED_SIZE}, or the TaskManager's {PROCESS_SIZE} or {FLINK_SIZE} for {MANAGED_FRACTION} to apply to"
                ),
            ));
        }
        Ok(MemoryOutcome {
            bytes: None,
            fixed_per_slot: false,
            explanation: "no TaskManager memory key is set: flink-default's 256mb (a TaskManager with 1 GB of managed memory and 4 slots); set taskmanager.memory.managed.size and taskmanager.numberOfTaskSlots for your cluster's".to_string(),
            used: Vec::new(),
            unused,
        })
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
        // Where the budget lives, for a build whose profile has the knob `memory.mode`.
        if Knob::from_key(MEMORY_MODE).is_some() && !spec.iter().any(|(k, _)| *k == MEMORY_MODE) {
            let mode = if memory.fixed_per_slot {
                "fixed-per-slot"
            } else {
                "managed"
            };
            spec.push((MEMORY_MODE, mode.to_string()));
        }
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

/// Why a key is ignored, when there is more to say: Flink does not know it (with the nearest
/// key it does know), or it changes RocksDB in a way statebench does not apply.
fn why_ignored(key: &str) -> Option<String> {
    if let Some((_, why)) = NOT_APPLIED.iter().find(|(k, _)| *k == key) {
        return Some((*why).to_string());
    }
    let lists = key_lists();
    if lists.known.contains(key) {
        return None;
    }
    // A profile's own short key in a Flink file.
    if let Some(flink) = Knob::from_key(key).and_then(|k| k.info().flink_key) {
        return Some(format!("a statebench profile key; Flink's is {flink}"));
    }
    if let Some(flink) = KNOBS
        .iter()
        .find(|i| i.flink_key.is_none() && i.key == key)
        .map(|i| format!("{FACTORY_PREFIX}{}", i.key))
    {
        return Some(format!(
            "a statebench profile key; in a Flink file write {flink}"
        ));
    }
    let covered = COVERED_FAMILIES.iter().any(|f| key.starts_with(f));
    match nearest(key, &lists.sorted) {
        Some(n) if covered || close(key, n) => {
            Some(format!("not a Flink 1.20/2.0 key: did you mean {n}?"))
        }
        _ if covered => Some("not a Flink 1.20/2.0 key".to_string()),
        _ => None,
    }
}

/// Outside the families the key lists hold whole, only a near miss is called a typo.
fn close(key: &str, candidate: &str) -> bool {
    super::edit_distance(key, candidate) <= 2
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_durations_parse_as_flink_parses_them() {
        assert_eq!(parse_flink_size("64 mb"), Some(64 << 20));
        assert_eq!(parse_flink_size("64mb"), Some(64 << 20));
        assert_eq!(parse_flink_size("64MB"), Some(64 << 20));
        assert_eq!(parse_flink_size("67108864"), Some(64 << 20));
        assert_eq!(parse_flink_size("1g"), Some(1 << 30));
        assert_eq!(parse_flink_size("2 mebibytes"), Some(2 << 20));
        assert_eq!(parse_flink_size("1.5mb"), None);
        assert_eq!(parse_flink_size("64 xb"), None);
        assert_eq!(parse_flink_duration("10 s"), Some(10_000));
        assert_eq!(parse_flink_duration("10s"), Some(10_000));
        assert_eq!(parse_flink_duration("10 min"), Some(600_000));
        assert_eq!(parse_flink_duration("2m"), Some(120_000));
        assert_eq!(parse_flink_duration("500"), Some(500));
        assert_eq!(parse_flink_duration("1 d"), Some(86_400_000));
        assert_eq!(parse_flink_duration("1500 µs"), None);
        assert_eq!(parse_flink_duration("10 parsecs"), None);
    }

    #[test]
    fn compression_lists_take_flinks_names_in_either_list_syntax() {
        let semi = FlinkValue::Scalar("NO_COMPRESSION;snappy_compression;LZ4_COMPRESSION".into());
        assert_eq!(
            <Vec<Compression>>::from_flink(&semi).unwrap(),
            "[none, snappy, lz4]"
        );
        let list = FlinkValue::List(vec!["ZSTD_COMPRESSION".into()]);
        assert_eq!(<Vec<Compression>>::from_flink(&list).unwrap(), "[zstd]");
        let bad = <Vec<Compression>>::from_flink(&FlinkValue::Scalar("snappy".into()));
        assert!(bad.unwrap_err().contains("SNAPPY_COMPRESSION"));
    }

    #[test]
    fn key_lines_follow_nesting() {
        let text = "state:\n  backend:\n    rocksdb:\n      writebuffer:\n        size: 8mb\n      block.blocksize: 8kb\ntaskmanager.numberOfTaskSlots: 2\n";
        let lines = yaml_key_lines(text);
        assert_eq!(lines["state.backend.rocksdb.writebuffer.size"], 5);
        assert_eq!(lines["state.backend.rocksdb.block.blocksize"], 6);
        assert_eq!(lines["taskmanager.numberOfTaskSlots"], 7);
        // A flow mapping's keys are said at the line of the key that holds it.
        let flow = yaml_key_lines("a: 1\nstate: {backend: {type: rocksdb}}\n");
        assert_eq!(line_of(&flow, "state.backend.type"), 2);
        assert_eq!(line_of(&flow, "nowhere.else"), 0);
    }

    #[test]
    fn keys_outside_the_lists_families_are_flagged_only_when_close() {
        assert_eq!(why_ignored("jobmanager.rpc.address"), None);
        assert_eq!(why_ignored("execution.checkpointing.dir"), None);
        assert!(
            why_ignored("writebuffer.size")
                .unwrap()
                .contains("state.backend.rocksdb.writebuffer.size")
        );
    }
}
