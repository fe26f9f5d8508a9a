//! Journal entries as JSON text: a session's events, one append, as one JSON array — what the
//! stores write ([`SqliteStore`](super::SqliteStore), [`PostgresStore`](super::PostgresStore)).
//!
//! Every turn writes one entry, so its encoding is on the hot path of every turn. serde's
//! derived serialisers for the events' tagged enums and optional fields cost several times more
//! than the bytes themselves; [`encode_events`] writes the everyday shapes directly — the header,
//! a turn's start, end, failure or interruption, a finished step of text, a usage measurement, text
//! blocks — and hands anything else (tool calls, gates, plans, annotated blocks, costs, …) to
//! serde, one value at a time.
//!
//! Invariant: the output is byte for byte what `serde_json::to_writer(events)` writes (a property
//! test holds it to that), so entries written either way read back the same, and stores stay
//! readable by older and newer versions alike.

use serde::Serialize;

use crate::acp::{ContentBlock, StopReason};
use crate::harness::{AiMessage, Event, EventClass, EventHeader, EventKind, Message, Visibility};
use crate::json_text::{number, string};

/// `events` as one JSON array.
pub(crate) fn encode_events(events: &[Event]) -> Result<Vec<u8>, serde_json::Error> {
    // Room for a typical event, so the buffer rarely grows.
    let mut out = Vec::with_capacity(288 * events.len() + 2);
    out.push(b'[');
    for (i, event) in events.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(br#"{"header":"#);
        header(&mut out, &event.header);
        out.extend_from_slice(br#","kind":"#);
        kind(&mut out, &event.kind)?;
        out.push(b'}');
    }
    out.push(b']');
    Ok(out)
}

fn header(out: &mut Vec<u8>, header: &EventHeader) {
    out.extend_from_slice(br#"{"id":"#);
    string(out, header.id.as_str());
    out.extend_from_slice(br#","seq":"#);
    number(out, header.seq);
    out.extend_from_slice(match header.class {
        EventClass::Enduring => br#","class":"enduring""#,
        EventClass::Ephemeral => br#","class":"ephemeral""#,
    });
    out.extend_from_slice(match header.visibility {
        Visibility::Public => br#","visibility":"public""#,
        Visibility::Internal => br#","visibility":"internal""#,
    });
    out.extend_from_slice(br#","cause":{"command_id":"#);
    optional(out, header.cause.command_id.as_ref().map(|id| id.as_str()));
    out.extend_from_slice(br#"},"coordinates":{"loop_id":"#);
    optional(out, header.coordinates.loop_id.as_ref().map(|id| id.as_str()));
    out.extend_from_slice(br#","turn_id":"#);
    optional(out, header.coordinates.turn_id.as_ref().map(|id| id.as_str()));
    out.extend_from_slice(b"}}");
}

fn kind(out: &mut Vec<u8>, kind: &EventKind) -> Result<(), serde_json::Error> {
    match kind {
        EventKind::TurnStarted { message } => {
            out.extend_from_slice(br#"{"type":"turn_started","message":{"content":"#);
            blocks(out, &message.content)?;
            out.extend_from_slice(b"}}");
        }
        EventKind::StepDone { messages } => {
            out.extend_from_slice(br#"{"type":"step_done","messages":["#);
            for (i, m) in messages.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                message(out, m)?;
            }
            out.extend_from_slice(b"]}");
        }
        EventKind::ContextMeasured { used, size, cost: None } => {
            out.extend_from_slice(br#"{"type":"context_measured","used":"#);
            number(out, *used);
            out.extend_from_slice(br#","size":"#);
            number(out, *size);
            out.push(b'}');
        }
        EventKind::TurnDone { message: turn_message, stop } => {
            out.extend_from_slice(br#"{"type":"turn_done","message":"#);
            match turn_message {
                Some(m) => message(out, m)?,
                None => out.extend_from_slice(b"null"),
            }
            out.extend_from_slice(br#","stop":"#);
            match stop {
                Some(stop) => stop_reason(out, *stop)?,
                None => out.extend_from_slice(b"null"),
            }
            out.push(b'}');
        }
        EventKind::TurnFailed { error } => {
            out.extend_from_slice(br#"{"type":"turn_failed","error":"#);
            string(out, error);
            out.push(b'}');
        }
        EventKind::TurnInterrupted {} => out.extend_from_slice(br#"{"type":"turn_interrupted"}"#),
        other => serde(out, other)?,
    }
    Ok(())
}

fn message(out: &mut Vec<u8>, message: &Message) -> Result<(), serde_json::Error> {
    match message {
        Message::Ai(AiMessage { content, thoughts, tool_calls }) if tool_calls.is_empty() => {
            out.extend_from_slice(br#"{"role":"ai","content":"#);
            blocks(out, content)?;
            if !thoughts.is_empty() {
                out.extend_from_slice(br#","thoughts":"#);
                blocks(out, thoughts)?;
            }
            out.push(b'}');
        }
        Message::User(user) => {
            out.extend_from_slice(br#"{"role":"user","content":"#);
            blocks(out, &user.content)?;
            out.push(b'}');
        }
        other => serde(out, other)?,
    }
    Ok(())
}

fn blocks(out: &mut Vec<u8>, blocks: &[ContentBlock]) -> Result<(), serde_json::Error> {
    out.push(b'[');
    for (i, block) in blocks.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        match block {
            ContentBlock::Text(text) if text.annotations.is_none() && text.meta.is_none() => {
                out.extend_from_slice(br#"{"type":"text","text":"#);
                string(out, &text.text);
                out.push(b'}');
            }
            other => serde(out, other)?,
        }
    }
    out.push(b']');
    Ok(())
}

fn stop_reason(out: &mut Vec<u8>, stop: StopReason) -> Result<(), serde_json::Error> {
    out.extend_from_slice(match stop {
        StopReason::EndTurn => br#""end_turn""#,
        StopReason::Cancelled => br#""cancelled""#,
        StopReason::MaxTokens => br#""max_tokens""#,
        StopReason::MaxTurnRequests => br#""max_turn_requests""#,
        StopReason::Refusal => br#""refusal""#,
        other => return serde(out, &other),
    });
    Ok(())
}

fn optional(out: &mut Vec<u8>, value: Option<&str>) {
    match value {
        Some(value) => string(out, value),
        None => out.extend_from_slice(b"null"),
    }
}

/// Anything without a shape of its own above: serde's compact output of a value is the same
/// wherever in a document it stands.
fn serde(out: &mut Vec<u8>, value: &impl Serialize) -> Result<(), serde_json::Error> {
    serde_json::to_writer(&mut *out, value)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;
    use crate::acp::{Annotations, Cost, Role, TextContent};
    use crate::harness::{
        Cause, CommandId, Coordinates, EventId, GateId, LoopId, ToolCallRequest, ToolResultMessage, TurnId, UserMessage,
    };

    fn text() -> impl Strategy<Value = String> {
        "\\PC{0,16}|[\"\\\\\u{0}-\u{1f}\u{7f}a-z\u{2028}é #]{0,12}"
    }

    fn block() -> impl Strategy<Value = ContentBlock> {
        prop_oneof![
            4 => text().prop_map(|t| ContentBlock::Text(TextContent::new(t))),
            1 => text().prop_map(|t| ContentBlock::Text(
                TextContent::new(t).annotations(Annotations::new().audience(vec![Role::User]))
            )),
            1 => text().prop_map(|t| ContentBlock::Text(
                TextContent::new(t).meta(json!({"k": "v"}).as_object().cloned())
            )),
            1 => text().prop_map(|uri| ContentBlock::ResourceLink(crate::acp::ResourceLink::new("n", uri))),
        ]
    }

    fn blocks() -> impl Strategy<Value = Vec<ContentBlock>> {
        prop::collection::vec(block(), 0..3)
    }

    fn message() -> impl Strategy<Value = Message> {
        prop_oneof![
            3 => (blocks(), blocks()).prop_map(|(content, thoughts)| Message::Ai(AiMessage {
                content,
                thoughts,
                tool_calls: Vec::new(),
            })),
            1 => (blocks(), text()).prop_map(|(content, name)| Message::Ai(AiMessage {
                content,
                thoughts: Vec::new(),
                tool_calls: vec![ToolCallRequest::new("c1", name, crate::acp::ToolKind::Read, json!({"a": 1}))],
            })),
            1 => blocks().prop_map(|content| Message::User(UserMessage { content })),
            1 => Just(Message::ToolResult(ToolResultMessage::new("c1", Vec::new(), true))),
        ]
    }

    fn stop() -> impl Strategy<Value = Option<StopReason>> {
        prop_oneof![
            Just(None),
            Just(Some(StopReason::EndTurn)),
            Just(Some(StopReason::Cancelled)),
            Just(Some(StopReason::MaxTokens)),
            Just(Some(StopReason::MaxTurnRequests)),
            Just(Some(StopReason::Refusal)),
        ]
    }

    fn kind() -> impl Strategy<Value = EventKind> {
        prop_oneof![
            3 => blocks().prop_map(|content| EventKind::TurnStarted { message: UserMessage { content } }),
            3 => prop::collection::vec(message(), 0..3).prop_map(|messages| EventKind::StepDone { messages }),
            2 => (any::<u64>(), any::<u64>()).prop_map(|(used, size)| EventKind::ContextMeasured { used, size, cost: None }),
            1 => (any::<u64>(), any::<u64>()).prop_map(|(used, size)| EventKind::ContextMeasured {
                used,
                size,
                cost: Some(Box::new(Cost::new(1.5, "USD"))),
            }),
            3 => (prop::option::of(message()), stop()).prop_map(|(message, stop)| EventKind::TurnDone { message, stop }),
            1 => text().prop_map(|error| EventKind::TurnFailed { error }),
            1 => Just(EventKind::TurnInterrupted {}),
            1 => text().prop_map(|gate_id| EventKind::GateResolved { gate_id: GateId::new(gate_id) }),
            1 => text().prop_map(|text| EventKind::TokenDelta { text, channel: crate::harness::TokenChannel::Thought }),
            1 => Just(EventKind::CompactWaiterResolved {}),
        ]
    }

    fn event() -> impl Strategy<Value = Event> {
        (
            text(),
            any::<u64>(),
            any::<bool>(),
            any::<bool>(),
            prop::option::of(text()),
            prop::option::of(text()),
            prop::option::of(text()),
            kind(),
        )
            .prop_map(|(id, seq, enduring, public, command, loop_id, turn_id, kind)| Event {
                header: EventHeader {
                    id: EventId::new(id),
                    seq,
                    class: if enduring { EventClass::Enduring } else { EventClass::Ephemeral },
                    visibility: if public { Visibility::Public } else { Visibility::Internal },
                    cause: Cause { command_id: command.map(CommandId::new) },
                    coordinates: Coordinates { loop_id: loop_id.map(LoopId::new), turn_id: turn_id.map(TurnId::new) },
                },
                kind,
            })
    }

    #[test]
    fn an_echo_turn_is_written_as_serde_writes_it() {
        let at = |n: u64, command: Option<&str>, kind: EventKind| Event {
            header: EventHeader {
                id: EventId::new(format!("sess_1#{n}")),
                seq: n,
                class: EventClass::Enduring,
                visibility: Visibility::Public,
                cause: Cause { command_id: command.map(CommandId::new) },
                coordinates: Coordinates { loop_id: Some(LoopId::new("main")), turn_id: Some(TurnId::new("t1")) },
            },
            kind,
        };
        let hello = || vec![ContentBlock::Text(TextContent::new("hello world"))];
        let events = [
            at(0, Some("sess_1/c1"), EventKind::TurnStarted { message: UserMessage { content: hello() } }),
            at(
                4,
                None,
                EventKind::StepDone {
                    messages: vec![Message::Ai(AiMessage { content: hello(), ..AiMessage::default() })],
                },
            ),
            at(5, None, EventKind::ContextMeasured { used: 22, size: 200_000, cost: None }),
            at(6, None, EventKind::TurnDone { message: None, stop: Some(StopReason::EndTurn) }),
        ];
        assert_eq!(
            String::from_utf8(encode_events(&events).unwrap()).unwrap(),
            serde_json::to_string(&events).unwrap()
        );
    }

    proptest! {
        #[test]
        fn any_events_are_written_as_serde_writes_them(events in prop::collection::vec(event(), 0..4)) {
            prop_assert_eq!(
                String::from_utf8(encode_events(&events).unwrap()).unwrap(),
                serde_json::to_string(&events).unwrap()
            );
        }
    }
}
