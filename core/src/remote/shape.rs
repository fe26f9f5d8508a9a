//! What the transports need to know of a message the agent wrote — whether it is a request, a
//! response or a notification, its id and the session its params name — read from the line's
//! leading bytes when the line has the shape the agent writes, and parsed otherwise.
//!
//! The agent writes its lines compactly with serde in a fixed member order: a response or request
//! begins `{"jsonrpc":"2.0","id":ID,` and a session update
//! `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"…"`. Those two shapes (the
//! bulk of the traffic) are read without parsing.
//!
//! Invariant: the fast path answers only when it agrees with the parse (an id with an escape, a
//! number that is not a plain integer, a session id with a backslash, any other shape: parsed);
//! a line that is not JSON has no shape (`None`), as a failed parse had.

use serde_json::Value;

use crate::agent::update_cursor::{cursor_of_line, cursor_of_params};

/// What kind of JSON-RPC message a line is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A method and an id.
    Request,
    /// An id and no method.
    Response,
    /// Anything else (a method and no id).
    Notification,
}

/// The facts the transports route by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Shape {
    pub(crate) kind: Kind,
    /// The id as a map key: its compact JSON text (`1` and `"1"` differ).
    pub(crate) id: Option<String>,
    /// The session `params.sessionId` names.
    pub(crate) session: Option<String>,
    /// For a `$/cancel_request` of the agent's: the id key of the request of its own it abandons
    /// (`params.requestId`), so the cancellation travels the way that request did.
    pub(crate) cancels: Option<String>,
    /// The elicitation `params.elicitationId` names: its `elicitation/complete` names no session,
    /// and travels the way its `elicitation/create` did.
    pub(crate) elicitation: Option<String>,
    /// A `session/update`'s stream cursor (`params._meta["acp/cursor"]`, see
    /// `agent::update_cursor`): the SSE event id it goes out with.
    pub(crate) cursor: Option<String>,
}

/// The start of every `session/update` line the agent writes.
const UPDATE_HEAD: &[u8] = br#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":""#;
/// The start of every request and response line the agent writes.
const WITH_ID_HEAD: &[u8] = br#"{"jsonrpc":"2.0","id":"#;

/// The shape of `line` (one line, no line break); `None` when it is not a JSON object.
pub(crate) fn of(line: &str) -> Option<Shape> {
    fast(line.as_bytes()).or_else(|| parsed(line))
}

/// The leading bytes' answer, when the line has one of the agent's own shapes.
fn fast(line: &[u8]) -> Option<Shape> {
    if !line.ends_with(b"}") {
        return None;
    }
    if let Some(rest) = line.strip_prefix(UPDATE_HEAD) {
        let end = memchr::memchr2(b'"', b'\\', rest)?;
        if rest[end] != b'"' {
            return None;
        }
        let session = std::str::from_utf8(&rest[..end]).ok()?.to_owned();
        let cursor = match cursor_of_line(line) {
            Some(cursor) => Some(cursor.to_owned()),
            // A `_meta` elsewhere (a line something rewrote) is found by the parse.
            None if memchr::memmem::find(line, b"\"_meta\"").is_some() => return None,
            None => None,
        };
        return Some(Shape {
            kind: Kind::Notification,
            id: None,
            session: Some(session),
            cancels: None,
            elicitation: None,
            cursor,
        });
    }
    let rest = line.strip_prefix(WITH_ID_HEAD)?;
    let id_len = plain_id_len(rest)?;
    let (id, after) = rest.split_at(id_len);
    // A request's params are in no fixed order: those (rare) lines are parsed.
    if after.starts_with(br#","result":"#) || after.starts_with(br#","error":"#) {
        let id = std::str::from_utf8(id).ok()?.to_owned();
        return Some(Shape {
            kind: Kind::Response,
            id: Some(id),
            session: None,
            cancels: None,
            elicitation: None,
            cursor: None,
        });
    }
    None
}

/// The length of the id at the start of `rest` when it is written as its key is: an integer
/// without sign or leading zero, or a string without escapes.
fn plain_id_len(rest: &[u8]) -> Option<usize> {
    match rest.first()? {
        b'"' => {
            let end = memchr::memchr2(b'"', b'\\', &rest[1..])? + 1;
            (rest[end] == b'"').then_some(end + 1)
        }
        b'0' => Some(1).filter(|_| !rest.get(1).is_some_and(u8::is_ascii_digit)),
        b'1'..=b'9' => {
            let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
            // Longer than any u64: the parse decides how it reads.
            (digits <= 19).then_some(digits)
        }
        _ => None,
    }
}

