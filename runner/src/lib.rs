//! The batteries-included runner: a complete ACP agent from one `run_turn` function.
//!
//! Most products have no event-sourced runtime of their own. The runner is one: it implements
//! every host part ([`SessionHost`], [`SessionLoader`], [`SessionResumer`], [`SessionCatalog`],
//! [`SessionDeleter`]) over a [`Store`] (`SQLite`, `PostgreSQL` or in-memory), runs each prompt as a [`Turn`] on
//! the product's [`TurnRunner`], and turns every turn API call into correctly classified and
//! correlated harness events through a per-session [`EventHub`](acp_facade::hub::EventHub). Replay, list, delete and resume
//! then work with no further product code.
//!
//! Sessions belong to principals: each record keeps the principal of the connection that created
//! it ([`Setup::principal`](acp_facade::host::Setup::principal), `None` over stdio), and a
//! connection sees exactly the sessions of its own principal. Any other session does not exist
//! for it: `session/list` leaves it out, and `load`, `resume` and `delete` answer as for an unknown
//! id (checked before the session is claimed or its liveness is told). `session/list` reads one
//! page from the store ([`Store::list_page`]), never the whole catalog.
//!
//! Over a store shared by many processes (`PostgresStore`, feature `postgres`) a session is live in one process at
//! a time: loading, resuming or deleting it claims it in the store first (`-32600` while another
//! live process holds it), and closing it gives it back (see the `live` module).
//!
//! ```no_run
//! use std::sync::Arc;
//! use acp_facade::acp::StopReason;
//! use acp_facade_runner::{Runner, Turn, TurnRunner};
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
//! let store = Arc::new(acp_facade_runner::MemoryStore::new());
//! let runner = Runner::new(store, Arc::new(Echo));
//! runner.agent(runner.options()).serve_stdio().await
//! # }
//! ```

#![deny(missing_docs)]
#![deny(unreachable_pub)]

#[doc(hidden)]
pub mod binding;
pub mod history;
mod ids;
pub mod session;
pub mod store;
pub mod turn;

use std::sync::Arc;

use async_trait::async_trait;

use history::Conversation;
pub use history::{HISTORY_CACHE_ENTRIES, HistoryEntry, HistoryPage, HistoryPosition, ToolCallRecord};
use session::History;
pub use session::RunnerSession;
pub use session::journal::JOURNAL_DELAY;
use session::live;
#[cfg(feature = "postgres")]
pub use store::postgres::{PostgresOptions, PostgresStore};
#[cfg(feature = "sqlite")]
pub use store::sqlite::SqliteStore;
pub use store::{Claim, MemoryStore, PageQuery, SessionRecord, Store, StoreError, StoreErrorKind};
pub use turn::gates::{PermissionAnswer, Reply};
pub use turn::session_updates::Subagent;
pub use turn::tool_calls::{ToolCallBuilder, ToolCallUpdateBuilder};
pub use turn::tool_fields::ToolCallFields;
pub use turn::tool_state::ToolCallSpec;
pub use turn::{Permission, Turn};

use acp_facade::acp::{AvailableCommand, SessionConfigOption, SessionId, StopReason};
use acp_facade::error::{Error, ErrorExt};
use acp_facade::host::{
    CatalogPage, CatalogPageRequest, LiveSession, LoadedSession, Principal, SessionCatalog, SessionCatalogEntry,
    SessionDeleter, SessionHost, SessionLoader, SessionResumer, Setup,
};
use acp_facade::{Agent, Options};

