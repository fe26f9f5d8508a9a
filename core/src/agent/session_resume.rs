//! `session/resume`: reopen a stored session through the host and answer — with no
//! `session/update` at all (that is what distinguishes it from `session/load`); or, for a session
//! already live on this connection, just answer (see `establish`).

use std::sync::Arc;

use serde_json::Value;

use super::capabilities::{accepted_system_prompt, check_mcp_servers};
use super::establish::{Reopen, reopen};
use super::session_state::validate_session_id;
use super::state::AgentInner;
use super::wire::{Reply, decode, encode};
use crate::acp::{ResumeSessionRequest, ResumeSessionResponse};
use crate::host::Setup;
use crate::rpc::RequestContext;

/// `session/resume`.
pub(crate) fn resume_session(agent: &Arc<AgentInner>, params: Value, cx: RequestContext) -> Reply {
    let agent = agent.clone();
    Box::pin(async move {
        let request: ResumeSessionRequest = decode(params)?;
        validate_session_id(&request.session_id.0)?;
        check_mcp_servers(&agent.options.mcp_capabilities, &request.mcp_servers)?;
        let setup = Setup::new(request.cwd, request.additional_directories, request.mcp_servers)?
            .with_meta(request.meta)
            .with_system_prompt(accepted_system_prompt(&agent.options, request.system_prompt));
        let setup = agent.attach_client(setup);
        let config = reopen(&agent, &request.session_id, setup, Reopen::Resume, &cx).await?;
        encode(&ResumeSessionResponse::new().config_options(config.options).modes(config.modes))
    })
}
