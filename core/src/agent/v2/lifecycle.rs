//! The v2 prompt lifecycle around the v1 turn: the acknowledgement (with the user message's id),
//! the user message and the running state when the prompt is accepted; the idle state with the
//! stop reason when the turn ends. And the end of a replay.

use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{Value, json};

use super::super::idempotency::Recorder;
use super::super::method::SESSION_UPDATE;
use super::super::session_state::SessionEntry;
use super::super::state::AgentInner;
use super::super::translate::UpdateHead;
use super::message_ids::{MessageIds, push_decimal};
use crate::acp::{ContentBlock, SessionId, StopReason};
use crate::error::Error;
use crate::rpc::message::{notification_line, notification_tail};
use crate::rpc::{Answer, RequestContext};

/// Numbers the user messages of this process (their ids also name the session).
static USER_MESSAGES: AtomicU64 = AtomicU64::new(0);

/// What follows the session id in this process's user message ids, before their count:
/// `/user-<start>-<pid>-`, where `<start>` is when the process started numbering them (seconds
/// since the epoch, in hex) and `<pid>` its id.
static USER_MESSAGE_INFIX: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    let start = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    format!("/user-{start:x}-{}-", std::process::id())
});

/// The prompt was accepted: answers it with its user message's id, then reports the message and
/// the running state. Returns the id (the host keeps it with the message, for replays) and the
/// ids of the turn's messages, under it (for the drain, which writes the turn's chunks). A
/// prompt with an idempotency key records the acknowledgement as the answer of its repeats.
///
/// These lines, and the turn's end, are written directly (as the translator writes chunks): one
/// of each is sent every turn. The id is escaped once: it is the session's id, already escaped
/// in the session's [`UpdateHead`], then ASCII.
pub(in super::super) async fn accepted(
    agent: &AgentInner,
    cx: &RequestContext,
    entry: &SessionEntry,
    prompt: &[ContentBlock],
    recorder: Option<Recorder>,
) -> (String, MessageIds) {
    let n = USER_MESSAGES.fetch_add(1, Ordering::Relaxed) + 1;
    // Unique in the session across processes: the process's start time and id, and a count.
    let head = &entry.update_head;
    let (message_id, escaped) = user_message_id(&entry.id.0, head.escaped_session_id(), n);
    // The client waits for the acknowledgement; the two lines behind it are flushed with it.
    let answer = acknowledgement(&escaped);
    let repeated = recorder.map(|recorder| (recorder, answer.clone()));
    cx.answer_now(agent.peer(), answer).await;
    if let Some((recorder, answer)) = repeated {
        // Queued: its repeats may be answered (when the announcement drops, here).
        drop(recorder.record(&Ok(answer)));
    }
    let _ = agent.peer().send_line(user_message_line(head, &escaped, prompt)).await;
    let _ = agent.peer().send_awaited_line(state_line(head, RUNNING)).await;
    (message_id, MessageIds::turn_escaped(escaped.as_bytes()))
}

/// The id of the `n`-th user message of this process, in `session` (whose id is `escaped` inside
/// a JSON string): `<session>/user-<start>-<pid>-<n>` (see [`USER_MESSAGE_INFIX`]); and the same
/// as it is written inside a JSON string.
fn user_message_id(session: &str, escaped: &[u8], n: u64) -> (String, String) {
    let infix = USER_MESSAGE_INFIX.as_str();
    let mut count = Vec::with_capacity(20);
    push_decimal(&mut count, n);
    let count = std::str::from_utf8(&count).unwrap_or_default();
    let id = |session: &str| {
        let mut id = String::with_capacity(session.len() + infix.len() + count.len());
        id.push_str(session);
        id.push_str(infix);
        id.push_str(count);
        id
    };
    // What serde_json wrote for a string is a string.
    (id(session), id(std::str::from_utf8(escaped).unwrap_or_default()))
}

