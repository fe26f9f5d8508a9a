//! What an [`Agent`](super::Agent) is built from: the host parts and the limits.

use std::sync::Arc;
use std::time::Duration;

use super::extensions::Extensions;
use super::replay::ReplayOrder;
use crate::acp::{Implementation, McpCapabilities, PromptCapabilities};
use crate::host::{
    Authenticator, Principal, SessionCatalog, SessionDeleter, SessionHost, SessionLoader, SessionResumer,
};

/// The host parts and settings of an agent. Optional parts switch the matching ACP capability on.
///
/// Built from the one required part, the [`SessionHost`], then refined builder-style; each
/// optional part added advertises its capability in `initialize`:
///
/// ```no_run
/// # fn build(
/// #     host: std::sync::Arc<dyn acp_facade::host::SessionHost>,
/// #     catalog: std::sync::Arc<dyn acp_facade::host::SessionCatalog>,
/// # ) -> acp_facade::Agent {
/// use std::time::Duration;
/// use acp_facade::{Agent, Options};
///
/// let options = Options::new(host)
///     .agent_info("my-agent", "1.0.0") // `agentInfo`
///     .catalog(catalog) // `session/list`, advertised as `sessionCapabilities.list`
///     .max_page_size(100) // the largest `session/list` page
///     .cancel_grace(Duration::from_secs(5)); // how long a cancelled turn may take to stop
/// Agent::new(options)
/// # }
/// ```
///
/// The runner (`acp_facade_runner::Runner`) fills every part in: `runner.options()`.
#[derive(Clone)]
#[non_exhaustive]
#[allow(clippy::struct_excessive_bools, reason = "each switch is one independent ACP feature the host turns on")]
pub struct Options {
    /// Name and version reported as `agentInfo`.
    pub agent_info: Implementation,
    /// Creates sessions (required).
    pub host: Arc<dyn SessionHost>,
    /// `session/load` and `loadSession`.
    pub loader: Option<Arc<dyn SessionLoader>>,
    /// `session/resume`.
    pub resumer: Option<Arc<dyn SessionResumer>>,
    /// `session/list`.
    pub catalog: Option<Arc<dyn SessionCatalog>>,
    /// `session/delete`.
    pub deleter: Option<Arc<dyn SessionDeleter>>,
    /// `authenticate`, `authMethods`, `logout`.
    pub authenticator: Option<Arc<dyn Authenticator>>,
    /// Whether `/compact` is offered (each session's own [`Compactor`](crate::host::Compactor)
    /// performs it).
    pub compaction: bool,
    /// Whether the host takes the client's system prompt (`systemPrompt` on `session/new`, `load`
    /// and `resume`, handed over in [`Setup::system_prompt`](crate::host::Setup::system_prompt)):
    /// advertised as `sessionCapabilities.systemPrompt`. Off by default; a client's system prompt
    /// sent anyway is then left out of the setup (ACP: clients must not send it).
    pub system_prompt: bool,
    /// Whether a client that asks for ACP v2 (Preview) is served in v2 (`protocolVersion` 2); off
    /// by default, so such a client is answered 1 and goes on in v1. Hosts and turns do not
    /// change: the facade translates (see the README, "Protocol versions and features"). v2 needs
    /// its baseline session methods: `session/list`, `resume` and `close` must be served too.
    pub protocol_v2: bool,
    /// The order in which v1's `session/load` replays a session's conversation:
    /// [`ReplayOrder::Grouped`] by default (every user message, then every assistant message, then
    /// the tool calls — an editor shows all the questions, then all the answers), or
    /// [`ReplayOrder::Conversation`] (turn by turn as recorded, as an editor showed it live;
    /// recommended for editors). Either way the same updates, with the same message ids, then the
    /// session's usage and latest plan. ACP v2's `session/resume` with `replayFrom` always
    /// replays in conversation order.
    pub replay_order: ReplayOrder,
    /// Whether `session/close` is offered. On by default: closing needs no host part (a
    /// session's [`SessionCloser`](crate::host::SessionCloser) is used when it has one).
    pub close: bool,
    /// Prompt content beyond text and resource links that the host accepts (`promptCapabilities`):
    /// a `session/prompt` with any other block is refused (`-32602`) before the host sees it.
    pub prompt_capabilities: PromptCapabilities,
    /// MCP transports beyond stdio that the host accepts (`mcpCapabilities`): a `session/new`,
    /// `load` or `resume` naming a server of another transport is refused (`-32602`) before any
    /// host call.
    pub mcp_capabilities: McpCapabilities,
    /// The extension methods and notifications the host serves, advertised under
    /// `agentCapabilities._meta`.
    pub extensions: Extensions,
    /// Most live sessions at once; `session/new` beyond it fails. Default 1024.
    pub max_sessions: usize,
    /// Largest `session/list` page. Default 50.
    pub max_page_size: usize,
    /// How long `session/close` waits for a session's shutdown hook. Default 5 s.
    pub close_grace: Duration,
    /// How long a cancelled prompt waits for its turn to end before answering `cancelled` anyway.
    /// Default 10 s.
    pub cancel_grace: Duration,
    /// Largest incoming message in bytes. Default 64 MiB.
    pub max_message_size: usize,
    /// The key that authenticates `session/list` cursors. `None` (the default): a random key per
    /// [`Agent`](super::Agent), so a cursor pages only on the agent that issued it. Give every
    /// agent of a fleet the same secret key (the runner, `acp_facade_runner::Runner`, sets its store's,
    /// when the store keeps one) and a cursor issued by any of them pages on all, also after a
    /// restart. Never shown by `Debug`.
    pub cursor_key: Option<[u8; 32]>,
    /// The connection's authenticated principal, set by a transport that authenticates each
    /// connection on that connection's options; `None` (the default, and over stdio): no
    /// principal. Handed to the host on every session method that decides whether a session
    /// exists (see the host module's "Principals").
    pub principal: Option<Principal>,
    /// Whether each `session/update` made from a session event carries its position in the
    /// session's stream, as `params._meta["acp/cursor"]` (a string of decimal digits; clients
    /// should treat it as opaque). Off by default (stdio); the remote transports turn it on, and
    /// make it the SSE event's `id`, so a client reopening a stream with `Last-Event-ID` misses
    /// nothing and gets nothing twice.
    pub stream_cursors: bool,
}

