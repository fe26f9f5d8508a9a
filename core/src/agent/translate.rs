//! The live translator: one `Public` harness event → at most one `session/update`.
//!
//! Visibility is checked here, by the translator itself, and not trusted to any filter upstream:
//! an `Internal` event never becomes an update. So are the client's capabilities: an update that
//! the schema gates behind a capability reaches only a client that advertised it (`notice`,
//! `compaction_*`, `subagent_update`, `session_message*`, `plan_update`, `plan_removed`); for any
//! other client it degrades to what that client understands (a plan with an id becomes a whole
//! `plan`) or is skipped. Hosts emit one event whatever the client. `TurnStarted`, `StepDone` and `TurnDone` are not
//! translated live (their content was already streamed); anything without a faithful ACP form is
//! skipped, never guessed. The prompt's drain handles two kinds itself before asking here:
//! `SessionMetaChanged` (sent only when it changes what the client was told) and `ResponseMeta`
//! (never an update).

use crate::acp::{
    ContentBlock, ContentChunk, Plan, PlanUpdateContent, SessionId, SessionInfoUpdate, SessionNotification,
    SessionUpdate, ToolCall, ToolCallContent, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields, UsageUpdate,
};
use crate::client::Capabilities;
use crate::harness::{Event, EventKind, TokenChannel, ToolCallChanges};
use crate::rpc::message::{notification_head, notification_line, notification_tail};

use super::method::SESSION_UPDATE;

/// The update for `event` as a client with `client` capabilities may receive it, or `None` when
/// it is internal, has no live form, or is gated behind a capability the client lacks.
pub(super) fn translate(event: &Event, client: &Capabilities) -> Option<SessionUpdate> {
    if !event.is_public() {
        return None;
    }
    if let EventKind::TokenDelta { .. } = &event.kind {
        // Token deltas are the hot path; the owned form moves their text instead of copying it.
        return translate_owned(event.clone(), client);
    }
    translate_borrowed(event, client)
}

/// Like [`translate`], consuming the event (no copy of streamed text).
pub(super) fn translate_owned(event: Event, client: &Capabilities) -> Option<SessionUpdate> {
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
        _ => translate_borrowed(&event, client),
    }
}

fn translate_borrowed(event: &Event, client: &Capabilities) -> Option<SessionUpdate> {
    match &event.kind {
        EventKind::ToolCallStarted { .. } => tool_call(event).map(SessionUpdate::ToolCall),
        EventKind::ToolCallProgress { call_id, status, content, changes } => {
            let fields = changed(ToolCallUpdateFields::new().status(*status).content(content.clone()), changes);
            Some(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(call_id.as_str().to_owned(), fields)))
        }
        EventKind::ToolCallCompleted { call_id, output, is_error, changes } => {
            let fields = changed(completed_fields(output, *is_error), changes);
            Some(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(call_id.as_str().to_owned(), fields)))
        }
        EventKind::ContextMeasured { used, size, cost } => {
            Some(SessionUpdate::UsageUpdate(UsageUpdate::new(*used, *size).cost(cost.as_deref().cloned())))
        }
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
        EventKind::PlanUpdated { plan } => Some(SessionUpdate::Plan(plan.clone())),
        EventKind::PlanChanged { update } if client.plan_operations() => {
            Some(SessionUpdate::PlanUpdate(update.as_ref().clone()))
        }
        EventKind::PlanChanged { update } => Some(SessionUpdate::Plan(whole_plan(&update.plan))),
        EventKind::PlanRemoved { removed } if client.plan_operations() => {
            Some(SessionUpdate::PlanRemoved(removed.as_ref().clone()))
        }
        EventKind::PlanRemoved { .. } => Some(SessionUpdate::Plan(Plan::new(Vec::new()))),
        EventKind::Notice { notice } if client.notices() => Some(SessionUpdate::Notice(notice.as_ref().clone())),
        EventKind::CompactionChanged { update } if client.compaction() => {
            Some(SessionUpdate::CompactionUpdate(update.as_ref().clone()))
        }
        EventKind::CompactionSummary { chunk } if client.compaction() => {
            Some(SessionUpdate::CompactionSummaryChunk(chunk.as_ref().clone()))
        }
        EventKind::SubagentChanged { update } if client.subagents() => {
            Some(SessionUpdate::SubagentUpdate(update.as_ref().clone()))
        }
        EventKind::SessionMessage { message } if client.subagents() => {
            Some(SessionUpdate::SessionMessage(message.as_ref().clone()))
        }
        EventKind::SessionMessageChunk { chunk } if client.subagents() => {
            Some(SessionUpdate::SessionMessageChunk(chunk.as_ref().clone()))
        }
        _ => None,
    }
}

