//! Configuration files: RocksDB profiles and workloads, both YAML with human units.
//!
//! Every config struct denies unknown fields; this module turns serde's errors into messages
//! that name the file, the line, the key and what would have been valid.

pub mod derived;
pub mod flink;
pub mod flink_in;
pub mod job;
pub mod profile;
pub mod target;
pub mod timer_service;
pub mod tm_memory;
pub mod units;
pub mod workload;

use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;

pub use profile::Profile;
pub use units::{ByteSize, Millis};
pub use workload::Workload;

/// Errors from loading or validating a profile or a workload.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error(
        "{kind} '{name}' not found: no such file, and no built-in {kind} of that name (built-in: {available})"
    )]
    NotFound {
        kind: &'static str,
        name: String,
        available: String,
    },
    #[error("cannot read {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("unknown key '{key}' in {origin} line {line}{}", suggestion.as_ref().map(|s| format!(" (did you mean '{s}'?)")).unwrap_or_default())]
    UnknownKey {
        origin: String,
        line: usize,
        key: String,
        suggestion: Option<String>,
    },
    #[error("{origin} line {line}{}: {message}", key.as_ref().map(|k| format!(", key '{k}'")).unwrap_or_default())]
    Parse {
        origin: String,
        line: usize,
        key: Option<String>,
        message: String,
    },
    #[error("{origin}: {message}")]
    Invalid { origin: String, message: String },
    #[error("profile inheritance cycle: {0}")]
    Cycle(String),
}

/// Where a config text came from: a file on disk or a profile/workload compiled into the binary.
#[derive(Debug, Clone)]
pub enum Origin {
    File(PathBuf),
    Builtin(&'static str),
}

impl Origin {
    /// The config's name: the built-in's name or the file's stem.
    pub fn name(&self) -> String {
        match self {
            Origin::Builtin(name) => (*name).to_string(),
            Origin::File(path) => path
                .file_stem()
                .and_then(|s| s.to_str())
                .unwrap_or("unnamed")
                .to_string(),
        }
    }
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Origin::File(path) => write!(f, "{}", path.display()),
            Origin::Builtin(name) => write!(f, "built-in '{name}'"),
        }
    }
}

/// Finds a config by path, or by name among the built-ins (`smoke`, `profiles/smoke.yaml`, `smoke.yaml`).
pub(crate) fn locate(
    kind: &'static str,
    name: &str,
    builtins: &'static [(&'static str, &'static str)],
) -> Result<(Origin, String), ConfigError> {
    let path = Path::new(name);
    if path.is_file() {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        return Ok((Origin::File(path.to_path_buf()), text));
    }
    let stem = path
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or(name)
        .to_string();
    // A name, or the shipped file's own relative path (`profiles/x.yaml`), may mean a built-in;
    // any other path that does not exist is an error, never a silent substitute.
    let shipped_path = [
        format!("{kind}s/{stem}.yaml"),
        format!("./{kind}s/{stem}.yaml"),
    ];
    let is_name = !name.contains('/') && !name.contains('\\');
    match builtins.iter().find(|(builtin, _)| *builtin == stem) {
        Some((builtin, text)) if is_name || shipped_path.iter().any(|p| p == name) => {
            Ok((Origin::Builtin(builtin), (*text).to_string()))
        }
        _ => Err(ConfigError::NotFound {
            kind,
            name: name.to_string(),
            available: builtins
                .iter()
                .map(|(n, _)| *n)
                .collect::<Vec<_>>()
                .join(", "),
        }),
    }
}

/// Parses YAML into `T`, turning serde's messages into ones that name file, line and key.
pub(crate) fn parse_yaml<T: DeserializeOwned>(
    text: &str,
    origin: &Origin,
) -> Result<T, ConfigError> {
    serde_norway::from_str(text).map_err(|err| yaml_error(&err, text, origin))
}

fn yaml_error(err: &serde_norway::Error, text: &str, origin: &Origin) -> ConfigError {
    let mut line = err.location().map(|l| l.line()).unwrap_or(0);
    let full = err.to_string();
    // serde_norway appends " at line L column C"; we say the line ourselves.
    let message = match full.find(" at line ") {
        Some(at) => full[..at].to_string(),
        None => full,
    };
    if let Some(at) = message.find("unknown field `") {
        let rest = &message[at + "unknown field `".len()..];
        let key = rest.split('`').next().unwrap_or_default().to_string();
        let expected: Vec<&str> = message
            .split("expected one of ")
            .nth(1)
            .or_else(|| message.split("expected ").nth(1))
            .map(|list| list.split(", ").map(|s| s.trim_matches('`')).collect())
            .unwrap_or_default();
        return ConfigError::UnknownKey {
            origin: origin.to_string(),
            line,
            // A Flink key in a profile: the knob's own key is Flink's without its prefix.
            suggestion: nearest(&key, &expected).map(str::to_string).or_else(|| {
                key.strip_prefix("state.backend.rocksdb.")
                    .filter(|rest| expected.contains(rest))
                    .map(str::to_string)
            }),
            key,
        };
    }
    // Errors from our own value parsers quote the bad value; serde may only know where the
    // enclosing mapping starts, so find the line that holds the value.
    let quoted = message.split('\'').nth(1).filter(|v| !v.is_empty());
    if let Some(value) = quoted
        && let Some(found) = text
            .lines()
            .position(|l| l.split_once(':').is_some_and(|(_, v)| v.contains(value)))
    {
        line = found + 1;
    }
    let key = text
        .lines()
        .nth(line.saturating_sub(1))
        .and_then(|l| l.split_once(':'))
        .map(|(k, _)| k.trim().trim_start_matches("- ").to_string())
        .filter(|k| !k.is_empty() && !k.contains(' '));
    // Drop serde's "path: " prefix when we name the key ourselves.
    let message = match (&key, message.split_once(": ")) {
        (Some(_), Some((path, rest))) if !path.contains(' ') => rest.to_string(),
        _ => message,
    };
    ConfigError::Parse {
        origin: origin.to_string(),
        line,
        key,
        message,
    }
}

/// The candidate closest to `key` by edit distance, if it is close enough to be a likely typo.
pub fn nearest<'a>(key: &str, candidates: &[&'a str]) -> Option<&'a str> {
    candidates
        .iter()
        .map(|c| (edit_distance(key, c), *c))
        .filter(|(d, c)| *d <= (c.len().max(key.len()) / 3).max(2))
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

pub(crate) fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let next = (row[j + 1] + 1)
                .min(row[j] + 1)
                .min(prev + usize::from(ca != *cb));
            prev = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_suggests_typos_but_not_unrelated_words() {
        let keys = ["writebuffer.size", "writebuffer.count", "block.blocksize"];
        assert_eq!(nearest("writebuffer.sise", &keys), Some("writebuffer.size"));
        assert_eq!(nearest("blok.blocksize", &keys), Some("block.blocksize"));
        assert_eq!(nearest("zzz", &keys), None);
    }
}
