//! Classifying one incoming line into a request, a notification or a response.
//!
//! Every malformed shape gets the precise JSON-RPC answer: not JSON → `-32700` with id `null`; not
//! a request object (an array, a number, a missing or wrong `jsonrpc`, an id that is neither
//! string, integer nor null, a non-string method) → `-32600`, carrying the id when it could be
//! read.
//!
//! Two paths, one result. The reference path parses the line into a [`serde_json::Value`] and
//! decides from that; it defines the behaviour, and every error answer comes from it. The fast path
//! takes a well-formed request, notification or successful response apart in one pass without
//! building a tree: it keeps the params (or the response's result) as their text ([`Params`]),
//! checked by `Strict` to be exactly what the reference path would have parsed without error, and
//! without duplicate keys, so that typed decoding straight from the text gives what decoding the
//! parsed value gives. (A client's answer to one of our requests is decoded once, into the
//! schema's type, instead of parsed into a tree first.)
//!
//! Invariant: the fast path returns a message only when the reference path would return the same
//! one; on anything unusual (an error of any kind, an `error` response, a message with both a
//! `method` and a `result`, a duplicate or escaped member name, an escaped `jsonrpc`, a line that
//! is not UTF-8) it gives up and the reference path decides.
//!
//! And writing the lines that go out: every JSON-RPC envelope byte the crate writes is written
//! here — requests, notifications and responses through one generic envelope, a successful
//! response's and a directly written notification's head and tail (the hot paths) by hand, with
//! the same bytes.

// Public (not `pub(crate)`) for the `fuzzing` feature, which re-exports what the fuzz targets and
// property tests drive directly; without it nothing outside the crate can reach this module.
#![cfg_attr(not(feature = "fuzzing"), allow(unreachable_pub))]

use serde::Serialize;
use serde::de::{self, DeserializeOwned, DeserializeSeed, Deserializer, MapAccess, Visitor};
use serde_json::Value;

use super::strict::{MEMBER_DEPTH, Strict};
use crate::acp::RequestId;
use crate::error::{Error, ErrorExt};

/// A request from the peer.
#[derive(Debug, Clone)]
pub struct IncomingRequest {
    /// The id to echo in the response.
    pub id: RequestId,
    /// The method name.
    pub method: String,
    /// The params (`null` when absent).
    pub params: Params,
}

/// A notification from the peer.
#[derive(Debug, Clone)]
pub struct IncomingNotification {
    /// The method name.
    pub method: String,
    /// The params (`null` when absent).
    pub params: Params,
}

/// The params of an incoming request or notification, or the result of an incoming response:
/// either their checked text (from the fast path of [`classify`]) or a parsed value. Both stand for
/// the same JSON value.
#[derive(Debug, Clone)]
pub struct Params(ParamsRepr);

#[derive(Debug, Clone)]
enum ParamsRepr {
    /// Text that parses into a [`Value`] without error and has no duplicate object keys.
    Checked(Box<str>),
    Parsed(Value),
}

impl Params {
    /// The params as a value (`Value::Null` when they were absent).
    ///
    /// # Panics
    ///
    /// Never: checked text always parses.
    pub fn into_value(self) -> Value {
        match self.0 {
            ParamsRepr::Parsed(value) => value,
            ParamsRepr::Checked(text) => serde_json::from_str(&text).expect("checked params parse into a value"),
        }
    }

    /// The params' text when it was checked by the fast path of [`classify`]: it parses into a
    /// [`Value`] without error and no object in it repeats a key, so a type decoded straight from
    /// it is what decoding [`Params::into_value`] gives (for types that do not capture raw text
    /// nor use 128-bit integers, which decode differently from text and from a value).
    pub fn checked_text(&self) -> Option<&str> {
        match &self.0 {
            ParamsRepr::Checked(text) => Some(text),
            ParamsRepr::Parsed(_) => None,
        }
    }

    /// `T` decoded straight from the [checked text](Params::checked_text): the same result as
    /// decoding [`Params::into_value`] for far less work. `None` when there is no checked text,
    /// when it is `null` (callers read an absent value their own way), or when it does not
    /// decode; the caller then decodes the value, so that what it accepts and the errors it
    /// reports are the value path's.
    pub fn decode_checked<T: DeserializeOwned>(&self) -> Option<T> {
        self.checked_text().filter(|text| *text != "null").and_then(|text| serde_json::from_str(text).ok())
    }
}