/// The whole `plan` a client without plan operations is sent for a plan with an id: its entries
/// (a Markdown plan has none).
pub(super) fn whole_plan(plan: &PlanUpdateContent) -> Plan {
    match plan {
        PlanUpdateContent::Items(items) => Plan::new(items.entries.clone()),
        _ => Plan::new(Vec::new()),
    }
}

/// The complete `session/update` line for `event`, or `None` when it is internal or has no live
/// form — the same bytes as serialising the notification of [`translate`]'s update. The frequent
/// updates (text chunks, usage) are written directly.
///
/// `head` is the session's [`UpdateHead`]; `client` what the client advertised.
pub(crate) fn live_update_line(
    session_id: &SessionId,
    head: &UpdateHead,
    event: &Event,
    client: &Capabilities,
) -> Option<Vec<u8>> {
    if !event.is_public() {
        return None;
    }
    match &event.kind {
        EventKind::TokenDelta { text, channel } => Some(text_chunk_line(head, *channel, None, text)),
        EventKind::ContextMeasured { used, size, cost: None } => Some(usage_line(head, *used, *size)),
        _ => translate_borrowed(event, client).map(|update| update_line(session_id, update)),
    }
}

/// The complete `session/update` line carrying `update`.
pub(crate) fn update_line(session_id: &SessionId, update: SessionUpdate) -> Vec<u8> {
    notification_line(SESSION_UPDATE, &SessionNotification::new(session_id.clone(), update))
}

/// The `tool_call` a `ToolCallStarted` event announces (`None` for any other event); a `null` raw
/// input is left out.
pub(crate) fn tool_call(event: &Event) -> Option<ToolCall> {
    let EventKind::ToolCallStarted { call_id, name, kind, details } = &event.kind else {
        return None;
    };
    Some(
        ToolCall::new(call_id.as_str().to_owned(), name.clone())
            .name(details.tool_name.clone())
            .kind(*kind)
            .status(details.status.unwrap_or(ToolCallStatus::Pending))
            .raw_input((!details.input.is_null()).then(|| details.input.clone()))
            .content(details.content.clone())
            .locations(details.locations.clone())
            .raw_output(details.raw_output.clone()),
    )
}

/// `fields` with the `changes` of a tool-call event.
fn changed(fields: ToolCallUpdateFields, changes: &ToolCallChanges) -> ToolCallUpdateFields {
    fields
        .title(changes.title.clone())
        .name(changes.tool_name.clone())
        .kind(changes.kind)
        .locations(changes.locations.clone())
        .raw_input(changes.raw_input.clone())
        .raw_output(changes.raw_output.clone())
}

/// The fields of a finished tool call: its status, and its content when it has some.
pub(crate) fn completed_fields(output: &[ToolCallContent], is_error: bool) -> ToolCallUpdateFields {
    let status = if is_error { ToolCallStatus::Failed } else { ToolCallStatus::Completed };
    let fields = ToolCallUpdateFields::new().status(status);
    if output.is_empty() { fields } else { fields.content(output.to_vec()) }
}