/// What a product writes: how one turn runs, plus optional hooks.
#[async_trait]
pub trait TurnRunner: Send + Sync + 'static {
    /// Runs one turn: stream with [`Turn::text`], call tools, ask for permission, report usage,
    /// and return why the turn stopped. Return `Err` to fail the turn (`-32603` with its message)
    /// and watch [`Turn::cancelled`] to stop early on cancellation.
    ///
    /// The turn starts on the task that submitted the prompt and moves to a task of its own when
    /// it first waits, so a turn that never waits costs no task. Either way it shares a Tokio
    /// worker with others: do blocking or long CPU-bound work with `tokio::task::spawn_blocking`.
    async fn run_turn(&self, turn: &Turn) -> Result<StopReason, Error>;

    /// The config options of a new session, with their initial values; an option with id `mode`
    /// is also served as the session's modes. Default: none.
    fn config_options(&self) -> Vec<SessionConfigOption> {
        Vec::new()
    }

    /// The host-defined slash commands (name, description, input hint) every session starts
    /// with, advertised beside `compact` from a session's first prompt on. A prompt `/name input`
    /// naming one runs as a turn whose [`Turn::command`] tells the command and its input. Change a
    /// session's list with [`RunnerSession::set_commands`] (or [`Turn::set_commands`]). Default:
    /// none.
    fn commands(&self) -> Vec<AvailableCommand> {
        Vec::new()
    }

    /// The title a session gets from its first prompt's text. Default: none.
    fn title(&self, first_prompt: &str) -> Option<String> {
        let _ = first_prompt;
        None
    }

    /// Whether the turns take the client's system prompt ([`Turn::system_prompt`]): advertised as
    /// `sessionCapabilities.systemPrompt`. Default: no.
    fn accepts_system_prompt(&self) -> bool {
        false
    }

    /// Whether `/compact` is offered.
    fn supports_compaction(&self) -> bool {
        false
    }

    /// Compacts a session's context (`/compact`). Returns the summary that replaces what was
    /// compacted, if there is one: a client that advertised `session.compaction` sees the
    /// compaction start (`compaction_update`), the summary (`compaction_summary_chunk`) and its
    /// end; any other client only the prompt's `end_turn`.
    async fn compact(&self, session: &RunnerSession) -> Result<Option<String>, Error> {
        let _ = session;
        Err(Error::invalid_request_msg("compaction is not supported"))
    }
}

/// The runner: host parts over a store and a [`TurnRunner`]. Cheap to clone.
///
/// One runner serves any number of connections: [`Runner::agent`] makes the agent of one
/// connection, sharing the runner's sessions and store.
///
/// ```no_run
/// use std::sync::Arc;
/// use acp_facade::acp::StopReason;
/// use acp_facade_runner::{Runner, SqliteStore, Turn, TurnRunner};
///
/// struct Upper;
///
/// #[async_trait::async_trait]
/// impl TurnRunner for Upper {
///     async fn run_turn(&self, turn: &Turn) -> Result<StopReason, acp_facade::Error> {
///         turn.text(turn.prompt_text().to_uppercase()).await;
///         Ok(StopReason::EndTurn)
///     }
///
///     // Optional hooks: the session title from the first prompt, config options, `/compact`.
///     fn title(&self, first_prompt: &str) -> Option<String> {
///         Some(first_prompt.chars().take(40).collect())
///     }
/// }
///
/// # async fn run() -> std::io::Result<()> {
/// let store = Arc::new(SqliteStore::open("sessions.sqlite").expect("open the store"));
/// let runner = Runner::new(store, Arc::new(Upper));
/// let options = runner.options().agent_info("upper", "1.0.0").max_page_size(20);
/// runner.agent(options).serve_stdio().await
/// # }
/// ```
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
    live: Arc<live::LiveSessions<RunnerSession>>,
    counter: std::sync::atomic::AtomicU64,
}

impl RunnerInner {
    pub(crate) fn live_session(&self, id: &SessionId) -> Option<Arc<RunnerSession>> {
        self.live.get(id)
    }

    pub(crate) fn live(&self) -> &Arc<live::LiveSessions<RunnerSession>> {
        &self.live
    }
}

