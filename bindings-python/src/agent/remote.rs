//! `Agent.serve_http`: the core's [`serve_http`](acp_facade::remote::serve_http) from Python, and
//! [`PyRemoteServer`], the running server's handle.
//!
//! The settings come as one object read by attribute ([`RemoteSettings`], built by
//! `acp_facade.remote`): a new `RemoteConfig` setting is one field here and one line in
//! [`RemoteSettings::config`]. Binding and shutting down run on the binding's Tokio runtime and
//! complete a Python future through the bridge, like every serve.
//!
//! Invariants: the token verifier is called through the bridge on the caller's asyncio loop (the
//! Python side makes any failure of it a refusal: it only ever answers a non-empty `str` or
//! `None`), and a bridge call that fails (the loop went away) refuses the token too; a
//! configuration the core would refuse or panic on (a path that is not one plain route, a
//! non-loopback address without a verifier, a TLS certificate without its key) is a `ValueError`
//! before anything is bound; TLS files the core cannot use are a `ValueError` naming the file, when
//! the server starts.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use acp_facade::Options;
use acp_facade::remote::{RemoteConfig, RemoteServer, TokenVerifier, serve_http};
use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;

use super::duration;
use crate::bridge;
use crate::host::args;

/// What `acp_facade.remote` passes, read by attribute; `None` keeps the core's default.
#[derive(FromPyObject)]
pub(crate) struct RemoteSettings {
    /// A numeric IP address and a port (`acp_facade.remote` resolves names on the loop).
    address: (String, u16),
    path: Option<String>,
    /// An object whose `verify(token)` coroutine answers the principal name or `None`.
    token_verifier: Option<Py<PyAny>>,
    allowed_origins: Vec<String>,
    max_body_size: Option<usize>,
    /// Seconds.
    shutdown_grace: Option<f64>,
    /// Seconds.
    idle_timeout: Option<f64>,
    /// At least 1 (`acp_facade.remote` checks it).
    max_buffered_bytes: Option<usize>,
    /// At least 1 (`acp_facade.remote` checks it).
    max_connections: Option<usize>,
    /// Seconds.
    keepalive_interval: Option<f64>,
    /// The PEM certificate chain; with `tls_key`, or neither.
    tls_cert: Option<PathBuf>,
    /// The PEM private key; with `tls_cert`, or neither.
    tls_key: Option<PathBuf>,
}

impl RemoteSettings {
    /// The core's configuration; a `ValueError` for a setting out of range.
    fn config(self) -> PyResult<RemoteConfig> {
        let (ip, port) = &self.address;
        let ip: std::net::IpAddr =
            ip.parse().map_err(|_| PyValueError::new_err(format!("not an IP address: {ip:?}")))?;
        let mut config = RemoteConfig::new(SocketAddr::new(ip, *port));
        if let Some(path) = self.path {
            config = config.path(checked_path(path)?);
        }
        if let Some(verifier) = self.token_verifier {
            config = config.token_verifier(verifier_of(Arc::new(verifier)));
        }
        for origin in self.allowed_origins {
            config = config.allow_origin(origin);
        }
        if let Some(max) = self.max_body_size {
            config = config.max_body_size(max);
        }
        if let Some(grace) = self.shutdown_grace {
            config = config.shutdown_grace(duration(grace, "shutdown_grace")?);
        }
        if let Some(idle) = self.idle_timeout {
            config = config.idle_timeout(nonzero(duration(idle, "idle_timeout")?, "idle_timeout")?);
        }
        if let Some(bytes) = self.max_buffered_bytes {
            config = config.max_buffered_bytes(bytes);
        }
        if let Some(connections) = self.max_connections {
            config = config.max_connections(connections);
        }
        if let Some(interval) = self.keepalive_interval {
            config =
                config.keepalive_interval(nonzero(duration(interval, "keepalive_interval")?, "keepalive_interval")?);
        }
        match (self.tls_cert, self.tls_key) {
            (Some(cert), Some(key)) => config = config.tls(cert, key),
            (None, None) => {}
            (Some(_), None) => {
                return Err(PyValueError::new_err("tls_cert is given without tls_key: give both or neither"));
            }
            (None, Some(_)) => {
                return Err(PyValueError::new_err("tls_key is given without tls_cert: give both or neither"));
            }
        }
        Ok(config)
    }
}

