//! The host traits: what a product implements.
//!
//! Only [`SessionHost`] is required. Every other part is optional and switches an ACP capability on
//! when present (see [`Options`](crate::Options)): [`SessionLoader`] (`loadSession`),
//! [`SessionResumer`] (`sessionCapabilities.resume`), [`SessionCatalog`]
//! (`sessionCapabilities.list`), [`SessionDeleter`] (`sessionCapabilities.delete`),
//! [`Authenticator`] (`authMethods`, `auth.logout`).
//!
//! A live session ([`LiveSession`]) may offer more, discovered at run time: [`SessionCloser`]
//! (a graceful shutdown on `session/close`), [`Compactor`] (`/compact`), [`RuntimeConfig`]
//! (`session/set_config_option`, `session/set_mode`) and [`SessionHistory`] (`session/load` of a
//! session already live on the connection).
//!
//! # Principals
//!
//! A transport that authenticates each connection (a remote one) sets the connection's
//! [`Principal`] on its [`Options`](crate::Options); over stdio there is none. The facade hands it
//! to the host wherever the host decides whether a session exists: [`Setup::principal`] on
//! `session/new`, `load` and `resume`, [`CatalogPageRequest::principal`] on `session/list`, and
//! [`SessionDeleter::delete_session_as`] on `session/delete`. The rule a host should keep (the
//! runner does): a session belongs to the principal that created it, and a connection sees exactly
//! the sessions whose principal equals its own (none equals none, so stdio sees what it always
//! saw); any other session does not exist for it — answered as an unknown id would be. Prompt,
//! cancel, close, `set_mode` and `set_config_option` act on sessions live on the connection
//! itself (each connection has its own live registry), so they need no check of their own.
//!
//! What the facade guarantees to every host method: session ids are validated and resolved
//! against the live registry before any host call; [`Setup`] is validated (absolute, canonical
//! `cwd`) before it reaches the host; a host method's error is answered to the client with its
//! code and message, and a panic fails only that one request (`-32603`), never the connection.
//!
//! What the facade asks of every host method: be cancel-safe. When the client cancels a request
//! with `$/cancel_request` while its host call is still pending, the call's future is dropped
//! (and the request answered `-32800`), so a host must not leave behind anything that only the
//! completed call would have handed over — e.g. open a session's resources at the end of
//! `new_session`, not before an `.await`. Once a host call has returned, the facade finishes the
//! lifecycle step (registering, replaying, closing) whatever the client sends.
//!
//! # Example
//!
//! A host whose sessions echo each prompt: `submit` starts a turn by publishing its events on the
//! session's [`EventHub`](crate::hub::EventHub) — `TurnStarted` carrying the returned command
//! id, the reply as `TokenDelta`s, `TurnDone` — and the facade turns them into the prompt's
//! `session/update`s and response. (`docs/first-agent-rust.md` in the repository walks through
//! it.)
//!
//! ```no_run
//! use std::sync::Arc;
//! use std::sync::atomic::{AtomicU64, Ordering};
//!
//! use acp_facade::acp::{ContentBlock, SessionId};
//! use acp_facade::harness::{
//!     Cause, CommandId, Coordinates, Event, EventClass, EventHeader, EventId, EventKind, GateId,
//!     GateResponse, LoopId, TokenChannel, TurnId, UserMessage, Visibility,
//! };
//! use acp_facade::host::{EventStream, HostResult, LiveSession, SessionHost, Setup};
//! use acp_facade::hub::EventHub;
//!
//! struct Echo {
//!     id: SessionId,
//!     events: EventHub,
//!     turns: AtomicU64,
//!     published: AtomicU64,
//! }
//!
//! impl Echo {
//!     fn event(&self, n: u64, kind: EventKind, class: EventClass, command: Option<CommandId>) -> Event {
//!         let id = EventId::new(format!("{}-e{}", self.id, self.published.fetch_add(1, Ordering::Relaxed)));
//!         let coordinates = Coordinates { loop_id: Some(LoopId::new("main")), turn_id: Some(TurnId::new(format!("t{n}"))) };
//!         let cause = Cause { command_id: command };
//!         Event { header: EventHeader { id, seq: 0, class, visibility: Visibility::Public, cause, coordinates }, kind }
//!     }
//! }
//!
//! #[async_trait::async_trait]
//! impl LiveSession for Echo {
//!     fn id(&self) -> SessionId {
//!         self.id.clone()
//!     }
//!
//!     fn subscribe_events(&self) -> HostResult<EventStream> {
//!         Ok(self.events.subscribe())
//!     }
//!
//!     async fn submit(&self, prompt: Vec<ContentBlock>) -> HostResult<CommandId> {
//!         let n = self.turns.fetch_add(1, Ordering::Relaxed) + 1;
//!         let command = CommandId::new(format!("{}/c{n}", self.id));
//!         let text = prompt.iter().filter_map(|b| if let ContentBlock::Text(t) = b { Some(t.text.clone()) } else { None }).collect();
//!         let started = EventKind::TurnStarted { message: UserMessage::new(prompt) };
//!         self.events.publish(self.event(n, started, EventClass::Enduring, Some(command.clone()))).await;
//!         let delta = EventKind::TokenDelta { text, channel: TokenChannel::Message };
//!         self.events.publish(self.event(n, delta, EventClass::Ephemeral, None)).await;
//!         let done = EventKind::TurnDone { message: None, stop: None };
//!         self.events.publish(self.event(n, done, EventClass::Enduring, None)).await;
//!         Ok(command)
//!     }
//!
//!     async fn interrupt(&self) -> HostResult<()> {
//!         Ok(()) // stop the running turn; it ends with `EventKind::TurnInterrupted`
//!     }
//!
//!     async fn respond_gate(&self, _gate: GateId, _response: GateResponse) -> HostResult<()> {
//!         Ok(()) // the answer to a gate (a permission request) the session opened
//!     }
//! }
//!
//! struct EchoHost(AtomicU64);
//!
//! #[async_trait::async_trait]
//! impl SessionHost for EchoHost {
//!     async fn new_session(&self, _setup: Setup) -> HostResult<Arc<dyn LiveSession>> {
//!         let n = self.0.fetch_add(1, Ordering::Relaxed) + 1;
//!         let id = SessionId::new(format!("echo-{n}"));
//!         let (turns, published) = (AtomicU64::new(0), AtomicU64::new(0));
//!         Ok(Arc::new(Echo { id, events: EventHub::new(256), turns, published }))
//!     }
//! }
//!
//! # async fn run() -> std::io::Result<()> {
//! let options = acp_facade::Options::new(Arc::new(EchoHost(AtomicU64::new(0)))).agent_info("echo", "1.0.0");
//! acp_facade::Agent::new(options).serve_stdio().await
//! # }
//! ```

