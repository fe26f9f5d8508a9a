//! The advertised `AgentCapabilities`, derived only from which host parts are present, and the
//! advertised authentication methods, filtered by what the client can run.

use super::options::Options;
use crate::acp::{
    AgentAuthCapabilities, AgentCapabilities, AuthMethod, ClientCapabilities, LogoutCapabilities, SessionCapabilities,
    SessionCloseCapabilities, SessionDeleteCapabilities, SessionListCapabilities, SessionResumeCapabilities,
};

/// What `initialize` advertises for these options.
pub fn advertised(options: &Options) -> AgentCapabilities {
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
    let mut auth = AgentAuthCapabilities::new();
    if options.authenticator.as_ref().is_some_and(|a| a.supports_logout()) {
        auth = auth.logout(LogoutCapabilities::new());
    }
    AgentCapabilities::new()
        .load_session(options.loader.is_some())
        .prompt_capabilities(options.prompt_capabilities.clone())
        .session_capabilities(session)
        .auth(auth)
}

/// The authentication methods `initialize` lists for a client with `client` capabilities: every
/// method of the host, except terminal methods (schema v1.21.0) for a client that did not
/// advertise `auth.terminal` — it could not run them, and must not see a v1.21.0-only variant.
pub fn auth_methods(methods: Vec<AuthMethod>, client: &ClientCapabilities) -> Vec<AuthMethod> {
    methods.into_iter().filter(|method| client.auth.terminal || !matches!(method, AuthMethod::Terminal(_))).collect()
}
