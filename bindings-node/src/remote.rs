//! `agent.serveHttp(options)`: an agent served remotely — ACP over Streamable HTTP and WebSocket
//! on one endpoint — through the core's [`acp_facade::remote::serve_http`]; every remote
//! connection is its own core agent made from a clone of the JS agent's options (the host shared).
//!
//! Invariants:
//! - A running server is owned by a task of its own (the keeper), not by its JS handle: a
//!   `RemoteServer` object that is collected does not stop it; only `shutdown()` does.
//! - While it runs, its `closed` Promise is pending, which keeps the Node event loop alive (as a
//!   listening `net.Server` does); the Promise resolves once the shutdown has finished.
//! - A token verifier that throws, rejects, or answers anything but a non-empty string, `null` or
//!   `undefined` refuses the request (`401`) and is logged; the server goes on serving.
//! - Arguments are checked before anything is bound: a bad one throws `ERR_ACP_INVALID_ARG`. The
//!   TLS files are read by the core when it starts; one it cannot use rejects the Promise with
//!   `ERR_ACP_INVALID_ARG` and the core's message naming the file.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use acp_facade::Options;
use acp_facade::error::{Error as AcpError, ErrorExt};
use acp_facade::remote::{RemoteConfig, TokenVerifier};
use napi::bindgen_prelude::{Function, JsObjectValue as _, Object, ObjectFinalize, ObjectRef, PromiseRaw, Unknown};
use napi::{Env, JsValue, ValueType};
use napi_derive::napi;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::callback::{Convert, JsMethod, serde_args};
use crate::error::{Code, Result, js_error, recode};
use crate::settle::{self, Deferred, js};

/// A JS function, as an option holds it.
type JsFunction<'a> = Function<'a, Unknown<'static>, Unknown<'static>>;

/// How `agent.serveHttp` serves: where, and under which rules. Only `address` is required.
#[napi(object, object_to_js = false)]
pub struct ServeHttpOptions<'a> {
    /// `HOST:PORT` to listen on, e.g. `'127.0.0.1:0'` (port 0: the system picks a free one, see
    /// `RemoteServer.port`); a host name is resolved and its first address used. An address that
    /// is not loopback needs a `tokenVerifier`.
    pub address: String,
    /// The endpoint's path; it must start with `/`. @default '/acp'
    pub path: Option<String>,
    /// Maps the bearer token of each request (`Authorization: Bearer TOKEN`) to the principal it
    /// acts as, or refuses it (`401`, before any ACP is read). A session belongs to the principal
    /// that created it; to any other it does not exist. @default none (allowed on loopback only)
    #[napi(ts_type = "TokenVerifier")]
    pub token_verifier: Option<JsFunction<'a>>,
    /// The `Origin`s (e.g. `'https://editor.example'`) whose requests are served; a request with
    /// any other `Origin` (a web page of another site) is answered `403`. Requests without one
    /// (native clients) are not affected. @default none
    pub allowed_origins: Option<Vec<String>>,
    /// The largest request body (a POST, a WebSocket message) in bytes; larger is answered `413`
    /// (a WebSocket is closed). @default the agent's `maxMessageSize`
    #[napi(ts_type = "number")]
    pub max_body_size: Option<Unknown<'a>>,
    /// How long `shutdown()` lets requests in flight (running turns) finish before it hangs every
    /// connection up, in ms. @default 10000
    #[napi(ts_type = "number")]
    pub shutdown_grace_ms: Option<Unknown<'a>>,
    /// How long a Streamable HTTP connection may have no stream open and make no request before it
    /// is hung up (its client vanished without a `DELETE`), in ms. @default 300000
    #[napi(ts_type = "number")]
    pub idle_timeout_ms: Option<Unknown<'a>>,
    /// The most bytes of the agent's messages that may wait for one connection's client (written,
    /// not yet taken by its socket). A client reading slower than its agent writes slows the agent
    /// down (nothing is dropped); one whose buffer stays full for two `keepaliveIntervalMs` has
    /// stopped reading and is hung up (its sessions closed, as at the end of stdio).
    /// @default 16777216 (16 MiB)
    #[napi(ts_type = "number")]
    pub max_buffered_bytes: Option<Unknown<'a>>,
    /// The most ACP connections open at once (HTTP and WebSocket connections together); one more
    /// (an `initialize` POST, a WebSocket upgrade) is answered `503` with `Retry-After`.
    /// @default 1024
    #[napi(ts_type = "number")]
    pub max_connections: Option<Unknown<'a>>,
    /// How long a stream may stay silent before the server shows it is alive, in ms: an SSE stream
    /// sends the comment `: keepalive`, a WebSocket a Ping; a WebSocket client that sends nothing
    /// (no Pong) for two intervals is hung up. @default 15000
    #[napi(ts_type = "number")]
    pub keepalive_interval_ms: Option<Unknown<'a>>,
    /// Serve HTTPS and WSS (`RemoteServer.url` is then `https://…`) with these PEM files. They are
    /// read when the server starts: one that cannot be used (unreadable, not PEM, a key that is
    /// not the certificate's) rejects the Promise with `ERR_ACP_INVALID_ARG` naming the file.
    /// @default none (plain HTTP)
    #[napi(ts_type = "ServeHttpTls")]
    pub tls: Option<Unknown<'a>>,
}

