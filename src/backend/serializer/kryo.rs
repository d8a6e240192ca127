//! The bytes Flink 1.20.1's `KryoSerializer` writes for the reference job's two value types, as
//! under `pipeline.force-kryo` (Kryo 2.24 inside flink-dist, reference tracking on).
//!
//! Read off the JVM by `tests/kryo-golden/run.sh` (the golden vectors below), with flink-dist,
//! flink-scala and log4j on the classpath as in a cluster's `lib/`:
//!
//! - `AdsFrequencyStats { long count, firstEventTime, lastEventTime }`:
//!   `57 01` then each field as a zigzag varlong, in name order (here also declaration order).
//!   `0x57` is Kryo's registered-class marker `id + 2`: Flink registers the serialized type at
//!   id 85, the first id after its chill registrar's (73..=84), with or without flink-scala.
//!   `0x01` is reference tracking's "new object" marker.
//! - `TimerDecrement { Map<String, Integer> windows }`: `57 01`, then the field's concrete class,
//!   `java.util.HashMap`, which nothing registers: `01` (class by name), `00` (name id, numbered
//!   per value), the name as a Kryo string; `01` (new object), the size as a varint, and per
//!   entry in `HashMap` iteration order `01` + the label as a Kryo string, `01` + the count as a
//!   zigzag varint. The field's generic types make Kryo write keys and values without classes.

use super::{CodecError, Decrement, Stats};
use smallvec::SmallVec;

/// Kryo's marker for a registered class is `id + 2`; Flink registers the value type at 85.
const VALUE_CLASS: u8 = 85 + 2;
/// With reference tracking, an object not written before (everything here) is marked NOT_NULL.
const NOT_NULL: u8 = 1;
/// The `windows` field's class, unregistered: by-name marker, name id 0, the Kryo string
/// `java.util.HashMap` (ASCII with the last byte's high bit set).
const HASH_MAP_CLASS: &[u8] = b"\x01\x00java.util.HashMa\xf0";
/// Java's `HashMap`: initial table size, and the chain length that makes a bucket treeify
/// (which resizes the table instead while it is smaller than 64).
const HASH_MAP_TABLE: u32 = 16;
const TREEIFY_THRESHOLD: usize = 8;
const MIN_TREEIFY_CAPACITY: u32 = 64;

pub(super) fn write_stats(out: &mut Vec<u8>, stats: &Stats) {
    out.extend_from_slice(&[VALUE_CLASS, NOT_NULL]);
    // FieldSerializer orders fields by name: count, firstEventTime, lastEventTime.
    for v in [stats.count, stats.first_event_time, stats.last_event_time] {
        write_var_i64(out, v);
    }
}

pub(super) fn read_stats(bytes: &[u8]) -> Result<Stats, CodecError> {
    let mut r = Reader::new(bytes, "Stats");
    r.expect(VALUE_CLASS, "not a Kryo AdsFrequencyStats")?;
    r.expect(NOT_NULL, "unexpected reference marker")?;
    let stats = Stats {
        count: r.var_i64()?,
        first_event_time: r.var_i64()?,
        last_event_time: r.var_i64()?,
    };
    r.finish()?;
    Ok(stats)
}

/// The window labels, the generic Decrement's map keys, as Kryo writes them and as Java's
/// `HashMap` places them, by window index.
#[derive(Debug, Clone, Default)]
pub(super) struct WindowLabels {
    labels: Vec<Label>,
}

#[derive(Debug, Clone)]
struct Label {
    /// The label as a Kryo string.
    kryo: Vec<u8>,
    /// `HashMap.hash(label)`: `String.hashCode()` with its high half folded in.
    hash: u32,
}

impl WindowLabels {
    pub(super) fn new<S: AsRef<str>>(labels: &[S]) -> Self {
        let labels = labels
            .iter()
            .map(|l| {
                let mut kryo = Vec::new();
                write_string(&mut kryo, l.as_ref());
                Label {
                    kryo,
                    hash: hash_map_hash(l.as_ref()),
                }
            })
            .collect();
        WindowLabels { labels }
    }

