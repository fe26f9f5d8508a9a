//! The handle itself and the one path every call takes.
//!
//! A call is checked before anything is sent — the capability (else
//! [`ClientError::Unsupported`]), its arguments (absolute paths, else
//! [`ClientError::RelativePath`]), the session being established, nothing cancelled — then sent
//! through the connection's ordered writer and awaited together with the cancellation of its
//! scope and session. When the cancellation comes first the request is abandoned (the connection
//! sends `$/cancel_request` for it), the scope's terminals are killed and released, and the call
//! fails with [`ClientError::Cancelled`]; the client going away fails it the same way. A JSON-RPC
//! error from the client is [`ClientError::Rejected`]; a result that does not decode as the
//! pinned schema's type is [`ClientError::Protocol`].

use std::path::Path;
use std::sync::Arc;

use futures::future::BoxFuture;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::capabilities::Capabilities;
use super::error::ClientError;
use super::link::{Scope, SessionLink};
use crate::acp::SessionId;
use crate::rpc::message::Params;
use crate::rpc::{Peer, RequestError};

/// The agent's handle on the client (the editor) for one session: files, terminals and questions.
///
/// A host gets the session's handle from [`Setup::client`](crate::host::Setup::client); a runner
/// turn gets one tied to that turn from `acp_facade_runner::Turn::client`. Cheap to
/// clone; every clone shares the session's state (its terminals, its cancellation).
///
/// Guarantees:
/// - nothing is sent for a capability the client did not advertise
///   ([`ClientError::Unsupported`], at once), nor with a relative path
///   ([`ClientError::RelativePath`]);
/// - a call in flight is cancelled with its turn (`session/cancel`, `$/cancel_request` of the
///   prompt), when its session closes, and when the client goes away: the request is abandoned
///   with `$/cancel_request` and the call fails with [`ClientError::Cancelled`]; a terminal of a
///   cancelled turn is killed and released;
/// - every terminal is released exactly once (see [`Terminal`](super::Terminal)).
///
/// Calls made through the session's own handle while a prompt is in flight belong to that prompt:
/// they are cancelled with it, and terminals they created are killed and released when it ends
/// cancelled.
///
/// ```no_run
/// # async fn demo(setup: acp_facade::host::Setup) -> Result<(), acp_facade::client::ClientError> {
/// let client = setup.client();
/// if client.capabilities().read_text_file() {
///     let text = client.read_text_file("/home/me/project/README.md", None, None).await?;
///     println!("{} bytes, unsaved edits included", text.len());
/// }
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Client {
    pub(crate) link: Arc<SessionLink>,
    /// The scope given with [`Client::scoped`]; `None`: the session's own handle.
    scope: Option<Arc<Scope>>,
    /// Where the host's event numbering is (see [`Client::in_order_with`]).
    order: Option<PublishedSeq>,
}

/// The `seq` a host's next event will get (see [`Client::in_order_with`]).
pub type PublishedSeq = Arc<dyn Fn() -> u64 + Send + Sync>;

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("session", &self.link.session_id())
            .field("capabilities", &self.link.capabilities)
            .field("scoped", &self.scope.is_some())
            .finish_non_exhaustive()
    }
}

impl Client {
    /// A handle with no connection behind it: the client advertised nothing, so every call fails
    /// with [`ClientError::Unsupported`]. What [`Setup::new`](crate::host::Setup::new) carries
    /// until the facade gives the session its real handle.
    pub fn detached() -> Self {
        Self { link: SessionLink::new(None, Capabilities::default()), scope: None, order: None }
    }

    /// The session's handle on the connection `peer`, for a client that advertised
    /// `capabilities`. Unbound until [`Client::bind`]; the facade does both.
    pub(crate) fn for_session(peer: Peer, capabilities: Capabilities) -> Self {
        Self { link: SessionLink::new(Some(peer), capabilities), scope: None, order: None }
    }

    /// Binds the session's id, once it is established.
    pub(crate) fn bind(&self, session_id: SessionId) {
        self.link.bind(session_id);
    }

    /// The session closes, or the client went away: every call of the session is cancelled, and
    /// new ones fail [`ClientError::Cancelled`].
    pub(crate) fn close_session(&self) {
        self.link.close();
    }