/// The configuration once the address is known.
type Configure = Box<dyn FnOnce(RemoteConfig) -> RemoteConfig + Send>;

/// Checks `js` and turns it into the address to resolve and what configures the rest (one line
/// per option).
fn configure(js: ServeHttpOptions<'_>) -> Result<(String, Configure)> {
    let verifier = js.token_verifier.as_ref().map(token_verifier).transpose()?;
    if let Some(path) = &js.path {
        check_path(path)?;
    }
    let max_body_size = whole("maxBodySize", js.max_body_size.as_ref(), Least::One, "bytes")?;
    let shutdown_grace_ms = whole("shutdownGraceMs", js.shutdown_grace_ms.as_ref(), Least::Zero, "milliseconds")?;
    let idle_timeout_ms = whole("idleTimeoutMs", js.idle_timeout_ms.as_ref(), Least::Zero, "milliseconds")?;
    let max_buffered_bytes = whole("maxBufferedBytes", js.max_buffered_bytes.as_ref(), Least::One, "bytes")?;
    let max_connections = whole("maxConnections", js.max_connections.as_ref(), Least::One, "connections")?;
    let keepalive_interval_ms =
        whole("keepaliveIntervalMs", js.keepalive_interval_ms.as_ref(), Least::One, "milliseconds")?;
    let tls = js.tls.as_ref().map(tls_files).transpose()?;
    let ServeHttpOptions { address, path, allowed_origins, .. } = js;
    let ms = |ms: u32| Duration::from_millis(u64::from(ms));
    let configure: Configure = Box::new(move |mut config| {
        if let Some(verifier) = verifier {
            config = config.token_verifier(verifier);
        }
        if let Some(path) = path {
            config = config.path(path);
        }
        for origin in allowed_origins.unwrap_or_default() {
            config = config.allow_origin(origin);
        }
        if let Some(bytes) = max_body_size {
            config = config.max_body_size(bytes as usize);
        }
        if let Some(grace) = shutdown_grace_ms {
            config = config.shutdown_grace(ms(grace));
        }
        if let Some(idle) = idle_timeout_ms {
            config = config.idle_timeout(ms(idle));
        }
        if let Some(bytes) = max_buffered_bytes {
            config = config.max_buffered_bytes(bytes as usize);
        }
        if let Some(connections) = max_connections {
            config = config.max_connections(connections as usize);
        }
        if let Some(interval) = keepalive_interval_ms {
            config = config.keepalive_interval(ms(interval));
        }
        if let Some((cert, key)) = tls {
            config = config.tls(cert, key);
        }
        config
    });
    Ok((address, configure))
}

/// The least value a numeric option takes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Least {
    Zero,
    One,
}

