//! Value serializers: a compact binary one (Flink's POJO serializer) and a generic one, the
//! bytes Flink's Kryo fallback writes (`pipeline.force-kryo`), so their CPU and size cost shows.
//!
//! Values of MapState entries are written null-sensitively, as RocksDBMapState does: one
//! boolean byte (is-null) before the value.

mod kryo;

use crate::config::workload::SerializerKind;
use smallvec::SmallVec;

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
    /// (window index, count): a job has a few windows, kept inline.
    pub windows: SmallVec<[(u8, u32); 8]>,
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

/// PojoSerializer's flags byte for a value of exactly the declared class.
const POJO_NO_SUBCLASS: u8 = 0x02;

/// Encodes and decodes state values in the workload's serializer.
#[derive(Debug, Clone)]
pub struct ValueSerializer {
    kind: SerializerKind,
    /// The job's window labels by window index: the generic Decrement's map keys.
    labels: kryo::WindowLabels,
}

impl ValueSerializer {
    /// `labels` are the job's window labels by window index (`Workload::window_label`).
    pub fn new<S: AsRef<str>>(kind: SerializerKind, labels: &[S]) -> Self {
        ValueSerializer {
            kind,
            labels: kryo::WindowLabels::new(labels),
        }
    }

    pub fn kind(&self) -> SerializerKind {
        self.kind
    }

    pub fn encode_stats(&self, stats: &Stats, out: &mut Vec<u8>) {
        out.clear();
        out.push(0); // not null
        match self.kind {
            SerializerKind::Compact => {
                // PojoSerializer: flags byte (NO_SUBCLASS: the exact class), then per field a
                // null marker and the value.
                out.push(POJO_NO_SUBCLASS);
                for v in [stats.count, stats.first_event_time, stats.last_event_time] {
                    out.push(0);
                    out.extend_from_slice(&v.to_be_bytes());
                }
            }
            SerializerKind::Generic => kryo::write_stats(out, stats),
        }
    }

    pub fn decode_stats(&self, bytes: &[u8]) -> Result<Stats, CodecError> {
        const WHAT: &str = "Stats";
        let body = not_null(bytes, WHAT)?;
        match self.kind {
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
            SerializerKind::Generic => kryo::read_stats(body),
        }
    }

    /// Fails only for a window index the serializer has no label for (generic serializer).
    pub fn encode_decrement(&self, d: &Decrement, out: &mut Vec<u8>) -> Result<(), CodecError> {
        out.clear();
        out.push(0);
        match self.kind {
            SerializerKind::Compact => {
                out.push(d.windows.len() as u8);
                for (w, n) in &d.windows {
                    out.push(*w);
                    out.extend_from_slice(&n.to_be_bytes());
                }
                Ok(())
            }
            SerializerKind::Generic => self.labels.write_decrement(out, d),
        }
    }

    pub fn decode_decrement(&self, bytes: &[u8]) -> Result<Decrement, CodecError> {
        self.decode_decrement_body(not_null(bytes, "Decrement")?)
    }

    /// Decodes a Decrement without the leading null flag (as it sits inside a TTL value).
    pub fn decode_decrement_body(&self, body: &[u8]) -> Result<Decrement, CodecError> {
        const WHAT: &str = "Decrement";
        match self.kind {
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
                let mut d = Decrement::default();
                for chunk in body[1..].chunks_exact(5) {
                    d.windows.push((
                        chunk[0],
                        u32::from_be_bytes([chunk[1], chunk[2], chunk[3], chunk[4]]),
                    ));
                }
                Ok(d)
            }
            SerializerKind::Generic => self.labels.read_decrement(body),
        }
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use smallvec::smallvec;

    /// Realistic window labels, by window index.
    const LABELS: [&str; 16] = [
        "1s", "2s", "5s", "10s", "30s", "1m", "2m", "5m", "10m", "15m", "30m", "1h", "2h", "6h",
        "12h", "1d",
    ];

