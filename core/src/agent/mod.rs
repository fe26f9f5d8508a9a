//! The facade: ACP requests in, host calls out; host events in, `session/update` out.
//!
//! One file per concern, in floors (a file uses only files on its own floor or below, never a
//! handler's file; `scripts/import-loops` checks it):
//! - helpers: `method` (wire names), `wire` (params and answers), `cancellation`, `cursor`,
//!   `translate` (event → `session/update`), `extensions` (extension methods), `options`,
//!   `capabilities` (what is advertised, and refusing what was not), `control_queue` (the host's
//!   own changes, in order with the prompt in flight), `prompt_params` (the fast decoder of
//!   everyday prompts), `idempotency` (prompts repeated with an idempotency key), `replay` (a
//!   session's history for `session/load`, in the [`ReplayOrder`] asked for);
//! - state: `session_state` (what is kept per live session, its slot), `registry` (the live
//!   sessions), `state` (what one connection's agent holds, `resolve_session`, `send_update`);
//! - operations several requests share: `session_set_config_option` (`session/set_config_option`
//!   and `session/set_mode`, through `apply_config_option`), `session_close` (`session/close`,
//!   the close orchestration), `compact`, `commands` (`available_commands_update`, host-defined
//!   slash commands), `control` (the host's `SessionControl`), `establish` (registering a session
//!   the host opened, re-attaching a live one), `elicitation` (ask-user, form and open-URL gates
//!   as `elicitation/create`), `gates` (every gate's wire form; permission round trips);
//! - handlers, each named after its method: `initialize`, `authenticate` (and `logout`),
//!   `session_new`, `session_prompt` (the correlation engine; `session/cancel`), `session_load`,
//!   `session_resume`, `session_list`, `session_delete`; and this file: the dispatch.
//!
//! `initialize` is answered whenever it comes, as often as it comes, and requests before it are
//! served: the spec asks clients to initialize once, first, and the official SDKs' agents do not
//! enforce it (nor do clients and conformance kits that skip it or send it twice expect them
//! to). A connection's client capabilities are those its first `initialize` declared — none
//! before it; a repeated `initialize` is answered as the first was and changes nothing.
//!
//! Invariants: every request gets exactly one response; while the host requires authentication
//! every session method answers `-32000` before touching anything; a session id is validated and
//! resolved before any host call; only `Public` events reach the client; no update of a turn is
//! written after that turn's `session/prompt` response.

mod authenticate;
mod cancellation;
mod capabilities;
mod commands;
mod compact;
mod control;
mod control_queue;
pub(crate) mod cursor;
mod dialect;
mod elicitation;
mod establish;
mod extensions;
mod gates;
mod idempotency;
mod initialize;
mod method;
mod options;
mod prompt_params;
mod registry;
mod replay;
mod session_close;
mod session_delete;
mod session_list;
mod session_load;
mod session_new;
mod session_prompt;
mod session_resume;
mod session_set_config_option;
mod session_state;
mod state;
mod translate;
pub(crate) mod update_cursor;
mod v2;
mod wire;

use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite};

pub use extensions::{ExtensionMethod, ExtensionNotification, Extensions};
pub use options::Options;
pub use replay::{ReplayOrder, UnknownReplayOrder};

use crate::error::{Error, ErrorExt};
use crate::rpc::{self, Answer, ConnectionOptions, Handler, IncomingNotification, Params, RequestContext};
pub(crate) use state::AgentInner;
use wire::{Reply, ready};

/// An ACP agent serving one connection on behalf of a host.
///
/// ```no_run
/// # async fn run(host: std::sync::Arc<dyn acp_facade::host::SessionHost>) -> std::io::Result<()> {
/// use acp_facade::{Agent, Options};
/// let agent = Agent::new(Options::new(host).agent_info("my-agent", "1.0.0"));
/// agent.serve_stdio().await
/// # }
/// ```
#[derive(Clone)]
pub struct Agent {
    inner: Arc<AgentInner>,
}

impl std::fmt::Debug for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Agent").field("options", &self.inner.options).finish_non_exhaustive()
    }
}

impl Agent {
    /// An agent for one connection.
    pub fn new(options: Options) -> Self {
        Self { inner: Arc::new(AgentInner::new(options)) }
    }

