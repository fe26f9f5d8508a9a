//! The facade: ACP requests in, host calls out; host events in, `session/update` out.
//!
//! One file per concern:
//! [`capabilities`] (what `initialize` advertises), [`session`] (`session/new`, id resolution),
//! [`registry`] (live sessions), [`prompt`] (the correlation engine and `session/cancel`),
//! `text_prompt` (the fast decoder of everyday `session/prompt` params),
//! [`translate`] (event → `session/update`), [`gates`] (permission round trips), [`close`],
//! [`replay`] (`session/load`), [`resume`], [`list`], [`delete`], [`config`], [`compact`].
//!
//! Invariants: every request gets exactly one response; a session id is validated and resolved
//! before any host call; only `Public` events reach the client; no update of a turn is written
//! after that turn's `session/prompt` response.

pub mod capabilities;
pub mod close;
pub mod compact;
pub mod config;
pub mod delete;
pub mod gates;
pub mod list;
mod options;
pub mod prompt;
pub mod registry;
pub mod replay;
pub mod resume;
pub mod session;
mod text_prompt;
pub mod translate;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use futures::future::BoxFuture;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite};

pub use options::Options;

/// The wire names of the methods the agent handles.
pub mod method {
    /// `initialize`.
    pub const INITIALIZE: &str = "initialize";
    /// `authenticate`.
    pub const AUTHENTICATE: &str = "authenticate";
    /// `logout`.
    pub const LOGOUT: &str = "logout";
    /// `session/new`.
    pub const SESSION_NEW: &str = "session/new";
    /// `session/prompt`.
    pub const SESSION_PROMPT: &str = "session/prompt";
    /// `session/load`.
    pub const SESSION_LOAD: &str = "session/load";
    /// `session/resume`.
    pub const SESSION_RESUME: &str = "session/resume";
    /// `session/list`.
    pub const SESSION_LIST: &str = "session/list";
    /// `session/delete`.
    pub const SESSION_DELETE: &str = "session/delete";
    /// `session/close`.
    pub const SESSION_CLOSE: &str = "session/close";
    /// `session/set_mode`.
    pub const SESSION_SET_MODE: &str = "session/set_mode";
    /// `session/set_config_option`.
    pub const SESSION_SET_CONFIG_OPTION: &str = "session/set_config_option";
    /// `session/cancel`.
    pub const SESSION_CANCEL: &str = "session/cancel";
    /// `session/update` (agent → client).
    pub const SESSION_UPDATE: &str = "session/update";
    /// `session/request_permission` (agent → client).
    pub const SESSION_REQUEST_PERMISSION: &str = "session/request_permission";
}

use crate::acp::{
    AuthenticateRequest, AuthenticateResponse, ClientCapabilities, InitializeRequest, InitializeResponse,
    LogoutResponse,
};
use crate::error::{Error, ErrorExt};
use crate::rpc::{self, Answer, ConnectionOptions, Handler, IncomingNotification, Params, Peer, RequestContext};
use agent_client_protocol_schema::ProtocolVersion;
use registry::Registry;

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

pub(crate) struct AgentInner {
    pub(crate) options: Options,
    pub(crate) registry: Registry,
    initialized: AtomicBool,
    authenticated: AtomicBool,
    client_capabilities: OnceLock<ClientCapabilities>,
    peer: OnceLock<Peer>,
    pub(crate) cursor_key: list::CursorKey,
}

impl Agent {
    /// An agent for one connection.
    pub fn new(options: Options) -> Self {
        let registry = Registry::new(options.max_sessions);
        let cursor_key = options.cursor_key.map_or_else(list::CursorKey::random, list::CursorKey::from_bytes);
        Self {
            inner: Arc::new(AgentInner {
                options,
                registry,
                initialized: AtomicBool::new(false),
                authenticated: AtomicBool::new(false),
                client_capabilities: OnceLock::new(),
                peer: OnceLock::new(),
                cursor_key,
            }),
        }
    }