use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use futures::stream::BoxStream;

use crate::acp::{
    AuthMethod, AuthMethodId, AvailableCommand, ContentBlock, McpServer, Meta, SessionConfigId, SessionConfigOption,
    SessionConfigOptionValue, SessionId, SessionModeId, SystemPrompt,
};
use crate::client::{Capabilities, Client};
use crate::error::{Error, ErrorExt};
use crate::harness::{CommandId, Event, GateId, GateResponse, Prompt};

/// The result type of host methods.
pub type HostResult<T> = Result<T, Error>;

/// A session's event stream, in order. It ends when the session is gone.
pub type EventStream = BoxStream<'static, Event>;

/// The authenticated identity of a connection (a user, a tenant: a name the transport vouches
/// for), set with [`Options::principal`](crate::Options::principal). Sessions belong to the
/// principal that created them (see [Principals](self#principals)). Compared byte for byte.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Principal(String);

impl Principal {
    /// The principal named `name`.
    pub fn new(name: impl Into<String>) -> Self {
        Self(name.into())
    }

    /// Its name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for Principal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Validated setup of a session: the working directory, the session's MCP servers, and the
/// session's handle on the client ([`Setup::client`]) with what the client advertised.
#[derive(Debug, Clone)]
pub struct Setup {
    cwd: PathBuf,
    additional_directories: Vec<PathBuf>,
    mcp_servers: Vec<McpServer>,
    client: Client,
    meta: Option<Meta>,
    system_prompt: Option<SystemPrompt>,
    principal: Option<Principal>,
}

/// Setups compare by their values and the client's capabilities (not by which handle they carry).
impl PartialEq for Setup {
    fn eq(&self, other: &Self) -> bool {
        self.cwd == other.cwd
            && self.additional_directories == other.additional_directories
            && self.mcp_servers == other.mcp_servers
            && self.meta == other.meta
            && self.system_prompt == other.system_prompt
            && self.principal == other.principal
            && self.client.capabilities() == other.client.capabilities()
    }
}

impl Setup {
    /// Validates a setup: `cwd` and every additional directory must be absolute; they are
    /// canonicalized (symlinks resolved) when they exist. MCP servers are passed through as given
    /// (the facade has refused any whose transport it does not advertise). Its client handle is
    /// [detached](Client::detached) (the facade gives each session its own).
    pub fn new(
        cwd: impl Into<PathBuf>,
        additional_directories: Vec<PathBuf>,
        mcp_servers: Vec<McpServer>,
    ) -> Result<Self, Error> {
        let cwd = absolute("cwd", cwd.into())?;
        let additional_directories = additional_directories
            .into_iter()
            .map(|dir| absolute("additionalDirectories", dir))
            .collect::<Result<_, _>>()?;
        Ok(Self {
            cwd,
            additional_directories,
            mcp_servers,
            client: Client::detached(),
            meta: None,
            system_prompt: None,
            principal: None,
        })
    }

