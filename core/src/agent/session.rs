//! `session/new`, the per-session state the facade keeps, and `resolve_session`.
//!
//! Every session-scoped method resolves its wire `sessionId` through `resolve_session` before the
//! id touches the host or any session state: the string is validated first (malformed → `-32602`),
//! then looked up in the live registry (unknown → `-32002`). No host call ever comes first.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::translate::UpdateHead;
use super::{AgentInner, Reply, cancellable, decode, encode};
use crate::acp::{NewSessionRequest, NewSessionResponse, SessionId};
use crate::error::{Error, ErrorExt};
use crate::host::{LiveSession, Setup};

/// The longest session id accepted.
pub const MAX_SESSION_ID_LEN: usize = 256;

/// Checks that a session id is well formed: non-empty, at most 256 bytes, no control characters.
pub fn validate_session_id(id: &str) -> Result<(), Error> {
    if id.is_empty() {
        return Err(Error::invalid_params_msg("invalid `sessionId`: it is empty"));
    }
    if id.len() > MAX_SESSION_ID_LEN {
        return Err(Error::invalid_params_msg(format!("invalid `sessionId`: longer than {MAX_SESSION_ID_LEN} bytes")));
    }
    if id.chars().any(char::is_control) {
        return Err(Error::invalid_params_msg("invalid `sessionId`: it contains control characters"));
    }
    Ok(())
}

/// Validates `id`, then finds its live session.
pub(crate) fn resolve_session(agent: &AgentInner, id: &SessionId) -> Result<Arc<SessionEntry>, Error> {
    validate_session_id(&id.0)?;
    agent.registry.get(id).ok_or_else(|| Error::session_not_found(&id.0))
}

/// The prompt a session is running, if any.
#[derive(Default)]
struct PromptSlot {
    in_flight: Option<InFlight>,
    /// Fires once the last finished prompt's response is queued (see [`PromptGuard::release`]).
    answering: Option<CancellationToken>,
}

struct InFlight {
    cancel: CancellationToken,
    finished: CancellationToken,
}

/// What the facade keeps for one live session.
pub(crate) struct SessionEntry {
    pub(crate) id: SessionId,
    pub(crate) live: Arc<dyn LiveSession>,
    pub(crate) setup: Setup,
    prompt: Mutex<PromptSlot>,
    closing: AtomicBool,
    /// Fires when the session starts closing: pending permission requests stop waiting.
    pub(crate) closed: CancellationToken,
    /// Whether `available_commands_update` was sent for this session.
    pub(crate) commands_advertised: AtomicBool,
    /// Title and update time last told to the client (for `session_info_update`).
    pub(crate) last_info: Mutex<(Option<String>, Option<String>)>,
    /// The start of this session's `session/update` lines, written once.
    pub(crate) update_head: UpdateHead,
}

/// Proof that a prompt is in flight; clears the slot (and wakes a waiting close) when dropped.
///
/// A prompt ends in two steps: [`PromptGuard::release`] frees the session for the next prompt as
/// soon as the outcome is known, and the returned [`PromptAnswered`] fires once the response is
/// queued — `session/close` waits for that, so its response can never overtake the prompt's,
/// while a client that prompts again the moment it reads the response is never refused.
pub(crate) struct PromptGuard {
    entry: Arc<SessionEntry>,
    pub(crate) cancel: CancellationToken,
    finished: Option<CancellationToken>,
}

impl PromptGuard {
    /// Frees the session's prompt slot; the result fires "answered" when dropped.
    pub(crate) fn release(mut self) -> PromptAnswered {
        let finished = self.finished.take();
        let mut slot = self.entry.lock_prompt();
        slot.in_flight = None;
        slot.answering.clone_from(&finished);
        PromptAnswered(finished)
    }
}

impl Drop for PromptGuard {
    fn drop(&mut self) {
        if let Some(finished) = self.finished.take() {
            self.entry.lock_prompt().in_flight = None;
            finished.cancel();
        }
    }
}

/// Fires the prompt's "answered" signal when dropped (after its response is queued).
pub(crate) struct PromptAnswered(Option<CancellationToken>);

impl Drop for PromptAnswered {
    fn drop(&mut self) {
        if let Some(finished) = self.0.take() {
            finished.cancel();
        }
    }
}

