//! Wall-clock timestamps as the protocol writes them: RFC 3339 UTC with milliseconds.
//!
//! A ground-floor module: the wire trace (`rpc`) and the runner's catalog both stamp times, and
//! neither may reach into the other for it.

/// The current time as RFC 3339 UTC with millisecond precision (`2026-11-30T11:20:00.123Z`).
pub fn now_rfc3339() -> String {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    let secs = now.as_secs();
    let millis = now.subsec_millis();
    let days = secs / 86_400;
    let rem = secs % 86_400;
    let (year, month, day) = civil_from_days(i64::try_from(days).unwrap_or(0));
    // Written digit by digit: this runs once per turn, and `format!` costs several times more.
    let mut at = String::with_capacity(24);
    let fields = [
        (u64::try_from(year).unwrap_or(0), 4, '-'),
        (u64::from(month), 2, '-'),
        (u64::from(day), 2, 'T'),
        (rem / 3600, 2, ':'),
        ((rem % 3600) / 60, 2, ':'),
        (rem % 60, 2, '.'),
        (u64::from(millis), 3, 'Z'),
    ];
    for (value, width, separator) in fields {
        push_padded(&mut at, value, width);
        at.push(separator);
    }
    at
}

/// Appends the last `width` decimal digits of `value`, zero-padded.
fn push_padded(out: &mut String, value: u64, width: u32) {
    for position in (0..width).rev() {
        let digit = (value / 10u64.pow(position)) % 10;
        out.push(char::from(b'0' + u8::try_from(digit).unwrap_or(0)));
    }
}

/// Days since 1970-01-01 → (year, month, day), Howard Hinnant's algorithm.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = u32::try_from(doy - (153 * mp + 2) / 5 + 1).unwrap_or(1);
    let m = u32::try_from(if mp < 10 { mp + 3 } else { mp - 9 }).unwrap_or(1);
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(19_723), (2024, 1, 1));
        assert_eq!(civil_from_days(20_787), (2026, 11, 30));
        let now = now_rfc3339();
        assert_eq!(now.len(), 24, "{now}");
        assert!(now.starts_with("20") && now.ends_with('Z'), "{now}");
        let (date, time) = now.split_once('T').expect("a T");
        assert_eq!(date.split('-').map(str::len).collect::<Vec<_>>(), [4, 2, 2], "{now}");
        assert_eq!(time[..12].split([':', '.']).map(str::len).collect::<Vec<_>>(), [2, 2, 2, 3], "{now}");
        let mut out = String::new();
        push_padded(&mut out, 7, 3);
        push_padded(&mut out, 2026, 4);
        push_padded(&mut out, 59, 2);
        assert_eq!(out, "007202659");
    }
}
