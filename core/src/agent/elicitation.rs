//! Ask-user, form and open-URL gates → `elicitation/create` (schema v1.21.0) → `respond_gate`.
//!
//! Only for a client that advertised the mode (`elicitation.form` for ask-user and form gates,
//! `elicitation.url` for open-URL gates); otherwise the gate is left to the host, exactly as
//! before v1.21.0, and nothing is sent.
//!
//! | gate | request | `accept` | `decline` | `cancel` |
//! |---|---|---|---|---|
//! | ask-user | form mode, `message` the question, one required string property `answer` | [`GateResponse::Values`] with the answer's text | [`GateResponse::Declined`] | [`GateResponse::Dismissed`] |
//! | form | form mode with the gate's schema | `Values` with the values by field name | `Declined` | `Dismissed` |
//! | open-URL | URL mode, the gate's URL, a fresh `elicitationId` | `Values` with the (usually empty) content | `Declined` | `Dismissed` |
//!
//! An accepted form answer that does not fit the schema asked for, an unknown action, or an error
//! answer from the client is answered `Dismissed` (logged): the user gave no usable answer. A
//! form gate without a schema, or an open-URL gate without an absolute URL, has no faithful form
//! and is left to the host.
//!
//! After an open-URL gate was accepted, `elicitation/complete` for its id follows when the host
//! resolves the gate (its `GateResolved` event) within the turn (the prompt remembers which were accepted).
//!
//! Cancellation: the elicitation is abandoned (`$/cancel_request`) as soon as the turn is cancelled
//! or the session closes — the client owes no answer to a question of a cancelled turn — the turn
//! is interrupted first, then the gate answered `Dismissed`.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use serde_json::Value;

use super::cancellation::Cancellation;
use super::session_state::SessionEntry;
use super::state::AgentInner;
use crate::acp::{
    CompleteElicitationNotification, CreateElicitationRequest, CreateElicitationResponse, ElicitationAction,
    ElicitationContentValue, ElicitationFormMode, ElicitationId, ElicitationMode, ElicitationSchema,
    ElicitationSessionScope, ElicitationUrlMode, StringPropertySchema,
};
use crate::client::method::{ELICITATION_COMPLETE, ELICITATION_CREATE};
use crate::client::{check_form_answer, fresh_elicitation_id};
use crate::harness::{Gate, GateId, GateKind, GateResponse};
use crate::rpc::message::notification_line;

/// The property an ask-user gate's form asks for.
pub(super) const ASK_USER_FIELD: &str = "answer";

/// The open-URL gates of a turn that the user accepted, by gate, with their elicitation ids.
#[derive(Debug, Default)]
pub(crate) struct OpenUrls(HashMap<GateId, ElicitationId>);

impl OpenUrls {
    /// The `elicitation/complete` line for gate `gate_id`, when it is an accepted open-URL gate
    /// (once: the gate is forgotten).
    pub(crate) fn complete_line(&mut self, gate_id: &GateId) -> Option<Vec<u8>> {
        let id = self.0.remove(gate_id)?;
        Some(notification_line(ELICITATION_COMPLETE, &CompleteElicitationNotification::new(id)))
    }
}

/// The form an ask-user gate asks to fill in: one required string, [`ASK_USER_FIELD`].
pub(super) fn ask_user_schema() -> ElicitationSchema {
    ElicitationSchema::new().property(ASK_USER_FIELD, StringPropertySchema::new(), true)
}

/// What the request for `gate` asks, when the client supports its form.
enum Asked {
    Form(ElicitationSchema),
    Url(ElicitationId, String),
}

fn asked(entry: &SessionEntry, gate: &Gate) -> Option<Asked> {
    let capabilities = entry.setup.client_capabilities();
    match gate.kind {
        GateKind::AskUser if capabilities.elicitation_form() => Some(Asked::Form(ask_user_schema())),
        GateKind::Form if capabilities.elicitation_form() => gate.schema.clone().map(Asked::Form),
        GateKind::OpenUrl if capabilities.elicitation_url() => {
            let url = gate.url.clone().filter(|url| crate::client::check_url(url).is_ok())?;
            Some(Asked::Url(fresh_elicitation_id(&entry.id.0), url))
        }
        _ => None,
    }
}

