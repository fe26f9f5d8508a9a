//! The `PostgreSQL` store's tables, their versions, and the fleet's `session/list` cursor key.
//!
//! Invariants:
//! - `acp_meta.schema_version` is the schema version. Opening migrates an older schema forward,
//!   every step and the new version in one transaction; a schema from a newer version of this
//!   crate is refused and left untouched.
//! - Concurrent openers are safe: migrating takes a transaction-scoped advisory lock, and reads
//!   the version again under it, so exactly one opener migrates and the others see its result.
//! - The cursor key is created once, by the first opener, in the same transaction, and is the
//!   same for every process sharing the database from then on.
//! - Tables are prefixed `acp_` and unqualified: they live in the first schema of the
//!   connection's `search_path` (`public` by default), next to whatever else the database holds.
//! - That schema exists before the tables are made: when the first schema `search_path` names
//!   (URL option `options=-c search_path=myschema`) does not exist, the opener that migrates
//!   creates it (`CREATE SCHEMA IF NOT EXISTS`, the name quoted) under the migration lock, so
//!   concurrent openers never race to create it. `"$user"` counts only when that schema exists,
//!   as in `PostgreSQL` itself. A role that may not create it gets an error naming the statement
//!   to run as a role that may; nothing is created anywhere else instead.

use deadpool_postgres::ClientWrapper;
use tokio_postgres::Transaction;

use super::db::{Call, Db};
use crate::store::StoreError;

/// `MIGRATIONS[n]` upgrades schema version `n` to `n + 1`; version 0 is an empty database.
///
/// To change the schema, append a step. Never edit a step that has shipped: a database that
/// already ran it would not run it again.
pub(crate) const MIGRATIONS: &[&str] = &[V0_TO_V1, V1_TO_V2, V2_TO_V3, V3_TO_V4];

/// The schema version this code reads and writes.
#[allow(clippy::cast_possible_wrap, reason = "a handful of migrations")]
pub(crate) const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// The advisory lock that serialises migrations (any 64-bit number no other application uses:
/// the ASCII of `acp-fcd` then 1).
const MIGRATION_LOCK: i64 = 0x6163_702d_6663_6401;

