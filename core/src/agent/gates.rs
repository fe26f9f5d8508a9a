//! Gates → their wire form → `respond_gate`.
//!
//! A correlated, public gate resolved by the `Loop` gets the richest wire form the client
//! supports; gates resolved by the session are never translated (the facade never answers them).
//!
//! - **Permission** → `session/request_permission`, offering the gate's controls mapped approve →
//!   `allow_once`, `approve_always` → `allow_always`, deny → `reject_once`, then the gate's
//!   host-defined options (an id offered twice is offered once), together with the tool call the
//!   gate belongs to. The client's choice must be one that was offered — a control is answered
//!   [`GateResponse::Approval`], a host option [`GateResponse::Selected`] — else the gate is
//!   answered deny; an error answers deny too, and the turn goes on to its own terminal. A
//!   `cancelled` outcome means the user cancelled the turn from the permission prompt: the turn is
//!   interrupted as `session/cancel` would, the gate answered deny, and the prompt answers
//!   `cancelled`.
//! - **Ask-user, form, open-URL** → `elicitation/create` (schema v1.21.0) when the client
//!   advertised the mode; see [`super::elicitation`]. A client without it: untranslated, as
//!   before v1.21.0 — the turn keeps draining and the host answers the gate (or the turn is
//!   cancelled).
//!
//! The wait runs inside the prompt's own task: the connection's reader and other sessions go on.
//! When the session closes, the turn is interrupted first, then the request is abandoned
//! (`$/cancel_request` is sent) and the gate is answered deny; after a `session/cancel`, the client
//! is expected to answer `cancelled`, and the wait ends at the cancel grace period at the latest.

use std::sync::Arc;

use super::cancellation::Cancellation;
use super::elicitation::{self, OpenUrls};
use super::session_state::SessionEntry;
use super::state::AgentInner;
use crate::acp::{
    PermissionOption, PermissionOptionKind, RequestPermissionOutcome, RequestPermissionRequest,
    RequestPermissionResponse, ToolCall, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields,
};
use crate::harness::{ApprovalAction, Gate, GateKind, GateResolver, GateResponse};

/// The `session/request_permission` method name.
pub(super) const REQUEST_PERMISSION: &str = super::method::SESSION_REQUEST_PERMISSION;

/// The option a control is offered as.
pub(super) fn option_for(action: ApprovalAction) -> PermissionOption {
    match action {
        ApprovalAction::Approve => PermissionOption::new("allow_once", "Allow once", PermissionOptionKind::AllowOnce),
        ApprovalAction::ApproveAlways => {
            PermissionOption::new("allow_always", "Allow always", PermissionOptionKind::AllowAlways)
        }
        ApprovalAction::Deny => PermissionOption::new("reject_once", "Reject", PermissionOptionKind::RejectOnce),
    }
}

/// Resolves a correlated, public gate: asks the client in the gate's wire form, when it has one
/// the client supports, and answers the gate with the client's answer; leaves the others to the
/// host.
pub(crate) async fn resolve(
    agent: &Arc<AgentInner>,
    entry: &Arc<SessionEntry>,
    gate: &Gate,
    tool_call: Option<&ToolCall>,
    cancel: &mut Cancellation<'_>,
    urls: &mut OpenUrls,
) {
    if gate.resolver != GateResolver::Loop {
        tracing::debug!(session = %entry.id, gate = %gate.id, kind = ?gate.kind, "gate resolved by the session; left to the host");
        return;
    }
    let response = match gate.kind {
        GateKind::Permission => {
            let response = ask(agent, entry, gate, tool_call, cancel).await;
            tracing::debug!(session = %entry.id, gate = %gate.id, ?response, "permission answered");
            response
        }
        GateKind::AskUser | GateKind::Form | GateKind::OpenUrl => {
            match elicitation::ask(agent, entry, gate, cancel, urls).await {
                Some(response) => response,
                None => return,
            }
        }
    };
    if let Err(e) = entry.live.respond_gate(gate.id.clone(), response).await {
        tracing::warn!(session = %entry.id, gate = %gate.id, error = %e.message, "respond_gate failed");
    }
}