impl Options {
    /// Options with only the required host part and default settings.
    pub fn new(host: Arc<dyn SessionHost>) -> Self {
        Self {
            agent_info: Implementation::new("acp-facade", env!("CARGO_PKG_VERSION")),
            host,
            loader: None,
            resumer: None,
            catalog: None,
            deleter: None,
            authenticator: None,
            compaction: false,
            system_prompt: false,
            protocol_v2: false,
            replay_order: ReplayOrder::Grouped,
            close: true,
            prompt_capabilities: PromptCapabilities::new(),
            mcp_capabilities: McpCapabilities::new(),
            extensions: Extensions::new(),
            max_sessions: 1024,
            max_page_size: 50,
            close_grace: Duration::from_secs(5),
            cancel_grace: Duration::from_secs(10),
            max_message_size: crate::rpc::DEFAULT_MAX_MESSAGE_SIZE,
            cursor_key: None,
            principal: None,
            stream_cursors: false,
        }
    }

    /// Sets `agentInfo`.
    #[must_use]
    pub fn agent_info(mut self, name: impl Into<String>, version: impl Into<String>) -> Self {
        self.agent_info = Implementation::new(name, version);
        self
    }

    /// Adds a loader.
    #[must_use]
    pub fn loader(mut self, loader: Arc<dyn SessionLoader>) -> Self {
        self.loader = Some(loader);
        self
    }

    /// Adds a resumer.
    #[must_use]
    pub fn resumer(mut self, resumer: Arc<dyn SessionResumer>) -> Self {
        self.resumer = Some(resumer);
        self
    }

    /// Adds a catalog.
    #[must_use]
    pub fn catalog(mut self, catalog: Arc<dyn SessionCatalog>) -> Self {
        self.catalog = Some(catalog);
        self
    }

    /// Adds a deleter.
    #[must_use]
    pub fn deleter(mut self, deleter: Arc<dyn SessionDeleter>) -> Self {
        self.deleter = Some(deleter);
        self
    }

    /// Adds an authenticator.
    #[must_use]
    pub fn authenticator(mut self, authenticator: Arc<dyn Authenticator>) -> Self {
        self.authenticator = Some(authenticator);
        self
    }

    /// Turns `/compact` on or off.
    #[must_use]
    pub fn compaction(mut self, on: bool) -> Self {
        self.compaction = on;
        self
    }