impl Runner {
    /// A runner over `store` running turns with `turns`.
    pub fn new(store: Arc<dyn Store>, turns: Arc<dyn TurnRunner>) -> Self {
        Self {
            inner: Arc::new(RunnerInner {
                live: live::LiveSessions::new(store.clone()),
                store,
                turns,
                subscriber_capacity: acp_facade::hub::DEFAULT_SUBSCRIBER_CAPACITY,
                counter: std::sync::atomic::AtomicU64::new(0),
            }),
        }
    }

    /// Facade options with every host part of the runner set (and `/compact` when the turn
    /// runner supports it), and the store's `session/list` cursor key when it keeps one. Adjust
    /// limits or `agent_info` on the result.
    pub fn options(&self) -> Options {
        let host: Arc<dyn SessionHost> = Arc::new(self.clone());
        let options = Options::new(host)
            .loader(Arc::new(self.clone()))
            .resumer(Arc::new(self.clone()))
            .catalog(Arc::new(self.clone()))
            .deleter(Arc::new(self.clone()))
            .compaction(self.inner.turns.supports_compaction())
            .system_prompt(self.inner.turns.accepts_system_prompt());
        match self.inner.store.cursor_key() {
            Some(key) => options.cursor_key(key),
            None => options,
        }
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

    /// Claims session `id` for this process and opens it from its journal: `-32600` while it is
    /// live here or in another process sharing the store.
    async fn reopen(
        &self,
        id: &SessionId,
        setup: &Setup,
    ) -> Result<(Arc<RunnerSession>, Vec<acp_facade::harness::Event>), Error> {
        // Another principal's session does not exist here: not even whether it is live is told.
        if !self.visible(id, setup.principal()).await? {
            return Err(Error::unknown_session(&id.0));
        }
        let mut reservation = self.inner.live.reserve(id).await?;
        reservation.claiming();
        self.claim(id).await?;
        // Read after the claim: every write of the previous owner is in.
        let record = self.inner.store.session(id).await?.ok_or_else(|| Error::unknown_session(&id.0))?;
        let journal = self.inner.store.events(id).await?;
        let history = History::of(id, &journal, record.title.is_some());
        // A system prompt on the request replaces the kept one; none keeps it.
        let system_prompt = match setup.system_prompt() {
            Some(given) => {
                self.inner.store.set_system_prompt(id, given).await?;
                Some(given.clone())
            }
            None => record.system_prompt,
        };
        // The conversation the session's turns read, from the journal read anyway (the replay's).
        let conversation = Conversation::of(&journal, history::HISTORY_CACHE_ENTRIES);
        let session = RunnerSession::new(self.inner.clone(), id.clone(), setup, system_prompt, history, conversation);
        reservation.live(&session);
        Ok((session, journal))
    }

    /// Whether session `id` is stored and belongs to `principal` (see [Principals](self)).
    async fn visible(&self, id: &SessionId, principal: Option<&Principal>) -> Result<bool, Error> {
        Ok(self.inner.store.session(id).await?.is_some_and(|record| record.principal.as_ref() == principal))
    }

    /// Claims `id` in the store: `-32600` when another live process holds it.
    async fn claim(&self, id: &SessionId) -> Result<(), Error> {
        match self.inner.store.claim_session(id).await? {
            Claim::Claimed => Ok(()),
            Claim::HeldElsewhere { holder } => Err(Error::invalid_request_msg(format!(
                "session {id} is live in another process ({holder}): it can be opened or deleted here once \
                 that process closes it or exits"
            ))),
        }
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
        let now = acp_facade::time::now_rfc3339();
        self.inner
            .store
            .create_session(&SessionRecord {
                id: id.clone(),
                cwd: setup.cwd().to_path_buf(),
                additional_directories: setup.additional_directories().to_vec(),
                title: None,
                created_at: now.clone(),
                updated_at: now,
                system_prompt: setup.system_prompt().cloned(),
                principal: setup.principal().cloned(),
            })
            .await?;
        let system_prompt = setup.system_prompt().cloned();
        let session = RunnerSession::new(
            self.inner.clone(),
            id,
            &setup,
            system_prompt,
            History::default(),
            Conversation::default(),
        );
        self.inner.live.insert_new(session.session_id(), &session)?;
        Ok(session)
    }
}

#[async_trait]
impl SessionLoader for Runner {
    async fn load_session(&self, session_id: SessionId, setup: Setup) -> Result<LoadedSession, Error> {
        let (session, history) = self.reopen(&session_id, &setup).await?;
        Ok(LoadedSession { session, history })
    }
}

#[async_trait]
impl SessionResumer for Runner {
    async fn resume_session(&self, session_id: SessionId, setup: Setup) -> Result<Arc<dyn LiveSession>, Error> {
        Ok(self.reopen(&session_id, &setup).await?.0)
    }
}

fn catalog_entry(record: SessionRecord) -> SessionCatalogEntry {
    SessionCatalogEntry {
        session_id: record.id,
        cwd: Some(record.cwd),
        additional_directories: record.additional_directories,
        title: record.title,
        updated_at: Some(record.updated_at),
    }
}

#[async_trait]
impl SessionCatalog for Runner {
    /// Every session of every principal (the facade uses [`list_page`](Self::list_page)).
    async fn list_sessions(&self) -> Result<Vec<SessionCatalogEntry>, Error> {
        Ok(self.inner.store.list_sessions().await?.into_iter().map(catalog_entry).collect())
    }

