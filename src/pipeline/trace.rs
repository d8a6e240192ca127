//! Trace replay: a sample of a user's own traffic as JSON Lines or CSV, one event per line:
//! `{"user": "u-17", "event_time": 1767225600000, "partition": 2}` or `u-17,1767225600000,2`
//! (partition optional; a CSV header line is allowed). The whole file is checked before a run
//! starts, so a malformed line never leaves a half-done run behind.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::source::Event;

#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    #[error("cannot read trace {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("trace {path} line {line}: {message}")]
    Line {
        path: PathBuf,
        line: usize,
        message: String,
    },
    #[error("trace {0} has no events")]
    Empty(PathBuf),
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct JsonLine {
    user: serde_json::Value,
    event_time: i64,
    partition: Option<u32>,
}

/// A loaded trace: events in file order with dense user ids (the job keys them `user-N`).
#[derive(Debug, Clone)]
pub struct Trace {
    pub events: Vec<Event>,
    /// The trace's user names, by id.
    pub users: Vec<String>,
}

impl Trace {
    /// Reads and checks the whole trace. Events without a partition are keyed into one of
    /// `partitions` by user; a partition number must be below `partitions`.
    pub fn load(path: &Path, partitions: u32) -> Result<Trace, TraceError> {
        let text = std::fs::read_to_string(path).map_err(|source| TraceError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let mut ids: HashMap<String, u64> = HashMap::new();
        let mut users = Vec::new();
        let mut events = Vec::new();
        let mut offsets = vec![0u64; partitions as usize];
        let mut header_allowed = true;
        for (index, raw) in text.lines().enumerate() {
            let line = index + 1;
            let raw = raw.trim().trim_start_matches('\u{feff}');
            if raw.is_empty() || raw.starts_with('#') {
                continue;
            }
            // A CSV header is the first data line, and only if its event_time is not a number.
            let is_header = header_allowed
                && !raw.starts_with('{')
                && raw
                    .split(',')
                    .nth(1)
                    .is_some_and(|f| f.trim().parse::<i64>().is_err());
            header_allowed = false;
            if is_header {
                continue;
            }
            let err = |message: String| TraceError::Line {
                path: path.to_path_buf(),
                line,
                message,
            };
            let (user, event_time, partition) = if raw.starts_with('{') {
                let j: JsonLine = serde_json::from_str(raw).map_err(|e| {
                    err(format!(
                        "{e} (expected {{\"user\": ..., \"event_time\": ms, \"partition\": n}})"
                    ))
                })?;
                let user = match j.user {
                    serde_json::Value::String(s) => s,
                    serde_json::Value::Number(n) => n.to_string(),
                    other => {
                        return Err(err(format!(
                            "'user' must be a string or a number, not {other}"
                        )));
                    }
                };
                (user, j.event_time, j.partition)
            } else {
                let fields: Vec<&str> = raw.split(',').map(str::trim).collect();
                if !(2..=3).contains(&fields.len()) || fields[0].is_empty() {
                    return Err(err(format!(
                        "expected 'user,event_time[,partition]', got {} fields",
                        fields.len()
                    )));
                }
                let event_time = fields[1].parse::<i64>().map_err(|_| {
                    err(format!(
                        "event_time '{}' is not an integer (epoch milliseconds)",
                        fields[1]
                    ))
                })?;
                let partition = match fields.get(2) {
                    Some(p) => Some(p.parse::<u32>().map_err(|_| {
                        err(format!("partition '{p}' is not a non-negative integer"))
                    })?),
                    None => None,
                };
                (fields[0].to_string(), event_time, partition)
            };
            if !(0..=(i64::MAX / 4)).contains(&event_time) {
                return Err(err(format!(
                    "event_time {event_time} is out of range (epoch milliseconds)"
                )));
            }
            let id = *ids.entry(user.clone()).or_insert_with(|| {
                users.push(user);
                users.len() as u64 - 1
            });
            let partition = match partition {
                Some(p) if p < partitions => p,
                Some(p) => {
                    return Err(err(format!(
                        "partition {p} but the workload has {partitions} (0..{})",
                        partitions - 1
                    )));
                }
                None => (id.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 32) as u32 % partitions,
            };
            let offset = offsets[partition as usize];
            offsets[partition as usize] += 1;
            events.push(Event {
                user: id,
                event_time,
                partition,
                offset,
                append_time: event_time,
                value_size: 0,
                input: 0,
            });
        }
        if events.is_empty() {
            return Err(TraceError::Empty(path.to_path_buf()));
        }
        Ok(Trace { events, users })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_lines_and_csv_read_the_same_events() {
        let dir = tempfile::tempdir().unwrap();
        let json = dir.path().join("t.jsonl");
        let csv = dir.path().join("t.csv");
        std::fs::write(&json, "{\"user\": \"a\", \"event_time\": 1000}\n{\"user\": 7, \"event_time\": 2000, \"partition\": 1}\n").unwrap();
        std::fs::write(&csv, "user,event_time,partition\na,1000\n7,2000,1\n").unwrap();
        let a = Trace::load(&json, 2).unwrap();
        let b = Trace::load(&csv, 2).unwrap();
        assert_eq!(a.events, b.events);
        assert_eq!(a.users, ["a", "7"]);
        assert_eq!(a.events[1].partition, 1);
    }

    #[test]
    fn malformed_lines_are_named_by_number() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bad.csv");
        std::fs::write(&path, "a,1000\nb,10x0\n").unwrap();
        let msg = Trace::load(&path, 4).unwrap_err().to_string();
        assert!(
            msg.ends_with(
                "bad.csv line 2: event_time '10x0' is not an integer (epoch milliseconds)"
            ),
            "{msg}"
        );
        std::fs::write(&path, "a,1000,9\n").unwrap();
        assert!(
            Trace::load(&path, 4)
                .unwrap_err()
                .to_string()
                .contains("line 1: partition 9 but the workload has 4")
        );
    }
}
