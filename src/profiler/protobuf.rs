//! pprof's profile format (`profile.proto` of google/pprof), written by hand: pprof's own
//! encoders (prost, protobuf) bring build dependencies that would rebuild RocksDB. Only what a
//! CPU profile needs: sample types, samples with thread and bucket labels, one location per
//! function, functions and the string table. `decode` reads it back.

use std::collections::HashMap;

use super::CpuProfile;

// Field numbers of profile.proto.
const PROFILE_SAMPLE_TYPE: u32 = 1;
const PROFILE_SAMPLE: u32 = 2;
const PROFILE_LOCATION: u32 = 4;
const PROFILE_FUNCTION: u32 = 5;
const PROFILE_STRING_TABLE: u32 = 6;
const PROFILE_DURATION_NANOS: u32 = 10;
const PROFILE_PERIOD_TYPE: u32 = 11;
const PROFILE_PERIOD: u32 = 12;
const VALUE_TYPE_TYPE: u32 = 1;
const VALUE_TYPE_UNIT: u32 = 2;
const SAMPLE_LOCATION_ID: u32 = 1;
const SAMPLE_VALUE: u32 = 2;
const SAMPLE_LABEL: u32 = 3;
const LABEL_KEY: u32 = 1;
const LABEL_STR: u32 = 2;
const LOCATION_ID: u32 = 1;
const LOCATION_LINE: u32 = 4;
const LINE_FUNCTION_ID: u32 = 1;
const FUNCTION_ID: u32 = 1;
const FUNCTION_NAME: u32 = 2;
const FUNCTION_SYSTEM_NAME: u32 = 3;

const VARINT: u32 = 0;
const LEN: u32 = 2;

/// A protobuf message being written.
#[derive(Default)]
struct Message(Vec<u8>);

impl Message {
    fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.0.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.0.push(v as u8);
    }

    fn key(&mut self, field: u32, wire: u32) {
        self.varint(u64::from(field << 3 | wire));
    }

    fn uint(&mut self, field: u32, v: u64) {
        if v != 0 {
            self.key(field, VARINT);
            self.varint(v);
        }
    }

    fn bytes(&mut self, field: u32, b: &[u8]) {
        self.key(field, LEN);
        self.varint(b.len() as u64);
        self.0.extend_from_slice(b);
    }

    fn message(&mut self, field: u32, m: Message) {
        self.bytes(field, &m.0);
    }

    fn packed(&mut self, field: u32, values: impl IntoIterator<Item = u64>) {
        let mut inner = Message::default();
        for v in values {
            inner.varint(v);
        }
        self.bytes(field, &inner.0);
    }
}

/// Strings by index; index 0 is "" as the format requires.
struct Strings {
    table: Vec<String>,
    index: HashMap<String, u64>,
}

impl Strings {
    fn new() -> Strings {
        Strings {
            table: vec![String::new()],
            index: HashMap::from([(String::new(), 0)]),
        }
    }

    fn id(&mut self, s: &str) -> u64 {
        if let Some(&i) = self.index.get(s) {
            return i;
        }
        let i = self.table.len() as u64;
        self.table.push(s.to_string());
        self.index.insert(s.to_string(), i);
        i
    }
}

fn value_type(strings: &mut Strings, kind: &str, unit: &str) -> Message {
    let mut m = Message::default();
    m.uint(VALUE_TYPE_TYPE, strings.id(kind));
    m.uint(VALUE_TYPE_UNIT, strings.id(unit));
    m
}

