//! TLS to the server, as the connection string's `sslmode` and `sslrootcert` ask, with libpq's
//! meanings, by rustls (the `ring` provider; TLS 1.2 and 1.3; ALPN `postgresql`).
//!
//! | `sslmode` | TLS | the server's certificate |
//! |---|---|---|
//! | `disable` | never | — |
//! | `prefer` (the default) | when the server offers it, else none | not checked (checked as by `verify-ca` when `sslrootcert` names a file) |
//! | `require` | always | not checked (checked as by `verify-ca` when `sslrootcert` names a file, as libpq does) |
//! | `verify-ca` | always | its chain, up to a root of `sslrootcert` |
//! | `verify-full` | always | its chain, and that it names the host of the connection string |
//!
//! Invariants:
//! - Roots are `sslrootcert`'s file (PEM, one or more certificates), or without it (or with
//!   `sslrootcert=system`) the Mozilla roots built in from `webpki-roots` — the same wherever the
//!   process runs, no system store read. `sslrootcert=system` asks for `verify-full` (the default
//!   mode then) and refuses a weaker one, as libpq does. The file is read when the store is
//!   opened: one that cannot be read or holds no usable certificate fails the opening, naming it.
//! - A mode or value outside these is refused, naming the parameter; `allow` (plain first, TLS
//!   only when the server insists) is refused too: use `prefer` or `disable`.
//! - No TLS over a Unix socket, whatever the mode (as libpq: the server offers none there), when
//!   every host of the connection string is a socket.
//! - The name checked by `verify-full` is the `host` of the connection string, also when
//!   `hostaddr` says which address to reach.
//! - Unlike libpq, `prefer` does not retry without TLS after a failed handshake.

use std::fmt;
use std::sync::Arc;

use tokio_postgres::Config;
use tokio_postgres::config::{Host, SslMode};
use tokio_postgres_rustls::MakeRustlsConnect;
use tokio_rustls::rustls::client::WebPkiServerVerifier;
use tokio_rustls::rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use tokio_rustls::rustls::crypto::{CryptoProvider, verify_tls12_signature, verify_tls13_signature};
use tokio_rustls::rustls::pki_types::pem::PemObject as _;
use tokio_rustls::rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use tokio_rustls::rustls::{
    self, CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};

use super::ssl_params::{SSLMODE, SSLROOTCERT, SslParams};

/// How much TLS a connection asks for: libpq's `sslmode` values this store supports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    Disable,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

impl Mode {
    fn parse(value: &str) -> Result<Self, String> {
        Ok(match value {
            "disable" => Self::Disable,
            "prefer" => Self::Prefer,
            "require" => Self::Require,
            "verify-ca" => Self::VerifyCa,
            "verify-full" => Self::VerifyFull,
            "allow" => {
                return Err(format!(
                    "{SSLMODE} \"allow\" (plain first, TLS only when the server insists) is not supported: use \
                     \"prefer\" or \"disable\""
                ));
            }
            other => {
                return Err(format!(
                    "{SSLMODE} \"{}\" is not one of disable, prefer, require, verify-ca, verify-full",
                    other.escape_debug()
                ));
            }
        })
    }

    fn name(self) -> &'static str {
        match self {
            Self::Disable => "disable",
            Self::Prefer => "prefer",
            Self::Require => "require",
            Self::VerifyCa => "verify-ca",
            Self::VerifyFull => "verify-full",
        }
    }
}

/// Where the roots that certificates are checked against come from.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Roots {
    /// The Mozilla roots of `webpki-roots` (no `sslrootcert`, or `sslrootcert=system`).
    BuiltIn,
    /// The PEM file `sslrootcert` names.
    File(String),
}

/// The TLS a connection string asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Tls {
    mode: Mode,
    roots: Roots,
}

impl fmt::Display for Tls {
    /// `sslmode=… [sslrootcert=…]`, for messages.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{SSLMODE}={}", self.mode.name())?;
        if let Roots::File(path) = &self.roots {
            write!(f, " {SSLROOTCERT}={path}")?;
        }
        Ok(())
    }
}

/// What connects a pool's connections: no TLS, or rustls.
pub(crate) enum Connector {
    /// `sslmode=disable`.
    Plain,
    /// Every other mode.
    Rustls(MakeRustlsConnect),
}

