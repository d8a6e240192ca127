//! Flink's configuration file formats: `config.yaml` (standard YAML, flat or nested keys, which
//! Flink flattens with dots) and the legacy `flink-conf.yaml` (`key: value` lines); whether a
//! file is a Flink configuration at all (`detect`); the line of each key, for messages; and the
//! knobs statebench's export writes as comments.

use std::collections::HashMap;

use super::keys::is_flink_key;
use super::values::FlinkValue;
use crate::config::flink::FACTORY_PREFIX;
use crate::config::profile::{KNOBS, Knob, KnobInfo};
use crate::config::{ConfigError, Origin};

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
    pub(super) fn describe(self) -> &'static str {
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

/// One `key: value` of the file, flattened, with the line it is on (0 when unknown).
#[derive(Debug, Clone)]
pub(super) struct Entry {
    pub(super) key: String,
    pub(super) value: FlinkValue,
    pub(super) line: usize,
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
pub(super) fn flatten_yaml(
    origin: &Origin,
    text: &str,
) -> Result<(Vec<Entry>, Layout), ConfigError> {
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
pub(super) fn parse_legacy(text: &str, notes: &mut Vec<String>) -> Vec<Entry> {
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
pub(super) fn comment_knobs(text: &str) -> Vec<(&'static KnobInfo, String, usize)> {
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
