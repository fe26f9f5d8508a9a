//! The batteries-included runner: a complete ACP agent from one `run_turn` function.
//!
//! Most products have no event-sourced runtime of their own. The runner is one: it implements
//! every host part ([`SessionHost`], [`SessionLoader`], [`SessionResumer`], [`SessionCatalog`],
//! [`SessionDeleter`]) over a [`Store`] (`SQLite` or in-memory), runs each prompt as a [`Turn`] on
//! the product's [`TurnRunner`], and turns every turn API call into correctly classified and
//! correlated harness events through a per-session [`EventHub`](crate::hub::EventHub). Replay, list, delete and resume
//! then work with no further product code.
//!
//! ```no_run
//! use std::sync::Arc;
//! use acp_facade::acp::StopReason;
//! use acp_facade::runner::{Runner, Turn, TurnRunner};
//!
//! struct Echo;
//!
//! #[async_trait::async_trait]
//! impl TurnRunner for Echo {
//!     async fn run_turn(&self, turn: &Turn) -> Result<StopReason, acp_facade::Error> {
//!         turn.text(turn.prompt_text()).await;
//!         Ok(StopReason::EndTurn)
//!     }
//! }
//!
//! # async fn run() -> std::io::Result<()> {
//! let store = Arc::new(acp_facade::runner::MemoryStore::new());
//! let runner = Runner::new(store, Arc::new(Echo));
//! runner.agent(runner.options()).serve_stdio().await
//! # }
//! ```

pub mod ops;
pub mod session;
pub mod sqlite;
pub mod store;
pub mod turn;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError, Weak};

use async_trait::async_trait;

use session::History;
pub use session::{JOURNAL_DELAY, RunnerSession};
pub use sqlite::SqliteStore;
pub use store::{MemoryStore, SessionRecord, Store, StoreError};
pub use turn::{Permission, Turn};

use crate::acp::{SessionConfigOption, SessionId, StopReason};
use crate::error::{Error, ErrorExt};
use crate::host::{
    LiveSession, LoadedSession, SessionCatalog, SessionCatalogEntry, SessionDeleter, SessionHost, SessionLoader,
    SessionResumer, Setup,
};
use crate::{Agent, Options};

/// What a product writes: how one turn runs, plus optional hooks.
#[async_trait]
pub trait TurnRunner: Send + Sync + 'static {
    /// Runs one turn: stream with [`Turn::text`], call tools, ask for permission, report usage,
    /// and return why the turn stopped. Return `Err` to fail the turn (`-32603` with its message)
    /// and watch [`Turn::cancelled`] to stop early on cancellation.
    async fn run_turn(&self, turn: &Turn) -> Result<StopReason, Error>;

    /// The config options of a new session, with their initial values; an option with id `mode`
    /// is also served as the session's modes. Default: none.
    fn config_options(&self) -> Vec<SessionConfigOption> {
        Vec::new()
    }

    /// The title a session gets from its first prompt's text. Default: none.
    fn title(&self, first_prompt: &str) -> Option<String> {
        let _ = first_prompt;
        None
    }

    /// Whether `/compact` is offered.
    fn supports_compaction(&self) -> bool {
        false
    }

    /// Compacts a session's context (`/compact`).
    async fn compact(&self, session: &RunnerSession) -> Result<(), Error> {
        let _ = session;
        Err(Error::invalid_request_msg("compaction is not supported"))
    }
}

/// The runner: host parts over a store and a [`TurnRunner`]. Cheap to clone.
#[derive(Clone)]
pub struct Runner {
    inner: Arc<RunnerInner>,
}

impl std::fmt::Debug for Runner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runner").finish_non_exhaustive()
    }
}

pub(crate) struct RunnerInner {
    pub(crate) store: Arc<dyn Store>,
    pub(crate) turns: Arc<dyn TurnRunner>,
    pub(crate) subscriber_capacity: usize,
    live: Mutex<HashMap<SessionId, Weak<RunnerSession>>>,
    counter: std::sync::atomic::AtomicU64,
}

impl RunnerInner {
    pub(crate) fn live_session(&self, id: &SessionId) -> Option<Arc<RunnerSession>> {
        self.live.lock().unwrap_or_else(PoisonError::into_inner).get(id).and_then(Weak::upgrade)
    }

    pub(crate) fn forget_live(&self, id: &SessionId) {
        self.live.lock().unwrap_or_else(PoisonError::into_inner).remove(id);
    }

    fn track(&self, session: &Arc<RunnerSession>) -> Result<(), Error> {
        let mut live = self.live.lock().unwrap_or_else(PoisonError::into_inner);
        live.retain(|_, s| s.strong_count() > 0);
        if live.get(&session.id()).is_some_and(|s| s.strong_count() > 0) {
            return Err(Error::invalid_request_msg(format!("session {} is already open", session.id())));
        }
        live.insert(session.id(), Arc::downgrade(session));
        Ok(())
    }
}

