//! The ids the runner gives what it numbers: an event is `<session>#<n>`, a command
//! `<session>/c<n>`, a turn `t<n>`. A ground floor of the runner: the stores rebuild event ids
//! they leave out of a journal entry, and the sessions build every id.
//!
//! Invariant: [`is_event_id`] holds exactly for the ids [`event_id`] builds, so a store may leave
//! such an id out of what it writes and rebuild it from the session and the number.

use std::sync::Arc;

use acp_facade::acp::SessionId;
use acp_facade::harness::EventId;

/// `<session>#<n>`: an event's id (built once per streamed token; see [`numbered`]).
pub(crate) fn event_id(session: &SessionId, n: u64) -> EventId {
    EventId::new(numbered(&session.0, EVENT_ID_SEPARATOR, n))
}

/// Between the session and the number in an event's id.
const EVENT_ID_SEPARATOR: &str = "#";

/// Whether `id` is what [`event_id`] builds for `session` and `n`, digit for digit (no sign, no
/// leading zero), checked without building it.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) fn is_event_id(id: &str, session: &SessionId, n: u64) -> bool {
    event_id_digits(id, session).is_some_and(|digits| {
        digits.bytes().all(|b| b.is_ascii_digit())
            && (digits == "0" || !digits.starts_with('0'))
            && digits.parse::<u64>() == Ok(n)
    })
}

/// What follows `<session>#` in `id`, when `id` starts so: the digits of an id [`event_id`] built.
pub(crate) fn event_id_digits<'a>(id: &'a str, session: &SessionId) -> Option<&'a str> {
    id.strip_prefix(&*session.0)?.strip_prefix(EVENT_ID_SEPARATOR)
}

/// `<prefix><separator><n>`, built without the formatting machinery (this runs for every event
/// and twice per turn): the digits on the stack, the id assembled in a stack buffer and copied
/// once into the id's shared allocation (a long prefix takes the heap path).
pub(crate) fn numbered(prefix: &str, separator: &str, n: u64) -> Arc<str> {
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
    let digits = &digits[at..];
    let len = prefix.len() + separator.len() + digits.len();
    let mut buffer = [0u8; 96];
    if let Some(text) = buffer.get_mut(..len) {
        let (head, tail) = text.split_at_mut(prefix.len());
        head.copy_from_slice(prefix.as_bytes());
        let (middle, end) = tail.split_at_mut(separator.len());
        middle.copy_from_slice(separator.as_bytes());
        end.copy_from_slice(digits);
        if let Ok(text) = std::str::from_utf8(text) {
            return Arc::from(text);
        }
    }
    let mut text = String::with_capacity(len);
    text.push_str(prefix);
    text.push_str(separator);
    text.extend(digits.iter().map(|&d| char::from(d)));
    Arc::from(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_ids_join_session_and_number() {
        assert_eq!(event_id(&SessionId::new("s"), 0).as_str(), "s#0");
        assert_eq!(event_id(&SessionId::new("sess_0a1b"), 1_234_567).as_str(), "sess_0a1b#1234567");
        assert_eq!(event_id(&SessionId::new("é"), u64::MAX).as_str(), "é#18446744073709551615");
        // Longer than the stack buffer: the same id, built on the heap.
        let long = "x".repeat(200);
        assert_eq!(event_id(&SessionId::new(long.as_str()), 42).as_str(), format!("{long}#42"));
    }

    #[test]
    fn command_and_turn_ids_are_numbered_like_format() {
        for n in [0, 7, 10, 1_234_567, u64::MAX] {
            assert_eq!(&*numbered("sess_0a1b", "/c", n), format!("sess_0a1b/c{n}"));
            assert_eq!(&*numbered("", "t", n), format!("t{n}"));
        }
        let long = "é".repeat(100);
        assert_eq!(&*numbered(&long, "/c", 3), format!("{long}/c3"));
    }
}
