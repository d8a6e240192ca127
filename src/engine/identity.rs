//! The data directory's job: what stays the same across its runs and restores. A job restored
//! from a checkpoint (`--restore`, in this process or a new one) or continued with `--reuse` is
//! the same job, so it writes the same keys in the serving store: the prefix of its Redis keys is
//! chosen at the job's first start and kept in `<data-dir>/job.json`.

use crate::util::fs::write_atomically;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// `<data-dir>/job.json`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JobIdentity {
    /// The prefix of the job's keys in Redis (`PREFIX` + `freq:user-N:WINDOW`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sink_prefix: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum IdentityError {
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: {message} (it holds the data directory's job: {{\"sink_prefix\": \"...\"}})", path.display())]
    Invalid { path: PathBuf, message: String },
    #[error("cannot write {}: {source}", path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("--sink-prefix '{0}': {1}")]
    BadPrefix(String, String),
    #[error(
        "--sink-prefix '{given}' conflicts with '{stored}', the prefix the job in this data directory writes under ({}): a restored or reused job writes the keys it wrote before. Leave --sink-prefix out (or give '{stored}'), or start a new job on an empty --data-dir",
        path.display()
    )]
    Conflict {
        given: String,
        stored: String,
        path: PathBuf,
    },
}

/// Where the sink prefix came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PrefixOrigin {
    /// `--sink-prefix`.
    Given,
    /// The data directory's job (an earlier run chose it).
    Stored,
    /// Chosen now, for a new job.
    New,
}

/// The longest prefix accepted (Redis keys may be far longer; a reader's must stay readable).
const MAX_PREFIX: usize = 128;

/// A prefix is letters, digits and `:_-./`, 1 to 128 of them: no spaces, no glob characters.
pub fn validate_prefix(prefix: &str) -> Result<(), IdentityError> {
    let bad = |why: &str| {
        Err(IdentityError::BadPrefix(
            prefix.to_string(),
            why.to_string(),
        ))
    };
    if prefix.is_empty() {
        return bad("empty; give e.g. 'ads-minutes:'");
    }
    if prefix.len() > MAX_PREFIX {
        return bad(&format!("longer than {MAX_PREFIX} characters"));
    }
    if let Some(c) = prefix
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || ":_-./".contains(*c)))
    {
        return bad(&format!(
            "'{c}' is not allowed: only letters, digits and ':_-./' (e.g. 'ads-minutes:')"
        ));
    }
    Ok(())
}

impl JobIdentity {
    pub fn path(data_dir: &Path) -> PathBuf {
        data_dir.join("job.json")
    }

    /// The data directory's job; the default (nothing chosen yet) when it has no `job.json`.
    pub fn load(data_dir: &Path) -> Result<JobIdentity, IdentityError> {
        let path = Self::path(data_dir);
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(JobIdentity::default());
            }
            Err(source) => return Err(IdentityError::Read { path, source }),
        };
        let identity: JobIdentity =
            serde_json::from_str(&text).map_err(|e| IdentityError::Invalid {
                path: path.clone(),
                message: e.to_string(),
            })?;
        if let Some(prefix) = &identity.sink_prefix {
            validate_prefix(prefix).map_err(|e| IdentityError::Invalid {
                path: path.clone(),
                message: e.to_string(),
            })?;
        }
        Ok(identity)
    }

    /// Writes `job.json` whole or not at all.
    pub fn save(&self, data_dir: &Path) -> Result<(), IdentityError> {
        let path = Self::path(data_dir);
        let mut json = serde_json::to_vec_pretty(self).map_err(|e| IdentityError::Write {
            path: path.clone(),
            source: std::io::Error::other(e),
        })?;
        json.push(b'\n');
        write_atomically(&path, &json).map_err(|source| IdentityError::Write { path, source })
    }
}

/// A new job's Redis key prefix: `statebench:<epoch ms>-<pid>:`, unique on this machine.
pub fn new_job_prefix() -> String {
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or_default();
    format!("statebench:{stamp}-{}:", std::process::id())
}

/// The prefix the job in `data_dir` writes its Redis keys under: `given` (`--sink-prefix`),
/// which must equal the one the data directory's job already has, if any; else that one; else
/// `fresh()` for a new job. The choice is kept in `job.json` for the job's later runs.
pub fn sink_prefix(
    data_dir: &Path,
    given: Option<&str>,
    fresh: impl FnOnce() -> String,
) -> Result<(String, PrefixOrigin), IdentityError> {
    if let Some(given) = given {
        validate_prefix(given)?;
    }
    let mut identity = JobIdentity::load(data_dir)?;
    let (prefix, origin) = match (given, &identity.sink_prefix) {
        (Some(given), Some(stored)) if given != stored => {
            return Err(IdentityError::Conflict {
                given: given.to_string(),
                stored: stored.clone(),
                path: JobIdentity::path(data_dir),
            });
        }
        (Some(given), _) => (given.to_string(), PrefixOrigin::Given),
        (None, Some(stored)) => (stored.clone(), PrefixOrigin::Stored),
        (None, None) => (fresh(), PrefixOrigin::New),
    };
    if identity.sink_prefix.as_deref() != Some(prefix.as_str()) {
        identity.sink_prefix = Some(prefix.clone());
        identity.save(data_dir)?;
    }
    Ok((prefix, origin))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_run_chooses_the_prefix_and_later_runs_keep_it() {
        let dir = tempfile::tempdir().unwrap();
        let (first, origin) = sink_prefix(dir.path(), None, || "statebench:1-2:".into()).unwrap();
        assert_eq!(
            (first.as_str(), origin),
            ("statebench:1-2:", PrefixOrigin::New)
        );
        let (again, origin) = sink_prefix(dir.path(), None, || "statebench:3-4:".into()).unwrap();
        assert_eq!(
            (again.as_str(), origin),
            ("statebench:1-2:", PrefixOrigin::Stored)
        );
        // Giving the stored one is fine; another one is refused, naming both and the file.
        let (same, origin) =
            sink_prefix(dir.path(), Some("statebench:1-2:"), || unreachable!()).unwrap();
        assert_eq!(
            (same.as_str(), origin),
            ("statebench:1-2:", PrefixOrigin::Given)
        );
        let err = sink_prefix(dir.path(), Some("ads:"), || unreachable!())
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("'ads:' conflicts with 'statebench:1-2:'") && err.contains("job.json"),
            "{err}"
        );
    }

    #[test]
    fn a_given_prefix_is_kept_for_the_job() {
        let dir = tempfile::tempdir().unwrap();
        let (p, origin) = sink_prefix(dir.path(), Some("ads-minutes:"), || unreachable!()).unwrap();
        assert_eq!((p.as_str(), origin), ("ads-minutes:", PrefixOrigin::Given));
        let (p, origin) = sink_prefix(dir.path(), None, || unreachable!()).unwrap();
        assert_eq!((p.as_str(), origin), ("ads-minutes:", PrefixOrigin::Stored));
    }

    #[test]
    fn bad_prefixes_and_files_are_clear_errors() {
        for (prefix, says) in [
            ("", "empty"),
            ("a b:", "' ' is not allowed"),
            ("ads*:", "'*' is not allowed"),
            (&"x".repeat(200), "longer than 128"),
        ] {
            let err = validate_prefix(prefix).unwrap_err().to_string();
            assert!(err.contains(says), "{prefix}: {err}");
        }
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("job.json"), "{\"sink_prefx\": \"a:\"}").unwrap();
        let err = sink_prefix(dir.path(), None, || "b:".into())
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("job.json") && err.contains("unknown field `sink_prefx`"),
            "{err}"
        );
    }
}
