//! The bounded, concurrency-safe registry of live sessions.
//!
//! A slot is reserved before the host creates a session, so concurrent `session/new` requests can
//! never push the registry past `max_sessions`; the slot is released if creation fails.
//!
//! When the client hangs up the registry stops taking reservations (`Registry::refuse_new`), so
//! that closing every session ends: a session whose creation was already under way is registered
//! (and then closed), no new one can start.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::sync::Notify;
use tokio::sync::futures::Notified;

use super::session_state::SessionEntry;
use crate::acp::SessionId;
use crate::error::{Error, ErrorExt};

/// The live sessions of one connection.
pub(crate) struct Registry {
    max: usize,
    state: Mutex<State>,
    /// Woken whenever a reservation ends or a session is removed.
    changed: Notify,
}

#[derive(Default)]
struct State {
    sessions: HashMap<SessionId, Arc<SessionEntry>>,
    reserved: usize,
    /// The connection is going away: no new reservations.
    refusing: bool,
    /// Stored sessions being reopened (`session/load`, `session/resume`) right now.
    opening: HashSet<SessionId>,
}

/// A reserved slot; released on drop unless [`Registry::insert`] consumed it.
pub(crate) struct Reservation<'a> {
    registry: &'a Registry,
    used: bool,
    /// The stored session this slot reopens, kept from being opened twice at once.
    id: Option<SessionId>,
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        if self.used {
            return;
        }
        {
            let mut state = self.registry.lock();
            state.reserved -= 1;
            if let Some(id) = &self.id {
                state.opening.remove(id);
            }
        }
        self.registry.changed.notify_waiters();
    }
}

impl Registry {
    pub(crate) fn new(max: usize) -> Self {
        Self { max, state: Mutex::default(), changed: Notify::new() }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Reserves room for one more session, or fails when the registry is full.
    pub(crate) fn reserve(&self) -> Result<Reservation<'_>, Error> {
        self.reserve_locked(&mut self.lock())
    }

    /// Reserves room for reopening the stored session `id`: fails (`-32600`) while it is live or
    /// already being reopened, so two concurrent loads or resumes can never both reach the host.
    pub(crate) fn reserve_id(&self, id: &SessionId) -> Result<Reservation<'_>, Error> {
        let mut state = self.lock();
        if state.sessions.contains_key(id) {
            return Err(Error::invalid_request_msg(format!("session {id} is already live")));
        }
        if state.opening.contains(id) {
            return Err(Error::invalid_request_msg(format!("session {id} is already being opened")));
        }
        let mut reservation = self.reserve_locked(&mut state)?;
        state.opening.insert(id.clone());
        reservation.id = Some(id.clone());
        Ok(reservation)
    }

    fn reserve_locked(&self, state: &mut State) -> Result<Reservation<'_>, Error> {
        if state.refusing {
            return Err(Error::invalid_request_msg("the connection is closing: no new sessions"));
        }
        if state.sessions.len() + state.reserved >= self.max {
            return Err(Error::invalid_request_msg(format!(
                "too many live sessions (the limit is {}): close one first",
                self.max
            )));
        }
        state.reserved += 1;
        Ok(Reservation { registry: self, used: false, id: None })
    }

    /// Registers a session in a reserved slot; fails if the id is already live.
    pub(crate) fn insert(&self, mut reservation: Reservation<'_>, entry: Arc<SessionEntry>) -> Result<(), Error> {
        let mut state = self.lock();
        if state.sessions.contains_key(&entry.id) {
            return Err(Error::invalid_request_msg(format!("session {} is already live", entry.id)));
        }
        state.reserved -= 1;
        reservation.used = true;
        if let Some(id) = reservation.id.take() {
            state.opening.remove(&id);
        }
        state.sessions.insert(entry.id.clone(), entry);
        drop(state);
        self.changed.notify_waiters();
        Ok(())
    }

    /// The live session with this id.
    pub(crate) fn get(&self, id: &SessionId) -> Option<Arc<SessionEntry>> {
        self.lock().sessions.get(id).cloned()
    }

    /// Whether `id` is live or being reopened.
    pub(crate) fn is_live_or_opening(&self, id: &SessionId) -> bool {
        let state = self.lock();
        state.sessions.contains_key(id) || state.opening.contains(id)
    }

    /// Removes a session (the last step of closing it).
    pub(crate) fn remove(&self, id: &SessionId) -> Option<Arc<SessionEntry>> {
        let removed = self.lock().sessions.remove(id);
        self.changed.notify_waiters();
        removed
    }

    /// Refuses every later reservation (the connection is going away).
    pub(crate) fn refuse_new(&self) {
        self.lock().refusing = true;
    }

    /// The live sessions, and how many sessions are being created right now.
    pub(crate) fn snapshot(&self) -> (Vec<Arc<SessionEntry>>, usize) {
        let state = self.lock();
        (state.sessions.values().cloned().collect(), state.reserved)
    }

    /// Resolves at the next change: a reservation ending or a session removed. Enable it (or poll
    /// it once) before looking at the state it should wake up for.
    pub(crate) fn changed(&self) -> Notified<'_> {
        self.changed.notified()
    }

    /// How many sessions are live.
    pub(crate) fn len(&self) -> usize {
        self.lock().sessions.len()
    }
}
