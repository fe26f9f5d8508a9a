//! The `SQLite` store's tables, their versions, and the migrations between them.
//!
//! Invariants: `PRAGMA user_version` holds the schema version; [`migrate`] brings an older database
//! forward with every step in one transaction, creates a new one at the current version directly
//! (the same tables the steps build: a test compares them), and refuses a newer one untouched. A
//! step that has shipped is never edited.

use rusqlite::{Connection, Transaction, TransactionBehavior};

use super::connection::sql_error;
use crate::store::StoreError;

/// One schema migration: upgrades the schema by exactly one version, inside the caller's
/// transaction.
type Migration = fn(&Transaction<'_>) -> rusqlite::Result<()>;

/// `MIGRATIONS[n]` upgrades schema version `n` to `n + 1`; version 0 is an empty database.
///
/// To change the schema, append a step (`v1_to_v2`, …). Never edit a step that has shipped: a
/// database that already ran it would not run it again.
pub(super) const MIGRATIONS: &[Migration] = &[v0_to_v1, v1_to_v2, v2_to_v3, v3_to_v4, v4_to_v5, v5_to_v6, v6_to_v7];

/// The schema version this code reads and writes.
pub(super) const SCHEMA_VERSION: usize = MIGRATIONS.len();

/// The session catalog, since version 1.
const SESSIONS_V1: &str = "CREATE TABLE sessions (
             id TEXT PRIMARY KEY NOT NULL,
             cwd TEXT NOT NULL,
             additional_directories TEXT NOT NULL DEFAULT '[]', -- JSON array of strings
             title TEXT,
             created_at TEXT NOT NULL, -- RFC 3339 UTC
             updated_at TEXT NOT NULL  -- RFC 3339 UTC
         );";

/// The journal, since version 2.
const JOURNAL_V2: &str = "CREATE TABLE journal (
             seq INTEGER PRIMARY KEY, -- append order (see the module doc)
             session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
             events TEXT NOT NULL -- the events of one append, in order, as a JSON array
         );
         CREATE INDEX journal_by_session ON journal (session_id, seq);";

/// The journal, since version 3: each entry also holds the session's update time as of that entry
/// (before the events, so reading it never reads a long entry's overflow pages).
const JOURNAL_V3: &str = "CREATE TABLE journal (
             seq INTEGER PRIMARY KEY, -- append order (see the module doc)
             session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
             updated_at TEXT, -- RFC 3339 UTC: the session's update time as of this entry, if any
             events TEXT NOT NULL -- the events of one append, in order, as a JSON array
         );
         CREATE INDEX journal_by_session ON journal (session_id, seq);";

/// The session catalog, since version 4: each session also has a number, `num`, which places
/// its journal entries' keys (see the module doc). The check keeps `num << 32` within `SQLite`'s
/// 64-bit integers.
const SESSIONS_V4: &str = "CREATE TABLE sessions (
             num INTEGER PRIMARY KEY CHECK (num BETWEEN 1 AND 2147483647), -- the journal's key range
             id TEXT NOT NULL UNIQUE,
             cwd TEXT NOT NULL,
             additional_directories TEXT NOT NULL DEFAULT '[]', -- JSON array of strings
             title TEXT,
             created_at TEXT NOT NULL, -- RFC 3339 UTC
             updated_at TEXT NOT NULL  -- RFC 3339 UTC
         );";

/// The journal, since version 4: keyed by session number and entry number (see the module doc),
/// with no session column and no index beside the table.
const JOURNAL_V4: &str = "CREATE TABLE journal (
             seq INTEGER PRIMARY KEY, -- (sessions.num << 32) + the entry's number in its session
             updated_at TEXT, -- RFC 3339 UTC: the session's update time as of this entry, if any
             events TEXT NOT NULL -- the events of one append, in order, as a JSON array
         );";

/// The column version 6 adds to the session catalog: the client's system prompt, as the JSON
/// text of its ACP wire form (`SystemPrompt`); NULL when the session has none.
const SYSTEM_PROMPT_V6: &str = "ALTER TABLE sessions ADD COLUMN system_prompt TEXT /* ACP SystemPrompt as JSON */;";

/// The column version 7 adds to the session catalog: the principal of the connection that created
/// the session; NULL when it had none (stdio, and every session of version 6).
const PRINCIPAL_V7: &str =
    "ALTER TABLE sessions ADD COLUMN principal TEXT /* creating connection's principal, NULL: none */;";