    /// The same setup with `client` as the session's handle.
    #[must_use]
    pub(crate) fn with_client(mut self, client: Client) -> Self {
        self.client = client;
        self
    }

    /// The session's handle on the client: read and write files through the editor, run
    /// commands in its terminals, ask the user. Keep it with the session; it works once the
    /// session is established (after the host's `new_session`, `load_session` or
    /// `resume_session` returned) and until it closes. Calls made through it while a prompt is in
    /// flight are cancelled with that prompt.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// What the client advertised (`fs.readTextFile`, `fs.writeTextFile`, `terminal`,
    /// `elicitation.form` / `.url`, `auth.terminal`, `_meta`).
    pub fn client_capabilities(&self) -> &Capabilities {
        self.client.capabilities()
    }

    /// The same setup carrying the request's `_meta`.
    #[must_use]
    pub fn with_meta(mut self, meta: Option<Meta>) -> Self {
        self.meta = meta;
        self
    }

    /// The same setup carrying the client's system prompt.
    #[must_use]
    pub fn with_system_prompt(mut self, system_prompt: Option<SystemPrompt>) -> Self {
        self.system_prompt = system_prompt;
        self
    }

    /// The same setup on behalf of `principal` (the facade sets the connection's).
    #[must_use]
    pub fn with_principal(mut self, principal: Option<Principal>) -> Self {
        self.principal = principal;
        self
    }

    /// The connection's principal ([`Options::principal`](crate::Options::principal)); `None`
    /// over stdio. A new session belongs to it; a stored session of another principal must not
    /// be loaded or resumed (answer as for an unknown id). See [Principals](self#principals).
    pub fn principal(&self) -> Option<&Principal> {
        self.principal.as_ref()
    }

    /// The client's system prompt (`systemPrompt`: content and a mode, `append` to the agent's
    /// own or `override` it) as the `session/new`, `load` or `resume` request carried it; only
    /// when [`Options::system_prompt`](crate::Options) declares that the host takes it. On `load`
    /// and `resume`, `None` means "keep the one the session has".
    pub fn system_prompt(&self) -> Option<&SystemPrompt> {
        self.system_prompt.as_ref()
    }

    /// The session's working directory: absolute and canonical.
    pub fn cwd(&self) -> &Path {
        &self.cwd
    }

    /// Extra workspace roots.
    pub fn additional_directories(&self) -> &[PathBuf] {
        &self.additional_directories
    }

    /// MCP servers the session should connect to, as the client sent them, in order: stdio ones,
    /// and `http` / `sse` ones only when [`Options::mcp_capabilities`](crate::Options) advertises
    /// their transport (others are refused with `-32602` before any host call).
    pub fn mcp_servers(&self) -> &[McpServer] {
        &self.mcp_servers
    }

