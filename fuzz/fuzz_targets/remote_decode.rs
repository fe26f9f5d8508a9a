//! The remote transports' decoding (`acp_facade::fuzzing::{post_body, websocket_text}`): any
//! `Content-Type` and body, any WebSocket text, never panic; a POST is accepted only as a JSON
//! object under `application/json` and refused otherwise with the server's precise answer; a
//! WebSocket message always becomes exactly one line for the agent.
//!
//! Input: the `Content-Type` value up to the first newline, then the body (also taken, as lossy
//! UTF-8, as a WebSocket message).

#![no_main]

use acp_facade::fuzzing::{Refusal, WebSocketText, post_body, websocket_text};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &[u8]| {
    let (content_type, body) = match input.iter().position(|b| *b == b'\n') {
        Some(at) => (Some(&input[..at]), &input[at + 1..]),
        None => (None, input),
    };
    match post_body(content_type, body) {
        Ok(message) => {
            assert!(message.is_object(), "only an object is accepted");
            let declared = String::from_utf8_lossy(content_type.unwrap_or_default()).to_ascii_lowercase();
            assert!(declared.contains("application/json"), "accepted under {declared:?}");
        }
        Err(Refusal { status, reason, json_rpc }) => {
            assert!(status == 415 || status == 400, "status {status}");
            assert!(!reason.is_empty());
            assert!(!json_rpc || status == 400);
            if status == 400 && serde_json::from_slice::<serde_json::Value>(body).is_ok_and(|v| v.is_object()) {
                panic!("a JSON object under an accepted type was refused: {reason}");
            }
        }
    }
    let text = String::from_utf8_lossy(body);
    match websocket_text(&text) {
        WebSocketText::Json(value) => {
            let line = serde_json::to_string(&value).expect("a parsed value serialises");
            assert!(!line.contains('\n'), "compact JSON is one line");
        }
        WebSocketText::Text(line) => {
            assert!(!line.contains(['\n', '\r']), "text goes on as one line");
            assert!(serde_json::from_str::<serde_json::Value>(&text).is_err());
        }
    }
});
