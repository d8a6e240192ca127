//! Trace replay: a sample of a user's own traffic, one event per line, as CSV
//! `key,event_time[,partition[,value_size[,input]]]` (a header naming the columns is allowed)
//! or JSON Lines `{"key": "u-17", "event_time": 1767225600000, "partition": 2, "value_size": 64,
//! "input": "left"}`. Only the key and the event time are required; the traces of statebench
//! before value sizes and inputs (`user,event_time[,partition]`, `{"user": ...}`) load as they
//! always did. The whole file is checked before a run starts, so a malformed line never leaves
//! a half-done run behind. `convert` turns a user's own export into this format; docs/trace.md
//! describes both.

pub mod convert;
pub mod time;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use super::source::Event;

/// The largest value size a trace may give (64 MiB): a bigger one is a unit mistake far more
/// often than a real state value, and every event's value is built in memory.
pub const MAX_VALUE_SIZE: u32 = 64 << 20;

/// For a trace that is not there: a shipped workload's trace too large for git is written by
/// its script (`scripts/<name>-trace.py`), which the hint names when it exists.
fn not_written_yet(path: &std::path::Path, source: &std::io::Error) -> String {
    if source.kind() != std::io::ErrorKind::NotFound {
        return String::new();
    }
    let Some(stem) = path.file_stem().and_then(|s| s.to_str()) else {
        return String::new();
    };
    let script = format!("scripts/{stem}-trace.py");
    if std::path::Path::new(&script).is_file() {
        format!(" (it is generated, not shipped: run `python3 {script}` once)")
    } else {
        String::new()
    }
}

/// The CSV columns, in their order (`user` is accepted for `key`, the name of old traces).
pub const COLUMNS: [&str; 5] = ["key", "event_time", "partition", "value_size", "input"];

#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    #[error("cannot read trace {path}: {source}{}", not_written_yet(path, source))]
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
    /// The workload, completed with the trace's keys, events and span, fails a check.
    #[error("{0}")]
    Workload(String),
}

/// One line of a trace as written, before partitions are assigned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    pub key: String,
    pub event_time: i64,
    /// None: keyed into one of the workload's partitions by key.
    pub partition: Option<u32>,
    /// None: the trace gives no value size for this event.
    pub value_size: Option<u32>,
    /// 0 = the first (left) input, 1 = the second (right).
    pub input: u8,
}

