//! `statebench trace convert`: a user's own export (CSV with a header, or JSON Lines of flat
//! objects) turned into a trace, with a column mapping. Every line is checked before anything
//! is written; the caller writes the result in one piece.

use std::borrow::Cow;
use std::collections::HashSet;
use std::path::{Path, PathBuf};

use super::time::{format_rfc3339, parse_epoch_millis, parse_epoch_seconds, parse_rfc3339};
use super::{COLUMNS, Record, check_event_time, check_value_size, parse_input};

/// How the export writes its event times.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TimeFormat {
    /// Milliseconds since 1970-01-01T00:00:00Z, an integer (Kafka's timestamps).
    EpochMs,
    /// Seconds since 1970-01-01T00:00:00Z, an integer or a decimal.
    EpochS,
    /// RFC 3339, e.g. 2026-01-01T00:00:00.250Z or 2026-01-01T09:00:00+09:00.
    Rfc3339,
}

/// The trace format written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OutputFormat {
    Csv,
    Jsonl,
}

impl OutputFormat {
    /// JSON Lines for a `.jsonl`, `.ndjson` or `.json` file, CSV otherwise.
    pub fn for_path(path: &Path) -> OutputFormat {
        match path.extension().and_then(|e| e.to_str()) {
            Some(e) if ["jsonl", "ndjson", "json"].contains(&e.to_ascii_lowercase().as_str()) => {
                OutputFormat::Jsonl
            }
            _ => OutputFormat::Csv,
        }
    }
}

/// Where the value size comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SizeColumn {
    /// A column of sizes in bytes.
    ValueSize(String),
    /// A column of payloads: the size is its length in bytes (a JSON value that is not a
    /// string: the length of its compact JSON text).
    Payload(String),
}

/// Which column of the export is which field of the trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mapping {
    pub key: String,
    pub time: String,
    pub time_format: TimeFormat,
    pub partition: Option<String>,
    pub size: Option<SizeColumn>,
    pub input: Option<String>,
    /// The input column's values for the left and the right input (default 0/left, 1/right).
    pub input_values: Option<(String, String)>,
}

#[derive(Debug, thiserror::Error)]
pub enum ConvertError {
    #[error("cannot read {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} line {line}, column '{column}' ({flag}): {message}")]
    Cell {
        path: PathBuf,
        line: usize,
        column: String,
        flag: &'static str,
        message: String,
    },
    #[error("{path} line {line}: {message}")]
    Line {
        path: PathBuf,
        line: usize,
        message: String,
    },
    #[error("{path}: {message}")]
    Header { path: PathBuf, message: String },
    #[error("{0} has no records to convert")]
    Empty(PathBuf),
}

/// A converted trace, ready to be written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Converted {
    pub text: String,
    pub records: Vec<Record>,
    pub keys: usize,
    /// "CSV" or "JSON Lines": what the export was read as.
    pub read_as: &'static str,
}

/// One cell of the export.
#[derive(Clone, Copy)]
enum Cell<'a> {
    Text(&'a str),
    Json(&'a serde_json::Value),
}

impl Cell<'_> {
    /// The cell as text: a CSV field, a JSON string or number.
    fn text(&self) -> Option<Cow<'_, str>> {
        match self {
            Cell::Text(s) => Some(Cow::Borrowed(s)),
            Cell::Json(serde_json::Value::String(s)) => Some(Cow::Borrowed(s)),
            Cell::Json(serde_json::Value::Number(n)) => Some(Cow::Owned(n.to_string())),
            Cell::Json(_) => None,
        }
    }

    /// How the cell reads in a message.
    fn shown(&self) -> String {
        match self {
            Cell::Text(s) => format!("'{s}'"),
            Cell::Json(serde_json::Value::String(s)) => format!("'{s}'"),
            Cell::Json(v) => v.to_string(),
        }
    }
}

