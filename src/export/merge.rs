//! `export --into FILE`: a `flink` export merged into a Flink configuration file, every key once.
//!
//! The file is read by the one reader of Flink configurations (`config::flink_in`). A key the
//! export sets that the file sets already (flat, nested, or under its deprecated name, which Flink
//! reads when the current one is unset) is set where it stands: a legacy `flink-conf.yaml` line or
//! a YAML scalar gets the new value in place, a second setting of it is commented out, and every
//! other line stays as written. Keys the file does not set are appended, with the export's
//! comments. A YAML file whose key cannot be edited in place (inside a flow mapping `{...}`, a
//! block scalar, an anchor) is rewritten from its parsed YAML instead, which drops its comments,
//! and the merge says so. Either way the merged text is read back by the same reader and checked
//! before anything is written: every exported key set once with its value, no deprecated name of
//! one left, every other key of the file with the value it had.

use std::collections::HashSet;

use super::memory::Cluster;
use crate::config::flink_in::{self, FlinkFile, Format, KeySpan, SetKey, SpanValue};
use crate::config::{ConfigError, Origin};

/// Keys of a `flink` export that a cluster's `config.yaml` often sets already.
const COMMONLY_SET: &[&str] = &[
    "state.backend.type",
    "taskmanager.numberOfTaskSlots",
    "taskmanager.memory.process.size",
    "taskmanager.memory.managed.size",
    "taskmanager.memory.task.off-heap.size",
    "execution.checkpointing.interval",
    "execution.checkpointing.incremental",
    "execution.checkpointing.num-retained",
    "state.backend.rocksdb.memory.managed",
];

/// One key the merge sets.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    pub key: String,
    /// What the file had: the key as it set it (a deprecated name differs from `key`), its value
    /// and its line (1-based; 0 when the reader does not know it).
    pub old: Option<SetKey>,
    pub new: String,
}

impl Change {
    /// `key: old -> new (line N)`, `key: new (added)`, `key: value (unchanged, line N)`.
    pub fn describe(&self) -> String {
        let at = |line: usize| {
            if line > 0 {
                format!(", line {line}")
            } else {
                String::new()
            }
        };
        match &self.old {
            None => format!("{}: {} (added)", self.key, self.new),
            Some(old) if old.key != self.key => format!(
                "{}: {} -> {} (was set as {}, its deprecated name{})",
                self.key,
                old.value,
                self.new,
                old.key,
                at(old.line)
            ),
            Some(old) if same_value(&old.value, &self.new) => {
                format!("{}: {} (unchanged{})", self.key, self.new, at(old.line))
            }
            Some(old) if old.line > 0 => format!(
                "{}: {} -> {} (line {})",
                self.key, old.value, self.new, old.line
            ),
            Some(old) => format!("{}: {} -> {}", self.key, old.value, self.new),
        }
    }

    /// Whether the file had the key with another value (or under another name).
    pub fn changed(&self) -> bool {
        self.old
            .as_ref()
            .is_some_and(|old| old.key != self.key || !same_value(&old.value, &self.new))
    }
}

/// A merged configuration.
#[derive(Debug, Clone)]
pub struct Merged {
    pub text: String,
    pub format: Format,
    /// Every key of the export, what the file had for it.
    pub changes: Vec<Change>,
    /// `Some(why)` when the file was rewritten from its parsed YAML (its comments are lost).
    pub rewritten: Option<String>,
    /// The merged file as its reader reads it.
    pub file: FlinkFile,
}

/// Whether two values in Flink's syntax are the same (YAML writes `0.50` back as `0.5`).
fn same_value(a: &str, b: &str) -> bool {
    let (a, b) = (a.trim(), b.trim());
    a == b
        || matches!((a.parse::<f64>(), b.parse::<f64>()), (Ok(x), Ok(y)) if x == y)
        || a.eq_ignore_ascii_case(b)
            && (a.eq_ignore_ascii_case("true") || a.eq_ignore_ascii_case("false"))
}

/// Whether `set` (a key of the file) is `key` or a deprecated name of it.
fn names(set: &str, key: &str) -> bool {
    set == key || flink_in::current_key(set) == Some(key)
}

/// The file's setting of `key` Flink reads: the current key's last line, else the deprecated
/// name's.
fn setting<'a>(file: &'a [SetKey], key: &str) -> Option<&'a SetKey> {
    file.iter()
        .rev()
        .find(|s| s.key == key)
        .or_else(|| file.iter().rev().find(|s| names(&s.key, key)))
}

