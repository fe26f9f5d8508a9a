//! Durable sessions: the journal of Enduring events, the session catalog, and which process
//! owns a live session.
//!
//! [`Store`] is what the runner needs from storage; `SqliteStore` (feature `sqlite`) keeps it in
//! one file (or `:memory:`), `PostgresStore` (feature `postgres`) in a `PostgreSQL` database
//! shared by a fleet of processes, [`MemoryStore`] in this process, for tests.
//!
//! # Ownership
//!
//! A store shared by many processes gives each session at most one *owner* at a time: the process
//! whose runner has it live. [`Store::create_session`] makes the creating store the owner,
//! [`Store::claim_session`] takes a session nobody live owns (its owner released it, exited or
//! died), [`Store::release_session`] gives it back. Every write to a session's journal or record
//! by a store that does not own it fails with [`StoreErrorKind::NotOwner`], checked in the write's
//! own transaction: two processes never append to one session interleaved. A store used by one
//! process at a time (`SqliteStore`, [`MemoryStore`]) has no owners: its
//! claims always succeed and releasing does nothing (the runner keeps one live session per id
//! within its process).

// The journal's entry text, which the database stores write (the in-memory store keeps events).
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) mod entry;
#[cfg(feature = "postgres")]
pub mod postgres;
#[cfg(feature = "sqlite")]
pub mod sqlite;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use async_trait::async_trait;

use acp_facade::acp::{SessionId, SystemPrompt};
use acp_facade::harness::Event;
use acp_facade::host::Principal;

/// What kind of failure a [`StoreError`] is: what the runner may do about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum StoreErrorKind {
    /// Bad data, a broken constraint, a bug: retrying will not help.
    Failed,
    /// The store could not be reached or did not answer in time (a database restarting, a
    /// network failure); the same call may succeed later. The outcome of a write that failed this
    /// way is unknown: it may have been applied.
    Unavailable,
    /// The session belongs to another process (see [Ownership](self#ownership)): nothing was
    /// written.
    NotOwner,
}

/// A storage failure.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("session store: {message}")]
pub struct StoreError {
    kind: StoreErrorKind,
    message: String,
}

impl StoreError {
    /// A failure that retrying will not cure ([`StoreErrorKind::Failed`]).
    pub fn new(message: impl Into<String>) -> Self {
        Self { kind: StoreErrorKind::Failed, message: message.into() }
    }

    /// The store could not be reached or did not answer ([`StoreErrorKind::Unavailable`]).
    pub fn unavailable(message: impl Into<String>) -> Self {
        Self { kind: StoreErrorKind::Unavailable, message: message.into() }
    }

    /// A write fenced off because another process owns the session ([`StoreErrorKind::NotOwner`]).
    pub fn not_owner(message: impl Into<String>) -> Self {
        Self { kind: StoreErrorKind::NotOwner, message: message.into() }
    }

    /// What kind of failure this is.
    pub fn kind(&self) -> StoreErrorKind {
        self.kind
    }

    /// What went wrong, without the `session store:` prefix of the error's display.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl From<StoreError> for acp_facade::Error {
    fn from(e: StoreError) -> Self {
        acp_facade::error::ErrorExt::internal_msg(e.to_string())
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
    /// The client's system prompt, as last given on `session/new`, `load` or `resume`.
    pub system_prompt: Option<SystemPrompt>,
    /// The principal of the connection that created the session (`None`: none, as over stdio).
    /// Only connections of the same principal see the session.
    pub principal: Option<Principal>,
}

/// Which page of the session catalog [`Store::list_page`] reads: the sessions of one principal,
/// in one cwd (or any), after a session id, in session-id byte order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageQuery<'a> {
    /// Only sessions of this principal (`None`: only sessions without one).
    pub principal: Option<&'a Principal>,
    /// Only sessions whose cwd is exactly this path (`None`: any cwd).
    pub cwd: Option<&'a Path>,
    /// Only sessions whose id sorts after this one, byte by byte (`None`: from the first).
    pub after: Option<&'a str>,
    /// At most this many sessions.
    pub limit: usize,
}

