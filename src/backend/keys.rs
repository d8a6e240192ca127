//! Flink's RocksDB key layout.
//!
//! Keyed state: `key-group | serialized key | namespace [| user key]` (RocksDBSerializedCompositeKeyBuilder).
//! Timers:      `key-group | timestamp (sign bit flipped, big-endian) | key | namespace`
//! so that within a key group RocksDB's byte order is timestamp order.

use std::borrow::Cow;

/// Flink's max parallelism for the reference job. Above 128 Flink writes a 2-byte key-group
/// prefix (`computeRequiredBytesInKeyGroupPrefix`), which is what production jobs with a raised
/// max parallelism store.
pub const MAX_PARALLELISM: u16 = 256;
/// Bytes of key-group prefix Flink writes for `MAX_PARALLELISM`.
pub const KEY_GROUP_PREFIX_BYTES: usize = if MAX_PARALLELISM > 128 { 2 } else { 1 };

/// Flink's `VoidNamespaceSerializer` writes a single zero byte.
pub const VOID_NAMESPACE: u8 = 0;

/// Flink's `TimeWindow.Serializer`: the window's start and end, 8 bytes big-endian each.
pub fn time_window_namespace(start: i64, end: i64) -> [u8; 16] {
    let mut out = [0u8; 16];
    out[..8].copy_from_slice(&start.to_be_bytes());
    out[8..].copy_from_slice(&end.to_be_bytes());
    out
}

/// Java's `String.hashCode` over UTF-16 code units.
fn java_string_hash(s: &str) -> i32 {
    if !s.is_ascii() {
        return s
            .encode_utf16()
            .fold(0i32, |h, c| h.wrapping_mul(31).wrapping_add(i32::from(c)));
    }
    // An ASCII string's code units are its bytes. Four at a time, as h * 31^4 + the four's own
    // sum of powers: the same wrapping arithmetic, with a chain of one multiply per four bytes
    // where one per byte was most of naming a record's key group.
    const P: [i32; 4] = [31 * 31 * 31, 31 * 31, 31, 1];
    let mut chunks = s.as_bytes().chunks_exact(4);
    let mut h = 0i32;
    for c in &mut chunks {
        let four = (0..4).fold(0i32, |sum, i| {
            sum.wrapping_add(i32::from(c[i]).wrapping_mul(P[i]))
        });
        h = h.wrapping_mul(31 * 31 * 31 * 31).wrapping_add(four);
    }
    chunks
        .remainder()
        .iter()
        .fold(h, |h, c| h.wrapping_mul(31).wrapping_add(i32::from(*c)))
}

/// Flink's `MathUtils.murmurHash(int)`.
fn flink_murmur(code: i32) -> i32 {
    let mut h = code.wrapping_mul(0xcc9e_2d51_u32 as i32);
    h = h.rotate_left(15);
    h = h.wrapping_mul(0x1b87_3593);
    h = h.rotate_left(13);
    h = h.wrapping_mul(5).wrapping_add(0xe654_6b64_u32 as i32);
    h ^= 4;
    // bitMix
    let mut u = h as u32;
    u ^= u >> 16;
    u = u.wrapping_mul(0x85eb_ca6b);
    u ^= u >> 13;
    u = u.wrapping_mul(0xc2b2_ae35);
    u ^= u >> 16;
    let h = u as i32;
    if h >= 0 {
        h
    } else if h != i32::MIN {
        -h
    } else {
        0
    }
}

/// `KeyGroupRangeAssignment.assignToKeyGroup(key, maxParallelism)` for a String key.
pub fn key_group(key: &str) -> u16 {
    (flink_murmur(java_string_hash(key)) % i32::from(MAX_PARALLELISM)) as u16
}

/// Flink's `StringValue.writeString` for a String: length + 1 as a 7-bit varint, then each
/// UTF-16 char as a 7-bit varint (one byte for ASCII).
pub fn write_string(out: &mut Vec<u8>, s: &str) {
    if s.is_ascii() {
        // One UTF-16 char and one varint byte per byte.
        write_varint7(out, s.len() as u32 + 1);
        out.extend_from_slice(s.as_bytes());
        return;
    }
    write_varint7(out, s.encode_utf16().count() as u32 + 1);
    for c in s.encode_utf16() {
        write_varint7(out, u32::from(c));
    }
}