    /// Writes a `TimerDecrement` (after the map value's null flag).
    pub(super) fn write_decrement(
        &self,
        out: &mut Vec<u8>,
        d: &Decrement,
    ) -> Result<(), CodecError> {
        if d.windows.iter().any(|(w, _)| self.get(*w).is_none()) {
            return Err(CodecError {
                what: "Decrement",
                reason: "window index without a label",
            });
        }
        out.extend_from_slice(&[VALUE_CLASS, NOT_NULL]);
        out.extend_from_slice(HASH_MAP_CLASS);
        out.push(NOT_NULL);
        write_var_u32(out, d.windows.len() as u32);
        // Iteration order of the job's HashMap: by bucket, within a bucket by insertion. The
        // windows are in insertion order (decoding keeps the serialized order, which is the
        // order Kryo re-inserts them in; `Decrement::add` appends).
        let mask = self.table_size(&d.windows) - 1;
        for bucket in 0..=mask {
            for (w, n) in &d.windows {
                let Some(label) = self.get(*w) else { continue };
                if label.hash & mask == bucket {
                    out.push(NOT_NULL);
                    out.extend_from_slice(&label.kryo);
                    out.push(NOT_NULL);
                    // Integer: the same 32 bits, so counts past i32::MAX read back unchanged.
                    write_var_i32(out, *n as i32);
                }
            }
        }
        Ok(())
    }

    /// Reads a `TimerDecrement` (after the map value's null flag), windows in serialized order.
    pub(super) fn read_decrement(&self, bytes: &[u8]) -> Result<Decrement, CodecError> {
        let mut r = Reader::new(bytes, "Decrement");
        r.expect(VALUE_CLASS, "not a Kryo TimerDecrement")?;
        r.expect(NOT_NULL, "unexpected reference marker")?;
        r.expect_bytes(HASH_MAP_CLASS, "windows map is not a java.util.HashMap")?;
        r.expect(NOT_NULL, "unexpected reference marker")?;
        let size = r.var_u32()? as usize;
        // Each entry takes at least four bytes: bounds the allocation by the input.
        if size > r.bytes.len() / 4 {
            return Err(r.err("map size beyond the value's end"));
        }
        let mut windows = SmallVec::with_capacity(size);
        for _ in 0..size {
            r.expect(NOT_NULL, "null or back-referenced map key")?;
            // Kryo's string encodings are prefix-free, so a label matches exactly or not at all.
            let (window, label) = self
                .labels
                .iter()
                .enumerate()
                .find(|(_, l)| r.bytes.starts_with(&l.kryo))
                .ok_or(r.err("unknown window label"))?;
            let window = u8::try_from(window).map_err(|_| r.err("window index beyond 255"))?;
            r.bytes = &r.bytes[label.kryo.len()..];
            r.expect(NOT_NULL, "null map value")?;
            let n = r.var_i32()? as u32;
            if windows.iter().any(|(w, _)| *w == window) {
                return Err(r.err("window twice in one map"));
            }
            windows.push((window, n));
        }
        r.finish()?;
        Ok(Decrement { windows })
    }

    fn get(&self, window: u8) -> Option<&Label> {
        self.labels.get(usize::from(window))
    }

    /// The table size of a `HashMap` that had `windows` put in this order: it doubles past
    /// 3/4 full, and when a ninth entry joins one bucket while smaller than 64. (From 64 on a
    /// long bucket becomes a tree whose order is not modelled; no real window labels get there.)
    fn table_size(&self, windows: &[(u8, u32)]) -> u32 {
        let hash = |w: u8| self.get(w).map_or(0, |l| l.hash);
        let mut table = HASH_MAP_TABLE;
        for (i, (w, _)) in windows.iter().enumerate() {
            let mask = table - 1;
            let bucket = hash(*w) & mask;
            let chain = windows[..i]
                .iter()
                .filter(|(v, _)| hash(*v) & mask == bucket)
                .count();
            if chain >= TREEIFY_THRESHOLD && table < MIN_TREEIFY_CAPACITY {
                table *= 2;
            }
            if i + 1 > (table as usize) * 3 / 4 {
                table *= 2;
            }
        }
        table
    }
}

/// Java's `HashMap.hash(key)` for a `String` key.
fn hash_map_hash(s: &str) -> u32 {
    let h = s
        .encode_utf16()
        .fold(0u32, |h, c| h.wrapping_mul(31).wrapping_add(u32::from(c)));
    h ^ (h >> 16)
}