fn key_of(cell: Cell) -> Result<String, String> {
    match cell.text() {
        Some(k) if !k.is_empty() => Ok(k.into_owned()),
        Some(_) => Err("is empty (every record needs a key)".to_string()),
        None => Err(format!(
            "{} is not a key (a string or a number)",
            cell.shown()
        )),
    }
}

fn time_of(cell: Cell, format: TimeFormat) -> Result<i64, String> {
    let text = cell.text().unwrap_or_default();
    let text = text.trim();
    let (parsed, expected) = match format {
        TimeFormat::EpochMs => (
            parse_epoch_millis(text),
            "epoch milliseconds (an integer such as 1767225600000)",
        ),
        TimeFormat::EpochS => (
            parse_epoch_seconds(text),
            "epoch seconds (such as 1767225600 or 1767225600.25)",
        ),
        TimeFormat::Rfc3339 => (
            parse_rfc3339(text),
            "an RFC 3339 time (such as 2026-01-01T00:00:00.250Z or 2026-01-01T09:00:00+09:00)",
        ),
    };
    let Some(ms) = parsed else {
        let hint = if format != TimeFormat::Rfc3339 && parse_rfc3339(text).is_some() {
            "; it is an RFC 3339 time: pass --time-format rfc3339"
        } else if format == TimeFormat::EpochMs && parse_epoch_seconds(text).is_some() {
            "; it has a fraction: pass --time-format epoch-s if it is seconds"
        } else if format == TimeFormat::Rfc3339 && parse_epoch_seconds(text).is_some() {
            "; it is a number: pass --time-format epoch-ms or epoch-s"
        } else {
            ""
        };
        return Err(format!("{} is not {expected}{hint}", cell.shown()));
    };
    check_event_time(ms)
        .map_err(|e| format!("{} ({})", e, format_rfc3339(ms.clamp(0, i64::MAX / 4))))
}

fn unsigned_of(cell: Cell, what: &str) -> Result<u64, String> {
    cell.text()
        .and_then(|t| {
            let t = t.trim();
            (!t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()))
                .then(|| t.parse::<u64>().ok())?
        })
        .ok_or_else(|| format!("{} is not {what} (a non-negative integer)", cell.shown()))
}

fn size_of_payload(cell: Cell) -> Result<u32, String> {
    let bytes = match cell {
        Cell::Text(s) => s.len(),
        Cell::Json(serde_json::Value::String(s)) => s.len(),
        Cell::Json(serde_json::Value::Null) => {
            return Err(
                "is null (a payload must be a value; drop tombstones before converting)"
                    .to_string(),
            );
        }
        Cell::Json(v) => v.to_string().len(),
    };
    check_value_size(bytes as u64)
}

fn input_of(cell: Cell, values: Option<&(String, String)>) -> Result<u8, String> {
    let text = cell.text();
    let text = text.as_deref().map(str::trim);
    match (values, text) {
        (Some((left, _)), Some(t)) if t == left => Ok(0),
        (Some((_, right)), Some(t)) if t == right => Ok(1),
        (Some((left, right)), _) => Err(format!(
            "{} is neither '{left}' (the left input) nor '{right}' (the right input), the --input-values",
            cell.shown()
        )),
        (None, t) => t.and_then(parse_input).ok_or_else(|| {
            format!(
                "{} is not an input: 0 or left (the first), 1 or right (the second); map your own values with --input-values LEFT,RIGHT",
                cell.shown()
            )
        }),
    }
}

/// Why a key cannot be written as a CSV trace field, if it cannot.
fn csv_unsafe(key: &str) -> Option<&'static str> {
    if key.contains([',', '"', '\n', '\r']) {
        Some("a comma, a quote or a line break")
    } else if key.trim() != key || key.starts_with('\u{feff}') {
        Some("space at its start or end")
    } else if key.starts_with('#') || key.starts_with('{') {
        Some("a '#' or '{' first (a comment or a JSON line in a trace)")
    } else {
        None
    }
}