impl From<Value> for Params {
    fn from(value: Value) -> Self {
        Self(ParamsRepr::Parsed(value))
    }
}

/// One classified incoming message.
#[derive(Debug)]
pub enum Incoming {
    /// A request to answer.
    Request(IncomingRequest),
    /// A notification to apply.
    Notification(IncomingNotification),
    /// A response to one of our own requests.
    Response {
        /// The id of our request.
        id: RequestId,
        /// Its result or error.
        outcome: Result<Params, Error>,
    },
}

/// Why a line could not be classified, with the response it deserves.
#[derive(Debug)]
pub struct Malformed {
    /// The id to answer with (`null` when none could be read).
    pub id: RequestId,
    /// The error to answer with, or `None` when the line must not be answered (a malformed
    /// response: answering a response would start a loop between two confused peers).
    pub error: Option<Error>,
}

/// Classifies one line.
#[allow(clippy::result_large_err, reason = "built once per malformed line and answered at once")]
pub fn classify(line: &[u8]) -> Result<Incoming, Malformed> {
    match classify_fast(line) {
        Some(incoming) => Ok(incoming),
        None => classify_value(line),
    }
}

/// The reference path: decides from the parsed [`Value`].
#[allow(clippy::result_large_err, reason = "see `classify`")]
fn classify_value(line: &[u8]) -> Result<Incoming, Malformed> {
    let value: Value = serde_json::from_slice(line).map_err(|e| Malformed {
        id: RequestId::Null,
        error: Some(Error::parse_error().data(Value::String(e.to_string()))),
    })?;
    let Value::Object(mut object) = value else {
        return Err(invalid(RequestId::Null, "a JSON-RPC message must be an object"));
    };
    let id = match object.remove("id") {
        None => None,
        Some(raw) => {
            Some(parse_id(raw).ok_or_else(|| invalid(RequestId::Null, "`id` must be a string, an integer or null"))?)
        }
    };
    let answer_id = id.clone().unwrap_or(RequestId::Null);
    match object.get("jsonrpc") {
        Some(Value::String(v)) if v == "2.0" => {}
        _ => return Err(invalid(answer_id, "`jsonrpc` must be \"2.0\"")),
    }
    let params = Params::from(object.remove("params").unwrap_or(Value::Null));
    match object.remove("method") {
        Some(Value::String(method)) => Ok(match id {
            Some(id) => Incoming::Request(IncomingRequest { id, method, params }),
            None => Incoming::Notification(IncomingNotification { method, params }),
        }),
        Some(_) => Err(invalid(answer_id, "`method` must be a string")),
        None => classify_response(id, object),
    }
}

#[allow(clippy::result_large_err, reason = "see `classify`")]
fn classify_response(id: Option<RequestId>, mut object: serde_json::Map<String, Value>) -> Result<Incoming, Malformed> {
    let Some(id) = id else {
        return Err(invalid(RequestId::Null, "a request needs a `method`"));
    };
    let outcome = match (object.remove("result"), object.remove("error")) {
        (Some(result), None) => Ok(Params::from(result)),
        (None, Some(error)) => Err(serde_json::from_value::<Error>(error)
            .unwrap_or_else(|e| Error::internal_msg(format!("malformed error object: {e}")))),
        _ => {
            return Err(Malformed { id, error: None });
        }
    };
    Ok(Incoming::Response { id, outcome })
}

/// The fast path: a well-formed request or notification, or `None` to leave it to the reference
/// path (see the module doc).
fn classify_fast(line: &[u8]) -> Option<Incoming> {
    // A line that is not UTF-8 is not JSON either: the reference path answers it.
    let text = std::str::from_utf8(line).ok()?;
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let FastEnvelope { id, method, params, result } = EnvelopeVisitor { text }.deserialize(&mut deserializer).ok()?;
    deserializer.end().ok()?;
    let checked = |span: MemberSpan| Some(Params(ParamsRepr::Checked(span.text(text)?.into())));
    Some(match (method, result) {
        (Some(method), None) => {
            let params = match params {
                None => Params::from(Value::Null),
                Some(span) => checked(span)?,
            };
            match id {
                Some(id) => Incoming::Request(IncomingRequest { id, method, params }),
                None => Incoming::Notification(IncomingNotification { method, params }),
            }
        }
        // A response: the reference path ignores its params (checked all the same, above).
        (None, Some(result)) => Incoming::Response { id: id?, outcome: Ok(checked(result)?) },
        _ => return None,
    })
}