/// Version 1: the owners of live sessions, the catalog, the journal, and the metadata.
const V0_TO_V1: &str = "
CREATE TABLE acp_meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
-- One row per process using the store: a session it owns is taken over only once its lease has
-- expired (expires_at <= now(), the database's clock).
CREATE TABLE acp_owners (
    id TEXT PRIMARY KEY,
    expires_at TIMESTAMPTZ NOT NULL,
    pid BIGINT NOT NULL,
    host TEXT NOT NULL,
    started_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE TABLE acp_sessions (
    id TEXT PRIMARY KEY,
    cwd TEXT NOT NULL,
    additional_directories TEXT[] NOT NULL DEFAULT '{}',
    title TEXT,
    created_at TEXT NOT NULL, -- RFC 3339 UTC
    updated_at TEXT NOT NULL, -- RFC 3339 UTC
    owner TEXT REFERENCES acp_owners (id) ON DELETE SET NULL -- NULL: nobody has it live
);
CREATE INDEX acp_sessions_by_owner ON acp_sessions (owner) WHERE owner IS NOT NULL;
-- One row per append: its events, in order, as a JSON array. n orders a session's appends.
CREATE TABLE acp_journal (
    session_id TEXT NOT NULL REFERENCES acp_sessions (id) ON DELETE CASCADE,
    n BIGINT GENERATED ALWAYS AS IDENTITY,
    first_seq BIGINT NOT NULL, -- the seq of the append's first event: a repeat is the same append
    events TEXT NOT NULL,
    PRIMARY KEY (session_id, n),
    UNIQUE (session_id, first_seq)
);
";

/// Version 2: journal entries are written in the compact form (`crate::store::entry`). The
/// tables do not change and older entries stay readable; the version tells older code, which
/// reads only the full form, to leave the database alone.
const V1_TO_V2: &str = "
COMMENT ON COLUMN acp_journal.events IS 'the events of one append, in order, as a JSON array (compact form since schema version 2)';
";

/// Version 3: each session keeps the client's system prompt (ACP `systemPrompt`, as given on
/// `session/new` or the latest `load` or `resume` that carried one), so that a session loaded
/// again — by any process of the fleet — applies it without the client sending it again.
///
/// A nullable column without a default: adding it changes only the catalog, not the rows, which
/// read NULL (no system prompt) — what every session of version 2 had. Processes of version 2
/// still running meanwhile name their columns and never read or write it.
const V2_TO_V3: &str = "
ALTER TABLE acp_sessions ADD COLUMN system_prompt TEXT;
COMMENT ON COLUMN acp_sessions.system_prompt IS 'the client''s system prompt (ACP SystemPrompt) as JSON, NULL when none';
";

/// Version 4: each session belongs to the principal of the connection that created it (NULL: none,
/// what every session of version 3 had), and `session/list` reads one page of one principal's
/// sessions through an index, in session-id byte order (`COLLATE "C"`), instead of the whole
/// catalog. Separate partial indexes serve sessions without principal (`IS NULL` is not an
/// equality an index on the column matches).
///
/// The column is nullable without a default: adding it changes only the catalog. Processes of
/// version 3 still running meanwhile name their columns and never read or write it; their new
/// sessions have no principal.
const V3_TO_V4: &str = r#"
ALTER TABLE acp_sessions ADD COLUMN principal TEXT;
COMMENT ON COLUMN acp_sessions.principal IS 'the principal of the connection that created the session, NULL when none';
CREATE INDEX acp_sessions_by_principal ON acp_sessions (principal, id COLLATE "C") WHERE principal IS NOT NULL;
CREATE INDEX acp_sessions_by_principal_cwd ON acp_sessions (principal, cwd, id COLLATE "C") WHERE principal IS NOT NULL;
CREATE INDEX acp_sessions_without_principal ON acp_sessions (id COLLATE "C") WHERE principal IS NULL;
CREATE INDEX acp_sessions_without_principal_by_cwd ON acp_sessions (cwd, id COLLATE "C") WHERE principal IS NULL;
"#;

/// Whether `acp_meta` exists in the schema tables are created in. Read from `pg_class` with the
/// statement's snapshot, not through the catalog cache (`to_regclass`): a transaction that waited
/// for the migration lock must see the tables the migrating transaction just committed, and the
/// cache of a transaction begun earlier may not have caught up with them yet.
const META_EXISTS: &str = "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_class c
     JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
     WHERE c.relname = 'acp_meta' AND n.nspname = current_schema())";

/// Brings the schema to [`SCHEMA_VERSION`] and returns the cursor key.
pub(crate) async fn prepare(db: &Db) -> Result<[u8; 32], StoreError> {
    // Up to date with a key (every open but the first): no lock, no transaction.
    if let (Some(SCHEMA_VERSION), Some(key)) = db.run("open", &(), |c, ()| read_meta(c)).await? {
        return Ok(key);
    }
    let fresh = random_key();
    db.run("migrate the schema", &fresh, |c, fresh| migrate(c, *fresh)).await?
}

/// The schema version (`None`: no schema yet) and the cursor key, as recorded.
fn read_meta(client: &mut ClientWrapper) -> Call<'_, (Option<i64>, Option<[u8; 32]>)> {
    Box::pin(async move {
        let exists: bool = client.query_one(META_EXISTS, &[]).await?.get(0);
        if !exists {
            return Ok((None, None));
        }
        let mut version = None;
        let mut key = None;
        for row in client.query("SELECT key, value FROM acp_meta", &[]).await? {
            let (name, value): (String, String) = (row.get(0), row.get(1));
            match name.as_str() {
                "schema_version" => version = value.parse().ok(),
                "cursor_key" => key = decode_key(&value),
                _ => {}
            }
        }
        Ok((version.or(Some(0)), key))
    })
}

