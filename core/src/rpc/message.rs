//! Classifying one incoming line into a request, a notification or a response.
//!
//! Decoding is done on a [`serde_json::Value`] so that every malformed shape gets the precise
//! JSON-RPC answer: not JSON → `-32700` with id `null`; not a request object (an array, a number, a
//! missing or wrong `jsonrpc`, an id that is neither string, integer nor null, a non-string method)
//! → `-32600`, carrying the id when it could be read.

use serde::Serialize;
use serde_json::Value;

use crate::acp::RequestId;
use crate::error::{Error, ErrorExt};

/// A request from the peer.
#[derive(Debug, Clone)]
pub struct IncomingRequest {
    /// The id to echo in the response.
    pub id: RequestId,
    /// The method name.
    pub method: String,
    /// The params, `Value::Null` when absent.
    pub params: Value,
}

/// A notification from the peer.
#[derive(Debug, Clone)]
pub struct IncomingNotification {
    /// The method name.
    pub method: String,
    /// The params, `Value::Null` when absent.
    pub params: Value,
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
        outcome: Result<Value, Error>,
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
    let params = object.remove("params").unwrap_or(Value::Null);
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
        (Some(result), None) => Ok(result),
        (None, Some(error)) => Err(serde_json::from_value::<Error>(error)
            .unwrap_or_else(|e| Error::internal_msg(format!("malformed error object: {e}")))),
        _ => {
            return Err(Malformed { id, error: None });
        }
    };
    Ok(Incoming::Response { id, outcome })
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

/// One line holding a notification.
pub fn notification_line<P: Serialize>(method: &str, params: &P) -> Vec<u8> {
    line(&Envelope { jsonrpc: "2.0", id: None, method: Some(method), params: Some(params), result: None, error: None })
}

/// One line holding a request.
pub fn request_line<P: Serialize>(id: &RequestId, method: &str, params: &P) -> Vec<u8> {
    line(&Envelope {
        jsonrpc: "2.0",
        id: Some(id),
        method: Some(method),
        params: Some(params),
        result: None,
        error: None,
    })
}

/// One line holding a response.
pub fn response_line(id: &RequestId, outcome: &Result<Value, Error>) -> Vec<u8> {
    let (result, error) = match outcome {
        Ok(result) => (Some(result), None),
        Err(error) => (None, Some(error)),
    };
    line::<()>(&Envelope { jsonrpc: "2.0", id: Some(id), method: None, params: None, result, error })
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
            Ok(Incoming::Response { outcome: Ok(Value::Null), .. })
        ));
        assert!(matches!(
            classify(br#"{"jsonrpc":"2.0","id":4,"error":{"code":-32800,"message":"c"}}"#),
            Ok(Incoming::Response { outcome: Err(_), .. })
        ));
    }

    #[test]
    fn lines_are_compact_and_terminated() {
        let l = response_line(&RequestId::Number(1), &Ok(serde_json::json!({"a": "b\nc"})));
        assert_eq!(l, b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"a\":\"b\\nc\"}}\n");
    }
}