/// A message as the fast path reads it: `jsonrpc` is `"2.0"`, `method` (when present) a string,
/// `id` (when present) a string, an integer or null; no `error`; no member twice; no member name
/// written with escapes; every other member, the params and the result pass [`Strict`].
struct FastEnvelope {
    id: Option<RequestId>,
    method: Option<String>,
    params: Option<MemberSpan>,
    result: Option<MemberSpan>,
}

/// Where a member's value (the params, a result) is in the line: serde gives no positions, but the
/// member names it borrows from the text carry theirs, and between a name and its value, or a
/// value and the next name or the closing brace, JSON allows nothing but whitespace, one `:` or
/// `,`.
#[derive(Clone, Copy)]
struct MemberSpan {
    /// Just after the member name's closing quote.
    after_name: usize,
    /// The opening quote of the next member's name; `None` when the member is the last.
    next_name: Option<usize>,
}

impl MemberSpan {
    /// The value's text in `line`, the message it was found in.
    fn text(self, line: &str) -> Option<&str> {
        const SPACE: &[char] = &[' ', '\t', '\n', '\r'];
        let value = line.get(self.after_name..)?.trim_start_matches(SPACE).strip_prefix(':')?.trim_start_matches(SPACE);
        let rest = match self.next_name {
            Some(next) => line.get(..next)?.trim_end_matches(SPACE).strip_suffix(',')?,
            None => line.trim_end_matches(SPACE).strip_suffix('}')?,
        };
        let end = rest.trim_end_matches(SPACE).len();
        let start = line.len() - value.len();
        line.get(start..end)
    }
}

/// The envelope members the fast path tells apart.
enum Member {
    Jsonrpc,
    Id,
    Method,
    Params,
    Result,
    /// `error`: an error response, left to the reference path.
    Error,
    Other,
}

/// A member name, borrowed from the text (a name written with escapes is refused).
struct MemberName;

impl<'de> DeserializeSeed<'de> for MemberName {
    type Value = (Member, &'de str);

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for MemberName {
    type Value = (Member, &'de str);

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a member name without escapes")
    }

    fn visit_borrowed_str<E>(self, name: &'de str) -> Result<Self::Value, E> {
        let member = match name {
            "jsonrpc" => Member::Jsonrpc,
            "id" => Member::Id,
            "method" => Member::Method,
            "params" => Member::Params,
            "result" => Member::Result,
            "error" => Member::Error,
            _ => Member::Other,
        };
        Ok((member, name))
    }
}

/// Reads the envelope out of `text`, the whole message.
struct EnvelopeVisitor<'de> {
    text: &'de str,
}

impl EnvelopeVisitor<'_> {
    /// Where `name`, borrowed from the text, starts in it.
    fn offset(&self, name: &str) -> usize {
        name.as_ptr().addr() - self.text.as_ptr().addr()
    }
}

impl<'de> DeserializeSeed<'de> for EnvelopeVisitor<'de> {
    type Value = FastEnvelope;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for EnvelopeVisitor<'de> {
    type Value = FastEnvelope;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON-RPC request, notification or response")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<FastEnvelope, A::Error> {
        let refuse = || de::Error::custom("left to the reference path");
        let (mut version, mut id, mut method) = (false, None, None);
        let (mut params, mut result) = (None::<MemberSpan>, None::<MemberSpan>);
        while let Some((member, name)) = map.next_key_seed(MemberName)? {
            // The member after the params (or the result) ends them: at its name's opening quote.
            for span in [params.as_mut(), result.as_mut()].into_iter().flatten() {
                if span.next_name.is_none() {
                    span.next_name = Some(self.offset(name) - 1);
                }
            }
            let span = || MemberSpan { after_name: self.offset(name) + name.len() + 1, next_name: None };
            match member {
                Member::Jsonrpc if !version => {
                    if map.next_value::<&str>()? != "2.0" {
                        return Err(refuse());
                    }
                    version = true;
                }
                Member::Id if id.is_none() => id = Some(map.next_value_seed(IdSeed)?),
                Member::Method if method.is_none() => method = Some(map.next_value::<String>()?),
                Member::Params if params.is_none() => {
                    map.next_value_seed(Strict { depth: MEMBER_DEPTH })?;
                    params = Some(span());
                }
                Member::Result if result.is_none() => {
                    map.next_value_seed(Strict { depth: MEMBER_DEPTH })?;
                    result = Some(span());
                }
                Member::Other => map.next_value_seed(Strict { depth: MEMBER_DEPTH })?,
                _ => return Err(refuse()),
            }
        }
        if !version {
            return Err(refuse());
        }
        Ok(FastEnvelope { id, method, params, result })
    }
}

