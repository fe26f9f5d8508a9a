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
use crate::acp::{ContentBlock, Cost, Meta, Plan, ToolCallStatus, ToolKind};

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
    /// A tool call was announced.
    ToolCallStarted {
        /// Its id.
        call_id: ToolCallId,
        /// Human-readable title.
        name: String,
        /// Kind of tool.
        kind: ToolKind,
        /// Raw input.
        input: Value,
    },
    /// A tool call made progress (status and/or new content).
    ToolCallProgress {
        /// Its id.
        call_id: ToolCallId,
        /// The new status, if it changed.
        status: Option<ToolCallStatus>,
        /// Content so far (replaces earlier content), if any.
        content: Option<Vec<ContentBlock>>,
    },
    /// A tool call finished.
    ToolCallCompleted {
        /// Its id.
        call_id: ToolCallId,
        /// Output content.
        output: Vec<ContentBlock>,
        /// Whether it failed.
        is_error: bool,
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
        /// The gate.
        gate: Gate,
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