/// The endpoint's path: one plain route (`/` first; no `{`, `}` or `*`, which the router would
/// take for parameters and wildcards).
fn checked_path(path: String) -> PyResult<String> {
    if !path.starts_with('/') || path.contains(['{', '}', '*']) {
        return Err(PyValueError::new_err(format!(
            "path must start with `/` and contain no `{{`, `}}` or `*`, got {path:?}"
        )));
    }
    Ok(path)
}

fn nonzero(value: Duration, what: &str) -> PyResult<Duration> {
    if value.is_zero() {
        return Err(PyValueError::new_err(format!("{what} must be more than 0 seconds")));
    }
    Ok(value)
}

/// The core's verifier over the Python one: its `verify(token)` on the loop, a `str` its principal.
fn verifier_of(target: Arc<Py<PyAny>>) -> TokenVerifier {
    Arc::new(move |token: &str| {
        let token = token.to_owned();
        let call = bridge::call(
            &target,
            "verify",
            move |py| args(py, (token,)),
            |value| Ok(value.extract::<Option<String>>().ok().flatten()),
        );
        Box::pin(async move {
            match call.await {
                Ok(principal) => principal.filter(|name| !name.is_empty()),
                Err(e) => {
                    tracing::warn!(error = %e.message, "the token verifier failed: the token is refused");
                    None
                }
            }
        })
    })
}

/// Binds and serves; completes `future` with the server's handle, or with `ValueError` (a
/// non-loopback address without a token verifier, TLS files that cannot be used: the core's
/// message names the file) or `OSError` (binding failed). A bad setting
/// raises `ValueError` at the call.
pub(crate) fn start(options: Options, settings: RemoteSettings, future: u64) -> PyResult<()> {
    let config = settings.config()?;
    crate::runtime().spawn(async move {
        let result = serve_http(options, config).await;
        bridge::resolve(
            future,
            Ok(Box::new(move |py| match result {
                Ok(server) => Ok(Bound::new(py, PyRemoteServer::new(server))?.into_any()),
                Err(e) if e.kind() == std::io::ErrorKind::InvalidInput => Err(PyValueError::new_err(e.to_string())),
                Err(e) => Err(PyOSError::new_err(e.to_string())),
            })),
        );
    });
    Ok(())
}

/// A running remote server (the core's `RemoteServer`).
#[pyclass(name = "RemoteServer", module = "acp_facade._native", frozen)]
pub struct PyRemoteServer {
    addr: SocketAddr,
    url: String,
    /// Until `shutdown` takes it; dropping it hangs every connection up at once.
    server: Mutex<Option<RemoteServer>>,
}

impl PyRemoteServer {
    fn new(server: RemoteServer) -> Self {
        Self { addr: server.local_addr(), url: server.url(), server: Mutex::new(Some(server)) }
    }
}

#[pymethods]
impl PyRemoteServer {
    /// The URL of the endpoint, e.g. `http://127.0.0.1:8080/acp` (`https://` when serving TLS).
    #[getter]
    fn url(&self) -> String {
        self.url.clone()
    }

    /// The address listened on: `(host, port)`, the port resolved when 0 was asked for.
    #[getter]
    fn local_address(&self) -> (String, u16) {
        (self.addr.ip().to_string(), self.addr.port())
    }

    /// How many ACP connections are open (0 once shut down).
    #[getter]
    fn connections(&self) -> usize {
        self.server.lock().unwrap_or_else(PoisonError::into_inner).as_ref().map_or(0, RemoteServer::connections)
    }

    /// Shuts down gracefully (see the core's `RemoteServer::shutdown`); completes `future` when
    /// every connection has ended (at once when it was shut down before).
    fn shutdown(&self, future: u64) {
        let server = self.server.lock().unwrap_or_else(PoisonError::into_inner).take();
        let Some(server) = server else {
            bridge::resolve_none(future);
            return;
        };
        crate::runtime().spawn(async move { super::finish(future, server.shutdown().await) });
    }

    fn __repr__(&self) -> String {
        format!("RemoteServer(url={:?})", self.url)
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyRemoteServer>()
}