/// Kryo's `Output.writeString`: 2 to 63 ASCII chars as bytes with the last one's high bit set;
/// otherwise the UTF-16 length + 1 (a high-bit-marked varint holding 6 bits in its first byte),
/// then each UTF-16 unit in 1 to 3 bytes.
fn write_string(out: &mut Vec<u8>, s: &str) {
    let units = s.encode_utf16().count();
    if (2..64).contains(&units) && s.is_ascii() {
        out.extend_from_slice(s.as_bytes());
        if let Some(last) = out.last_mut() {
            *last |= 0x80;
        }
        return;
    }
    let len = units as u32 + 1;
    if len >> 6 == 0 {
        out.push(len as u8 | 0x80);
    } else {
        out.push((len & 0x3f) as u8 | 0xc0);
        write_var_u32(out, len >> 6);
    }
    for c in s.encode_utf16() {
        let c = u32::from(c);
        if c <= 0x7f {
            out.push(c as u8);
        } else if c > 0x7ff {
            out.extend_from_slice(&[
                0xe0 | (c >> 12) as u8,
                0x80 | (c >> 6 & 0x3f) as u8,
                0x80 | (c & 0x3f) as u8,
            ]);
        } else {
            out.extend_from_slice(&[0xc0 | (c >> 6) as u8, 0x80 | (c & 0x3f) as u8]);
        }
    }
}

fn write_var_u32(out: &mut Vec<u8>, mut v: u32) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Kryo's `writeInt(v, false)`: zigzag, then a varint.
fn write_var_i32(out: &mut Vec<u8>, v: i32) {
    write_var_u32(out, ((v << 1) ^ (v >> 31)) as u32);
}

/// Kryo's `writeLong(v, false)`: zigzag, then seven bits a byte, except that a ninth byte holds
/// the last eight bits whole (at most 9 bytes).
fn write_var_i64(out: &mut Vec<u8>, v: i64) {
    let mut v = ((v << 1) ^ (v >> 63)) as u64;
    for _ in 0..8 {
        if v < 0x80 {
            out.push(v as u8);
            return;
        }
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

struct Reader<'a> {
    bytes: &'a [u8],
    what: &'static str,
}

impl<'a> Reader<'a> {
    fn new(bytes: &'a [u8], what: &'static str) -> Self {
        Reader { bytes, what }
    }

    fn err(&self, reason: &'static str) -> CodecError {
        CodecError {
            what: self.what,
            reason,
        }
    }

    fn byte(&mut self) -> Result<u8, CodecError> {
        let (b, rest) = self.bytes.split_first().ok_or(self.err("truncated"))?;
        self.bytes = rest;
        Ok(*b)
    }

    fn expect(&mut self, want: u8, reason: &'static str) -> Result<(), CodecError> {
        if self.byte()? == want {
            Ok(())
        } else {
            Err(self.err(reason))
        }
    }

    fn expect_bytes(&mut self, want: &[u8], reason: &'static str) -> Result<(), CodecError> {
        match self.bytes.strip_prefix(want) {
            Some(rest) => {
                self.bytes = rest;
                Ok(())
            }
            None => Err(self.err(reason)),
        }
    }

    fn var_u32(&mut self) -> Result<u32, CodecError> {
        let mut v = 0u32;
        for shift in [0, 7, 14, 21] {
            let b = self.byte()?;
            v |= u32::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        let b = self.byte()?;
        if b > 0x0f {
            return Err(self.err("varint too long"));
        }
        Ok(v | u32::from(b) << 28)
    }

    fn var_i32(&mut self) -> Result<i32, CodecError> {
        let v = self.var_u32()?;
        Ok((v >> 1) as i32 ^ -((v & 1) as i32))
    }

    fn var_i64(&mut self) -> Result<i64, CodecError> {
        let mut v = 0u64;
        for shift in (0..56).step_by(7) {
            let b = self.byte()?;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(unzigzag(v));
            }
        }
        Ok(unzigzag(v | u64::from(self.byte()?) << 56))
    }

    fn finish(&self) -> Result<(), CodecError> {
        if self.bytes.is_empty() {
            Ok(())
        } else {
            Err(self.err("trailing bytes"))
        }
    }
}

fn unzigzag(v: u64) -> i64 {
    (v >> 1) as i64 ^ -((v & 1) as i64)
}