/// A numeric option: absent, or a whole number from `least` to `u32::MAX` (a number of `unit`).
fn whole(name: &str, value: Option<&Unknown<'_>>, least: Least, unit: &str) -> Result<Option<u32>> {
    let Some(value) = value else { return Ok(None) };
    let number = match value.get_type().map_err(recode)? {
        // SAFETY: checked to be a number.
        ValueType::Number => Some(unsafe { value.cast::<f64>() }.map_err(recode)?),
        _ => None,
    };
    let lowest = if least == Least::One { 1.0 } else { 0.0 };
    match number {
        Some(n) if n.fract() == 0.0 && (lowest..=f64::from(u32::MAX)).contains(&n) =>
        {
            #[expect(
                clippy::cast_possible_truncation,
                clippy::cast_sign_loss,
                reason = "a whole number in u32's range"
            )]
            Ok(Some(n as u32))
        }
        _ => {
            let got = number.map_or_else(|| "not a number".to_owned(), |n| format!("got {n}"));
            let kind = if least == Least::One { "a positive" } else { "a" };
            Err(js_error(
                Code::InvalidArg,
                format!("{name} must be {kind} number of {unit}, a whole number up to {} ({got})", u32::MAX),
            ))
        }
    }
}

/// A path the router takes: absolute, a plain path (no query, fragment, space or route pattern).
fn check_path(path: &str) -> Result<()> {
    let plain = path.starts_with('/')
        && !path.contains("//")
        && !path.chars().any(|c| c.is_whitespace() || c.is_control() || "?#{}*:".contains(c));
    if plain {
        Ok(())
    } else {
        Err(js_error(Code::InvalidArg, format!("path must be a plain absolute path such as \"/acp\", got {path:?}")))
    }
}

/// The `tls` option's certificate chain and key paths: an object with both as non-empty strings.
fn tls_files(tls: &Unknown<'_>) -> Result<(PathBuf, PathBuf)> {
    const SHAPE: &str = "tls must be { cert, key }: the paths of a PEM certificate chain and a PEM private key";
    if tls.get_type().map_err(recode)? != ValueType::Object {
        return Err(js_error(Code::InvalidArg, SHAPE));
    }
    // SAFETY: checked to be an object.
    let object = unsafe { tls.cast::<Object<'_>>() }.map_err(recode)?;
    let file = |name: &str| -> Result<PathBuf> {
        let value: Unknown<'_> = object.get_named_property(name).map_err(recode)?;
        let path = match value.get_type().map_err(recode)? {
            // SAFETY: checked to be a string.
            ValueType::String => unsafe { value.cast::<String>() }.map_err(recode)?,
            _ => String::new(),
        };
        if path.is_empty() {
            return Err(js_error(Code::InvalidArg, format!("{SHAPE}; tls.{name} is not a non-empty string")));
        }
        Ok(PathBuf::from(path))
    };
    Ok((file("cert")?, file("key")?))
}

/// The JS verifier as the core's: called once per request with the token.
fn token_verifier(function: &JsFunction<'_>) -> Result<TokenVerifier> {
    if function.to_unknown().get_type().map_err(recode)? != ValueType::Function {
        return Err(js_error(Code::InvalidArg, "tokenVerifier must be a function"));
    }
    let method = JsMethod::from_function(function, "tokenVerifier").map_err(recode)?;
    Ok(Arc::new(move |token: &str| {
        let method = method.clone();
        let args = serde_args(vec![serde_json::Value::String(token.to_owned())]);
        Box::pin(async move {
            match method.call(args, principal()).await {
                Ok(name) => name,
                Err(e) => {
                    // The token itself is never logged.
                    tracing::warn!(error = %e.message, "the token verifier failed; the request is refused (401)");
                    None
                }
            }
        })
    }))
}

/// A verifier's answer: a non-empty string is the principal, `null` or `undefined` a refusal,
/// anything else an error (logged, refused).
fn principal() -> Convert<Option<String>> {
    Box::new(|_, value: Unknown<'_>| match value.get_type() {
        Ok(ValueType::Null | ValueType::Undefined) => Ok(None),
        Ok(ValueType::String) => {
            // SAFETY: checked to be a string.
            let name = unsafe { value.cast::<String>() }.map_err(|e| AcpError::internal_msg(e.reason.clone()))?;
            if name.is_empty() {
                return Err(AcpError::internal_msg("the token verifier returned an empty principal name"));
            }
            Ok(Some(name))
        }
        Ok(other) => Err(AcpError::internal_msg(format!(
            "the token verifier returned {other}, not a principal name (a string), null or undefined"
        ))),
        Err(e) => Err(AcpError::internal_msg(e.reason.clone())),
    })
}

