//! The advertised `AgentCapabilities`, derived only from the options (which host parts are
//! present, what content and transports the host accepts, which extensions it serves); the
//! advertised authentication methods, filtered by what the client can run; and the refusal
//! (`-32602`) of what a client sends although it was not advertised — prompt blocks and MCP
//! servers — before any host call.

use super::options::Options;
use crate::acp::{
    AgentAuthCapabilities, AgentCapabilities, AuthMethod, ClientCapabilities, ContentBlock, LogoutCapabilities,
    McpCapabilities, McpServer, PromptCapabilities, SessionCapabilities, SessionCloseCapabilities,
    SessionDeleteCapabilities, SessionListCapabilities, SessionResumeCapabilities, SessionSystemPromptCapabilities,
    SystemPrompt,
};
use crate::error::{Error, ErrorExt};

/// What `initialize` advertises for these options.
pub(super) fn advertised(options: &Options) -> AgentCapabilities {
    let mut session = SessionCapabilities::new();
    if options.catalog.is_some() {
        session = session.list(SessionListCapabilities::new());
    }
    if options.deleter.is_some() {
        session = session.delete(SessionDeleteCapabilities::new());
    }
    if options.resumer.is_some() {
        session = session.resume(SessionResumeCapabilities::new());
    }
    if options.close {
        session = session.close(SessionCloseCapabilities::new());
    }
    if options.system_prompt {
        session = session.system_prompt(SessionSystemPromptCapabilities::new());
    }
    let mut auth = AgentAuthCapabilities::new();
    if options.authenticator.as_ref().is_some_and(|a| a.supports_logout()) {
        auth = auth.logout(LogoutCapabilities::new());
    }
    AgentCapabilities::new()
        .load_session(options.loader.is_some())
        .prompt_capabilities(options.prompt_capabilities.clone())
        .mcp_capabilities(options.mcp_capabilities.clone())
        .session_capabilities(session)
        .auth(auth)
        .meta(options.extensions.advertised())
}

/// The client's system prompt as the host gets it: only when the host takes system prompts (and
/// so advertised them); otherwise it is left out (logged), since ACP forbids sending it then.
pub(crate) fn accepted_system_prompt(options: &Options, system_prompt: Option<SystemPrompt>) -> Option<SystemPrompt> {
    if system_prompt.is_some() && !options.system_prompt {
        tracing::debug!("a `systemPrompt` the agent did not advertise: left out");
        return None;
    }
    system_prompt
}

/// Rejects prompt content the agent did not advertise (`-32602`, naming the block). Text and
/// resource links are always accepted (ACP requires them).
pub(crate) fn check_prompt(capabilities: &PromptCapabilities, prompt: &[ContentBlock]) -> Result<(), Error> {
    for (index, block) in prompt.iter().enumerate() {
        let (allowed, what) = match block {
            ContentBlock::Text(_) | ContentBlock::ResourceLink(_) => continue,
            ContentBlock::Image(_) => (capabilities.image, "image"),
            ContentBlock::Audio(_) => (capabilities.audio, "audio"),
            ContentBlock::Resource(_) => (capabilities.embedded_context, "resource"),
            _ => (false, "unknown"),
        };
        if !allowed {
            return Err(Error::invalid_params_msg(format!(
                "invalid params at `prompt[{index}]`: {what} content is not supported by this agent"
            )));
        }
    }
    Ok(())
}

/// Rejects MCP servers whose transport the agent did not advertise (`-32602`, naming the server).
/// Stdio servers are always accepted (ACP requires them).
pub(crate) fn check_mcp_servers(capabilities: &McpCapabilities, servers: &[McpServer]) -> Result<(), Error> {
    for (index, server) in servers.iter().enumerate() {
        let refused = match server {
            McpServer::Http(http) if !capabilities.http => format!("`{}` uses the http transport", http.name),
            McpServer::Sse(sse) if !capabilities.sse => format!("`{}` uses the sse transport", sse.name),
            McpServer::Stdio(_) | McpServer::Http(_) | McpServer::Sse(_) => continue,
            _ => "its transport is unknown".to_owned(),
        };
        return Err(Error::invalid_params_msg(format!(
            "invalid params at `mcpServers[{index}]`: MCP server {refused}, which this agent does not support"
        )));
    }
    Ok(())
}

/// The authentication methods `initialize` lists for a client with `client` capabilities: every
/// method of the host, except terminal methods (schema v1.21.0) for a client that did not
/// advertise `auth.terminal` — it could not run them, and must not see a v1.21.0-only variant.
pub(super) fn auth_methods(methods: Vec<AuthMethod>, client: &ClientCapabilities) -> Vec<AuthMethod> {
    methods.into_iter().filter(|method| client.auth.terminal || !matches!(method, AuthMethod::Terminal(_))).collect()
}