/// The parse's answer.
pub(crate) fn parsed(line: &str) -> Option<Shape> {
    let value = serde_json::from_str::<Value>(line).ok()?;
    Some(of_value(&value))
}

/// The shape of a parsed message.
pub(crate) fn of_value(message: &Value) -> Shape {
    let has_method = message.get("method").is_some();
    let id = message.get("id").map(Value::to_string);
    let kind = match (has_method, &id) {
        (true, Some(_)) => Kind::Request,
        (false, Some(_)) => Kind::Response,
        _ => Kind::Notification,
    };
    let params = message.get("params");
    let session = params.and_then(|p| p.get("sessionId")).and_then(Value::as_str).map(str::to_owned);
    let cancels = (message.get("method").and_then(Value::as_str) == Some("$/cancel_request"))
        .then(|| params.and_then(|p| p.get("requestId")).map(Value::to_string))
        .flatten();
    let elicitation = params.and_then(|p| p.get("elicitationId")).and_then(Value::as_str).map(str::to_owned);
    let cursor = (kind == Kind::Notification).then(|| cursor_of_params(params).map(str::to_owned)).flatten();
    Shape { kind, id, session, cancels, elicitation, cursor }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines as the agent writes them, and others: the fast path, when it answers, agrees with the
    /// parse.
    const LINES: &[&str] = &[
        r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s-1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"t1 "}}}}"#,
        r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s\"1","update":{}}}"#,
        r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"é","update":{}}}"#,
        r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"t1 "}},"_meta":{"acp/cursor":"42"}}}"#,
        r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"x":1,"_meta":{"acp/cursor":"5"}}}}"#,
        r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","_meta":{"acp/cursor":"7"},"update":{}}}"#,
        r#"{"jsonrpc":"2.0","id":7,"result":{"stopReason":"end_turn"}}"#,
        r#"{"jsonrpc":"2.0","id":0,"result":null}"#,
        r#"{"jsonrpc":"2.0","id":"abc","error":{"code":-32603,"message":"x"}}"#,
        r#"{"jsonrpc":"2.0","id":"a\"b","result":{}}"#,
        r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}"#,
        r#"{"jsonrpc":"2.0","id":-1,"result":{}}"#,
        r#"{"jsonrpc":"2.0","id":12345678901234567890123,"result":{}}"#,
        r#"{"jsonrpc":"2.0","id":3,"method":"session/request_permission","params":{"sessionId":"s","x":1}}"#,
        r#"{"jsonrpc":"2.0","method":"session/cancelled","params":{"sessionId":"s"}}"#,
        r#"{"jsonrpc":"2.0","id":7,"result":{} "#,
        "not json",
    ];

    #[test]
    fn the_fast_path_agrees_with_the_parse() {
        let mut fast_ones = 0;
        for line in LINES {
            if let Some(shape) = fast(line.as_bytes()) {
                fast_ones += 1;
                assert_eq!(Some(shape), parsed(line), "{line}");
            }
            assert_eq!(of(line), parsed(line), "{line}");
        }
        assert_eq!(fast_ones, 6, "the agent's own shapes take the fast path");
    }

    #[test]
    fn kinds_ids_and_sessions() {
        let update = of(LINES[0]).unwrap();
        assert_eq!((update.kind, update.id, update.session.as_deref()), (Kind::Notification, None, Some("s-1")));
        let stamped = of(LINES[3]).unwrap();
        assert_eq!((stamped.session.as_deref(), stamped.cursor.as_deref()), (Some("s"), Some("42")));
        assert_eq!(of(LINES[4]).unwrap().cursor, None, "a host's own `_meta` in the update is no cursor");
        assert_eq!(of(LINES[5]).unwrap().cursor.as_deref(), Some("7"));
        let answer = of(LINES[8]).unwrap();
        assert_eq!((answer.kind, answer.id.as_deref()), (Kind::Response, Some(r#""abc""#)));
        let request = of(LINES[13]).unwrap();
        assert_eq!(
            (request.kind, request.id.as_deref(), request.session.as_deref()),
            (Kind::Request, Some("3"), Some("s"))
        );
        assert_eq!(of("not json"), None);
    }
}
