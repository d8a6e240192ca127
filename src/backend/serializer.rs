//! Value serializers: a compact binary one (Flink's POJO serializer) and a generic,
//! self-describing one (Flink's Kryo fallback), so their CPU and size cost shows.
//!
//! Values of MapState entries are written null-sensitively, as RocksDBMapState does: one
//! boolean byte (is-null) before the value.

use crate::config::workload::SerializerKind;

/// `MapState<String window, Stats>` value: the user's count in one window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Stats {
    pub count: i64,
    pub first_event_time: i64,
    pub last_event_time: i64,
}

/// `timerState` value: what one timer must decrement, per window index.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Decrement {
    pub windows: Vec<(u8, u32)>,
}

impl Decrement {
    pub fn add(&mut self, window: u8, n: u32) {
        match self.windows.iter_mut().find(|(w, _)| *w == window) {
            Some((_, count)) => *count += n,
            None => self.windows.push((window, n)),
        }
    }
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("corrupt {what} value: {reason}")]
pub struct CodecError {
    pub what: &'static str,
    pub reason: &'static str,
}

const STATS_CLASS: &str = "com.example.ads.AdsFrequencyStats";
const DECREMENT_CLASS: &str = "com.example.ads.TimerDecrement";

/// Encodes and decodes state values in the workload's serializer.
#[derive(Debug, Clone, Copy)]
pub struct ValueSerializer(pub SerializerKind);

impl ValueSerializer {
    pub fn encode_stats(&self, stats: &Stats, out: &mut Vec<u8>) {
        out.clear();
        out.push(0); // not null
        match self.0 {
            SerializerKind::Compact => {
                // PojoSerializer: flags byte, then per field a null marker and the value.
                out.push(0);
                for v in [stats.count, stats.first_event_time, stats.last_event_time] {
                    out.push(0);
                    out.extend_from_slice(&v.to_be_bytes());
                }
            }
            SerializerKind::Generic => {
                let mut w = GenericWriter::new(out, STATS_CLASS, 3);
                w.field_i64("count", stats.count);
                w.field_i64("firstEventTime", stats.first_event_time);
                w.field_i64("lastEventTime", stats.last_event_time);
            }
        }
    }

    pub fn decode_stats(&self, bytes: &[u8]) -> Result<Stats, CodecError> {
        const WHAT: &str = "Stats";
        let body = not_null(bytes, WHAT)?;
        match self.0 {
            SerializerKind::Compact => {
                if body.len() != 1 + 3 * 9 {
                    return Err(CodecError {
                        what: WHAT,
                        reason: "wrong length",
                    });
                }
                let field = |i: usize| {
                    let at = 1 + i * 9 + 1;
                    let mut b = [0u8; 8];
                    b.copy_from_slice(&body[at..at + 8]);
                    i64::from_be_bytes(b)
                };
                Ok(Stats {
                    count: field(0),
                    first_event_time: field(1),
                    last_event_time: field(2),
                })
            }
            SerializerKind::Generic => {
                let mut r = GenericReader::new(body, STATS_CLASS, WHAT)?;
                let mut stats = Stats::default();
                for _ in 0..r.fields {
                    let (name, value) = r.field_i64()?;
                    match name {
                        "count" => stats.count = value,
                        "firstEventTime" => stats.first_event_time = value,
                        "lastEventTime" => stats.last_event_time = value,
                        _ => {
                            return Err(CodecError {
                                what: WHAT,
                                reason: "unknown field",
                            });
                        }
                    }
                }
                Ok(stats)
            }
        }
    }

    pub fn encode_decrement(&self, d: &Decrement, out: &mut Vec<u8>) {
        out.clear();
        out.push(0);
        match self.0 {
            SerializerKind::Compact => {
                out.push(d.windows.len() as u8);
                for (w, n) in &d.windows {
                    out.push(*w);
                    out.extend_from_slice(&n.to_be_bytes());
                }
            }
            SerializerKind::Generic => {
                let mut w = GenericWriter::new(out, DECREMENT_CLASS, d.windows.len());
                for (window, n) in &d.windows {
                    w.field_i64(
                        WINDOW_FIELDS[usize::from(*window) % WINDOW_FIELDS.len()],
                        i64::from(*n),
                    );
                }
            }
        }
    }

    pub fn decode_decrement(&self, bytes: &[u8]) -> Result<Decrement, CodecError> {
        self.decode_decrement_body(not_null(bytes, "Decrement")?)
    }

    /// Decodes a Decrement without the leading null flag (as it sits inside a TTL value).
    pub fn decode_decrement_body(&self, body: &[u8]) -> Result<Decrement, CodecError> {
        const WHAT: &str = "Decrement";
        let mut d = Decrement::default();
        match self.0 {
            SerializerKind::Compact => {
                let n = usize::from(*body.first().ok_or(CodecError {
                    what: WHAT,
                    reason: "empty",
                })?);
                if body.len() != 1 + n * 5 {
                    return Err(CodecError {
                        what: WHAT,
                        reason: "wrong length",
                    });
                }
                for chunk in body[1..].chunks_exact(5) {
                    d.windows.push((
                        chunk[0],
                        u32::from_be_bytes([chunk[1], chunk[2], chunk[3], chunk[4]]),
                    ));
                }
            }
            SerializerKind::Generic => {
                let mut r = GenericReader::new(body, DECREMENT_CLASS, WHAT)?;
                for _ in 0..r.fields {
                    let (name, value) = r.field_i64()?;
                    let window =
                        WINDOW_FIELDS
                            .iter()
                            .position(|f| *f == name)
                            .ok_or(CodecError {
                                what: WHAT,
                                reason: "unknown field",
                            })?;
                    let n = u32::try_from(value).map_err(|_| CodecError {
                        what: WHAT,
                        reason: "count out of range",
                    })?;
                    d.windows.push((window as u8, n));
                }
            }
        }
        Ok(d)
    }
}

