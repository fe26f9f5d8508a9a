//! The bounded, concurrency-safe registry of live sessions.
//!
//! A slot is reserved before the host creates a session, so concurrent `session/new` requests can
//! never push the registry past `max_sessions`; the slot is released if creation fails.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use super::session::SessionEntry;
use crate::acp::SessionId;
use crate::error::{Error, ErrorExt};

/// The live sessions of one connection.
pub(crate) struct Registry {
    max: usize,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    sessions: HashMap<SessionId, Arc<SessionEntry>>,
    reserved: usize,
}

/// A reserved slot; released on drop unless [`Registry::insert`] consumed it.
pub(crate) struct Reservation<'a> {
    registry: &'a Registry,
    used: bool,
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        if !self.used {
            self.registry.lock().reserved -= 1;
        }
    }
}

impl Registry {
    pub(crate) fn new(max: usize) -> Self {
        Self {
            max,
            state: Mutex::default(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Reserves room for one more session, or fails when the registry is full.
    pub(crate) fn reserve(&self) -> Result<Reservation<'_>, Error> {
        let mut state = self.lock();
        if state.sessions.len() + state.reserved >= self.max {
            return Err(Error::invalid_request_msg(format!(
                "too many live sessions (the limit is {}): close one first",
                self.max
            )));
        }
        state.reserved += 1;
        Ok(Reservation {
            registry: self,
            used: false,
        })
    }

    /// Registers a session in a reserved slot; fails if the id is already live.
    pub(crate) fn insert(&self, mut reservation: Reservation<'_>, entry: Arc<SessionEntry>) -> Result<(), Error> {
        let mut state = self.lock();
        if state.sessions.contains_key(&entry.id) {
            return Err(Error::invalid_request_msg(format!("session {} is already live", entry.id)));
        }
        state.reserved -= 1;
        reservation.used = true;
        state.sessions.insert(entry.id.clone(), entry);
        Ok(())
    }

    /// The live session with this id.
    pub(crate) fn get(&self, id: &SessionId) -> Option<Arc<SessionEntry>> {
        self.lock().sessions.get(id).cloned()
    }

    /// Removes a session (the last step of closing it).
    pub(crate) fn remove(&self, id: &SessionId) -> Option<Arc<SessionEntry>> {
        self.lock().sessions.remove(id)
    }

    /// Every live session.
    pub(crate) fn all(&self) -> Vec<Arc<SessionEntry>> {
        self.lock().sessions.values().cloned().collect()
    }

    /// How many sessions are live.
    pub(crate) fn len(&self) -> usize {
        self.lock().sessions.len()
    }
}
