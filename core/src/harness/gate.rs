//! Gates: points where a turn parks until something answers it.
//!
//! The facade gives a gate the richest wire form the client supports (see `agent::gates`): a
//! permission gate is `session/request_permission`; an ask-user, form or open-URL gate is
//! `elicitation/create` (schema v1.21.0) when the client advertised that elicitation mode, else it
//! is left to the host, untranslated.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::ids::{GateId, ToolCallId};
use crate::acp::{ElicitationSchema, PermissionOption};

/// What a gate asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GateKind {
    /// Approval of a tool call: answered with one [`ApprovalAction`]. The only kind that becomes
    /// `session/request_permission`.
    Permission,
    /// A free-text question to the user ([`Gate::title`]): a form elicitation with one required
    /// string field, `answer`, when the client advertised `elicitation.form`. Answered with
    /// [`GateResponse::Values`] holding the answer's text.
    AskUser,
    /// A host-owned form ([`Gate::schema`]): a form elicitation when the client advertised
    /// `elicitation.form`. Answered with [`GateResponse::Values`] holding the values by field name.
    Form,
    /// A host-owned "open this URL" step ([`Gate::url`]): a URL elicitation when the client
    /// advertised `elicitation.url`; `elicitation/complete` follows when the host resolves the gate
    /// (`GateResolved`) after the user accepted.
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
    /// Host-defined options of a permission gate, offered after the controls' (e.g. a
    /// `reject_always` option, or custom names); one chosen is answered
    /// [`GateResponse::Selected`] with its id.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub options: Vec<PermissionOption>,
    /// The form of a [`GateKind::Form`] gate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<ElicitationSchema>,
    /// The URL of a [`GateKind::OpenUrl`] gate (absolute).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

impl Gate {
    /// A gate with no tool call, controls, options, schema or URL (set them on the result).
    pub fn new(id: impl Into<GateId>, kind: GateKind, resolver: GateResolver, title: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            kind,
            resolver,
            tool_call_id: None,
            title: title.into(),
            controls: Vec::new(),
            options: Vec::new(),
            schema: None,
            url: None,
        }
    }
}

/// An answer to a gate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GateResponse {
    /// The chosen approval action.
    Approval(ApprovalAction),
    /// Free-form values (answers to ask-user questions and forms; for an open-URL gate, the
    /// user's consent to open it).
    Values(Value),
    /// The host-defined permission option with this id was chosen (see [`Gate::options`]).
    Selected(String),
    /// The user declined to answer (elicitation `decline`).
    Declined,
    /// The user dismissed the question without choosing (elicitation `cancel`).
    Dismissed,
}
