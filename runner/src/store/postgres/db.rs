//! The connection pool, and how a database call fails: every call is bounded by a timeout, a
//! connection that broke or timed out is thrown away (never handed out again), and a failure is a
//! [`StoreError`] of the right kind, naming the server (and the TLS asked of it) without its
//! password.

use std::error::Error as _;
use std::fmt::Write as _;
use std::time::Duration;

use deadpool_postgres::{ClientWrapper, Manager, ManagerConfig, Object, Pool, PoolError, RecyclingMethod, Runtime};
use futures::future::BoxFuture;
use tokio_postgres::error::SqlState;
use tokio_postgres::{Config, NoTls};

use super::local_socket;
use super::ssl_params::take_ssl_params;
use super::tls::{Connector, Tls};
use crate::store::StoreError;

/// A pool of connections to one database.
pub(crate) struct Db {
    pool: Pool,
    timeout: Duration,
    /// Which server and database, for messages (no password).
    target: String,
}

impl std::fmt::Debug for Db {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Db").field("target", &self.target).finish_non_exhaustive()
    }
}

/// A database call: runs on one connection; its future borrows it.
pub(crate) type Call<'c, T> = BoxFuture<'c, Result<T, tokio_postgres::Error>>;

impl Db {
    /// A pool of at most `size` connections to the database at `url` (a `postgres://` URL or a
    /// `key=value` connection string; TLS as its `sslmode` and `sslrootcert` ask, see `tls`).
    /// Connects lazily: the first call opens the first connection; the roots' file is read here.
    pub(crate) fn new(url: &str, size: usize, timeout: Duration) -> Result<Self, StoreError> {
        let invalid = |e: String| StoreError::new(format!("invalid PostgreSQL URL: {e}"));
        let (url, params) = take_ssl_params(url).map_err(invalid)?;
        let tls = Tls::from_params(params).map_err(invalid)?;
        let mut config: Config = url
            .parse()
            .map_err(|e: tokio_postgres::Error| StoreError::new(format!("invalid PostgreSQL URL: {}", chain(&e))))?;
        if config.get_hosts().is_empty() && config.get_hostaddrs().is_empty() {
            default_host(&mut config);
        }
        tls.configure(&mut config);
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(timeout);
        }
        if config.get_application_name().is_none() {
            config.application_name("acp-facade");
        }
        let target = format!("{} {tls}", describe(&config));
        let connector = tls.connector().map_err(|e| StoreError::new(format!("PostgreSQL TLS for {target}: {e}")))?;
        let manager_config = ManagerConfig { recycling_method: RecyclingMethod::Fast };
        let manager = match connector {
            Connector::Plain => Manager::from_config(config, NoTls, manager_config),
            Connector::Rustls(connector) => Manager::from_config(config, connector, manager_config),
        };
        let pool = Pool::builder(manager)
            .max_size(size.max(1))
            .runtime(Runtime::Tokio1)
            .wait_timeout(Some(timeout))
            .create_timeout(Some(timeout))
            .recycle_timeout(Some(timeout))
            .build()
            .map_err(|e| StoreError::new(format!("PostgreSQL pool for {target}: {e}")))?;
        Ok(Self { pool, timeout, target })
    }

    /// The server and database, for messages.
    pub(crate) fn target(&self) -> &str {
        &self.target
    }

    /// Runs `call` on a pooled connection, within the timeout. When it fails because the
    /// connection broke (a database restart drops every connection) or did not answer, the
    /// connection is thrown away and `call` runs once more on a fresh one: every call of the
    /// store is idempotent (see the module doc of `postgres`). `what` names the call in errors;
    /// `env` is what the call reads (its future may borrow it as long as the connection).
    pub(crate) async fn run<E: Sync + ?Sized, T>(
        &self,
        what: &str,
        env: &E,
        mut call: impl for<'c> FnMut(&'c mut ClientWrapper, &'c E) -> Call<'c, T>,
    ) -> Result<T, StoreError> {
        match self.attempt(what, env, &mut call).await {
            Err(Failure::Broken(_)) => self.attempt(what, env, &mut call).await.map_err(Failure::into_error),
            outcome => outcome.map_err(Failure::into_error),
        }
    }

    async fn attempt<E: Sync + ?Sized, T>(
        &self,
        what: &str,
        env: &E,
        call: &mut impl for<'c> FnMut(&'c mut ClientWrapper, &'c E) -> Call<'c, T>,
    ) -> Result<T, Failure> {
        let mut client = self.pool.get().await.map_err(|e| Failure::Unreachable(self.pool_error(what, &e)))?;
        match tokio::time::timeout(self.timeout, call(&mut client, env)).await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(e)) if is_connection_failure(&e) => {
                drop(Object::take(client));
                Err(Failure::Broken(StoreError::unavailable(format!("{what}: {} ({})", chain(&e), self.target))))
            }
            Ok(Err(e)) => Err(Failure::Failed(StoreError::new(format!("{what}: {}", chain(&e))))),
            Err(_) => {
                drop(Object::take(client));
                Err(Failure::Broken(StoreError::unavailable(format!(
                    "{what}: PostgreSQL ({}) did not answer within {:?}",
                    self.target, self.timeout
                ))))
            }
        }
    }

    fn pool_error(&self, what: &str, e: &PoolError) -> StoreError {
        let target = &self.target;
        match e {
            PoolError::Backend(e) if !is_connection_failure(e) => {
                StoreError::new(format!("{what}: cannot use PostgreSQL ({target}): {}", chain(e)))
            }
            PoolError::Backend(e) => {
                StoreError::unavailable(format!("{what}: cannot connect to PostgreSQL ({target}): {}", chain(e)))
            }
            PoolError::Timeout(_) => StoreError::unavailable(format!(
                "{what}: no connection to PostgreSQL ({target}) within {:?}",
                self.timeout
            )),
            other => StoreError::unavailable(format!("{what}: PostgreSQL ({target}): {other}")),
        }
    }
}

