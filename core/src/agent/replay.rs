//! The replay of a session's history for `session/load`: its conversation rebuilt from its
//! Enduring events.
//!
//! Live token and tool-progress events are Ephemeral and never journaled, so the replay is rebuilt
//! from durable events alone, in four buckets, all before the response:
//! 1. every user message (from `TurnStarted`), as `user_message_chunk`s;
//! 2. every assistant message (from `StepDone`'s AI messages): thoughts as `agent_thought_chunk`,
//!    text as `agent_message_chunk`;
//!
//!    each message's chunks carry one `messageId` of their own — the user message's the id of its
//!    `TurnStarted` event, the n-th message of a step `<StepDone's event id>/<n>` — so that a
//!    client sees where one message ends and the next begins: without ids, the bucket's
//!    consecutive chunks read as one message (Zed joins every replayed user message into one).
//!    The ids are opaque to clients, unique in the session and the same at every load;
//! 3. every completed tool call (from `StepDone`'s tool results, with the call the AI message
//!    asked for), as one `tool_call` carrying its final status, title, kind, content (blocks and
//!    diffs), locations, raw input and raw output — once per call: a call whose result was
//!    journaled twice is replayed once, with its last result, where it first appeared. Terminals
//!    embedded in its content are left out: a terminal id names a terminal the client created for
//!    the live turn and was told to release, and a loading client (a new thread, often a new
//!    process) has no terminal of that id — Zed refuses the whole tool call that names one
//!    ("Terminal with id … not found"), so replaying it would lose the call, not just its output;
//! 4. one `usage_update` from the last `ContextMeasured` (with its cost, when it has one);
//!
//! then, after the four buckets, the session's latest plan (from the last `PlanUpdated`) as one
//! `plan` update — unless it has no entries. A plan update replaces the whole plan at the client,
//! so the latest one is what a client that watched the session live shows; replaying the earlier
//! ones would only redraw states long gone. It comes last, beside the usage: both are the
//! session's state now, not its history.
//!
//! Between the tool calls and the usage come the session's exchanges with its subagents
//! (`subagent_update`, `session_message`, `session_message_chunk`) and its compactions
//! (`compaction_update`, `compaction_summary_chunk`), in the order recorded — each only to a
//! client that advertised its capability, as live. Plans with ids replay as their latest form
//! each (`plan_update`, in the order they were first created; a removed one not at all) to a
//! client that advertised plan operations; any other client gets the latest plan as one whole
//! `plan`, whichever kind of event set it last.
//!
//! `TurnDone` is never translated: its message repeats content the steps already hold. Only
//! `Public` events are replayed. The grouping deliberately does not interleave turns.

use std::collections::HashMap;

use crate::acp::{
    ContentBlock, ContentChunk, MessageId, Plan, PlanId, PlanUpdate, PlanUpdateContent, SessionUpdate, ToolCall,
    ToolCallContent, ToolCallStatus, ToolKind, UsageUpdate,
};
use crate::client::Capabilities;
use crate::harness::{Event, EventClass, EventKind, Message, ToolCallId, ToolCallRequest, ToolResultMessage};

use super::translate::{translate, whole_plan};