impl Runner {
    /// A runner over `store` running turns with `turns`.
    pub fn new(store: Arc<dyn Store>, turns: Arc<dyn TurnRunner>) -> Self {
        Self {
            inner: Arc::new(RunnerInner {
                store,
                turns,
                subscriber_capacity: crate::hub::DEFAULT_SUBSCRIBER_CAPACITY,
                live: Mutex::default(),
                counter: std::sync::atomic::AtomicU64::new(0),
            }),
        }
    }

    /// Facade options with every host part of the runner set (and `/compact` when the turn
    /// runner supports it). Adjust limits or `agent_info` on the result.
    pub fn options(&self) -> Options {
        let host: Arc<dyn SessionHost> = Arc::new(self.clone());
        Options::new(host)
            .loader(Arc::new(self.clone()))
            .resumer(Arc::new(self.clone()))
            .catalog(Arc::new(self.clone()))
            .deleter(Arc::new(self.clone()))
            .compaction(self.inner.turns.supports_compaction())
    }

    /// An agent with these options.
    pub fn agent(&self, options: Options) -> Agent {
        Agent::new(options)
    }

    /// The store.
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.inner.store
    }

    /// A live session of this runner.
    pub fn live_session(&self, id: &SessionId) -> Option<Arc<RunnerSession>> {
        self.inner.live_session(id)
    }

    fn open(&self, id: SessionId, setup: &Setup, history: History) -> Result<Arc<RunnerSession>, Error> {
        let session = RunnerSession::new(self.inner.clone(), id, setup.cwd().to_path_buf(), history);
        self.inner.track(&session)?;
        Ok(session)
    }

    fn reopen(&self, id: &SessionId, setup: &Setup) -> Result<(Arc<RunnerSession>, Vec<crate::harness::Event>), Error> {
        let record = self.inner.store.session(id)?.ok_or_else(|| Error::session_not_found(&id.0))?;
        let journal = self.inner.store.events(id)?;
        let session = self.open(id.clone(), setup, History::of(id, &journal, record.title.is_some()))?;
        Ok((session, journal))
    }

    fn new_id(&self) -> SessionId {
        let n = self.inner.counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut random = [0u8; 8];
        // Straight from the OS: a thread RNG would detect CPU features first (costly in a VM).
        rand::TryRng::try_fill_bytes(&mut rand::rngs::SysRng, &mut random)
            .expect("the operating system's random source");
        let hex = random.iter().fold(String::with_capacity(16), |mut hex, b| {
            use std::fmt::Write as _;
            let _ = write!(hex, "{b:02x}");
            hex
        });
        SessionId::new(format!("sess_{hex}{n:x}"))
    }
}

#[async_trait]
impl SessionHost for Runner {
    async fn new_session(&self, setup: Setup) -> Result<Arc<dyn LiveSession>, Error> {
        let id = self.new_id();
        let now = crate::time::now_rfc3339();
        self.inner.store.create_session(&SessionRecord {
            id: id.clone(),
            cwd: setup.cwd().to_path_buf(),
            additional_directories: setup.additional_directories().to_vec(),
            title: None,
            created_at: now.clone(),
            updated_at: now,
        })?;
        Ok(self.open(id, &setup, History::default())?)
    }
}

#[async_trait]
impl SessionLoader for Runner {
    async fn load_session(&self, session_id: SessionId, setup: Setup) -> Result<LoadedSession, Error> {
        let (session, history) = self.reopen(&session_id, &setup)?;
        Ok(LoadedSession { session, history })
    }
}

#[async_trait]
impl SessionResumer for Runner {
    async fn resume_session(&self, session_id: SessionId, setup: Setup) -> Result<Arc<dyn LiveSession>, Error> {
        Ok(self.reopen(&session_id, &setup)?.0)
    }
}

#[async_trait]
impl SessionCatalog for Runner {
    async fn list_sessions(&self) -> Result<Vec<SessionCatalogEntry>, Error> {
        Ok(self
            .inner
            .store
            .list_sessions()?
            .into_iter()
            .map(|r| SessionCatalogEntry {
                session_id: r.id,
                cwd: Some(r.cwd),
                additional_directories: r.additional_directories,
                title: r.title,
                updated_at: Some(r.updated_at),
            })
            .collect())
    }
}

#[async_trait]
impl SessionDeleter for Runner {
    async fn delete_session(&self, session_id: SessionId) -> Result<(), Error> {
        if self.inner.live_session(&session_id).is_some() {
            return Err(Error::invalid_request_msg(format!("session {session_id} is open: close it first")));
        }
        Ok(self.inner.store.delete_session(&session_id)?)
    }
}