impl Tls {
    /// The TLS of these parameters; an error names the parameter that is wrong.
    pub(crate) fn from_params(params: SslParams) -> Result<Self, String> {
        let system = params.root_cert.as_deref() == Some("system");
        let mode = match params.mode.as_deref().map(Mode::parse).transpose()? {
            Some(mode) => mode,
            None if system => Mode::VerifyFull,
            None => Mode::Prefer,
        };
        if system && mode != Mode::VerifyFull {
            return Err(format!(
                "{SSLROOTCERT}=system needs {SSLMODE}=verify-full, not the weaker \"{}\"",
                mode.name()
            ));
        }
        let roots = match params.root_cert {
            Some(path) if path.is_empty() => return Err(format!("{SSLROOTCERT} is empty: name a PEM file")),
            Some(path) if !system => Roots::File(path),
            _ => Roots::BuiltIn,
        };
        Ok(Self { mode, roots })
    }

    /// Tells `config` (parsed from the connection string without its TLS parameters) whether to
    /// ask the server for TLS, and how firmly.
    pub(crate) fn configure(&self, config: &mut Config) {
        let only_sockets = config.get_hostaddrs().is_empty()
            && !config.get_hosts().is_empty()
            && config.get_hosts().iter().all(|host| !matches!(host, Host::Tcp(_)));
        config.ssl_mode(match self.mode {
            _ if only_sockets => SslMode::Disable,
            Mode::Disable => SslMode::Disable,
            Mode::Prefer => SslMode::Prefer,
            Mode::Require | Mode::VerifyCa | Mode::VerifyFull => SslMode::Require,
        });
    }

    /// The connector of this mode; reads the roots' file. An error names the file and what is
    /// wrong with it.
    pub(crate) fn connector(&self) -> Result<Connector, String> {
        if self.mode == Mode::Disable {
            return Ok(Connector::Plain);
        }
        // ring rather than aws-lc-rs, as for the remote transports: no C toolchain, a smaller
        // binary; ring has no post-quantum key exchange, hence rustls's deprecation note.
        #[expect(deprecated, reason = "ring is chosen for its build; it lacks post-quantum key exchange")]
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let check = match (self.mode, &self.roots) {
            (Mode::VerifyFull, _) => Check::Full,
            (Mode::VerifyCa, _) | (Mode::Prefer | Mode::Require, Roots::File(_)) => Check::Chain,
            _ => Check::Nothing,
        };
        let verifier: Arc<dyn ServerCertVerifier> = match check {
            Check::Nothing => Arc::new(AnyCertificate(Arc::clone(&provider))),
            Check::Chain | Check::Full => {
                let webpki =
                    WebPkiServerVerifier::builder_with_provider(Arc::new(self.roots()?), Arc::clone(&provider))
                        .build()
                        .map_err(|e| format!("{SSLROOTCERT}: no usable root certificate ({e})"))?;
                if check == Check::Full { webpki } else { Arc::new(ChainOnly(webpki)) }
            }
        };
        let mut config = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| format!("TLS: {e}"))?
            .dangerous()
            .with_custom_certificate_verifier(verifier)
            .with_no_client_auth();
        // What PostgreSQL 17 requires of a direct TLS connection (`sslnegotiation=direct`); older
        // servers ignore it.
        config.alpn_protocols = vec![b"postgresql".to_vec()];
        Ok(Connector::Rustls(MakeRustlsConnect::new(config)))
    }

    fn roots(&self) -> Result<RootCertStore, String> {
        let path = match &self.roots {
            Roots::BuiltIn => return Ok(RootCertStore { roots: webpki_roots::TLS_SERVER_ROOTS.to_vec() }),
            Roots::File(path) => path,
        };
        let certificates = CertificateDer::pem_file_iter(path)
            .and_then(Iterator::collect::<Result<Vec<_>, _>>)
            .map_err(|e| format!("{SSLROOTCERT} {path}: not a readable PEM file of certificates ({e})"))?;
        if certificates.is_empty() {
            return Err(format!("{SSLROOTCERT} {path}: no PEM certificate in it"));
        }
        let mut roots = RootCertStore::empty();
        for (n, certificate) in certificates.into_iter().enumerate() {
            roots
                .add(certificate)
                .map_err(|e| format!("{SSLROOTCERT} {path}: certificate {} is not usable as a root ({e})", n + 1))?;
        }
        Ok(roots)
    }
}

