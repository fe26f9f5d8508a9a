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

use deadpool_postgres::ClientWrapper;
use tokio_postgres::Transaction;

use super::db::{Call, Db};
use crate::store::StoreError;

/// `MIGRATIONS[n]` upgrades schema version `n` to `n + 1`; version 0 is an empty database.
///
/// To change the schema, append a step. Never edit a step that has shipped: a database that
/// already ran it would not run it again.
pub(crate) const MIGRATIONS: &[&str] = &[V0_TO_V1, V1_TO_V2, V2_TO_V3];

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
    fn keys_round_trip_as_hex() {
        let key = random_key();
        assert_eq!(decode_key(&encode_key(&key)), Some(key));
        assert_eq!(encode_key(&[0xab; 32]).len(), 64);
        assert_eq!(decode_key("ab"), None);
        assert_eq!(decode_key(&"zz".repeat(32)), None);
        assert_eq!(decode_key(&"é".repeat(32)), None);
    }
}
