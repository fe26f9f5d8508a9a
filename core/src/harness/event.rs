//! Events: what a session's runtime reports, in order, on its stream.
//!
//! Every event has a [`EventHeader`]: a unique id and per-session sequence number, a durability
//! [`EventClass`], a [`Visibility`] (only `Public` events ever reach a client — the translator
//! checks it itself), the [`Cause`] command and the [`Coordinates`] of the loop and turn it
//! belongs to.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::content::{Message, UserMessage};
use super::gate::Gate;
use super::ids::{CommandId, EventId, GateId, LoopId, ToolCallId, TurnId};
use super::tool_call::{ToolCallChanges, ToolCallDetails};
use crate::acp::{
    CompactionSummaryChunk, CompactionUpdate, Cost, Meta, Notice, Plan, PlanRemoved, PlanUpdate, SessionMessage,
    SessionMessageChunk, SubagentUpdate, ToolCallContent, ToolCallStatus, ToolKind,
};

/// Durability of an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventClass {
    /// Live only (token deltas, tool progress): never journaled, never replayed.
    Ephemeral,
    /// Journaled and replayable (turn boundaries, completed steps, measurements).
    Enduring,
}

/// Who may see an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Visibility {
    /// May be shown to the client.
    Public,
    /// Never leaves the host: a hard security boundary.
    Internal,
}

/// The command that caused an event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Cause {
    /// Set on `TurnStarted` and on reply events such as compaction results.
    pub command_id: Option<CommandId>,
}

/// Where an event happened.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Coordinates {
    /// The loop.
    pub loop_id: Option<LoopId>,
    /// The turn within the loop.
    pub turn_id: Option<TurnId>,
}

/// The header every event carries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EventHeader {
    /// Unique id.
    pub id: EventId,
    /// Position in the session's stream.
    pub seq: u64,
    /// Durability.
    pub class: EventClass,
    /// Visibility.
    pub visibility: Visibility,
    /// The causing command.
    #[serde(default)]
    pub cause: Cause,
    /// The loop and turn.
    #[serde(default)]
    pub coordinates: Coordinates,
}

/// Which stream a token delta belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TokenChannel {
    /// The reply (`agent_message_chunk`).
    Message,
    /// Reasoning (`agent_thought_chunk`).
    Thought,
}

/// Why a turn ended normally; mirrors ACP's `StopReason`.
pub type StopReason = crate::acp::StopReason;

