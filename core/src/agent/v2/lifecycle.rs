//! The v2 prompt lifecycle around the v1 turn: the acknowledgement (with the user message's id),
//! the user message and the running state when the prompt is accepted; the idle state with the
//! stop reason when the turn ends. And the end of a replay.

use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{Value, json};

use super::super::method::SESSION_UPDATE;
use super::super::state::AgentInner;
use crate::acp::{ContentBlock, SessionId, StopReason};
use crate::error::Error;
use crate::rpc::message::notification_line;
use crate::rpc::{Answer, RequestContext};

/// Numbers the user messages of this process (their ids also name the session).
static USER_MESSAGES: AtomicU64 = AtomicU64::new(0);

/// The prompt was accepted: answers it with its user message's id, then reports the message and
/// the running state.
pub(in super::super) async fn accepted(
    agent: &AgentInner,
    cx: &RequestContext,
    session: &SessionId,
    prompt: &[ContentBlock],
) {
    let n = USER_MESSAGES.fetch_add(1, Ordering::Relaxed) + 1;
    let message_id = format!("{session}/user-{}-{n}", std::process::id());
    cx.answer_now(agent.peer(), Answer::from(json!({ "messageId": message_id }))).await;
    let message = json!({ "sessionUpdate": "user_message", "messageId": message_id, "content": prompt });
    let _ = agent.peer().send_line(update_line(session, &message)).await;
    let running = json!({ "sessionUpdate": "state_update", "state": "running" });
    let _ = agent.peer().send_line(update_line(session, &running)).await;
}

/// The turn ended: the idle state with its stop reason (`error` for a turn that failed).
pub(in super::super) async fn ended(agent: &AgentInner, session: &SessionId, outcome: Result<StopReason, &Error>) {
    let stop = match outcome {
        Ok(stop) => serde_json::to_value(stop).unwrap_or_else(|_| json!("end_turn")),
        Err(e) => {
            tracing::info!(session = %session, error = %e.message, "the turn failed; v2 reports it as `error`");
            json!("error")
        }
    };
    let idle = json!({ "sessionUpdate": "state_update", "state": "idle", "stopReason": stop });
    let _ = agent.peer().send_line(update_line(session, &idle)).await;
}

/// The turn waits for the user (a permission request): `requires_action`.
pub(in super::super) async fn requires_action(agent: &AgentInner, session: &SessionId) {
    let waiting = json!({ "sessionUpdate": "state_update", "state": "requires_action" });
    let _ = agent.peer().send_line(update_line(session, &waiting)).await;
}

/// The user answered: the turn runs again.
pub(in super::super) async fn running(agent: &AgentInner, session: &SessionId) {
    let running = json!({ "sessionUpdate": "state_update", "state": "running" });
    let _ = agent.peer().send_line(update_line(session, &running)).await;
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

/// The `replay_complete` marker of a replay of `session`.
pub(in super::super) fn replay_complete_line(session: &SessionId) -> Vec<u8> {
    update_line(session, &json!({ "sessionUpdate": "replay_complete" }))
}

fn update_line(session: &SessionId, update: &Value) -> Vec<u8> {
    notification_line(SESSION_UPDATE, &json!({ "sessionId": session, "update": update }))
}
