//! Validation of every agent message against the pinned ACP schema (v1.21.0).
//!
//! Requests and notifications are validated by method; responses by the method of the request
//! they answer; errors against `Error`. A violation panics, failing the test.

use std::collections::HashMap;
use std::sync::OnceLock;

use serde_json::{Value, json};

/// The vendored schema (identical to `../shared/acp/schema-v1.21.0/schema.json`).
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
];

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
            match method {
                "session/request_permission" => validate_def("RequestPermissionRequest", &message["params"], message),
                other => panic!("the agent sent an unexpected request `{other}`: {message}"),
            }
        }
        (Some(method), None) => match method {
            "session/update" => validate_def("SessionNotification", &message["params"], message),
            "$/cancel_request" => validate_def("CancelRequestNotification", &message["params"], message),
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
