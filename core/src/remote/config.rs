//! [`RemoteConfig`]: where a remote agent listens and the rules its requests pass.
//!
//! Invariant: a configuration names exact values (an address, a path, whole origins); nothing is
//! matched by pattern, so what is allowed is what is written.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;

use crate::Options;

/// Maps a bearer token (the text after `Authorization: Bearer `) to the name of the principal it
/// belongs to, or `None` when the token is not valid.
pub type TokenVerifier = Arc<dyn Fn(&str) -> BoxFuture<'static, Option<String>> + Send + Sync>;

/// How [`serve_http`](super::serve_http) serves: the address, the path, and the rules.
#[derive(Clone)]
pub struct RemoteConfig {
    pub(crate) addr: SocketAddr,
    pub(crate) path: String,
    pub(crate) token_verifier: Option<TokenVerifier>,
    pub(crate) allowed_origins: Vec<String>,
    pub(crate) max_body_size: Option<usize>,
    pub(crate) shutdown_grace: Duration,
    pub(crate) idle_timeout: Duration,
    pub(crate) max_buffered_bytes: usize,
    pub(crate) max_connections: usize,
    pub(crate) keepalive_interval: Duration,
    /// The PEM certificate chain and private key files to serve TLS with.
    #[cfg(feature = "remote-tls")]
    pub(crate) tls: Option<(std::path::PathBuf, std::path::PathBuf)>,
}

impl std::fmt::Debug for RemoteConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut f = f.debug_struct("RemoteConfig");
        f.field("addr", &self.addr)
            .field("path", &self.path)
            .field("token_verifier", &self.token_verifier.is_some())
            .field("allowed_origins", &self.allowed_origins)
            .field("max_body_size", &self.max_body_size)
            .field("shutdown_grace", &self.shutdown_grace)
            .field("idle_timeout", &self.idle_timeout)
            .field("max_buffered_bytes", &self.max_buffered_bytes)
            .field("max_connections", &self.max_connections)
            .field("keepalive_interval", &self.keepalive_interval);
        #[cfg(feature = "remote-tls")]
        f.field("tls", &self.tls);
        f.finish()
    }
}

impl RemoteConfig {
    /// Serve at `addr` (port 0: the system picks one; see
    /// [`RemoteServer::local_addr`](super::RemoteServer::local_addr)), path `/acp`, no token
    /// verifier (allowed only on a loopback address), no allowed `Origin`, bodies up to the
    /// agent's [`Options::max_message_size`], a 10 s shutdown grace, a 5 min idle timeout,
    /// 16 MiB buffered per connection, 1024 connections at once, a keepalive every 15 s.
    pub fn new(addr: SocketAddr) -> Self {
        Self {
            addr,
            path: "/acp".to_owned(),
            token_verifier: None,
            allowed_origins: Vec::new(),
            max_body_size: None,
            shutdown_grace: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(300),
            max_buffered_bytes: 16 * 1024 * 1024,
            max_connections: 1024,
            keepalive_interval: Duration::from_secs(15),
            #[cfg(feature = "remote-tls")]
            tls: None,
        }
    }

    /// The endpoint's path (default `/acp`); it must start with `/`.
    #[must_use]
    pub fn path(mut self, path: impl Into<String>) -> Self {
        self.path = path.into();
        self
    }

    /// Every request must carry `Authorization: Bearer TOKEN` that `verifier` maps to a
    /// principal name, else it is answered `401` before any ACP is read.
    #[must_use]
    pub fn token_verifier(mut self, verifier: TokenVerifier) -> Self {
        self.token_verifier = Some(verifier);
        self
    }

    /// Allows requests whose `Origin` header is exactly `origin` (e.g. `https://editor.example`).
    /// A request with an `Origin` not allowed is answered `403` (a browser page of another site);
    /// a request without one (a native client) is not refused for it.
    #[must_use]
    pub fn allow_origin(mut self, origin: impl Into<String>) -> Self {
        self.allowed_origins.push(origin.into());
        self
    }

    /// The largest request body (a POST, a WebSocket message) in bytes; larger is answered `413`
    /// (a WebSocket is closed with code 1009). Default: the agent's
    /// [`Options::max_message_size`].
    #[must_use]
    pub fn max_body_size(mut self, bytes: usize) -> Self {
        self.max_body_size = Some(bytes);
        self
    }

