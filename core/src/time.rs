//! Wall-clock timestamps as the protocol writes them: RFC 3339 UTC with milliseconds.
//!
//! A ground-floor module: the wire trace (`rpc`) and the runner's catalog both stamp times, and
//! neither may reach into the other for it.

/// The current time as RFC 3339 UTC with millisecond precision (`2026-11-30T11:20:00.123Z`).
pub fn now_rfc3339() -> String {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    rfc3339(now.as_secs(), now.subsec_millis())
}

/// `secs` seconds and `millis` milliseconds after the Unix epoch, as RFC 3339 UTC.
fn rfc3339(secs: u64, millis: u32) -> String {
    let days = secs / 86_400;
    let rem = secs % 86_400;
    let (year, month, day) = civil_from_days(i64::try_from(days).unwrap_or(0));
    // Written digit by digit into a fixed buffer: this runs once per turn, and `format!` (or a
    // `push` per character) costs several times more.
    let mut at = *b"0000-00-00T00:00:00.000Z";
    let fields = [
        (u64::try_from(year).unwrap_or(0), 0..4),
        (u64::from(month), 5..7),
        (u64::from(day), 8..10),
        (rem / 3600, 11..13),
        ((rem % 3600) / 60, 14..16),
        (rem % 60, 17..19),
        (u64::from(millis), 20..23),
    ];
    for (value, range) in fields {
        if let Some(digits) = at.get_mut(range) {
            put_padded(digits, value);
        }
    }
    String::from_utf8(at.to_vec()).unwrap_or_default()
}

/// Writes the last `digits.len()` decimal digits of `value` into `digits`, zero-padded.
fn put_padded(digits: &mut [u8], value: u64) {
    let mut rest = value;
    for digit in digits.iter_mut().rev() {
        *digit = b'0' + u8::try_from(rest % 10).unwrap_or(0);
        rest /= 10;
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
        assert_eq!(rfc3339(0, 0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339(1_796_037_600, 123), "2026-11-30T11:20:00.123Z");
        assert_eq!(rfc3339(1_796_083_199, 999), "2026-11-30T23:59:59.999Z");
        let mut out = *b"000000000";
        put_padded(&mut out[..3], 7);
        put_padded(&mut out[3..7], 2026);
        put_padded(&mut out[7..], 12_359);
        assert_eq!(&out, b"007202659");
    }
}