    /// What the client advertised.
    pub fn capabilities(&self) -> &Capabilities {
        &self.link.capabilities
    }

    /// The session's id, once the session is established.
    pub fn session_id(&self) -> Option<&SessionId> {
        self.link.session_id()
    }

    /// A handle on the same session whose calls also end when `cancel` fires: a turn of the
    /// host's own. When the turn is over, call [`Client::release_terminals`] on it.
    ///
    /// ```
    /// # fn demo(session: &acp_facade::client::Client) {
    /// let turn_cancelled = tokio_util::sync::CancellationToken::new();
    /// let turn_client = session.scoped(turn_cancelled.clone());
    /// // … `turn_cancelled.cancel()` on interrupt: the turn's calls fail `Cancelled` …
    /// # let _ = turn_client;
    /// # }
    /// ```
    #[must_use]
    pub fn scoped(&self, cancel: CancellationToken) -> Self {
        Self { link: self.link.clone(), scope: Some(Scope::new(cancel)), order: self.order.clone() }
    }

    /// The same handle, whose calls go out only after the `session/update`s of every event the
    /// host published before them — while a prompt forwards the session's events. `published`
    /// tells where the host's numbering is: the `seq` its next event will get (an
    /// [`EventHub`](crate::hub::EventHub)'s [`published`](crate::hub::EventHub::published)). The
    /// runner's turns use it: a tool call embedding a terminal reaches the client before the
    /// terminal is waited for, as the turn wrote them.
    #[must_use]
    pub fn in_order_with(&self, published: PublishedSeq) -> Self {
        Self { link: self.link.clone(), scope: self.scope.clone(), order: Some(published) }
    }

    /// Waits until the facade has forwarded what the host published so far (see
    /// [`Client::in_order_with`]).
    pub(crate) async fn in_order(&self) {
        if let Some(published) = &self.order {
            self.link.forwarding.caught_up_with(published()).await;
        }
    }

    /// Whether the facade has forwarded what the host published so far: a call may go out now.
    fn in_order_now(&self) -> bool {
        self.order.as_ref().is_none_or(|published| self.link.forwarding.caught_up(published()))
    }

    /// Whether the connection is quiet: no request of the agent's awaits the client's answer. A
    /// call begun now from the caller's thread ([`Client::start_read_text_file`]) is then written
    /// by that thread; with requests in flight it is queued for the core's writer with them, and a
    /// binding leaves such calls to the core's worker instead of doing their work on the host's
    /// thread.
    pub fn is_connection_quiet(&self) -> bool {
        self.link.peer.as_ref().is_some_and(|peer| peer.pending_requests() == 0)
    }

    /// Whether calls through this handle are cancelled now (its scope, or the session's prompt in
    /// flight, was cancelled; the session closed; the client went away).
    pub fn is_cancelled(&self) -> bool {
        self.link.is_closed() || self.effective_scope().is_some_and(|s| s.cancel.is_cancelled())
    }

    /// Releases every terminal created through this handle's scope and not released yet —
    /// killing first those that may still run when the scope was cancelled. Through the
    /// session's own handle: every terminal of the session. The runner calls it when a turn ends.
    pub async fn release_terminals(&self) {
        match &self.scope {
            Some(scope) => self.link.release_scope(scope).await,
            None => self.link.release_all().await,
        }
    }

    /// The scope calls through this handle belong to right now.
    pub(crate) fn effective_scope(&self) -> Option<Arc<Scope>> {
        match &self.scope {
            Some(scope) => Some(scope.clone()),
            None => self.link.prompt_scope(),
        }
    }

    /// The connection and the session id to send `method` with, unless the call cannot go out.
    pub(crate) fn ready(&self, method: &'static str) -> Result<(&Peer, &SessionId), ClientError> {
        let Some(peer) = &self.link.peer else {
            // A detached handle advertises nothing; its `require` already failed.
            return Err(ClientError::Unsupported { method, capability: "a connection" });
        };
        let session = self.link.session_id().ok_or(ClientError::NotEstablished { method })?;
        if self.is_cancelled() {
            return Err(ClientError::Cancelled { method });
        }
        Ok((peer, session))
    }