/// The replay of `history` for a client with `client` capabilities, in the four-bucket order
/// (the exchanges with subagents and the compactions before the usage), then the plans.
pub(super) fn replay_updates(history: &[Event], client: &Capabilities) -> Vec<SessionUpdate> {
    let mut users = Vec::new();
    let mut assistants = Vec::new();
    let mut requested: HashMap<ToolCallId, ToolCallRequest> = HashMap::new();
    let mut tools: Vec<ToolCall> = Vec::new();
    let mut replayed: HashMap<ToolCallId, usize> = HashMap::new();
    let mut usage = None;
    let mut plan: Option<Plan> = None;
    let mut plans: Vec<(PlanId, PlanUpdate)> = Vec::new();
    let mut exchanges = Vec::new();
    let durable = history.iter().filter(|e| e.header.class == EventClass::Enduring && e.is_public());
    for event in durable {
        match &event.kind {
            EventKind::TurnStarted { message } => {
                // The id the client was told (v2), else the event's.
                let id = MessageId::new(message.id.as_deref().unwrap_or(event.header.id.as_str()));
                users.extend(message.content.iter().cloned().map(|c| chunk(SessionUpdate::UserMessageChunk, c, &id)));
            }
            EventKind::StepDone { messages } => {
                for (n, message) in messages.iter().enumerate() {
                    match message {
                        Message::Ai(ai) => {
                            let id = MessageId::new(format!("{}/{n}", event.header.id));
                            assistants.extend(
                                ai.thoughts.iter().cloned().map(|c| chunk(SessionUpdate::AgentThoughtChunk, c, &id)),
                            );
                            assistants.extend(
                                ai.content.iter().cloned().map(|c| chunk(SessionUpdate::AgentMessageChunk, c, &id)),
                            );
                            for call in &ai.tool_calls {
                                requested.insert(call.call_id.clone(), call.clone());
                            }
                        }
                        Message::ToolResult(result) => {
                            let tool = completed_tool_call(result, requested.get(&result.call_id));
                            if let Some(&at) = replayed.get(&result.call_id) {
                                tools[at] = tool;
                            } else {
                                replayed.insert(result.call_id.clone(), tools.len());
                                tools.push(tool);
                            }
                        }
                        Message::User(_) => {}
                    }
                }
            }
            EventKind::ContextMeasured { used, size, cost } => {
                usage = Some(UsageUpdate::new(*used, *size).cost(cost.as_deref().cloned()));
            }
            EventKind::PlanUpdated { plan: latest } => plan = Some(latest.clone()),
            EventKind::PlanChanged { update } => {
                let Some(id) = plan_id(&update.plan) else { continue };
                match plans.iter_mut().find(|(known, _)| known == id) {
                    Some((_, latest)) => *latest = update.as_ref().clone(),
                    None => plans.push((id.clone(), update.as_ref().clone())),
                }
                plan = Some(whole_plan(&update.plan));
            }
            EventKind::PlanRemoved { removed } => {
                plans.retain(|(known, _)| known != &removed.plan_id);
                plan = Some(Plan::new(Vec::new()));
            }
            EventKind::SubagentChanged { .. }
            | EventKind::SessionMessage { .. }
            | EventKind::SessionMessageChunk { .. }
            | EventKind::CompactionChanged { .. }
            | EventKind::CompactionSummary { .. } => exchanges.extend(translate(event, client)),
            _ => {}
        }
    }
    let mut out = users;
    out.extend(assistants);
    out.extend(tools.into_iter().map(SessionUpdate::ToolCall));
    out.extend(exchanges);
    out.extend(usage.map(SessionUpdate::UsageUpdate));
    if client.plan_operations() && !plans.is_empty() {
        out.extend(plans.into_iter().map(|(_, update)| SessionUpdate::PlanUpdate(update)));
    } else {
        out.extend(plan.filter(|p| !p.entries.is_empty()).map(SessionUpdate::Plan));
    }
    out
}

/// The id of a plan with an id (`None` for a kind of plan this crate does not know).
fn plan_id(plan: &PlanUpdateContent) -> Option<&PlanId> {
    match plan {
        PlanUpdateContent::Items(items) => Some(&items.plan_id),
        PlanUpdateContent::Markdown(markdown) => Some(&markdown.plan_id),
        _ => None,
    }
}

/// One replayed chunk of the message `id`.
fn chunk(variant: fn(ContentChunk) -> SessionUpdate, content: ContentBlock, id: &MessageId) -> SessionUpdate {
    variant(ContentChunk::new(content).message_id(id.clone()))
}

/// A finished call as it stood at its end: the result's fields over the request's, without its
/// embedded terminals (see the module doc).
fn completed_tool_call(result: &ToolResultMessage, call: Option<&ToolCallRequest>) -> ToolCall {
    let id = result.call_id.as_str();
    let title = result.changes.title.clone().or_else(|| call.map(|c| c.name.clone())).unwrap_or_else(|| id.to_owned());
    let kind = result.changes.kind.or(call.map(|c| c.kind)).unwrap_or(ToolKind::Other);
    let locations = result.changes.locations.clone().or_else(|| call.map(|c| c.locations.clone())).unwrap_or_default();
    let mut tool = ToolCall::new(id.to_owned(), title)
        .name(result.changes.tool_name.clone().or_else(|| call.and_then(|c| c.tool_name.clone())))
        .kind(kind)
        .status(if result.is_error { ToolCallStatus::Failed } else { ToolCallStatus::Completed })
        .content(result.output.iter().filter(|c| !matches!(c, ToolCallContent::Terminal(_))).cloned().collect())
        .locations(locations)
        .raw_output(result.changes.raw_output.clone());
    let raw_input = result.changes.raw_input.clone().or_else(|| call.map(|c| c.input.clone()));
    if let Some(raw_input) = raw_input.filter(|input| !input.is_null()) {
        tool = tool.raw_input(raw_input);
    }
    tool
}
