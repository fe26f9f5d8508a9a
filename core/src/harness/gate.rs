//! Gates: points where a turn parks until something answers it.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::ids::{GateId, ToolCallId};

/// What a gate asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GateKind {
    /// Approval of a tool call: answered with one [`ApprovalAction`]. The only kind that becomes
    /// `session/request_permission`.
    Permission,
    /// A free-text or choice question to the user. ACP v1.20.0 has no wire form for it.
    AskUser,
    /// A host-owned form.
    Form,
    /// A host-owned "open this URL" step.
    OpenUrl,
}

/// Who resolves a gate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GateResolver {
    /// The loop that opened it, through [`LiveSession::respond_gate`](crate::host::LiveSession::respond_gate).
    Loop,
    /// The session's host, out of band; the facade never answers these.
    Session,
}

/// The closed control set of a permission gate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalAction {
    /// Allow this once (`allow_once`).
    Approve,
    /// Allow always, for this workspace (`allow_always`).
    ApproveAlways,
    /// Deny (`reject_once`).
    Deny,
}

/// A gate opened by a turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Gate {
    /// The gate's id.
    pub id: GateId,
    /// What it asks for.
    pub kind: GateKind,
    /// Who answers it.
    pub resolver: GateResolver,
    /// The tool call it belongs to, for permission gates.
    #[serde(default)]
    pub tool_call_id: Option<ToolCallId>,
    /// A human-readable title or question.
    pub title: String,
    /// The controls offered, in order; for permission gates a subset of the three actions.
    #[serde(default)]
    pub controls: Vec<ApprovalAction>,
}

/// An answer to a gate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GateResponse {
    /// The chosen approval action.
    Approval(ApprovalAction),
    /// Free-form values (answers to ask-user questions and forms).
    Values(Value),
}