    /// The `_meta` of the `session/new`, `load` or `resume` request, as the client sent it (for
    /// example a W3C `traceparent`).
    pub fn meta(&self) -> Option<&Meta> {
        self.meta.as_ref()
    }
}

/// The form hosts in other languages receive (the bindings pass it on as is):
/// `{"cwd": "/abs/path", "additionalDirectories": ["/abs/other"], "mcpServers": [<ACP McpServer>]}`,
/// in that order, then `"meta": {...}` when the request had a `_meta` and `"systemPrompt": {...}`
/// (its ACP wire form) when it carried one the host takes. Paths are strings (a path that is not
/// UTF-8 is converted lossily); MCP servers keep their ACP wire form.
impl serde::Serialize for Setup {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let fields = 3 + usize::from(self.meta.is_some()) + usize::from(self.system_prompt.is_some());
        let mut setup = serializer.serialize_struct("Setup", fields)?;
        setup.serialize_field("cwd", &self.cwd.to_string_lossy())?;
        let directories: Vec<_> = self.additional_directories.iter().map(|d| d.to_string_lossy()).collect();
        setup.serialize_field("additionalDirectories", &directories)?;
        setup.serialize_field("mcpServers", &self.mcp_servers)?;
        if let Some(meta) = &self.meta {
            setup.serialize_field("meta", meta)?;
        }
        if let Some(system_prompt) = &self.system_prompt {
            setup.serialize_field("systemPrompt", system_prompt)?;
        }
        setup.end()
    }
}

fn absolute(field: &str, path: PathBuf) -> Result<PathBuf, Error> {
    if !path.is_absolute() {
        return Err(Error::invalid_params_msg(format!("`{field}` must be an absolute path, got {}", path.display())));
    }
    // A directory that does not exist (yet) on this machine keeps its lexical form.
    Ok(std::fs::canonicalize(&path).unwrap_or(path))
}

/// Creates sessions. The one required host part.
///
/// See <https://agentclientprotocol.com/protocol/session-setup>.
#[async_trait]
pub trait SessionHost: Send + Sync + 'static {
    /// Creates a session for `session/new`.
    ///
    /// Called after `initialize` (and `authenticate`, when the authenticator requires it), with a
    /// validated [`Setup`], and only while the live registry has room. Return the live session;
    /// its [`LiveSession::id`] becomes the ACP `sessionId` and must be unique, non-empty, at most
    /// 256 bytes and free of control characters.
    async fn new_session(&self, setup: Setup) -> HostResult<Arc<dyn LiveSession>>;
}

/// A live session plus its durable history, for `session/load`.
pub struct LoadedSession {
    /// The session, now live.
    pub session: Arc<dyn LiveSession>,
    /// Its Enduring events, oldest first, up to the replay anchor (events after it arrive on the
    /// live stream).
    pub history: Vec<Event>,
}

/// Reopens a stored session with its history (`session/load`, capability `loadSession`).
#[async_trait]
pub trait SessionLoader: Send + Sync + 'static {
    /// Loads `session_id`. The facade has checked it is well formed and not live on this
    /// connection (a live one is re-attached without the loader, see [`SessionHistory`]); it
    /// replays `history` to the client before answering, then serves the session as live.
    async fn load_session(&self, session_id: SessionId, setup: Setup) -> HostResult<LoadedSession>;
}

/// Reopens a stored session without history (`session/resume`).
#[async_trait]
pub trait SessionResumer: Send + Sync + 'static {
    /// Resumes `session_id`; the facade sends no `session/update` for it before answering. Not
    /// called for a session live on this connection: resuming that one only answers.
    async fn resume_session(&self, session_id: SessionId, setup: Setup) -> HostResult<Arc<dyn LiveSession>>;
}

/// One stored session, as the catalog knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionCatalogEntry {
    /// The session's id.
    pub session_id: SessionId,
    /// Its working directory, when known; entries with none (and not live) are not listed.
    pub cwd: Option<PathBuf>,
    /// Extra roots.
    pub additional_directories: Vec<PathBuf>,
    /// Its title.
    pub title: Option<String>,
    /// Last activity, ISO 8601.
    pub updated_at: Option<String>,
}

/// What one `session/list` page asks of a [`SessionCatalog`]: the entries of one principal,
/// matching a `cwd` filter, after a position, in session-id order.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CatalogPageRequest {
    /// The connection's principal: only its sessions (none: only sessions without one).
    pub principal: Option<Principal>,
    /// The `cwd` filter: `None` lists every cwd; `Some(paths)` only entries whose cwd is one of
    /// `paths` (the path the client sent, and its canonical form when that differs).
    pub cwd: Option<Vec<PathBuf>>,
    /// Only entries whose session id sorts after this one (byte order); `None`: from the first.
    pub after: Option<String>,
    /// At most this many entries.
    pub limit: usize,
}

