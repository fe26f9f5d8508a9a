//! Conversion of the harness model: the events a JS host publishes.
//!
//! A JS event is `{ kind, class?, visibility?, commandId?, loopId?, turnId?, id? }`: `kind` is
//! the core's [`EventKind`] in camelCase, like the rest of the Node API (`{ type: "tokenDelta",
//! text, channel }`, `{ type: "toolCallCompleted", callId, output, isError }`, …); `class`
//! defaults to `"ephemeral"` and `visibility` to `"public"`; the hub numbers events.
//!
//! [`kind_from_js`] renames the kind's tags and field names to the core's serde form (`snake_case`)
//! before it is decoded, so that what the runner journals and the wire carry is the same as from
//! Rust and Python. Only the harness's own names are renamed: payloads (tool input and raw
//! output, content blocks, plans, `_meta`, forms) pass untouched, and string values keep their
//! spelling (`"end_turn"`, `"in_progress"`, the gate kinds `"ask_user"`, …). A `snake_case` tag or
//! field name is refused with the camelCase name to use.

use std::sync::atomic::{AtomicU64, Ordering};

use acp_facade::harness::{
    Cause, CommandId, Coordinates, Event, EventClass, EventHeader, EventId, EventKind, LoopId, TurnId, Visibility,
};
use serde::Deserialize;
use serde_json::Value;

/// An event as a JS host writes it (its `kind` already in the core's serde form).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EventInput {
    kind: EventKind,
    #[serde(default)]
    class: Option<EventClass>,
    #[serde(default)]
    visibility: Option<Visibility>,
    #[serde(default)]
    command_id: Option<String>,
    #[serde(default)]
    loop_id: Option<String>,
    #[serde(default)]
    turn_id: Option<String>,
    #[serde(default)]
    id: Option<String>,
}

static EVENT_IDS: AtomicU64 = AtomicU64::new(0);

impl EventInput {
    /// The harness event (numbered later by the hub).
    pub fn into_event(self) -> Event {
        let id = self.id.unwrap_or_else(|| format!("js-event-{}", EVENT_IDS.fetch_add(1, Ordering::Relaxed)));
        Event {
            header: EventHeader {
                id: EventId::new(id),
                seq: 0,
                class: self.class.unwrap_or(EventClass::Ephemeral),
                visibility: self.visibility.unwrap_or(Visibility::Public),
                cause: Cause { command_id: self.command_id.map(CommandId::new) },
                coordinates: Coordinates {
                    loop_id: self.loop_id.map(LoopId::new),
                    turn_id: self.turn_id.map(TurnId::new),
                },
            },
            kind: self.kind,
        }
    }
}

/// Decodes a JS event.
pub fn event_from_json(mut value: Value) -> Result<Event, String> {
    if let Some(kind) = value.get_mut("kind") {
        kind_from_js(kind).map_err(|e| format!("invalid event: {e}"))?;
    }
    serde_json::from_value::<EventInput>(value).map(EventInput::into_event).map_err(|e| format!("invalid event: {e}"))
}

/// The field names of the harness's own objects that differ between the Node API (camelCase) and
/// the core's serde form (`snake_case`). Payload fields are not listed: they pass untouched.
const KIND_FIELDS: &[(&str, &str)] = &[
    ("callId", "call_id"),
    ("toolName", "tool_name"),
    ("isError", "is_error"),
    ("rawInput", "raw_input"),
    ("rawOutput", "raw_output"),
    ("gateId", "gate_id"),
    ("updatedAt", "updated_at"),
];
const MESSAGE_FIELDS: &[(&str, &str)] = &[
    ("callId", "call_id"),
    ("toolName", "tool_name"),
    ("isError", "is_error"),
    ("rawInput", "raw_input"),
    ("rawOutput", "raw_output"),
    ("toolCalls", "tool_calls"),
];
const TOOL_CALL_FIELDS: &[(&str, &str)] = &[("callId", "call_id"), ("toolName", "tool_name")];
const GATE_FIELDS: &[(&str, &str)] = &[("toolCallId", "tool_call_id")];

/// Rewrites an event kind from its Node form (camelCase) to the core's serde form, in place.
pub fn kind_from_js(kind: &mut Value) -> Result<(), String> {
    let Value::Object(fields) = kind else { return Ok(()) };
    tag_from_js(fields, "type")?;
    rename_fields(fields, KIND_FIELDS)?;
    if let Some(message) = fields.get_mut("message") {
        message_from_js(message)?;
    }
    if let Some(Value::Array(messages)) = fields.get_mut("messages") {
        messages.iter_mut().try_for_each(message_from_js)?;
    }
    if let Some(Value::Object(gate)) = fields.get_mut("gate") {
        rename_fields(gate, GATE_FIELDS)?;
    }
    Ok(())
}

/// A conversation message (`step_done`'s `messages`, `turn_done`'s `message`; `turn_started`'s
/// user message has no field to rename), in place.
fn message_from_js(message: &mut Value) -> Result<(), String> {
    let Value::Object(fields) = message else { return Ok(()) };
    tag_from_js(fields, "role")?;
    rename_fields(fields, MESSAGE_FIELDS)?;
    if let Some(Value::Array(calls)) = fields.get_mut("tool_calls") {
        for call in calls {
            if let Value::Object(call) = call {
                rename_fields(call, TOOL_CALL_FIELDS)?;
            }
        }
    }
    Ok(())
}