/// A CSV row: the line it starts on and its fields.
type Row = (usize, Vec<String>);

/// RFC 4180 CSV: rows of fields with the line each row starts on. Quoted fields may hold
/// commas, doubled quotes and line breaks; unquoted fields are trimmed; blank lines skipped.
fn csv_rows(text: &str) -> Result<Vec<Row>, (usize, String)> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut rows = Vec::new();
    let (mut row, mut field) = (Vec::new(), String::new());
    let (mut line, mut row_line) = (1usize, 1usize);
    let mut chars = text.chars().peekable();
    let mut quoted_field = false;
    let end_field = |row: &mut Vec<String>, field: &mut String, quoted: bool| {
        let f = std::mem::take(field);
        row.push(if quoted { f } else { f.trim().to_string() });
    };
    while let Some(c) = chars.next() {
        match c {
            '"' if field.trim().is_empty() && !quoted_field => {
                field.clear();
                quoted_field = true;
                let opened = line;
                loop {
                    match chars.next() {
                        Some('"') if chars.peek() == Some(&'"') => {
                            chars.next();
                            field.push('"');
                        }
                        Some('"') => break,
                        Some(c) => {
                            line += usize::from(c == '\n');
                            field.push(c);
                        }
                        None => return Err((opened, "a quoted field is not closed".to_string())),
                    }
                }
                if !matches!(chars.peek(), None | Some(',' | '\n' | '\r')) {
                    return Err((
                        line,
                        "text after a quoted field's closing quote (a quote inside a quoted field is written \"\")"
                            .to_string(),
                    ));
                }
            }
            ',' => {
                end_field(&mut row, &mut field, quoted_field);
                quoted_field = false;
            }
            '\r' if chars.peek() == Some(&'\n') => {}
            '\n' => {
                if !(row.is_empty() && field.trim().is_empty() && !quoted_field) {
                    end_field(&mut row, &mut field, quoted_field);
                    rows.push((row_line, std::mem::take(&mut row)));
                }
                field.clear();
                quoted_field = false;
                line += 1;
                row_line = line;
            }
            c => {
                if quoted_field && !c.is_whitespace() {
                    return Err((
                        line,
                        "text after a quoted field's closing quote".to_string(),
                    ));
                }
                field.push(c);
            }
        }
    }
    if !(row.is_empty() && field.trim().is_empty() && !quoted_field) {
        end_field(&mut row, &mut field, quoted_field);
        rows.push((row_line, row));
    }
    Ok(rows)
}

/// A JSON object's field by name, or by a dotted path into nested objects (`value.size`).
fn json_field<'a>(obj: &'a serde_json::Value, name: &str) -> Option<&'a serde_json::Value> {
    obj.get(name).or_else(|| {
        name.split('.')
            .try_fold(obj, |v, part| v.get(part))
            .filter(|_| name.contains('.'))
    })
}

/// The mapped columns: (trace column index, export column name, flag).
fn mapped(m: &Mapping) -> Vec<(usize, &str, &'static str)> {
    let mut out = vec![(0, m.key.as_str(), "--key"), (1, m.time.as_str(), "--time")];
    if let Some(p) = &m.partition {
        out.push((2, p, "--partition"));
    }
    match &m.size {
        Some(SizeColumn::ValueSize(c)) => out.push((3, c, "--value-size")),
        Some(SizeColumn::Payload(c)) => out.push((3, c, "--payload")),
        None => {}
    }
    if let Some(i) = &m.input {
        out.push((4, i, "--input"));
    }
    out
}

