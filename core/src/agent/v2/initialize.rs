//! The v2 handshake: the client's v2 capabilities read as the v1 ones the facade works with, and
//! the agent's advertisement in v2's form (`info`, `capabilities.session`, `authMethods` keyed
//! `methodId`).

use serde_json::{Map, Value, json};

use super::super::capabilities;
use super::super::state::AgentInner;
use crate::acp::{
    AuthCapabilities, ClientCapabilities, ClientSessionCapabilities, CompactionCapabilities, ElicitationCapabilities,
    NoticeCapabilities, PlanCapabilities, SubagentCapabilities,
};

/// Whether `options` serve v2 to a client that asks: v2 is enabled and the host has v2's
/// baseline session methods (`session/list`, `session/resume` and `session/close`, which a v2
/// client may call without asking).
pub(in super::super) fn offered(agent: &AgentInner) -> bool {
    let o = &agent.options;
    o.protocol_v2 && o.catalog.is_some() && o.resumer.is_some() && o.close
}

/// The v1 capabilities a v2 client's `capabilities` amount to: what v2 lets an agent send
/// unasked (notices, compaction, subagents, plans with ids) is advertised; elicitation and
/// terminal authentication as the client says; no file system and no terminals (v2 has none).
pub(in super::super) fn client_capabilities(params: &Value) -> ClientCapabilities {
    let advertised = params.get("capabilities").cloned().unwrap_or(Value::Null);
    let elicitation = advertised
        .get("elicitation")
        .filter(|e| e.is_object())
        .and_then(|e| serde_json::from_value::<ElicitationCapabilities>(e.clone()).ok());
    let auth_terminal = advertised.pointer("/auth/terminal").is_some_and(|t| !t.is_null());
    let session =
        ClientSessionCapabilities::new().notices(NoticeCapabilities::new()).compaction(CompactionCapabilities::new());
    ClientCapabilities::new()
        .session(session)
        .subagents(SubagentCapabilities::new())
        .plan(PlanCapabilities::new())
        .elicitation(elicitation)
        .auth(AuthCapabilities::new().terminal(auth_terminal))
        .meta(advertised.get("_meta").and_then(Value::as_object).cloned())
}

/// The v2 `initialize` result.
pub(in super::super) fn response(agent: &AgentInner) -> Value {
    let v1 = serde_json::to_value(capabilities::advertised(&agent.options)).unwrap_or(Value::Null);
    let mut session = Map::new();
    let markers = |flags: &Value, names: &[(&str, &str)]| {
        let mut out = Map::new();
        for (v1_name, v2_name) in names {
            if flags.get(*v1_name).and_then(Value::as_bool) == Some(true) {
                out.insert((*v2_name).to_owned(), json!({}));
            }
        }
        out
    };
    let prompt = markers(
        &v1["promptCapabilities"],
        &[("image", "image"), ("audio", "audio"), ("embeddedContext", "embeddedContext")],
    );
    if !prompt.is_empty() {
        session.insert("prompt".to_owned(), Value::Object(prompt));
    }
    let mut mcp = markers(&v1["mcpCapabilities"], &[("http", "http")]);
    mcp.insert("stdio".to_owned(), json!({}));
    session.insert("mcp".to_owned(), Value::Object(mcp));
    for name in ["delete", "systemPrompt", "additionalDirectories"] {
        if let Some(marker) = v1["sessionCapabilities"].get(name).filter(|m| !m.is_null()) {
            session.insert(name.to_owned(), marker.clone());
        }
    }
    let mut capabilities = Map::new();
    capabilities.insert("session".to_owned(), Value::Object(session));
    if let Some(meta) = v1.get("_meta").filter(|m| !m.is_null()) {
        capabilities.insert("_meta".to_owned(), meta.clone());
    }
    let info = &agent.options.agent_info;
    let mut result = json!({
        "protocolVersion": 2,
        "info": {"name": info.name, "version": info.version},
        "capabilities": capabilities,
    });
    if let Some(title) = &info.title {
        result["info"]["title"] = json!(title);
    }
    if let Some(auth) = &agent.options.authenticator {
        let methods: Vec<Value> = serde_json::to_value(auth.methods())
            .ok()
            .and_then(|m| m.as_array().cloned())
            .unwrap_or_default()
            .into_iter()
            .filter_map(auth_method)
            .collect();
        result["authMethods"] = Value::Array(methods);
    }
    result
}

/// A v1 authentication method in v2's form (`methodId`, a `type`); a terminal method, which v2
/// does not have, is left out.
fn auth_method(v1: Value) -> Option<Value> {
    let Value::Object(mut method) = v1 else { return None };
    match method.get("type").and_then(Value::as_str) {
        None | Some("agent") => {}
        Some(_) => return None,
    }
    let id = method.remove("id")?;
    method.insert("methodId".to_owned(), id);
    method.insert("type".to_owned(), json!("agent"));
    Some(Value::Object(method))
}