    /// Resolves when the scope's or the session's cancellation fires.
    pub(crate) async fn cancelled(&self, scope: Option<&Scope>) {
        match scope {
            Some(scope) => tokio::select! {
                biased;
                () = self.link.closed.cancelled() => {}
                () = scope.cancel.cancelled() => {}
            },
            None => self.link.closed.cancelled().await,
        }
    }

    /// The call path of the module doc, for a request whose params are built once the session id
    /// is known. Capability and argument checks are the caller's, before this.
    pub(crate) async fn call<P: Serialize + Send + 'static, R: DeserializeOwned + Send + 'static>(
        &self,
        method: &'static str,
        params: impl FnOnce(&SessionId) -> P,
    ) -> Result<R, ClientError> {
        self.begin_call(method, params, |answer: R| answer)?.await
    }

    /// [`Client::call`], begun on the calling thread: the call is checked, and sent at once when
    /// it is in order (see [`Client::in_order_with`]) — else once it is, as the returned future
    /// runs. The future awaits the answer and returns what `extract` takes from it; dropping it
    /// abandons the call.
    pub(crate) fn begin_call<P, R, T>(
        &self,
        method: &'static str,
        params: impl FnOnce(&SessionId) -> P,
        extract: fn(R) -> T,
    ) -> Result<BoxFuture<'static, Result<T, ClientError>>, ClientError>
    where
        P: Serialize + Send + 'static,
        R: DeserializeOwned + Send + 'static,
        T: Send + 'static,
    {
        let (peer, session) = self.ready(method)?;
        let params = params(session);
        let peer = peer.clone();
        let sent = if self.in_order_now() { Some(peer.begin_request(method, &params)) } else { None };
        // The scope the call belongs to is the one of when it began (a session handle's call
        // belongs to the prompt then in flight).
        let scope = self.effective_scope();
        let client = self.clone();
        Ok(Box::pin(async move {
            let answer = async {
                // Moved in: the future holds the params, not a reference to them.
                let params = params;
                let request = if let Some(request) = sent {
                    request?
                } else {
                    client.in_order().await;
                    peer.begin_request(method, &params)?
                };
                request.answer().await
            };
            let outcome = tokio::select! {
                biased;
                () = client.cancelled(scope.as_deref()) => None,
                outcome = answer => Some(outcome),
            };
            // The request, when abandoned above, is cancelled (`$/cancel_request`) as it is dropped.
            match outcome {
                Some(Ok(value)) => decode(method, value).map(extract),
                Some(Err(RequestError::Rejected(error))) => Err(ClientError::Rejected { method, error }),
                Some(Err(RequestError::Closed(_))) | None => Err(client.cancelled_call(method, scope.as_deref()).await),
            }
        }))
    }

    /// A call was cancelled: its scope is over, so its terminals are killed and released now,
    /// before the caller hears of it.
    pub(crate) async fn cancelled_call(&self, method: &'static str, scope: Option<&Scope>) -> ClientError {
        match scope {
            Some(scope) => self.link.release_scope(scope).await,
            None => self.link.release_all().await,
        }
        ClientError::Cancelled { method }
    }
}

/// Decodes a client's result as the schema's type; `null` stands for `{}` (clients answer
/// `fs/write_text_file` either way). Straight from the result's text when the connection checked
/// it ([`Params::decode_checked`]); a failure (and `null`) is decided from the value, so the
/// error's detail is the same either way.
pub(crate) fn decode<R: DeserializeOwned>(method: &'static str, result: Params) -> Result<R, ClientError> {
    if let Some(decoded) = result.decode_checked() {
        return Ok(decoded);
    }
    let value = result.into_value();
    let value = if value.is_null() { Value::Object(serde_json::Map::new()) } else { value };
    serde_json::from_value(value).map_err(|e| ClientError::Protocol { method, detail: e.to_string() })
}

/// Fails with [`ClientError::Unsupported`] unless the client advertised `capability`.
pub(crate) fn require(advertised: bool, method: &'static str, capability: &'static str) -> Result<(), ClientError> {
    if advertised { Ok(()) } else { Err(ClientError::Unsupported { method, capability }) }
}

/// Fails with [`ClientError::RelativePath`] unless `path` is absolute.
pub(crate) fn absolute(field: &'static str, path: &Path) -> Result<(), ClientError> {
    if path.is_absolute() { Ok(()) } else { Err(ClientError::RelativePath { field, path: path.to_path_buf() }) }
}
