//! `session/new`: validate the setup, reserve a slot in the registry, create the session through
//! the host, register it, and answer with its id and config state.

use std::sync::Arc;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::cancellation::cancellable;
use super::capabilities::{accepted_system_prompt, check_mcp_servers};
use super::establish::{initial_config_or_close, register};
use super::state::AgentInner;
use super::wire::{Reply, decode, encode};
use crate::acp::{NewSessionRequest, NewSessionResponse};
use crate::host::Setup;

/// `session/new`.
pub(crate) fn new_session(agent: &Arc<AgentInner>, params: Value, cancelled: CancellationToken) -> Reply {
    let agent = agent.clone();
    Box::pin(async move {
        let request: NewSessionRequest = decode(params)?;
        check_mcp_servers(&agent.options.mcp_capabilities, &request.mcp_servers)?;
        let setup = Setup::new(request.cwd, request.additional_directories, request.mcp_servers)?
            .with_meta(request.meta)
            .with_system_prompt(accepted_system_prompt(&agent.options, request.system_prompt));
        let setup = agent.attach_client(setup);
        let reservation = agent.registry.reserve()?;
        let live = cancellable(&cancelled, "session/new", agent.options.host.new_session(setup.clone())).await?;
        let entry = register(&agent, reservation, live, setup).await?;
        let config = initial_config_or_close(&agent, &entry).await?;
        tracing::info!(session = %entry.id, "session created");
        encode(&NewSessionResponse::new(entry.id.clone()).config_options(config.options).modes(config.modes))
    })
}