    /// Serves the connection over `reader`/`writer` until the client hangs up; then every live
    /// session is closed and every request answered before this returns.
    pub async fn serve<R, W>(&self, reader: R, writer: W) -> std::io::Result<()>
    where
        R: AsyncRead + Unpin + Send,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let options =
            ConnectionOptions { max_message_size: self.inner.options.max_message_size, ..ConnectionOptions::default() };
        let inner = self.inner.clone();
        rpc::serve(reader, writer, self.inner.clone(), options, |peer| {
            let _ = inner.peer.set(peer.clone());
        })
        .await
    }

    /// Serves over the process's stdin and stdout.
    pub async fn serve_stdio(&self) -> std::io::Result<()> {
        let (stdin, stdout) = rpc::stdio::transport()?;
        self.serve(stdin, stdout).await
    }

    /// How many sessions are live.
    pub fn live_sessions(&self) -> usize {
        self.inner.registry.len()
    }

    /// Tells the facade a catalog entry changed; see `list::observe_session_meta`.
    pub async fn observe_session_meta(&self, entry: crate::host::SessionCatalogEntry) {
        list::observe_session_meta(&self.inner, entry).await;
    }
}

/// Decodes a request's params, naming the offending field on failure.
pub(crate) fn decode<T: DeserializeOwned>(params: Value) -> Result<T, Error> {
    let params = if params.is_null() { Value::Object(serde_json::Map::new()) } else { params };
    serde_path_to_error::deserialize(params).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        if path == "." {
            Error::invalid_params_msg(format!("invalid params: {inner}"))
        } else {
            Error::invalid_params_msg(format!("invalid params at `{path}`: {inner}"))
        }
    })
}

/// Decodes a request's params like [`decode`], straight from their text when the connection
/// checked it (see [`Params::checked_text`]): the same result for far less work. Any failure is
/// decided again by [`decode`], so error messages are unchanged.
///
/// Only for types that do not capture raw JSON text (`RawValue`) nor use 128-bit integers: those
/// decode differently from text and from a parsed value.
pub(crate) fn decode_params<T: DeserializeOwned>(params: Params) -> Result<T, Error> {
    if let Some(text) = params.checked_text() {
        // `decode` reads absent (`null`) params as an empty object.
        let text = if text == "null" { "{}" } else { text };
        if let Ok(decoded) = serde_json::from_str(text) {
            return Ok(decoded);
        }
    }
    decode(params.into_value())
}

/// Awaits a host call that the client may cancel with `$/cancel_request`: `-32800` (the host's
/// future dropped) when the cancellation comes first. Host calls must therefore be cancel-safe.
pub(crate) async fn cancellable<T>(
    cancelled: &tokio_util::sync::CancellationToken,
    method: &str,
    call: impl std::future::Future<Output = Result<T, Error>>,
) -> Result<T, Error> {
    tokio::select! {
        biased;
        () = cancelled.cancelled() => Err(Error::cancelled_msg(format!("`{method}` was cancelled"))),
        result = call => result,
    }
}

/// Serialises a response.
pub(crate) fn encode<T: Serialize>(value: &T) -> Result<Answer, Error> {
    serde_json::to_value(value).map(Answer::from).map_err(|e| encode_error(&e))
}

/// The error for a response that could not be serialised.
fn encode_error(e: &serde_json::Error) -> Error {
    Error::internal_msg(format!("could not encode the response: {e}"))
}

type Reply = BoxFuture<'static, Result<Answer, Error>>;

fn ready(result: Result<Answer, Error>) -> Reply {
    Box::pin(async move { result })
}

impl AgentInner {
    pub(crate) fn peer(&self) -> &Peer {
        self.peer.get().expect("the peer is set before the first message is read")
    }

    pub(crate) fn client_capabilities(&self) -> ClientCapabilities {
        self.client_capabilities.get().cloned().unwrap_or_default()
    }

    /// Fails with `-32000` while the authenticator demands a login.
    pub(crate) fn require_authenticated(&self) -> Result<(), Error> {
        match &self.options.authenticator {
            Some(auth) if auth.requires_authentication() && !self.authenticated.load(Ordering::Acquire) => {
                Err(Error::auth_required())
            }
            _ => Ok(()),
        }
    }