/// The session catalog, since version 7: [`SESSIONS_V4`] with the system prompt and the principal,
/// written exactly as [`SYSTEM_PROMPT_V6`] and [`PRINCIPAL_V7`] leave it in `sqlite_master`
/// (`SQLite` splices each new column's text, its comment included, before the closing
/// parenthesis), so that a new database and a migrated one hold the same schema text (a test
/// compares them).
const SESSIONS_V7: &str = "CREATE TABLE sessions (
             num INTEGER PRIMARY KEY CHECK (num BETWEEN 1 AND 2147483647), -- the journal's key range
             id TEXT NOT NULL UNIQUE,
             cwd TEXT NOT NULL,
             additional_directories TEXT NOT NULL DEFAULT '[]', -- JSON array of strings
             title TEXT,
             created_at TEXT NOT NULL, -- RFC 3339 UTC
             updated_at TEXT NOT NULL  -- RFC 3339 UTC
         , system_prompt TEXT /* ACP SystemPrompt as JSON */, principal TEXT /* creating connection's principal, NULL: none */);";

/// The indexes of `session/list`'s keyset reads, since version 7: one page of a principal's
/// sessions in id order, of any cwd or of one.
const SESSION_PAGES_V7: &str = "CREATE INDEX sessions_by_principal ON sessions (principal, id);
         CREATE INDEX sessions_by_principal_cwd ON sessions (principal, cwd, id);";

/// Creates the current schema in an empty database in one step — what running every migration
/// from version 0 builds (a test compares the two), without building and converting the older
/// tables first. Opening a new store, `:memory:` included, takes half the work it would.
pub(super) fn create_current(tx: &Transaction<'_>) -> rusqlite::Result<()> {
    tx.execute_batch(SESSIONS_V7)?;
    tx.execute_batch(SESSION_PAGES_V7)?;
    tx.execute_batch(JOURNAL_V4)
}

/// Version 1: the session catalog and the event journal.
fn v0_to_v1(tx: &Transaction<'_>) -> rusqlite::Result<()> {
    tx.execute_batch(SESSIONS_V1)?;
    tx.execute_batch(
        "CREATE TABLE events (
             seq INTEGER PRIMARY KEY AUTOINCREMENT, -- append order, never reused
             session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
             body TEXT NOT NULL -- the event as JSON
         );
         CREATE INDEX events_by_session ON events (session_id, seq);",
    )
}

/// Version 2: one journal row per append (a JSON array of events) instead of one per event, and
/// no `AUTOINCREMENT`. A turn's events are written in one statement rather than one each, and
/// `AUTOINCREMENT`'s bookkeeping table is no longer written on every append.
///
/// Rows of version 1 become one-event entries, keeping their keys and so their order.
fn v1_to_v2(tx: &Transaction<'_>) -> rusqlite::Result<()> {
    tx.execute_batch(JOURNAL_V2)?;
    tx.execute_batch(
        "INSERT INTO journal (seq, session_id, events) SELECT seq, session_id, '[' || body || ']' FROM events;
         DROP TABLE events;",
    )
}

/// Version 3: each journal entry carries the session's update time as of that entry, so that a
/// turn's write is one `INSERT` instead of an insert and an update of the session's row (a
/// transaction of one statement, and one table fewer to write).
///
/// Entries of version 2 have no time (NULL): their sessions' rows hold it. The table is rebuilt
/// rather than altered so the new column precedes the events.
fn v2_to_v3(tx: &Transaction<'_>) -> rusqlite::Result<()> {
    // The old index goes first: the new table's has its name.
    tx.execute_batch("DROP INDEX journal_by_session; ALTER TABLE journal RENAME TO journal_v2;")?;
    tx.execute_batch(JOURNAL_V3)?;
    tx.execute_batch(
        "INSERT INTO journal (seq, session_id, updated_at, events) SELECT seq, session_id, NULL, events FROM journal_v2;
         DROP TABLE journal_v2;",
    )
}