/// How much of the server's certificate is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Check {
    Nothing,
    Chain,
    Full,
}

/// `require` and `prefer` without roots: any certificate, but the handshake's signatures are still
/// verified (against the certificate presented), so the connection is encrypted to whoever holds
/// its key.
#[derive(Debug)]
struct AnyCertificate(Arc<CryptoProvider>);

impl ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// `verify-ca`: the certificate's chain up to a root, its validity and usage, as for
/// `verify-full`, but not the name it is for (webpki checks that last, after the chain).
#[derive(Debug)]
struct ChainOnly(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self.0.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now) {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

#[cfg(test)]
mod tests {
    use tokio_postgres::Config;
    use tokio_postgres::config::SslMode;

    use super::{Connector, Mode, Roots, Tls};
    use crate::store::postgres::ssl_params::SslParams;

    fn tls(mode: Option<&str>, root_cert: Option<&str>) -> Result<Tls, String> {
        Tls::from_params(SslParams { mode: mode.map(str::to_owned), root_cert: root_cert.map(str::to_owned) })
    }

    #[test]
    fn modes_follow_libpq() {
        assert_eq!(tls(None, None).expect("default").mode, Mode::Prefer);
        assert_eq!(tls(Some("verify-ca"), Some("/r.pem")).expect("ca").roots, Roots::File("/r.pem".into()));
        // `system`: the built-in roots, verify-full by default and at least.
        let system = tls(None, Some("system")).expect("system");
        assert_eq!((system.mode, system.roots), (Mode::VerifyFull, Roots::BuiltIn));
        let err = tls(Some("require"), Some("system")).expect_err("weak");
        assert!(err.contains("sslrootcert=system") && err.contains("\"require\""), "{err}");
        let err = tls(Some("verify_full"), None).expect_err("misspelt");
        assert!(err.starts_with("sslmode \"verify_full\" is not one of"), "{err}");
        let err = tls(Some("allow"), None).expect_err("allow");
        assert!(err.starts_with("sslmode \"allow\""), "{err}");
        assert!(tls(Some("require"), Some("")).expect_err("empty").starts_with("sslrootcert is empty"));
        assert_eq!(
            tls(Some("verify-full"), Some("/r.pem")).expect("full").to_string(),
            "sslmode=verify-full sslrootcert=/r.pem"
        );
    }

    #[test]
    fn no_tls_is_asked_over_unix_sockets() {
        let full = tls(Some("verify-full"), None).expect("full");
        let mut config: Config = "host=/run/postgresql".parse().expect("socket");
        full.configure(&mut config);
        assert_eq!(config.get_ssl_mode(), SslMode::Disable);
        let mut config: Config = "host=db.example".parse().expect("tcp");
        full.configure(&mut config);
        assert_eq!(config.get_ssl_mode(), SslMode::Require);
        let mut config: Config = "host=db.example".parse().expect("tcp");
        tls(None, None).expect("prefer").configure(&mut config);
        assert_eq!(config.get_ssl_mode(), SslMode::Prefer);
    }

    #[test]
    fn a_roots_file_that_cannot_be_used_is_named() {
        let err =
            tls(Some("verify-ca"), Some("/nonexistent/root.pem")).expect("mode").connector().err().expect("no file");
        assert!(err.starts_with("sslrootcert /nonexistent/root.pem: not a readable PEM file"), "{err}");
        let empty = std::env::temp_dir().join(format!("acp-facade-empty-root-{}.pem", std::process::id()));
        std::fs::write(&empty, "no certificate here\n").expect("write");
        let err = tls(Some("verify-full"), empty.to_str()).expect("mode").connector().err().expect("empty");
        let _ = std::fs::remove_file(&empty);
        assert!(err.ends_with("no PEM certificate in it"), "{err}");
        // The built-in roots need no file.
        assert!(matches!(tls(Some("verify-full"), None).expect("mode").connector(), Ok(Connector::Rustls(_))));
        assert!(matches!(tls(Some("disable"), None).expect("mode").connector(), Ok(Connector::Plain)));
    }
}