/// `profile` as a pprof protobuf (uncompressed; pprof reads it as is). Values per sample:
/// samples (count) and CPU time (nanoseconds, a sample standing for 1/`frequency` s).
pub fn encode(profile: &CpuProfile, frequency: i32) -> Vec<u8> {
    let period = 1_000_000_000 / u64::from(frequency.max(1).unsigned_abs());
    let mut strings = Strings::new();
    let mut out = Message::default();
    let samples_type = value_type(&mut strings, "samples", "count");
    out.message(PROFILE_SAMPLE_TYPE, samples_type);
    let cpu_type = value_type(&mut strings, "cpu", "nanoseconds");
    out.message(PROFILE_SAMPLE_TYPE, cpu_type);

    // One function and one location per name, ids from 1 in order of first use.
    let mut functions: HashMap<String, u64> = HashMap::new();
    let mut order: Vec<String> = Vec::new();
    let mut stacks: Vec<_> = profile.stacks().collect();
    stacks.sort_by(|a, b| {
        (a.0.thread.as_ref(), &a.0.frames).cmp(&(b.0.thread.as_ref(), &b.0.frames))
    });
    let thread_key = strings.id("thread");
    let bucket_key = strings.id("bucket");
    for (stack, samples) in stacks {
        let mut sample = Message::default();
        let ids: Vec<u64> = stack
            .frames
            .iter()
            .map(|f| {
                let next = functions.len() as u64 + 1;
                *functions.entry(f.to_string()).or_insert_with(|| {
                    order.push(f.to_string());
                    next
                })
            })
            .collect();
        sample.packed(SAMPLE_LOCATION_ID, ids);
        sample.packed(SAMPLE_VALUE, [samples, samples * period]);
        for (key, value) in [
            (thread_key, stack.thread.as_ref()),
            (bucket_key, stack.bucket.key()),
        ] {
            let mut label = Message::default();
            label.uint(LABEL_KEY, key);
            label.uint(LABEL_STR, strings.id(value));
            sample.message(SAMPLE_LABEL, label);
        }
        out.message(PROFILE_SAMPLE, sample);
    }
    for (i, _) in order.iter().enumerate() {
        let id = i as u64 + 1;
        let mut line = Message::default();
        line.uint(LINE_FUNCTION_ID, id);
        let mut location = Message::default();
        location.uint(LOCATION_ID, id);
        location.message(LOCATION_LINE, line);
        out.message(PROFILE_LOCATION, location);
    }
    for (i, name) in order.iter().enumerate() {
        let mut function = Message::default();
        function.uint(FUNCTION_ID, i as u64 + 1);
        let name = strings.id(name);
        function.uint(FUNCTION_NAME, name);
        function.uint(FUNCTION_SYSTEM_NAME, name);
        out.message(PROFILE_FUNCTION, function);
    }
    out.uint(
        PROFILE_DURATION_NANOS,
        profile.duration.as_nanos().min(u128::from(u64::MAX)) as u64,
    );
    let period_type = value_type(&mut strings, "cpu", "nanoseconds");
    out.message(PROFILE_PERIOD_TYPE, period_type);
    out.uint(PROFILE_PERIOD, period);
    for s in &strings.table {
        out.bytes(PROFILE_STRING_TABLE, s.as_bytes());
    }
    out.0
}

/// A pprof profile read back: enough to check what `encode` wrote.
#[derive(Debug, Default, PartialEq)]
pub struct Decoded {
    /// (type, unit) of each value.
    pub sample_types: Vec<(String, String)>,
    /// Each sample: function names leaf first, values, labels (key, value).
    pub samples: Vec<DecodedSample>,
    pub period: u64,
    pub duration_nanos: u64,
}

#[derive(Debug, Default, PartialEq)]
pub struct DecodedSample {
    pub frames: Vec<String>,
    pub values: Vec<u64>,
    pub labels: Vec<(String, String)>,
}

#[derive(Debug, thiserror::Error)]
#[error("not a pprof profile: {0}")]
pub struct DecodeError(String);

/// One field of a message: its number and its varint value or bytes.
enum Field<'a> {
    Varint(u32, u64),
    Bytes(u32, &'a [u8]),
}

fn read_varint(b: &mut &[u8]) -> Result<u64, DecodeError> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let (&byte, rest) = b
            .split_first()
            .ok_or_else(|| DecodeError("truncated varint".into()))?;
        *b = rest;
        v |= u64::from(byte & 0x7f) << shift;
        if byte < 0x80 {
            return Ok(v);
        }
    }
    Err(DecodeError("varint too long".into()))
}

