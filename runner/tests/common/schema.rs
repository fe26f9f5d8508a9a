//! Validation of every agent message against the ACP schemas generated from the wire types the
//! agent is built with (`schema/v1/schema.json`, `schema/v2/schema.json`: schema/README.md).
//!
//! Requests and notifications are validated by method; responses by the method of the request
//! they answer; errors against `Error`. Which definition a method's params or result are is read
//! from the schema itself: the definitions an envelope may carry (`$defs/AgentRequest`: the
//! requests an agent sends; `AgentNotification` and `ProtocolLevelNotification`: its
//! notifications; `AgentResponse`: its results) each name their method (`x-method`). A violation
//! panics, failing the test.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::{Value, json};

/// The schema of ACP protocol version 1, the one the agent speaks.
pub const SCHEMA: &str = include_str!("../../../schema/v1/schema.json");

/// The schema of ACP protocol version 2 (a preview: nothing speaks it yet).
pub const SCHEMA_V2: &str = include_str!("../../../schema/v2/schema.json");

/// One protocol version's schema, and what it says an agent may send.
struct Protocol {
    name: &'static str,
    defs: Value,
    /// The requests an agent sends: method → the definition of their params.
    agent_requests: HashMap<String, String>,
    /// The notifications an agent sends: method → the definition of their params.
    agent_notifications: HashMap<String, String>,
    /// The results an agent sends: the method of the request answered → their definition.
    responses: HashMap<String, String>,
    validators: Mutex<HashMap<String, Arc<jsonschema::Validator>>>,
}

impl Protocol {
    fn new(name: &'static str, text: &str) -> Protocol {
        let schema: Value = serde_json::from_str(text).unwrap_or_else(|e| panic!("{name}: the schema parses: {e}"));
        let defs = schema["$defs"].clone();
        let methods = |envelopes: &[&str]| {
            let mut table = HashMap::new();
            for envelope in envelopes {
                let carried = defs.get(envelope).unwrap_or_else(|| panic!("{name}: no $defs/{envelope}"));
                let mut refs = Vec::new();
                collect_refs(carried, &mut refs);
                for def in refs {
                    let Some(method) = defs[def.as_str()].get("x-method").and_then(Value::as_str) else { continue };
                    if let Some(other) = table.insert(method.to_owned(), def.clone()) {
                        assert_eq!(other, def, "{name}: two definitions for `{method}` in {envelopes:?}");
                    }
                }
            }
            assert!(!table.is_empty(), "{name}: no method in {envelopes:?}");
            table
        };
        Protocol {
            name,
            agent_requests: methods(&["AgentRequest"]),
            agent_notifications: methods(&["AgentNotification", "ProtocolLevelNotification"]),
            responses: methods(&["AgentResponse"]),
            defs,
            validators: Mutex::new(HashMap::new()),
        }
    }

    fn validator(&self, def: &str) -> Arc<jsonschema::Validator> {
        let mut validators = self.validators.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let validator = validators.entry(def.to_owned()).or_insert_with(|| {
            assert!(self.defs.get(def).is_some(), "{}: no schema definition {def}", self.name);
            let doc = json!({
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "$defs": self.defs,
                "$ref": format!("#/$defs/{def}"),
            });
            Arc::new(jsonschema::validator_for(&doc).unwrap_or_else(|e| panic!("{}: schema for {def}: {e}", self.name)))
        });
        Arc::clone(validator)
    }

    fn validate_def(&self, def: &str, instance: &Value, whole: &Value) {
        let validator = self.validator(def);
        let errors: Vec<String> =
            validator.iter_errors(instance).map(|e| format!("{e} at {}", e.instance_path())).collect();
        assert!(errors.is_empty(), "schema violation ({} {def}) in {whole}:\n{}", self.name, errors.join("\n"));
    }