/// One page of the catalog: the answer to [`SessionCatalog::list_page`].
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CatalogPage {
    /// The entries, sorted by session-id bytes, each after the request's position, matching its
    /// principal and filter; at most its limit.
    pub entries: Vec<SessionCatalogEntry>,
    /// Whether more matching entries follow the last one.
    pub more: bool,
}

/// Lists stored sessions (`session/list`).
#[async_trait]
pub trait SessionCatalog: Send + Sync + 'static {
    /// Every stored session, in any order; the facade sorts, filters and paginates. Used only
    /// when [`list_page`](Self::list_page) answers `None`.
    async fn list_sessions(&self) -> HostResult<Vec<SessionCatalogEntry>>;

    /// One page of the catalog, read from storage with a keyset query (no need to read the whole
    /// catalog per `session/list`). `None` (the default): not supported, and the facade pages
    /// over [`list_sessions`](Self::list_sessions) instead — which knows nothing of principals, so
    /// a host serving connections with principals implements this one.
    ///
    /// The facade still resolves each entry's cwd (a session live on the connection has its
    /// setup's), omits entries that no longer match the filter or have no absolute cwd (the page
    /// may be short), and makes the cursor from the last entry when `more` is set.
    async fn list_page(&self, request: &CatalogPageRequest) -> HostResult<Option<CatalogPage>> {
        let _ = request;
        Ok(None)
    }
}

/// Deletes stored sessions (`session/delete`).
#[async_trait]
pub trait SessionDeleter: Send + Sync + 'static {
    /// Deletes `session_id`'s durable history. Never called for a live session. Deleting an
    /// unknown id should succeed quietly.
    async fn delete_session(&self, session_id: SessionId) -> HostResult<()>;

    /// Deletes `session_id` on behalf of the connection's `principal` (what the facade calls): a
    /// session of another principal does not exist for it, so it is left alone and the call
    /// succeeds as for an unknown id. Default: [`delete_session`](Self::delete_session), for
    /// hosts without principals.
    async fn delete_session_as(&self, session_id: SessionId, principal: Option<&Principal>) -> HostResult<()> {
        let _ = principal;
        self.delete_session(session_id).await
    }
}

/// Authentication (`authenticate`, `logout`).
#[async_trait]
pub trait Authenticator: Send + Sync + 'static {
    /// The methods advertised in `initialize`.
    ///
    /// Methods of type `terminal` (schema v1.21.0, [`AuthMethod::Terminal`]) are listed only to a
    /// client that advertised `auth.terminal`: such a client reruns the agent's launch command
    /// with the method's `args` and `env` in a terminal, the process logs the user in (persisting
    /// what the next process needs) and exits 0 on success; the client then reconnects. It never
    /// sends `authenticate` for one (one that does gets `-32602`).
    ///
    /// ```
    /// use acp_facade::acp::{AuthMethod, AuthMethodAgent, AuthMethodTerminal};
    ///
    /// let methods = vec![
    ///     AuthMethod::Agent(AuthMethodAgent::new("api-key", "API key")),
    ///     AuthMethod::Terminal(AuthMethodTerminal::new("login", "Log in").args(vec!["--login".into()])),
    /// ];
    /// # let _ = methods;
    /// ```
    fn methods(&self) -> Vec<AuthMethod>;

    /// Whether the session methods (`session/new`, `load`, `resume`, `list`, `delete`,
    /// `prompt`, `close`, `set_mode`, `set_config_option`) must answer `-32000` right now, until
    /// `authenticate` succeeds on the connection (and again after `logout`).
    fn requires_authentication(&self) -> bool;

    /// Authenticates with one of [`Authenticator::methods`] (the facade checks the id first).
    async fn authenticate(&self, method_id: AuthMethodId) -> HostResult<()>;

    /// Whether `logout` is supported (advertised as `auth.logout`).
    fn supports_logout(&self) -> bool {
        false
    }

    /// Logs out; only called when [`Authenticator::supports_logout`] is true.
    async fn logout(&self) -> HostResult<()> {
        Err(Error::method_not_found_msg("logout"))
    }
}