    fn serializer(kind: SerializerKind) -> ValueSerializer {
        ValueSerializer::new(kind, &LABELS)
    }

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    fn sorted(d: &Decrement) -> Vec<(u8, u32)> {
        let mut w = d.windows.to_vec();
        w.sort_unstable();
        w
    }

    // Golden vectors: the output of tests/kryo-golden/run.sh (Flink 1.20.1's serializers for
    // statebench.parity.AdsFrequencyStats and TimerDecrement, obtained as a job obtains them).
    // TypeSerializer.serialize writes no null flag; RocksDBMapState puts one before these.
    /// (count, firstEventTime, lastEventTime) -> bytes Flink's KryoSerializer wrote.
    const KRYO_STATS: &[(i64, i64, i64, &str)] = &[
        (0, 0, 0, "5701000000"),
        (1, 1, 2, "5701020204"),
        (
            3,
            1_767_225_600_000,
            1_767_225_660_000,
            "57010680a0d5edee66c0c9dcedee66",
        ),
        (
            1,
            1_767_225_598_850,
            1_767_225_598_850,
            "570102848ed5edee66848ed5edee66",
        ),
        (-1, -2, -1_767_225_598_850, "57010103838ed5edee66"),
        (2_147_483_648, 63, 64, "570180808080107e8001"),
        (
            i64::MAX,
            i64::MIN,
            -64,
            "5701feffffffffffffffffffffffffffffffffff7f",
        ),
    ];

    /// The same values through Flink's PojoSerializer (force-kryo off).
    const POJO_STATS: &[(i64, i64, i64, &str)] = &[
        (
            0,
            0,
            0,
            "02000000000000000000000000000000000000000000000000000000",
        ),
        (
            1,
            1,
            2,
            "02000000000000000001000000000000000001000000000000000002",
        ),
        (
            3,
            1_767_225_600_000,
            1_767_225_660_000,
            "02000000000000000003000000019b76daa800000000019b76db9260",
        ),
        (
            1,
            1_767_225_598_850,
            1_767_225_598_850,
            "02000000000000000001000000019b76daa382000000019b76daa382",
        ),
        (
            -1,
            -2,
            -1_767_225_598_850,
            "0200ffffffffffffffff00fffffffffffffffe00fffffe6489255c7e",
        ),
        (
            2_147_483_648,
            63,
            64,
            "0200000000008000000000000000000000003f000000000000000040",
        ),
        (
            i64::MAX,
            i64::MIN,
            -64,
            "02007fffffffffffffff00800000000000000000ffffffffffffffc0",
        ),
    ];