/// The header lines of a `flink` export on the keys a configuration may set already: for a known
/// configuration (`--taskmanager-memory FILE`, or the profile's own Flink file) the export's keys
/// it sets, else the export's keys a `config.yaml` often sets; appended to a file that sets one,
/// Flink 1.19+ refuses to start. `--into FILE` merges.
pub(super) fn paste_note(keys: &[(String, String)], cluster: &Cluster) -> String {
    let duplicate = "Flink 1.19+ refuses to start ('found duplicate key')";
    match &cluster.file {
        Some(file) => {
            let set: Vec<String> = keys
                .iter()
                .filter_map(|(key, value)| {
                    setting(&cluster.set, key).map(|old| {
                        let name = if old.key == *key {
                            String::new()
                        } else {
                            format!("{}: ", old.key)
                        };
                        let line = if old.line > 0 {
                            format!("line {}: ", old.line)
                        } else {
                            String::new()
                        };
                        format!("{key} ({line}{name}{} -> {value})", old.value)
                    })
                })
                .collect();
            if set.is_empty() {
                format!(
                    "# {file} sets none of these keys: appended to it, this fragment repeats no key.\n"
                )
            } else {
                let mut note =
                    format!("# Keys {file} sets already, which this fragment replaces:\n");
                for key in set {
                    note.push_str(&format!("#   {key}\n"));
                }
                note.push_str(&format!(
                    "# Appended to that file they are set twice and {duplicate}: merge with\n\
                     # `statebench export ... --into FILE` instead (every key once, the file's comments kept).\n"
                ));
                note
            }
        }
        None => {
            let common: Vec<&str> = keys
                .iter()
                .map(|(k, _)| k.as_str())
                .filter(|k| COMMONLY_SET.contains(k))
                .collect();
            format!(
                "# Appending this fragment to a config.yaml that sets one of its keys already (a cluster's\n\
                 # often sets {}) sets it twice:\n\
                 # {duplicate}. `statebench export ... --into FILE` merges it into FILE, every key once.\n",
                common.join(", ")
            )
        }
    }
}

/// Merges the `flink` export `fragment` (its live lines `keys`) into the Flink configuration
/// `input` read from `origin`. `Err` for a file the reader refuses (its file and line said), or
/// a merge that does not read back as it must (nothing is written then).
pub fn merge_into(
    origin: &Origin,
    input: &str,
    fragment: &str,
    keys: &[(String, String)],
) -> Result<Merged, ConfigError> {
    let file = flink_in::read_keys(origin, input)?;
    let changes: Vec<Change> = keys
        .iter()
        .map(|(key, value)| Change {
            key: key.clone(),
            old: setting(&file.keys, key).cloned(),
            new: value.clone(),
        })
        .collect();
    let invalid = |message: String| ConfigError::Invalid {
        origin: origin.to_string(),
        message,
    };
    // In place, read back and checked; a YAML file whose edit does not read back as it must is
    // rewritten from its parsed keys instead (and checked the same way).
    let read_back = |text: &str| -> Result<FlinkFile, String> {
        let merged = flink_in::read_keys_in(origin, text, file.format)
            .map_err(|e| format!("the merge does not read back as a Flink configuration ({e})"))?;
        check(&file, &merged, keys)
            .map_err(|e| format!("the merge does not read back as it must ({e})"))?;
        Ok(merged)
    };
    let edited = in_place(&file, input, fragment, keys)
        .and_then(|text| read_back(&text).map(|merged| (text, merged)));
    let (text, merged, rewritten) = match edited {
        Ok((text, merged)) => (text, merged, None),
        Err(why) if file.format == Format::Yaml => {
            let text = rewrite(origin, input, fragment, keys, &why)?;
            let merged = read_back(&text).map_err(|e| invalid(format!("{e}; nothing written")))?;
            (text, merged, Some(why))
        }
        Err(why) => {
            return Err(invalid(format!(
                "cannot merge the export into it: {why}; nothing written"
            )));
        }
    };
    Ok(Merged {
        text,
        format: file.format,
        changes,
        rewritten,
        file: merged,
    })
}