fn fields(mut b: &[u8]) -> Result<Vec<Field<'_>>, DecodeError> {
    let mut out = Vec::new();
    while !b.is_empty() {
        let key = read_varint(&mut b)?;
        let field = (key >> 3) as u32;
        match (key & 7) as u32 {
            VARINT => out.push(Field::Varint(field, read_varint(&mut b)?)),
            LEN => {
                let len = read_varint(&mut b)? as usize;
                if len > b.len() {
                    return Err(DecodeError(format!("field {field} runs past the end")));
                }
                let (bytes, rest) = b.split_at(len);
                out.push(Field::Bytes(field, bytes));
                b = rest;
            }
            wire => return Err(DecodeError(format!("wire type {wire} of field {field}"))),
        }
    }
    Ok(out)
}

/// A packed repeated field: varints back to back.
fn packed(mut b: &[u8]) -> Result<Vec<u64>, DecodeError> {
    let mut out = Vec::new();
    while !b.is_empty() {
        out.push(read_varint(&mut b)?);
    }
    Ok(out)
}

/// Reads a profile `encode` wrote (uncompressed).
pub fn decode(bytes: &[u8]) -> Result<Decoded, DecodeError> {
    let mut strings: Vec<String> = Vec::new();
    let mut sample_types: Vec<(u64, u64)> = Vec::new();
    // Location ids, values, and labels as string indexes, until the string table is read.
    struct Raw {
        ids: Vec<u64>,
        values: Vec<u64>,
        labels: Vec<(u64, u64)>,
    }
    let mut raw_samples: Vec<Raw> = Vec::new();
    let mut locations: HashMap<u64, u64> = HashMap::new();
    let mut functions: HashMap<u64, u64> = HashMap::new();
    let mut decoded = Decoded::default();
    let pair = |b: &[u8], a: u32, c: u32| -> Result<(u64, u64), DecodeError> {
        let (mut x, mut y) = (0, 0);
        for f in fields(b)? {
            match f {
                Field::Varint(n, v) if n == a => x = v,
                Field::Varint(n, v) if n == c => y = v,
                _ => {}
            }
        }
        Ok((x, y))
    };
    for field in fields(bytes)? {
        match field {
            Field::Bytes(PROFILE_SAMPLE_TYPE, b) => {
                sample_types.push(pair(b, VALUE_TYPE_TYPE, VALUE_TYPE_UNIT)?)
            }
            Field::Bytes(PROFILE_SAMPLE, b) => {
                let mut sample = Raw {
                    ids: Vec::new(),
                    values: Vec::new(),
                    labels: Vec::new(),
                };
                for f in fields(b)? {
                    match f {
                        Field::Bytes(SAMPLE_LOCATION_ID, p) => sample.ids.extend(packed(p)?),
                        Field::Bytes(SAMPLE_VALUE, p) => sample.values.extend(packed(p)?),
                        Field::Bytes(SAMPLE_LABEL, l) => {
                            sample.labels.push(pair(l, LABEL_KEY, LABEL_STR)?)
                        }
                        _ => {}
                    }
                }
                raw_samples.push(sample);
            }
            Field::Bytes(PROFILE_LOCATION, b) => {
                let mut id = 0;
                let mut function = 0;
                for f in fields(b)? {
                    match f {
                        Field::Varint(LOCATION_ID, v) => id = v,
                        Field::Bytes(LOCATION_LINE, l) => {
                            function = pair(l, LINE_FUNCTION_ID, 0)?.0;
                        }
                        _ => {}
                    }
                }
                locations.insert(id, function);
            }
            Field::Bytes(PROFILE_FUNCTION, b) => {
                let (id, name) = pair(b, FUNCTION_ID, FUNCTION_NAME)?;
                functions.insert(id, name);
            }
            Field::Bytes(PROFILE_STRING_TABLE, b) => strings.push(
                String::from_utf8(b.to_vec())
                    .map_err(|_| DecodeError("a string is not UTF-8".into()))?,
            ),
            Field::Varint(PROFILE_DURATION_NANOS, v) => decoded.duration_nanos = v,
            Field::Varint(PROFILE_PERIOD, v) => decoded.period = v,
            _ => {}
        }
    }
    let string = |i: u64| {
        strings
            .get(i as usize)
            .cloned()
            .ok_or_else(|| DecodeError(format!("string {i} is not in the table")))
    };
    if strings.first().map(String::as_str) != Some("") {
        return Err(DecodeError(
            "the string table does not start with \"\"".into(),
        ));
    }
    decoded.sample_types = sample_types
        .into_iter()
        .map(|(t, u)| Ok((string(t)?, string(u)?)))
        .collect::<Result<_, DecodeError>>()?;
    for Raw {
        ids,
        values,
        labels,
    } in raw_samples
    {
        let frames = ids
            .iter()
            .map(|id| {
                let function = locations
                    .get(id)
                    .ok_or_else(|| DecodeError(format!("location {id} is missing")))?;
                let name = functions
                    .get(function)
                    .ok_or_else(|| DecodeError(format!("function {function} is missing")))?;
                string(*name)
            })
            .collect::<Result<_, _>>()?;
        let labels = labels
            .into_iter()
            .map(|(k, v)| Ok((string(k)?, string(v)?)))
            .collect::<Result<_, DecodeError>>()?;
        decoded.samples.push(DecodedSample {
            frames,
            values,
            labels,
        });
    }
    Ok(decoded)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::super::{Bucket, Stack};
    use super::*;

    #[test]
    fn varints_round_trip_at_their_edges() {
        for v in [
            0u64,
            1,
            127,
            128,
            300,
            16_383,
            16_384,
            u64::from(u32::MAX),
            u64::MAX,
        ] {
            let mut m = Message::default();
            m.packed(1, [v, 5]);
            let fields = fields(&m.0).unwrap();
            let Field::Bytes(1, b) = fields[0] else {
                panic!("expected bytes");
            };
            assert_eq!(packed(b).unwrap(), vec![v, 5]);
        }
    }

    #[test]
    fn a_profile_reads_back_as_written() {
        let stack = |thread: &str, frames: &[&str]| {
            Stack::new(thread, frames.iter().map(|f| Arc::from(*f)).collect())
        };
        let mut profile = CpuProfile::from_stacks([
            (
                stack(
                    "statebench-engine",
                    &[
                        "XXH3_64bits",
                        "rocksdb::VerifyBlockChecksum",
                        "rocksdb::FullFilterBlockReader::MayMatch",
                    ],
                ),
                300,
            ),
            (
                stack("rocksdb:low", &["memcpy", "rocksdb::CompactionJob::Run"]),
                2,
            ),
        ]);
        profile.duration = std::time::Duration::from_millis(1500);
        let decoded = decode(&encode(&profile, 200)).unwrap();
        assert_eq!(
            decoded.sample_types,
            vec![
                ("samples".to_string(), "count".to_string()),
                ("cpu".to_string(), "nanoseconds".to_string())
            ]
        );
        assert_eq!(decoded.period, 5_000_000);
        assert_eq!(decoded.duration_nanos, 1_500_000_000);
        assert_eq!(decoded.samples.len(), 2);
        let compaction = &decoded.samples[0];
        assert_eq!(compaction.frames, ["memcpy", "rocksdb::CompactionJob::Run"]);
        assert_eq!(compaction.values, [2, 10_000_000]);
        assert_eq!(
            compaction.labels,
            [
                ("thread".to_string(), "rocksdb:low".to_string()),
                ("bucket".to_string(), Bucket::Compaction.key().to_string())
            ]
        );
        let filter = &decoded.samples[1];
        assert_eq!(filter.frames[0], "XXH3_64bits");
        assert_eq!(filter.values, [300, 1_500_000_000]);
        assert_eq!(filter.labels[1].1, "filter-block-reads");
    }

    #[test]
    fn garbage_is_refused() {
        assert!(decode(&[0x0a, 0x05, 0x01]).is_err());
        assert!(decode(&[0x0b]).is_err());
    }
}