    /// (label, count) put into a new HashMap in this order -> bytes Flink's KryoSerializer wrote.
    const KRYO_DECREMENTS: &[(&[(&str, i32)], &str)] = &[
        (&[], "570101006a6176612e7574696c2e486173684d61f00100"),
        (
            &[("1m", 1)],
            "570101006a6176612e7574696c2e486173684d61f001010131ed0102",
        ),
        (
            &[("30m", 2)],
            "570101006a6176612e7574696c2e486173684d61f00101013330ed0104",
        ),
        (
            &[("7d", 300)],
            "570101006a6176612e7574696c2e486173684d61f001010137e401d804",
        ),
        (
            &[("1m", -1)],
            "570101006a6176612e7574696c2e486173684d61f001010131ed0101",
        ),
        (
            &[("1h", i32::MAX)],
            "570101006a6176612e7574696c2e486173684d61f001010131e801feffffff0f",
        ),
        (
            &[("1h", i32::MIN)],
            "570101006a6176612e7574696c2e486173684d61f001010131e801ffffffff0f",
        ),
        (
            &[("1m", 1), ("5m", 1)],
            "570101006a6176612e7574696c2e486173684d61f001020135ed01020131ed0102",
        ),
        (
            &[("5m", 1), ("1m", 1)],
            "570101006a6176612e7574696c2e486173684d61f001020135ed01020131ed0102",
        ),
        (
            &[("1m", 1), ("5m", 2), ("10m", 3), ("30m", 4)],
            "570101006a6176612e7574696c2e486173684d61f00104013330ed01080135ed01040131ed0102013130ed0106",
        ),
        (
            &[("30m", 4), ("10m", 3), ("5m", 2), ("1m", 1)],
            "570101006a6176612e7574696c2e486173684d61f00104013330ed01080135ed01040131ed0102013130ed0106",
        ),
        (
            &[("1h", 1), ("3h", 1), ("6h", 1), ("12h", 1)],
            "570101006a6176612e7574696c2e486173684d61f001040136e801020133e801020131e80102013132e80102",
        ),
        (
            &[("1d", 1), ("3d", 2), ("7d", 3)],
            "570101006a6176612e7574696c2e486173684d61f001030133e401040131e401020137e40106",
        ),
        (
            &[("Aa", 1), ("BB", 2)],
            "570101006a6176612e7574696c2e486173684d61f001020141e101020142c20104",
        ),
        (
            &[("BB", 2), ("Aa", 1)],
            "570101006a6176612e7574696c2e486173684d61f001020142c201040141e10102",
        ),
        (
            &[("a", 1), ("q", 2)],
            "570101006a6176612e7574696c2e486173684d61f0010201826101020182710104",
        ),
        (
            &[("q", 2), ("a", 1)],
            "570101006a6176612e7574696c2e486173684d61f0010201827101040182610102",
        ),
        (
            &[
                ("1s", 1),
                ("2s", 2),
                ("5s", 3),
                ("10s", 4),
                ("30s", 5),
                ("1m", 6),
                ("2m", 7),
                ("5m", 8),
                ("10m", 9),
                ("15m", 10),
                ("30m", 11),
                ("1h", 12),
                ("2h", 13),
                ("6h", 14),
                ("12h", 15),
                ("1d", 16),
            ],
            "570101006a6176612e7574696c2e486173684d61f001100132f301040131f30102013132e8011e013135ed0114013130ed0112013330ed01160136e8011c0131e40120013130f30108013330f3010a0132e8011a0131e801180135ed01100132ed010e0131ed010c0135f30106",
        ),
        (
            &[("1500ms", 1), ("2d12h", 2)],
            "570101006a6176612e7574696c2e486173684d61f0010201313530306df301020132643132e80104",
        ),
        (
            &[(
                "a-very-long-window-label-of-more-than-sixty-four-characters-xxxxxxxxx",
                7,
            )],
            "570101006a6176612e7574696c2e486173684d61f0010101c601612d766572792d6c6f6e672d77696e646f772d6c6162656c2d6f662d6d6f72652d7468616e2d73697874792d666f75722d636861726163746572732d787878787878787878010e",
        ),
        (
            &[("x", 1)],
            "570101006a6176612e7574696c2e486173684d61f001010182780102",
        ),
        (
            &[("", 1)],
            "570101006a6176612e7574696c2e486173684d61f0010101810102",
        ),
        (
            &[("5µs", 1)],
            "570101006a6176612e7574696c2e486173684d61f00101018435c2b5730102",
        ),
    ];
    #[test]
    fn kryo_stats_are_the_bytes_flink_writes() {
        let s = serializer(SerializerKind::Generic);
        let mut buf = Vec::new();
        for &(count, first_event_time, last_event_time, golden) in KRYO_STATS {
            let stats = Stats {
                count,
                first_event_time,
                last_event_time,
            };
            s.encode_stats(&stats, &mut buf);
            assert_eq!(buf[0], 0, "null flag");
            assert_eq!(hex(&buf[1..]), golden, "{stats:?}");
            assert_eq!(s.decode_stats(&buf), Ok(stats));
        }
    }

