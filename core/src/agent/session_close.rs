//! `session/close`: an orchestrated lifecycle operation, not a registry delete.
//!
//! The steps, in order:
//! 1. Mark the session closing: new prompts are rejected (`-32600`) from now on.
//! 2. Cancel in-flight work as `session/cancel` would: the prompt's drain interrupts the turn, and
//!    the session's calls to the client are cancelled (its [`Client`](crate::client::Client)
//!    refuses new ones).
//! 3. Unblock pending permission requests: they are abandoned and their gates answered deny.
//! 4. Wait until the in-flight prompt has actually returned (it answers `cancelled`); then kill
//!    and release every terminal of the session still held.
//! 5. Call the session's optional [`SessionCloser::shutdown`](crate::host::SessionCloser),
//!    bounded by the close grace period.
//! 6. Remove the session from the live registry — only now.
//!
//! Durable history is never touched: deleting is [`delete`](super::session_delete)'s job alone. When the
//! client disconnects, every live session goes through the same steps.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::FutureExt;
use serde_json::Value;

use super::session_state::SessionEntry;
use super::state::AgentInner;
use super::wire::{Reply, decode, encode};
use crate::acp::{CloseSessionRequest, CloseSessionResponse, SessionId};
use crate::error::{Error, ErrorExt};
use crate::host::{LiveSession, SessionCloser};
use crate::panic::panic_message;

/// `session/close`.
pub(crate) fn close_session_request(agent: &Arc<AgentInner>, params: Value) -> Reply {
    let agent = agent.clone();
    Box::pin(async move {
        let request: CloseSessionRequest = decode(params)?;
        let entry = agent.resolve_session(&request.session_id)?;
        close(&agent, &entry).await?;
        encode(&CloseSessionResponse::new())
    })
}

/// Runs the close steps for one session.
pub(crate) async fn close(agent: &AgentInner, entry: &Arc<SessionEntry>) -> Result<(), Error> {
    // Steps 1-3: closing rejects prompts, cancels the in-flight one and fires `entry.closed`,
    // which abandons pending permission requests (their gates are answered deny).
    let Some(prompt_returned) = entry.mark_closing() else {
        return Err(Error::invalid_request_msg(format!("session {} is already closing", entry.id)));
    };
    // The session's calls to the client are cancelled with it (its handle refuses new ones).
    entry.setup.client().close_session();
    // Step 4.
    prompt_returned.cancelled().await;
    // Terminals the session still holds are killed and released (their turns released their own).
    entry.setup.client().release_terminals().await;
    // Step 5. A hook that fails or panics is reported to the caller, but the session is closed
    // all the same: it must never stay registered as "closing" (a later hang-up would wait for it
    // forever).
    let shut_down = match entry.live.closer() {
        Some(closer) => shutdown(agent, &entry.id, closer).await,
        None => Ok(()),
    };
    // Step 6.
    agent.registry.remove(&entry.id);
    tracing::info!(session = %entry.id, "session closed");
    shut_down
}

/// Shuts down a session the host opened but the facade could not serve (a failed `session/load`
/// or `session/resume`), bounded by the close grace period, so nothing the host started is left
/// running.
pub(crate) async fn discard(agent: &AgentInner, live: &dyn LiveSession) {
    if let Some(closer) = live.closer() {
        let _ = shutdown(agent, &live.id(), closer).await;
    }
}

/// Calls a session's shutdown hook, bounded by the close grace period. Its error, or `-32603`
/// when it panicked, is returned; a hook that outlives the grace period is not an error (it was
/// asked to stop, and the session is closed regardless).
async fn shutdown(agent: &AgentInner, id: &SessionId, closer: &dyn SessionCloser) -> Result<(), Error> {
    let hook = AssertUnwindSafe(closer.shutdown()).catch_unwind();
    match tokio::time::timeout(agent.options.close_grace, hook).await {
        Ok(Ok(Ok(()))) => Ok(()),
        Ok(Ok(Err(e))) => {
            tracing::warn!(session = %id, error = %e.message, "shutdown failed");
            Err(e)
        }
        Ok(Err(panic)) => {
            let message = panic_message(&*panic);
            tracing::error!(session = %id, panic = message, "shutdown panicked");
            Err(Error::internal_msg(format!("the session's shutdown hook panicked: {message}")))
        }
        Err(_) => {
            tracing::warn!(session = %id, "shutdown did not finish within the close grace period");
            Ok(())
        }
    }
}

/// Closes every live session (the client disconnected), including sessions whose creation was
/// already under way, and returns once the registry is empty.
pub(crate) async fn close_all(agent: &AgentInner) {
    agent.registry.refuse_new();
    loop {
        let changed = agent.registry.changed();
        tokio::pin!(changed);
        changed.as_mut().enable();
        let (sessions, being_created) = agent.registry.snapshot();
        if sessions.is_empty() && being_created == 0 {
            return;
        }
        // A session already closing is being closed by its own request: wait for it to go.
        let open: Vec<_> = sessions.into_iter().filter(|entry| !entry.is_closing()).collect();
        if open.is_empty() {
            changed.await;
            continue;
        }
        futures::future::join_all(open.iter().map(|entry| async move {
            let _ = close(agent, entry).await;
        }))
        .await;
    }
}