/// What happened.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum EventKind {
    /// A turn began; `header.cause.command_id` names the submitted command.
    TurnStarted {
        /// The user message that started it.
        message: UserMessage,
    },
    /// A piece of streamed output.
    TokenDelta {
        /// The text.
        text: String,
        /// Reply or reasoning.
        channel: TokenChannel,
    },
    /// A tool call was announced (`tool_call`).
    ToolCallStarted {
        /// Its id.
        call_id: ToolCallId,
        /// Human-readable title.
        name: String,
        /// Kind of tool.
        kind: ToolKind,
        /// Raw input, status, content (blocks, diffs, terminals), locations, raw output —
        /// written inline.
        #[serde(flatten)]
        details: Box<ToolCallDetails>,
    },
    /// A tool call changed (`tool_call_update`): each field present replaces the call's; absent
    /// fields stay as they were (`content` and `locations` replace whole lists).
    ToolCallProgress {
        /// Its id.
        call_id: ToolCallId,
        /// The new status, if it changed.
        status: Option<ToolCallStatus>,
        /// The new content (content blocks, diffs, terminals), replacing earlier content.
        #[serde(default, with = "super::tool_content::option")]
        content: Option<Vec<ToolCallContent>>,
        /// Title, kind, locations, raw input and output, when they changed — written inline.
        #[serde(flatten)]
        changes: Box<ToolCallChanges>,
    },
    /// A tool call finished (`tool_call_update` with status `completed` or `failed`), with the
    /// fields that changed as it did.
    ToolCallCompleted {
        /// Its id.
        call_id: ToolCallId,
        /// Its final content, when it has some (replaces earlier content; empty: unchanged).
        #[serde(with = "super::tool_content::list")]
        output: Vec<ToolCallContent>,
        /// Whether it failed.
        is_error: bool,
        /// Title, kind, locations, raw input and output, when they changed — written inline.
        #[serde(flatten)]
        changes: Box<ToolCallChanges>,
    },
    /// A step finished: the step's AI message followed by its tool results (Enduring).
    StepDone {
        /// The step's messages.
        messages: Vec<Message>,
    },
    /// The context window was measured.
    ContextMeasured {
        /// Tokens in context.
        used: u64,
        /// Window size.
        size: u64,
        /// The session's cumulative cost so far, when the host knows it (`usage_update.cost`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cost: Option<Box<Cost>>,
    },
    /// A gate opened; the turn waits for it.
    GateOpened {
        /// The gate (boxed: gates are rare, and events of the streaming path stay small).
        gate: Box<Gate>,
    },
    /// A gate was answered.
    GateResolved {
        /// Its id.
        gate_id: GateId,
    },
    /// The turn finished.
    TurnDone {
        /// The turn's complete reply (already streamed; never translated again).
        message: Option<Message>,
        /// Why it stopped; `end_turn` when absent.
        stop: Option<StopReason>,
    },
    /// The turn failed.
    TurnFailed {
        /// What went wrong, for the user.
        error: String,
    },
    /// The turn was interrupted.
    TurnInterrupted {},
    /// A compaction command completed; `header.cause.command_id` names it.
    CompactWaiterResolved {},
    /// A compaction command was rejected; `header.cause.command_id` names it.
    CompactWaiterRejected {
        /// Why.
        reason: String,
    },
    /// The session's catalog metadata changed. Sent to the client (`session_info_update`) only
    /// when the title or the time differs from what the client was last told.
    SessionMetaChanged {
        /// The new title, if known.
        title: Option<String>,
        /// The last activity time (ISO 8601), if known.
        updated_at: Option<String>,
    },
    /// The turn's plan, whole: it replaces any plan sent before (`plan`). Enduring, so that
    /// `session/load` can show the session's latest plan.
    PlanUpdated {
        /// Every entry with its current status, and the plan's `_meta`.
        plan: Plan,
    },
    /// `_meta` for the turn's `session/prompt` response, whatever the turn's outcome; the last
    /// one before the turn's terminal event counts. Never sent as an update.
    ResponseMeta {
        /// The response's `_meta`.
        meta: Meta,
    },
    /// A plan with an id was created or replaced (`plan_update`). A client that did not advertise
    /// plan operations gets the plan's entries as a whole `plan` instead (a Markdown plan: an
    /// empty one — it has no entries). Enduring: `session/load` replays each plan's latest form.
    PlanChanged {
        /// The plan, whole, with its id.
        update: Box<PlanUpdate>,
    },
    /// A plan with an id was removed (`plan_removed`; without plan operations: an empty `plan`).
    PlanRemoved {
        /// Which plan.
        removed: Box<PlanRemoved>,
    },
    /// Information for the user that is not session history (`notice`), sent only to a client
    /// that advertised `session.notices`. Ephemeral by nature: never replayed.
    Notice {
        /// The notice.
        notice: Box<Notice>,
    },
    /// A compaction started, progressed or ended (`compaction_update`), sent only to a client
    /// that advertised `session.compaction`.
    CompactionChanged {
        /// The compaction's state.
        update: Box<CompactionUpdate>,
    },
    /// A block of a compaction's summary (`compaction_summary_chunk`), sent only to a client that
    /// advertised `session.compaction`.
    CompactionSummary {
        /// The block.
        chunk: Box<CompactionSummaryChunk>,
    },
    /// A child session was announced or changed (`subagent_update`), sent only to a client that
    /// advertised `subagents`. Enduring: replayed by `session/load`.
    SubagentChanged {
        /// The child and what changed about it.
        update: Box<SubagentUpdate>,
    },
    /// A message between this session and another one (`session_message`), sent only to a
    /// client that advertised `subagents`. Enduring: replayed by `session/load`.
    SessionMessage {
        /// The message's upsert.
        message: Box<SessionMessage>,
    },
    /// A block of a message between sessions (`session_message_chunk`), sent only to a client
    /// that advertised `subagents`. Enduring: replayed by `session/load`.
    SessionMessageChunk {
        /// The block.
        chunk: Box<SessionMessageChunk>,
    },
}