/// The start of a session's `session/update` lines, up to their update's tag:
/// `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"…","update":{"sessionUpdate":"`
/// (the envelope's bytes are [`notification_head`]'s). The same for every update of the session,
/// so it is written once, when the session is registered, and copied into each directly written
/// line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct UpdateHead(Box<[u8]>, std::ops::Range<usize>);

impl UpdateHead {
    /// The head of the lines of the session `session_id`.
    pub(crate) fn new(session_id: &str) -> Self {
        const SESSION: &[u8] = br#"{"sessionId":"#;
        const TAG: &[u8] = br#","update":{"sessionUpdate":""#;
        let mut head = notification_head(SESSION_UPDATE, SESSION.len() + session_id.len() + 2 + TAG.len());
        head.extend_from_slice(SESSION);
        let start = head.len() + 1;
        json_string(&mut head, session_id);
        let session = start..head.len() - 1;
        head.extend_from_slice(TAG);
        Self(head.into_boxed_slice(), session)
    }

    /// The session id as it is written inside a JSON string (escaped, without its quotes).
    pub(crate) fn escaped_session_id(&self) -> &[u8] {
        &self.0[self.1.clone()]
    }

    /// A line holding the head, with room for `rest` more bytes (the update's tag and fields,
    /// then the closing braces and newline of [`notification_tail`]).
    pub(crate) fn line(&self, rest: usize) -> Vec<u8> {
        let mut line = Vec::with_capacity(self.0.len() + rest);
        line.extend_from_slice(&self.0);
        line
    }
}

/// The complete `session/update` line for a text chunk, written directly: token deltas are the
/// hottest path of the agent, and serde's machinery for the tagged ACP enums costs several times
/// more than the bytes themselves. The output is byte-identical to serialising the equivalent
/// [`SessionNotification`] (a test holds it to that).
///
/// `message_id` (ACP v2, which requires one on every chunk) is the id as a JSON string, quotes
/// included: it is written right after the update's tag (`"sessionUpdate":"…","messageId":…,`),
/// where v2 connections have always had it.
pub(crate) fn text_chunk_line(
    head: &UpdateHead,
    channel: TokenChannel,
    message_id: Option<&[u8]>,
    text: &str,
) -> Vec<u8> {
    const MESSAGE_ID: &[u8] = br#"","messageId":"#;
    const CONTENT: &[u8] = br#"","content":{"type":"text","text":"#;
    // The content's, the update's and the params' braces, then the envelope's end.
    const TAIL: &[u8] = &notification_tail::<5>(b"}}}");
    let kind = match channel {
        TokenChannel::Message => "agent_message_chunk",
        TokenChannel::Thought => "agent_thought_chunk",
    };
    let id_len = message_id.map_or(0, |id| MESSAGE_ID.len() + id.len());
    // The text's two quotes and a few escapes included.
    let mut line = head.line(kind.len() + id_len + CONTENT.len() + text.len() + 2 + TAIL.len() + 16);
    line.extend_from_slice(kind.as_bytes());
    match message_id {
        None => line.extend_from_slice(CONTENT),
        Some(id) => {
            line.extend_from_slice(MESSAGE_ID);
            line.extend_from_slice(id);
            // The content's key, after the id's closing quote.
            line.extend_from_slice(&CONTENT[1..]);
        }
    }
    json_string(&mut line, text);
    line.extend_from_slice(TAIL);
    line
}

/// The complete `session/update` line for a usage update, written directly like
/// [`text_chunk_line`] (one is sent every turn); byte-identical to the serialised notification.
pub(crate) fn usage_line(head: &UpdateHead, used: u64, size: u64) -> Vec<u8> {
    const USED: &[u8] = br#"usage_update","used":"#;
    const SIZE: &[u8] = br#","size":"#;
    // The update's and the params' braces, then the envelope's end.
    const TAIL: &[u8] = &notification_tail::<4>(b"}}");
    // Two numbers of at most 20 digits each.
    let mut line = head.line(USED.len() + SIZE.len() + TAIL.len() + 40);
    line.extend_from_slice(USED);
    json_number(&mut line, used);
    line.extend_from_slice(SIZE);
    json_number(&mut line, size);
    line.extend_from_slice(TAIL);
    line
}

