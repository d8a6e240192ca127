//! What the valstate kinds (dedup, aggregate, process) draw and write, defined so that a Java
//! job draws and writes the same (docs/jobs.md, "process"): the key's Java hash, payload
//! bytes, and a value's first 8 bytes.

use super::mix;

/// Java's `String.hashCode()` (over UTF-16 code units), sign-extended to a long.
pub fn java_hash(key: &str) -> i64 {
    i64::from(
        key.encode_utf16()
            .fold(0i32, |h, c| h.wrapping_mul(31).wrapping_add(i32::from(c))),
    )
}

/// splitmix64 (DESIGN-19.md) on Java longs.
pub fn splitmix64(x: i64) -> i64 {
    super::splitmix64(x as u64) as i64
}

/// `payload(seed, n)`: the big-endian bytes of `splitmix64(seed + j)` for j = 0, 1, ...,
/// cut to `n` bytes, appended to `out`.
pub fn payload(seed: i64, n: usize, out: &mut Vec<u8>) {
    let mut j = 0i64;
    let mut left = n;
    while left > 0 {
        let word = splitmix64(seed.wrapping_add(j)).to_be_bytes();
        let take = left.min(8);
        out.extend_from_slice(&word[..take]);
        left -= take;
        j += 1;
    }
}

/// The first min(8, len) bytes of `bytes` as a big-endian long, zero-padded on the right.
pub fn first8(bytes: &[u8]) -> i64 {
    let mut b = [0u8; 8];
    let n = bytes.len().min(8);
    b[..n].copy_from_slice(&bytes[..n]);
    i64::from_be_bytes(b)
}

/// Whether an action of probability `p` runs for the draw `r`: `(r >>> 11) < (long)(p * 2^53)`.
pub fn fires(r: i64, p: f64) -> bool {
    ((r as u64) >> 11) < (p * 9_007_199_254_740_992.0) as u64
}

/// `Math.floorMod(mix(h, t, v, salt), n)` for n >= 1.
pub fn pick(h: i64, t: i64, v: i64, salt: i64, n: u64) -> u64 {
    (i128::from(mix(h, t, v, salt)).rem_euclid(i128::from(n))) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn java_hash_is_string_hash_code() {
        // "user-42".hashCode() in Java.
        assert_eq!(java_hash("user-42"), -147_182_656);
        assert_eq!(java_hash(""), 0);
    }

    #[test]
    fn payload_and_first8() {
        let mut p = Vec::new();
        payload(7, 20, &mut p);
        assert_eq!(p.len(), 20);
        assert_eq!(first8(&p), splitmix64(7));
        assert_eq!(p[8..16], splitmix64(8).to_be_bytes());
        assert_eq!(p[16..20], splitmix64(9).to_be_bytes()[..4]);
        assert_eq!(first8(&[1, 2]), 0x0102_0000_0000_0000);
        assert_eq!(first8(&[]), 0);
    }

    #[test]
    fn fires_by_probability() {
        assert!(fires(-1, 1.0));
        assert!(!fires(0, 0.0));
        assert!(fires(0, 0.5));
        assert!(fires(i64::MAX, 0.5));
        assert!(!fires(-1, 0.5));
        assert!(fires(-1, 1.0));
        let n = (0..10_000).filter(|i| fires(splitmix64(*i), 0.3)).count();
        assert!((2_800..3_200).contains(&n), "{n}");
    }
}
