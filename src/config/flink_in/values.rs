//! Values in Flink's syntax (`FlinkValue`, as a Flink configuration file holds them) turned into
//! a profile's: sizes, durations, booleans, numbers, compression lists, enum names in any case
//! (`FromFlink`, one implementation per knob type).

use crate::config::profile::Compression;

/// A value as the file holds it: text, a list (a YAML list, or `a;b` split later), or nothing.
#[derive(Debug, Clone, PartialEq)]
pub enum FlinkValue {
    Scalar(String),
    List(Vec<String>),
    Null,
}

impl FlinkValue {
    pub(super) fn show(&self) -> String {
        match self {
            FlinkValue::Scalar(s) => s.clone(),
            FlinkValue::List(items) => format!("[{}]", items.join(", ")),
            FlinkValue::Null => String::new(),
        }
    }

    pub(crate) fn scalar(&self) -> Result<&str, String> {
        match self {
            FlinkValue::Scalar(s) => Ok(s.trim()),
            FlinkValue::List(_) => Err(format!("a list '{}'", self.show())),
            FlinkValue::Null => Err("no value".to_string()),
        }
    }
}

/// A knob's value in Flink's syntax, turned into the profile's: `Err` says what is valid.
pub trait FromFlink {
    fn from_flink(value: &FlinkValue) -> Result<String, String>;
}

pub(super) fn expected(value: &FlinkValue, what: &str) -> String {
    match value.scalar() {
        Ok(text) => format!("invalid value '{text}': Flink expects {what}"),
        Err(got) => format!("{got} where Flink expects {what}"),
    }
}

pub(super) const SIZE_SYNTAX: &str = "a whole number of bytes with an optional unit (b, k/kb, m/mb, g/gb, t/tb, any case, a space allowed), e.g. '64 mb', '64mb' or '67108864'";
const DURATION_SYNTAX: &str = "a whole number with an optional unit (ms, s, min/m, h, d, also spelt out as seconds, minutes, …; none = milliseconds), e.g. '10 s', '10s' or '10000'";

/// Flink's `MemorySize.parse` (the TaskManager derivation's parser).
pub fn parse_flink_size(text: &str) -> Option<u64> {
    crate::config::tm_memory::parse_memory_size(text).ok()
}

/// Flink's `TimeUtils.parseDuration`, in whole milliseconds.
pub fn parse_flink_duration(text: &str) -> Option<u64> {
    let text = text.trim();
    let end = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let number: u64 = text[..end].parse().ok()?;
    let unit = text[end..].trim().to_lowercase();
    let nanos_per: u128 = match unit.as_str() {
        "ns" | "nano" | "nanos" | "nanosecond" | "nanoseconds" => 1,
        "µs" | "micro" | "micros" | "microsecond" | "microseconds" => 1_000,
        "" | "ms" | "milli" | "millis" | "millisecond" | "milliseconds" => 1_000_000,
        "s" | "sec" | "secs" | "second" | "seconds" => 1_000_000_000,
        "m" | "min" | "minute" | "minutes" => 60_000_000_000,
        "h" | "hour" | "hours" => 3_600_000_000_000,
        "d" | "day" | "days" => 86_400_000_000_000,
        _ => return None,
    };
    let nanos = u128::from(number) * nanos_per;
    // statebench counts whole milliseconds.
    nanos
        .is_multiple_of(1_000_000)
        .then(|| u64::try_from(nanos / 1_000_000).ok())
        .flatten()
}

impl FromFlink for crate::config::ByteSize {
    fn from_flink(value: &FlinkValue) -> Result<String, String> {
        value
            .scalar()
            .ok()
            .and_then(parse_flink_size)
            .map(|b| b.to_string())
            .ok_or_else(|| expected(value, SIZE_SYNTAX))
    }
}

impl FromFlink for crate::config::Millis {
    fn from_flink(value: &FlinkValue) -> Result<String, String> {
        value
            .scalar()
            .ok()
            .and_then(parse_flink_duration)
            .map(|ms| ms.to_string())
            .ok_or_else(|| expected(value, DURATION_SYNTAX))
    }
}

impl FromFlink for bool {
    fn from_flink(value: &FlinkValue) -> Result<String, String> {
        match value.scalar().map(str::to_ascii_lowercase).as_deref() {
            Ok("true") => Ok("true".to_string()),
            Ok("false") => Ok("false".to_string()),
            _ => Err(expected(value, "true or false")),
        }
    }
}

impl FromFlink for u32 {
    fn from_flink(value: &FlinkValue) -> Result<String, String> {
        value
            .scalar()
            .ok()
            .and_then(|s| s.parse::<u32>().ok())
            .map(|n| n.to_string())
            .ok_or_else(|| expected(value, "a whole number such as 4"))
    }
}

impl FromFlink for i32 {
    fn from_flink(value: &FlinkValue) -> Result<String, String> {
        value
            .scalar()
            .ok()
            .and_then(|s| s.trim().parse::<i32>().ok())
            .map(|n| n.to_string())
            .ok_or_else(|| expected(value, "a whole number such as 5000, or -1"))
    }
}

impl FromFlink for crate::config::profile::MemoryMode {
    fn from_flink(value: &FlinkValue) -> Result<String, String> {
        match value.scalar().map(str::to_ascii_lowercase).as_deref() {
            Ok("managed") => Ok("managed".to_string()),
            Ok("fixed-per-slot") => Ok("fixed-per-slot".to_string()),
            Ok("unmanaged") => Ok("unmanaged".to_string()),
            _ => Err(expected(value, "managed, fixed-per-slot or unmanaged")),
        }
    }
}

