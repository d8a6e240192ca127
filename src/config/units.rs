//! Human units in configuration files: sizes (`64mb`) and durations (`10s`).

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A size in bytes, written in YAML as `64mb`, `4kb`, `1gb`, `512b` or a bare integer (bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ByteSize(pub u64);

/// A duration in milliseconds, written in YAML as `500ms`, `10s`, `5m`, `1h`, `7d`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Millis(pub u64);

const SIZE_UNITS: &[(&str, u64)] = &[
    ("b", 1),
    ("kb", 1 << 10),
    ("mb", 1 << 20),
    ("gb", 1 << 30),
    ("tb", 1 << 40),
];
const DURATION_UNITS: &[(&str, u64)] = &[
    ("ms", 1),
    ("s", 1_000),
    ("m", 60_000),
    ("min", 60_000),
    ("h", 3_600_000),
    ("d", 86_400_000),
];

fn split_number(text: &str) -> Option<(f64, String)> {
    let text = text.trim();
    let end = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_'))
        .unwrap_or(text.len());
    let number: f64 = text[..end].replace('_', "").parse().ok()?;
    Some((number, text[end..].trim().to_ascii_lowercase()))
}

fn parse_with_units(text: &str, units: &[(&str, u64)], bare: u64) -> Option<u64> {
    let (number, unit) = split_number(text)?;
    let factor = if unit.is_empty() {
        bare
    } else {
        units.iter().find(|(name, _)| *name == unit)?.1
    };
    let value = number * factor as f64;
    (value.is_finite() && value >= 0.0 && value.fract() == 0.0 && value < u64::MAX as f64)
        .then_some(value as u64)
}

impl ByteSize {
    pub fn parse(text: &str) -> Option<Self> {
        // Accept the common `k`/`m`/`g` and `kib`/`mib`/`gib` spellings too.
        let lower = text.trim().to_ascii_lowercase().replace("ib", "b");
        let normalized = match lower.chars().last() {
            Some('k' | 'm' | 'g' | 't') => format!("{lower}b"),
            _ => lower,
        };
        parse_with_units(&normalized, SIZE_UNITS, 1).map(ByteSize)
    }
}

impl Millis {
    pub fn parse(text: &str) -> Option<Self> {
        parse_with_units(text, DURATION_UNITS, 1).map(Millis)
    }

    pub fn as_duration(self) -> std::time::Duration {
        std::time::Duration::from_millis(self.0)
    }
}

/// Formats with the largest unit that divides the value exactly, so output reads back identically.
fn format_exact(value: u64, units: &[(&str, u64)], f: &mut fmt::Formatter<'_>) -> fmt::Result {
    let (name, factor) = units
        .iter()
        .rev()
        .find(|(_, factor)| value != 0 && value.is_multiple_of(*factor))
        .unwrap_or(&units[0]);
    write!(f, "{}{}", value / factor, name)
}

impl fmt::Display for ByteSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        format_exact(self.0, SIZE_UNITS, f)
    }
}

impl fmt::Display for Millis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let units: Vec<_> = DURATION_UNITS
            .iter()
            .copied()
            .filter(|(name, _)| *name != "min")
            .collect();
        format_exact(self.0, &units, f)
    }
}

/// A duration in ms for reports and progress lines: `2.5 h`, `12.0 min`, `30.0 s`.
pub fn human_ms(ms: i64) -> String {
    let s = ms as f64 / 1000.0;
    if s >= 3600.0 {
        format!("{:.1} h", s / 3600.0)
    } else if s >= 60.0 {
        format!("{:.1} min", s / 60.0)
    } else {
        format!("{s:.1} s")
    }
}

/// Human-readable approximation for reports (`1.5 MiB`); not meant to be parsed back.
pub fn human_bytes(bytes: f64) -> String {
    const NAMES: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes;
    let mut index = 0;
    while value.abs() >= 1024.0 && index < NAMES.len() - 1 {
        value /= 1024.0;
        index += 1;
    }
    if index == 0 && value.fract() != 0.0 && value.abs() < 100.0 {
        // Per-lookup averages below a KiB keep a decimal: 0.4 B is not 0 B.
        format!("{value:.1} {}", NAMES[index])
    } else if index == 0 {
        format!("{value:.0} {}", NAMES[index])
    } else {
        format!("{value:.1} {}", NAMES[index])
    }
}

#[derive(Deserialize)]
#[serde(untagged)]
enum NumberOrText {
    Number(u64),
    Text(String),
}

impl<'de> Deserialize<'de> for ByteSize {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match NumberOrText::deserialize(deserializer)? {
            NumberOrText::Number(bytes) => Ok(ByteSize(bytes)),
            NumberOrText::Text(text) => ByteSize::parse(&text).ok_or_else(|| {
                serde::de::Error::custom(format!(
                    "invalid size '{text}' (expected a number with a unit: b, kb, mb, gb, tb; e.g. '64mb')"
                ))
            }),
        }
    }
}

impl<'de> Deserialize<'de> for Millis {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match NumberOrText::deserialize(deserializer)? {
            NumberOrText::Number(ms) => Ok(Millis(ms)),
            NumberOrText::Text(text) => Millis::parse(&text).ok_or_else(|| {
                serde::de::Error::custom(format!(
                    "invalid duration '{text}' (expected a number with a unit: ms, s, m, h, d; e.g. '10s')"
                ))
            }),
        }
    }
}

impl Serialize for ByteSize {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.to_string())
    }
}

impl Serialize for Millis {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_and_print_round_trip() {
        assert_eq!(ByteSize::parse("64mb"), Some(ByteSize(64 << 20)));
        assert_eq!(ByteSize::parse("64MiB"), Some(ByteSize(64 << 20)));
        assert_eq!(ByteSize::parse("4k"), Some(ByteSize(4096)));
        assert_eq!(ByteSize::parse("1.5kb"), Some(ByteSize(1536)));
        assert_eq!(ByteSize::parse("100"), Some(ByteSize(100)));
        assert_eq!(ByteSize::parse("64mbb"), None);
        assert_eq!(ByteSize::parse("mb"), None);
        assert_eq!(ByteSize(256 << 20).to_string(), "256mb");
        assert_eq!(ByteSize(1536).to_string(), "1536b");
    }

    #[test]
    fn durations_parse_and_print_round_trip() {
        assert_eq!(Millis::parse("10s"), Some(Millis(10_000)));
        assert_eq!(Millis::parse("7d"), Some(Millis(7 * 86_400_000)));
        assert_eq!(Millis::parse("90min"), Some(Millis(5_400_000)));
        assert_eq!(Millis::parse("10 parsecs"), None);
        assert_eq!(Millis(3_600_000).to_string(), "1h");
        assert_eq!(Millis(90_000).to_string(), "90s");
    }
}
