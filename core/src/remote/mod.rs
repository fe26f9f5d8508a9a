//! Serving an agent remotely: ACP over Streamable HTTP (POST + Server-Sent Events) and over
//! WebSocket, on one endpoint (default `/acp`), as the official SDKs' remote clients speak it.
//!
//! Only with the `remote` feature. The entry point is [`serve_http`]: it binds, and every HTTP
//! connection (an `initialize` POST and what follows under its `Acp-Connection-Id`) or WebSocket
//! is its own ACP connection, with its own [`Agent`](crate::Agent) made from a clone of the
//! [`Options`] given — so all of them share the host (its store, its session registry).
//!
//! One concern per file:
//! - `config`: [`RemoteConfig`], what is served where and under which rules;
//! - `decode`: a POST body and a WebSocket message decoded, without a socket (fuzzed);
//! - `guard`: the rules every request passes before any ACP is read (`Host`, `Origin`, bearer
//!   token);
//! - `bridge`: one ACP connection — an agent on an in-memory pipe, messages in and out as JSON;
//! - `budget`: the bytes waiting for one connection's client, and telling a client that stopped
//!   reading from a slow one;
//! - `shape`: what a message of the agent is (request, response, notification; its id and
//!   session), read from its leading bytes;
//! - `limit`: how many ACP connections are open at once;
//! - `replay`: what an SSE stream delivered lately, for a client that reopens it with
//!   `Last-Event-ID`;
//! - `socket`: the accepted sockets, whose writes may not stall for ever;
//! - `tls` (feature `remote-tls`): HTTPS and WSS with rustls;
//! - `http`: Streamable HTTP (connection ids, session streams, status codes);
//! - `websocket`: one ACP connection per WebSocket, one message per text frame;
//! - this file: binding, the router (and `GET`'s choice between a WebSocket and an SSE stream),
//!   [`RemoteServer`] and its graceful shutdown.
//!
//! Invariants: no request reaches an agent before the guard accepted it (a refused request is
//! answered 401/403 and nothing is read); an agent that listens on a non-loopback address always
//! has a token verifier; a connection's principal (the name its token was verified as) is fixed
//! when it is made, and a request of another principal on it is refused with 403; shutting down
//! refuses new connections first, serves the open ones while their requests in flight are answered
//! (up to the grace period), then hangs every connection up, so each agent closes its sessions as
//! at the end of stdio.
//!
//! Wire behaviour follows the official TypeScript SDK 2.4 (`@agentclientprotocol/sdk`
//! `experimental/server`) where the RFD "Streamable HTTP & WebSocket transport" is less precise:
//! `initialize` is the one POST answered in its own body (with the `Acp-Connection-Id` header),
//! every other POST is answered `202 Accepted` and its answer comes on a `GET` SSE stream — the
//! connection's, or the session's one (`Acp-Session-Id`) for messages about a session; a
//! `session/load` answer goes on the connection's stream.

mod bridge;
mod budget;
mod config;
#[cfg_attr(
    not(feature = "fuzzing"),
    expect(unreachable_pub, reason = "public only to the fuzz targets, through `fuzzing`")
)]
pub(crate) mod decode;
mod guard;
mod http;
mod limit;
mod replay;
mod shape;
mod socket;
#[cfg(feature = "remote-tls")]
mod tls;
mod websocket;

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

pub use config::{RemoteConfig, TokenVerifier};

use crate::Options;

/// What every handler of one server shares.
pub(crate) struct Shared {
    pub(crate) options: Options,
    pub(crate) config: RemoteConfig,
    /// The address actually bound (port 0 resolved), for the `Host` rule.
    pub(crate) local_addr: SocketAddr,
    /// `https` when serving TLS, else `http`.
    pub(crate) scheme: &'static str,
    pub(crate) connections: http::Connections,
    /// One per open ACP connection, up to [`RemoteConfig::max_connections`].
    pub(crate) slots: limit::Slots,
    /// Requests sent to any agent and not answered yet (the graceful shutdown waits for none).
    pub(crate) in_flight: bridge::InFlight,
    /// Cancelled when the server hangs every connection up.
    pub(crate) hang_up: CancellationToken,
    /// Cancelled when the shutdown begins: no new ACP connection is made (`503`), the open ones
    /// are still served through the grace period.
    pub(crate) draining: CancellationToken,
    /// Every connection's tasks, awaited by the shutdown.
    pub(crate) tasks: TaskTracker,
}

/// A running remote agent server; see [`serve_http`].
///
/// Dropping it without [`RemoteServer::shutdown`] stops accepting and hangs every connection up
/// at once (no grace period), without waiting for them to end.
pub struct RemoteServer {
    shared: Arc<Shared>,
    stop_accepting: CancellationToken,
    served: tokio::task::JoinHandle<io::Result<()>>,
}

impl std::fmt::Debug for RemoteServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteServer").field("local_addr", &self.shared.local_addr).finish_non_exhaustive()
    }
}