    /// One page from the store: a keyset read per cwd the filter names (one, or two when the
    /// client's path is a link), merged in id order, one entry more than the page to tell whether
    /// more follow.
    async fn list_page(&self, request: &CatalogPageRequest) -> Result<Option<CatalogPage>, Error> {
        let limit = request.limit.saturating_add(1);
        let query =
            PageQuery { principal: request.principal.as_ref(), cwd: None, after: request.after.as_deref(), limit };
        let mut records = match &request.cwd {
            None => self.inner.store.list_page(&query).await?,
            Some(cwds) => {
                let mut merged = Vec::new();
                for cwd in cwds {
                    merged.extend(self.inner.store.list_page(&PageQuery { cwd: Some(cwd), ..query }).await?);
                }
                merged.sort_by(|a, b| a.id.0.as_bytes().cmp(b.id.0.as_bytes()));
                merged.dedup_by(|a, b| a.id == b.id);
                merged
            }
        };
        let more = records.len() > request.limit;
        records.truncate(request.limit);
        Ok(Some(CatalogPage { entries: records.into_iter().map(catalog_entry).collect(), more }))
    }
}

#[async_trait]
impl SessionDeleter for Runner {
    /// Deletes a session without principal (see [`delete_session_as`](Self::delete_session_as)).
    async fn delete_session(&self, session_id: SessionId) -> Result<(), Error> {
        self.delete_session_as(session_id, None).await
    }

    /// Deletes `session_id` when it belongs to `principal`; another principal's session is left
    /// alone and the call succeeds, as for an unknown id.
    async fn delete_session_as(&self, session_id: SessionId, principal: Option<&Principal>) -> Result<(), Error> {
        if !self.visible(&session_id, principal).await? {
            return Ok(());
        }
        if self.inner.live_session(&session_id).is_some() {
            return Err(Error::invalid_request_msg(format!("session {session_id} is open: close it first")));
        }
        let mut reservation = self.inner.live.reserve(&session_id).await?;
        reservation.claiming();
        self.claim(&session_id).await?;
        self.inner.store.delete_session(&session_id).await?;
        reservation.deleted();
        Ok(())
    }
}

/// The repository README's Rust quick start, compiled as a doc test so it cannot rot. (The file is
/// outside the published crate: these doc tests run from the repository.)
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeQuickStart;

/// The Rust guide's programs (`docs/first-agent-rust.md`), compiled as doc tests. (Outside the
/// published crate, like the repository README.)
#[cfg(doctest)]
#[doc = include_str!("../../docs/first-agent-rust.md")]
pub struct FirstAgentGuide;

/// The crate README's example (the README crates.io shows), compiled as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct CrateReadme;