    #[test]
    fn kryo_decrements_are_the_bytes_flink_writes_in_hash_map_order() {
        let mut labels: Vec<&str> = Vec::new();
        for (entries, _) in KRYO_DECREMENTS {
            for (label, _) in *entries {
                if !labels.contains(label) {
                    labels.push(label);
                }
            }
        }
        let s = ValueSerializer::new(SerializerKind::Generic, &labels);
        let mut buf = Vec::new();
        for (entries, golden) in KRYO_DECREMENTS {
            // The job's puts, in the order the generator made them.
            let mut d = Decrement::default();
            for (label, n) in *entries {
                let window = labels.iter().position(|l| l == label).unwrap();
                d.add(window as u8, *n as u32);
            }
            s.encode_decrement(&d, &mut buf).unwrap();
            assert_eq!(hex(&buf[1..]), *golden, "{entries:?}");
            // Decoding keeps Flink's (serialized) order; encoding that again is stable.
            let decoded = s.decode_decrement(&buf).unwrap();
            assert_eq!(sorted(&decoded), sorted(&d), "{entries:?}");
            let mut again = Vec::new();
            s.encode_decrement(&decoded, &mut again).unwrap();
            assert_eq!(again, buf, "{entries:?}");
        }
    }

    #[test]
    fn compact_stats_are_flinks_pojo_bytes() {
        let s = serializer(SerializerKind::Compact);
        let mut buf = Vec::new();
        for &(count, first_event_time, last_event_time, golden) in POJO_STATS {
            let stats = Stats {
                count,
                first_event_time,
                last_event_time,
            };
            s.encode_stats(&stats, &mut buf);
            // The map's null flag, then exactly what Flink's PojoSerializer wrote.
            assert_eq!(hex(&buf), format!("00{golden}"), "{stats:?}");
            assert_eq!(s.decode_stats(&buf), Ok(stats));
        }
    }

    #[test]
    fn bytes_per_value_against_the_compact_serializer() {
        let stats = Stats {
            count: 3,
            first_event_time: 1_767_225_600_000,
            last_event_time: 1_767_225_660_000,
        };
        let one_window = Decrement {
            windows: smallvec![(5, 1)], // "1m"
        };
        let two_windows = Decrement {
            windows: smallvec![(5, 1), (10, 2)], // "1m", "30m"
        };
        let size = |kind| {
            let s = serializer(kind);
            let mut buf = Vec::new();
            s.encode_stats(&stats, &mut buf);
            let mut sizes = vec![buf.len()];
            for d in [&one_window, &two_windows] {
                s.encode_decrement(d, &mut buf).unwrap();
                sizes.push(buf.len());
            }
            sizes
        };
        assert_eq!(size(SerializerKind::Compact), [29, 7, 12]);
        // Kryo: varlongs and no field names make Stats small; the map's class name makes the
        // Decrement big (19 of its 29 bytes name `java.util.HashMap`, in every value).
        assert_eq!(size(SerializerKind::Generic), [16, 29, 35]);
    }

    #[test]
    fn malformed_kryo_values_are_errors() {
        let s = serializer(SerializerKind::Generic);
        let mut stats = Vec::new();
        s.encode_stats(&Stats::default(), &mut stats);
        let mut d = Vec::new();
        s.encode_decrement(
            &Decrement {
                windows: smallvec![(5, 1)],
            },
            &mut d,
        )
        .unwrap();
        let reason = |r: Result<Decrement, CodecError>| r.unwrap_err().reason;
        let patched = |at: usize, b: u8| {
            let mut v = d.clone();
            v[at] = b;
            v
        };
        assert_eq!(s.decode_stats(&[1]).unwrap_err().reason, "null value");
        assert_eq!(
            s.decode_stats(&[0, 0x58, 1, 0, 0, 0]).unwrap_err().reason,
            "not a Kryo AdsFrequencyStats"
        );
        assert_eq!(
            s.decode_stats(&[stats.as_slice(), &[0]].concat())
                .unwrap_err()
                .reason,
            "trailing bytes"
        );
        assert_eq!(
            s.decode_stats(&[0, 0x57, 1, 0xff, 0xff])
                .unwrap_err()
                .reason,
            "truncated"
        );
        // A null windows map (Kryo's NULL in place of the class).
        assert_eq!(
            reason(s.decode_decrement(&[0, 0x57, 1, 0])),
            "windows map is not a java.util.HashMap"
        );
        // The size byte: more entries than the bytes can hold.
        assert_eq!(
            reason(s.decode_decrement(&patched(23, 100))),
            "map size beyond the value's end"
        );
        // The label "1m" as "1n".
        assert_eq!(
            reason(s.decode_decrement(&patched(26, 0xee))),
            "unknown window label"
        );
        // A label nobody configured: the serializer of a job with other windows.
        let other = ValueSerializer::new(SerializerKind::Generic, &["1h"]);
        assert_eq!(reason(other.decode_decrement(&d)), "unknown window label");
        assert_eq!(
            other
                .encode_decrement(
                    &Decrement {
                        windows: smallvec![(1, 1)]
                    },
                    &mut Vec::new()
                )
                .unwrap_err()
                .reason,
            "window index without a label"
        );
        // The same window twice: size 2, the entry repeated.
        let mut twice = d.clone();
        twice[23] = 2;
        twice.extend_from_slice(&d[24..]);
        assert_eq!(
            reason(s.decode_decrement(&twice)),
            "window twice in one map"
        );
        // A count varint running past five bytes.
        let mut long = d[..28].to_vec();
        long.extend_from_slice(&[0xff, 0xff, 0xff, 0xff, 0x7f]);
        assert_eq!(reason(s.decode_decrement(&long)), "varint too long");
    }