    /// Serves the connection over `reader`/`writer` until the client hangs up; then every live
    /// session is closed and every request answered before this returns.
    pub async fn serve<R, W>(&self, reader: R, writer: W) -> std::io::Result<()>
    where
        R: AsyncRead + Unpin + Send,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        self.serve_with(reader, writer, None, rpc::connection::PROCESS_IO_BUFFER).await
    }

    /// [`Agent::serve`] over an in-memory pipe (a remote connection's bridge): small buffers,
    /// since they are most of what an idle connection costs and a copy in memory is cheap.
    #[cfg(feature = "remote")]
    pub(crate) async fn serve_in_memory<R, W>(&self, reader: R, writer: W) -> std::io::Result<()>
    where
        R: AsyncRead + Unpin + Send,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        self.serve_with(reader, writer, None, rpc::connection::MEMORY_IO_BUFFER).await
    }

    /// Serves over the process's stdin and stdout.
    pub async fn serve_stdio(&self) -> std::io::Result<()> {
        let (stdin, stdout) = rpc::stdio::transport()?;
        let direct = stdout.direct();
        self.serve_with(stdin, stdout, direct, rpc::connection::PROCESS_IO_BUFFER).await
    }

    async fn serve_with<R, W>(
        &self,
        reader: R,
        writer: W,
        direct: Option<Arc<dyn rpc::outlet::WholeLineWrite>>,
        io_buffer: usize,
    ) -> std::io::Result<()>
    where
        R: AsyncRead + Unpin + Send,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let options = ConnectionOptions {
            max_message_size: self.inner.options.max_message_size,
            io_buffer,
            ..ConnectionOptions::default()
        };
        let inner = self.inner.clone();
        // Only an agent that may speak v2 rewrites lines (a v1 connection of it, after one check).
        let rewriter: Option<Box<dyn rpc::LineRewriter>> =
            self.inner.options.protocol_v2.then(|| {
                Box::new(v2::updates::Rewriter::new(self.inner.dialect.clone())) as Box<dyn rpc::LineRewriter>
            });
        rpc::connection::serve_with(reader, writer, direct, self.inner.clone(), options, rewriter, |peer| {
            inner.set_peer(peer);
        })
        .await
    }

    /// How many sessions are live.
    pub fn live_sessions(&self) -> usize {
        self.inner.registry.len()
    }

    /// Tells the facade a catalog entry changed; see `session_list::observe_session_meta`.
    pub async fn observe_session_meta(&self, entry: crate::host::SessionCatalogEntry) {
        session_list::observe_session_meta(&self.inner, entry).await;
    }
}

impl AgentInner {
    /// The handler for `method`, when this agent serves it (an optional method whose host part
    /// is absent is not served: `-32601`, as if unknown).
    fn route(&self, method: &str) -> Option<Route> {
        let o = &self.options;
        Some(match method {
            // The hot path first.
            method::SESSION_PROMPT => Route::Prompt,
            method::AUTHENTICATE => Route::Authenticate,
            method::LOGOUT => Route::Logout,
            method::SESSION_NEW => Route::New,
            method::SESSION_LOAD if o.loader.is_some() => Route::Load,
            method::SESSION_RESUME if o.resumer.is_some() => Route::Resume,
            method::SESSION_LIST if o.catalog.is_some() => Route::List,
            method::SESSION_DELETE if o.deleter.is_some() => Route::Delete,
            method::SESSION_CLOSE if o.close => Route::Close,
            method::SESSION_SET_MODE => Route::SetMode,
            method::SESSION_SET_CONFIG_OPTION => Route::SetConfigOption,
            _ if o.extensions.method_handler(method).is_some() => Route::Extension,
            _ => return None,
        })
    }

    fn dispatch(this: &Arc<Self>, method: &str, params: Params, cx: RequestContext) -> Reply {
        if method == method::INITIALIZE {
            return initialize::initialize(this, params.into_value());
        }
        if this.dialect.is_v2() {
            return Self::dispatch_v2(this, method, params, cx);
        }
        Self::dispatch_v1(this, method, params, cx)
    }

    /// A request of a v2 connection: served by its v1 handler, params and answer translated
    /// (see [`v2::requests`]).
    fn dispatch_v2(this: &Arc<Self>, method: &str, params: Params, cx: RequestContext) -> Reply {
        let mapped = match v2::requests::map(method, params) {
            Ok(mapped) => mapped,
            Err(e) => return ready(Err(e)),
        };
        // An extension method keeps its name.
        let v1_method = if mapped.method.is_empty() { method } else { mapped.method };
        let form = mapped.answer;
        let reply = Self::dispatch_v1(this, v1_method, mapped.params, cx);
        if form == v2::requests::AnswerForm::Same {
            return reply;
        }
        Box::pin(async move { reply.await.map(|answer| v2::requests::answer(form, answer)) })
    }