/// A session the host is running.
///
/// The facade subscribes to its events before it submits a prompt, correlates the turn by the
/// returned [`CommandId`], and translates the turn's `Public` events as `session/update`.
#[async_trait]
pub trait LiveSession: Send + Sync + 'static {
    /// The session's id.
    fn id(&self) -> SessionId;

    /// A new subscription to the session's events, from now on. Each subscription receives every
    /// event published after it was made, in order.
    fn subscribe_events(&self) -> HostResult<EventStream>;

    /// Starts a turn with `prompt`; returns the command id that the turn's `TurnStarted` will carry
    /// in `cause.command_id`.
    async fn submit(&self, prompt: Vec<ContentBlock>) -> HostResult<CommandId>;

    /// Starts a turn like [`LiveSession::submit`], with everything the facade knows of the prompt:
    /// the host-defined slash command it invokes and the request's `_meta`. The facade always
    /// calls this one; the default passes the content on to [`LiveSession::submit`].
    async fn submit_prompt(&self, prompt: Prompt) -> HostResult<CommandId> {
        self.submit(prompt.content).await
    }

    /// Interrupts the running turn, which should then end with `TurnInterrupted`. Called on
    /// `session/cancel`, `$/cancel_request` for a prompt, and `session/close`.
    async fn interrupt(&self) -> HostResult<()>;

    /// Answers a gate the session's loop opened.
    async fn respond_gate(&self, gate_id: GateId, response: GateResponse) -> HostResult<()>;

    /// The graceful shutdown hook, if this session has one.
    fn closer(&self) -> Option<&dyn SessionCloser> {
        None
    }

    /// The client reopened this session while it is live on its connection (`session/load` or
    /// `session/resume` of a live, idle session): `setup` is that request's. A system prompt it
    /// carries ([`Setup::system_prompt`]) replaces the session's; a failure answers the request
    /// with it. Default: nothing to do.
    async fn reopened(&self, setup: &Setup) -> HostResult<()> {
        let _ = setup;
        Ok(())
    }

    /// The compactor, if this session supports `/compact`.
    fn compactor(&self) -> Option<&dyn Compactor> {
        None
    }

    /// Runtime configuration, if this session has options.
    fn config(&self) -> Option<&dyn RuntimeConfig> {
        None
    }

    /// The session's durable history, if it can tell it while live: what lets a client re-attach
    /// with `session/load` to a session already live on its connection.
    fn history(&self) -> Option<&dyn SessionHistory> {
        None
    }

    /// The host-defined slash commands the session starts with (name, description, input hint),
    /// advertised beside `compact` in `available_commands_update` from the session's first prompt
    /// on. Read once, when the first prompt advertises them, unless the host set a list through
    /// [`SessionControl::set_commands`] before. A prompt `/name input` naming one of them reaches
    /// [`LiveSession::submit_prompt`] with [`Prompt::command`] set. Default: none.
    fn commands(&self) -> Vec<AvailableCommand> {
        Vec::new()
    }

    /// Hands the session the facade's [`SessionControl`] for it, once the facade serves it (after
    /// `session/new`, `load` or `resume` registered it; not again when a client re-attaches to it).
    /// Keep it to change the session's mode, config options or commands yourself. Must not block.
    fn set_control(&self, control: Arc<dyn SessionControl>) {
        let _ = control;
    }
}

/// What a host can change about a live session itself (agent-initiated), through the facade.
///
/// The facade hands one to each session it serves ([`LiveSession::set_control`]). Every change
/// takes the path the client's own requests take, and the client is told:
/// - [`SessionControl::set_config_option`] and [`SessionControl::set_mode`] go through the one
///   `apply_config_option` of `session/set_config_option`: an unknown option or value fails
///   (`-32602`) before [`RuntimeConfig::set_option`] is called, the current value is a silent
///   no-op, otherwise the option is set and the client gets `current_mode_update` (when the mode
///   changed) and then one `config_option_update` with the full state;
/// - [`SessionControl::set_commands`] replaces the session's host-defined slash commands; once the
///   session's commands have been advertised (its first prompt), a different list is advertised
///   again at once.
///
/// Ordering: a change made while a prompt of the session is in flight, after the host's
/// `submit_prompt` returned, is applied in order with the turn's events — every event published
/// before the call reaches the client first — and before the prompt's response. A change made
/// while no prompt is in flight (or while `submit_prompt` itself is still running) is applied at
/// once. Each call returns once its updates are queued for the client.
///
/// Once the session is closed (or the connection gone) every call fails (`-32002`).
#[async_trait]
pub trait SessionControl: Send + Sync {
    /// The session this control acts on.
    fn session_id(&self) -> SessionId;