/// Binds `config`'s address and serves ACP at its path over Streamable HTTP and WebSocket, each
/// connection an [`Agent`](crate::Agent) made from a clone of `options` (the host is shared).
///
/// Errors: binding failed, or the address is not a loopback one and `config` has no token
/// verifier (`InvalidInput`: an agent open to the network must know who calls it), or (feature
/// `remote-tls`) the TLS files cannot be used (`InvalidInput` naming the file and what was wrong).
pub async fn serve_http(options: Options, config: RemoteConfig) -> io::Result<RemoteServer> {
    if !config.addr.ip().is_loopback() && config.token_verifier.is_none() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("refusing to listen on the non-loopback address {} without a token verifier", config.addr),
        ));
    }
    #[cfg(feature = "remote-tls")]
    let tls = match &config.tls {
        Some((cert_chain, key)) => Some(tls::server_config(cert_chain, key)?),
        None => None,
    };
    #[cfg(not(feature = "remote-tls"))]
    let tls: Option<std::convert::Infallible> = None;
    let listener = tokio::net::TcpListener::bind(config.addr).await?;
    let local_addr = listener.local_addr()?;
    let shared = Arc::new(Shared {
        options,
        config,
        local_addr,
        scheme: if tls.is_some() { "https" } else { "http" },
        connections: http::Connections::default(),
        slots: limit::Slots::default(),
        in_flight: bridge::InFlight::default(),
        hang_up: CancellationToken::new(),
        draining: CancellationToken::new(),
        tasks: TaskTracker::new(),
    });
    let router = router(&shared);
    let stop_accepting = CancellationToken::new();
    let stop = stop_accepting.clone();
    let stall = shared.config.stall_timeout();
    let stopped = async move { stop.cancelled().await };
    let served = match tls {
        #[cfg(feature = "remote-tls")]
        Some(tls) => {
            let listener = tls::TlsListener::new(listener, tls, stall)?;
            tokio::spawn(async move { axum::serve(listener, router).with_graceful_shutdown(stopped).await })
        }
        #[cfg(not(feature = "remote-tls"))]
        Some(never) => match never {},
        None => {
            let listener = socket::GuardedListener { listener, stall };
            tokio::spawn(async move { axum::serve(listener, router).with_graceful_shutdown(stopped).await })
        }
    };
    tracing::info!(address = %local_addr, path = shared.config.path, "serving ACP remotely");
    Ok(RemoteServer { shared, stop_accepting, served })
}

/// The one endpoint: POST, GET (SSE or a WebSocket upgrade) and DELETE, behind the guard, the
/// connection limit and the body limit.
fn router(shared: &Arc<Shared>) -> axum::Router {
    use axum::routing::get;
    axum::Router::new()
        .route(&shared.config.path, get(get_endpoint).post(http::post).delete(http::delete))
        .layer(axum::extract::DefaultBodyLimit::max(shared.config.body_limit(&shared.options)))
        .layer(axum::middleware::from_fn_with_state(shared.clone(), limit::check))
        .layer(axum::middleware::from_fn_with_state(shared.clone(), guard::check))
        .with_state(shared.clone())
}

impl Drop for RemoteServer {
    fn drop(&mut self) {
        // After `shutdown` these are done already; otherwise nothing outlives the handle.
        self.stop_accepting.cancel();
        self.shared.hang_up.cancel();
        self.shared.connections.hang_up_all();
    }
}

/// `GET`: a WebSocket upgrade (`Upgrade: websocket`), else an SSE stream of Streamable HTTP.
async fn get_endpoint(
    axum::extract::State(shared): axum::extract::State<Arc<Shared>>,
    axum::Extension(principal): axum::Extension<guard::Principal>,
    upgrade: Result<axum::extract::WebSocketUpgrade, axum::extract::ws::rejection::WebSocketUpgradeRejection>,
    headers: axum::http::HeaderMap,
) -> axum::response::Response {
    use axum::response::IntoResponse as _;
    let wants_websocket = headers
        .get(axum::http::header::UPGRADE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("websocket"));
    if !wants_websocket {
        return http::events(&shared, &principal, &headers).await;
    }
    if shared.draining.is_cancelled() {
        return guard::refuse(axum::http::StatusCode::SERVICE_UNAVAILABLE, "the server is shutting down");
    }
    let Some(slot) = shared.slots.take(shared.config.max_connections) else {
        return limit::full();
    };
    match upgrade {
        Ok(upgrade) => websocket::upgrade(shared, principal, upgrade, slot),
        Err(rejection) => rejection.into_response(),
    }
}

impl RemoteServer {
    /// The address the server listens on (with the port the system picked for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.shared.local_addr
    }

    /// The URL of the endpoint, e.g. `http://127.0.0.1:8080/acp` (`https://` when serving TLS:
    /// [`RemoteConfig::tls`]).
    pub fn url(&self) -> String {
        format!("{}://{}{}", self.shared.scheme, self.shared.local_addr, self.shared.config.path)
    }

    /// How many ACP connections are open (HTTP and WebSocket).
    pub fn connections(&self) -> usize {
        self.shared.connections.len() + self.shared.connections.websockets()
    }

    /// Shuts down gracefully: refuses new ACP connections (`503`: an `initialize` POST, a
    /// WebSocket upgrade) while the open ones are still served — an HTTP client can still answer
    /// a permission request or cancel its turn — until every request in flight (a running turn's
    /// `session/prompt` included) is answered or the grace period
    /// ([`RemoteConfig::shutdown_grace`]) has passed; then stops accepting, hangs every
    /// connection up — each agent closes its sessions, its last messages are delivered and its
    /// streams end — and returns once all of them have finished.
    pub async fn shutdown(mut self) -> io::Result<()> {
        self.shared.draining.cancel();
        let grace = self.shared.config.shutdown_grace;
        let deadline = tokio::time::Instant::now() + grace;
        while self.shared.in_flight.get() > 0 && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        self.stop_accepting.cancel();
        self.shared.hang_up.cancel();
        self.shared.connections.hang_up_all();
        self.shared.tasks.close();
        self.shared.tasks.wait().await;
        // The server's own future ends once the last HTTP connection (an SSE stream, ended just
        // now) is done.
        match tokio::time::timeout(grace.max(Duration::from_secs(1)), &mut self.served).await {
            Ok(Ok(served)) => served,
            Ok(Err(join)) => Err(io::Error::other(join)),
            Err(_) => Ok(()),
        }
    }
}
