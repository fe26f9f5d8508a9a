//! `session/load`: reopen a stored session, replay its conversation (see [`replay`](super::replay))
//! before the response, then serve it live — or re-attach the session when it is already live on
//! this connection (see `establish`).

use std::sync::Arc;

use serde_json::Value;

use super::capabilities::{accepted_system_prompt, check_mcp_servers};
use super::establish::{Reopen, reopen};
use super::session_state::validate_session_id;
use super::state::AgentInner;
use super::wire::{Reply, decode, encode};
use crate::acp::{LoadSessionRequest, LoadSessionResponse};
use crate::host::Setup;
use crate::rpc::RequestContext;

/// `session/load`.
pub(crate) fn load_session(agent: &Arc<AgentInner>, params: Value, cx: RequestContext) -> Reply {
    let agent = agent.clone();
    Box::pin(async move {
        let request: LoadSessionRequest = decode(params)?;
        validate_session_id(&request.session_id.0)?;
        check_mcp_servers(&agent.options.mcp_capabilities, &request.mcp_servers)?;
        let setup = Setup::new(request.cwd, request.additional_directories, request.mcp_servers)?
            .with_meta(request.meta)
            .with_system_prompt(accepted_system_prompt(&agent.options, request.system_prompt));
        let setup = agent.attach_client(setup);
        let config = reopen(&agent, &request.session_id, setup, Reopen::Load, &cx).await?;
        encode(&LoadSessionResponse::new().config_options(config.options).modes(config.modes))
    })
}