/// Binds and serves `options` as `js` says; the Promise resolves with the running server once it
/// listens, or rejects (`ERR_ACP_INVALID_ARG`: an address that does not resolve, one that is not
/// loopback without a verifier, TLS files that cannot be used; `ERR_ACP_IO`: binding failed).
pub fn serve_http<'env>(
    env: &'env Env,
    options: Options,
    settings: ServeHttpOptions<'_>,
) -> Result<PromiseRaw<'env, RemoteServer>> {
    let (address, configure) = configure(settings)?;
    let (listening, promise) = settle::deferred(env).map_err(recode)?;
    // Made now, on the JS thread: pending while the server runs (keeping the event loop alive).
    let (closed, closed_promise) = settle::deferred::<()>(env).map_err(recode)?;
    // A Promise just made on this thread: an object of this environment.
    let closed_ref = Object::from_raw(env.raw(), closed_promise.raw()).create_ref::<false>().map_err(recode)?;
    napi::bindgen_prelude::spawn(async move {
        let bound = bind(&address, options, configure).await;
        match bound {
            Ok(server) => {
                let shared = Arc::new(Shared::new(server));
                let handle = shared.clone();
                listening.settle(move |env| js(env, RemoteServer { shared: handle, closed: Some(closed_ref) }));
                keep(shared, closed).await;
            }
            Err((code, message)) => {
                listening.settle(move |env| {
                    let _ = closed_ref.unref(env);
                    Err(rejection(env, code, message))
                });
                // Never handed out: resolved quietly rather than left to reject unobserved.
                closed.settle(|env| js(env, ()));
            }
        }
    });
    Ok(promise)
}

/// Resolves `address` and serves on its first address.
async fn bind(
    address: &str,
    options: Options,
    configure: Configure,
) -> std::result::Result<acp_facade::remote::RemoteServer, (Code, String)> {
    let addr = match address.parse::<SocketAddr>() {
        Ok(addr) => addr,
        Err(_) => tokio::net::lookup_host(address)
            .await
            .ok()
            .and_then(|mut addrs| addrs.next())
            .ok_or_else(|| (Code::InvalidArg, format!("address must be HOST:PORT, got {address:?}")))?,
    };
    acp_facade::remote::serve_http(options, configure(RemoteConfig::new(addr))).await.map_err(|e| {
        let code = if e.kind() == std::io::ErrorKind::InvalidInput { Code::InvalidArg } else { Code::Io };
        (code, format!("cannot serve on {address}: {e}"))
    })
}

/// A rejection carrying `code` as its `code` property (on the JS thread).
fn rejection(env: &Env, code: Code, message: String) -> napi::Error {
    napi::Error::from(napi::JsError::from(js_error(code, message)).into_unknown(*env))
}

/// What a server's JS handle and its keeper share.
struct Shared {
    /// The running server; taken by the shutdown.
    server: Mutex<Option<acp_facade::remote::RemoteServer>>,
    local_addr: SocketAddr,
    url: String,
    /// Cancelled when `shutdown()` is first called.
    stop: CancellationToken,
    /// The shutdown's outcome, once it has finished (an I/O error's message).
    done: watch::Sender<Option<std::result::Result<(), String>>>,
}

impl Shared {
    fn new(server: acp_facade::remote::RemoteServer) -> Self {
        Self {
            local_addr: server.local_addr(),
            url: server.url(),
            server: Mutex::new(Some(server)),
            stop: CancellationToken::new(),
            done: watch::Sender::new(None),
        }
    }