fn write_varint7(out: &mut Vec<u8>, mut v: u32) {
    while v >= 0x80 {
        out.push((v as u8 & 0x7f) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn write_key_group(out: &mut Vec<u8>, key_group: u16) {
    if KEY_GROUP_PREFIX_BYTES == 2 {
        out.extend_from_slice(&key_group.to_be_bytes());
    } else {
        out.push(key_group as u8);
    }
}

/// Builds composite keys for one current key, reusing its buffer like Flink's key builder.
#[derive(Debug, Default)]
pub struct CompositeKey {
    buf: Vec<u8>,
    /// Length of `key-group | key | namespace`.
    prefix_len: usize,
    key_group: u16,
    /// Serialized key alone, for the timer layout.
    key_bytes: Vec<u8>,
    /// Serialized namespace (VoidNamespace: one zero byte).
    namespace: Vec<u8>,
}

impl CompositeKey {
    /// Sets the current key: `key-group | key | namespace`, with Flink's VoidNamespace.
    pub fn set_key(&mut self, key: &str) {
        self.set_key_ns(key, &[VOID_NAMESPACE]);
    }

    /// Sets the current key and namespace (the namespace's serialized bytes, e.g.
    /// [`time_window_namespace`]).
    pub fn set_key_ns(&mut self, key: &str, namespace: &[u8]) {
        self.key_group = key_group(key);
        self.key_bytes.clear();
        write_string(&mut self.key_bytes, key);
        self.set_namespace(namespace);
    }

    /// Keeps the current key and changes the namespace.
    pub fn set_namespace(&mut self, namespace: &[u8]) {
        self.namespace.clear();
        self.namespace.extend_from_slice(namespace);
        self.buf.clear();
        write_key_group(&mut self.buf, self.key_group);
        self.buf.extend_from_slice(&self.key_bytes);
        self.buf.extend_from_slice(namespace);
        self.prefix_len = self.buf.len();
    }

    /// `key-group | key | namespace`: a ValueState's (List, Reducing, Aggregating) whole key,
    /// and the prefix every entry of a MapState of the current key and namespace starts with.
    pub fn prefix(&mut self) -> &[u8] {
        self.buf.truncate(self.prefix_len);
        &self.buf
    }

    /// `key-group | key | namespace | user key` where the user key is already serialized.
    pub fn with_user_key_bytes(&mut self, user_key: &[u8]) -> &[u8] {
        self.buf.truncate(self.prefix_len);
        self.buf.extend_from_slice(user_key);
        &self.buf
    }

    /// The current namespace's bytes.
    pub fn namespace(&self) -> &[u8] {
        &self.namespace
    }

    pub fn key_group(&self) -> u16 {
        self.key_group
    }

    /// `key-group | key | namespace | user key` where the user key is a String (MapState<String, _>).
    pub fn with_string_user_key(&mut self, user_key: &str) -> &[u8] {
        self.buf.truncate(self.prefix_len);
        write_string(&mut self.buf, user_key);
        &self.buf
    }

    /// `key-group | key | namespace | user key` where the user key is a Long (LongSerializer: 8 bytes BE).
    pub fn with_long_user_key(&mut self, user_key: i64) -> &[u8] {
        self.buf.truncate(self.prefix_len);
        self.buf.extend_from_slice(&user_key.to_be_bytes());
        &self.buf
    }

    /// The timer-service key for an event-time timer of the current key and namespace.
    pub fn timer_key(&self, timestamp: i64) -> Vec<u8> {
        let mut out = Vec::with_capacity(
            KEY_GROUP_PREFIX_BYTES + 8 + self.key_bytes.len() + self.namespace.len(),
        );
        self.write_timer_key(timestamp, &mut out);
        out
    }

    /// [`CompositeKey::timer_key`] into `out` (cleared first), reusing its buffer.
    pub fn write_timer_key(&self, timestamp: i64, out: &mut Vec<u8>) {
        out.clear();
        write_key_group(out, self.key_group);
        out.extend_from_slice(&flip_sign(timestamp).to_be_bytes());
        out.extend_from_slice(&self.key_bytes);
        out.extend_from_slice(&self.namespace);
    }
}

fn flip_sign(v: i64) -> u64 {
    (v as u64) ^ (1 << 63)
}

/// The shortest valid timer key: key group, timestamp, an empty key (1 byte), the namespace.
pub const MIN_TIMER_KEY_LEN: usize = KEY_GROUP_PREFIX_BYTES + 8 + 2;

/// The key group of a timer key (at least `MIN_TIMER_KEY_LEN` bytes long).
pub fn timer_key_group(timer_key: &[u8]) -> u16 {
    if KEY_GROUP_PREFIX_BYTES == 2 {
        u16::from_be_bytes([timer_key[0], timer_key[1]])
    } else {
        u16::from(timer_key[0])
    }
}

/// The timestamp of a timer key (at least `MIN_TIMER_KEY_LEN` bytes long).
pub fn timer_timestamp(timer_key: &[u8]) -> i64 {
    let mut ts = [0u8; 8];
    ts.copy_from_slice(&timer_key[KEY_GROUP_PREFIX_BYTES..KEY_GROUP_PREFIX_BYTES + 8]);
    (u64::from_be_bytes(ts) ^ (1 << 63)) as i64
}

/// The key of a timer key (Flink's `StringSerializer` bytes decoded: any String).
pub fn timer_user_key(timer_key: &[u8]) -> Option<Cow<'_, str>> {
    timer_key_and_namespace(timer_key).map(|(key, _)| key)
}

/// A timer key's key and its namespace bytes (at least one).
pub fn timer_key_and_namespace(timer_key: &[u8]) -> Option<(Cow<'_, str>, &[u8])> {
    let rest = timer_key.get(KEY_GROUP_PREFIX_BYTES + 8..)?;
    let (key, used) = read_string(rest)?;
    let namespace = rest.get(used..).filter(|ns| !ns.is_empty())?;
    Some((key, namespace))
}

/// Reads a String as Flink's `StringValue.readString` does (length + 1, then one 7-bit varint
/// per UTF-16 char); returns it and the bytes it used. ASCII is borrowed as it is; other text
/// is decoded from its UTF-16 chars (None for a null String, cut-off bytes, a char above
/// 0xFFFF or an unpaired surrogate, which no Rust string can hold).
pub fn read_string(bytes: &[u8]) -> Option<(Cow<'_, str>, usize)> {
    let (len_plus_one, mut used) = read_varint7(bytes)?;
    let len = (len_plus_one as usize).checked_sub(1)?;
    // All of the next `len` bytes below 0x80: each is a one-byte char, the whole an ASCII string.
    if let Some(chars) = bytes.get(used..used + len)
        && chars.iter().all(|b| *b < 0x80)
    {
        return Some((Cow::Borrowed(std::str::from_utf8(chars).ok()?), used + len));
    }
    let mut units = Vec::with_capacity(len);
    for _ in 0..len {
        let (c, n) = read_varint7(bytes.get(used..)?)?;
        units.push(u16::try_from(c).ok()?);
        used += n;
    }
    Some((Cow::Owned(String::from_utf16(&units).ok()?), used))
}

/// Splits a `MapState<String, _>` key into its key and its user key.
pub fn split_string_map_key(key: &[u8]) -> Option<(Cow<'_, str>, Cow<'_, str>)> {
    let rest = key.get(KEY_GROUP_PREFIX_BYTES..)?;
    let (user, used) = read_string(rest)?;
    let rest = rest.get(used..)?;
    let (&namespace, rest) = rest.split_first()?;
    if namespace != VOID_NAMESPACE {
        return None;
    }
    let (user_key, used) = read_string(rest)?;
    (used == rest.len()).then_some((user, user_key))
}

fn read_varint7(bytes: &[u8]) -> Option<(u32, usize)> {
    let mut value = 0u32;
    for (i, b) in bytes.iter().enumerate().take(5) {
        value |= u32::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Some((value, i + 1));
        }
    }
    None
}

/// The prefix every timer key of `key_group` starts with.
pub fn key_group_prefix(key_group: u16) -> Vec<u8> {
    let mut out = Vec::with_capacity(KEY_GROUP_PREFIX_BYTES);
    write_key_group(&mut out, key_group);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_groups_match_flink() {
        // Java String.hashCode values.
        assert_eq!(java_string_hash("abc"), 96354);
        assert_eq!(java_string_hash(""), 0);
        // Golden values: Flink's MathUtils.murmurHash(key.hashCode()) % 256, computed with the JVM.
        for (key, group) in [
            ("user-0", 8),
            ("user-1", 121),
            ("user-42", 148),
            ("user-123456", 211),
            ("user-999999", 96),
            ("abc", 243),
            ("", 222),
        ] {
            assert_eq!(key_group(key), group, "key group of '{key}'");
        }
        let groups: std::collections::HashSet<u16> = (0..10_000)
            .map(|i| key_group(&format!("user-{i}")))
            .collect();
        // Murmur spreads sequential ids over (nearly) all key groups.
        assert!(groups.len() > 250, "only {} key groups used", groups.len());
        assert!(groups.iter().all(|g| *g < MAX_PARALLELISM));
    }

    #[test]
    fn composite_keys_have_flinks_layout() {
        let mut key = CompositeKey::default();
        key.set_key("u7");
        let kg = key.key_group().to_be_bytes();
        let full = key.with_string_user_key("1m").to_vec();
        assert_eq!(full, [&kg[..], &[3, b'u', b'7', 0, 3, b'1', b'm']].concat());
        assert_eq!(
            split_string_map_key(&full),
            Some(("u7".into(), "1m".into()))
        );
        assert_eq!(split_string_map_key(&full[..full.len() - 1]), None);
        let long = key.with_long_user_key(5).to_vec();
        assert_eq!(
            long,
            [&kg[..], &[3, b'u', b'7', 0], &5i64.to_be_bytes()].concat()
        );
    }

    #[test]
    fn timer_keys_sort_by_timestamp_and_decode() {
        let mut key = CompositeKey::default();
        key.set_key("u7");
        let early = key.timer_key(-5);
        let late = key.timer_key(1_000);
        assert!(early < late, "byte order must be timestamp order");
        assert_eq!(timer_timestamp(&late), 1_000);
        assert_eq!(timer_timestamp(&early), -5);
        assert_eq!(timer_key_group(&late), key.key_group());
        assert_eq!(timer_user_key(&late).as_deref(), Some("u7"));
    }

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// Any String, as Flink 1.20.1 keys it: golden values from the JVM (`String.hashCode`,
    /// `KeyGroupRangeAssignment.assignToKeyGroup(key, 256)` and `StringSerializer.serialize`
    /// run on flink-dist-1.20.1.jar), and the bytes decode back to the same String.
    #[test]
    fn ascii_hash_codes_taken_four_bytes_at_a_time_are_javas_char_by_char() {
        let chars = "user-0123456789abcdefXYZ~ !";
        for len in 0..=41 {
            let s: String = chars.chars().cycle().skip(len).take(len).collect();
            let one_by_one = s
                .encode_utf16()
                .fold(0i32, |h, c| h.wrapping_mul(31).wrapping_add(i32::from(c)));
            assert_eq!(java_string_hash(&s), one_by_one, "hashCode of {s:?}");
        }
    }

    #[test]
    fn any_string_key_is_serialized_grouped_and_decoded_as_flink_does() {
        for (key, hash, group, bytes) in [
            (
                "3f2b8c1e-9d4a-4e7b-8a6f-0c5d2e1b7a94",
                445_776_824,
                33,
                "2533663262386331652d396434612d346537622d386136662d306335643265316237613934",
            ),
            ("héllo", 103_094_734, 18, "0668e9016c6c6f"),
            ("注文-7", 855_551_881, 168, "05e8d90187cb012d37"),
            ("Zürich€", 1_299_047_598, 22, "085afc0172696368ac41"),
            ("😀x", 54_959_989, 188, "04bdb00380bc0378"),
            ("u-17", 3_530_366, 203, "05752d3137"),
            ("user-0", -836_031_826, 8, "07757365722d30"),
        ] {
            assert_eq!(java_string_hash(key), hash, "hashCode of {key}");
            assert_eq!(key_group(key), group, "key group of {key}");
            let mut out = Vec::new();
            write_string(&mut out, key);
            assert_eq!(hex(&out), bytes, "StringSerializer bytes of {key}");
            let (back, used) = read_string(&out).unwrap();
            assert_eq!((back.as_ref(), used), (key, out.len()));
            assert_eq!(matches!(back, Cow::Borrowed(_)), key.is_ascii());

            let mut composite = CompositeKey::default();
            composite.set_key(key);
            let timer = composite.timer_key(42);
            assert_eq!(timer_user_key(&timer).as_deref(), Some(key));
            assert_eq!(timer_key_group(&timer), group);
            let map_key = composite.with_string_user_key("ü").to_vec();
            let (k, uk) = split_string_map_key(&map_key).unwrap();
            assert_eq!((k.as_ref(), uk.as_ref()), (key, "ü"));
        }
        // Cut off inside a char, a null String, an unpaired surrogate: not a key.
        assert_eq!(read_string(&[0x06, 0x68, 0xe9]), None);
        assert_eq!(read_string(&[0x00]), None);
        assert_eq!(read_string(&[0x02, 0x80, 0xb0, 0x03]), None);
    }
}