/// Field names of the generic Decrement, one per window index.
const WINDOW_FIELDS: [&str; 16] = [
    "window0", "window1", "window2", "window3", "window4", "window5", "window6", "window7",
    "window8", "window9", "window10", "window11", "window12", "window13", "window14", "window15",
];

fn not_null<'a>(bytes: &'a [u8], what: &'static str) -> Result<&'a [u8], CodecError> {
    match bytes.split_first() {
        Some((0, body)) => Ok(body),
        Some(_) => Err(CodecError {
            what,
            reason: "null value",
        }),
        None => Err(CodecError {
            what,
            reason: "empty",
        }),
    }
}

/// Self-describing layout: class name, field count, then (name, type tag, zigzag varint) per field.
struct GenericWriter<'a> {
    out: &'a mut Vec<u8>,
}

impl<'a> GenericWriter<'a> {
    fn new(out: &'a mut Vec<u8>, class: &str, fields: usize) -> Self {
        write_str(out, class);
        write_varint(out, fields as u64);
        GenericWriter { out }
    }

    fn field_i64(&mut self, name: &str, value: i64) {
        write_str(self.out, name);
        self.out.push(b'J'); // JVM descriptor of long
        write_varint(self.out, ((value << 1) ^ (value >> 63)) as u64);
    }
}

struct GenericReader<'a> {
    bytes: &'a [u8],
    fields: usize,
    what: &'static str,
}

impl<'a> GenericReader<'a> {
    fn new(bytes: &'a [u8], class: &str, what: &'static str) -> Result<Self, CodecError> {
        let mut r = GenericReader {
            bytes,
            fields: 0,
            what,
        };
        if r.read_str()? != class {
            return Err(CodecError {
                what,
                reason: "unexpected class",
            });
        }
        r.fields = r.read_varint()? as usize;
        Ok(r)
    }

    fn err(&self, reason: &'static str) -> CodecError {
        CodecError {
            what: self.what,
            reason,
        }
    }

    fn read_varint(&mut self) -> Result<u64, CodecError> {
        let mut value = 0u64;
        for i in 0..10 {
            let (b, rest) = self.bytes.split_first().ok_or(self.err("truncated"))?;
            self.bytes = rest;
            value |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(self.err("varint too long"))
    }

    fn read_str(&mut self) -> Result<&'a str, CodecError> {
        let len = self.read_varint()? as usize;
        if self.bytes.len() < len {
            return Err(self.err("truncated"));
        }
        let (s, rest) = self.bytes.split_at(len);
        self.bytes = rest;
        std::str::from_utf8(s).map_err(|_| self.err("invalid utf-8"))
    }

    fn field_i64(&mut self) -> Result<(&'a str, i64), CodecError> {
        let name = self.read_str()?;
        let (tag, rest) = self.bytes.split_first().ok_or(self.err("truncated"))?;
        if *tag != b'J' {
            return Err(self.err("unexpected type tag"));
        }
        self.bytes = rest;
        let raw = self.read_varint()?;
        Ok((name, ((raw >> 1) as i64) ^ -((raw & 1) as i64)))
    }
}

fn write_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8 & 0x7f) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn write_str(out: &mut Vec<u8>, s: &str) {
    write_varint(out, s.len() as u64);
    out.extend_from_slice(s.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn stats_round_trip_in_both_serializers(count in any::<i64>(), first in any::<i64>(), last in any::<i64>()) {
            let stats = Stats { count, first_event_time: first, last_event_time: last };
            for kind in [SerializerKind::Compact, SerializerKind::Generic] {
                let s = ValueSerializer(kind);
                let mut buf = Vec::new();
                s.encode_stats(&stats, &mut buf);
                prop_assert_eq!(s.decode_stats(&buf), Ok(stats));
            }
        }

        #[test]
        fn decrements_round_trip_in_both_serializers(windows in proptest::collection::btree_map(0u8..16, any::<u32>(), 0..8)) {
            let d = Decrement { windows: windows.into_iter().collect() };
            for kind in [SerializerKind::Compact, SerializerKind::Generic] {
                let s = ValueSerializer(kind);
                let mut buf = Vec::new();
                s.encode_decrement(&d, &mut buf);
                prop_assert_eq!(s.decode_decrement(&buf), Ok(d.clone()));
            }
        }
    }

    #[test]
    fn generic_values_are_bigger_and_corruption_is_an_error() {
        let stats = Stats {
            count: 3,
            first_event_time: 1_767_225_600_000,
            last_event_time: 1_767_225_660_000,
        };
        let (mut compact, mut generic) = (Vec::new(), Vec::new());
        ValueSerializer(SerializerKind::Compact).encode_stats(&stats, &mut compact);
        ValueSerializer(SerializerKind::Generic).encode_stats(&stats, &mut generic);
        assert_eq!(compact.len(), 29);
        assert!(
            generic.len() > 2 * compact.len(),
            "generic {} bytes",
            generic.len()
        );
        assert!(
            ValueSerializer(SerializerKind::Compact)
                .decode_stats(&compact[..10])
                .is_err()
        );
        assert!(
            ValueSerializer(SerializerKind::Generic)
                .decode_stats(&generic[..20])
                .is_err()
        );
        assert!(
            ValueSerializer(SerializerKind::Generic)
                .decode_stats(&compact)
                .is_err()
        );
    }
}