impl PageQuery<'_> {
    /// Whether `record` is of this query's principal and cwd, after its position.
    pub fn matches(&self, record: &SessionRecord) -> bool {
        record.principal.as_ref() == self.principal
            && self.cwd.is_none_or(|cwd| record.cwd == cwd)
            && self.after.is_none_or(|after| record.id.0.as_bytes() > after.as_bytes())
    }
}

/// The answer to [`Store::claim_session`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Claim {
    /// This process owns the session now (or there is no such session: reading it says so).
    Claimed,
    /// Another live process owns it.
    HeldElsewhere {
        /// Which process, for messages (`process 4242 on host build-7`).
        holder: String,
    },
}

/// Storage of sessions and their Enduring events. Implementations must be safe to share between
/// threads and tasks.
///
/// Calls are `async`; a store whose calls are short local transactions may run them inline in
/// the calling task (as `SqliteStore` does) rather than hop to another
/// thread. A session's writes are issued one at a time, each after the previous one returned.
///
/// A batch whose first event has the `seq` of the first event of a batch already journaled for the
/// session is the same batch again: the runner appends a batch once more only after an
/// [`Unavailable`](StoreErrorKind::Unavailable) failure, and never starts two different batches at
/// one `seq`. A store whose writes can end with an unknown outcome (a network database) must
/// apply such a repeat at most once.
#[async_trait]
pub trait Store: Send + Sync + 'static {
    /// Records a new session, owned by this process; fails if the id exists.
    async fn create_session(&self, record: &SessionRecord) -> Result<(), StoreError>;
    /// One session's record.
    async fn session(&self, id: &SessionId) -> Result<Option<SessionRecord>, StoreError>;
    /// Every session's record.
    async fn list_sessions(&self) -> Result<Vec<SessionRecord>, StoreError>;
    /// One page of the catalog: the records [`PageQuery::matches`], sorted by id bytes, at most
    /// `query.limit` of them. A database store reads just those rows with a keyset query served
    /// by an index, so a page costs the same however many sessions the store holds. Default:
    /// filters [`list_sessions`](Self::list_sessions), for stores that hold few sessions.
    async fn list_page(&self, query: &PageQuery<'_>) -> Result<Vec<SessionRecord>, StoreError> {
        let mut records: Vec<_> = self.list_sessions().await?.into_iter().filter(|r| query.matches(r)).collect();
        records.sort_by(|a, b| a.id.0.as_bytes().cmp(b.id.0.as_bytes()));
        records.truncate(query.limit);
        Ok(records)
    }
    /// Sets the title (when `Some`) and the update time; an unknown session is left alone.
    async fn touch_session(&self, id: &SessionId, title: Option<&str>, updated_at: &str) -> Result<(), StoreError>;
    /// Replaces the session's system prompt (a `load` or `resume` that carried one); an unknown
    /// session is left alone. Default: an error, for a store that does not keep them.
    async fn set_system_prompt(&self, id: &SessionId, system_prompt: &SystemPrompt) -> Result<(), StoreError> {
        let _ = system_prompt;
        Err(StoreError::new(format!("this store cannot keep the system prompt of session {id}")))
    }
    /// Appends Enduring events to the session's journal, in order, after every earlier one, as
    /// one transaction where the store has them (all or nothing).
    async fn append_events(&self, id: &SessionId, events: &[Event]) -> Result<(), StoreError>;
    /// Appends one Enduring event.
    async fn append_event(&self, id: &SessionId, event: &Event) -> Result<(), StoreError> {
        self.append_events(id, std::slice::from_ref(event)).await
    }
    /// Appends events and updates the session's title (when `Some`) and update time, at once
    /// (one transaction where the store has them).
    async fn append_events_and_touch(
        &self,
        id: &SessionId,
        events: &[Event],
        title: Option<&str>,
        updated_at: &str,
    ) -> Result<(), StoreError> {
        self.append_events(id, events).await?;
        self.touch_session(id, title, updated_at).await
    }
    /// The session's journal, oldest first.
    async fn events(&self, id: &SessionId) -> Result<Vec<Event>, StoreError>;
    /// Deletes a session and its journal; deleting an unknown id succeeds. A session owned by
    /// another live process is not deleted ([`StoreErrorKind::NotOwner`]).
    async fn delete_session(&self, id: &SessionId) -> Result<(), StoreError>;
    /// Takes ownership of a session for this process, unless another live process owns it (see
    /// [Ownership](self#ownership)). Claiming a session this process owns succeeds. Default: no
    /// owners, always [`Claim::Claimed`].
    async fn claim_session(&self, id: &SessionId) -> Result<Claim, StoreError> {
        let _ = id;
        Ok(Claim::Claimed)
    }
    /// Gives up this process's ownership of a session (nothing when it does not own it).
    /// Default: nothing to give up.
    async fn release_session(&self, id: &SessionId) -> Result<(), StoreError> {
        let _ = id;
        Ok(())
    }
    /// The key that authenticates `session/list` cursors, when the store keeps one that every
    /// process sharing it reads (so a cursor from one process pages in another, and after a
    /// restart). `None` (the default): each agent draws its own.
    fn cursor_key(&self) -> Option<[u8; 32]> {
        None
    }
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