/// The file's lines with each exported key set in place; `Err(why)` where one cannot be.
fn in_place(
    file: &FlinkFile,
    input: &str,
    fragment: &str,
    keys: &[(String, String)],
) -> Result<String, String> {
    let spans = match file.format {
        Format::Legacy => flink_in::legacy_key_spans(input),
        Format::Yaml => flink_in::yaml_key_spans(input),
    };
    let leaves: HashSet<&str> = file.keys.iter().map(|k| k.key.as_str()).collect();
    let mut lines: Vec<String> = input.lines().map(str::to_string).collect();
    let mut removed: HashSet<usize> = HashSet::new();
    let mut in_place: Vec<(&str, usize)> = Vec::new();
    for (key, value) in keys {
        let hits: Vec<&KeySpan> = spans
            .iter()
            .filter(|s| leaves.contains(s.path.as_str()) && names(&s.path, key))
            .collect();
        let set = file.keys.iter().filter(|s| names(&s.key, key)).count();
        if hits.len() != set {
            return Err(format!(
                "'{key}' is set inside a flow mapping or another value that is not one line"
            ));
        }
        // Flink reads the current key's last setting, else the deprecated name's.
        let Some(keep) = hits
            .iter()
            .rev()
            .find(|s| s.path == *key)
            .or_else(|| hits.last())
            .copied()
        else {
            continue;
        };
        set_span(&mut lines, keep, key, value)?;
        in_place.push((key.as_str(), keep.line + 1));
        for other in hits.iter().filter(|s| s.line != keep.line) {
            let alone = !other.parent.is_empty()
                && !spans.iter().any(|s| {
                    s.parent == other.parent && s.line != other.line && !removed.contains(&s.line)
                });
            if alone {
                return Err(format!(
                    "taking out '{}' (line {}) would leave its mapping '{}' empty",
                    other.path,
                    other.line + 1,
                    other.parent
                ));
            }
            removed.insert(other.line);
            let note = format!(
                "  # statebench export --into: {key} is set on line {}",
                keep.line + 1
            );
            comment_out(&mut lines[other.line..=other.last_line], &note);
        }
    }
    let eol = if input.contains("\r\n") { "\r\n" } else { "\n" };
    let mut out = lines.join(eol);
    if !out.is_empty() {
        out.push_str(eol);
        out.push_str(eol);
    }
    out.push_str(&format!(
        "# Merged by statebench export --into: the keys below are added; {} set in place above.{eol}",
        match in_place.len() {
            0 => "none was".to_string(),
            1 => "1 was".to_string(),
            n => format!("{n} were"),
        }
    ));
    out.push_str(&appended(fragment, &in_place, eol));
    Ok(out)
}

/// The export's text with each live line of a key set in place above turned into a comment.
fn appended(fragment: &str, in_place: &[(&str, usize)], eol: &str) -> String {
    let mut out = String::new();
    for line in fragment.lines() {
        let set_at = line
            .split_once(": ")
            .filter(|_| !line.starts_with('#'))
            .and_then(|(k, _)| in_place.iter().find(|(key, _)| *key == k));
        match set_at {
            Some((_, at)) => out.push_str(&format!("# {line}  (set on line {at})")),
            None => out.push_str(line),
        }
        out.push_str(eol);
    }
    out
}

/// `lines` as comments, at their indent; `note` ends the first one.
fn comment_out(lines: &mut [String], note: &str) {
    let mut note = Some(note);
    for line in lines {
        let content = line.trim_start();
        if content.is_empty() || content.starts_with('#') {
            continue;
        }
        let indent = &line[..line.len() - content.len()];
        *line = format!("{indent}# {content}{}", note.take().unwrap_or_default());
    }
}

/// Sets `key` to `value` at `span` (the key itself or its deprecated name), in place.
fn set_span(lines: &mut [String], span: &KeySpan, key: &str, value: &str) -> Result<(), String> {
    let line = lines[span.line].clone();
    let indent = &line[..span.indent];
    // The key as it is written in its mapping: the new name for a deprecated one.
    let written = if span.path == key {
        span.written.clone()
    } else if span.parent.is_empty() {
        key.to_string()
    } else {
        match key.strip_prefix(&format!("{}.", span.parent)) {
            Some(rest) => rest.to_string(),
            None => {
                return Err(format!(
                    "'{key}' is set as its deprecated name '{}' inside '{}' (line {})",
                    span.path,
                    span.parent,
                    span.line + 1
                ));
            }
        }
    };
    match span.value {
        SpanValue::Scalar { start, end } if span.path == key => {
            lines[span.line] = format!("{}{value}{}", &line[..start], &line[end..]);
        }
        SpanValue::Scalar { end, .. } => {
            lines[span.line] = format!("{indent}{written}: {value}{}", &line[end..]);
        }
        SpanValue::Block => {
            // A null or a block sequence: one line with the value, the items commented out.
            lines[span.line] = format!("{indent}{written}: {value}");
            comment_out(&mut lines[span.line + 1..=span.last_line], "");
        }
        SpanValue::Other => {
            return Err(format!(
                "'{}' (line {}) is not a one-line value",
                span.path,
                span.line + 1
            ));
        }
    }
    Ok(())
}