/// One record from its mapped cells (`cells[i]` for trace column i, in `mapped` order).
fn record(m: &Mapping, cells: &[(usize, Cell)]) -> Result<Record, (usize, String)> {
    let mut r = Record {
        key: String::new(),
        event_time: 0,
        partition: None,
        value_size: None,
        input: 0,
    };
    for (i, (column, cell)) in cells.iter().enumerate() {
        let cell = *cell;
        let result = match column {
            0 => key_of(cell).map(|k| r.key = k),
            1 => time_of(cell, m.time_format).map(|t| r.event_time = t),
            2 => unsigned_of(cell, "a partition number").and_then(|p| {
                u32::try_from(p)
                    .map(|p| r.partition = Some(p))
                    .map_err(|_| format!("partition {p} is too large"))
            }),
            3 => match &m.size {
                Some(SizeColumn::Payload(_)) => size_of_payload(cell),
                _ => unsigned_of(cell, "a value size in bytes").and_then(check_value_size),
            }
            .map(|s| r.value_size = Some(s)),
            _ => input_of(cell, m.input_values.as_ref()).map(|i| r.input = i),
        };
        result.map_err(|e| (i, e))?;
    }
    Ok(r)
}

/// Reads and checks the whole export and renders the trace; nothing is written.
pub fn convert(path: &Path, m: &Mapping, format: OutputFormat) -> Result<Converted, ConvertError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConvertError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let columns = mapped(m);
    let cell_err = |line: usize, i: usize, message: String| ConvertError::Cell {
        path: path.to_path_buf(),
        line,
        column: columns[i].1.to_string(),
        flag: columns[i].2,
        message,
    };
    let line_err = |line: usize, message: String| ConvertError::Line {
        path: path.to_path_buf(),
        line,
        message,
    };
    let mut records = Vec::new();
    let mut lines = Vec::new();
    let is_json = text
        .trim_start_matches('\u{feff}')
        .trim_start()
        .starts_with('{');
    if is_json {
        for (index, raw) in text.lines().enumerate() {
            let raw = raw.trim().trim_start_matches('\u{feff}');
            if raw.is_empty() {
                continue;
            }
            let value: serde_json::Value = serde_json::from_str(raw).map_err(|e| {
                line_err(
                    index + 1,
                    format!("not JSON: {e} (JSON Lines: one object per line)"),
                )
            })?;
            if !value.is_object() {
                return Err(line_err(
                    index + 1,
                    format!("{value} is not a JSON object (JSON Lines: one object per line)"),
                ));
            }
            let mut cells = Vec::with_capacity(columns.len());
            for (i, (column, name, _)) in columns.iter().enumerate() {
                let cell = json_field(&value, name).ok_or_else(|| {
                    let fields: Vec<&str> = value
                        .as_object()
                        .map(|o| o.keys().map(String::as_str).collect())
                        .unwrap_or_default();
                    cell_err(
                        index + 1,
                        i,
                        format!(
                            "the line has no such field (its fields: {})",
                            fields.join(", ")
                        ),
                    )
                })?;
                if cell.is_null() {
                    return Err(cell_err(index + 1, i, "is null".to_string()));
                }
                cells.push((*column, Cell::Json(cell)));
            }
            records.push(record(m, &cells).map_err(|(i, e)| cell_err(index + 1, i, e))?);
            lines.push(index + 1);
        }
    } else {
        let rows = csv_rows(&text).map_err(|(line, e)| line_err(line, e))?;
        let Some(((_, header), rows)) = rows.split_first() else {
            return Err(ConvertError::Empty(path.to_path_buf()));
        };
        let mut at = Vec::with_capacity(columns.len());
        for (column, name, flag) in &columns {
            let found: Vec<usize> = header
                .iter()
                .enumerate()
                .filter(|(_, h)| h == name)
                .map(|(i, _)| i)
                .collect();
            match found[..] {
                [i] => at.push((*column, i)),
                [] => {
                    return Err(ConvertError::Header {
                        path: path.to_path_buf(),
                        message: format!(
                            "column '{name}' ({flag}) is not in the CSV header; its columns are: {} (a CSV export needs a header line naming them; JSON Lines are read when the file starts with '{{')",
                            header.join(", ")
                        ),
                    });
                }
                _ => {
                    return Err(ConvertError::Header {
                        path: path.to_path_buf(),
                        message: format!(
                            "column '{name}' ({flag}) is in the CSV header {} times; which one is meant cannot be told",
                            found.len()
                        ),
                    });
                }
            }
        }
        for (line, row) in rows {
            if row.len() != header.len() {
                return Err(line_err(
                    *line,
                    format!(
                        "{} fields, but the header has {} (a field with a comma must be quoted: \"a,b\")",
                        row.len(),
                        header.len()
                    ),
                ));
            }
            let cells: Vec<(usize, Cell)> = at
                .iter()
                .map(|(column, i)| (*column, Cell::Text(&row[*i])))
                .collect();
            records.push(record(m, &cells).map_err(|(i, e)| cell_err(*line, i, e))?);
            lines.push(*line);
        }
    }
    if records.is_empty() {
        return Err(ConvertError::Empty(path.to_path_buf()));
    }
    if format == OutputFormat::Csv {
        for (r, line) in records.iter().zip(&lines) {
            if let Some(why) = csv_unsafe(&r.key) {
                return Err(cell_err(
                    *line,
                    0,
                    format!(
                        "key '{}' has {why}, which a CSV trace cannot hold: write JSON Lines (--format jsonl)",
                        r.key
                    ),
                ));
            }
        }
    }
    let keys = records
        .iter()
        .map(|r| r.key.as_str())
        .collect::<HashSet<_>>()
        .len();
    let text = render(&records, &columns, format);
    Ok(Converted {
        text,
        records,
        keys,
        read_as: if is_json { "JSON Lines" } else { "CSV" },
    })
}