impl SessionEntry {
    pub(crate) fn new(live: Arc<dyn LiveSession>, setup: Setup) -> Arc<Self> {
        let id = live.id();
        Arc::new(Self {
            update_head: UpdateHead::new(&id.0),
            id,
            live,
            setup,
            prompt: Mutex::default(),
            closing: AtomicBool::new(false),
            closed: CancellationToken::new(),
            commands_advertised: AtomicBool::new(false),
            last_info: Mutex::default(),
        })
    }

    fn lock_prompt(&self) -> MutexGuard<'_, PromptSlot> {
        self.prompt.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Marks a prompt in flight: fails (`-32600`) when one already is or the session is closing.
    pub(crate) fn begin_prompt(self: &Arc<Self>) -> Result<PromptGuard, Error> {
        let mut slot = self.lock_prompt();
        if self.closing.load(Ordering::Acquire) {
            return Err(Error::invalid_request_msg(format!("session {} is closing", self.id)));
        }
        if slot.in_flight.is_some() {
            return Err(Error::invalid_request_msg(format!("session {} already has a prompt in flight", self.id)));
        }
        let cancel = CancellationToken::new();
        let finished = CancellationToken::new();
        slot.in_flight = Some(InFlight { cancel: cancel.clone(), finished: finished.clone() });
        Ok(PromptGuard { entry: self.clone(), cancel, finished: Some(finished) })
    }

    /// Cancels the in-flight prompt, if any; returns whether there was one.
    pub(crate) fn cancel_prompt(&self) -> bool {
        let slot = self.lock_prompt();
        match &slot.in_flight {
            Some(in_flight) => {
                in_flight.cancel.cancel();
                true
            }
            None => false,
        }
    }

    /// Marks the session closing (new prompts are rejected from now on) and returns a token that
    /// fires once the in-flight prompt, if any, has returned and its response is queued. `None` if it was already closing.
    pub(crate) fn mark_closing(&self) -> Option<CancellationToken> {
        let slot = self.lock_prompt();
        if self.closing.swap(true, Ordering::AcqRel) {
            return None;
        }
        self.closed.cancel();
        let finished = if let Some(in_flight) = &slot.in_flight {
            in_flight.cancel.cancel();
            in_flight.finished.clone()
        } else if let Some(answering) = &slot.answering {
            // The last prompt is done but its response may not be queued yet.
            answering.clone()
        } else {
            let done = CancellationToken::new();
            done.cancel();
            done
        };
        Some(finished)
    }

    /// Whether the session is closing.
    pub(crate) fn is_closing(&self) -> bool {
        self.closing.load(Ordering::Acquire)
    }
}

/// Turns a host-provided session into a registered one; the id must be well formed.
pub(crate) fn register(
    agent: &AgentInner,
    reservation: super::registry::Reservation<'_>,
    live: Arc<dyn LiveSession>,
    setup: Setup,
) -> Result<Arc<SessionEntry>, Error> {
    let id = live.id();
    validate_session_id(&id.0)
        .map_err(|e| Error::internal_msg(format!("the host created a bad session id: {}", e.message)))?;
    let entry = SessionEntry::new(live, setup);
    agent.registry.insert(reservation, entry.clone())?;
    Ok(entry)
}

/// `session/new`.
pub(crate) fn new_session(agent: &Arc<AgentInner>, params: Value, cancelled: CancellationToken) -> Reply {
    let agent = agent.clone();
    Box::pin(async move {
        let request: NewSessionRequest = decode(params)?;
        agent.require_authenticated()?;
        let setup = Setup::new(request.cwd, request.additional_directories.clone(), request.mcp_servers)?;
        let reservation = agent.registry.reserve()?;
        let live = cancellable(&cancelled, "session/new", agent.options.host.new_session(setup.clone())).await?;
        let entry = register(&agent, reservation, live, setup)?;
        let mut response = NewSessionResponse::new(entry.id.clone());
        if let Some(state) = super::resume::initial_state_or_close(&agent, &entry).await? {
            response = response.config_options(state.options).modes(state.modes);
        }
        tracing::info!(session = %entry.id, "session created");
        encode(&response)
    })
}
