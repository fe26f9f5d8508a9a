//! The stores the store and runner tests run against, from one list: `SQLite` (a file, and
//! `:memory:`), `PostgreSQL`, and the in-memory store where a test is about the runner alone.
//!
//! `PostgreSQL` is the server named by `ACP_FACADE_TEST_POSTGRES_URL` (scripts/test starts one and
//! sets it); each database family gets a schema of its own (`search_path`), so tests never see
//! each other's sessions. Without the variable the `PostgreSQL` cases are not run and every test
//! that would have run them is announced once on stderr — unless `ACP_FACADE_TEST_POSTGRES_REQUIRED=1`
//! (scripts/test sets it too), which makes its absence a failure.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use acp_facade_runner::{PostgresOptions, PostgresStore, SqliteStore, Store};

/// The variable naming the `PostgreSQL` server of the tests.
pub const URL_VAR: &str = "ACP_FACADE_TEST_POSTGRES_URL";
/// Set to `1` when the `PostgreSQL` cases must run.
pub const REQUIRED_VAR: &str = "ACP_FACADE_TEST_POSTGRES_REQUIRED";

/// The test server's URL, or `None` (announced on stderr; a failure when required).
pub fn postgres_base_url() -> Option<String> {
    static ANNOUNCED: std::sync::Once = std::sync::Once::new();
    match std::env::var(URL_VAR) {
        Ok(url) if !url.is_empty() => Some(url),
        _ => {
            assert!(
                std::env::var(REQUIRED_VAR).as_deref() != Ok("1"),
                "{REQUIRED_VAR}=1 but {URL_VAR} is not set: the PostgreSQL store tests cannot run"
            );
            // Once per test binary, past the test harness's capture of `eprintln!`.
            ANNOUNCED.call_once(|| {
                let _ = std::io::Write::write_all(
                    &mut std::io::stderr(),
                    format!(
                        "\n!! {URL_VAR} is not set: the store and runner tests run WITHOUT the PostgreSQL store \
                         (scripts/test starts a server and sets it; see scripts/lib/postgres.sh)\n\n"
                    )
                    .as_bytes(),
                );
            });
            None
        }
    }
}

/// A URL for a new, empty schema on the test server (`None` without one); every store opened on
/// it shares that schema's sessions.
pub async fn postgres_url() -> Option<String> {
    let base = postgres_base_url()?;
    let schema = new_schema(&base).await;
    Some(with_search_path(&base, &schema))
}

/// The test server over TCP, where it serves TLS: its URL (`postgres://acp@localhost:PORT/postgres`,
/// no `sslmode`) with a new, empty schema in `search_path`, and the PEM file of the root that
/// signed its certificate (for `localhost` and `127.0.0.1` only). `None` without a test server;
/// a server started without them fails (scripts/lib/postgres.sh sets both).
pub async fn postgres_tls() -> Option<(String, String)> {
    let base = postgres_base_url()?;
    let var = |name: &str| match std::env::var(name) {
        Ok(value) if !value.is_empty() => value,
        _ => panic!("{URL_VAR} is set but {name} is not: start the server with scripts/lib/postgres.sh"),
    };
    let (tcp, root_cert) = (var(TCP_URL_VAR), var(ROOT_CERT_VAR));
    let schema = new_schema(&base).await;
    Some((with_search_path(&tcp, &schema), root_cert))
}

/// The variable naming the test server over TCP.
pub const TCP_URL_VAR: &str = "ACP_FACADE_TEST_POSTGRES_TCP_URL";
/// The variable naming the PEM file of the root of the test server's certificate.
pub const ROOT_CERT_VAR: &str = "ACP_FACADE_TEST_POSTGRES_ROOT_CERT";

/// Creates a new, empty schema on the server at `base` (dropping those earlier runs left there);
/// returns its name.
async fn new_schema(base: &str) -> String {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_secs();
    let schema = unique_schema_name();
    let (client, connection) = tokio_postgres::connect(base, tokio_postgres::NoTls)
        .await
        .unwrap_or_else(|e| panic!("cannot connect to the test PostgreSQL at {base}: {e}"));
    let connection = tokio::spawn(connection);
    // Schemas left by earlier runs on a long-lived server: gone after an hour.
    let old: Vec<String> = client
        .query("SELECT nspname FROM pg_namespace WHERE nspname LIKE 'acp\\_test\\_%'", &[])
        .await
        .expect("list test schemas")
        .iter()
        .map(|row| row.get::<_, String>(0))
        .filter(|name| name.split('_').nth(2).and_then(|t| t.parse::<u64>().ok()).is_some_and(|t| t + 3600 < now))
        .collect();
    for name in old {
        let _ = client.batch_execute(&format!("DROP SCHEMA IF EXISTS {name} CASCADE")).await;
    }
    client.batch_execute(&format!("CREATE SCHEMA {schema}")).await.expect("create a test schema");
    drop(client);
    let _ = connection.await;
    schema
}