/// Migrates under the advisory lock and makes sure the cursor key exists (`fresh` when this
/// opener creates it); the inner error refuses a schema newer than this code.
fn migrate(client: &mut ClientWrapper, fresh: [u8; 32]) -> Call<'_, Result<[u8; 32], StoreError>> {
    Box::pin(async move {
        let tx = client.transaction().await?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK]).await?;
        if let Err(e) = ensure_schema(&tx).await? {
            return Ok(Err(e));
        }
        // Read again under the lock: another opener may have migrated meanwhile.
        let from = version_in(&tx).await?;
        if from > SCHEMA_VERSION {
            return Ok(Err(StoreError::new(format!(
                "database schema version {from} is newer than this version of acp-facade supports \
                 ({SCHEMA_VERSION}); refusing to use it — upgrade acp-facade"
            ))));
        }
        for step in MIGRATIONS.iter().skip(usize::try_from(from).unwrap_or(usize::MAX)) {
            tx.batch_execute(step).await?;
        }
        tx.execute(
            "INSERT INTO acp_meta (key, value) VALUES ('schema_version', $1)
             ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
            &[&SCHEMA_VERSION.to_string()],
        )
        .await?;
        tx.execute(
            "INSERT INTO acp_meta (key, value) VALUES ('cursor_key', $1) ON CONFLICT (key) DO NOTHING",
            &[&encode_key(&fresh)],
        )
        .await?;
        let stored: String = tx.query_one("SELECT value FROM acp_meta WHERE key = 'cursor_key'", &[]).await?.get(0);
        tx.commit().await?;
        Ok(decode_key(&stored).ok_or_else(|| StoreError::new("acp_meta.cursor_key is not 64 hexadecimal digits")))
    })
}

/// Creates the schema the tables belong in (see the module doc) when it does not exist; the inner
/// error says why it cannot be.
async fn ensure_schema(tx: &Transaction<'_>) -> Result<Result<(), StoreError>, tokio_postgres::Error> {
    let row = tx
        .query_one(
            "SELECT current_schema(), current_setting('search_path'), current_user::text,
                    EXISTS (SELECT 1 FROM pg_catalog.pg_namespace WHERE nspname = current_user),
                    current_database()::text",
            &[],
        )
        .await?;
    let (current, search_path, user, user_schema, database): (Option<String>, String, String, bool, String) =
        (row.get(0), row.get(1), row.get(2), row.get(3), row.get(4));
    let Some(wanted) = schema_for_tables(&search_path, user_schema) else {
        return Ok(match current {
            Some(_) => Ok(()),
            None => Err(StoreError::new(format!(
                "search_path ({search_path:?}) names no schema to keep the acp_ tables in: name one, e.g. \
                 options=-c%20search_path%3Dacp in the URL"
            ))),
        });
    };
    if current.as_deref() == Some(wanted.as_str()) {
        return Ok(Ok(()));
    }
    // The first schema named does not exist (it would be the current one): create it. Only then:
    // `CREATE SCHEMA IF NOT EXISTS` needs the right to create schemas even when it exists.
    let create = format!("CREATE SCHEMA IF NOT EXISTS {}", quote_identifier(&wanted));
    match tx.batch_execute(&create).await {
        Ok(()) => {
            tracing::info!(schema = wanted, "created the schema of the session store");
            Ok(Ok(()))
        }
        Err(e) if e.code() == Some(&tokio_postgres::error::SqlState::INSUFFICIENT_PRIVILEGE) => {
            Ok(Err(StoreError::new(format!(
                "schema {wanted:?}, first in search_path, does not exist and role {user:?} may not create it \
                 ({}): as a role that may, run `CREATE SCHEMA {} AUTHORIZATION {};` in database {database:?} \
                 (or `GRANT CREATE ON DATABASE {} TO {};`)",
                super::db::chain(&e),
                quote_identifier(&wanted),
                quote_identifier(&user),
                quote_identifier(&database),
                quote_identifier(&user),
            ))))
        }
        Err(e) => Err(e),
    }
}

/// The schema the tables belong in, as `search_path` names it: its first entry — `"$user"` only
/// when a schema of the current user's name exists (`user_schema`: then it is the current schema
/// already), never `pg_catalog` or `pg_temp` (which the server searches on its own). `None` when
/// there is nothing to create.
fn schema_for_tables(search_path: &str, user_schema: bool) -> Option<String> {
    search_path_entries(search_path)
        .into_iter()
        .find(|entry| match entry.as_str() {
            "$user" => user_schema,
            "pg_catalog" => false,
            other => !other.starts_with("pg_temp"),
        })
        .filter(|entry| entry != "$user")
}

