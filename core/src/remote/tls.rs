//! HTTPS and WSS (feature `remote-tls`): the certificate chain and key of
//! [`RemoteConfig::tls`](super::RemoteConfig::tls) loaded into a rustls server configuration
//! (ring; TLS 1.2 and 1.3; ALPN `h2` then `http/1.1`), and a listener whose connections are
//! served once their handshake is done.
//!
//! Invariants: a certificate chain or key that cannot be used is refused when the server starts
//! (`InvalidInput` naming the file and what was wrong), never when a client connects; a handshake
//! runs in its own task with a time limit, so a client that stalls its handshake holds up no
//! other; every TCP connection is wrapped in the stall guard (see `socket`) under its TLS.

use std::io;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_rustls::rustls::pki_types::pem::PemObject as _;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::{self, ServerConfig};
use tokio_rustls::server::TlsStream;

use super::socket::{StallGuard, accept_failed, accepted};

/// How long a client may take over its TLS handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// An `InvalidInput` error about `path`.
fn invalid(path: &Path, what: impl std::fmt::Display) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, format!("{}: {what}", path.display()))
}

/// The server configuration of the PEM certificate chain at `cert_chain` and the PEM private key
/// at `private_key`.
pub(crate) fn server_config(cert_chain: &Path, private_key: &Path) -> io::Result<Arc<ServerConfig>> {
    let certificates = CertificateDer::pem_file_iter(cert_chain)
        .and_then(Iterator::collect::<Result<Vec<_>, _>>)
        .map_err(|e| invalid(cert_chain, format_args!("not a readable PEM certificate chain ({e})")))?;
    if certificates.is_empty() {
        return Err(invalid(cert_chain, "no PEM certificate in it"));
    }
    let key = PrivateKeyDer::from_pem_file(private_key)
        .map_err(|e| invalid(private_key, format_args!("not a readable PEM private key ({e})")))?;
    // ring rather than aws-lc-rs: no C toolchain and a smaller binary; ring has no post-quantum
    // key exchange, hence rustls's deprecation note.
    #[expect(deprecated, reason = "ring is chosen for its build; it lacks post-quantum key exchange")]
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(io::Error::other)?
        .with_no_client_auth()
        .with_single_cert(certificates, key)
        .map_err(|e| {
            invalid(private_key, format_args!("not a key for the certificate in {} ({e})", cert_chain.display()))
        })?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// The listener given to axum when serving TLS: the connections whose handshake succeeded.
pub(crate) struct TlsListener {
    handshaken: mpsc::Receiver<(TlsStream<StallGuard<TcpStream>>, SocketAddr)>,
    local_addr: SocketAddr,
    accepting: tokio::task::JoinHandle<()>,
}

impl TlsListener {
    /// Accepts on `listener`, each connection's handshake with `config` in its own task.
    pub(crate) fn new(listener: TcpListener, config: Arc<ServerConfig>, stall: Duration) -> io::Result<Self> {
        let local_addr = listener.local_addr()?;
        let acceptor = tokio_rustls::TlsAcceptor::from(config);
        let (done, handshaken) = mpsc::channel(64);
        let accepting = tokio::spawn(async move {
            loop {
                let (stream, addr) = match listener.accept().await {
                    Ok(accepted) => accepted,
                    Err(e) => {
                        accept_failed(&e).await;
                        continue;
                    }
                };
                let acceptor = acceptor.clone();
                let done = done.clone();
                tokio::spawn(async move {
                    let handshake = acceptor.accept(StallGuard::new(accepted(stream), stall));
                    match tokio::time::timeout(HANDSHAKE_TIMEOUT, handshake).await {
                        Ok(Ok(stream)) => {
                            let _ = done.send((stream, addr)).await;
                        }
                        Ok(Err(e)) => tracing::debug!(client = %addr, error = %e, "a TLS handshake failed"),
                        Err(_) => tracing::debug!(client = %addr, "a TLS handshake took too long"),
                    }
                });
            }
        });
        Ok(Self { handshaken, local_addr, accepting })
    }
}

impl Drop for TlsListener {
    fn drop(&mut self) {
        self.accepting.abort();
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<StallGuard<TcpStream>>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.handshaken.recv().await {
            Some(accepted) => accepted,
            // The accepting task never ends while the listener lives.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        Ok(self.local_addr)
    }
}