    fn server(&self) -> std::sync::MutexGuard<'_, Option<acp_facade::remote::RemoteServer>> {
        self.server.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The keeper: owns the server until `shutdown()` is called, shuts it down, then resolves
/// `closed` and publishes the outcome.
async fn keep(shared: Arc<Shared>, closed: Deferred) {
    shared.stop.cancelled().await;
    let server = shared.server().take();
    let outcome = match server {
        Some(server) => server.shutdown().await.map_err(|e| e.to_string()),
        None => Ok(()),
    };
    if let Err(e) = &outcome {
        tracing::warn!(error = %e, "the remote server's shutdown failed");
    }
    closed.settle(|env| js(env, ()));
    shared.done.send_replace(Some(outcome));
}

/// A running remote agent server (`agent.serveHttp`): every HTTP connection (an `initialize` POST
/// and what follows under its `Acp-Connection-Id`) and every WebSocket at its URL is an ACP
/// connection of its own, all sharing the agent's host. It runs until `shutdown()`, keeping the
/// process alive meanwhile.
#[napi(custom_finalize)]
pub struct RemoteServer {
    shared: Arc<Shared>,
    /// The `closed` Promise, released with this handle.
    closed: Option<ObjectRef<false>>,
}

#[napi]
impl RemoteServer {
    /// The endpoint's URL, e.g. `http://127.0.0.1:40213/acp` (the port the system picked for
    /// port 0); `https://…` when served with `tls`.
    #[napi(getter)]
    pub fn url(&self) -> String {
        self.shared.url.clone()
    }

    /// The address listened on, `HOST:PORT` (e.g. `127.0.0.1:40213`; an IPv6 host in brackets).
    #[napi(getter)]
    pub fn address(&self) -> String {
        self.shared.local_addr.to_string()
    }

    /// The port listened on.
    #[napi(getter)]
    pub fn port(&self) -> u32 {
        u32::from(self.shared.local_addr.port())
    }

    /// How many ACP connections are open now (HTTP and WebSocket); 0 once shut down.
    #[napi(getter)]
    pub fn connections(&self) -> u32 {
        self.shared.server().as_ref().map_or(0, |s| u32::try_from(s.connections()).unwrap_or(u32::MAX))
    }

    /// Resolves once the server has shut down (after `shutdown()`).
    #[napi(getter, ts_return_type = "Promise<void>")]
    pub fn closed<'env>(&self, env: &'env Env) -> Result<Object<'env>> {
        match &self.closed {
            Some(closed) => closed.get_value(env).map_err(recode),
            None => Err(js_error(Code::Internal, "this server has no `closed` Promise")),
        }
    }

    /// Shuts down gracefully: new connections are refused (`503`) while the open ones are still
    /// served — a client can still answer a permission request or cancel its turn — until every
    /// request in flight (a running turn's `session/prompt` included) is answered or
    /// `shutdownGraceMs` has passed; then every connection is hung up (each closes its sessions,
    /// as at the end of stdio). Resolves when all of them have ended; every call resolves alike.
    /// Rejects with `ERR_ACP_IO` if the server failed while stopping.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn shutdown<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, ()>> {
        let (deferred, promise) = settle::deferred(env).map_err(recode)?;
        let shared = self.shared.clone();
        shared.stop.cancel();
        napi::bindgen_prelude::spawn(async move {
            let mut done = shared.done.subscribe();
            let outcome = done.wait_for(Option::is_some).await.map(|o| o.clone()).ok().flatten();
            deferred.settle(move |env| match outcome {
                Some(Err(message)) => Err(rejection(env, Code::Io, message)),
                _ => js(env, ()),
            });
        });
        Ok(promise)
    }
}

impl ObjectFinalize for RemoteServer {
    fn finalize(self, env: Env) -> napi::Result<()> {
        match self.closed {
            Some(closed) => closed.unref(&env),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_plain_and_absolute() {
        for ok in ["/acp", "/", "/v1/acp", "/a-b_c.d~e"] {
            assert!(check_path(ok).is_ok(), "{ok}");
        }
        for bad in ["acp", "", "/a b", "/a?b", "/a#b", "/{id}", "/*rest", "/a//b", "/:id"] {
            assert!(check_path(bad).is_err(), "{bad}");
        }
    }
}
