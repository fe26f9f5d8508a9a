//! Permission gates → `session/request_permission` → `respond_gate`.
//!
//! Only a `Permission` gate resolved by the `Loop` is translated: its answer is exactly one of the
//! three approval actions, which is what `session/request_permission` carries. The request offers
//! exactly the gate's controls, mapped approve → `allow_once`, `approve_always` → `allow_always`,
//! deny → `reject_once`, together with the tool call the gate belongs to. The client's choice must
//! be one of the offered options, else the gate is answered deny; an error answers deny too, and
//! the turn goes on to its own terminal. A `cancelled` outcome means the user cancelled the turn
//! from the permission prompt: the turn is interrupted as `session/cancel` would, the gate answered
//! deny, and the prompt answers `cancelled`.
//!
//! `AskUser`, `Form` and `OpenUrl` gates and gates resolved by the session have no faithful ACP
//! v1.20.0 form: they are never flattened into a permission request, and the turn keeps draining.
//!
//! The wait runs inside the prompt's own task: the connection's reader and other sessions go on.
//! When the session closes, the turn is interrupted first, then the request is abandoned
//! (`$/cancel_request` is sent) and the gate is answered deny; after a `session/cancel`, the client
//! is expected to answer `cancelled`, and the wait ends at the cancel grace period at the latest.

use std::sync::Arc;

use super::cancellation::Cancellation;
use super::session_state::SessionEntry;
use super::state::AgentInner;
use crate::acp::{
    PermissionOption, PermissionOptionKind, RequestPermissionOutcome, RequestPermissionRequest,
    RequestPermissionResponse, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields,
};
use crate::harness::{ApprovalAction, Gate, GateKind, GateResolver, GateResponse, ToolCallRequest};

/// The `session/request_permission` method name.
pub const REQUEST_PERMISSION: &str = super::method::SESSION_REQUEST_PERMISSION;

/// The option a control is offered as.
pub fn option_for(action: ApprovalAction) -> PermissionOption {
    match action {
        ApprovalAction::Approve => PermissionOption::new("allow_once", "Allow once", PermissionOptionKind::AllowOnce),
        ApprovalAction::ApproveAlways => {
            PermissionOption::new("allow_always", "Allow always", PermissionOptionKind::AllowAlways)
        }
        ApprovalAction::Deny => PermissionOption::new("reject_once", "Reject", PermissionOptionKind::RejectOnce),
    }
}

/// Whether the facade turns this gate into a permission request.
pub fn is_translatable(gate: &Gate) -> bool {
    gate.kind == GateKind::Permission && gate.resolver == GateResolver::Loop
}

/// Resolves a correlated, public gate: asks the client for permission gates, skips the others.
pub(crate) async fn resolve(
    agent: &Arc<AgentInner>,
    entry: &Arc<SessionEntry>,
    gate: &Gate,
    tool_call: Option<&ToolCallRequest>,
    cancel: &mut Cancellation<'_>,
) {
    if !is_translatable(gate) {
        tracing::debug!(session = %entry.id, gate = %gate.id, kind = ?gate.kind, "gate has no ACP form; left to the host");
        return;
    }
    let action = ask(agent, entry, gate, tool_call, cancel).await;
    tracing::debug!(session = %entry.id, gate = %gate.id, ?action, "permission answered");
    if let Err(e) = entry.live.respond_gate(gate.id.clone(), GateResponse::Approval(action)).await {
        tracing::warn!(session = %entry.id, gate = %gate.id, error = %e.message, "respond_gate failed");
    }
}

async fn ask(
    agent: &Arc<AgentInner>,
    entry: &Arc<SessionEntry>,
    gate: &Gate,
    tool_call: Option<&ToolCallRequest>,
    cancel: &mut Cancellation<'_>,
) -> ApprovalAction {
    let mut offered: Vec<ApprovalAction> = Vec::new();
    for control in &gate.controls {
        if !offered.contains(control) {
            offered.push(*control);
        }
    }
    if offered.is_empty() {
        tracing::warn!(session = %entry.id, gate = %gate.id, "permission gate offers no controls; denied");
        return ApprovalAction::Deny;
    }
    if entry.is_closing() {
        stop_turn(entry, cancel).await;
        return ApprovalAction::Deny;
    }
    let request = RequestPermissionRequest::new(
        entry.id.clone(),
        tool_call_update(gate, tool_call),
        offered.iter().copied().map(option_for).collect(),
    );
    let peer = agent.peer().clone();
    let answer = peer.request::<_, RequestPermissionResponse>(REQUEST_PERMISSION, &request);
    tokio::pin!(answer);
    let outcome = loop {
        tokio::select! {
            biased;
            () = entry.closed.cancelled() => {
                // Closing stops the turn first, then denies its pending gates.
                stop_turn(entry, cancel).await;
                return ApprovalAction::Deny;
            }
            () = cancel.arrives(), if !cancel.noticed() => {
                cancel.notice();
                entry.interrupt().await;
            }
            () = cancel.expired() => return ApprovalAction::Deny,
            answer = &mut answer => break answer,
        }
    };
    match outcome {
        Ok(response) => {
            if let RequestPermissionOutcome::Selected(selected) = response.outcome {
                offered.iter().copied().find(|action| option_for(*action).option_id == selected.option_id).unwrap_or_else(
                    || {
                        tracing::warn!(session = %entry.id, option = %selected.option_id, "client chose an option that was not offered; denied");
                        ApprovalAction::Deny
                    },
                )
            } else {
                // The user cancelled the turn from the permission prompt: stop it as a
                // `session/cancel` would (the prompt then answers `cancelled`), and deny the gate.
                stop_turn(entry, cancel).await;
                ApprovalAction::Deny
            }
        }
        Err(e) => {
            if peer.is_closed() {
                // The client hung up: its sessions are being closed, which stops the turn first.
                stop_turn(entry, cancel).await;
            } else {
                tracing::warn!(session = %entry.id, error = %e.message, "permission request failed; denied");
            }
            ApprovalAction::Deny
        }
    }
}

/// Interrupts the turn unless the prompt already did for this cancellation.
async fn stop_turn(entry: &SessionEntry, cancel: &mut Cancellation<'_>) {
    if !cancel.noticed() {
        cancel.notice();
        entry.interrupt().await;
    }
}

fn tool_call_update(gate: &Gate, tool_call: Option<&ToolCallRequest>) -> ToolCallUpdate {
    let id = gate.tool_call_id.as_ref().map_or_else(|| gate.id.as_str().to_owned(), |id| id.as_str().to_owned());
    let mut fields = ToolCallUpdateFields::new().status(ToolCallStatus::Pending);
    match tool_call {
        Some(call) => {
            fields = fields.title(call.name.clone()).kind(call.kind).raw_input(call.input.clone());
        }
        None => fields = fields.title(gate.title.clone()),
    }
    ToolCallUpdate::new(id, fields)
}