/// Asks the client about an ask-user, form or open-URL gate; `None` when the gate is left to
/// the host (the client does not support its form).
pub(crate) async fn ask(
    agent: &Arc<AgentInner>,
    entry: &Arc<SessionEntry>,
    gate: &Gate,
    cancel: &mut Cancellation<'_>,
    urls: &mut OpenUrls,
) -> Option<GateResponse> {
    let Some(asked) = asked(entry, gate) else {
        tracing::debug!(session = %entry.id, gate = %gate.id, kind = ?gate.kind, "the client has no form for this gate; left to the host");
        return None;
    };
    if entry.is_closing() || cancel.requested() {
        // Nobody is left to answer: no question is asked of a cancelled turn.
        entry.stop_turn(cancel).await;
        return Some(GateResponse::Dismissed);
    }
    let scope = ElicitationSessionScope::new(entry.id.clone());
    let (mode, schema, url_id): (ElicitationMode, _, _) = match asked {
        Asked::Form(schema) => (ElicitationFormMode::new(scope, schema.clone()).into(), Some(schema), None),
        Asked::Url(id, url) => (ElicitationUrlMode::new(scope, id.clone(), url).into(), None, Some(id)),
    };
    let request = CreateElicitationRequest::new(mode, gate.title.clone());
    let peer = agent.peer().clone();
    let answer = peer.request::<_, CreateElicitationResponse>(ELICITATION_CREATE, &request);
    tokio::pin!(answer);
    let outcome = tokio::select! {
        biased;
        () = entry.closed.cancelled() => None,
        () = cancel.arrives(), if !cancel.noticed() => None,
        answer = &mut answer => Some(answer),
    };
    let Some(outcome) = outcome else {
        // Cancelled or closing: stop the turn first; the request is abandoned as it is dropped.
        entry.stop_turn(cancel).await;
        return Some(GateResponse::Dismissed);
    };
    let response = match outcome {
        Ok(response) => response,
        Err(e) => {
            if peer.is_closed() {
                entry.stop_turn(cancel).await;
            } else {
                tracing::warn!(session = %entry.id, gate = %gate.id, error = %e.message, "elicitation failed; dismissed");
            }
            return Some(GateResponse::Dismissed);
        }
    };
    let answered = match response.action {
        ElicitationAction::Accept(accept) => {
            let values = accept.content.unwrap_or_default();
            match accepted(gate.kind, schema.as_ref(), values) {
                Ok(value) => {
                    if let Some(id) = url_id {
                        urls.0.insert(gate.id.clone(), id);
                    }
                    GateResponse::Values(value)
                }
                Err(why) => {
                    tracing::warn!(session = %entry.id, gate = %gate.id, why, "unusable elicitation answer; dismissed");
                    GateResponse::Dismissed
                }
            }
        }
        ElicitationAction::Decline => GateResponse::Declined,
        ElicitationAction::Cancel => GateResponse::Dismissed,
        other => {
            tracing::warn!(session = %entry.id, gate = %gate.id, action = ?other, "unknown elicitation action; dismissed");
            GateResponse::Dismissed
        }
    };
    tracing::debug!(session = %entry.id, gate = %gate.id, response = ?answered, "elicitation answered");
    Some(answered)
}

/// The gate's answer for an accepted elicitation, checked against what was asked.
fn accepted(
    kind: GateKind,
    schema: Option<&ElicitationSchema>,
    values: BTreeMap<String, ElicitationContentValue>,
) -> Result<Value, String> {
    if let Some(schema) = schema {
        check_form_answer(schema, &values)?;
    }
    if kind == GateKind::AskUser {
        return match values.get(ASK_USER_FIELD) {
            Some(ElicitationContentValue::String(text)) => Ok(Value::String(text.clone())),
            _ => Err(format!("no string `{ASK_USER_FIELD}`")),
        };
    }
    serde_json::to_value(values).map_err(|e| e.to_string())
}