    /// Declares whether the host takes the client's system prompt (see [`Options::system_prompt`]).
    #[must_use]
    pub fn system_prompt(mut self, accepted: bool) -> Self {
        self.system_prompt = accepted;
        self
    }

    /// Serves ACP v2 (Preview) to a client that asks for it, or not (see [`Options::protocol_v2`]).
    #[must_use]
    pub fn protocol_v2(mut self, on: bool) -> Self {
        self.protocol_v2 = on;
        self
    }

    /// Sets the order in which v1's `session/load` replays a session's conversation (see
    /// [`Options::replay_order`]).
    #[must_use]
    pub fn replay_order(mut self, order: ReplayOrder) -> Self {
        self.replay_order = order;
        self
    }

    /// Turns `session/close` on or off.
    #[must_use]
    pub fn close(mut self, on: bool) -> Self {
        self.close = on;
        self
    }

    /// Declares which prompt content beyond text and links the host accepts.
    #[must_use]
    pub fn prompt_capabilities(mut self, capabilities: PromptCapabilities) -> Self {
        self.prompt_capabilities = capabilities;
        self
    }

    /// Declares which MCP transports beyond stdio the host accepts.
    #[must_use]
    pub fn mcp_capabilities(mut self, capabilities: McpCapabilities) -> Self {
        self.mcp_capabilities = capabilities;
        self
    }

    /// Sets the extension methods and notifications the host serves.
    #[must_use]
    pub fn extensions(mut self, extensions: Extensions) -> Self {
        self.extensions = extensions;
        self
    }

    /// Sets the live-session limit.
    #[must_use]
    pub fn max_sessions(mut self, max: usize) -> Self {
        self.max_sessions = max;
        self
    }

    /// Sets the largest `session/list` page (at least 1).
    #[must_use]
    pub fn max_page_size(mut self, max: usize) -> Self {
        self.max_page_size = max.max(1);
        self
    }

    /// Sets the close grace period.
    #[must_use]
    pub fn close_grace(mut self, grace: Duration) -> Self {
        self.close_grace = grace;
        self
    }

    /// Sets the cancel grace period.
    #[must_use]
    pub fn cancel_grace(mut self, grace: Duration) -> Self {
        self.cancel_grace = grace;
        self
    }

    /// Sets the largest incoming message.
    #[must_use]
    pub fn max_message_size(mut self, max: usize) -> Self {
        self.max_message_size = max;
        self
    }

    /// Sets the key that authenticates `session/list` cursors (see [`Options::cursor_key`]).
    #[must_use]
    pub fn cursor_key(mut self, key: [u8; 32]) -> Self {
        self.cursor_key = Some(key);
        self
    }

    /// Turns stream cursors on or off (see [`Options::stream_cursors`](Self#structfield.stream_cursors)).
    #[must_use]
    pub fn stream_cursors(mut self, on: bool) -> Self {
        self.stream_cursors = on;
        self
    }

    /// Sets the connection's authenticated principal (see [`Options::principal`](Self#structfield.principal)):
    /// sessions it creates belong to it, and it sees no other principal's sessions.
    #[must_use]
    pub fn principal(mut self, principal: Principal) -> Self {
        self.principal = Some(principal);
        self
    }
}

impl std::fmt::Debug for Options {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Options")
            .field("agent_info", &self.agent_info)
            .field("loader", &self.loader.is_some())
            .field("resumer", &self.resumer.is_some())
            .field("catalog", &self.catalog.is_some())
            .field("deleter", &self.deleter.is_some())
            .field("authenticator", &self.authenticator.is_some())
            .field("compaction", &self.compaction)
            .field("system_prompt", &self.system_prompt)
            .field("protocol_v2", &self.protocol_v2)
            .field("principal", &self.principal)
            .field("stream_cursors", &self.stream_cursors)
            .field("replay_order", &self.replay_order)
            .field("close", &self.close)
            .field("prompt_capabilities", &self.prompt_capabilities)
            .field("mcp_capabilities", &self.mcp_capabilities)
            .field("extensions", &self.extensions)
            .field("max_sessions", &self.max_sessions)
            .field("max_page_size", &self.max_page_size)
            .field("cursor_key", &self.cursor_key.map(|_| "<secret>"))
            .finish_non_exhaustive()
    }
}