    fn initialize(this: &Arc<Self>, params: Value) -> Reply {
        let request: InitializeRequest = match decode(params) {
            Ok(r) => r,
            Err(e) => return ready(Err(e)),
        };
        if this.initialized.swap(true, Ordering::AcqRel) {
            return ready(Err(Error::invalid_request_msg("the connection is already initialized")));
        }
        let _ = this.client_capabilities.set(request.client_capabilities.clone());
        // Echo the client's version when we speak it; otherwise answer the newest we speak.
        let version = if request.protocol_version == ProtocolVersion::V1 {
            request.protocol_version
        } else {
            ProtocolVersion::LATEST
        };
        let mut response = InitializeResponse::new(version)
            .agent_capabilities(capabilities::advertised(&this.options))
            .agent_info(this.options.agent_info.clone());
        if let Some(auth) = &this.options.authenticator {
            response = response.auth_methods(auth.methods());
        }
        ready(encode(&response))
    }

    fn authenticate(this: &Arc<Self>, params: Value) -> Reply {
        let this = this.clone();
        Box::pin(async move {
            let request: AuthenticateRequest = decode(params)?;
            let Some(auth) = this.options.authenticator.clone() else {
                return Err(Error::invalid_params_msg(format!(
                    "unknown authentication method `{}`: this agent needs no authentication",
                    request.method_id
                )));
            };
            if !auth.methods().iter().any(|m| m.id() == &request.method_id) {
                return Err(Error::invalid_params_msg(format!(
                    "unknown authentication method `{}`",
                    request.method_id
                )));
            }
            auth.authenticate(request.method_id).await?;
            this.authenticated.store(true, Ordering::Release);
            encode(&AuthenticateResponse::new())
        })
    }

    fn logout(this: &Arc<Self>) -> Reply {
        let this = this.clone();
        Box::pin(async move {
            let auth = this
                .options
                .authenticator
                .clone()
                .filter(|a| a.supports_logout())
                .ok_or_else(|| Error::method_not_found_msg("logout"))?;
            auth.logout().await?;
            this.authenticated.store(false, Ordering::Release);
            encode(&LogoutResponse::new())
        })
    }

    fn dispatch(this: &Arc<Self>, method: &str, params: Params, cx: RequestContext) -> Reply {
        if method == method::INITIALIZE {
            return Self::initialize(this, params.into_value());
        }
        if !this.initialized.load(Ordering::Acquire) {
            return ready(Err(Error::invalid_request_msg(format!(
                "`{method}` before `initialize`: the connection must be initialized first"
            ))));
        }
        if method == method::SESSION_PROMPT {
            // The hot path: it decodes its params straight from their text.
            return prompt::accept_prompt(this, params, cx);
        }
        let params = params.into_value();
        let o = &this.options;
        match method {
            method::AUTHENTICATE => Self::authenticate(this, params),
            method::LOGOUT => Self::logout(this),
            method::SESSION_NEW => session::new_session(this, params, cx.cancelled),
            method::SESSION_LOAD if o.loader.is_some() => replay::load_session(this, params, cx.cancelled),
            method::SESSION_RESUME if o.resumer.is_some() => resume::resume_session(this, params, cx.cancelled),
            method::SESSION_LIST if o.catalog.is_some() => list::list_sessions(this, params),
            method::SESSION_DELETE if o.deleter.is_some() => delete::delete_session(this, params),
            method::SESSION_CLOSE if o.close => close::close_session_request(this, params),
            method::SESSION_SET_MODE => config::set_mode(this, params),
            method::SESSION_SET_CONFIG_OPTION => config::set_config_option(this, params),
            _ => ready(Err(Error::method_not_found_msg(method))),
        }
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
        // itself is pending (see [`cancellable`]); `session/close` always runs to its end.
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
        if !self.initialized.load(Ordering::Acquire) {
            tracing::warn!(method = notification.method, "notification before `initialize`; ignored");
            return Box::pin(async {});
        }
        match notification.method.as_str() {
            method::SESSION_CANCEL => prompt::cancel(&self, notification.params),
            other => tracing::info!(method = other, "unknown notification; ignored"),
        }
        Box::pin(async {})
    }

    fn disconnected(self: Arc<Self>) -> BoxFuture<'static, ()> {
        Box::pin(async move { close::close_all(&self).await })
    }
}
