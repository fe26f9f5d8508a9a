//! Durable sessions: the journal of Enduring events and the session catalog.
//!
//! [`Store`] is what the runner needs from storage; [`SqliteStore`](super::SqliteStore) is the
//! real one (a file or `:memory:`), [`MemoryStore`] a plain in-process one for tests.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Mutex, PoisonError};

use crate::acp::SessionId;
use crate::harness::Event;

/// A storage failure.
#[derive(Debug, thiserror::Error)]
#[error("session store: {0}")]
pub struct StoreError(pub String);

impl From<StoreError> for crate::Error {
    fn from(e: StoreError) -> Self {
        crate::error::ErrorExt::internal_msg(e.to_string())
    }
}

/// A stored session's metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionRecord {
    /// The session id.
    pub id: SessionId,
    /// Working directory (absolute).
    pub cwd: PathBuf,
    /// Extra roots.
    pub additional_directories: Vec<PathBuf>,
    /// Title, once known.
    pub title: Option<String>,
    /// Creation time, RFC 3339 UTC.
    pub created_at: String,
    /// Last activity, RFC 3339 UTC.
    pub updated_at: String,
}

/// Storage of sessions and their Enduring events. Implementations must be safe to share between
/// threads; calls are short and synchronous.
pub trait Store: Send + Sync + 'static {
    /// Records a new session; fails if the id exists.
    fn create_session(&self, record: &SessionRecord) -> Result<(), StoreError>;
    /// One session's record.
    fn session(&self, id: &SessionId) -> Result<Option<SessionRecord>, StoreError>;
    /// Every session's record.
    fn list_sessions(&self) -> Result<Vec<SessionRecord>, StoreError>;
    /// Sets the title (when `Some`) and the update time.
    fn touch_session(&self, id: &SessionId, title: Option<&str>, updated_at: &str) -> Result<(), StoreError>;
    /// Appends one Enduring event to the session's journal, after every earlier one.
    fn append_event(&self, id: &SessionId, event: &Event) -> Result<(), StoreError>;
    /// Appends several Enduring events at once, in order (one transaction where the store has
    /// them: all or nothing).
    fn append_events(&self, id: &SessionId, events: &[Event]) -> Result<(), StoreError> {
        events.iter().try_for_each(|event| self.append_event(id, event))
    }
    /// Appends events and updates the session's title (when `Some`) and update time, at once
    /// (one transaction where the store has them).
    fn append_events_and_touch(
        &self,
        id: &SessionId,
        events: &[Event],
        title: Option<&str>,
        updated_at: &str,
    ) -> Result<(), StoreError> {
        self.append_events(id, events)?;
        self.touch_session(id, title, updated_at)
    }
    /// The session's journal, oldest first.
    fn events(&self, id: &SessionId) -> Result<Vec<Event>, StoreError>;
    /// Deletes a session and its journal; deleting an unknown id succeeds.
    fn delete_session(&self, id: &SessionId) -> Result<(), StoreError>;
}

/// An in-process store; nothing survives the process.
#[derive(Debug, Default)]
pub struct MemoryStore {
    state: Mutex<HashMap<SessionId, (SessionRecord, Vec<Event>)>>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<SessionId, (SessionRecord, Vec<Event>)>> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Store for MemoryStore {
    fn create_session(&self, record: &SessionRecord) -> Result<(), StoreError> {
        let mut state = self.lock();
        if state.contains_key(&record.id) {
            return Err(StoreError(format!("session {} already exists", record.id)));
        }
        state.insert(record.id.clone(), (record.clone(), Vec::new()));
        Ok(())
    }

    fn session(&self, id: &SessionId) -> Result<Option<SessionRecord>, StoreError> {
        Ok(self.lock().get(id).map(|(r, _)| r.clone()))
    }

    fn list_sessions(&self) -> Result<Vec<SessionRecord>, StoreError> {
        Ok(self.lock().values().map(|(r, _)| r.clone()).collect())
    }

    fn touch_session(&self, id: &SessionId, title: Option<&str>, updated_at: &str) -> Result<(), StoreError> {
        if let Some((record, _)) = self.lock().get_mut(id) {
            if let Some(title) = title {
                record.title = Some(title.to_owned());
            }
            updated_at.clone_into(&mut record.updated_at);
        }
        Ok(())
    }

    fn append_event(&self, id: &SessionId, event: &Event) -> Result<(), StoreError> {
        match self.lock().get_mut(id) {
            Some((_, events)) => {
                events.push(event.clone());
                Ok(())
            }
            None => Err(StoreError(format!("no session {id}"))),
        }
    }

    fn events(&self, id: &SessionId) -> Result<Vec<Event>, StoreError> {
        Ok(self.lock().get(id).map(|(_, e)| e.clone()).unwrap_or_default())
    }

    fn delete_session(&self, id: &SessionId) -> Result<(), StoreError> {
        self.lock().remove(id);
        Ok(())
    }
}

/// Catalog times are stamped with the crate's one clock.
pub use crate::time::now_rfc3339;