    fn windows() -> impl Strategy<Value = Vec<(u8, u32)>> {
        proptest::collection::btree_map(0u8..16, any::<u32>(), 0..16)
            .prop_map(|m| m.into_iter().collect())
            .prop_shuffle()
    }

    proptest! {
        #[test]
        fn stats_round_trip_in_both_serializers(count in any::<i64>(), first in any::<i64>(), last in any::<i64>()) {
            let stats = Stats { count, first_event_time: first, last_event_time: last };
            for kind in [SerializerKind::Compact, SerializerKind::Generic] {
                let s = serializer(kind);
                let mut buf = Vec::new();
                s.encode_stats(&stats, &mut buf);
                prop_assert_eq!(s.decode_stats(&buf), Ok(stats));
            }
        }

        #[test]
        fn decrements_round_trip_in_both_serializers(windows in windows()) {
            let d = Decrement { windows: windows.into() };
            let compact = serializer(SerializerKind::Compact);
            let mut buf = Vec::new();
            compact.encode_decrement(&d, &mut buf).unwrap();
            prop_assert_eq!(compact.decode_decrement(&buf), Ok(d.clone()));

            // Kryo: the same windows, in HashMap order; that order encodes to the same bytes.
            let generic = serializer(SerializerKind::Generic);
            generic.encode_decrement(&d, &mut buf).unwrap();
            let decoded = generic.decode_decrement(&buf).unwrap();
            prop_assert_eq!(sorted(&decoded), sorted(&d));
            let mut again = Vec::new();
            generic.encode_decrement(&decoded, &mut again).unwrap();
            prop_assert_eq!(again, buf.clone());
            // No proper prefix of a value decodes.
            for end in 0..buf.len() {
                prop_assert!(generic.decode_decrement(&buf[..end]).is_err());
            }
        }

        #[test]
        fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            for kind in [SerializerKind::Compact, SerializerKind::Generic] {
                let s = serializer(kind);
                let _ = s.decode_stats(&bytes);
                let _ = s.decode_decrement(&bytes);
                let _ = s.decode_decrement_body(&bytes);
            }
        }

        #[test]
        fn mutated_kryo_values_never_panic(windows in windows(), at in any::<prop::sample::Index>(), b in any::<u8>()) {
            let s = serializer(SerializerKind::Generic);
            let mut buf = Vec::new();
            s.encode_decrement(&Decrement { windows: windows.into() }, &mut buf).unwrap();
            let at = at.index(buf.len());
            buf[at] = b;
            let _ = s.decode_decrement(&buf);
            buf.truncate(at);
            prop_assert!(s.decode_decrement(&buf).is_err());
        }
    }
}
