//! The advertised `AgentCapabilities`, derived only from which host parts are present.

use super::options::Options;
use crate::acp::{
    AgentAuthCapabilities, AgentCapabilities, LogoutCapabilities, SessionCapabilities, SessionCloseCapabilities,
    SessionDeleteCapabilities, SessionListCapabilities, SessionResumeCapabilities,
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