    fn dispatch_v1(this: &Arc<Self>, method: &str, params: Params, cx: RequestContext) -> Reply {
        let Some(route) = this.route(method) else {
            return ready(Err(Error::method_not_found_msg(method)));
        };
        if route.is_session_method()
            && let Err(e) = this.require_authenticated()
        {
            // Before the params are read: nothing is touched for an unauthenticated client.
            return ready(Err(e));
        }
        match route {
            // The hot path: it decodes its params straight from their text.
            Route::Prompt => session_prompt::accept_prompt(this, params, cx),
            Route::Authenticate => authenticate::authenticate(this, params.into_value()),
            Route::Logout => authenticate::logout(this),
            Route::New => session_new::new_session(this, params.into_value(), cx.cancelled),
            Route::Load => session_load::load_session(this, params.into_value(), cx),
            Route::Resume => session_resume::resume_session(this, params.into_value(), cx),
            Route::List => session_list::list_sessions(this, params.into_value()),
            Route::Delete => session_delete::delete_session(this, params.into_value()),
            Route::Close => session_close::close_session_request(this, params.into_value()),
            Route::SetMode => session_set_config_option::set_mode(this, params.into_value()),
            Route::SetConfigOption => session_set_config_option::set_config_option(this, params.into_value()),
            Route::Extension => Self::extension(this, method, params.into_value()),
        }
    }

    /// An extension request, answered by its registered handler (see [`extensions`]).
    fn extension(this: &Arc<Self>, method: &str, params: Value) -> Reply {
        let Some(handler) = this.options.extensions.method_handler(method).cloned() else {
            return ready(Err(Error::method_not_found_msg(method)));
        };
        Box::pin(async move { Ok(Answer::from(handler.call(params).await?)) })
    }
}

/// The methods the agent serves after `initialize`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Route {
    Authenticate,
    Logout,
    New,
    Prompt,
    Load,
    Resume,
    List,
    Delete,
    Close,
    SetMode,
    SetConfigOption,
    /// A registered extension method.
    Extension,
}

impl Route {
    /// Whether the method is gated by authentication: every session method is (extension methods
    /// are the host's to gate).
    fn is_session_method(self) -> bool {
        !matches!(self, Route::Authenticate | Route::Logout | Route::Extension)
    }
}

impl Handler for AgentInner {
    fn accept(self: Arc<Self>, method: &str, params: Params, cx: RequestContext) -> Reply {
        AgentInner::dispatch(&self, method, params, cx)
    }

    fn answers_inline(&self, method: &str) -> bool {
        method == method::INITIALIZE
    }

    fn answers_cancellation(&self, method: &str) -> bool {
        // `session/prompt` answers `cancelled`. The session lifecycle methods are never abandoned
        // half-way (found by fuzzing): a `session/close` dropped while it waits for the prompt left
        // the session "closing" in the registry forever, so the hang-up never finished; a
        // `session/load`, `resume` or `new` dropped after the host opened the session left it
        // unserved and never shut down. They honour the cancellation only while the host call
        // itself is pending (see `cancellation::cancellable`); `session/close` always runs to its end.
        // The methods that change state (config, mode, delete, authentication) also run to their
        // end and answer with what happened: a host call abandoned half-way may still take effect
        // (a binding's host goes on running the call it was given), and the client must not be
        // told `-32800` about a change that was made. `$/cancel_request` allows ignoring it.
        matches!(
            method,
            method::SESSION_PROMPT
                | method::SESSION_NEW
                | method::SESSION_LOAD
                | method::SESSION_RESUME
                | method::SESSION_CLOSE
                | method::SESSION_SET_MODE
                | method::SESSION_SET_CONFIG_OPTION
                | method::SESSION_DELETE
                | method::AUTHENTICATE
                | method::LOGOUT
        )
    }

    fn notification(self: Arc<Self>, notification: IncomingNotification) -> BoxFuture<'static, ()> {
        // Applied right here, on the reader: a `session/cancel` takes effect before the next line
        // is read, so it can only ever hit the prompt that was in flight when it was sent.
        match notification.method.as_str() {
            method::SESSION_CANCEL => session_prompt::cancel(&self, notification.params),
            other => {
                if let Some(handler) = self.options.extensions.notification_handler(other).cloned() {
                    // Handled on the notification worker, in arrival order.
                    let params = notification.params.into_value();
                    return Box::pin(async move { handler.notify(params).await });
                }
                tracing::info!(method = other, "unknown notification; ignored");
            }
        }
        Box::pin(async {})
    }

    fn disconnected(self: Arc<Self>) -> BoxFuture<'static, ()> {
        Box::pin(async move { session_close::close_all(&self).await })
    }
}
