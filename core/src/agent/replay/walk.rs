//! The walk over a session's history that both replay orders share: every replayable piece of
//! the conversation, in the order the conversation happened and tagged with its [`Bucket`] and
//! its rank in that bucket's grouped order, and the session's state at the end (its last usage,
//! its latest plan or plans).
//!
//! Invariants:
//! - Only Enduring, `Public` events contribute; `TurnDone` never does (its message repeats what
//!   the steps already hold).
//! - A tool call is one piece, carrying its last result (a call whose result was journaled twice
//!   is replayed once), and only once it has a result. It stands where it was requested (right
//!   after the AI message that asked for it, as it was shown live — also when it finished in a
//!   later step), or where its first result was journaled when no public AI message asked for it;
//!   its rank is the order of its first result among the calls, the grouped order of the tools.
//!   Every other piece has rank 0: the grouped order keeps them as recorded.
//! - Message ids are derived from the journal alone (see the module doc of [`replay`](super)),
//!   never from the position of a piece: reordering pieces does not change them.

use std::collections::HashMap;

use crate::acp::{
    ContentBlock, ContentChunk, MessageId, Plan, PlanId, PlanUpdate, PlanUpdateContent, SessionUpdate, ToolCall,
    ToolCallContent, ToolCallStatus, ToolKind, UsageUpdate,
};
use crate::client::Capabilities;
use crate::harness::{Event, EventClass, EventKind, Message, ToolCallId, ToolCallRequest, ToolResultMessage};

use super::super::translate::{translate, whole_plan};

/// What a piece of the conversation is; the grouped order replays the buckets in this order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Bucket {
    /// A user message's chunks (from `TurnStarted`).
    User,
    /// An assistant message's thought and text chunks (from `StepDone`'s AI messages).
    Assistant,
    /// A completed tool call (from `StepDone`'s tool results).
    Tool,
    /// An exchange with a subagent or a compaction, each only to a client that advertised it.
    Exchange,
}

/// One replayed update of the conversation.
pub(super) struct Piece {
    /// What it is.
    pub(super) bucket: Bucket,
    /// Its place in its bucket's grouped order, when that is not the order of the pieces (tool
    /// calls: the order of their first results); 0 otherwise.
    pub(super) rank: usize,
    /// The update.
    pub(super) update: SessionUpdate,
}

/// A session's history walked once: its pieces in the order the conversation happened, then its
/// state.
pub(super) struct Walked {
    /// Every replayed update of the conversation, turn by turn.
    pub(super) pieces: Vec<Piece>,
    /// The last usage measured.
    pub(super) usage: Option<UsageUpdate>,
    /// The latest plan, whole, whichever kind of event set it last.
    pub(super) plan: Option<Plan>,
    /// The latest form of each plan with an id, in the order they were first created (a removed
    /// one left out).
    pub(super) plans: Vec<(PlanId, PlanUpdate)>,
}

/// Walks `history` for a client with `client` capabilities (see the module doc).
pub(super) fn walk(history: &[Event], client: &Capabilities) -> Walked {
    // The pieces, with a slot reserved for each tool call where it was requested (empty until
    // it has a result).
    let mut slots: Vec<(Bucket, Option<SessionUpdate>)> = Vec::new();
    let mut requested: HashMap<ToolCallId, ToolCallRequest> = HashMap::new();
    // Each tool call's slot, and the slots of the calls in the order of their first results.
    let mut slot_of: HashMap<ToolCallId, usize> = HashMap::new();
    let mut first_results: Vec<usize> = Vec::new();
    let mut usage = None;
    let mut plan: Option<Plan> = None;
    let mut plans: Vec<(PlanId, PlanUpdate)> = Vec::new();
    let durable = history.iter().filter(|e| e.header.class == EventClass::Enduring && e.is_public());
    for event in durable {
        match &event.kind {
            EventKind::TurnStarted { message } => {
                // The id the client was told (v2), else the event's.
                let id = MessageId::new(message.id.as_deref().unwrap_or(event.header.id.as_str()));
                let chunks = message.content.iter().map(|c| chunk(SessionUpdate::UserMessageChunk, c.clone(), &id));
                slots.extend(chunks.map(|update| (Bucket::User, Some(update))));
            }
            EventKind::StepDone { messages } => {
                for (n, message) in messages.iter().enumerate() {
                    match message {
                        Message::Ai(ai) => {
                            let id = MessageId::new(format!("{}/{n}", event.header.id));
                            let thoughts =
                                ai.thoughts.iter().map(|c| chunk(SessionUpdate::AgentThoughtChunk, c.clone(), &id));
                            let texts =
                                ai.content.iter().map(|c| chunk(SessionUpdate::AgentMessageChunk, c.clone(), &id));
                            slots.extend(thoughts.chain(texts).map(|update| (Bucket::Assistant, Some(update))));
                            for call in &ai.tool_calls {
                                requested.insert(call.call_id.clone(), call.clone());
                                slot_of.entry(call.call_id.clone()).or_insert_with(|| {
                                    slots.push((Bucket::Tool, None));
                                    slots.len() - 1
                                });
                            }
                        }
                        Message::ToolResult(result) => {
                            let tool =
                                SessionUpdate::ToolCall(completed_tool_call(result, requested.get(&result.call_id)));
                            let at = *slot_of.entry(result.call_id.clone()).or_insert_with(|| {
                                slots.push((Bucket::Tool, None));
                                slots.len() - 1
                            });
                            if slots[at].1.is_none() {
                                first_results.push(at);
                            }
                            slots[at].1 = Some(tool);
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
            | EventKind::CompactionSummary { .. } => {
                slots.extend(translate(event, client).map(|update| (Bucket::Exchange, Some(update))));
            }
            _ => {}
        }
    }
    let mut rank = vec![0; slots.len()];
    for (n, &at) in first_results.iter().enumerate() {
        rank[at] = n;
    }
    // A call requested but never finished has no slot filled: it is not replayed.
    let pieces = slots
        .into_iter()
        .zip(rank)
        .filter_map(|((bucket, update), rank)| Some(Piece { bucket, rank, update: update? }))
        .collect();
    Walked { pieces, usage, plan, plans }
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
