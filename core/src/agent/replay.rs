//! `session/load`: rebuild the conversation from the session's Enduring events, then serve it live.
//!
//! Live token and tool-progress events are Ephemeral and never journaled, so the replay is rebuilt
//! from durable events alone, in four buckets, all before the response:
//! 1. every user message (from `TurnStarted`), as `user_message_chunk`s;
//! 2. every assistant message (from `StepDone`'s AI messages): thoughts as `agent_thought_chunk`,
//!    text as `agent_message_chunk`;
//! 3. every completed tool call (from `StepDone`'s tool results, with the call the AI message
//!    asked for), as one `tool_call` carrying its final status and output;
//! 4. one `usage_update` from the last `ContextMeasured`.
//!
//! `TurnDone` is never translated: its message repeats content the steps already hold. Only
//! `Public` events are replayed. The grouping deliberately does not interleave turns.
//!
//! As for `session/resume`, the id is reserved before the host is called (a live id or one being
//! reopened never reaches the host, and two loads can never replay twice), and a loaded session
//! the facade cannot serve is shut down again.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::close::discard;
use super::prompt::send_update;
use super::resume::{ensure_not_live, ensure_same_id, initial_state_or_close};
use super::session::{register, validate_session_id};
use super::translate::completed_fields;
use super::{AgentInner, Reply, cancellable, decode, encode};
use crate::acp::{
    ContentBlock, ContentChunk, LoadSessionRequest, LoadSessionResponse, SessionUpdate, ToolCall, ToolCallStatus,
    ToolKind, UsageUpdate,
};
use crate::error::{Error, ErrorExt};
use crate::harness::{Event, EventClass, EventKind, Message, ToolCallId, ToolCallRequest};
use crate::host::Setup;

/// `session/load`.
pub(crate) fn load_session(agent: &Arc<AgentInner>, params: Value, cancelled: CancellationToken) -> Reply {
    let agent = agent.clone();
    Box::pin(async move {
        let request: LoadSessionRequest = decode(params)?;
        validate_session_id(&request.session_id.0)?;
        agent.require_authenticated()?;
        ensure_not_live(&agent, &request.session_id)?;
        let setup = Setup::new(request.cwd, request.additional_directories.clone(), request.mcp_servers.clone())?;
        let host = agent.options.loader.clone().ok_or_else(|| Error::method_not_found_msg("session/load"))?;
        let reservation = agent.registry.reserve_id(&request.session_id)?;
        let loaded =
            cancellable(&cancelled, "session/load", host.load_session(request.session_id.clone(), setup.clone()))
                .await?;
        let live = loaded.session;
        let replayed = async {
            ensure_same_id(&request.session_id, live.as_ref())?;
            for update in replay_updates(&loaded.history) {
                send_update(&agent, &request.session_id, update).await?;
            }
            Ok::<_, Error>(())
        }
        .await;
        let entry = match replayed.and_then(|()| register(&agent, reservation, live.clone(), setup)) {
            Ok(entry) => entry,
            Err(e) => {
                discard(&agent, live.as_ref()).await;
                return Err(e);
            }
        };
        let mut response = LoadSessionResponse::new();
        if let Some(state) = initial_state_or_close(&agent, &entry).await? {
            response = response.config_options(state.options).modes(state.modes);
        }
        encode(&response)
    })
}

/// The replay of `history`, in the four-bucket order.
pub fn replay_updates(history: &[Event]) -> Vec<SessionUpdate> {
    let mut users = Vec::new();
    let mut assistants = Vec::new();
    let mut requested: HashMap<ToolCallId, ToolCallRequest> = HashMap::new();
    let mut tools = Vec::new();
    let mut usage = None;
    let durable = history.iter().filter(|e| e.header.class == EventClass::Enduring && e.is_public());
    for event in durable {
        match &event.kind {
            EventKind::TurnStarted { message } => {
                users.extend(message.content.iter().cloned().map(|c| chunk(SessionUpdate::UserMessageChunk, c)));
            }
            EventKind::StepDone { messages } => {
                for message in messages {
                    match message {
                        Message::Ai(ai) => {
                            assistants.extend(
                                ai.thoughts.iter().cloned().map(|c| chunk(SessionUpdate::AgentThoughtChunk, c)),
                            );
                            assistants
                                .extend(ai.content.iter().cloned().map(|c| chunk(SessionUpdate::AgentMessageChunk, c)));
                            for call in &ai.tool_calls {
                                requested.insert(call.call_id.clone(), call.clone());
                            }
                        }
                        Message::ToolResult(result) => {
                            let call = requested.get(&result.call_id);
                            tools.push(SessionUpdate::ToolCall(completed_tool_call(
                                &result.call_id,
                                call,
                                &result.output,
                                result.is_error,
                            )));
                        }
                        Message::User(_) => {}
                    }
                }
            }
            EventKind::ContextMeasured { used, size } => usage = Some(UsageUpdate::new(*used, *size)),
            _ => {}
        }
    }
    let mut out = users;
    out.extend(assistants);
    out.extend(tools);
    out.extend(usage.map(SessionUpdate::UsageUpdate));
    out
}

fn chunk(variant: fn(ContentChunk) -> SessionUpdate, content: ContentBlock) -> SessionUpdate {
    variant(ContentChunk::new(content))
}

fn completed_tool_call(
    call_id: &ToolCallId,
    call: Option<&ToolCallRequest>,
    output: &[ContentBlock],
    is_error: bool,
) -> ToolCall {
    let fields = completed_fields(output, is_error);
    let mut tool = ToolCall::new(
        call_id.as_str().to_owned(),
        call.map_or_else(|| call_id.as_str().to_owned(), |c| c.name.clone()),
    )
    .kind(call.map_or(ToolKind::Other, |c| c.kind))
    .status(if is_error { ToolCallStatus::Failed } else { ToolCallStatus::Completed });
    if let Some(call) = call {
        tool = tool.raw_input(call.input.clone());
    }
    if let Some(content) = fields.content {
        tool = tool.content(content);
    }
    tool
}
