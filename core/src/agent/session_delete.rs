//! `session/delete`: the only path that may call the host's [`SessionDeleter`](crate::host::SessionDeleter),
//! and never for a live session, nor one being reopened (`-32600`: close it first) — checked before the
//! deleter is consulted.

use std::sync::Arc;

use serde_json::Value;

use super::session_state::validate_session_id;
use super::state::AgentInner;
use super::wire::{Reply, decode, encode};
use crate::acp::{DeleteSessionRequest, DeleteSessionResponse};
use crate::error::{Error, ErrorExt};

/// `session/delete`.
pub(crate) fn delete_session(agent: &Arc<AgentInner>, params: Value) -> Reply {
    let agent = agent.clone();
    Box::pin(async move {
        let request: DeleteSessionRequest = decode(params)?;
        validate_session_id(&request.session_id.0)?;
        if agent.registry.is_live_or_opening(&request.session_id) {
            return Err(Error::invalid_request_msg(format!(
                "session {} is live: close it before deleting it",
                request.session_id
            )));
        }
        let deleter = agent.options.deleter.clone().ok_or_else(|| Error::method_not_found_msg("session/delete"))?;
        deleter.delete_session_as(request.session_id, agent.options.principal.as_ref()).await?;
        encode(&DeleteSessionResponse::new())
    })
}
