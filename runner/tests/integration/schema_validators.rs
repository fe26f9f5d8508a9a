//! The validators of `common/schema.rs` themselves: what they read from the generated schemas
//! (schema/v1/schema.json, schema/v2/schema.json) is what the agent may send, and a violation
//! fails.

use std::collections::{BTreeMap, HashMap};

use serde_json::{Value, json};

use crate::common::schema;

fn sorted(table: &HashMap<String, String>) -> BTreeMap<&str, &str> {
    table.iter().map(|(method, def)| (method.as_str(), def.as_str())).collect()
}

/// The v1 methods an agent may send, read from the schema: a regenerated schema that drops or
/// renames one fails here, not as an "unexpected request" deep inside some other test.
#[test]
fn v1_agent_methods_are_read_from_the_schema() {
    let methods = schema::agent_methods();
    assert_eq!(
        sorted(methods.requests),
        BTreeMap::from([
            ("elicitation/create", "CreateElicitationRequest"),
            ("fs/read_text_file", "ReadTextFileRequest"),
            ("fs/write_text_file", "WriteTextFileRequest"),
            ("session/request_permission", "RequestPermissionRequest"),
            ("terminal/create", "CreateTerminalRequest"),
            ("terminal/kill", "KillTerminalRequest"),
            ("terminal/output", "TerminalOutputRequest"),
            ("terminal/release", "ReleaseTerminalRequest"),
            ("terminal/wait_for_exit", "WaitForTerminalExitRequest"),
        ])
    );
    assert_eq!(
        sorted(methods.notifications),
        BTreeMap::from([
            ("$/cancel_request", "CancelRequestNotification"),
            ("elicitation/complete", "CompleteElicitationNotification"),
            ("session/update", "SessionNotification"),
        ])
    );
    assert_eq!(
        sorted(methods.responses),
        BTreeMap::from([
            ("authenticate", "AuthenticateResponse"),
            ("initialize", "InitializeResponse"),
            ("logout", "LogoutResponse"),
            ("session/close", "CloseSessionResponse"),
            ("session/delete", "DeleteSessionResponse"),
            ("session/list", "ListSessionsResponse"),
            ("session/load", "LoadSessionResponse"),
            ("session/new", "NewSessionResponse"),
            ("session/prompt", "PromptResponse"),
            ("session/resume", "ResumeSessionResponse"),
            ("session/set_config_option", "SetSessionConfigOptionResponse"),
            ("session/set_mode", "SetSessionModeResponse"),
        ])
    );
}

#[test]
fn v2_agent_methods_are_read_from_the_schema() {
    let methods = schema::agent_methods_v2();
    assert_eq!(methods.notifications.get("session/update").map(String::as_str), Some("UpdateSessionNotification"));
    assert_eq!(methods.notifications.get("$/cancel_request").map(String::as_str), Some("CancelRequestNotification"));
    assert_eq!(
        methods.requests.get("session/request_permission").map(String::as_str),
        Some("RequestPermissionRequest")
    );
    assert_eq!(methods.responses.get("session/prompt").map(String::as_str), Some("PromptResponse"));
    assert_eq!(methods.responses.get("auth/login").map(String::as_str), Some("LoginAuthResponse"));
}

fn chunk(update: &Value) -> Value {
    json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s1", "update": update}})
}

fn v1_accepts(message: &Value, sent: &[(&str, &str)]) -> bool {
    accepts(schema::validate_agent_message, message, sent)
}

fn v2_accepts(message: &Value, sent: &[(&str, &str)]) -> bool {
    accepts(schema::validate_agent_message_v2, message, sent)
}

type Validate = fn(&Value, &HashMap<String, String>, &mut HashMap<String, String>);

fn accepts(validate: Validate, message: &Value, sent: &[(&str, &str)]) -> bool {
    let sent: HashMap<String, String> = sent.iter().map(|(id, m)| ((*id).to_owned(), (*m).to_owned())).collect();
    let message = message.clone();
    std::panic::catch_unwind(move || validate(&message, &sent, &mut HashMap::new())).is_ok()
}

#[test]
fn the_v1_validator_accepts_v1_and_rejects_violations() {
    let text = json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi"}});
    assert!(v1_accepts(&chunk(&text), &[]));
    assert!(!v1_accepts(&chunk(&json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text"}})), &[]));
    assert!(v1_accepts(
        &json!({"jsonrpc": "2.0", "id": 1, "result": {"stopReason": "end_turn"}}),
        &[("1", "session/prompt")]
    ));
    assert!(!v1_accepts(
        &json!({"jsonrpc": "2.0", "id": 1, "result": {"stopReason": "done"}}),
        &[("1", "session/prompt")]
    ));
    assert!(!v1_accepts(&json!({"jsonrpc": "2.0", "id": 1, "error": {"code": "x", "message": "m"}}), &[]));
    assert!(!v1_accepts(&json!({"jsonrpc": "2.0", "id": 7, "method": "session/prompt", "params": {}}), &[]));
}

#[test]
fn the_v2_validator_accepts_v2_and_rejects_v1_shapes() {
    let text = json!({"type": "text", "text": "hi"});
    // v2 chunks carry their message's id; v1 ones need not.
    assert!(v2_accepts(
        &chunk(&json!({"sessionUpdate": "agent_message_chunk", "messageId": "m1", "content": text})),
        &[]
    ));
    assert!(!v2_accepts(&chunk(&json!({"sessionUpdate": "agent_message_chunk", "content": text})), &[]));
    // A v2 prompt's response acknowledges the inserted message; a v1 stop reason is no answer.
    assert!(v2_accepts(&json!({"jsonrpc": "2.0", "id": 1, "result": {"messageId": "m1"}}), &[("1", "session/prompt")]));
    assert!(!v2_accepts(
        &json!({"jsonrpc": "2.0", "id": 1, "result": {"stopReason": "end_turn"}}),
        &[("1", "session/prompt")]
    ));
}
