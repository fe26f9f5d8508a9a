//! Decoding what a client sends, before any of it reaches an agent: a POST's body (its
//! `Content-Type` and its JSON) and a WebSocket text message. No socket needed, so the fuzz
//! target `remote_decode` drives exactly what the server runs.
//!
//! Invariants: a POST body is accepted only as one JSON object under `application/json` (any
//! parameters); everything else is refused with the status and reason the server answers
//! ([`Refusal`]); a WebSocket message becomes exactly one line for the agent (JSON re-serialised
//! compactly, other text with its line breaks replaced), never panicking on any input.

use serde_json::Value;

/// Why a POST body is refused: the HTTP status, and the text or JSON-RPC error the server sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refusal {
    /// `415` (not JSON) or `400`.
    pub status: u16,
    /// The plain-text reason (for a batch, the JSON-RPC error's message).
    pub reason: &'static str,
    /// Whether the answer is a JSON-RPC error (`-32600`) rather than plain text.
    pub json_rpc: bool,
}

impl Refusal {
    const fn text(status: u16, reason: &'static str) -> Self {
        Self { status, reason, json_rpc: false }
    }
}

/// A POST's message, from its `Content-Type` header (if any) and its body.
///
/// # Errors
/// The [`Refusal`] the server answers with: `415` unless the type is `application/json`, `400`
/// for a body that is not JSON, a batch (a JSON-RPC error) or not an object.
pub fn post_body(content_type: Option<&[u8]>, body: &[u8]) -> Result<Value, Refusal> {
    let json_body = content_type
        .and_then(|v| std::str::from_utf8(v).ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/json"));
    if !json_body {
        return Err(Refusal::text(415, "Unsupported Media Type"));
    }
    let Ok(message) = serde_json::from_slice::<Value>(body) else {
        return Err(Refusal::text(400, "Invalid JSON"));
    };
    if message.is_array() {
        return Err(Refusal { status: 400, reason: "JSON-RPC batches are not supported", json_rpc: true });
    }
    if !message.is_object() {
        return Err(Refusal::text(400, "Invalid JSON-RPC message"));
    }
    Ok(message)
}

/// What a WebSocket text message is for the agent: JSON, or text it answers with a parse error.
#[derive(Debug, Clone, PartialEq)]
pub enum WebSocketText {
    /// A JSON value, handed on re-serialised as one line.
    Json(Value),
    /// Not JSON: handed on as this one line (line breaks replaced by spaces).
    Text(String),
}

/// A WebSocket text message, decoded.
#[must_use]
pub fn websocket_text(text: &str) -> WebSocketText {
    match serde_json::from_str::<Value>(text) {
        Ok(message) => WebSocketText::Json(message),
        Err(_) => WebSocketText::Text(text.replace(['\r', '\n'], " ")),
    }
}