/// The entries of a `search_path` setting, as the server reads them: separated by commas, an
/// unquoted one folded to lower case, a quoted one taken as it is (`""` inside it is `"`).
fn search_path_entries(search_path: &str) -> Vec<String> {
    let mut entries = Vec::new();
    let mut chars = search_path.chars().peekable();
    loop {
        while chars.next_if(|c| c.is_whitespace() || *c == ',').is_some() {}
        let Some(&first) = chars.peek() else { return entries };
        let mut entry = String::new();
        if first == '"' {
            chars.next();
            while let Some(c) = chars.next() {
                match c {
                    '"' if chars.next_if_eq(&'"').is_some() => entry.push('"'),
                    '"' => break,
                    c => entry.push(c),
                }
            }
            while chars.next_if(|c| *c != ',').is_some() {}
        } else {
            while let Some(c) = chars.next_if(|c| *c != ',') {
                entry.push(c);
            }
            entry = entry.trim_end().to_ascii_lowercase();
        }
        entries.push(entry);
    }
}

/// `name` as an SQL identifier, always quoted: any name is taken as it is.
fn quote_identifier(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// The recorded schema version inside a transaction (0 when there is no schema).
async fn version_in(tx: &Transaction<'_>) -> Result<i64, tokio_postgres::Error> {
    let exists: bool = tx.query_one(META_EXISTS, &[]).await?.get(0);
    if !exists {
        return Ok(0);
    }
    let row = tx.query_opt("SELECT value FROM acp_meta WHERE key = 'schema_version'", &[]).await?;
    Ok(row.and_then(|row| row.get::<_, String>(0).parse().ok()).unwrap_or(0))
}

fn random_key() -> [u8; 32] {
    let mut key = [0u8; 32];
    rand::TryRng::try_fill_bytes(&mut rand::rngs::SysRng, &mut key).expect("the operating system's random source");
    key
}

fn encode_key(key: &[u8; 32]) -> String {
    key.iter().fold(String::with_capacity(64), |mut hex, b| {
        use std::fmt::Write as _;
        let _ = write!(hex, "{b:02x}");
        hex
    })
}

fn decode_key(hex: &str) -> Option<[u8; 32]> {
    if hex.len() != 64 || !hex.is_ascii() {
        return None;
    }
    let mut key = [0u8; 32];
    for (byte, pair) in key.iter_mut().zip(hex.as_bytes().chunks(2)) {
        *byte = u8::from_str_radix(std::str::from_utf8(pair).ok()?, 16).ok()?;
    }
    Some(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn search_path_entries_are_read_as_the_server_reads_them() {
        assert_eq!(search_path_entries(r#""$user", public"#), ["$user", "public"]);
        assert_eq!(search_path_entries("MySchema"), ["myschema"], "unquoted: folded to lower case");
        assert_eq!(search_path_entries(r#" "My ""odd"", one" , two "#), [r#"My "odd", one"#, "two"]);
        assert_eq!(search_path_entries(""), Vec::<String>::new());
    }

    #[test]
    fn the_tables_go_in_the_first_schema_named() {
        assert_eq!(schema_for_tables(r#""$user", public"#, false).as_deref(), Some("public"));
        assert_eq!(schema_for_tables(r#""$user", public"#, true), None, "the user's own schema, which exists");
        assert_eq!(schema_for_tables("acp, public", false).as_deref(), Some("acp"));
        assert_eq!(schema_for_tables("pg_catalog, pg_temp, acp", false).as_deref(), Some("acp"));
        assert_eq!(schema_for_tables("", false), None);
    }

    #[test]
    fn identifiers_are_always_quoted() {
        assert_eq!(quote_identifier("acp"), r#""acp""#);
        assert_eq!(quote_identifier(r#"a"b; DROP"#), r#""a""b; DROP""#);
    }

    #[test]
    fn keys_round_trip_as_hex() {
        let key = random_key();
        assert_eq!(decode_key(&encode_key(&key)), Some(key));
        assert_eq!(encode_key(&[0xab; 32]).len(), 64);
        assert_eq!(decode_key("ab"), None);
        assert_eq!(decode_key(&"zz".repeat(32)), None);
        assert_eq!(decode_key(&"é".repeat(32)), None);
    }
}
