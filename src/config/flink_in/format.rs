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

/// What follows a key's colon on its line in a block-style YAML file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpanValue {
    /// A plain or quoted scalar on the key's line: its byte range in the line.
    Scalar { start: usize, end: usize },
    /// Nothing: a mapping, a block sequence or null follows.
    Block,
    /// A flow collection (`{...}`, `[...]`), a block scalar (`|`, `>`), an anchor, an alias or a
    /// tag: not one plain value.
    Other,
}

/// One key of a block-style YAML file, as written: its flattened (dotted) path, its lines
/// (0-based: the key's own and the last line of its value), the key as written and what follows
/// its colon. A key inside a flow mapping (`state: {backend: {type: rocksdb}}`) has no span of
/// its own: the key holding the mapping does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeySpan {
    pub path: String,
    /// The path of the mapping the key is in (empty at the top level).
    pub parent: String,
    pub line: usize,
    pub last_line: usize,
    pub indent: usize,
    /// The key as written (quotes kept), from `indent`.
    pub written: String,
    pub value: SpanValue,
}

/// The key of a block-style YAML line: where its colon is (one followed by a space or the end).
fn key_colon(content: &str) -> Option<usize> {
    content
        .char_indices()
        .find(|&(i, c)| c == ':' && content[i + 1..].chars().next().is_none_or(|n| n == ' '))
        .map(|(i, _)| i)
}

/// Where the plain or quoted scalar starting at `from` in `line` ends (before a ` #` comment
/// and trailing spaces), or `None` for anything else.
fn scalar_end(line: &str, from: usize) -> Option<usize> {
    let rest = &line[from..];
    let first = rest.chars().next()?;
    match first {
        '"' => {
            let mut escaped = false;
            for (i, c) in rest.char_indices().skip(1) {
                match c {
                    '\\' if !escaped => escaped = true,
                    '"' if !escaped => return Some(from + i + 1),
                    _ => escaped = false,
                }
            }
            None
        }
        '\'' => {
            let bytes = rest.as_bytes();
            let mut i = 1;
            while i < bytes.len() {
                if bytes[i] == b'\'' {
                    if bytes.get(i + 1) == Some(&b'\'') {
                        i += 2;
                        continue;
                    }
                    return Some(from + i + 1);
                }
                i += 1;
            }
            None
        }
        '{' | '[' | '|' | '>' | '&' | '*' | '!' | '%' | '@' | '`' => None,
        _ => {
            let end = rest.find(" #").unwrap_or(rest.len());
            Some(from + rest[..end].trim_end().len())
        }
    }
}

/// Every key of a block-style YAML file, in the order written. Lines inside a block scalar or a
/// flow collection are not read as keys.
pub fn yaml_key_spans(text: &str) -> Vec<KeySpan> {
    let lines: Vec<&str> = text.lines().collect();
    let mut spans: Vec<KeySpan> = Vec::new();
    let mut stack: Vec<(usize, String)> = Vec::new();
    // Lines deeper than this indent belong to the value of the key before (a block scalar, a
    // flow collection over several lines).
    let mut skip_deeper: Option<usize> = None;
    for (n, line) in lines.iter().enumerate() {
        let content = line.trim_start();
        let indent = line.len() - content.len();
        if content.is_empty() || content.starts_with('#') {
            continue;
        }
        if let Some(deeper) = skip_deeper {
            if indent > deeper {
                continue;
            }
            skip_deeper = None;
        }
        if content.starts_with("- ") || content == "-" || content.starts_with("---") {
            continue;
        }
        let Some(colon) = key_colon(content) else {
            continue;
        };
        let written = content[..colon].trim_end().to_string();
        let key = written.trim_matches(['"', '\'']).to_string();
        while stack.last().is_some_and(|(i, _)| *i >= indent) {
            stack.pop();
        }
        let parent: Vec<&str> = stack.iter().map(|(_, k)| k.as_str()).collect();
        let parent = parent.join(".");
        let path = if parent.is_empty() {
            key.clone()
        } else {
            format!("{parent}.{key}")
        };
        let after = indent + colon + 1;
        let from = after + (line[after..].len() - line[after..].trim_start().len());
        let value = if line[from..].is_empty() || line[from..].starts_with('#') {
            SpanValue::Block
        } else {
            match scalar_end(line, from) {
                Some(end) => SpanValue::Scalar { start: from, end },
                None => {
                    skip_deeper = Some(indent);
                    SpanValue::Other
                }
            }
        };
        spans.push(KeySpan {
            path,
            parent,
            line: n,
            last_line: n,
            indent,
            written,
            value,
        });
        stack.push((indent, key));
    }
    // Each key's value ends where the next key at its indent or less starts (block sequences may
    // sit at the key's own indent), less the blank and comment lines before it.
    for i in 0..spans.len() {
        let (line, indent) = (spans[i].line, spans[i].indent);
        let next = spans[i + 1..]
            .iter()
            .find(|s| s.indent <= indent)
            .map_or(lines.len(), |s| s.line);
        let mut last = line;
        for (n, l) in lines.iter().enumerate().take(next).skip(line + 1) {
            let content = l.trim_start();
            if content.is_empty() || content.starts_with('#') || content.starts_with("---") {
                continue;
            }
            let deeper = l.len() - content.len() > indent;
            let item = content.starts_with('-') && l.len() - content.len() == indent;
            if deeper || item && spans[i].value == SpanValue::Block {
                last = n;
            } else {
                break;
            }
        }
        spans[i].last_line = last;
    }
    spans
}