/// Version 4: each session owns a range of the journal's keys, so the journal needs no session
/// column and no index: an append inserts into the table alone (before, each also inserted an
/// index row and wrote one more page).
///
/// Sessions are numbered in their rows' order; each session's entries keep their order, numbered
/// from 0. Both tables are rebuilt (a table's primary key cannot be altered).
fn v3_to_v4(tx: &Transaction<'_>) -> rusqlite::Result<()> {
    // The old index goes first: the new table would not need it, and its name is free again.
    tx.execute_batch(
        "DROP INDEX journal_by_session;
         ALTER TABLE journal RENAME TO journal_v3;
         ALTER TABLE sessions RENAME TO sessions_v3;",
    )?;
    tx.execute_batch(SESSIONS_V4)?;
    tx.execute_batch(JOURNAL_V4)?;
    tx.execute_batch(
        "INSERT INTO sessions (id, cwd, additional_directories, title, created_at, updated_at)
             SELECT id, cwd, additional_directories, title, created_at, updated_at FROM sessions_v3 ORDER BY rowid;
         INSERT INTO journal (seq, updated_at, events)
             SELECT (s.num << 32) + row_number() OVER (PARTITION BY s.num ORDER BY j.seq) - 1, j.updated_at, j.events
             FROM journal_v3 j JOIN sessions s ON s.id = j.session_id;
         DROP TABLE journal_v3;
         DROP TABLE sessions_v3;",
    )
}

/// Version 5: journal entries are written in the compact form (`crate::store::entry`). The tables do not
/// change and older entries stay readable; the version tells older code, which reads only the full
/// form, to leave the file alone.
#[allow(clippy::unnecessary_wraps, reason = "every migration has this signature")]
fn v4_to_v5(_tx: &Transaction<'_>) -> rusqlite::Result<()> {
    Ok(())
}

/// Version 6: each session keeps the client's system prompt (ACP `systemPrompt`, as given on
/// `session/new` or the latest `load` or `resume` that carried one), so that a session loaded
/// again — in another process too — applies it without the client sending it again.
///
/// A nullable column added in place: `ALTER TABLE … ADD COLUMN` rewrites only the table's
/// definition, not its rows, which read NULL (no system prompt) — what every session of version
/// 5 had.
fn v5_to_v6(tx: &Transaction<'_>) -> rusqlite::Result<()> {
    tx.execute_batch(SYSTEM_PROMPT_V6)
}

/// Version 7: each session belongs to the principal of the connection that created it, and
/// `session/list` reads one page of one principal's sessions through an index instead of the
/// whole catalog.
///
/// A nullable column added in place (rows of version 6 read NULL: no principal, what every
/// session had), and two indexes.
fn v6_to_v7(tx: &Transaction<'_>) -> rusqlite::Result<()> {
    tx.execute_batch(PRINCIPAL_V7)?;
    tx.execute_batch(SESSION_PAGES_V7)
}

/// The schema version recorded in the database.
pub(super) fn schema_version(conn: &Connection) -> Result<usize, StoreError> {
    let version: i64 = conn
        .pragma_query_value(None, "user_version", |row| row.get(0))
        .map_err(|e| sql_error("read schema version", &e))?;
    let version = usize::try_from(version).map_err(|_| StoreError::new(format!("invalid schema version {version}")))?;
    if version > SCHEMA_VERSION {
        return Err(StoreError::new(format!(
            "database schema version {version} is newer than this version of acp-facade \
             supports ({SCHEMA_VERSION}); refusing to open it — upgrade acp-facade"
        )));
    }
    Ok(version)
}

/// Brings the schema to [`SCHEMA_VERSION`].
pub(super) fn migrate(conn: &mut Connection) -> Result<(), StoreError> {
    // Up to date (the common case): no write lock needed.
    if schema_version(conn)? == SCHEMA_VERSION {
        return Ok(());
    }
    let tx =
        conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(|e| sql_error("begin migration", &e))?;
    // Read again under the write lock: another connection may have migrated meanwhile.
    let from = schema_version(&tx)?;
    if from == 0 {
        create_current(&tx).map_err(|e| StoreError::new(format!("creating the schema: {e}")))?;
    } else {
        for (version, step) in MIGRATIONS.iter().enumerate().skip(from) {
            step(&tx)
                .map_err(|e| StoreError::new(format!("migrating schema version {version} to {}: {e}", version + 1)))?;
        }
    }
    // `user_version` is part of the database header, so it commits with the steps.
    let version = i64::try_from(SCHEMA_VERSION).unwrap_or(i64::MAX);
    tx.pragma_update(None, "user_version", version).map_err(|e| sql_error("record schema version", &e))?;
    tx.commit().map_err(|e| sql_error("commit migration", &e))
}
