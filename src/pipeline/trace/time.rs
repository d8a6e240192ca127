//! Event times in the forms users' exports carry them: epoch milliseconds, epoch seconds (with
//! a decimal fraction) and RFC 3339 (`2026-01-01T00:00:00.250Z`, `2026-01-01 09:00:00+09:00`).
//! All to epoch milliseconds, exactly (no floating point); sub-millisecond digits are dropped.

/// Days from 1970-01-01 to `year-month-day` in the proleptic Gregorian calendar (Howard
/// Hinnant's `days_from_civil`).
fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(month);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The inverse of `days_from_civil`.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(month <= 2), month, day)
}

fn is_leap(year: i64) -> bool {
    year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
}

fn days_in_month(year: i64, month: u32) -> u32 {
    match month {
        2 if is_leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// `n` ASCII digits at `at` as a number.
fn digits(s: &[u8], at: usize, n: usize) -> Option<u32> {
    let part = s.get(at..at + n)?;
    part.iter().try_fold(0u32, |acc, b| {
        b.is_ascii_digit().then(|| acc * 10 + u32::from(b - b'0'))
    })
}

/// An RFC 3339 date-time (`T`, `t` or a space between date and time; `Z`, `z` or `±hh:mm`)
/// as epoch milliseconds. A leap second (`:60`) is refused, as most exporters never write it.
pub fn parse_rfc3339(text: &str) -> Option<i64> {
    let s = text.as_bytes();
    let year = i64::from(digits(s, 0, 4)?);
    let month = digits(s, 5, 2)?;
    let day = digits(s, 8, 2)?;
    if s.get(4) != Some(&b'-') || s.get(7) != Some(&b'-') {
        return None;
    }
    if !matches!(s.get(10), Some(b'T' | b't' | b' ')) {
        return None;
    }
    let (hour, minute, second) = (digits(s, 11, 2)?, digits(s, 14, 2)?, digits(s, 17, 2)?);
    if s.get(13) != Some(&b':') || s.get(16) != Some(&b':') {
        return None;
    }
    if !(1..=12).contains(&month)
        || day == 0
        || day > days_in_month(year, month)
        || hour > 23
        || minute > 59
        || second > 59
    {
        return None;
    }
    let mut at = 19;
    let mut millis = 0i64;
    if s.get(at) == Some(&b'.') {
        at += 1;
        let start = at;
        while s.get(at).is_some_and(u8::is_ascii_digit) {
            if at - start < 3 {
                millis = millis * 10 + i64::from(s[at] - b'0');
            }
            at += 1;
        }
        if at == start {
            return None;
        }
        for _ in (at - start)..3 {
            millis *= 10;
        }
    }
    let offset_minutes = match s.get(at)? {
        b'Z' | b'z' if at + 1 == s.len() => 0,
        sign @ (b'+' | b'-') if at + 6 == s.len() && s[at + 3] == b':' => {
            let (h, m) = (digits(s, at + 1, 2)?, digits(s, at + 4, 2)?);
            if h > 23 || m > 59 {
                return None;
            }
            let minutes = i64::from(h * 60 + m);
            if *sign == b'-' { -minutes } else { minutes }
        }
        _ => return None,
    };
    let days = days_from_civil(year, month, day);
    let seconds =
        days * 86_400 + i64::from(hour * 3600 + minute * 60 + second) - offset_minutes * 60;
    Some(seconds * 1000 + millis)
}

/// Epoch milliseconds as RFC 3339 in UTC with milliseconds (`2026-01-01T00:00:00.000Z`).
pub fn format_rfc3339(millis: i64) -> String {
    let (days, ms_of_day) = (millis.div_euclid(86_400_000), millis.rem_euclid(86_400_000));
    let (year, month, day) = civil_from_days(days);
    let secs = ms_of_day / 1000;
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        secs / 3600,
        secs / 60 % 60,
        secs % 60,
        ms_of_day % 1000
    )
}

/// Epoch seconds, an integer or a decimal (`1767225600`, `1767225600.25`), as milliseconds.
pub fn parse_epoch_seconds(text: &str) -> Option<i64> {
    let (int, frac) = text.split_once('.').unwrap_or((text, ""));
    if int.is_empty() || !int.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    if !frac.bytes().all(|b| b.is_ascii_digit()) || (text.contains('.') && frac.is_empty()) {
        return None;
    }
    let mut millis = 0i64;
    for i in 0..3 {
        millis = millis * 10 + frac.as_bytes().get(i).map_or(0, |b| i64::from(b - b'0'));
    }
    int.parse::<i64>()
        .ok()?
        .checked_mul(1000)?
        .checked_add(millis)
}

/// Epoch milliseconds: an integer (`1767225600000`); a decimal is refused, not rounded.
pub fn parse_epoch_millis(text: &str) -> Option<i64> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_times_are_exact_milliseconds() {
        let base = 1_767_225_600_000; // 2026-01-01T00:00:00Z
        assert_eq!(parse_rfc3339("2026-01-01T00:00:00Z"), Some(base));
        assert_eq!(parse_rfc3339("2026-01-01t00:00:00.25z"), Some(base + 250));
        assert_eq!(
            parse_rfc3339("2026-01-01 09:00:00.123456+09:00"),
            Some(base + 123)
        );
        assert_eq!(parse_rfc3339("2025-12-31T23:30:00-00:30"), Some(base));
        assert_eq!(
            parse_rfc3339("2024-02-29T00:00:00Z"),
            Some(1_709_164_800_000)
        );
        assert_eq!(parse_rfc3339("1970-01-01T00:00:00Z"), Some(0));
        for bad in [
            "2026-01-01",
            "2026-01-01T00:00:00",
            "2026-13-01T00:00:00Z",
            "2025-02-29T00:00:00Z",
            "2026-01-01T24:00:00Z",
            "2026-01-01T00:00:60Z",
            "2026-01-01T00:00:00.Z",
            "2026-01-01T00:00:00+0900",
            "2026-01-01T00:00:00Zjunk",
            "26-01-01T00:00:00Z",
            "1767225600000",
        ] {
            assert_eq!(parse_rfc3339(bad), None, "{bad}");
        }
    }

    #[test]
    fn formatting_inverts_parsing() {
        for ms in [0, 1_767_225_600_250, 951_782_400_000, 4_102_444_799_999] {
            assert_eq!(parse_rfc3339(&format_rfc3339(ms)), Some(ms), "{ms}");
        }
        assert_eq!(
            format_rfc3339(1_767_225_600_250),
            "2026-01-01T00:00:00.250Z"
        );
    }

    #[test]
    fn epoch_seconds_and_millis() {
        assert_eq!(parse_epoch_seconds("1767225600"), Some(1_767_225_600_000));
        assert_eq!(parse_epoch_seconds("1767225600.5"), Some(1_767_225_600_500));
        assert_eq!(
            parse_epoch_seconds("1767225600.1239"),
            Some(1_767_225_600_123)
        );
        for bad in ["", "1.", ".5", "-1", "1e9", "1767225600.5.1", "x"] {
            assert_eq!(parse_epoch_seconds(bad), None, "{bad}");
        }
        assert_eq!(parse_epoch_millis("1767225600000"), Some(1_767_225_600_000));
        for bad in ["", "1.5", "-1", "1e3", "99999999999999999999"] {
            assert_eq!(parse_epoch_millis(bad), None, "{bad}");
        }
    }
}
