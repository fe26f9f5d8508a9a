//! The `session/list` cursor codec (`acp_facade::fuzzing`): arbitrary cursors never panic and
//! never pass authentication; a genuine cursor round-trips, is refused under another filter or
//! another agent's key, and is refused once altered in any way.
//!
//! Input: newline-separated parts `cursor`, `after`, `cwd` (empty: no filter) and `edits` (byte
//! triples: operation, position, value), so cursors seen in the tests' transcripts seed it.

#![no_main]

use std::path::Path;

use acp_facade::fuzzing::InvalidCursor;
use acp_facade::fuzzing::{decode_cursor, encode_cursor};
use libfuzzer_sys::fuzz_target;

const KEY: [u8; 32] = *b"acp-facade fuzzing key: not real";
const OTHER_KEY: [u8; 32] = *b"acp-facade: another agent's key!";

fuzz_target!(|input: &[u8]| {
    let mut parts = input.splitn(4, |b| *b == b'\n');
    let cursor = parts.next().unwrap_or_default();
    let after = String::from_utf8_lossy(parts.next().unwrap_or_default()).into_owned();
    let cwd = String::from_utf8_lossy(parts.next().unwrap_or_default()).into_owned();
    let edits = parts.next().unwrap_or_default();
    let cwd = (!cwd.is_empty()).then(|| Path::new(&cwd));

    // Arbitrary cursors: refused (the tag cannot be forged), or genuine and then canonical.
    for filter in [None, cwd] {
        if let Ok(decoded) = decode_cursor(KEY, cursor, filter) {
            assert_eq!(cursor, encode_cursor(KEY, &decoded, filter).as_bytes(), "a non-canonical cursor was accepted");
        }
    }

    // A genuine cursor round-trips and is bound to its filter and key.
    let genuine = encode_cursor(KEY, &after, cwd);
    assert_eq!(decode_cursor(KEY, genuine.as_bytes(), cwd), Ok(after.clone()));
    let other_filter = if cwd.is_some() { None } else { Some(Path::new("/elsewhere")) };
    assert_eq!(decode_cursor(KEY, genuine.as_bytes(), other_filter), Err(InvalidCursor::OtherFilter));
    assert_eq!(decode_cursor(OTHER_KEY, genuine.as_bytes(), cwd), Err(InvalidCursor::Forged));

    // Any alteration is refused.
    let mut altered = genuine.clone().into_bytes();
    for edit in edits.chunks_exact(3) {
        let (op, at, value) = (edit[0] % 4, usize::from(edit[1]), edit[2]);
        let len = altered.len();
        match op {
            0 if len > 0 => altered[at % len] ^= value.max(1),
            1 if len > 0 => {
                altered.remove(at % len);
            }
            2 => altered.insert(at % (len + 1), value),
            _ => altered.truncate(at % (len + 1)),
        }
    }
    if altered != genuine.as_bytes() {
        assert!(decode_cursor(KEY, &altered, cwd).is_err(), "an altered cursor was accepted: {altered:?}");
    }
});
