//! `--listen`: the demo served remotely (Streamable HTTP and WebSocket at `/acp`), with its
//! `--token` and `--allow-origin` rules, over TLS with `--tls-cert` and `--tls-key` (feature
//! `tls`), until SIGTERM (or Ctrl-C; on Windows, Ctrl-C or closing the console) shuts it down
//! gracefully.

use std::collections::HashMap;
use std::io::Write as _;
use std::net::{SocketAddr, ToSocketAddrs as _};
use std::path::PathBuf;
use std::sync::Arc;

use acp_facade::Options;
use acp_facade::remote::{RemoteConfig, TokenVerifier, serve_http};

use crate::shutdown::Shutdown;

/// Where and under which rules to serve.
pub(crate) struct Listen {
    addr: SocketAddr,
    /// Secret → principal name.
    tokens: HashMap<String, String>,
    origins: Vec<String>,
    /// The PEM certificate chain and private key to serve TLS with.
    #[cfg_attr(not(feature = "tls"), expect(dead_code, reason = "refused in `new` without the feature"))]
    tls: Option<(PathBuf, PathBuf)>,
}

/// `NAME:SECRET`, both non-empty.
pub(crate) fn parse_token(value: &str) -> Result<(String, String), String> {
    match value.split_once(':') {
        Some((name, secret)) if !name.is_empty() && !secret.is_empty() => Ok((name.to_owned(), secret.to_owned())),
        _ => Err(format!("--token must be NAME:SECRET, got {value:?}")),
    }
}

impl Listen {
    /// `HOST:PORT` resolved (its first address), refused when it is not loopback and no token is
    /// given: an agent open to the network must know who calls it.
    /// A certificate and key (`tls`) need a build with the feature `tls`.
    pub(crate) fn new(
        listen: &str,
        tokens: Vec<(String, String)>,
        origins: Vec<String>,
        tls: Option<(PathBuf, PathBuf)>,
    ) -> Result<Self, String> {
        if cfg!(not(feature = "tls")) && tls.is_some() {
            return Err("--tls-cert: this build of the demo has no TLS (cargo feature `tls`)".to_owned());
        }
        let addr = listen
            .to_socket_addrs()
            .ok()
            .and_then(|mut addrs| addrs.next())
            .ok_or_else(|| format!("--listen must be HOST:PORT, got {listen:?}"))?;
        if !addr.ip().is_loopback() && tokens.is_empty() {
            return Err(format!("--listen {listen} is not a loopback address: give at least one --token"));
        }
        let tokens = tokens.into_iter().map(|(name, secret)| (secret, name)).collect();
        Ok(Self { addr, tokens, origins, tls })
    }
}

/// The demo's bound of connections open at once: above the library's default (1024), so that one
/// process can be measured holding ten thousand idle ones (scripts/bench remote); the process's
/// limit of open files bounds it too.
const MAX_CONNECTIONS: usize = 16_384;

/// Serves until asked to stop (SIGTERM or Ctrl-C; see `shutdown.rs`), then shuts down gracefully.
pub(crate) async fn serve(options: Options, listen: Listen) -> std::io::Result<()> {
    let mut config = RemoteConfig::new(listen.addr).max_connections(MAX_CONNECTIONS);
    if !listen.tokens.is_empty() {
        let tokens = Arc::new(listen.tokens);
        let verifier: TokenVerifier = Arc::new(move |token: &str| {
            let name = tokens.get(token).cloned();
            Box::pin(async move { name })
        });
        config = config.token_verifier(verifier);
    }
    for origin in listen.origins {
        config = config.allow_origin(origin);
    }
    #[cfg(feature = "tls")]
    if let Some((cert, key)) = listen.tls {
        config = config.tls(cert, key);
    }
    let server = serve_http(options, config).await?;
    let _ = writeln!(std::io::stderr().lock(), "listening on {}", server.url());
    Shutdown::install()?.requested().await;
    tracing::info!("shutting down");
    server.shutdown().await
}