/// The trace's text: a header and one line per record (CSV), or one object per record.
fn render(
    records: &[Record],
    columns: &[(usize, &str, &'static str)],
    format: OutputFormat,
) -> String {
    use std::fmt::Write as _;
    let has = |c: usize| columns.iter().any(|(i, _, _)| *i == c);
    let width = columns.iter().map(|(i, _, _)| i + 1).max().unwrap_or(2);
    let mut out = String::new();
    if format == OutputFormat::Csv {
        out.push_str(&COLUMNS[..width].join(","));
        out.push('\n');
    }
    for r in records {
        // Writing to a String cannot fail.
        let _ = match format {
            OutputFormat::Csv => {
                let mut fields = vec![r.key.clone(), r.event_time.to_string()];
                fields.extend((2..width).map(|c| match c {
                    2 => r.partition.map(|p| p.to_string()).unwrap_or_default(),
                    3 => r.value_size.map(|v| v.to_string()).unwrap_or_default(),
                    _ if has(4) => r.input.to_string(),
                    _ => String::new(),
                }));
                writeln!(out, "{}", fields.join(","))
            }
            OutputFormat::Jsonl => {
                // A string serializes to JSON infallibly.
                let key = serde_json::to_string(&r.key).unwrap_or_default();
                let mut line = format!("{{\"key\": {key}, \"event_time\": {}", r.event_time);
                if let Some(p) = r.partition {
                    let _ = write!(line, ", \"partition\": {p}");
                }
                if let Some(v) = r.value_size {
                    let _ = write!(line, ", \"value_size\": {v}");
                }
                if has(4) {
                    let _ = write!(line, ", \"input\": {}", r.input);
                }
                writeln!(out, "{line}}}")
            }
        };
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(text: &str) -> Vec<(usize, Vec<String>)> {
        csv_rows(text).unwrap()
    }

    #[test]
    fn csv_fields_follow_rfc_4180() {
        let text = "\u{feff}a, b ,c\r\n\n\"x,1\",\"say \"\"hi\"\"\",\"two\nlines\"\nlast,,\"\"";
        assert_eq!(
            rows(text),
            [
                (1, vec!["a".into(), "b".into(), "c".into()]),
                (
                    3,
                    vec!["x,1".into(), "say \"hi\"".into(), "two\nlines".into()]
                ),
                (5, vec!["last".into(), String::new(), String::new()]),
            ]
        );
        // A quote inside an unquoted field is kept as written.
        assert_eq!(rows("a\"b,c\n")[0].1, ["a\"b", "c"]);
        assert_eq!(
            csv_rows("a,b\n\"open,c\n").unwrap_err(),
            (2, "a quoted field is not closed".to_string())
        );
        assert!(
            csv_rows("\"a\"b,c\n")
                .unwrap_err()
                .1
                .contains("closing quote")
        );
    }

    #[test]
    fn json_fields_by_name_or_dotted_path() {
        let v: serde_json::Value =
            serde_json::from_str(r#"{"a.b": 1, "a": {"b": 2, "c": {"d": 3}}}"#).unwrap();
        assert_eq!(json_field(&v, "a.b"), Some(&serde_json::json!(1)));
        assert_eq!(json_field(&v, "a.c.d"), Some(&serde_json::json!(3)));
        assert_eq!(json_field(&v, "a.x"), None);
        assert_eq!(json_field(&v, "x"), None);
    }

    #[test]
    fn cells_convert_or_say_what_is_valid() {
        let j = |s: &str| serde_json::from_str::<serde_json::Value>(s).unwrap();
        assert_eq!(key_of(Cell::Json(&j("17"))).unwrap(), "17");
        assert!(
            key_of(Cell::Json(&j("true")))
                .unwrap_err()
                .contains("true is not a key")
        );
        assert!(key_of(Cell::Text("")).unwrap_err().contains("is empty"));
        assert_eq!(
            time_of(Cell::Json(&j("1767225600.5")), TimeFormat::EpochS),
            Ok(1_767_225_600_500)
        );
        assert_eq!(
            time_of(Cell::Text(" 1767225600000 "), TimeFormat::EpochMs),
            Ok(1_767_225_600_000)
        );
        assert!(
            time_of(Cell::Text("1767225600.5"), TimeFormat::EpochMs)
                .unwrap_err()
                .contains("pass --time-format epoch-s")
        );
        assert!(
            time_of(Cell::Text("1767225600"), TimeFormat::Rfc3339)
                .unwrap_err()
                .contains("it is a number: pass --time-format epoch-ms or epoch-s")
        );
        assert!(
            time_of(Cell::Text("1969-12-31T23:59:59Z"), TimeFormat::Rfc3339)
                .unwrap_err()
                .contains("event_time -1000 is out of range")
        );
        assert_eq!(size_of_payload(Cell::Json(&j(r#"{"a": 1}"#))), Ok(7));
        assert_eq!(size_of_payload(Cell::Text("héllo")), Ok(6));
        let values = ("clicks".to_string(), "views".to_string());
        assert_eq!(input_of(Cell::Text("views"), Some(&values)), Ok(1));
        assert!(
            input_of(Cell::Text("left"), Some(&values))
                .unwrap_err()
                .contains("is neither 'clicks' (the left input) nor 'views'")
        );
        assert_eq!(input_of(Cell::Json(&j("\"Right\"")), None), Ok(1));
        assert!(
            input_of(Cell::Json(&j("2")), None)
                .unwrap_err()
                .contains("--input-values")
        );
        assert!(unsigned_of(Cell::Text("-1"), "a partition number").is_err());
    }

    #[test]
    fn keys_a_csv_trace_cannot_hold() {
        for key in ["a,b", "say \"x\"", "two\nlines", " pad", "#tag", "{x"] {
            assert!(csv_unsafe(key).is_some(), "{key:?}");
        }
        assert_eq!(csv_unsafe("order-1 x"), None);
        assert_eq!(
            OutputFormat::for_path(Path::new("t.JSONL")),
            OutputFormat::Jsonl
        );
        assert_eq!(
            OutputFormat::for_path(Path::new("t.txt")),
            OutputFormat::Csv
        );
    }
}
