//! Validation of every agent message against the pinned ACP schema (v1.21.0).
//!
//! Requests and notifications are validated by method; responses by the method of the request
//! they answer; errors against `Error`. A violation panics, failing the test.

use std::collections::HashMap;
use std::sync::OnceLock;

use serde_json::{Value, json};

/// The vendored schema (ACP schema v1.21.0, as published).
pub const SCHEMA: &str = include_str!("../../../schema/acp-v1.21.0.schema.json");

struct Validators {
    by_def: HashMap<&'static str, jsonschema::Validator>,
}

const DEFS: &[&str] = &[
    "InitializeResponse",
    "AuthenticateResponse",
    "LogoutResponse",
    "NewSessionResponse",
    "LoadSessionResponse",
    "ResumeSessionResponse",
    "ListSessionsResponse",
    "DeleteSessionResponse",
    "CloseSessionResponse",
    "SetSessionModeResponse",
    "SetSessionConfigOptionResponse",
    "PromptResponse",
    "SessionNotification",
    "RequestPermissionRequest",
    "CancelRequestNotification",
    "Error",
    "ReadTextFileRequest",
    "WriteTextFileRequest",
    "CreateTerminalRequest",
    "TerminalOutputRequest",
    "WaitForTerminalExitRequest",
    "KillTerminalRequest",
    "ReleaseTerminalRequest",
    "CreateElicitationRequest",
    "CompleteElicitationNotification",
];

/// The schema definition of the params of a request the agent may send to the client.
fn agent_request_def(method: &str) -> Option<&'static str> {
    Some(match method {
        "session/request_permission" => "RequestPermissionRequest",
        "fs/read_text_file" => "ReadTextFileRequest",
        "fs/write_text_file" => "WriteTextFileRequest",
        "terminal/create" => "CreateTerminalRequest",
        "terminal/output" => "TerminalOutputRequest",
        "terminal/wait_for_exit" => "WaitForTerminalExitRequest",
        "terminal/kill" => "KillTerminalRequest",
        "terminal/release" => "ReleaseTerminalRequest",
        "elicitation/create" => "CreateElicitationRequest",
        _ => return None,
    })
}

/// Panics when the agent sent a request or notification that needs a client capability the
/// client (which advertised `advertised`, its `clientCapabilities`) did not advertise: nothing is
/// ever sent for an unadvertised capability, and nothing v1.21.0-only to a client that did not ask.
pub fn check_capability(message: &Value, advertised: &Value) {
    let Some(method) = message.get("method").and_then(Value::as_str) else { return };
    let flag = |pointer: &str| advertised.pointer(pointer).and_then(Value::as_bool).unwrap_or(false);
    let mode = |name: &str| advertised.pointer(&format!("/elicitation/{name}")).is_some_and(|v| !v.is_null());
    let allowed = match method {
        "fs/read_text_file" => flag("/fs/readTextFile"),
        "fs/write_text_file" => flag("/fs/writeTextFile"),
        m if m.starts_with("terminal/") => flag("/terminal"),
        "elicitation/create" => match message.pointer("/params/mode").and_then(Value::as_str) {
            Some("form") => mode("form"),
            Some("url") => mode("url"),
            _ => false,
        },
        "elicitation/complete" => mode("url"),
        _ => true,
    };
    assert!(allowed, "the agent sent `{method}`, which the client did not advertise ({advertised}): {message}");
}

fn validators() -> &'static Validators {
    static V: OnceLock<Validators> = OnceLock::new();
    V.get_or_init(|| {
        let schema: Value = serde_json::from_str(SCHEMA).expect("schema parses");
        let defs = schema["$defs"].clone();
        let by_def = DEFS
            .iter()
            .map(|name| {
                let doc = json!({
                    "$schema": "https://json-schema.org/draft/2020-12/schema",
                    "$defs": defs,
                    "$ref": format!("#/$defs/{name}"),
                });
                (*name, jsonschema::validator_for(&doc).unwrap_or_else(|e| panic!("schema for {name}: {e}")))
            })
            .collect();
        Validators { by_def }
    })
}

/// Validates `instance` against the named definition, panicking with every violation.
pub fn validate_def(def: &str, instance: &Value, whole: &Value) {
    let validator = validators().by_def.get(def).unwrap_or_else(|| panic!("no validator for {def}"));
    let errors: Vec<String> =
        validator.iter_errors(instance).map(|e| format!("{e} at {}", e.instance_path())).collect();
    assert!(errors.is_empty(), "schema violation ({def}) in {whole}:\n{}", errors.join("\n"));
}

fn response_def(method: &str) -> Option<&'static str> {
    Some(match method {
        "initialize" => "InitializeResponse",
        "authenticate" => "AuthenticateResponse",
        "logout" => "LogoutResponse",
        "session/new" => "NewSessionResponse",
        "session/load" => "LoadSessionResponse",
        "session/resume" => "ResumeSessionResponse",
        "session/list" => "ListSessionsResponse",
        "session/delete" => "DeleteSessionResponse",
        "session/close" => "CloseSessionResponse",
        "session/set_mode" => "SetSessionModeResponse",
        "session/set_config_option" => "SetSessionConfigOptionResponse",
        "session/prompt" => "PromptResponse",
        _ => return None,
    })
}

/// Validates one message the agent sent. `sent` maps our request ids to their methods.
pub fn validate_agent_message(
    message: &Value,
    sent: &HashMap<String, String>,
    agent_requests: &mut HashMap<String, String>,
) {
    assert_eq!(message.get("jsonrpc"), Some(&json!("2.0")), "bad envelope: {message}");
    let method = message.get("method").and_then(Value::as_str);
    let id = message.get("id");
    match (method, id) {
        (Some(method), Some(id)) => {
            agent_requests.insert(id.to_string(), method.to_owned());
            match agent_request_def(method) {
                Some(def) => validate_def(def, &message["params"], message),
                None => panic!("the agent sent an unexpected request `{method}`: {message}"),
            }
        }
        (Some(method), None) => match method {
            "session/update" => validate_def("SessionNotification", &message["params"], message),
            "$/cancel_request" => validate_def("CancelRequestNotification", &message["params"], message),
            "elicitation/complete" => validate_def("CompleteElicitationNotification", &message["params"], message),
            other => panic!("the agent sent an unexpected notification `{other}`: {message}"),
        },
        (None, Some(id)) => {
            let has_result = message.get("result").is_some();
            let has_error = message.get("error").is_some();
            assert!(has_result != has_error, "a response needs exactly one of result/error: {message}");
            if has_error {
                validate_def("Error", &message["error"], message);
            } else if let Some(def) = sent.get(&id.to_string()).and_then(|m| response_def(m)) {
                validate_def(def, &message["result"], message);
            }
        }
        (None, None) => panic!("neither a request, a notification nor a response: {message}"),
    }
}
