//! The replay of a session's history for `session/load` (and v2's `session/resume` with
//! `replayFrom`): its conversation rebuilt from its Enduring events, all before the response.
//!
//! Live token and tool-progress events are Ephemeral and never journaled, so the replay is rebuilt
//! from durable events alone ([`walk`] reads them). What is replayed:
//! - every user message (from `TurnStarted`), as `user_message_chunk`s;
//! - every assistant message (from `StepDone`'s AI messages): thoughts as `agent_thought_chunk`,
//!   text as `agent_message_chunk`;
//!
//!   each message's chunks carry one `messageId` of their own — the user message's the id the
//!   client was told for it (v2) or else the id of its `TurnStarted` event, the n-th message of a
//!   step `<StepDone's event id>/<n>` — so that a client sees where one message ends and the next
//!   begins: without ids, consecutive chunks read as one message (Zed joins every replayed user
//!   message into one). The ids are opaque to clients, unique in the session and the same at
//!   every load, in either order;
//! - every completed tool call (from `StepDone`'s tool results, with the call the AI message
//!   asked for), as one `tool_call` carrying its final status, title, kind, content (blocks and
//!   diffs), locations, raw input and raw output — once per call: a call whose result was
//!   journaled twice is replayed once, with its last result; a call never finished is not
//!   replayed. Terminals
//!   embedded in its content are left out: a terminal id names a terminal the client created for
//!   the live turn and was told to release, and a loading client (a new thread, often a new
//!   process) has no terminal of that id — Zed refuses the whole tool call that names one
//!   ("Terminal with id … not found"), so replaying it would lose the call, not just its output;
//! - the session's exchanges with its subagents (`subagent_update`, `session_message`,
//!   `session_message_chunk`) and its compactions (`compaction_update`,
//!   `compaction_summary_chunk`), each only to a client that advertised its capability, as live;
//! - then, last, the session's state: one `usage_update` from the last `ContextMeasured` (with its
//!   cost, when it has one), and the session's latest plan (from the last `PlanUpdated`) as one
//!   `plan` update — unless it has no entries. A plan update replaces the whole plan at the
//!   client, so the latest one is what a client that watched the session live shows; replaying
//!   the earlier ones would only redraw states long gone. Plans with ids replay as their latest
//!   form each (`plan_update`, in the order they were first created; a removed one not at all) to
//!   a client that advertised plan operations; any other client gets the latest plan as one whole
//!   `plan`, whichever kind of event set it last.
//!
//! `TurnDone` is never translated: its message repeats content the steps already hold. Only
//! `Public` events are replayed.
//!
//! The conversation comes in one of two orders ([`ReplayOrder`], the agent's
//! [`Options::replay_order`](super::Options::replay_order)):
//! - [`ReplayOrder::Grouped`] (v1's default): four buckets — every user message, then every
//!   assistant message, then every tool call, then the exchanges and compactions — each in the
//!   order recorded (the tool calls in the order of their first results); turns are deliberately
//!   not interleaved;
//! - [`ReplayOrder::Conversation`]: turn by turn as recorded — a user message, then that turn's
//!   thoughts, messages and tool calls in the order they happened, each tool call right after
//!   the AI message that asked for it (also when it finished in a later step; where its first
//!   result was journaled when no public AI message asked for it), exchanges and compactions
//!   where they happened. ACP v2's `session/resume` with `replayFrom` always replays in this
//!   order, whatever the option says: v2 replays a conversation, not buckets.
//!
//! Invariants: both orders replay the same set of updates, the same bytes each (message ids
//! included) — only their order differs, as both order the pieces of one [`walk`]; the grouped
//! order is exactly the pieces sorted by bucket (and tool calls by their first results), stably;
//! the session's state (usage, then plans) comes after the conversation in both.

mod walk;

use crate::acp::SessionUpdate;
use crate::client::Capabilities;
use crate::harness::Event;

use walk::{Walked, walk};

/// The order in which `session/load` replays a session's conversation (see
/// [`Options::replay_order`](super::Options::replay_order)). Either order replays the same
/// updates, with the same message ids, and ends with the session's usage and latest plan.
///
/// ```
/// use acp_facade::agent::ReplayOrder;
///
/// assert_eq!(ReplayOrder::default(), ReplayOrder::Grouped);
/// assert_eq!("conversation".parse::<ReplayOrder>(), Ok(ReplayOrder::Conversation));
/// assert_eq!(ReplayOrder::Conversation.as_str(), "conversation");
/// assert!("chronological".parse::<ReplayOrder>().is_err());
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ReplayOrder {
    /// Every user message, then every assistant message (thoughts and text), then every tool
    /// call, then the exchanges with subagents and the compactions. An editor shows a reloaded
    /// conversation as all its questions, then all its answers. The default, for compatibility.
    #[default]
    Grouped,
    /// Turn by turn as recorded: each user message followed by its turn's thoughts, messages and
    /// tool calls in the order they happened, exchanges and compactions where they happened. An
    /// editor shows a reloaded conversation as it was shown live; recommended for editors.
    Conversation,
}

impl ReplayOrder {
    /// The order's name: `"grouped"` or `"conversation"` (what [`str::parse`] reads).
    pub fn as_str(self) -> &'static str {
        match self {
            ReplayOrder::Grouped => "grouped",
            ReplayOrder::Conversation => "conversation",
        }
    }
}

impl std::fmt::Display for ReplayOrder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for ReplayOrder {
    type Err = UnknownReplayOrder;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        match name {
            "grouped" => Ok(ReplayOrder::Grouped),
            "conversation" => Ok(ReplayOrder::Conversation),
            _ => Err(UnknownReplayOrder(name.to_owned())),
        }
    }
}

/// A name that is not a [`ReplayOrder`]'s; its message names the accepted ones.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownReplayOrder(pub String);

impl std::fmt::Display for UnknownReplayOrder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "unknown replay order {:?}: expected \"grouped\" or \"conversation\"", self.0)
    }
}

impl std::error::Error for UnknownReplayOrder {}

/// The replay of `history` for a client with `client` capabilities, in `order`, then the
/// session's state (see the module doc).
pub(super) fn replay_updates(history: &[Event], client: &Capabilities, order: ReplayOrder) -> Vec<SessionUpdate> {
    let Walked { mut pieces, usage, plan, plans } = walk(history, client);
    match order {
        // Stable: each bucket keeps the order recorded (its tool calls that of their results).
        ReplayOrder::Grouped => pieces.sort_by_key(|piece| (piece.bucket, piece.rank)),
        ReplayOrder::Conversation => {}
    }
    let mut out: Vec<SessionUpdate> = pieces.into_iter().map(|piece| piece.update).collect();
    out.extend(usage.map(SessionUpdate::UsageUpdate));
    if client.plan_operations() && !plans.is_empty() {
        out.extend(plans.into_iter().map(|(_, update)| SessionUpdate::PlanUpdate(update)));
    } else {
        out.extend(plan.filter(|p| !p.entries.is_empty()).map(SessionUpdate::Plan));
    }
    out
}

#[cfg(test)]
mod tests;