impl EventKind {
    /// `ToolCallStarted` with a title, a kind and raw input, and nothing else (pending).
    pub fn tool_call_started(
        call_id: impl Into<ToolCallId>,
        name: impl Into<String>,
        kind: ToolKind,
        input: Value,
    ) -> Self {
        let details = Box::new(ToolCallDetails { input, ..ToolCallDetails::default() });
        Self::ToolCallStarted { call_id: call_id.into(), name: name.into(), kind, details }
    }

    /// `ToolCallProgress` changing only the status and/or the content.
    pub fn tool_call_progress(
        call_id: impl Into<ToolCallId>,
        status: Option<ToolCallStatus>,
        content: Option<Vec<ToolCallContent>>,
    ) -> Self {
        Self::ToolCallProgress { call_id: call_id.into(), status, content, changes: Box::default() }
    }

    /// `ToolCallCompleted` with its output (empty: content unchanged) and nothing else changed.
    pub fn tool_call_completed(call_id: impl Into<ToolCallId>, output: Vec<ToolCallContent>, is_error: bool) -> Self {
        Self::ToolCallCompleted { call_id: call_id.into(), output, is_error, changes: Box::default() }
    }

    /// `GateOpened` for `gate`.
    pub fn gate_opened(gate: Gate) -> Self {
        Self::GateOpened { gate: Box::new(gate) }
    }
}

/// One event of a session's stream.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    /// The header.
    pub header: EventHeader,
    /// The payload.
    pub kind: EventKind,
}

impl Event {
    /// An enduring, public event numbered `seq` with no cause and no coordinates: what a store or
    /// a host's tests journal and replay without running a session.
    pub fn plain(id: &str, seq: u64, kind: EventKind) -> Self {
        Self {
            header: EventHeader {
                id: EventId::new(id),
                seq,
                class: EventClass::Enduring,
                visibility: Visibility::Public,
                cause: Cause::default(),
                coordinates: Coordinates::default(),
            },
            kind,
        }
    }
}

impl Event {
    /// Whether the event may reach a client.
    pub fn is_public(&self) -> bool {
        self.header.visibility == Visibility::Public
    }

    /// Whether this event belongs to the given loop and turn.
    pub fn is_in(&self, loop_id: &LoopId, turn_id: &TurnId) -> bool {
        self.header.coordinates.loop_id.as_ref() == Some(loop_id)
            && self.header.coordinates.turn_id.as_ref() == Some(turn_id)
    }

    /// Whether `command` caused this event.
    pub fn is_caused_by(&self, command: &CommandId) -> bool {
        self.header.cause.command_id.as_ref() == Some(command)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_of_the_streaming_path_stay_small() {
        // No larger than before the full tool-call vocabulary and the elicitation gates (120 and
        // 200 bytes): their parts are boxed. Every token delta is an event moved through the
        // hub's queues.
        assert!(size_of::<EventKind>() <= 120, "EventKind is {} bytes", size_of::<EventKind>());
        assert!(size_of::<Event>() <= 200, "Event is {} bytes", size_of::<Event>());
    }

    #[test]
    fn tool_call_events_keep_their_older_serde_form() {
        let old = serde_json::json!({
            "type": "tool_call_progress", "call_id": "c", "status": "in_progress",
            "content": [{"type": "text", "text": "x"}],
        });
        let event: EventKind = serde_json::from_value(old.clone()).unwrap();
        assert_eq!(serde_json::to_value(&event).unwrap(), old);
        let old = serde_json::json!({"type": "tool_call_started", "call_id": "c", "name": "n", "kind": "read", "input": null});
        let event: EventKind = serde_json::from_value(old.clone()).unwrap();
        assert_eq!(event, EventKind::tool_call_started("c", "n", ToolKind::Read, Value::Null));
        assert_eq!(serde_json::to_value(&event).unwrap(), old);
        let old = serde_json::json!({"type": "tool_call_completed", "call_id": "c", "output": [], "is_error": true});
        let event: EventKind = serde_json::from_value(old.clone()).unwrap();
        assert_eq!(serde_json::to_value(&event).unwrap(), old);
    }
}