#[async_trait]
impl Store for MemoryStore {
    async fn create_session(&self, record: &SessionRecord) -> Result<(), StoreError> {
        let mut state = self.lock();
        if state.contains_key(&record.id) {
            return Err(StoreError::new(format!("session {} already exists", record.id)));
        }
        state.insert(record.id.clone(), (record.clone(), Vec::new()));
        Ok(())
    }

    async fn session(&self, id: &SessionId) -> Result<Option<SessionRecord>, StoreError> {
        Ok(self.lock().get(id).map(|(r, _)| r.clone()))
    }

    async fn list_sessions(&self) -> Result<Vec<SessionRecord>, StoreError> {
        Ok(self.lock().values().map(|(r, _)| r.clone()).collect())
    }

    /// Scans the map (this store holds few sessions), cloning only the page's records.
    async fn list_page(&self, query: &PageQuery<'_>) -> Result<Vec<SessionRecord>, StoreError> {
        let state = self.lock();
        let mut page: Vec<&SessionRecord> = state.values().map(|(r, _)| r).filter(|r| query.matches(r)).collect();
        page.sort_unstable_by(|a, b| a.id.0.as_bytes().cmp(b.id.0.as_bytes()));
        page.truncate(query.limit);
        Ok(page.into_iter().cloned().collect())
    }

    async fn touch_session(&self, id: &SessionId, title: Option<&str>, updated_at: &str) -> Result<(), StoreError> {
        if let Some((record, _)) = self.lock().get_mut(id) {
            if let Some(title) = title {
                record.title = Some(title.to_owned());
            }
            updated_at.clone_into(&mut record.updated_at);
        }
        Ok(())
    }

    async fn set_system_prompt(&self, id: &SessionId, system_prompt: &SystemPrompt) -> Result<(), StoreError> {
        if let Some((record, _)) = self.lock().get_mut(id) {
            record.system_prompt = Some(system_prompt.clone());
        }
        Ok(())
    }

    async fn append_events(&self, id: &SessionId, events: &[Event]) -> Result<(), StoreError> {
        match self.lock().get_mut(id) {
            Some((_, journal)) => {
                journal.extend_from_slice(events);
                Ok(())
            }
            None => Err(StoreError::new(format!("no session {id}"))),
        }
    }

    async fn events(&self, id: &SessionId) -> Result<Vec<Event>, StoreError> {
        Ok(self.lock().get(id).map(|(_, e)| e.clone()).unwrap_or_default())
    }

    async fn delete_session(&self, id: &SessionId) -> Result<(), StoreError> {
        self.lock().remove(id);
        Ok(())
    }
}

/// Catalog times are stamped with the crate's one clock.
pub use acp_facade::time::now_rfc3339;