impl FromFlink for f64 {
    fn from_flink(value: &FlinkValue) -> Result<String, String> {
        value
            .scalar()
            .ok()
            .and_then(|s| s.trim_end_matches(['d', 'D', 'f', 'F']).parse::<f64>().ok())
            .filter(|f| f.is_finite())
            .map(|f| format!("{f}"))
            .ok_or_else(|| expected(value, "a number such as 0.5"))
    }
}

/// Flink's `CompressionType` names (FRocksDB's enum); matched in any case, as Flink does.
const COMPRESSION_TYPES: &[(&str, Option<Compression>)] = &[
    ("NO_COMPRESSION", Some(Compression::None)),
    ("SNAPPY_COMPRESSION", Some(Compression::Snappy)),
    ("ZLIB_COMPRESSION", Some(Compression::Zlib)),
    ("BZLIB2_COMPRESSION", Some(Compression::Bzip2)),
    ("LZ4_COMPRESSION", Some(Compression::Lz4)),
    ("LZ4HC_COMPRESSION", Some(Compression::Lz4hc)),
    ("ZSTD_COMPRESSION", Some(Compression::Zstd)),
    ("XPRESS_COMPRESSION", None),
    ("DISABLE_COMPRESSION_OPTION", None),
];

impl FromFlink for Vec<Compression> {
    fn from_flink(value: &FlinkValue) -> Result<String, String> {
        let valid = "CompressionType names, one per level, L0 first, separated by ';' (or a YAML list): NO_COMPRESSION, SNAPPY_COMPRESSION, LZ4_COMPRESSION, LZ4HC_COMPRESSION, ZSTD_COMPRESSION, ZLIB_COMPRESSION, BZLIB2_COMPRESSION";
        let items: Vec<String> = match value {
            FlinkValue::Scalar(s) => s.split(';').map(|i| i.trim().to_string()).collect(),
            FlinkValue::List(items) => items.iter().map(|i| i.trim().to_string()).collect(),
            FlinkValue::Null => return Err(format!("no value where Flink expects {valid}")),
        };
        let mut names = Vec::new();
        for item in &items {
            match COMPRESSION_TYPES
                .iter()
                .find(|(name, _)| name.eq_ignore_ascii_case(item))
            {
                Some((_, Some(c))) => names.push(format!("{c:?}").to_lowercase()),
                Some((name, None)) => {
                    return Err(format!(
                        "'{name}' in '{}' is not one statebench's RocksDB builds with; valid: {valid}",
                        value.show()
                    ));
                }
                None => {
                    return Err(format!(
                        "invalid compression '{item}' in '{}': Flink expects {valid}",
                        value.show()
                    ));
                }
            }
        }
        Ok(format!("[{}]", names.join(", ")))
    }
}

impl FromFlink for crate::config::profile::CheckpointingMode {
    fn from_flink(value: &FlinkValue) -> Result<String, String> {
        match value.scalar().map(str::to_ascii_uppercase).as_deref() {
            Ok(m @ ("EXACTLY_ONCE" | "AT_LEAST_ONCE")) => Ok(m.to_string()),
            _ => Err(expected(value, "EXACTLY_ONCE or AT_LEAST_ONCE")),
        }
    }
}

/// Knobs Flink has no key for are only read from `statebench.<knob>`, in the profile's syntax.
macro_rules! statebench_syntax {
    ($($ty:ty),*) => {$(
        impl FromFlink for $ty {
            fn from_flink(value: &FlinkValue) -> Result<String, String> {
                value.scalar().map(str::to_string)
            }
        }
    )*};
}
statebench_syntax!(
    crate::config::target::Target,
    crate::config::profile::DeliveryGuarantee,
    crate::config::profile::IsolationLevel
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_durations_parse_as_flink_parses_them() {
        assert_eq!(parse_flink_size("64 mb"), Some(64 << 20));
        assert_eq!(parse_flink_size("64mb"), Some(64 << 20));
        assert_eq!(parse_flink_size("64MB"), Some(64 << 20));
        assert_eq!(parse_flink_size("67108864"), Some(64 << 20));
        assert_eq!(parse_flink_size("1g"), Some(1 << 30));
        assert_eq!(parse_flink_size("2 mebibytes"), Some(2 << 20));
        assert_eq!(parse_flink_size("1.5mb"), None);
        assert_eq!(parse_flink_size("64 xb"), None);
        assert_eq!(parse_flink_duration("10 s"), Some(10_000));
        assert_eq!(parse_flink_duration("10s"), Some(10_000));
        assert_eq!(parse_flink_duration("10 min"), Some(600_000));
        assert_eq!(parse_flink_duration("2m"), Some(120_000));
        assert_eq!(parse_flink_duration("500"), Some(500));
        assert_eq!(parse_flink_duration("1 d"), Some(86_400_000));
        assert_eq!(parse_flink_duration("1500 µs"), None);
        assert_eq!(parse_flink_duration("10 parsecs"), None);
    }

    #[test]
    fn compression_lists_take_flinks_names_in_either_list_syntax() {
        let semi = FlinkValue::Scalar("NO_COMPRESSION;snappy_compression;LZ4_COMPRESSION".into());
        assert_eq!(
            <Vec<Compression>>::from_flink(&semi).unwrap(),
            "[none, snappy, lz4]"
        );
        let list = FlinkValue::List(vec!["ZSTD_COMPRESSION".into()]);
        assert_eq!(<Vec<Compression>>::from_flink(&list).unwrap(), "[zstd]");
        let bad = <Vec<Compression>>::from_flink(&FlinkValue::Scalar("snappy".into()));
        assert!(bad.unwrap_err().contains("SNAPPY_COMPRESSION"));
    }
}