/// What a permission gate offers: its controls' options, then its host-defined ones, each id once.
fn offered(gate: &Gate) -> Vec<(PermissionOption, Option<ApprovalAction>)> {
    let mut offered: Vec<(PermissionOption, Option<ApprovalAction>)> = Vec::new();
    let controls = gate.controls.iter().map(|action| (option_for(*action), Some(*action)));
    let options = gate.options.iter().map(|option| (option.clone(), None));
    for (option, action) in controls.chain(options) {
        if offered.iter().any(|(o, _)| o.option_id == option.option_id) {
            continue;
        }
        offered.push((option, action));
    }
    offered
}

async fn ask(
    agent: &Arc<AgentInner>,
    entry: &Arc<SessionEntry>,
    gate: &Gate,
    tool_call: Option<&ToolCall>,
    cancel: &mut Cancellation<'_>,
) -> GateResponse {
    const DENY: GateResponse = GateResponse::Approval(ApprovalAction::Deny);
    let offered = offered(gate);
    if offered.is_empty() {
        tracing::warn!(session = %entry.id, gate = %gate.id, "permission gate offers no controls; denied");
        return DENY;
    }
    if entry.is_closing() {
        entry.stop_turn(cancel).await;
        return DENY;
    }
    let request = RequestPermissionRequest::new(
        entry.id.clone(),
        tool_call_update(gate, tool_call),
        offered.iter().map(|(option, _)| option.clone()).collect(),
    );
    let peer = agent.peer().clone();
    let v2 = agent.dialect.is_v2();
    let params = if v2 {
        // v2's prompt copy is the gate's title; the connection's rewriter gives the rest v2's form.
        super::v2::lifecycle::requires_action(agent, entry).await;
        super::v2::lifecycle::permission_params(&request, &gate.title)
    } else {
        serde_json::to_value(&request).unwrap_or_default()
    };
    let answer = peer.request::<_, RequestPermissionResponse>(REQUEST_PERMISSION, &params);
    tokio::pin!(answer);
    let outcome = loop {
        tokio::select! {
            biased;
            () = entry.closed.cancelled() => {
                // Closing stops the turn first, then denies its pending gates.
                entry.stop_turn(cancel).await;
                return DENY;
            }
            () = cancel.arrives(), if !cancel.noticed() => {
                cancel.notice();
                entry.interrupt().await;
            }
            () = cancel.expired() => return DENY,
            answer = &mut answer => break answer,
        }
    };
    if v2 && outcome.is_ok() {
        super::v2::lifecycle::running(agent, entry).await;
    }
    match outcome {
        Ok(response) => {
            if let RequestPermissionOutcome::Selected(selected) = response.outcome {
                match offered.iter().find(|(option, _)| option.option_id == selected.option_id) {
                    Some((_, Some(action))) => GateResponse::Approval(*action),
                    Some((option, None)) => GateResponse::Selected(option.option_id.0.to_string()),
                    None => {
                        tracing::warn!(session = %entry.id, option = %selected.option_id, "client chose an option that was not offered; denied");
                        DENY
                    }
                }
            } else {
                // The user cancelled the turn from the permission prompt: stop it as a
                // `session/cancel` would (the prompt then answers `cancelled`), and deny the gate.
                entry.stop_turn(cancel).await;
                DENY
            }
        }
        Err(e) => {
            if peer.is_closed() {
                // The client hung up: its sessions are being closed, which stops the turn first.
                entry.stop_turn(cancel).await;
            } else {
                tracing::warn!(session = %entry.id, error = %e.message, "permission request failed; denied");
            }
            DENY
        }
    }
}

/// The tool call a permission request is about: the call as it stands now (its title, kind, raw
/// input, and its content and locations when it has them — a proposed diff, say), pending; or,
/// for a call never announced, just the gate's title.
fn tool_call_update(gate: &Gate, tool_call: Option<&ToolCall>) -> ToolCallUpdate {
    let id = gate.tool_call_id.as_ref().map_or_else(|| gate.id.as_str().to_owned(), |id| id.as_str().to_owned());
    let mut fields = ToolCallUpdateFields::new().status(ToolCallStatus::Pending);
    match tool_call {
        Some(call) => {
            fields = fields
                .title(call.title.clone())
                .name(call.name.clone())
                .kind(call.kind)
                .raw_input(call.raw_input.clone());
            if !call.content.is_empty() {
                fields = fields.content(call.content.clone());
            }
            if !call.locations.is_empty() {
                fields = fields.locations(call.locations.clone());
            }
        }
        None => fields = fields.title(gate.title.clone()),
    }
    ToolCallUpdate::new(id, fields)
}
