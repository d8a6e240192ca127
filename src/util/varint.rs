//! LEB128 varints (7 bits a byte, low first) and zigzag for signed numbers: the preload's
//! compact files (its history's records, its results).

/// Appends `n` in 1-10 bytes.
#[inline]
pub fn put(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

/// The number at the start of `bytes`, which moves past it; None when it is cut short or
/// longer than a u64.
#[inline]
pub fn take(bytes: &mut &[u8]) -> Option<u64> {
    let mut n = 0u64;
    for (i, byte) in bytes.iter().enumerate().take(10) {
        n |= u64::from(byte & 0x7f) << (7 * i);
        if *byte < 0x80 {
            *bytes = &bytes[i + 1..];
            return Some(n);
        }
    }
    None
}

/// A signed number as an unsigned one, small for small magnitudes (0, -1, 1, -2 -> 0, 1, 2, 3).
#[inline]
pub fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

#[inline]
pub fn unzigzag(z: u64) -> i64 {
    (z >> 1) as i64 ^ -((z & 1) as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_come_back_at_their_edges() {
        let numbers = [
            0,
            1,
            127,
            128,
            16_383,
            16_384,
            u64::from(u32::MAX),
            u64::MAX,
        ];
        let mut out = Vec::new();
        for n in numbers {
            put(&mut out, n);
        }
        assert_eq!(out.len(), 1 + 1 + 1 + 2 + 2 + 3 + 5 + 10);
        let mut rest = out.as_slice();
        for n in numbers {
            assert_eq!(take(&mut rest), Some(n));
        }
        assert!(rest.is_empty());
        assert_eq!(take(&mut &[0x80u8][..]), None);
        for v in [0, -1, 1, -2, i64::MIN, i64::MAX] {
            assert_eq!(unzigzag(zigzag(v)), v);
        }
        assert_eq!([zigzag(0), zigzag(-1), zigzag(1), zigzag(-2)], [0, 1, 2, 3]);
    }
}