/// The tag `key` (`type`, `role`) from camelCase to `snake_case`; a `snake_case` tag is refused.
fn tag_from_js(fields: &mut serde_json::Map<String, Value>, key: &str) -> Result<(), String> {
    if let Some(Value::String(tag)) = fields.get_mut(key) {
        if tag.contains('_') {
            return Err(format!("`{key}: \"{tag}\"` is written `{key}: \"{}\"` in Node", camel(tag)));
        }
        *tag = snake(tag);
    }
    Ok(())
}

/// Renames each `(camel, snake)` field present; a field written in `snake_case` is refused.
fn rename_fields(fields: &mut serde_json::Map<String, Value>, names: &[(&str, &str)]) -> Result<(), String> {
    for (camel, snake) in names {
        if fields.contains_key(*snake) {
            return Err(format!("the field `{snake}` is written `{camel}` in Node"));
        }
        if let Some(value) = fields.remove(*camel) {
            fields.insert((*snake).to_owned(), value);
        }
    }
    Ok(())
}

/// `toolCallStarted` → `tool_call_started`.
fn snake(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 4);
    for c in name.chars() {
        if c.is_ascii_uppercase() {
            out.push('_');
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// `tool_call_started` → `toolCallStarted`.
fn camel(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut upper = false;
    for c in name.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.push(c.to_ascii_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_camel_case_kind_becomes_the_core_serde_form() {
        let mut kind = json!({
            "type": "toolCallCompleted", "callId": "c", "output": [], "isError": true,
            "rawOutput": {"keep_me": 1}, "rawInput": {"call_id": "payload"}
        });
        kind_from_js(&mut kind).unwrap();
        assert_eq!(
            kind,
            json!({
                "type": "tool_call_completed", "call_id": "c", "output": [], "is_error": true,
                "raw_output": {"keep_me": 1}, "raw_input": {"call_id": "payload"}
            })
        );
        let mut kind = json!({"type": "stepDone", "messages": [
            {"role": "ai", "content": [],
             "toolCalls": [{"callId": "c", "name": "n", "kind": "read", "input": {"a_b": 1}}]},
            {"role": "toolResult", "callId": "c", "output": [], "isError": false}
        ]});
        kind_from_js(&mut kind).unwrap();
        assert_eq!(
            kind,
            json!({"type": "step_done", "messages": [
                {"role": "ai", "content": [],
                 "tool_calls": [{"call_id": "c", "name": "n", "kind": "read", "input": {"a_b": 1}}]},
                {"role": "tool_result", "call_id": "c", "output": [], "is_error": false}
            ]})
        );
        let mut kind = json!({"type": "gateOpened",
            "gate": {"id": "g", "kind": "ask_user", "resolver": "loop", "toolCallId": null, "title": "t"}});
        kind_from_js(&mut kind).unwrap();
        assert_eq!(kind["gate"]["tool_call_id"], Value::Null);
        assert_eq!(kind["gate"]["kind"], "ask_user");
    }

    #[test]
    fn a_tool_call_s_programmatic_name_is_tool_name_wherever_a_tool_call_is() {
        let mut kind = json!({"type": "toolCallStarted", "callId": "c", "name": "Read a.rs", "toolName": "read_file",
            "kind": "read", "input": null});
        kind_from_js(&mut kind).unwrap();
        assert_eq!((&kind["name"], &kind["tool_name"]), (&json!("Read a.rs"), &json!("read_file")));
        let mut kind = json!({"type": "toolCallProgress", "callId": "c", "toolName": "read_files"});
        kind_from_js(&mut kind).unwrap();
        assert_eq!(kind["tool_name"], "read_files");
        let mut kind = json!({"type": "stepDone", "messages": [
            {"role": "ai", "content": [],
             "toolCalls": [{"callId": "c", "name": "Read", "toolName": "read_file", "kind": "read", "input": null}]},
            {"role": "toolResult", "callId": "c", "output": [], "isError": false, "toolName": "read_files"}
        ]});
        kind_from_js(&mut kind).unwrap();
        assert_eq!(kind["messages"][0]["tool_calls"][0]["tool_name"], "read_file");
        assert_eq!(kind["messages"][1]["tool_name"], "read_files");
        let decoded = event_from_json(json!({"kind": {"type": "toolCallStarted", "callId": "c", "name": "Read",
            "toolName": "read_file", "kind": "read", "input": null}}))
        .unwrap();
        let EventKind::ToolCallStarted { details, .. } = decoded.kind else { panic!("{:?}", decoded.kind) };
        assert_eq!(details.tool_name.as_deref(), Some("read_file"));
        let mut kind = json!({"type": "toolCallStarted", "callId": "c", "tool_name": "x"});
        assert_eq!(kind_from_js(&mut kind).unwrap_err(), "the field `tool_name` is written `toolName` in Node");
    }

    #[test]
    fn a_snake_case_kind_is_refused_with_its_camel_case_name() {
        let mut kind = json!({"type": "token_delta", "text": "x", "channel": "message"});
        assert_eq!(
            kind_from_js(&mut kind).unwrap_err(),
            "`type: \"token_delta\"` is written `type: \"tokenDelta\"` in Node"
        );
        let mut kind = json!({"type": "gateResolved", "gate_id": "g"});
        assert_eq!(kind_from_js(&mut kind).unwrap_err(), "the field `gate_id` is written `gateId` in Node");
    }
}