/// The prompt's v2 response, `{"messageId":"<id>"}`, for the id `escaped` as it is written inside
/// a JSON string: the bytes of serialising it.
fn acknowledgement(escaped: &str) -> Answer {
    let mut json = String::with_capacity(escaped.len() + 16);
    json.push_str(r#"{"messageId":""#);
    json.push_str(escaped);
    json.push_str(r#""}"#);
    Answer::from_json(json)
}

/// The turn ended: the idle state with its stop reason (`error` for a turn that failed).
pub(in super::super) async fn ended(agent: &AgentInner, entry: &SessionEntry, outcome: Result<StopReason, &Error>) {
    let stop = outcome.map_err(|e| {
        tracing::info!(session = %entry.id, error = %e.message, "the turn failed; v2 reports it as `error`");
    });
    // The turn's output is complete, and its client waits for this line as a v1 client waits
    // for the response: the writer flushes it at once.
    let _ = agent.peer().send_awaited_line(idle_after_line(&entry.update_head, stop.ok())).await;
}

/// The turn waits for the user (a permission request): `requires_action`.
pub(in super::super) async fn requires_action(agent: &AgentInner, entry: &SessionEntry) {
    let _ = agent.peer().send_line(state_line(&entry.update_head, REQUIRES_ACTION)).await;
}

/// The user answered: the turn runs again.
pub(in super::super) async fn running(agent: &AgentInner, entry: &SessionEntry) {
    let _ = agent.peer().send_line(state_line(&entry.update_head, RUNNING)).await;
}

/// What follows the head of a `state_update` line, by state (the update's, the params' and the
/// envelope's braces included).
const RUNNING: &[u8] = &notification_tail::<35>(br#"state_update","state":"running"}}"#);
const REQUIRES_ACTION: &[u8] = &notification_tail::<43>(br#"state_update","state":"requires_action"}}"#);

/// A `state_update` line: `rest` is one of the constants above.
fn state_line(head: &UpdateHead, rest: &[u8]) -> Vec<u8> {
    let mut line = head.line(rest.len());
    line.extend_from_slice(rest);
    line
}

/// The idle `state_update` ending a turn: its stop reason, `error` (`None`) for a turn that failed.
fn idle_after_line(head: &UpdateHead, stop: Option<StopReason>) -> Vec<u8> {
    const IDLE: &[u8] = br#"state_update","state":"idle","stopReason":"#;
    const ERROR: &[u8] = br#""error""#;
    const TAIL: &[u8] = &notification_tail::<4>(b"}}");
    // The longest stop reason's name, quoted, fits.
    let mut line = head.line(IDLE.len() + 24 + TAIL.len());
    line.extend_from_slice(IDLE);
    match stop {
        // A stop reason is a plain word: writing it into a Vec cannot fail.
        Some(stop) => {
            let _ = serde_json::to_writer(&mut line, &stop);
        }
        None => line.extend_from_slice(ERROR),
    }
    line.extend_from_slice(TAIL);
    line
}

/// Writes `blocks` as a JSON array, the bytes `serde_json` writes for them: a plain text block
/// (the usual prompt) directly, any other through its serialisation.
fn content_blocks(out: &mut Vec<u8>, blocks: &[ContentBlock]) {
    const TEXT: &[u8] = br#"{"type":"text","text":"#;
    out.push(b'[');
    for (n, block) in blocks.iter().enumerate() {
        if n > 0 {
            out.push(b',');
        }
        // Writing a &str, or a content block (every map key a string), into a Vec cannot fail.
        match block {
            ContentBlock::Text(text) if text.annotations.is_none() && text.meta.is_none() => {
                out.extend_from_slice(TEXT);
                let _ = serde_json::to_writer(&mut *out, &text.text);
                out.push(b'}');
            }
            _ => {
                let _ = serde_json::to_writer(&mut *out, block);
            }
        }
    }
    out.push(b']');
}

/// The `user_message` line of a turn: its id (`escaped`, as it is written inside a JSON string)
/// and the prompt's content, as the client sent it.
fn user_message_line(head: &UpdateHead, escaped: &str, prompt: &[ContentBlock]) -> Vec<u8> {
    const KIND: &[u8] = br#"user_message","messageId":""#;
    const CONTENT: &[u8] = br#","content":"#;
    const TAIL: &[u8] = &notification_tail::<4>(b"}}");
    // Room for a short prompt: a text block's keys and its text, a few escapes.
    let content: usize =
        prompt.iter().map(|block| if let ContentBlock::Text(text) = block { text.text.len() + 40 } else { 256 }).sum();
    let mut line = head.line(KIND.len() + escaped.len() + 1 + CONTENT.len() + content + 2 + TAIL.len());
    line.extend_from_slice(KIND);
    line.extend_from_slice(escaped.as_bytes());
    line.push(b'"');
    line.extend_from_slice(CONTENT);
    content_blocks(&mut line, prompt);
    line.extend_from_slice(TAIL);
    line
}

/// A permission request's params with v2's prompt copy: `title` (the gate's); the writer's
/// rewriter turns its tool call into the `subject`.
pub(in super::super) fn permission_params(request: &crate::acp::RequestPermissionRequest, title: &str) -> Value {
    let mut params = serde_json::to_value(request).unwrap_or_default();
    if let Some(params) = params.as_object_mut() {
        params.insert("title".to_owned(), json!(title));
    }
    params
}

/// The state of `session` when nothing runs: idle, with no stop reason (no work ended).
pub(in super::super) fn idle_line(session: &SessionId) -> Vec<u8> {
    update_line(session, &json!({ "sessionUpdate": "state_update", "state": "idle" }))
}

/// The `replay_complete` marker of a replay of `session`.
pub(in super::super) fn replay_complete_line(session: &SessionId) -> Vec<u8> {
    update_line(session, &json!({ "sessionUpdate": "replay_complete" }))
}

fn update_line(session: &SessionId, update: &Value) -> Vec<u8> {
    notification_line(SESSION_UPDATE, &json!({ "sessionId": session, "update": update }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::acp::RequestId;

    /// The line as it was built before these lines were written directly: through a value.
    fn through_a_value(session: &str, update: &Value) -> Vec<u8> {
        update_line(&SessionId::new(session), update)
    }

    const SESSIONS: [&str; 3] = ["s", "sess_0a1b", "a \"quoted\" \\ \u{1} é"];

    #[test]
    fn the_state_lines_are_the_bytes_of_their_values() {
        for session in SESSIONS {
            let head = UpdateHead::new(session);
            for (rest, state) in [(RUNNING, "running"), (REQUIRES_ACTION, "requires_action")] {
                let expected = through_a_value(session, &json!({ "sessionUpdate": "state_update", "state": state }));
                assert_eq!(String::from_utf8(state_line(&head, rest)).unwrap(), String::from_utf8(expected).unwrap());
            }
            let stops = [
                StopReason::EndTurn,
                StopReason::MaxTokens,
                StopReason::MaxTurnRequests,
                StopReason::Refusal,
                StopReason::Cancelled,
            ];
            for stop in stops.map(Some).into_iter().chain([None]) {
                let name = stop.map_or(json!("error"), |stop| serde_json::to_value(stop).unwrap());
                let idle = json!({ "sessionUpdate": "state_update", "state": "idle", "stopReason": name });
                assert_eq!(
                    String::from_utf8(idle_after_line(&head, stop)).unwrap(),
                    String::from_utf8(through_a_value(session, &idle)).unwrap()
                );
            }
        }
    }

    #[test]
    fn the_user_message_line_is_the_bytes_of_its_value() {
        let prompt: Vec<ContentBlock> = serde_json::from_value(json!([
            { "type": "text", "text": "plain \u{1} \\ é" },
            { "type": "text", "text": "hello \"world\"\n", "annotations": { "priority": 0.5 } },
            { "type": "text", "text": "with meta", "_meta": { "k": "v" } },
            { "type": "image", "data": "AAAA", "mimeType": "image/png", "_meta": { "k": [1, 2.5, null] } },
            { "type": "resource_link", "uri": "file:///a%20b", "name": "a b", "size": 12 },
            { "type": "resource", "resource": { "uri": "file:///x", "text": "x", "mimeType": "text/plain" } },
        ]))
        .unwrap();
        let prompts = [&prompt[..], &prompt[..1], &[]];
        for (session, prompt) in SESSIONS.into_iter().flat_map(|session| prompts.map(|prompt| (session, prompt))) {
            let id = format!("{session}/user-1");
            let escaped = serde_json::to_string(&id).unwrap();
            let message = json!({ "sessionUpdate": "user_message", "messageId": id, "content": prompt });
            assert_eq!(
                String::from_utf8(user_message_line(&UpdateHead::new(session), &escaped[1..escaped.len() - 1], prompt))
                    .unwrap(),
                String::from_utf8(through_a_value(session, &message)).unwrap()
            );
        }
    }

    #[test]
    fn a_user_message_id_names_its_session_the_process_and_a_count() {
        let pid = std::process::id();
        for session in SESSIONS {
            let head = UpdateHead::new(session);
            let (id, escaped) = user_message_id(session, head.escaped_session_id(), 42);
            let start =
                id.strip_prefix(&format!("{session}/user-")).and_then(|rest| rest.strip_suffix(&format!("-{pid}-42")));
            assert!(start.is_some_and(|hex| u64::from_str_radix(hex, 16).is_ok()), "{id}");
            assert_eq!(format!("\"{escaped}\""), serde_json::to_string(&id).unwrap());
            let ack = crate::rpc::message::response_line(&RequestId::Number(7), &Ok(acknowledgement(&escaped)));
            let valued = crate::rpc::message::response_line(
                &RequestId::Number(7),
                &Ok(Answer::from(json!({ "messageId": id }))),
            );
            assert_eq!(String::from_utf8(ack).unwrap(), String::from_utf8(valued).unwrap());
        }
    }
}
