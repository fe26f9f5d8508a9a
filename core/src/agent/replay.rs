//! The replay of a session's history for `session/load`: its conversation rebuilt from its
//! Enduring events.
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

use std::collections::HashMap;

use super::translate::completed_fields;
use crate::acp::{ContentBlock, ContentChunk, SessionUpdate, ToolCall, ToolCallStatus, ToolKind, UsageUpdate};
use crate::harness::{Event, EventClass, EventKind, Message, ToolCallId, ToolCallRequest};

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