/// Why one attempt failed.
enum Failure {
    /// No connection could be had: trying again at once would fail the same way.
    Unreachable(StoreError),
    /// The connection broke or timed out (and was thrown away): worth one more attempt.
    Broken(StoreError),
    /// The database answered with an error.
    Failed(StoreError),
}

impl Failure {
    fn into_error(self) -> StoreError {
        match self {
            Self::Unreachable(e) | Self::Broken(e) | Self::Failed(e) => e,
        }
    }
}

/// Whether `e` means the connection (or the server) is gone rather than the statement wrong:
/// a closed connection, an I/O or protocol failure, a timeout, or the server's own "connection
/// exception" (`08…`), "operator intervention" (`57…`: shutting down, crash recovery) and "cannot
/// connect now" answers.
fn is_connection_failure(e: &tokio_postgres::Error) -> bool {
    match e.code() {
        Some(code) => {
            let code = code.code();
            code.starts_with("08") || code.starts_with("57") || *code == *SqlState::TOO_MANY_CONNECTIONS.code()
        }
        // Not the server's answer: the connection closed, or reading, writing, connecting or
        // waiting failed (the crate's error kinds are not public: its fixed texts tell them).
        None => {
            e.is_closed()
                || e.source().is_some_and(<dyn std::error::Error>::is::<std::io::Error>)
                || matches!(
                    e.to_string().as_str(),
                    "error communicating with the server"
                        | "error connecting to server"
                        | "timeout waiting for server"
                        | "unexpected message from server"
                        | "error parsing response from server"
                )
        }
    }
}

/// An error with its causes, `outer: inner: …`.
pub(crate) fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        let _ = write!(text, ": {cause}");
        source = cause.source();
    }
    text
}

/// The server of a URL that names none (`postgres:///dbname`), as libpq finds it: `$PGHOST`, else
/// the local socket directory of Debian's packages when it exists, else `localhost`.
fn default_host(config: &mut Config) {
    if let Ok(host) = std::env::var("PGHOST")
        && !host.is_empty()
    {
        config.host(&host);
    } else if !local_socket::local_socket(config) {
        config.host("localhost");
    }
}

/// `host=… port=… dbname=… user=…`, as the URL gave them (never the password).
fn describe(config: &Config) -> String {
    let hosts: Vec<String> = config.get_hosts().iter().map(local_socket::host_name).collect();
    let mut text = String::new();
    let _ = write!(text, "host={}", if hosts.is_empty() { "localhost".to_owned() } else { hosts.join(",") });
    if !config.get_ports().is_empty() {
        let ports: Vec<String> = config.get_ports().iter().map(u16::to_string).collect();
        let _ = write!(text, " port={}", ports.join(","));
    }
    if let Some(dbname) = config.get_dbname() {
        let _ = write!(text, " dbname={dbname}");
    }
    if let Some(user) = config.get_user() {
        let _ = write!(text, " user={user}");
    }
    text
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tokio_postgres::Config;

    use crate::store::postgres::db::{Db, describe};

    #[test]
    fn targets_are_described_without_passwords() {
        let config: Config = "postgres://alice:s3cret@db.example:6543/sessions".parse().expect("url");
        assert_eq!(describe(&config), "host=db.example port=6543 dbname=sessions user=alice");
        let config: Config = "postgres://acp@/postgres?host=/tmp/sock".parse().expect("socket url");
        assert_eq!(describe(&config), "host=/tmp/sock dbname=postgres user=acp");
        let db = Db::new("postgres:///sessions", 1, Duration::from_secs(1)).expect("no host: a default one");
        assert!(db.target().starts_with("host=") && db.target().contains(" dbname=sessions"), "{}", db.target());
        let db = Db::new("postgres://alice:s3cret@db.example/x?sslmode=verify-full", 1, Duration::from_secs(1))
            .expect("verify-full");
        assert_eq!(db.target(), "host=db.example port=5432 dbname=x user=alice sslmode=verify-full");
        let err = Db::new("mysql://nope", 1, Duration::from_secs(1)).expect_err("not postgres");
        assert!(err.message().starts_with("invalid PostgreSQL URL"), "{err}");
        let err = Db::new("postgres://db.example/x?sslmode=verify", 1, Duration::from_secs(1)).expect_err("bad mode");
        assert!(err.message().starts_with("invalid PostgreSQL URL: sslmode \"verify\" is not one of"), "{err}");
        let err = Db::new("host=db.example sslmode=verify-ca sslrootcert=/nonexistent.pem", 1, Duration::from_secs(1))
            .expect_err("no roots file");
        assert!(err.message().contains("sslrootcert /nonexistent.pem: not a readable PEM file"), "{err}");
    }
}
