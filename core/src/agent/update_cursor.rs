//! Stream cursors: a `session/update` line stamped with its position in the session's stream.
//!
//! A session's events are numbered once, in the order every client receives them (their `seq`,
//! see the `hub`; a runner session journals its Enduring events at that number). When
//! [`Options::stream_cursors`](super::Options#structfield.stream_cursors) is on, each update made
//! from an event carries that number, as a string, in the notification's
//! `params._meta["acp/cursor"]` (the name of the draft RFD "durable-resumable-http-transport"); the
//! remote transports also make it the SSE event's `id`, so a client that reopens a stream with
//! `Last-Event-ID` gets exactly what came after it.
//!
//! Invariants:
//! - Only `session/update` lines are stamped, and only at the end of their params: the line's
//!   leading bytes (which the writer and the transports read, see `v2::updates` and
//!   `remote::shape`) do not change.
//! - The stamp is the last member of `params` and its value is decimal digits, so the transports
//!   read it from the line's last bytes ([`cursor_of_line`]) and agree with a parse.
//! - Cursors of one session increase along its stream; an update not made from an event (the
//!   command list, the answer to the client's own change) carries none.

use std::io::Write as _;

/// The `_meta` key of a stream cursor.
#[cfg(any(feature = "remote", test))]
pub(crate) const CURSOR_KEY: &str = "acp/cursor";

/// The start of every `session/update` line (see `translate::UpdateHead`).
const UPDATE_START: &[u8] = br#"{"jsonrpc":"2.0","method":"session/update","params":"#;
/// What comes between the params' last member and the cursor's digits.
const STAMP_START: &[u8] = br#","_meta":{"acp/cursor":""#;
/// What closes the stamp: the cursor's quote and `_meta`'s brace (the params' and the envelope's
/// braces, and the line's end, follow).
const STAMP_END: &[u8] = br#""}"#;
/// The end of a stamped line: the params' and the envelope's braces (a line break may follow).
#[cfg(any(feature = "remote", test))]
const LINE_END: &[u8] = b"}}";

/// `line` (one complete `session/update` line, as the agent writes it, ending `}}\n`) with
/// `params._meta["acp/cursor"]` set to `seq`; any other line unchanged.
pub(crate) fn stamp(mut line: Vec<u8>, seq: u64) -> Vec<u8> {
    if !line.starts_with(UPDATE_START) || !line.ends_with(b"}}\n") {
        return line;
    }
    // Before the params' closing brace: the envelope's brace and the line break follow it.
    let at = line.len() - 3;
    line.truncate(at);
    // At most 20 digits.
    line.reserve(STAMP_START.len() + 20 + STAMP_END.len() + 3);
    line.extend_from_slice(STAMP_START);
    // Writing a number into a Vec cannot fail.
    let _ = write!(line, "{seq}");
    line.extend_from_slice(STAMP_END);
    line.extend_from_slice(b"}}\n");
    line
}

/// The cursor [`stamp`] put on `line` (without its line break), read from its last bytes; `None`
/// when the line does not end in a stamp (it may still carry one elsewhere, if something
/// rewrote it: see [`cursor_of_params`]).
#[cfg(any(feature = "remote", test))]
pub(crate) fn cursor_of_line(line: &[u8]) -> Option<&str> {
    let rest = line.strip_suffix(LINE_END)?.strip_suffix(STAMP_END)?;
    let digits = rest.iter().rev().take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 || digits > 20 {
        return None;
    }
    let (before, cursor) = rest.split_at(rest.len() - digits);
    if !before.ends_with(STAMP_START) {
        return None;
    }
    std::str::from_utf8(cursor).ok()
}

/// The cursor in a parsed notification's params, if it has one.
#[cfg(any(feature = "remote", test))]
pub(crate) fn cursor_of_params(params: Option<&serde_json::Value>) -> Option<&str> {
    params?.get("_meta")?.get(CURSOR_KEY)?.as_str()
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::{Value, json};

    use super::*;

    fn line(value: &Value) -> Vec<u8> {
        let mut line = serde_json::to_vec(value).unwrap();
        line.push(b'\n');
        line
    }

    #[test]
    fn only_update_lines_are_stamped() {
        let request = line(&json!({"jsonrpc": "2.0", "id": 1, "method": "session/request_permission", "params": {}}));
        assert_eq!(stamp(request.clone(), 3), request);
        let other =
            line(&json!({"jsonrpc": "2.0", "method": "elicitation/complete", "params": {"elicitationId": "e"}}));
        assert_eq!(stamp(other.clone(), 3), other);
    }

    #[test]
    fn a_cursor_that_is_not_the_params_last_member_is_not_read_from_the_end() {
        // A host's own `_meta` inside the update: one brace more before the envelope's.
        let text = r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"x":1,"_meta":{"acp/cursor":"5"}}}}"#;
        assert_eq!(cursor_of_line(text.as_bytes()), None);
    }

    proptest! {
        #[test]
        fn a_stamped_line_is_the_notification_with_the_cursor_in_its_params_meta(
            session in "\\PC{0,20}",
            text in "\\PC{0,40}|[\"\\\\}{]{0,8}",
            seq in any::<u64>(),
        ) {
            let notification = json!({
                "jsonrpc": "2.0", "method": "session/update",
                "params": {"sessionId": session, "update": {"sessionUpdate": "agent_message_chunk",
                    "content": {"type": "text", "text": text}}},
            });
            let stamped = stamp(line(&notification), seq);
            prop_assert!(stamped.ends_with(b"}}\n"));
            let parsed: Value = serde_json::from_slice(&stamped).unwrap();
            let mut expected = notification.clone();
            expected["params"]["_meta"] = json!({"acp/cursor": seq.to_string()});
            prop_assert_eq!(&parsed, &expected);
            let cursor = seq.to_string();
            prop_assert_eq!(cursor_of_line(&stamped[..stamped.len() - 1]), Some(cursor.as_str()));
            prop_assert_eq!(cursor_of_params(parsed.get("params")), Some(cursor.as_str()));
        }
    }
}