/// The file rewritten from its parsed YAML without the exported keys (and their deprecated
/// names), the export appended: for a file whose keys cannot be set in place.
fn rewrite(
    origin: &Origin,
    input: &str,
    fragment: &str,
    keys: &[(String, String)],
    why: &str,
) -> Result<String, ConfigError> {
    use serde_norway::{Mapping, Value};
    let bad = |e: serde_norway::Error| ConfigError::Parse {
        origin: origin.to_string(),
        line: e.location().map_or(0, |l| l.line()),
        key: None,
        message: e.to_string(),
    };
    let mut value: Value = serde_norway::from_str(input).map_err(bad)?;
    let exported = |path: &str| keys.iter().any(|(k, _)| names(path, k));
    fn strip(map: &mut Mapping, prefix: &str, exported: &dyn Fn(&str) -> bool) {
        let mut gone = Vec::new();
        for (k, v) in map.iter_mut() {
            let name = match k {
                Value::String(s) => s.clone(),
                other => serde_norway::to_string(other)
                    .map(|s| s.trim().to_string())
                    .unwrap_or_default(),
            };
            let path = if prefix.is_empty() {
                name
            } else {
                format!("{prefix}.{name}")
            };
            match v {
                Value::Mapping(inner) => {
                    strip(inner, &path, exported);
                    if inner.is_empty() {
                        gone.push(k.clone());
                    }
                }
                _ if exported(&path) => gone.push(k.clone()),
                _ => {}
            }
        }
        for k in gone {
            map.remove(&k);
        }
    }
    let mut body = String::new();
    if let Value::Mapping(map) = &mut value {
        strip(map, "", &exported);
        if !map.is_empty() {
            body = serde_norway::to_string(&value).map_err(bad)?;
        }
    }
    Ok(format!(
        "# Rewritten by statebench export --into from {origin} as Flink reads it; its comments are not kept\n\
         # ({why}). The keys the export sets are below, once.\n\
         {body}\n{fragment}"
    ))
}