    /// How long [`RemoteServer::shutdown`](super::RemoteServer::shutdown) lets running turns
    /// finish before it hangs up (default 10 s).
    #[must_use]
    pub fn shutdown_grace(mut self, grace: Duration) -> Self {
        self.shutdown_grace = grace;
        self
    }

    /// How long a Streamable HTTP connection may have no SSE stream open and make no request
    /// before it is hung up (default 5 min): its client vanished without a `DELETE`, and its
    /// agent would otherwise keep its sessions live for ever. A WebSocket ends with its socket.
    #[must_use]
    pub fn idle_timeout(mut self, idle: Duration) -> Self {
        self.idle_timeout = idle;
        self
    }

    /// The most bytes of the agent's messages that may wait for one connection's client (default
    /// 16 MiB): written by the agent, not yet handed to the client's socket.
    ///
    /// A client that reads slower than its agent writes slows the agent down: once this much
    /// waits, the agent's next message waits for room (nothing is dropped). A client whose
    /// messages fill the buffer and that takes none of them for two keepalive intervals
    /// ([`RemoteConfig::keepalive_interval`], 30 s by default) has stopped reading: its
    /// connection is hung up — an HTTP connection's SSE streams end, a WebSocket is closed with
    /// code 1008 — and its agent sees the client go away as at the end of stdio (its sessions are
    /// closed, their journals intact). One message larger than the whole buffer is let through
    /// when nothing else waits.
    #[must_use]
    pub fn max_buffered_bytes(mut self, bytes: usize) -> Self {
        self.max_buffered_bytes = bytes;
        self
    }

    /// The most ACP connections open at once (default 1024): HTTP connections (an answered
    /// `initialize`, until hung up) and `WebSocket`s together. One more — an `initialize` POST or
    /// a WebSocket upgrade — is answered `503 Service Unavailable` with `Retry-After` before its
    /// body is read; the requests of open connections are not limited.
    #[must_use]
    pub fn max_connections(mut self, connections: usize) -> Self {
        self.max_connections = connections;
        self
    }

    /// How long a stream may stay silent before the server shows it is alive (default 15 s): an
    /// SSE stream sends the comment `: keepalive`, a WebSocket a Ping. A WebSocket client that
    /// sends nothing (no Pong, no message) for two intervals is hung up (closed with code 1008);
    /// see also [`RemoteConfig::max_buffered_bytes`]. A zero interval is taken as 1 ms.
    #[must_use]
    pub fn keepalive_interval(mut self, interval: Duration) -> Self {
        self.keepalive_interval = interval;
        self
    }

    /// Serves HTTPS and WSS (feature `remote-tls`) with the PEM certificate chain in
    /// `cert_chain_pem` (the server's certificate first) and the PEM private key (PKCS#8, PKCS#1
    /// or SEC1) in `private_key_pem`; ALPN offers HTTP/2 and HTTP/1.1. The files are read when
    /// [`serve_http`](super::serve_http) starts, which fails with an `InvalidInput` error naming
    /// the file and what was wrong (unreadable, not PEM, a key that is not the certificate's).
    #[cfg(feature = "remote-tls")]
    #[must_use]
    pub fn tls(
        mut self,
        cert_chain_pem: impl Into<std::path::PathBuf>,
        private_key_pem: impl Into<std::path::PathBuf>,
    ) -> Self {
        self.tls = Some((cert_chain_pem.into(), private_key_pem.into()));
        self
    }

    /// How long a connection may take nothing while its buffer is full, or a WebSocket client
    /// send nothing: two keepalive intervals.
    pub(crate) fn stall_timeout(&self) -> Duration {
        self.keepalive().saturating_mul(2)
    }

    /// The keepalive interval in effect (at least 1 ms).
    pub(crate) fn keepalive(&self) -> Duration {
        self.keepalive_interval.max(Duration::from_millis(1))
    }

    /// The body limit in effect for an agent with `options`.
    pub(crate) fn body_limit(&self, options: &Options) -> usize {
        self.max_body_size.unwrap_or(options.max_message_size)
    }
}
