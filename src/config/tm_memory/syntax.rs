//! Flink's syntax for the TaskManager's memory values: sizes (`MemorySize`), fractions (a
//! `float`), managed-memory consumer weights; and sizes as people read them, for messages.

/// A size in Flink's `MemorySize` syntax: a whole number, then optionally a unit (`b`/`bytes`,
/// `k`/`kb`/`kibibytes`, `m`/`mb`/`mebibytes`, `g`/`gb`/`gibibytes`, `t`/`tb`/`tebibytes`, any
/// case, spaces allowed between). A bare number is bytes.
pub fn parse_memory_size(text: &str) -> Result<u64, &'static str> {
    const EXPECTS: &str =
        "a memory size in Flink's syntax: a whole number and a unit, such as 1728m, 4 gb or 512kb";
    let text = text.trim();
    let end = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    if end == 0 {
        return Err(EXPECTS);
    }
    let number: u64 = text[..end].parse().map_err(|_| EXPECTS)?;
    let unit = text[end..].trim().to_ascii_lowercase();
    let factor: u64 = match unit.as_str() {
        "" | "b" | "bytes" => 1,
        "k" | "kb" | "kibibytes" => 1 << 10,
        "m" | "mb" | "mebibytes" => 1 << 20,
        "g" | "gb" | "gibibytes" => 1 << 30,
        "t" | "tb" | "tebibytes" => 1 << 40,
        _ => return Err(EXPECTS),
    };
    number
        .checked_mul(factor)
        .filter(|b| *b <= i64::MAX as u64)
        .ok_or(EXPECTS)
}

/// A size in Flink's syntax that reads back exactly: the largest unit that divides it.
pub fn format_memory_size(bytes: u64) -> String {
    for (unit, factor) in [
        ("tb", 1u64 << 40),
        ("gb", 1 << 30),
        ("mb", 1 << 20),
        ("kb", 1 << 10),
    ] {
        if bytes != 0 && bytes.is_multiple_of(factor) {
            return format!("{}{unit}", bytes / factor);
        }
    }
    format!("{bytes}b")
}

pub(super) const FRACTION_EXPECTS: &str = "a fraction such as 0.4 (Flink reads it as a float)";

pub(super) fn parse_fraction(text: &str) -> Option<f32> {
    text.trim().parse::<f32>().ok().filter(|f| f.is_finite())
}

pub(super) fn parse_weights(text: &str) -> Option<Vec<(String, u32)>> {
    let mut weights = Vec::new();
    for pair in text.split(',').filter(|p| !p.trim().is_empty()) {
        let (consumer, weight) = pair.split_once(':')?;
        let consumer = consumer.trim().to_ascii_uppercase();
        if !["OPERATOR", "STATE_BACKEND", "PYTHON", "DATAPROC"].contains(&consumer.as_str()) {
            return None;
        }
        weights.push((consumer, weight.trim().parse().ok()?));
    }
    (!weights.is_empty()).then_some(weights)
}
/// A size as people read it (`1.69 GiB`).
pub(super) fn human(bytes: u64) -> String {
    let units = ["bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < units.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} bytes")
    } else {
        format!("{value:.3} {}", units[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_sizes_parse_as_flink_parses_them() {
        assert_eq!(parse_memory_size("1728m"), Ok(1728 << 20));
        assert_eq!(parse_memory_size("4 gb"), Ok(4 << 30));
        assert_eq!(parse_memory_size("512"), Ok(512));
        assert_eq!(parse_memory_size("64 MEBIBYTES"), Ok(64 << 20));
        assert!(parse_memory_size("1.5g").is_err());
        assert!(parse_memory_size("lots").is_err());
        assert_eq!(format_memory_size(72 << 20), "72mb");
        assert_eq!(format_memory_size(536_870_920), "536870920b");
        assert_eq!(format_memory_size(0), "0b");
    }
}