    /// Sets one config option; returns the complete state the client now has.
    async fn set_config_option(
        &self,
        config_id: SessionConfigId,
        value: SessionConfigOptionValue,
    ) -> HostResult<Vec<SessionConfigOption>>;

    /// Sets the current mode: the option [`MODE_CONFIG_ID`], through the same path.
    async fn set_mode(&self, mode_id: SessionModeId) -> HostResult<()>;

    /// Replaces the session's host-defined slash commands.
    async fn set_commands(&self, commands: Vec<AvailableCommand>) -> HostResult<()>;
}

/// A session's graceful shutdown, called once by `session/close` (and at disconnect), after the
/// in-flight prompt has returned, bounded by the close grace period.
#[async_trait]
pub trait SessionCloser: Send + Sync {
    /// Releases everything held for the session. Durable history must stay.
    async fn shutdown(&self) -> HostResult<()>;
}

/// The durable history of a live session.
///
/// Called when a client sends `session/load` for a session that is live and idle on its own
/// connection (an editor reopening a thread it still holds): the facade replays the history, as
/// for a stored session, without reopening anything. No prompt runs meanwhile (one arriving is
/// refused), so the history is complete.
#[async_trait]
pub trait SessionHistory: Send + Sync {
    /// The session's Enduring events so far, oldest first.
    async fn history(&self) -> HostResult<Vec<Event>>;
}

/// A session's compaction.
#[async_trait]
pub trait Compactor: Send + Sync {
    /// Starts compacting; the outcome arrives as `CompactWaiterResolved` or
    /// `CompactWaiterRejected` with `cause.command_id` equal to the returned id.
    async fn compact(&self) -> HostResult<CommandId>;
}

/// A session's runtime configuration options (also served as modes).
#[async_trait]
pub trait RuntimeConfig: Send + Sync {
    /// The current options, read fresh for every request. An option with id
    /// [`MODE_CONFIG_ID`] is also served as the session's modes.
    async fn snapshot(&self) -> HostResult<Vec<SessionConfigOption>>;

    /// Sets one option. The facade has checked the id and value against a fresh snapshot and
    /// that the value differs from the current one.
    async fn set_option(&self, config_id: SessionConfigId, value: SessionConfigOptionValue) -> HostResult<()>;
}

/// The well-known config option id served as the session's modes.
pub const MODE_CONFIG_ID: &str = "mode";

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_setup_serializes_as_hosts_in_other_languages_receive_it() {
        let server = json!({"name": "fs", "command": "/bin/mcp-fs", "args": ["--ro"], "env": []});
        let setup = Setup::new(
            "/nonexistent/acp-facade/project",
            vec![PathBuf::from("/nonexistent/acp-facade/lib")],
            vec![serde_json::from_value(server.clone()).unwrap()],
        )
        .unwrap();
        assert_eq!(
            serde_json::to_string(&setup).unwrap(),
            r#"{"cwd":"/nonexistent/acp-facade/project","additionalDirectories":["/nonexistent/acp-facade/lib"],"mcpServers":[{"name":"fs","command":"/bin/mcp-fs","args":["--ro"],"env":[]}]}"#,
            "the fields in the order hosts have always seen them"
        );
        let meta: Meta = serde_json::from_value(json!({"traceparent": "00-1-2-01"})).unwrap();
        assert_eq!(
            serde_json::to_value(setup.clone().with_meta(Some(meta))).unwrap()["meta"],
            json!({"traceparent": "00-1-2-01"}),
            "the request's `_meta`, when it had one"
        );
        assert_eq!(
            serde_json::to_value(&setup).unwrap(),
            json!({
                "cwd": "/nonexistent/acp-facade/project",
                "additionalDirectories": ["/nonexistent/acp-facade/lib"],
                "mcpServers": [server],
            })
        );
    }
}