/// Every exported key set once with its value and no deprecated name of it left; every other
/// key of the file as Flink read it before.
fn check(before: &FlinkFile, after: &FlinkFile, keys: &[(String, String)]) -> Result<(), String> {
    for (key, value) in keys {
        let set: Vec<&SetKey> = after.keys.iter().filter(|s| names(&s.key, key)).collect();
        match set.as_slice() {
            [one] if one.key == *key && same_value(&one.value, value) => {}
            _ => {
                let found: Vec<String> = set
                    .iter()
                    .map(|s| format!("{}: {} (line {})", s.key, s.value, s.line))
                    .collect();
                return Err(format!(
                    "'{key}: {value}' must be set once, found {}",
                    if found.is_empty() {
                        "none".to_string()
                    } else {
                        found.join(", ")
                    }
                ));
            }
        }
    }
    let exported = |k: &str| keys.iter().any(|(key, _)| names(k, key));
    for old in before.keys.iter().filter(|s| !exported(&s.key)) {
        let was = before.get(&old.key).map(|s| s.value.as_str());
        let now = after.get(&old.key).map(|s| s.value.as_str());
        if was != now {
            return Err(format!(
                "'{}' was {:?} and reads {:?}",
                old.key,
                was.unwrap_or_default(),
                now.unwrap_or("(unset)")
            ));
        }
    }
    if let Some(new) = after
        .keys
        .iter()
        .find(|s| !exported(&s.key) && before.get(&s.key).is_none())
    {
        return Err(format!("'{}' is set and was not", new.key));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn origin(name: &str) -> Origin {
        Origin::File(PathBuf::from(format!("/conf/{name}")))
    }

    fn keys(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn fragment(keys: &[(String, String)]) -> String {
        let mut text = "# statebench profile 'p'\n".to_string();
        for (k, v) in keys {
            text.push_str(&format!("{k}: {v}\n"));
        }
        text
    }

    #[test]
    fn a_flat_files_values_are_replaced_in_place_and_its_comments_kept() {
        let input = "# my cluster\nstate.backend.type: hashmap   # for now\njobmanager.rpc.address: jm\n\ntaskmanager.numberOfTaskSlots: \"2\"\n";
        let k = keys(&[
            ("state.backend.type", "rocksdb"),
            ("taskmanager.numberOfTaskSlots", "4"),
            ("state.backend.rocksdb.writebuffer.size", "8mb"),
        ]);
        let merged = merge_into(&origin("config.yaml"), input, &fragment(&k), &k).unwrap();
        let lines: Vec<&str> = merged.text.lines().collect();
        assert_eq!(lines[0], "# my cluster");
        assert_eq!(lines[1], "state.backend.type: rocksdb   # for now");
        assert_eq!(lines[2], "jobmanager.rpc.address: jm");
        assert_eq!(lines[4], "taskmanager.numberOfTaskSlots: 4");
        assert!(
            merged
                .text
                .contains("\nstate.backend.rocksdb.writebuffer.size: 8mb\n")
        );
        assert!(
            merged
                .text
                .contains("# state.backend.type: rocksdb  (set on line 2)")
        );
        assert_eq!(merged.rewritten, None);
        let said: Vec<String> = merged.changes.iter().map(Change::describe).collect();
        assert_eq!(
            said,
            [
                "state.backend.type: hashmap -> rocksdb (line 2)",
                "taskmanager.numberOfTaskSlots: 2 -> 4 (line 5)",
                "state.backend.rocksdb.writebuffer.size: 8mb (added)"
            ]
        );
    }

    #[test]
    fn a_nested_key_is_the_flat_key_and_is_set_where_it_stands() {
        let input = "state:\n  backend:\n    type: hashmap  # was heap\n    rocksdb:\n      writebuffer.size: 64mb\n  checkpoints.dir: s3://b/c\n";
        let k = keys(&[
            ("state.backend.type", "rocksdb"),
            ("state.backend.rocksdb.writebuffer.size", "8mb"),
        ]);
        let merged = merge_into(&origin("config.yaml"), input, &fragment(&k), &k).unwrap();
        assert!(
            merged
                .text
                .starts_with("state:\n  backend:\n    type: rocksdb  # was heap\n    rocksdb:\n      writebuffer.size: 8mb\n  checkpoints.dir: s3://b/c\n"),
            "{}",
            merged.text
        );
        assert_eq!(
            merged.file.get("state.checkpoints.dir").unwrap().value,
            "s3://b/c"
        );
    }

    #[test]
    fn a_deprecated_name_is_renamed_and_a_second_setting_commented_out() {
        let input = "state.backend: hashmap\nstate.backend.incremental: true\nexecution.checkpointing.incremental: true\n";
        let k = keys(&[
            ("state.backend.type", "rocksdb"),
            ("execution.checkpointing.incremental", "false"),
        ]);
        let merged = merge_into(&origin("flink-conf.yaml"), input, &fragment(&k), &k).unwrap();
        let lines: Vec<&str> = merged.text.lines().collect();
        assert_eq!(lines[0], "state.backend.type: rocksdb");
        assert!(
            lines[1].starts_with("# state.backend.incremental: true  # statebench"),
            "{}",
            lines[1]
        );
        assert_eq!(lines[2], "execution.checkpointing.incremental: false");
        assert!(merged.changes[0].describe().contains("its deprecated name"));
    }

    #[test]
    fn a_key_in_a_flow_mapping_rewrites_the_file_and_says_so() {
        let input = "# gone\nstate: {backend: {type: hashmap}, checkpoints.dir: /c}\nparallelism.default: 2\n";
        let k = keys(&[("state.backend.type", "rocksdb")]);
        let merged = merge_into(&origin("config.yaml"), input, &fragment(&k), &k).unwrap();
        assert!(merged.rewritten.is_some());
        assert!(!merged.text.contains("hashmap"), "{}", merged.text);
        assert_eq!(
            merged.file.get("state.checkpoints.dir").unwrap().value,
            "/c"
        );
        assert_eq!(merged.file.get("parallelism.default").unwrap().value, "2");
    }

    #[test]
    fn an_edit_that_does_not_read_back_falls_back_to_the_rewrite() {
        // Lines appended after YAML's document end marker would be a second document.
        let input = "state.backend.type: hashmap\npipeline.name: x\n...\n";
        let k = keys(&[
            ("state.backend.type", "rocksdb"),
            ("taskmanager.numberOfTaskSlots", "4"),
        ]);
        let merged = merge_into(&origin("config.yaml"), input, &fragment(&k), &k).unwrap();
        let why = merged.rewritten.expect("rewritten");
        assert!(why.contains("does not read back"), "{why}");
        assert_eq!(
            merged.file.get("state.backend.type").unwrap().value,
            "rocksdb"
        );
        assert_eq!(merged.file.get("pipeline.name").unwrap().value, "x");
    }

    #[test]
    fn an_invalid_file_names_its_line() {
        let input = "state.backend.type: rocksdb\ntaskmanager: [unclosed\n";
        let k = keys(&[("state.backend.type", "rocksdb")]);
        let err = merge_into(&origin("config.yaml"), input, &fragment(&k), &k).unwrap_err();
        let text = err.to_string();
        assert!(text.starts_with("/conf/config.yaml line "), "{text}");
    }
}