/// An `id` exactly as [`parse_id`] takes it from a [`Value`]: null, a string, or a number that
/// fits an `i64` (not a float).
struct IdSeed;

impl<'de> DeserializeSeed<'de> for IdSeed {
    type Value = RequestId;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<RequestId, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl Visitor<'_> for IdSeed {
    type Value = RequestId;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a string, an integer or null")
    }

    fn visit_unit<E>(self) -> Result<RequestId, E> {
        Ok(RequestId::Null)
    }

    fn visit_i64<E>(self, n: i64) -> Result<RequestId, E> {
        Ok(RequestId::Number(n))
    }

    fn visit_u64<E: de::Error>(self, n: u64) -> Result<RequestId, E> {
        i64::try_from(n).map(RequestId::Number).map_err(E::custom)
    }

    fn visit_str<E>(self, s: &str) -> Result<RequestId, E> {
        Ok(RequestId::Str(s.to_owned()))
    }
}

fn parse_id(raw: Value) -> Option<RequestId> {
    match raw {
        Value::Null => Some(RequestId::Null),
        Value::String(s) => Some(RequestId::Str(s)),
        Value::Number(n) => n.as_i64().map(RequestId::Number),
        _ => None,
    }
}

fn invalid(id: RequestId, message: &str) -> Malformed {
    Malformed { id, error: Some(Error::invalid_request_msg(message)) }
}

/// An outgoing request, notification or response, serialised straight from borrowed parts.
#[derive(Serialize)]
struct Envelope<'a, P: Serialize> {
    jsonrpc: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<&'a RequestId>,
    #[serde(skip_serializing_if = "Option::is_none")]
    method: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    params: Option<&'a P>,
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a Error>,
}

