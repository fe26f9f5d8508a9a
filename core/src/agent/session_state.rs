//! What the facade keeps for one live session, and the rules of its prompt slot.
//!
//! Invariants:
//! - At most one piece of work holds a session's slot at a time: a prompt in flight, or a
//!   re-attach (`session/load` or `session/resume` of the session while it is live) replaying its
//!   history. Another prompt or re-attach meanwhile is refused (`-32600`).
//! - A closing session takes no new work (`-32600`), and its close waits until the work holding
//!   the slot has returned and its response is queued.
//! - A repeat of a prompt the session accepted with an idempotency key (see `idempotency`) takes
//!   no slot: it is answered from the session's remembered keys, which live as long as the entry.
//! - A session id is well formed (non-empty, at most [`MAX_SESSION_ID_LEN`] bytes, no control
//!   characters) before it is looked up or handed to a host.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio_util::sync::CancellationToken;

use super::cancellation::Cancellation;
use super::control_queue::ControlQueue;
use super::idempotency::Keys;
use super::translate::UpdateHead;
use crate::acp::{AvailableCommand, SessionId, SessionInfoUpdate};
use crate::error::{Error, ErrorExt};
use crate::host::{LiveSession, Setup};

/// The longest session id accepted.
pub(super) const MAX_SESSION_ID_LEN: usize = 256;

/// Checks that a session id is well formed: non-empty, at most 256 bytes, no control characters.
pub(super) fn validate_session_id(id: &str) -> Result<(), Error> {
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

/// What holds a session's slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Work {
    /// A `session/prompt` in flight.
    Prompt,
    /// A `session/load` or `session/resume` of the live session (re-attach).
    Reattach,
}

/// The work a session is doing, if any.
#[derive(Default)]
struct PromptSlot {
    in_flight: Option<InFlight>,
    /// Fires once the last finished work's response is queued (see [`PromptGuard::release`]).
    answering: Option<CancellationToken>,
}

struct InFlight {
    work: Work,
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
    /// The session's slash commands, as advertised to the client.
    pub(crate) commands: CommandState,
    /// Title and update time last told to the client (see [`SessionEntry::session_info_update`]).
    last_info: Mutex<(Option<String>, Option<String>)>,
    /// The start of this session's `session/update` lines, written once.
    pub(crate) update_head: UpdateHead,
    /// The host's own changes of the session, in order with the prompt in flight.
    pub(crate) control: ControlQueue,
    /// The idempotency keys of the prompts the session accepted, the newest.
    pub(crate) keys: Keys,
}

/// A session's slash commands as the facade advertises them (`available_commands_update`).
#[derive(Default)]
pub(crate) struct CommandState {
    /// Whether advertising has started (the session's first prompt came): checked by every prompt.
    pub(crate) started: AtomicBool,
    /// The lists, behind an async lock held until an advertisement is queued, so that
    /// advertisements reach the client in the order their lists were set.
    pub(crate) lists: tokio::sync::Mutex<CommandLists>,
}

/// The command lists of a [`CommandState`].
#[derive(Default)]
pub(crate) struct CommandLists {
    /// The host's commands; `None` until read from the host or set through its control.
    pub(crate) host: Option<Vec<AvailableCommand>>,
    /// The whole list last advertised (`compact` included).
    pub(crate) advertised: Option<Vec<AvailableCommand>>,
}

/// Proof that work (a prompt, a re-attach) holds the slot; clears it (and wakes a waiting close)
/// when dropped.
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
    /// Frees the session's slot; the result fires "answered" when dropped.
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

/// Fires the work's "answered" signal when dropped (after its response is queued).
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
            commands: CommandState::default(),
            last_info: Mutex::default(),
            control: ControlQueue::default(),
            keys: Keys::default(),
        })
    }

    /// The `session_info_update` telling the client a new title and/or update time, or `None`
    /// when neither differs from what the client was last told (an absent value is "unchanged").
    /// Records what it tells: the one check behind every `session_info_update`, whether the host
    /// reports the change as an event or through `Agent::observe_session_meta`.
    pub(crate) fn session_info_update(
        &self,
        title: Option<&String>,
        updated_at: Option<&String>,
    ) -> Option<SessionInfoUpdate> {
        let mut last = self.last_info.lock().unwrap_or_else(PoisonError::into_inner);
        let title = title.filter(|t| last.0.as_ref() != Some(*t));
        let updated_at = updated_at.filter(|u| last.1.as_ref() != Some(*u));
        if title.is_none() && updated_at.is_none() {
            return None;
        }
        let mut update = SessionInfoUpdate::new();
        if let Some(title) = title {
            update = update.title(title.clone());
            last.0 = Some(title.clone());
        }
        if let Some(updated_at) = updated_at {
            update = update.updated_at(updated_at.clone());
            last.1 = Some(updated_at.clone());
        }
        Some(update)
    }

    fn lock_prompt(&self) -> MutexGuard<'_, PromptSlot> {
        self.prompt.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Marks a prompt in flight: fails (`-32600`) when the slot is taken or the session is
    /// closing.
    pub(crate) fn begin_prompt(self: &Arc<Self>) -> Result<PromptGuard, Error> {
        self.begin(Work::Prompt)
    }

    /// Takes the slot for `work`: fails (`-32600`) when it is taken or the session is closing.
    pub(crate) fn begin(self: &Arc<Self>, work: Work) -> Result<PromptGuard, Error> {
        let mut slot = self.lock_prompt();
        if self.closing.load(Ordering::Acquire) {
            return Err(Error::invalid_request_msg(format!("session {} is closing", self.id)));
        }
        if let Some(busy) = &slot.in_flight {
            let why = match (busy.work, work) {
                (Work::Prompt, Work::Prompt) => "already has a prompt in flight",
                (Work::Prompt, Work::Reattach) => "is live with a prompt in flight: it cannot be loaded or resumed now",
                (Work::Reattach, Work::Prompt) => "is being loaded or resumed: prompt it once that has been answered",
                (Work::Reattach, Work::Reattach) => "is already being loaded or resumed",
            };
            return Err(Error::invalid_request_msg(format!("session {} {why}", self.id)));
        }
        let cancel = CancellationToken::new();
        let finished = CancellationToken::new();
        slot.in_flight = Some(InFlight { work, cancel: cancel.clone(), finished: finished.clone() });
        Ok(PromptGuard { entry: self.clone(), cancel, finished: Some(finished) })
    }

    /// Cancels the in-flight prompt, if any; returns whether there was one.
    pub(crate) fn cancel_prompt(&self) -> bool {
        let slot = self.lock_prompt();
        match &slot.in_flight {
            Some(in_flight) if in_flight.work == Work::Prompt => {
                in_flight.cancel.cancel();
                true
            }
            _ => false,
        }
    }

    /// Interrupts the session's turn, logging a host failure (the prompt still ends `cancelled`).
    /// The prompt's calls to the client through the session's handle are cancelled first.
    pub(crate) async fn interrupt(&self) {
        self.setup.client().link.cancel_prompt();
        if let Err(e) = self.live.interrupt().await {
            tracing::warn!(session = %self.id, error = %e.message, "interrupt failed");
        }
    }

    /// Interrupts the turn unless the prompt already did for this cancellation (`cancel`).
    pub(crate) async fn stop_turn(&self, cancel: &mut Cancellation<'_>) {
        if !cancel.noticed() {
            cancel.notice();
            self.interrupt().await;
        }
    }

    /// Marks the session closing (new work is refused from now on) and returns a token that fires
    /// once the work in flight, if any, has returned and its response is queued. `None` if it was
    /// already closing.
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
