//! Writing JSON text directly, for the hot paths that build their lines and journal entries by
//! hand instead of through serde (`agent::translate`, `runner::event_json`).
//!
//! A ground-floor module: it knows nothing of the protocol or the runtime.
//!
//! Invariant: every function here writes exactly the bytes `serde_json`'s compact serialiser
//! writes for the same value (tests hold each to that), so hand-written output and serde's can be
//! mixed within one document.

/// Writes `s` as a JSON string. Text without a `"`, a `\` or a control character (nearly all
/// text) is copied as it is; anything else is escaped by `serde_json` itself.
pub(crate) fn string(out: &mut Vec<u8>, s: &str) {
    if needs_escape(s.as_bytes()) {
        // Writing a &str into a Vec cannot fail.
        let _ = serde_json::to_writer(&mut *out, s);
        return;
    }
    out.reserve(s.len() + 2);
    out.push(b'"');
    out.extend_from_slice(s.as_bytes());
    out.push(b'"');
}

/// Writes `n` as a JSON number.
pub(crate) fn number(out: &mut Vec<u8>, n: u64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    let mut rest = n;
    loop {
        at -= 1;
        digits[at] = b'0' + u8::try_from(rest % 10).unwrap_or(0);
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[at..]);
}

/// Whether JSON must escape any byte of `bytes`: a control character (below 0x20), `"` or `\`
/// (what `serde_json` escapes; it writes everything else as it is). Eight bytes at a time.
fn needs_escape(bytes: &[u8]) -> bool {
    const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
    const HIGH: u64 = u64::from_ne_bytes([0x80; 8]);
    // A high bit set in `(v - ONES * n) & !v & HIGH` for some byte of `v` below `n` (n ≤ 0x80):
    // exact as a whole (a borrow only marks bytes past one that is really below `n`).
    let below = |v: u64, n: u8| v.wrapping_sub(ONES * u64::from(n)) & !v & HIGH;
    let mut chunks = bytes.chunks_exact(8);
    for chunk in &mut chunks {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let v = u64::from_ne_bytes(word);
        let hits = below(v, 0x20) | below(v ^ (ONES * u64::from(b'"')), 1) | below(v ^ (ONES * u64::from(b'\\')), 1);
        if hits != 0 {
            return true;
        }
    }
    chunks.remainder().iter().any(|&b| b < 0x20 || b == b'"' || b == b'\\')
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn written(f: impl FnOnce(&mut Vec<u8>)) -> String {
        let mut out = Vec::new();
        f(&mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn strings_and_numbers_are_what_serde_writes() {
        for s in ["", "a", "hello world", "12345678", "123456789", "é\u{2028}\u{7f}", "x\"", "\\", "\u{1f}", "ab\ncd"]
        {
            assert_eq!(written(|out| string(out, s)), serde_json::to_string(s).unwrap(), "{s:?}");
        }
        for n in [0, 7, 10, 99, 100, 12_345, u64::MAX] {
            assert_eq!(written(|out| number(out, n)), n.to_string());
        }
    }

    #[test]
    fn every_escaped_byte_is_found_at_every_position() {
        for special in (0u8..0x20).chain([b'"', b'\\']) {
            for len in 1..20 {
                for at in 0..len {
                    let mut bytes = vec![b'a'; len];
                    bytes[at] = special;
                    assert!(needs_escape(&bytes), "{special:#x} at {at} of {len}");
                }
            }
        }
        let plain: Vec<u8> = (0x20u8..=0xff).filter(|&b| b != b'"' && b != b'\\').collect();
        assert!(!needs_escape(&plain));
    }

    proptest! {
        #[test]
        fn any_string_is_written_as_serde_writes_it(s in "\\PC{0,40}|[\"\\\\\u{0}-\u{1f}\u{7f}a-z\u{2028}é]{0,24}") {
            prop_assert_eq!(written(|out| string(out, &s)), serde_json::to_string(&s).unwrap());
        }

        #[test]
        fn any_number_is_written_as_serde_writes_it(n in any::<u64>()) {
            prop_assert_eq!(written(|out| number(out, n)), serde_json::to_string(&n).unwrap());
        }
    }
}