    fn validate_agent_message(
        &self,
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
                match self.agent_requests.get(method) {
                    Some(def) => self.validate_def(def, &message["params"], message),
                    None => panic!("the agent sent an unexpected request `{method}`: {message}"),
                }
            }
            (Some(method), None) => match self.agent_notifications.get(method) {
                Some(def) => self.validate_def(def, &message["params"], message),
                None => panic!("the agent sent an unexpected notification `{method}`: {message}"),
            },
            (None, Some(id)) => {
                let has_result = message.get("result").is_some();
                let has_error = message.get("error").is_some();
                assert!(has_result != has_error, "a response needs exactly one of result/error: {message}");
                if has_error {
                    self.validate_def("Error", &message["error"], message);
                } else if let Some(def) = sent.get(&id.to_string()).and_then(|m| self.responses.get(m)) {
                    self.validate_def(def, &message["result"], message);
                }
            }
            (None, None) => panic!("neither a request, a notification nor a response: {message}"),
        }
    }
}

/// Every `$ref` under `schema` (to `#/$defs/<name>`), by name.
fn collect_refs(schema: &Value, out: &mut Vec<String>) {
    match schema {
        Value::Object(map) => {
            for (key, value) in map {
                match (key.as_str(), value.as_str()) {
                    ("$ref", Some(target)) => {
                        let name =
                            target.strip_prefix("#/$defs/").unwrap_or_else(|| panic!("a $ref outside $defs: {target}"));
                        out.push(name.to_owned());
                    }
                    _ => collect_refs(value, out),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|item| collect_refs(item, out)),
        _ => {}
    }
}

fn v1() -> &'static Protocol {
    static V1: OnceLock<Protocol> = OnceLock::new();
    V1.get_or_init(|| Protocol::new("ACP v1", SCHEMA))
}

fn v2() -> &'static Protocol {
    static V2: OnceLock<Protocol> = OnceLock::new();
    V2.get_or_init(|| Protocol::new("ACP v2", SCHEMA_V2))
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

/// What a schema says an agent may send, each method with the definition of its params or result.
#[derive(Debug, Clone, Copy)]
pub struct AgentMethods {
    /// The requests an agent sends: method → the definition of their params.
    pub requests: &'static HashMap<String, String>,
    /// The notifications an agent sends: method → the definition of their params.
    pub notifications: &'static HashMap<String, String>,
    /// The results an agent sends: the method of the request answered → their definition.
    pub responses: &'static HashMap<String, String>,
}

fn agent_methods_of(protocol: &'static Protocol) -> AgentMethods {
    AgentMethods {
        requests: &protocol.agent_requests,
        notifications: &protocol.agent_notifications,
        responses: &protocol.responses,
    }
}

/// What the v1 schema says an agent may send.
pub fn agent_methods() -> AgentMethods {
    agent_methods_of(v1())
}

/// What the v2 schema says an agent may send.
pub fn agent_methods_v2() -> AgentMethods {
    agent_methods_of(v2())
}

/// Validates `instance` against the named definition of the v1 schema, panicking with every
/// violation (`whole`: the message it came from, for the panic message).
pub fn validate_def(def: &str, instance: &Value, whole: &Value) {
    v1().validate_def(def, instance, whole);
}

/// [`validate_def`] against the v2 schema.
pub fn validate_def_v2(def: &str, instance: &Value, whole: &Value) {
    v2().validate_def(def, instance, whole);
}

/// Validates one message the agent sent, against the v1 schema. `sent` maps our request ids to
/// their methods; the agent's own requests are recorded in `agent_requests` (id → method).
pub fn validate_agent_message(
    message: &Value,
    sent: &HashMap<String, String>,
    agent_requests: &mut HashMap<String, String>,
) {
    v1().validate_agent_message(message, sent, agent_requests);
}

/// [`validate_agent_message`] against the v2 schema.
pub fn validate_agent_message_v2(
    message: &Value,
    sent: &HashMap<String, String>,
    agent_requests: &mut HashMap<String, String>,
) {
    v2().validate_agent_message(message, sent, agent_requests);
}
