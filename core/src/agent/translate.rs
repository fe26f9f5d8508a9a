//! The live translator: one `Public` harness event → at most one `session/update`.
//!
//! Visibility is checked here, by the translator itself, and not trusted to any filter upstream:
//! an `Internal` event never becomes an update. `TurnStarted`, `StepDone` and `TurnDone` are not
//! translated live (their content was already streamed); anything without a faithful ACP form is
//! skipped, never guessed.

use crate::acp::{
    ContentBlock, ContentChunk, SessionInfoUpdate, SessionUpdate, ToolCall, ToolCallContent, ToolCallStatus,
    ToolCallUpdate, ToolCallUpdateFields, UsageUpdate,
};
use crate::harness::{Event, EventKind, TokenChannel};

/// The update for `event`, or `None` when it is internal or has no live form.
pub fn translate(event: &Event) -> Option<SessionUpdate> {
    if !event.is_public() {
        return None;
    }
    if let EventKind::TokenDelta { .. } = &event.kind {
        // Token deltas are the hot path; the owned form moves their text instead of copying it.
        return translate_owned(event.clone());
    }
    translate_borrowed(event)
}

/// Like [`translate`], consuming the event (no copy of streamed text).
pub fn translate_owned(event: Event) -> Option<SessionUpdate> {
    if !event.is_public() {
        return None;
    }
    match event.kind {
        EventKind::TokenDelta { text, channel } => {
            let chunk = ContentChunk::new(ContentBlock::from(text));
            Some(match channel {
                TokenChannel::Message => SessionUpdate::AgentMessageChunk(chunk),
                TokenChannel::Thought => SessionUpdate::AgentThoughtChunk(chunk),
            })
        }
        _ => translate_borrowed(&event),
    }
}

fn translate_borrowed(event: &Event) -> Option<SessionUpdate> {
    match &event.kind {
        EventKind::ToolCallStarted { call_id, name, kind, input } => Some(SessionUpdate::ToolCall(
            ToolCall::new(call_id.as_str().to_owned(), name.clone())
                .kind(*kind)
                .status(ToolCallStatus::Pending)
                .raw_input(input.clone()),
        )),
        EventKind::ToolCallProgress { call_id, status, content } => {
            let mut fields = ToolCallUpdateFields::new().status(*status);
            if let Some(content) = content {
                fields = fields.content(wrap(content));
            }
            Some(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(call_id.as_str().to_owned(), fields)))
        }
        EventKind::ToolCallCompleted { call_id, output, is_error } => Some(SessionUpdate::ToolCallUpdate(
            ToolCallUpdate::new(call_id.as_str().to_owned(), completed_fields(output, *is_error)),
        )),
        EventKind::ContextMeasured { used, size } => Some(SessionUpdate::UsageUpdate(UsageUpdate::new(*used, *size))),
        EventKind::SessionMetaChanged { title, updated_at } => {
            let mut info = SessionInfoUpdate::new();
            if let Some(title) = title {
                info = info.title(title.clone());
            }
            if let Some(updated_at) = updated_at {
                info = info.updated_at(updated_at.clone());
            }
            Some(SessionUpdate::SessionInfoUpdate(info))
        }
        _ => None,
    }
}

/// Tool output wrapped as tool-call content.
pub(crate) fn wrap(content: &[ContentBlock]) -> Vec<ToolCallContent> {
    content.iter().cloned().map(ToolCallContent::from).collect()
}

/// The fields of a finished tool call.
pub(crate) fn completed_fields(output: &[ContentBlock], is_error: bool) -> ToolCallUpdateFields {
    let status = if is_error { ToolCallStatus::Failed } else { ToolCallStatus::Completed };
    let fields = ToolCallUpdateFields::new().status(status);
    if output.is_empty() { fields } else { fields.content(wrap(output)) }
}

/// The complete `session/update` line for a text chunk, written directly: token deltas are the
/// hottest path of the agent, and serde's machinery for the tagged ACP enums costs several times
/// more than the bytes themselves. The output is byte-identical to serialising the equivalent
/// [`SessionNotification`](crate::acp::SessionNotification) (a test holds it to that).
pub(crate) fn text_chunk_line(session_id: &str, channel: TokenChannel, text: &str) -> Vec<u8> {
    let kind = match channel {
        TokenChannel::Message => "agent_message_chunk",
        TokenChannel::Thought => "agent_thought_chunk",
    };
    let mut line = Vec::with_capacity(120 + session_id.len() + text.len());
    line.extend_from_slice(br#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"#);
    json_string(&mut line, session_id);
    line.extend_from_slice(br#","update":{"sessionUpdate":""#);
    line.extend_from_slice(kind.as_bytes());
    line.extend_from_slice(br#"","content":{"type":"text","text":"#);
    json_string(&mut line, text);
    line.extend_from_slice(b"}}}}\n");
    line
}

fn json_string(out: &mut Vec<u8>, s: &str) {
    // Writing a &str into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, s);
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::acp::{SessionId, SessionNotification};

    fn generic(session: &str, channel: TokenChannel, text: &str) -> Vec<u8> {
        let event = crate::harness::Event {
            header: crate::harness::EventHeader {
                id: crate::harness::EventId::new("e"),
                seq: 0,
                class: crate::harness::EventClass::Ephemeral,
                visibility: crate::harness::Visibility::Public,
                cause: crate::harness::Cause::default(),
                coordinates: crate::harness::Coordinates::default(),
            },
            kind: EventKind::TokenDelta { text: text.to_owned(), channel },
        };
        let update = translate(&event).expect("a token delta translates");
        crate::rpc::message::notification_line(
            "session/update",
            &SessionNotification::new(SessionId::new(session), update),
        )
    }

    proptest! {
        #[test]
        fn the_direct_chunk_line_equals_the_generic_serialisation(
            session in "\\PC{0,40}",
            text in "\\PC{0,60}|[\"\\\\\u{0}-\u{1f}\u{7f}\u{2028}]{0,8}",
            thought in any::<bool>(),
        ) {
            let channel = if thought { TokenChannel::Thought } else { TokenChannel::Message };
            prop_assert_eq!(
                String::from_utf8(text_chunk_line(&session, channel, &text)).unwrap(),
                String::from_utf8(generic(&session, channel, &text)).unwrap()
            );
        }
    }
}