fn line<P: Serialize>(envelope: &Envelope<'_, P>) -> Vec<u8> {
    let mut out = Vec::with_capacity(256);
    // Serialising our own types into a Vec cannot fail: every map key is a string.
    if serde_json::to_writer(&mut out, envelope).is_err() {
        out.clear();
        out.extend_from_slice(br#"{"jsonrpc":"2.0","method":"$/serialization_failed"}"#);
    }
    out.push(b'\n');
    out
}

/// The start of a notification line up to its params, `{"jsonrpc":"2.0","method":"<method>","params":`,
/// in a buffer with room for `rest` more bytes: for the lines a caller writes directly, params
/// included (the agent's most frequent `session/update`s), so that the envelope's bytes are still
/// written here. Such a line ends with [`notification_tail`]; it must be byte-identical to the
/// [`notification_line`] of the same params (the caller's tests hold it to that).
pub(crate) fn notification_head(method: &str, rest: usize) -> Vec<u8> {
    const START: &[u8] = br#"{"jsonrpc":"2.0","method":"#;
    const PARAMS: &[u8] = br#","params":"#;
    let mut head = Vec::with_capacity(START.len() + method.len() + 2 + PARAMS.len() + rest);
    head.extend_from_slice(START);
    // Writing a &str into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut head, method);
    head.extend_from_slice(PARAMS);
    head
}

/// What closes a notification line after its params: the envelope's brace, the line's newline.
const NOTIFICATION_END: &[u8] = b"}\n";

/// The last bytes of a directly written notification line (see [`notification_head`]):
/// `params_end`, the end of its params, then what closes the envelope and the line — one
/// constant, so that the line's last bytes are copied at once. `N` is `params_end.len() + 2`,
/// checked where the constant is evaluated.
pub(crate) const fn notification_tail<const N: usize>(params_end: &[u8]) -> [u8; N] {
    assert!(N == params_end.len() + NOTIFICATION_END.len(), "N is the length of the params' end + 2");
    let mut tail = [0u8; N];
    let mut i = 0;
    while i < params_end.len() {
        tail[i] = params_end[i];
        i += 1;
    }
    let mut j = 0;
    while j < NOTIFICATION_END.len() {
        tail[i + j] = NOTIFICATION_END[j];
        j += 1;
    }
    tail
}

/// One line holding a notification.
pub(crate) fn notification_line<P: Serialize>(method: &str, params: &P) -> Vec<u8> {
    line(&Envelope { jsonrpc: "2.0", id: None, method: Some(method), params: Some(params), result: None, error: None })
}

/// One line holding a request.
pub(crate) fn request_line<P: Serialize>(id: &RequestId, method: &str, params: &P) -> Vec<u8> {
    line(&Envelope {
        jsonrpc: "2.0",
        id: Some(id),
        method: Some(method),
        params: Some(params),
        result: None,
        error: None,
    })
}

/// What a request's handler answers with: a value, or JSON already serialised from a typed
/// response (no tree built). Both are written the same way.
#[derive(Debug, Clone)]
pub(crate) struct Answer(AnswerRepr);

#[derive(Debug, Clone)]
enum AnswerRepr {
    Value(Value),
    /// Text written by `serde_json` for one value.
    Json(String),
}

impl Answer {
    /// Serialises `value` straight to JSON text.
    ///
    /// The bytes are those of serialising `serde_json::to_value(value)`, provided the type's
    /// serialisation does not depend on going through a [`Value`]: no flattened fields that could
    /// repeat a key, no raw JSON fields, no map keys that are not strings. Use it for such types
    /// only (e.g. a plain response struct); [`Answer::from`] a [`Value`] fits everything.
    pub(crate) fn serialize<T: Serialize>(value: &T) -> Result<Self, serde_json::Error> {
        serde_json::to_string(value).map(|json| Self(AnswerRepr::Json(json)))
    }
}

impl Answer {
    /// An answer already written as JSON text: the bytes `serde_json` writes for one value
    /// (written directly by a hot path, which a test holds to those bytes).
    pub(crate) fn from_json(json: String) -> Self {
        Self(AnswerRepr::Json(json))
    }

    /// The answer as a value (for rewriting it).
    pub(crate) fn into_value(self) -> Value {
        match self.0 {
            AnswerRepr::Value(value) => value,
            AnswerRepr::Json(json) => serde_json::from_str(&json).unwrap_or(Value::Null),
        }
    }
}

impl From<Value> for Answer {
    fn from(value: Value) -> Self {
        Self(AnswerRepr::Value(value))
    }
}

/// One line holding a response.
///
/// A result is written directly — the same bytes as serialising the response envelope — since one
/// is written for every request; an error goes through the generic envelope.
pub(crate) fn response_line(id: &RequestId, outcome: &Result<Answer, Error>) -> Vec<u8> {
    const HEAD: &[u8] = br#"{"jsonrpc":"2.0","id":"#;
    const RESULT: &[u8] = br#","result":"#;
    let answer = match outcome {
        Ok(answer) => answer,
        Err(error) => {
            return line::<()>(&Envelope {
                jsonrpc: "2.0",
                id: Some(id),
                method: None,
                params: None,
                result: None,
                error: Some(error),
            });
        }
    };
    let json_len = match &answer.0 {
        AnswerRepr::Json(json) => json.len(),
        AnswerRepr::Value(_) => 64,
    };
    let mut out = Vec::with_capacity(HEAD.len() + 24 + RESULT.len() + json_len + 2);
    out.extend_from_slice(HEAD);
    // Serialising an id or a value into a Vec cannot fail: every map key is a string.
    let written = serde_json::to_writer(&mut out, id).and_then(|()| {
        out.extend_from_slice(RESULT);
        match &answer.0 {
            AnswerRepr::Json(json) => {
                out.extend_from_slice(json.as_bytes());
                Ok(())
            }
            AnswerRepr::Value(value) => serde_json::to_writer(&mut out, value),
        }
    });
    if written.is_err() {
        out.clear();
        out.extend_from_slice(br#"{"jsonrpc":"2.0","method":"$/serialization_failed"}"#);
        out.push(b'\n');
        return out;
    }
    out.extend_from_slice(b"}\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(line: &str) -> (RequestId, i32) {
        let m = classify(line.as_bytes()).expect_err("must be malformed");
        (m.id, m.error.expect("answered").code.into())
    }

    #[test]
    fn malformed_shapes_get_precise_codes() {
        assert_eq!(code("{nope"), (RequestId::Null, -32700));
        assert_eq!(code("[1,2]"), (RequestId::Null, -32600));
        assert_eq!(code("42"), (RequestId::Null, -32600));
        assert_eq!(code(r#"{"id":1,"method":"x"}"#), (RequestId::Number(1), -32600));
        assert_eq!(code(r#"{"jsonrpc":"1.0","id":"a","method":"x"}"#), (RequestId::Str("a".into()), -32600));
        assert_eq!(code(r#"{"jsonrpc":"2.0","id":1.5,"method":"x"}"#), (RequestId::Null, -32600));
        assert_eq!(code(r#"{"jsonrpc":"2.0","id":{},"method":"x"}"#), (RequestId::Null, -32600));
        assert_eq!(code(r#"{"jsonrpc":"2.0","id":3,"method":7}"#), (RequestId::Number(3), -32600));
    }

    #[test]
    fn classifies_requests_notifications_and_responses() {
        assert!(matches!(
            classify(br#"{"jsonrpc":"2.0","id":"x","method":"m","params":{}}"#),
            Ok(Incoming::Request(_))
        ));
        assert!(matches!(classify(br#"{"jsonrpc":"2.0","method":"m"}"#), Ok(Incoming::Notification(_))));
        assert!(matches!(
            classify(br#"{"jsonrpc":"2.0","id":4,"result":null}"#),
            Ok(Incoming::Response { outcome: Ok(result), .. }) if result.checked_text() == Some("null")
        ));
        assert!(matches!(
            classify(br#"{"jsonrpc":"2.0","id":4,"error":{"code":-32800,"message":"c"}}"#),
            Ok(Incoming::Response { outcome: Err(_), .. })
        ));
    }

    #[test]
    fn lines_are_compact_and_terminated() {
        let l = response_line(&RequestId::Number(1), &Ok(serde_json::json!({"a": "b\nc"}).into()));
        assert_eq!(l, b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"a\":\"b\\nc\"}}\n");
    }

    #[test]
    fn a_directly_written_notification_equals_the_generic_envelope() {
        for method in ["session/update", "a\"b/c", ""] {
            let params = serde_json::json!({"k": [1, "v"]});
            let mut line = notification_head(method, 0);
            line.extend_from_slice(br#"{"k":[1,"v"]"#);
            line.extend_from_slice(&notification_tail::<3>(b"}"));
            assert_eq!(
                String::from_utf8(line).unwrap(),
                String::from_utf8(notification_line(method, &params)).unwrap()
            );
        }
    }

    /// The generic envelope, which the direct response line must equal byte for byte.
    fn generic_response(id: &RequestId, outcome: &Result<Value, Error>) -> Vec<u8> {
        let (result, error) = match outcome {
            Ok(result) => (Some(result), None),
            Err(error) => (None, Some(error)),
        };
        line::<()>(&Envelope { jsonrpc: "2.0", id: Some(id), method: None, params: None, result, error })
    }

    #[test]
    fn direct_response_lines_equal_the_generic_envelope() {
        let typed = crate::acp::PromptResponse::new(crate::acp::StopReason::EndTurn);
        let ids = [RequestId::Number(-7), RequestId::Str("a\"b\u{1}".into()), RequestId::Null];
        for id in &ids {
            for value in
                [serde_json::json!({"x": [1, 2.5, "\u{2028}"], "y": null}), Value::Null, serde_json::json!("s")]
            {
                assert_eq!(response_line(id, &Ok(value.clone().into())), generic_response(id, &Ok(value)));
            }
            let answer = Answer::serialize(&typed).unwrap();
            assert_eq!(
                response_line(id, &Ok(answer)),
                generic_response(id, &Ok(serde_json::to_value(&typed).unwrap()))
            );
            let error = Error::invalid_params_msg("bad");
            assert_eq!(response_line(id, &Err(error.clone())), generic_response(id, &Err(error)));
        }
    }

    /// Everything observable about a classification, for comparing the two paths.
    fn observe(result: Result<Incoming, Malformed>) -> String {
        match result {
            Ok(Incoming::Request(r)) => format!("request {:?} {:?} {}", r.id, r.method, r.params.into_value()),
            Ok(Incoming::Notification(n)) => format!("notification {:?} {}", n.method, n.params.into_value()),
            Ok(Incoming::Response { id, outcome }) => {
                format!("response {id:?} {:?}", outcome.map(Params::into_value).map_err(|e| e.to_string()))
            }
            Err(Malformed { id, error }) => {
                let error = error.map(|e| (i32::from(e.code), e.message, e.data));
                format!("malformed {id:?} {error:?}")
            }
        }
    }

    mod equivalence {
        use proptest::prelude::*;

        use super::*;

        /// JSON-ish text, valid or not, rich in the shapes where the two paths could part.
        fn value() -> impl Strategy<Value = String> {
            let leaf = prop_oneof![
                6 => prop_oneof![
                    Just("null".to_owned()),
                    Just("true".to_owned()),
                    Just("-0".to_owned()),
                    Just("1.5".to_owned()),
                    Just("18446744073709551616".to_owned()),
                    Just(r#""\ud83d\ude00""#.to_owned()),
                    Just(r#""a\nb\u0041""#.to_owned()),
                    "[a-z]{0,3}".prop_map(|s| format!("{s:?}")),
                    any::<i64>().prop_map(|n| n.to_string()),
                ],
                1 => prop_oneof![
                    Just("1e400".to_owned()),
                    Just(r#""\ud800""#.to_owned()),
                    Just("\"\u{1}\"".to_owned()),
                    Just("[1,]".to_owned()),
                    Just(format!("{}{}", "[".repeat(125), "]".repeat(125))),
                    Just(format!("{}{}", "[".repeat(126), "]".repeat(126))),
                    Just(format!("{}{}", "[".repeat(127), "]".repeat(127))),
                ],
            ];
            leaf.prop_recursive(3, 16, 4, |inner| {
                prop_oneof![
                    prop::collection::vec(inner.clone(), 0..4).prop_map(|items| format!("[{}]", items.join(","))),
                    prop::collection::vec(
                        (prop_oneof![Just("a"), Just("b"), Just("\\u0061"), Just("type")], inner),
                        0..4
                    )
                    .prop_map(|members| {
                        let members: Vec<String> = members.iter().map(|(k, v)| format!("\"{k}\":{v}")).collect();
                        format!("{{{}}}", members.join(","))
                    }),
                ]
            })
        }

        fn member() -> impl Strategy<Value = String> {
            prop_oneof![
                3 => Just(r#""jsonrpc":"2.0""#.to_owned()),
                1 => prop_oneof![Just(r#""jsonrpc":"2\u002e0""#), Just(r#""jsonrpc":"1.0""#), Just(r#""jsonrpc":2"#)]
                    .prop_map(str::to_owned),
                3 => prop_oneof![Just("1"), Just("-5"), Just(r#""x""#), Just("null"), Just("1.5"), Just("{}"), Just("true"),
                        Just("18446744073709551615"), Just(r#""\u0041""#), Just("[1]")]
                    .prop_map(|id| format!(r#""id":{id}"#)),
                3 => prop_oneof![Just(r#""m""#), Just(r#""session/prompt""#), Just("5"), Just("null"), Just(r#""\u0073""#)]
                    .prop_map(|m| format!(r#""method":{m}"#)),
                3 => value().prop_map(|v| format!(r#""params":{v}"#)),
                1 => value().prop_map(|v| format!(r#""result":{v}"#)),
                1 => Just(r#""error":{"code":-32600,"message":"m"}"#.to_owned()),
                1 => value().prop_map(|v| format!(r#""{}":{v}"#, "extra")),
                1 => value().prop_map(|v| format!(r#""\u0069d":{v}"#)),
            ]
        }

        /// A request or notification, mostly well formed, its members in any order.
        fn request() -> impl Strategy<Value = String> {
            let id = prop_oneof![
                4 => any::<i64>().prop_map(|n| Some(n.to_string())),
                2 => "[a-z]{0,3}".prop_map(|s| Some(format!("{s:?}"))),
                2 => Just(None),
                1 => prop_oneof![Just("null"), Just("1.5"), Just("18446744073709551615"), Just(r#""\u0041""#)]
                    .prop_map(|id| Some(id.to_owned())),
            ];
            let params = prop::option::weighted(0.9, value());
            let extra = prop::collection::vec(member(), 0..2);
            let space = prop_oneof![Just(""), Just(" "), Just("\t\r\n ")];
            (id, params, extra, any::<prop::sample::Index>(), space).prop_map(|(id, params, extra, at, space)| {
                let mut members = vec![r#""jsonrpc":"2.0""#.to_owned(), r#""method":"session/prompt""#.to_owned()];
                members.extend(id.map(|id| format!(r#""id":{id}"#)));
                members.extend(params.map(|p| format!(r#""params":{p}"#)));
                object(members, extra, at, space)
            })
        }

        /// An object of `members` with `extra` ones inserted and all rotated (both at places
        /// `at` picks), `space` around every separator.
        fn object(mut members: Vec<String>, extra: Vec<String>, at: prop::sample::Index, space: &str) -> String {
            for member in extra {
                members.insert(at.index(members.len() + 1), member);
            }
            let rotate = at.index(members.len());
            members.rotate_left(rotate);
            let members: Vec<String> =
                members.iter().map(|m| m.replacen(':', &format!("{space}:{space}"), 1)).collect();
            format!("{space}{{{space}{}{space}}}{space}", members.join(&format!("{space},{space}")))
        }

        /// A response with a result, mostly well formed, its members in any order.
        fn response() -> impl Strategy<Value = String> {
            let id = prop_oneof![
                4 => any::<i64>().prop_map(|n| Some(n.to_string())),
                1 => "[a-z]{0,3}".prop_map(|s| Some(format!("{s:?}"))),
                1 => Just(None),
                1 => prop_oneof![Just("null"), Just("1.5"), Just(r#""\u0041""#)].prop_map(|id| Some(id.to_owned())),
            ];
            let extra = prop::collection::vec(member(), 0..2);
            let space = prop_oneof![Just(""), Just(" "), Just("\t\r\n ")];
            (id, value(), extra, any::<prop::sample::Index>(), space).prop_map(|(id, result, extra, at, space)| {
                let mut members = vec![r#""jsonrpc":"2.0""#.to_owned(), format!(r#""result":{result}"#)];
                members.extend(id.map(|id| format!(r#""id":{id}"#)));
                object(members, extra, at, space)
            })
        }

        fn line() -> impl Strategy<Value = String> {
            prop_oneof![
                8 => request(),
                4 => response(),
                4 => prop::collection::vec(member(), 0..6).prop_map(|members| format!(" {{ {} }} ", members.join(" , "))),
                1 => value(),
                1 => (prop::collection::vec(member(), 1..5), any::<prop::sample::Index>()).prop_map(|(members, cut)| {
                    let line = format!("{{{}}}", members.join(","));
                    let cut = cut.index(line.len());
                    line.get(..cut).unwrap_or(&line).to_owned()
                }),
            ]
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(2000))]

            #[test]
            fn the_fast_path_decides_exactly_like_the_reference_path(line in line()) {
                prop_assert_eq!(observe(classify(line.as_bytes())), observe(classify_value(line.as_bytes())));
            }
        }
    }

    #[test]
    fn everyday_messages_take_the_fast_path() {
        for line in [
            r#"{"jsonrpc":"2.0","id":7,"method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":"hi\n"}]}}"#,
            r#"{"jsonrpc": "2.0", "id": "a", "method": "initialize", "params": {"protocolVersion": 1, "clientCapabilities": {}}}"#,
            r#"{"method":"session/cancel","params":{"sessionId":"s"},"jsonrpc":"2.0"}"#,
            r#"{"jsonrpc":"2.0","id":null,"method":"m"}"#,
            r#"{"jsonrpc":"2.0","id":3,"result":{"content":"line one\nline two"}}"#,
            r#"{"result": null, "id": 4, "jsonrpc": "2.0"}"#,
            r#"{"jsonrpc":"2.0","id":5,"result":{"terminalId":"t1"},"_meta":{}}"#,
        ] {
            assert!(classify_fast(line.as_bytes()).is_some(), "{line}");
        }
    }

    #[test]
    fn a_response_keeps_its_result_as_checked_text() {
        let Some(Incoming::Response { id, outcome: Ok(result) }) =
            classify_fast(br#"{"jsonrpc":"2.0","id":3,"result" : {"content":"a\"b"} ,"x":1}"#)
        else {
            panic!("a response with a result takes the fast path");
        };
        assert_eq!(id, RequestId::Number(3));
        assert_eq!(result.checked_text(), Some(r#"{"content":"a\"b"}"#));
        // Left to the reference path: an error response, a message with both a method and a
        // result, a response without an id, a result given twice.
        for line in [
            r#"{"jsonrpc":"2.0","id":3,"error":{"code":-32603,"message":"m"}}"#,
            r#"{"jsonrpc":"2.0","id":3,"method":"m","result":{}}"#,
            r#"{"jsonrpc":"2.0","result":{}}"#,
            r#"{"jsonrpc":"2.0","id":3,"result":{},"result":{}}"#,
        ] {
            assert!(classify_fast(line.as_bytes()).is_none(), "{line}");
        }
    }
}
