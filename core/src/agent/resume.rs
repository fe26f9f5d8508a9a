//! `session/resume`: validate the setup, resume through the host, register, respond — and send no
//! `session/update` at all (that is what distinguishes it from `session/load`).

use std::sync::Arc;

use serde_json::Value;

use super::session::{register, validate_session_id};
use super::{AgentInner, Reply, decode, encode};
use crate::acp::{ResumeSessionRequest, ResumeSessionResponse, SessionId};
use crate::error::{Error, ErrorExt};
use crate::host::{LiveSession, Setup};

/// `session/resume`.
pub(crate) fn resume_session(agent: &Arc<AgentInner>, params: Value) -> Reply {
    let agent = agent.clone();
    Box::pin(async move {
        let request: ResumeSessionRequest = decode(params)?;
        validate_session_id(&request.session_id.0)?;
        agent.require_authenticated()?;
        ensure_not_live(&agent, &request.session_id)?;
        let setup = Setup::new(
            request.cwd,
            request.additional_directories.clone(),
            request.mcp_servers.clone(),
        )?;
        let resumer = agent
            .options
            .resumer
            .clone()
            .ok_or_else(|| Error::method_not_found_msg("session/resume"))?;
        let reservation = agent.registry.reserve()?;
        let live = resumer.resume_session(request.session_id.clone(), setup.clone()).await?;
        ensure_same_id(&request.session_id, live.as_ref())?;
        let entry = register(&agent, reservation, live, setup)?;
        let mut response = ResumeSessionResponse::new();
        if let Some(state) = super::config::initial_state(&agent, &entry).await? {
            response = response.config_options(state.options).modes(state.modes);
        }
        encode(&response)
    })
}

/// Fails when `id` is already live on this connection.
pub(crate) fn ensure_not_live(agent: &AgentInner, id: &SessionId) -> Result<(), Error> {
    if agent.registry.get(id).is_some() {
        return Err(Error::invalid_request_msg(format!("session {id} is already live")));
    }
    Ok(())
}

/// Fails when the host reopened a different session than asked for.
pub(crate) fn ensure_same_id(requested: &SessionId, live: &dyn LiveSession) -> Result<(), Error> {
    let got = live.id();
    if &got != requested {
        return Err(Error::internal_msg(format!(
            "the host reopened session {got} instead of {requested}"
        )));
    }
    Ok(())
}