fn json_string(out: &mut Vec<u8>, s: &str) {
    // Writing a &str into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, s);
}

fn json_number(out: &mut Vec<u8>, n: u64) {
    // Writing a number into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, &n);
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn generic(session: &str, channel: TokenChannel, text: &str) -> Vec<u8> {
        let update =
            translate(&event(EventKind::TokenDelta { text: text.to_owned(), channel }), &Capabilities::default())
                .expect("a token delta translates");
        crate::rpc::message::notification_line(
            "session/update",
            &SessionNotification::new(SessionId::new(session), update),
        )
    }

    fn event(kind: EventKind) -> crate::harness::Event {
        crate::harness::Event {
            header: crate::harness::EventHeader {
                id: crate::harness::EventId::new("e"),
                seq: 0,
                class: crate::harness::EventClass::Ephemeral,
                visibility: crate::harness::Visibility::Public,
                cause: crate::harness::Cause::default(),
                coordinates: crate::harness::Coordinates::default(),
            },
            kind,
        }
    }

    proptest! {
        #[test]
        fn the_direct_usage_line_equals_the_generic_serialisation(
            session in "\\PC{0,40}",
            used in any::<u64>(),
            size in any::<u64>(),
        ) {
            let id = SessionId::new(session.as_str());
            let kind = EventKind::ContextMeasured { used, size, cost: None };
            let client = Capabilities::default();
            let generic = update_line(&id, translate(&event(kind.clone()), &client).expect("usage translates"));
            prop_assert_eq!(live_update_line(&id, &UpdateHead::new(&session), &event(kind), &client), Some(generic));
        }

        #[test]
        fn the_head_knows_its_escaped_session_id(session in "\\PC{0,40}|[\"\\\\\u{0}-\u{1f}]{0,8}") {
            let escaped = serde_json::to_vec(&session).unwrap();
            let head = UpdateHead::new(&session);
            prop_assert_eq!(head.escaped_session_id(), &escaped[1..escaped.len() - 1]);
        }

        #[test]
        fn the_direct_chunk_line_equals_the_generic_serialisation(
            session in "\\PC{0,40}",
            text in "\\PC{0,60}|[\"\\\\\u{0}-\u{1f}\u{7f}\u{2028}]{0,8}",
            thought in any::<bool>(),
        ) {
            let channel = if thought { TokenChannel::Thought } else { TokenChannel::Message };
            prop_assert_eq!(
                String::from_utf8(text_chunk_line(&UpdateHead::new(&session), channel, None, &text)).unwrap(),
                String::from_utf8(generic(&session, channel, &text)).unwrap()
            );
        }

        #[test]
        fn the_v2_chunk_line_is_the_v1_line_with_the_id_after_the_tag(
            session in "\\PC{0,40}",
            id in "\\PC{0,40}",
            text in "\\PC{0,60}",
            thought in any::<bool>(),
        ) {
            let channel = if thought { TokenChannel::Thought } else { TokenChannel::Message };
            let head = UpdateHead::new(&session);
            let v1 = text_chunk_line(&head, channel, None, &text);
            let id_json = serde_json::to_vec(&id).unwrap();
            let v2 = text_chunk_line(&head, channel, Some(&id_json), &text);
            // Where v2 connections have always had it: right after the update's tag.
            let tag = head.0.len() + if thought { "agent_thought_chunk" } else { "agent_message_chunk" }.len() + 2;
            let mut expected = v1[..tag].to_vec();
            expected.extend_from_slice(br#""messageId":"#);
            expected.extend_from_slice(&id_json);
            expected.push(b',');
            expected.extend_from_slice(&v1[tag..]);
            prop_assert_eq!(String::from_utf8(v2).unwrap(), String::from_utf8(expected).unwrap());
        }
    }
}
