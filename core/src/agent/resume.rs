//! `session/resume`: validate the setup, resume through the host, register, respond — and send no
//! `session/update` at all (that is what distinguishes it from `session/load`).
//!
//! The id is reserved before the host is called, so a live id, or one another `session/load` or
//! `session/resume` is reopening right now, never reaches the host. A session the host reopened
//! but the facade cannot serve is shut down again, never leaked.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::FutureExt;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::close::{close, discard};
use super::config::{ConfigState, initial_state};
use super::session::{SessionEntry, register, validate_session_id};
use super::{AgentInner, Reply, cancellable, decode, encode};
use crate::acp::{ResumeSessionRequest, ResumeSessionResponse, SessionId};
use crate::error::{Error, ErrorExt};
use crate::host::{LiveSession, Setup};
use crate::rpc::connection::panic_message;

/// `session/resume`.
pub(crate) fn resume_session(agent: &Arc<AgentInner>, params: Value, cancelled: CancellationToken) -> Reply {
    let agent = agent.clone();
    Box::pin(async move {
        let request: ResumeSessionRequest = decode(params)?;
        validate_session_id(&request.session_id.0)?;
        agent.require_authenticated()?;
        ensure_not_live(&agent, &request.session_id)?;
        let setup = Setup::new(request.cwd, request.additional_directories.clone(), request.mcp_servers.clone())?;
        let resumer = agent.options.resumer.clone().ok_or_else(|| Error::method_not_found_msg("session/resume"))?;
        let reservation = agent.registry.reserve_id(&request.session_id)?;
        let reopening = resumer.resume_session(request.session_id.clone(), setup.clone());
        let live = cancellable(&cancelled, "session/resume", reopening).await?;
        let registered = ensure_same_id(&request.session_id, live.as_ref())
            .and_then(|()| register(&agent, reservation, live.clone(), setup));
        let entry = match registered {
            Ok(entry) => entry,
            Err(e) => {
                discard(&agent, live.as_ref()).await;
                return Err(e);
            }
        };
        let mut response = ResumeSessionResponse::new();
        if let Some(state) = initial_state_or_close(&agent, &entry).await? {
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

/// The config state for an establishment response; when it cannot be read (the snapshot fails or
/// panics) the session is closed again, so that a failed establishment leaves nothing live.
pub(crate) async fn initial_state_or_close(
    agent: &AgentInner,
    entry: &Arc<SessionEntry>,
) -> Result<Option<ConfigState>, Error> {
    let error = match AssertUnwindSafe(initial_state(agent, entry)).catch_unwind().await {
        Ok(Ok(state)) => return Ok(state),
        Ok(Err(e)) => e,
        Err(panic) => {
            Error::internal_msg(format!("the session's config snapshot panicked: {}", panic_message(&*panic)))
        }
    };
    let _ = close(agent, entry).await;
    Err(error)
}

/// Fails when the host reopened a different session than asked for.
pub(crate) fn ensure_same_id(requested: &SessionId, live: &dyn LiveSession) -> Result<(), Error> {
    let got = live.id();
    if &got != requested {
        return Err(Error::internal_msg(format!("the host reopened session {got} instead of {requested}")));
    }
    Ok(())
}