/// The line of each key of a block-style YAML file (1-based), by its flattened (dotted) path.
fn yaml_key_lines(text: &str) -> HashMap<String, usize> {
    let mut lines = HashMap::new();
    for span in yaml_key_spans(text) {
        lines.entry(span.path).or_insert(span.line + 1);
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

/// The `key: value` lines of a legacy `flink-conf.yaml` as Flink 1.x's
/// `GlobalConfiguration.loadYAMLResource` splits them (a `#` ends the line's configuration, the
/// line is split at its first `": "`), with where each value is; `Err` for a line it skips.
fn legacy_lines(text: &str) -> Vec<Result<KeySpan, (usize, String)>> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let conf_end = line.find('#').unwrap_or(line.len());
        let conf = line[..conf_end].trim();
        if conf.is_empty() {
            continue;
        }
        let indent = line.len() - line.trim_start().len();
        let Some(sep) = line[..conf_end].find(": ") else {
            out.push(Err((n, conf.to_string())));
            continue;
        };
        let key = line[indent..sep].trim();
        let from =
            sep + 2 + (line[sep + 2..conf_end].len() - line[sep + 2..conf_end].trim_start().len());
        let end = line[..conf_end].trim_end().len();
        if key.is_empty() || from >= end {
            out.push(Err((n, conf.to_string())));
            continue;
        }
        out.push(Ok(KeySpan {
            path: key.to_string(),
            parent: String::new(),
            line: n,
            last_line: n,
            indent,
            written: key.to_string(),
            value: SpanValue::Scalar { start: from, end },
        }));
    }
    out
}

/// Every `key: value` line of a legacy `flink-conf.yaml` Flink reads, with where its value is.
pub fn legacy_key_spans(text: &str) -> Vec<KeySpan> {
    legacy_lines(text)
        .into_iter()
        .filter_map(Result::ok)
        .collect()
}

/// Flink 1.x's `GlobalConfiguration.loadYAMLResource`: lines it cannot split are skipped (and
/// said so here); a later line with the same key wins.
pub(super) fn parse_legacy(text: &str, notes: &mut Vec<String>) -> Vec<Entry> {
    let lines: Vec<&str> = text.lines().collect();
    let mut entries = Vec::new();
    for parsed in legacy_lines(text) {
        match parsed {
            Ok(span) => {
                let SpanValue::Scalar { start, end } = span.value else {
                    continue;
                };
                entries.push(Entry {
                    key: span.path,
                    value: FlinkValue::Scalar(lines[span.line][start..end].to_string()),
                    line: span.line + 1,
                });
            }
            Err((n, conf)) => notes.push(format!(
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