/// A record with its key numbered (dense, in order of first appearance) and its line.
#[derive(Debug, Clone, Copy)]
struct Numbered {
    key: u64,
    line: usize,
    event_time: i64,
    partition: Option<u32>,
    value_size: Option<u32>,
    input: u8,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct JsonLine {
    key: Option<serde_json::Value>,
    user: Option<serde_json::Value>,
    event_time: i64,
    partition: Option<u32>,
    value_size: Option<u32>,
    payload: Option<String>,
    input: Option<serde_json::Value>,
}

const JSON_EXPECTED: &str = "expected {\"key\": ..., \"event_time\": ms[, \"partition\": n][, \"value_size\": bytes | \"payload\": \"...\"][, \"input\": 0 | 1 | \"left\" | \"right\"]}";

/// The input a trace names: 0 / `left` (the first input) or 1 / `right` (the second).
pub fn parse_input(text: &str) -> Option<u8> {
    match text {
        "0" => Some(0),
        "1" => Some(1),
        s if s.eq_ignore_ascii_case("left") => Some(0),
        s if s.eq_ignore_ascii_case("right") => Some(1),
        _ => None,
    }
}

/// A value size in bytes, 0..=MAX_VALUE_SIZE.
pub fn check_value_size(size: u64) -> Result<u32, String> {
    u32::try_from(size)
        .ok()
        .filter(|s| *s <= MAX_VALUE_SIZE)
        .ok_or_else(|| {
            format!("value_size {size} is over the largest a trace may give, {MAX_VALUE_SIZE} bytes (64 MiB)")
        })
}

/// An event time statebench can replay: epoch milliseconds from 0 to i64::MAX / 4.
pub fn check_event_time(event_time: i64) -> Result<i64, String> {
    if (0..=(i64::MAX / 4)).contains(&event_time) {
        Ok(event_time)
    } else {
        Err(format!(
            "event_time {event_time} is out of range (epoch milliseconds, 0 to {})",
            i64::MAX / 4
        ))
    }
}

fn parse_json(raw: &str) -> Result<Record, String> {
    let j: JsonLine = serde_json::from_str(raw).map_err(|e| format!("{e} ({JSON_EXPECTED})"))?;
    let (name, key) = match (j.key, j.user) {
        (Some(k), None) => ("key", k),
        (None, Some(u)) => ("user", u),
        (Some(_), Some(_)) => {
            return Err(
                "has both 'key' and 'user' (give one: 'user' is the old name of 'key')".to_string(),
            );
        }
        (None, None) => return Err(format!("has no 'key' ({JSON_EXPECTED})")),
    };
    let key = match key {
        serde_json::Value::String(s) => s,
        serde_json::Value::Number(n) => n.to_string(),
        other => {
            return Err(format!(
                "'{name}' must be a string or a number, not {other}"
            ));
        }
    };
    let value_size = match (j.value_size, j.payload) {
        (Some(_), Some(_)) => {
            return Err("has both 'value_size' and 'payload' (give one: a payload's size is its length in bytes)".to_string());
        }
        (Some(size), None) => Some(check_value_size(u64::from(size))?),
        (None, Some(payload)) => Some(check_value_size(payload.len() as u64)?),
        (None, None) => None,
    };
    let input = match j.input {
        None | Some(serde_json::Value::Null) => 0,
        Some(serde_json::Value::Number(n)) if n.as_u64().is_some_and(|n| n <= 1) => {
            n.as_u64().unwrap_or(0) as u8
        }
        Some(serde_json::Value::String(s)) if s.eq_ignore_ascii_case("left") => 0,
        Some(serde_json::Value::String(s)) if s.eq_ignore_ascii_case("right") => 1,
        Some(other) => {
            return Err(format!(
                "'input' {other} is not an input: 0 or \"left\" (the first), 1 or \"right\" (the second)"
            ));
        }
    };
    Ok(Record {
        key,
        event_time: check_event_time(j.event_time)?,
        partition: j.partition,
        value_size,
        input,
    })
}

/// Whether a CSV header names the columns in their order.
fn check_header(fields: &[&str]) -> Result<(), String> {
    let names_ok = fields.len() <= COLUMNS.len()
        && fields.iter().zip(COLUMNS).all(|(f, c)| {
            f.eq_ignore_ascii_case(c) || (c == "key" && f.eq_ignore_ascii_case("user"))
        });
    if names_ok {
        Ok(())
    } else {
        Err(format!(
            "the header '{}' does not name the trace's columns: expected key,event_time[,partition[,value_size[,input]]] in this order ('user' for 'key' too); `statebench trace convert` maps other columns",
            fields.join(",")
        ))
    }
}

fn parse_csv(fields: &[&str]) -> Result<Record, String> {
    if !(2..=COLUMNS.len()).contains(&fields.len()) || fields[0].is_empty() {
        return Err(format!(
            "expected 'key,event_time[,partition[,value_size[,input]]]', got {} fields{}",
            fields.len(),
            if fields.first().is_some_and(|k| k.is_empty()) {
                " and an empty key"
            } else {
                ""
            }
        ));
    }
    let event_time = fields[1].parse::<i64>().map_err(|_| {
        format!(
            "event_time '{}' is not an integer (epoch milliseconds)",
            fields[1]
        )
    })?;
    let optional = |i: usize| fields.get(i).copied().filter(|f| !f.is_empty());
    let partition = optional(2)
        .map(|p| {
            p.parse::<u32>()
                .map_err(|_| format!("partition '{p}' is not a non-negative integer"))
        })
        .transpose()?;
    let value_size = optional(3)
        .map(|v| {
            v.parse::<u64>()
                .map_err(|_| format!("value_size '{v}' is not a non-negative integer (bytes)"))
                .and_then(check_value_size)
        })
        .transpose()?;
    let input = optional(4)
        .map(|i| {
            parse_input(i).ok_or_else(|| {
                format!(
                    "input '{i}' is not an input: 0 or left (the first), 1 or right (the second)"
                )
            })
        })
        .transpose()?
        .unwrap_or(0);
    Ok(Record {
        key: fields[0].to_string(),
        event_time: check_event_time(event_time)?,
        partition,
        value_size,
        input,
    })
}

/// Reads and checks every line of a trace: its records with dense key ids.
fn read(path: &Path) -> Result<(Vec<String>, Vec<Numbered>), TraceError> {
    let text = std::fs::read_to_string(path).map_err(|source| TraceError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let mut ids: HashMap<String, u64> = HashMap::new();
    let mut keys = Vec::new();
    let mut records = Vec::new();
    let mut header_allowed = true;
    for (index, raw) in text.lines().enumerate() {
        let line = index + 1;
        let raw = raw.trim().trim_start_matches('\u{feff}');
        if raw.is_empty() || raw.starts_with('#') {
            continue;
        }
        let err = |message: String| TraceError::Line {
            path: path.to_path_buf(),
            line,
            message,
        };
        let record = if raw.starts_with('{') {
            header_allowed = false;
            parse_json(raw).map_err(err)?
        } else {
            let fields: Vec<&str> = raw.split(',').map(str::trim).collect();
            // A CSV header is the first data line, and only if its event_time is not a number.
            let is_header = std::mem::take(&mut header_allowed)
                && fields.get(1).is_some_and(|f| f.parse::<i64>().is_err());
            if is_header {
                check_header(&fields).map_err(err)?;
                continue;
            }
            parse_csv(&fields).map_err(err)?
        };
        let id = match ids.get(&record.key) {
            Some(id) => *id,
            None => {
                let id = keys.len() as u64;
                ids.insert(record.key.clone(), id);
                keys.push(record.key);
                id
            }
        };
        records.push(Numbered {
            key: id,
            line,
            event_time: record.event_time,
            partition: record.partition,
            value_size: record.value_size,
            input: record.input,
        });
    }
    if records.is_empty() {
        return Err(TraceError::Empty(path.to_path_buf()));
    }
    Ok((keys, records))
}

/// Kafka's keyed partitioning stand-in: the partition of a record without one.
fn hashed_partition(key: u64, partitions: u32) -> u32 {
    (key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 32) as u32 % partitions
}

/// A loaded trace: events in file order with dense key ids.
#[derive(Debug, Clone)]
pub struct Trace {
    pub events: Vec<Event>,
    /// The trace's own key strings, by id (`keys[e.user]`): what the job keys the events by
    /// (`pipeline::source::KeyNames`; docs/trace.md).
    pub keys: Vec<String>,
    /// Whether any event gave a value size (the others have `value_size: 0`).
    pub has_value_sizes: bool,
}

impl Trace {
    /// The trace a workload names (`trace:`), read and checked whole: its events, with its key
    /// strings given to the workload, whose job keys its records by them
    /// (`pipeline::source::KeyNames`). None for a workload without a trace.
    pub fn load_into(
        workload: &mut crate::config::Workload,
    ) -> Result<Option<std::sync::Arc<Vec<Event>>>, TraceError> {
        let Some(path) = &workload.spec.trace else {
            return Ok(None);
        };
        let trace = Trace::load(path, workload.spec.partitions)?;
        // What the workload left out (its keys, events, span) is the trace's.
        workload
            .complete_from_trace(trace.figures(workload.spec.partitions))
            .map_err(|e| TraceError::Workload(e.to_string()))?;
        workload.trace_keys = Some(std::sync::Arc::new(super::source::TraceKeys::new(
            trace.keys,
        )));
        Ok(Some(std::sync::Arc::new(trace.events)))
    }

    /// What the trace holds, for a workload of `partitions`.
    pub fn figures(&self, partitions: u32) -> crate::config::workload::TraceFigures {
        let mut inputs = [0u64; 2];
        let mut per_partition = vec![0u64; partitions.max(1) as usize];
        let (mut min, mut max) = (i64::MAX, i64::MIN);
        for e in &self.events {
            inputs[usize::from(e.input.min(1))] += 1;
            if let Some(n) = per_partition.get_mut(e.partition as usize) {
                *n += 1;
            }
            (min, max) = (min.min(e.event_time), max.max(e.event_time));
        }
        crate::config::workload::TraceFigures {
            records: self.events.len() as u64,
            keys: self.keys.len() as u64,
            inputs,
            partitions: per_partition,
            span: crate::config::Millis(max.saturating_sub(min).max(0) as u64),
        }
    }

    /// Reads and checks the whole trace. Events without a partition are keyed into one of
    /// `partitions` by key; a partition number must be below `partitions`.
    pub fn load(path: &Path, partitions: u32) -> Result<Trace, TraceError> {
        let (keys, records) = read(path)?;
        let partitions = partitions.max(1);
        let mut offsets = vec![0u64; partitions as usize];
        let mut events = Vec::with_capacity(records.len());
        for r in &records {
            let partition = match r.partition {
                Some(p) if p < partitions => p,
                Some(p) => {
                    return Err(TraceError::Line {
                        path: path.to_path_buf(),
                        line: r.line,
                        message: format!(
                            "partition {p} but the workload has {partitions} (0..{})",
                            partitions - 1
                        ),
                    });
                }
                None => hashed_partition(r.key, partitions),
            };
            let offset = offsets[partition as usize];
            offsets[partition as usize] += 1;
            events.push(Event {
                user: r.key,
                event_time: r.event_time,
                partition,
                offset,
                append_time: r.event_time,
                value_size: r.value_size.unwrap_or(0),
                input: r.input,
            });
        }
        Ok(Trace {
            events,
            keys,
            has_value_sizes: records.iter().any(|r| r.value_size.is_some()),
        })
    }
}

/// What `statebench trace check` tells about a trace.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct TraceSummary {
    pub events: u64,
    pub keys: u64,
    pub first_event_time: i64,
    pub min_event_time: i64,
    pub max_event_time: i64,
    /// The furthest an event lies behind the newest event time before it (ms): the
    /// out-of-orderness a watermark must allow for no event to be late.
    pub max_out_of_orderness: i64,
    /// Events with an event time before the newest one before them.
    pub out_of_order_events: u64,
    /// Events per input: [left, right].
    pub inputs: [u64; 2],
    /// Events per partition, of those that name one.
    pub partitions: BTreeMap<u32, u64>,
    /// Events without a partition (keyed into the workload's partitions by key).
    pub unpartitioned: u64,
    /// Events with a value size, and their smallest, largest and total size.
    pub value_sizes: u64,
    pub min_value_size: u32,
    pub max_value_size: u32,
    pub total_value_size: u64,
}

impl TraceSummary {
    /// Reads and checks the whole trace (as a run would) and sums it up.
    pub fn of(path: &Path) -> Result<TraceSummary, TraceError> {
        let (keys, records) = read(path)?;
        let first = records[0].event_time;
        let mut s = TraceSummary {
            events: records.len() as u64,
            keys: keys.len() as u64,
            first_event_time: first,
            min_event_time: first,
            max_event_time: first,
            max_out_of_orderness: 0,
            out_of_order_events: 0,
            inputs: [0; 2],
            partitions: BTreeMap::new(),
            unpartitioned: 0,
            value_sizes: 0,
            min_value_size: u32::MAX,
            max_value_size: 0,
            total_value_size: 0,
        };
        for r in &records {
            if r.event_time < s.max_event_time {
                s.out_of_order_events += 1;
                s.max_out_of_orderness =
                    s.max_out_of_orderness.max(s.max_event_time - r.event_time);
            }
            s.min_event_time = s.min_event_time.min(r.event_time);
            s.max_event_time = s.max_event_time.max(r.event_time);
            s.inputs[usize::from(r.input.min(1))] += 1;
            match r.partition {
                Some(p) => *s.partitions.entry(p).or_default() += 1,
                None => s.unpartitioned += 1,
            }
            if let Some(v) = r.value_size {
                s.value_sizes += 1;
                s.min_value_size = s.min_value_size.min(v);
                s.max_value_size = s.max_value_size.max(v);
                s.total_value_size += u64::from(v);
            }
        }
        if s.value_sizes == 0 {
            s.min_value_size = 0;
        }
        Ok(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &tempfile::TempDir, name: &str, text: &str) -> PathBuf {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    /// What a load gives, in one comparable value per event.
    fn fields(t: &Trace) -> Vec<(u64, i64, u32, u64, i64, u32, u8)> {
        t.events
            .iter()
            .map(|e| {
                (
                    e.user,
                    e.event_time,
                    e.partition,
                    e.offset,
                    e.append_time,
                    e.value_size,
                    e.input,
                )
            })
            .collect()
    }

    #[test]
    fn json_lines_and_csv_read_the_same_events() {
        let dir = tempfile::tempdir().unwrap();
        let json = write(
            &dir,
            "t.jsonl",
            "{\"user\": \"a\", \"event_time\": 1000}\n{\"user\": 7, \"event_time\": 2000, \"partition\": 1}\n",
        );
        let csv = write(
            &dir,
            "t.csv",
            "user,event_time,partition\na,1000\n7,2000,1\n",
        );
        let a = Trace::load(&json, 2).unwrap();
        let b = Trace::load(&csv, 2).unwrap();
        assert_eq!(a.events, b.events);
        assert_eq!(a.keys, ["a", "7"]);
        assert_eq!(a.events[1].partition, 1);
        assert!(!a.has_value_sizes);
    }

    /// The traces of statebench before value sizes and inputs load to exactly the events they
    /// loaded to then: the digest below was computed by the old loader's algorithm (dense ids
    /// in order of first appearance, hashed partitions, offsets per partition).
    #[test]
    fn old_traces_load_to_the_same_events_as_before() {
        for file in ["ads-sample.jsonl", "ads-sample.csv"] {
            let path = Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures/trace")
                .join(file);
            let t = Trace::load(&path, 4).unwrap();
            let mut h = 0u64;
            for e in &t.events {
                for x in [
                    e.user,
                    e.event_time as u64,
                    u64::from(e.partition),
                    e.offset,
                    e.append_time as u64,
                ] {
                    h = h.wrapping_mul(1_000_003) ^ x;
                }
                assert_eq!((e.value_size, e.input), (0, 0), "{file}");
            }
            assert_eq!(t.events.len(), 3000, "{file}");
            assert_eq!(h, 0xdbc9_364f_91bf_aa6d, "{file}");
            assert_eq!(&t.keys[..2], ["u-1", "u-10"], "{file}");
        }
    }

    #[test]
    fn every_v2_column_reads_in_both_formats() {
        let dir = tempfile::tempdir().unwrap();
        let csv = write(
            &dir,
            "v2.csv",
            "key,event_time,partition,value_size,input\n\
             o-1,1000,1,64,0\n\
             o-2,1500,,12,right\n\
             o-1,900,0,,left\n\
             o-3,2000,1,0,1\n\
             o-2,2100\n",
        );
        let json = write(
            &dir,
            "v2.jsonl",
            "{\"key\": \"o-1\", \"event_time\": 1000, \"partition\": 1, \"value_size\": 64, \"input\": 0}\n\
             {\"key\": \"o-2\", \"event_time\": 1500, \"payload\": \"twelve bytes\", \"input\": \"right\"}\n\
             {\"key\": \"o-1\", \"event_time\": 900, \"partition\": 0, \"input\": \"left\"}\n\
             {\"key\": \"o-3\", \"event_time\": 2000, \"partition\": 1, \"value_size\": 0, \"input\": 1}\n\
             {\"user\": \"o-2\", \"event_time\": 2100, \"partition\": null}\n",
        );
        let a = Trace::load(&csv, 2).unwrap();
        let b = Trace::load(&json, 2).unwrap();
        assert_eq!(a.events, b.events);
        assert_eq!(a.keys, ["o-1", "o-2", "o-3"]);
        assert!(a.has_value_sizes);
        // o-2 has no partition in its lines: keyed by its id into partition 1 of 2.
        assert_eq!(hashed_partition(1, 2), 1);
        assert_eq!(
            fields(&a),
            [
                (0, 1000, 1, 0, 1000, 64, 0),
                (1, 1500, 1, 1, 1500, 12, 1),
                (0, 900, 0, 0, 900, 0, 0),
                (2, 2000, 1, 2, 2000, 0, 1),
                (1, 2100, 1, 3, 2100, 0, 0),
            ]
        );
    }

    fn error(text: &str) -> String {
        let dir = tempfile::tempdir().unwrap();
        let path = write(&dir, "bad.trace", text);
        Trace::load(&path, 4).unwrap_err().to_string()
    }

    #[test]
    fn malformed_lines_are_named_by_number_with_what_is_valid() {
        for (text, expected) in [
            (
                "a,1000\nb,10x0\n",
                "bad.trace line 2: event_time '10x0' is not an integer (epoch milliseconds)",
            ),
            (
                "a,1000,9\n",
                "bad.trace line 1: partition 9 but the workload has 4 (0..3)",
            ),
            (
                "a,1000,-1\n",
                "line 1: partition '-1' is not a non-negative integer",
            ),
            (
                "a,1000,1,big\n",
                "line 1: value_size 'big' is not a non-negative integer (bytes)",
            ),
            (
                "a,1000,1,67108865\n",
                "line 1: value_size 67108865 is over the largest a trace may give, 67108864 bytes (64 MiB)",
            ),
            (
                "a,1000,1,5,2\n",
                "line 1: input '2' is not an input: 0 or left (the first), 1 or right (the second)",
            ),
            (
                "a,1000,1,5,0,extra\n",
                "line 1: expected 'key,event_time[,partition[,value_size[,input]]]', got 6 fields",
            ),
            ("a\n", "got 1 fields"),
            (",1000\n", "got 2 fields and an empty key"),
            (
                "a,-5\n",
                "line 1: event_time -5 is out of range (epoch milliseconds, 0 to",
            ),
            (
                "time,user\n1,a\n",
                "line 1: the header 'time,user' does not name the trace's columns: expected key,event_time[,partition[,value_size[,input]]] in this order",
            ),
            (
                "key,event_time,input\n",
                "line 1: the header 'key,event_time,input' does not name",
            ),
            ("{\"key\": \"a\"}\n", "line 1: missing field `event_time`"),
            (
                "{\"key\": \"a\", \"event_time\": 1, \"size\": 3}\n",
                "line 1: unknown field `size`",
            ),
            (
                "{\"event_time\": 1}\n",
                "line 1: has no 'key' (expected {\"key\": ...",
            ),
            (
                "{\"key\": \"a\", \"user\": \"a\", \"event_time\": 1}\n",
                "line 1: has both 'key' and 'user'",
            ),
            (
                "{\"key\": [1], \"event_time\": 1}\n",
                "line 1: 'key' must be a string or a number, not [1]",
            ),
            (
                "{\"key\": \"a\", \"event_time\": 1, \"value_size\": 3, \"payload\": \"abc\"}\n",
                "line 1: has both 'value_size' and 'payload'",
            ),
            (
                "{\"key\": \"a\", \"event_time\": 1, \"input\": \"middle\"}\n",
                "line 1: 'input' \"middle\" is not an input: 0 or \"left\"",
            ),
            (
                "{\"key\": \"a\", \"event_time\": 1, \"input\": 2}\n",
                "line 1: 'input' 2 is not an input",
            ),
            (
                "{\"key\": \"a\", \"event_time\": 1, \"value_size\": -3}\n",
                "line 1: invalid value: integer `-3`",
            ),
        ] {
            let msg = error(text);
            assert!(msg.contains(expected), "{text:?}: {msg}");
        }
        assert!(error("# nothing\n").ends_with("bad.trace has no events"));
    }
}