/// A schema name no other test uses, `acp_test_SECONDS_PID_N` (a schema of that form is dropped
/// once it is an hour old).
pub fn unique_schema_name() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_secs();
    format!("acp_test_{now}_{}_{}", std::process::id(), COUNTER.fetch_add(1, Ordering::Relaxed))
}

/// `base` (a URL of the test server) with `search_path` set to `schema`, as a user writes it.
pub fn with_search_path(base: &str, schema: &str) -> String {
    let separator = if base.contains('?') { '&' } else { '?' };
    format!("{base}{separator}options=-c%20search_path%3D{schema}")
}

/// A `PostgreSQL` store on `url` for tests: a short lease, so that takeovers after a "crash" take a
/// second, not ten.
pub async fn open_postgres(url: &str) -> PostgresStore {
    PostgresStore::connect_with(url, PostgresOptions::default().lease(Duration::from_secs(1)))
        .await
        .unwrap_or_else(|e| panic!("cannot open the PostgreSQL store: {e}"))
}

/// One database that several stores (as several processes would) can open.
pub enum Database {
    /// An `SQLite` file in a temporary directory.
    Sqlite(TempDir),
    /// A `PostgreSQL` schema.
    Postgres(String),
}

impl Database {
    /// Every kind of shared database: an `SQLite` file, and `PostgreSQL` when configured.
    pub async fn all() -> Vec<Self> {
        let mut all = vec![Self::Sqlite(TempDir::new("store"))];
        if let Some(url) = postgres_url().await {
            all.push(Self::Postgres(url));
        }
        all
    }

    /// `sqlite` or `postgres`, for messages.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Sqlite(_) => "sqlite",
            Self::Postgres(_) => "postgres",
        }
    }

    /// Whether a session has one owner process at a time (see the `Store` trait's Ownership).
    pub fn has_owners(&self) -> bool {
        matches!(self, Self::Postgres(_))
    }

    /// A new store on this database (another connection, as another process would open).
    pub async fn open(&self) -> Arc<dyn Store> {
        match self {
            Self::Sqlite(dir) => Arc::new(SqliteStore::open(dir.path().join("sessions.db")).expect("open sqlite")),
            Self::Postgres(url) => Arc::new(open_postgres(url).await),
        }
    }
}

/// The stores every runner test runs against, each on a database of its own: the in-memory
/// store, `SQLite` in memory, and `PostgreSQL` when configured.
pub async fn runner_stores() -> Vec<(&'static str, Arc<dyn Store>)> {
    let mut stores: Vec<(&'static str, Arc<dyn Store>)> = vec![
        ("memory", Arc::new(acp_facade_runner::MemoryStore::new())),
        ("sqlite", Arc::new(SqliteStore::open(":memory:").expect("open sqlite :memory:"))),
    ];
    if let Some(url) = postgres_url().await {
        stores.push(("postgres", Arc::new(open_postgres(&url).await)));
    }
    stores
}

/// A unique directory under the system temp dir, removed on drop.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(what: &str) -> Self {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos();
        let dir = std::env::temp_dir().join(format!(
            "acp-facade-{what}-{}-{nanos}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).expect("create temp dir");
        Self(dir)
    }

    pub fn path(&self) -> &std::path::Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A plain connection to the test database at `url` (for what the tests do behind the store's
/// back: expire a lease, corrupt a row).
pub async fn raw_client(url: &str) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls).await.expect("connect");
    tokio::spawn(connection);
    client
}

/// A `PostgreSQL` store on `url` with this lease.
pub async fn open_postgres_with_lease(url: &str, lease: Duration) -> PostgresStore {
    PostgresStore::connect_with(url, PostgresOptions::default().lease(lease))
        .await
        .unwrap_or_else(|e| panic!("cannot open the PostgreSQL store: {e}"))
}
