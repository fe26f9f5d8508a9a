//! The `SQLite` [`Store`]: the session catalog and every session's journal in one database file
//! (or in memory, for `:memory:`).
//!
//! # Durability invariants
//!
//! - **Atomic writes.** Every write (create, touch, set the system prompt, append, delete) is one
//!   transaction: a `BEGIN IMMEDIATE` one, or a single statement in autocommit mode (an append,
//!   which is one `INSERT`). It is applied entirely or not at all. A crash in the middle of a
//!   write — of the process or of the machine — never corrupts the database and never alters a
//!   session that was written before it.
//! - **Durable writes.** File databases run in WAL mode with `synchronous=FULL`: once a write has
//!   returned `Ok`, it survives a process crash and a power loss.
//! - **Journal order.** The journal is a table of entries, one per append: the events of that
//!   append, in order, as one JSON array (`crate::store::entry`: the compact form since version 5), and
//!   the session's update time as of that entry. Each session owns a range of the journal's keys
//!   (the rowid): its number (`sessions.num`, from 1) times 2³², plus the entry's number in the
//!   session, from 0. An append takes the key after its
//!   session's newest in the statement that inserts the entry (under the write lock), so a
//!   session's events are read back in the order they were appended, as one range of the table.
//!   A session holds at most 2³² entries; an append beyond that is refused.
//! - **System prompts.** A session's row keeps the client's system prompt (since version 6) as
//!   the JSON text of its ACP wire form, NULL when it has none: a session of an older file reads
//!   none.
//! - **Principals.** A session's row keeps the principal of the connection that created it (since
//!   version 7), NULL when none: a session of an older file has none. `session/list` reads one
//!   page with a keyset query on (principal, cwd, id), served by the indexes `sessions_by_principal`
//!   and `sessions_by_principal_cwd`: a page costs the same however many sessions the file holds.
//! - **No orphans.** A journal entry is only ever inserted by a statement that finds its session
//!   (no session, no row: the append is refused), and deleting a session deletes its key range in
//!   the same transaction. A session number freed by deleting the newest session may be given to
//!   a later session: its range is empty by then.
//! - **Shared files.** Several stores — in this process or in others — may open the same file. A
//!   writer waits (up to [`BUSY_TIMEOUT`]) for another's transaction instead of failing with
//!   `SQLITE_BUSY`; readers see only committed data and never block writers.
//! - **Versioned schema.** `PRAGMA user_version` holds the schema version. Opening migrates an
//!   older database forward, all steps in one transaction; a database from a newer version of this
//!   crate is refused and left untouched.
//! - **Update time.** A session's update time is the later of its catalog row's and its newest
//!   journal entry's (each entry carries the time it was recorded with, or its predecessor's): a
//!   turn that records only its events and the time writes one row, not two.
//! - **No panics on bad data.** An unreadable row (garbage JSON, wrong column type, invalid UTF-8)
//!   is a [`StoreError`] naming the session and row.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, params};

use async_trait::async_trait;

use crate::store::entry;
use crate::store::{PageQuery, SessionRecord, Store, StoreError};
use acp_facade::acp::{SessionId, SystemPrompt};
use acp_facade::harness::Event;
use acp_facade::host::Principal;
use connection::{configure, sql_error};
use schema::migrate;

mod connection;
mod schema;

/// How long a write waits for another connection's write transaction before giving up.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// The path that opens a private in-memory database.
const MEMORY: &str = ":memory:";

/// A [`Store`] in an `SQLite` database: a file shared safely between connections and processes,
/// or a private in-memory database.
///
/// Calls run inline: each call's future does its work when first polled, blocking the calling
/// thread for the duration of one short transaction — up to [`BUSY_TIMEOUT`] longer while another
/// connection writes the same file — with no hop to another thread (a turn costs one transaction,
/// a few microseconds). The store is `Send` and `Sync`; calls through one store are serialised on
/// its connection.
///
/// It has no session owners (see the [`Store`] trait's Ownership section): two processes on one
/// file may both open a session.
pub struct SqliteStore {
    conn: Mutex<Connection>,
    /// The buffer journal entries are encoded into, kept from one append to the next (locked
    /// after `conn`): a turn's entry (about 1 KiB) is then neither allocated above the
    /// allocator's small-size caches nor grown while being written.
    entry: Mutex<Vec<u8>>,
    /// The path as given, for messages.
    location: String,
}

impl fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SqliteStore").field("location", &self.location).finish_non_exhaustive()
    }
}

impl SqliteStore {
    /// Opens (creating if needed) the database at `path`, or a new private in-memory database
    /// when `path` is `:memory:`.
    ///
    /// Missing parent directories are created. The schema is created or migrated to the current
    /// version; a database written by a newer version of this crate is refused with an error and
    /// left untouched, as is a file that is not an `SQLite` database.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        let path = path.as_ref();
        let location = path.display().to_string();
        let in_memory = path.as_os_str() == MEMORY;
        let mut conn = if in_memory {
            Connection::open_in_memory()
        } else {
            if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
                std::fs::create_dir_all(parent)
                    .map_err(|e| StoreError::new(format!("cannot create directory {}: {e}", parent.display())))?;
            }
            Connection::open(path)
        }
        .map_err(|e| StoreError::new(format!("cannot open {location}: {e}")))?;
        configure(&conn, in_memory).map_err(|e| StoreError::new(format!("{location}: {}", e.message())))?;
        migrate(&mut conn).map_err(|e| StoreError::new(format!("{location}: {}", e.message())))?;
        Ok(Self { conn: Mutex::new(conn), entry: Mutex::new(Vec::new()), location })
    }

    /// The entry buffer; taken while holding the connection's lock.
    fn entry_buffer(&self) -> MutexGuard<'_, Vec<u8>> {
        self.entry.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn lock(&self) -> MutexGuard<'_, Connection> {
        // A panic while holding the lock rolled back any open transaction as it unwound (see
        // `OpenTransaction`), so the connection is still consistent.
        self.conn.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs `f` in a `BEGIN IMMEDIATE` transaction, committing when it returns `Ok` and rolling
    /// back otherwise (also when `f` panics).
    ///
    /// `IMMEDIATE` takes the write lock up front, so waiting for another writer goes through the
    /// busy timeout; a deferred transaction upgrading from read to write could instead fail at
    /// once with `SQLITE_BUSY` in WAL mode. `BEGIN` and `COMMIT` are cached statements, parsed
    /// once per connection rather than once per write.
    fn write<T>(&self, what: &str, f: impl FnOnce(&Connection) -> Result<T, StoreError>) -> Result<T, StoreError> {
        let conn = self.lock();
        run_cached(&conn, "BEGIN IMMEDIATE").map_err(|e| sql_error(what, &e))?;
        let open = OpenTransaction(&conn);
        let value = f(&conn)?;
        run_cached(&conn, "COMMIT").map_err(|e| sql_error(what, &e))?;
        std::mem::forget(open);
        Ok(value)
    }
}

/// Runs a statement that returns no rows, from the connection's statement cache.
fn run_cached(conn: &Connection, sql: &str) -> rusqlite::Result<()> {
    conn.prepare_cached(sql)?.execute([]).map(drop)
}

/// Rolls back the connection's open transaction when dropped: the path out of
/// [`SqliteStore::write`] on an error or a panic (a successful write forgets it after `COMMIT`).
struct OpenTransaction<'c>(&'c Connection);

impl Drop for OpenTransaction<'_> {
    fn drop(&mut self) {
        // SQLite may already have rolled back on its own (some errors end the transaction).
        if !self.0.is_autocommit()
            && let Err(e) = self.0.execute_batch("ROLLBACK")
        {
            tracing::error!(error = %e, "could not roll back a failed session store write");
        }
    }
}

/// A buffer kept for the next entry up to this capacity; a larger one is freed after its entry.
const ENTRY_BUFFER_KEPT: usize = 64 * 1024;

/// Encodes one journal entry into `buffer` (emptied first): the events in order, in the compact
/// form (`crate::store::entry`), as UTF-8 text (`serde_json` writes nothing else), bound as text without
/// checking it again.
fn encode_events(buffer: &mut Vec<u8>, id: &SessionId, events: &[Event]) -> Result<(), StoreError> {
    buffer.clear();
    entry::encode(buffer, id, events).map_err(|e| StoreError::new(format!("encoding an event of session {id}: {e}")))
}

/// The SQL condition "key `$seq` lies in the key range of the session numbered `$num`" (see the
/// module doc), for statements over the journal. A macro, so that the statements holding it stay
/// literals (see [`next_key`]).
macro_rules! in_range {
    ($seq:literal, $num:literal) => {
        concat!($seq, " >= ", $num, " << 32 AND ", $seq, " < (", $num, " + 1) << 32")
    };
}

/// The key the session `?1`'s next entry gets: the key after its newest entry below the last of
/// its range, or its range's first; the text `no session` (not an integer: the insert fails with
/// "datatype mismatch") when there is no such session. The last key of a range is only ever
/// given when it is free: once it is taken the range is full, and the key given again fails the
/// insert as a duplicate. A macro, so that the statements holding it are literals (the statement
/// cache is looked up by text, with no string built per append).
///
/// A scalar subquery in `VALUES` rather than `INSERT … SELECT`: an `INSERT … SELECT` reading its
/// own table writes the selected rows to a temporary table first.
macro_rules! next_key {
    () => {
        "coalesce((SELECT coalesce((SELECT j.seq + 1 FROM journal j
                                    WHERE j.seq >= s.num << 32 AND j.seq < ((s.num + 1) << 32) - 1
                                    ORDER BY j.seq DESC LIMIT 1), s.num << 32)
                   FROM sessions s WHERE s.id = ?1), 'no session')"
    };
}

/// Appends one journal entry holding `events` (nothing when there are none), one statement,
/// recorded with the session's update time `updated_at` — or, when `None`, with its newest
/// entry's, so that the newest entry always carries the latest time the journal was given.
/// The statement finds the session and its next key itself (see `next_key!`); only when it
/// fails is the session looked up, to tell "no session" from a full journal. The entry is encoded
/// into `buffer`, which the caller keeps for the next one.
fn insert_events(
    conn: &Connection,
    buffer: &mut Vec<u8>,
    id: &SessionId,
    events: &[Event],
    updated_at: Option<&str>,
) -> Result<(), StoreError> {
    if events.is_empty() {
        return Ok(());
    }
    let inserted = encode_events(buffer, id, events).and_then(|()| insert_entry(conn, buffer, id, updated_at));
    if buffer.capacity() > ENTRY_BUFFER_KEPT {
        *buffer = Vec::new();
    }
    inserted
}

/// Inserts the encoded entry `entry` (see [`insert_events`]).
fn insert_entry(conn: &Connection, entry: &[u8], id: &SessionId, updated_at: Option<&str>) -> Result<(), StoreError> {
    let entry = rusqlite::types::ToSqlOutput::Borrowed(rusqlite::types::ValueRef::Text(entry));
    // Two statements rather than `COALESCE(?3, …)`: a parameter there makes SQLite prepare the
    // statement again at every run (to plan for the value bound).
    let inserted = match updated_at {
        Some(at) => conn
            .prepare_cached(concat!("INSERT INTO journal (seq, updated_at, events) VALUES (", next_key!(), ", ?3, ?2)"))
            .and_then(|mut stmt| stmt.execute(params![&*id.0, entry, at])),
        None => conn
            .prepare_cached(concat!(
                "INSERT INTO journal (seq, updated_at, events) VALUES (",
                next_key!(),
                ", (SELECT j.updated_at FROM sessions s, journal j
                    WHERE s.id = ?1 AND ",
                in_range!("j.seq", "s.num"),
                " ORDER BY j.seq DESC LIMIT 1), ?2)"
            ))
            .and_then(|mut stmt| stmt.execute(params![&*id.0, entry])),
    };
    match inserted {
        Ok(_) => Ok(()),
        Err(rusqlite::Error::SqliteFailure(e, _))
            if e.code == rusqlite::ErrorCode::TypeMismatch
                || e.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_PRIMARYKEY =>
        {
            let known = conn
                .prepare_cached("SELECT 1 FROM sessions WHERE id = ?1")
                .and_then(|mut stmt| stmt.exists([&*id.0]))
                .map_err(|e| StoreError::new(format!("append events to session {id}: {e}")))?;
            Err(StoreError::new(if known {
                format!("the journal of session {id} is full")
            } else {
                format!("no session {id}")
            }))
        }
        Err(e) => Err(StoreError::new(format!("append events to session {id}: {e}"))),
    }
}

fn path_text<'p>(path: &'p Path, what: &str) -> Result<&'p str, StoreError> {
    path.to_str()
        .ok_or_else(|| StoreError::new(format!("{what} {} is not valid UTF-8 and cannot be stored", path.display())))
}

/// The columns of a `sessions` row, in [`SESSION_COLUMNS`] order, before decoding; the system
/// prompt's text is checked when decoding, where an error can name the session (see
/// [`system_prompt_text`]).
type RawSession =
    (String, String, String, Option<String>, String, String, Result<Option<String>, String>, Option<String>);

/// A session's record, selected from `sessions s`: the update time is the later of the row's and
/// the newest journal entry's (see the module doc).
const SESSION_COLUMNS: &str = concat!(
    "s.id, s.cwd, s.additional_directories, s.title, s.created_at,
     max(s.updated_at, coalesce((SELECT j.updated_at FROM journal j WHERE ",
    in_range!("j.seq", "s.num"),
    " ORDER BY j.seq DESC LIMIT 1), '')), s.system_prompt, s.principal"
);

/// The condition and order of one page of the catalog's sessions of any cwd, after
/// `FROM sessions s`: `?1` principal, `?2` after this id, `?3` at most. Served by the index
/// `sessions_by_principal` (a test checks the plan).
const PAGE_ANY_CWD: &str = "WHERE s.principal IS ?1 AND s.id > ?2 ORDER BY s.id LIMIT ?3";

/// [`PAGE_ANY_CWD`] in one cwd, `?4`. Served by the index `sessions_by_principal_cwd`.
const PAGE_ONE_CWD: &str = "WHERE s.principal IS ?1 AND s.cwd = ?4 AND s.id > ?2 ORDER BY s.id LIMIT ?3";

fn raw_session(row: &rusqlite::Row<'_>) -> rusqlite::Result<RawSession> {
    let system_prompt = system_prompt_text(row.get_ref(6)?);
    Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?, row.get(4)?, row.get(5)?, system_prompt, row.get(7)?))
}

/// The system prompt column's text (`None`: NULL), or why it is not text.
fn system_prompt_text(value: rusqlite::types::ValueRef<'_>) -> Result<Option<String>, String> {
    match value {
        rusqlite::types::ValueRef::Null => Ok(None),
        rusqlite::types::ValueRef::Text(text) => {
            std::str::from_utf8(text).map(|text| Some(text.to_owned())).map_err(|e| format!("not UTF-8: {e}"))
        }
        other => Err(format!("{} where JSON text belongs", other.data_type())),
    }
}

fn decode_session(raw: RawSession) -> Result<SessionRecord, StoreError> {
    let (id, cwd, additional_directories, title, created_at, updated_at, system_prompt, principal) = raw;
    let additional_directories: Vec<String> = serde_json::from_str(&additional_directories)
        .map_err(|e| StoreError::new(format!("session {id}: unreadable additional_directories: {e}")))?;
    let unreadable = |e: &dyn fmt::Display| StoreError::new(format!("session {id}: unreadable system_prompt: {e}"));
    let system_prompt = match system_prompt {
        Ok(None) => None,
        Ok(Some(json)) => Some(serde_json::from_str::<SystemPrompt>(&json).map_err(|e| unreadable(&e))?),
        Err(e) => return Err(unreadable(&e)),
    };
    Ok(SessionRecord {
        id: SessionId::new(id),
        cwd: PathBuf::from(cwd),
        additional_directories: additional_directories.into_iter().map(PathBuf::from).collect(),
        title,
        created_at,
        updated_at,
        system_prompt,
        principal: principal.map(Principal::new),
    })
}

/// The column text of a system prompt: its ACP wire form as JSON.
fn encode_system_prompt(id: &SessionId, system_prompt: &SystemPrompt) -> Result<String, StoreError> {
    serde_json::to_string(system_prompt)
        .map_err(|e| StoreError::new(format!("encoding the system prompt of session {id}: {e}")))
}

#[async_trait]
impl Store for SqliteStore {
    async fn create_session(&self, record: &SessionRecord) -> Result<(), StoreError> {
        let cwd = path_text(&record.cwd, "cwd")?;
        let additional = record
            .additional_directories
            .iter()
            .map(|p| path_text(p, "additional directory"))
            .collect::<Result<Vec<_>, _>>()?;
        let additional = serde_json::to_string(&additional)
            .map_err(|e| StoreError::new(format!("encoding additional_directories: {e}")))?;
        let prompt = record.system_prompt.as_ref().map(|p| encode_system_prompt(&record.id, p)).transpose()?;
        let what = format!("create session {}", record.id);
        self.write(&what, |tx| {
            let inserted = tx
                .execute(
                    "INSERT INTO sessions
                         (id, cwd, additional_directories, title, created_at, updated_at, system_prompt, principal)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
                     ON CONFLICT (id) DO NOTHING",
                    params![
                        &*record.id.0,
                        cwd,
                        additional,
                        record.title,
                        record.created_at,
                        record.updated_at,
                        prompt,
                        record.principal.as_ref().map(Principal::as_str)
                    ],
                )
                .map_err(|e| sql_error(&what, &e))?;
            if inserted == 0 {
                return Err(StoreError::new(format!("session {} already exists", record.id)));
            }
            Ok(())
        })
    }

    async fn session(&self, id: &SessionId) -> Result<Option<SessionRecord>, StoreError> {
        let what = format!("read session {id}");
        let raw = self
            .lock()
            .query_row(&format!("SELECT {SESSION_COLUMNS} FROM sessions s WHERE s.id = ?1"), [&*id.0], raw_session)
            .optional()
            .map_err(|e| sql_error(&what, &e))?;
        raw.map(decode_session).transpose()
    }

    async fn list_sessions(&self) -> Result<Vec<SessionRecord>, StoreError> {
        let what = "list sessions";
        let conn = self.lock();
        let mut stmt = conn
            .prepare_cached(&format!("SELECT {SESSION_COLUMNS} FROM sessions s ORDER BY s.created_at, s.id"))
            .map_err(|e| sql_error(what, &e))?;
        let rows = stmt.query_map([], raw_session).map_err(|e| sql_error(what, &e))?;
        rows.map(|row| decode_session(row.map_err(|e| sql_error(what, &e))?)).collect()
    }

    async fn list_page(&self, query: &PageQuery<'_>) -> Result<Vec<SessionRecord>, StoreError> {
        let what = "list a page of sessions";
        let principal = query.principal.map(Principal::as_str);
        let after = query.after.unwrap_or("");
        let limit = i64::try_from(query.limit).unwrap_or(i64::MAX);
        let conn = self.lock();
        let raw: Vec<RawSession> = match query.cwd {
            None => conn
                .prepare_cached(&format!("SELECT {SESSION_COLUMNS} FROM sessions s {PAGE_ANY_CWD}"))
                .and_then(|mut stmt| stmt.query_map(params![principal, after, limit], raw_session)?.collect()),
            Some(cwd) => {
                let cwd = path_text(cwd, "cwd")?;
                conn.prepare_cached(&format!("SELECT {SESSION_COLUMNS} FROM sessions s {PAGE_ONE_CWD}"))
                    .and_then(|mut stmt| stmt.query_map(params![principal, after, limit, cwd], raw_session)?.collect())
            }
        }
        .map_err(|e| sql_error(what, &e))?;
        drop(conn);
        raw.into_iter().map(decode_session).collect()
    }

    async fn touch_session(&self, id: &SessionId, title: Option<&str>, updated_at: &str) -> Result<(), StoreError> {
        let what = format!("touch session {id}");
        self.write(&what, |tx| {
            tx.prepare_cached("UPDATE sessions SET title = COALESCE(?2, title), updated_at = ?3 WHERE id = ?1")
                .and_then(|mut stmt| stmt.execute(params![&*id.0, title, updated_at]))
                .map_err(|e| sql_error(&what, &e))?;
            Ok(())
        })
    }

    async fn set_system_prompt(&self, id: &SessionId, system_prompt: &SystemPrompt) -> Result<(), StoreError> {
        let system_prompt = encode_system_prompt(id, system_prompt)?;
        let what = format!("set the system prompt of session {id}");
        self.write(&what, |tx| {
            tx.prepare_cached("UPDATE sessions SET system_prompt = ?2 WHERE id = ?1")
                .and_then(|mut stmt| stmt.execute(params![&*id.0, system_prompt]))
                .map_err(|e| sql_error(&what, &e))?;
            Ok(())
        })
    }

    /// One `INSERT`, in autocommit mode: a transaction by itself.
    async fn append_events(&self, id: &SessionId, events: &[Event]) -> Result<(), StoreError> {
        insert_events(&self.lock(), &mut self.entry_buffer(), id, events, None)
    }

    async fn append_events_and_touch(
        &self,
        id: &SessionId,
        events: &[Event],
        title: Option<&str>,
        updated_at: &str,
    ) -> Result<(), StoreError> {
        // Only the time: the entry carries it, in one `INSERT` (autocommit, a transaction by
        // itself). A title, or a touch without events, also updates the session's row.
        if title.is_none() && !events.is_empty() {
            return insert_events(&self.lock(), &mut self.entry_buffer(), id, events, Some(updated_at));
        }
        self.write(&format!("record a turn of session {id}"), |tx| {
            insert_events(tx, &mut self.entry_buffer(), id, events, Some(updated_at))?;
            tx.prepare_cached("UPDATE sessions SET title = COALESCE(?2, title), updated_at = ?3 WHERE id = ?1")
                .and_then(|mut stmt| stmt.execute(params![&*id.0, title, updated_at]))
                .map_err(|e| sql_error("touch session", &e))?;
            Ok(())
        })
    }

    async fn events(&self, id: &SessionId) -> Result<Vec<Event>, StoreError> {
        let what = format!("read the events of session {id}");
        let conn = self.lock();
        let mut stmt = conn
            .prepare_cached(concat!(
                "SELECT j.seq, j.events FROM sessions s JOIN journal j ON ",
                in_range!("j.seq", "s.num"),
                " WHERE s.id = ?1 ORDER BY j.seq"
            ))
            .map_err(|e| sql_error(&what, &e))?;
        // One statement reads one consistent snapshot, even while another connection appends.
        let rows = stmt
            .query_map([&*id.0], |row| Ok((row.get::<_, i64>(0)?, row.get::<_, String>(1)?)))
            .map_err(|e| sql_error(&what, &e))?;
        let mut events = Vec::new();
        for row in rows {
            let (seq, entry) = row.map_err(|e| sql_error(&what, &e))?;
            let entry = entry::decode(id, &entry)
                .map_err(|e| StoreError::new(format!("session {id}: journal entry {seq} is unreadable: {e}")))?;
            events.extend(entry);
        }
        Ok(events)
    }

    async fn delete_session(&self, id: &SessionId) -> Result<(), StoreError> {
        let what = format!("delete session {id}");
        self.write(&what, |tx| {
            // The session's events go with it: its range of the journal's keys.
            tx.execute(
                concat!("DELETE FROM journal WHERE ", in_range!("seq", "(SELECT num FROM sessions WHERE id = ?1)")),
                [&*id.0],
            )
            .map_err(|e| sql_error(&what, &e))?;
            tx.execute("DELETE FROM sessions WHERE id = ?1", [&*id.0]).map_err(|e| sql_error(&what, &e))?;
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};

    use super::schema::*;
    use super::*;
    use rusqlite::Transaction;

    /// Runs a store call to completion: the `SQLite` store's futures finish in their first poll.
    trait Wait: Future + Sized {
        fn wait(self) -> Self::Output {
            futures::executor::block_on(self)
        }
    }

    impl<F: Future> Wait for F {}
    use acp_facade::harness::{EventId, EventKind};

    /// A unique directory under the system temp dir, removed on drop.
    struct TempDir(PathBuf);

    impl TempDir {
        fn new() -> Self {
            static COUNTER: AtomicU64 = AtomicU64::new(0);
            let nanos =
                std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos();
            let dir = std::env::temp_dir().join(format!(
                "acp-facade-sqlite-{}-{nanos}-{}",
                std::process::id(),
                COUNTER.fetch_add(1, Ordering::Relaxed)
            ));
            std::fs::create_dir_all(&dir).expect("create temp dir");
            Self(dir)
        }

        fn db(&self) -> PathBuf {
            self.0.join("sessions.db")
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn record(id: &str) -> SessionRecord {
        SessionRecord {
            id: SessionId::new(id),
            cwd: PathBuf::from("/work/project"),
            additional_directories: vec![PathBuf::from("/work/lib"), PathBuf::from("/tmp/x y")],
            title: None,
            created_at: "2026-11-30T11:20:00.000Z".to_owned(),
            updated_at: "2026-11-30T11:20:00.000Z".to_owned(),
            system_prompt: None,
            principal: None,
        }
    }

    fn event(seq: u64, writer: u64) -> Event {
        Event::plain(
            &format!("ev-{writer}-{seq}"),
            seq,
            EventKind::ContextMeasured { used: seq, size: writer, cost: None },
        )
    }

    /// Builds the schema of `version` in `tx` by its migrations, as a file of that version holds.
    fn at_version(tx: &Transaction<'_>, version: usize) {
        for step in &MIGRATIONS[..version] {
            step(tx).unwrap_or_else(|e| panic!("step to version {version}: {e}"));
        }
        tx.pragma_update(None, "user_version", i64::try_from(version).expect("small")).expect("set version");
    }

    fn sid(id: &str) -> SessionId {
        SessionId::new(id)
    }

    #[test]
    fn is_send_and_sync() {
        fn assert_send_sync<T: Send + Sync + 'static>() {}
        assert_send_sync::<SqliteStore>();
        let _: Arc<dyn Store> = Arc::new(SqliteStore::open(MEMORY).expect("open"));
    }

    #[test]
    fn in_memory_stores_are_private() {
        let one = SqliteStore::open(MEMORY).expect("open");
        let two = SqliteStore::open(MEMORY).expect("open");
        one.create_session(&record("a")).wait().expect("create");
        assert_eq!(two.session(&sid("a")).wait().expect("read"), None);
    }

    #[test]
    fn delete_cascades_to_events() {
        let store = SqliteStore::open(MEMORY).expect("open");
        store.create_session(&record("a")).wait().expect("create");
        store.create_session(&record("b")).wait().expect("create");
        for i in 0..3 {
            store.append_event(&sid("a"), &event(i, 0)).wait().expect("append");
            store.append_event(&sid("b"), &event(i, 0)).wait().expect("append");
        }
        store.delete_session(&sid("a")).wait().expect("delete");
        assert_eq!(store.session(&sid("a")).wait().expect("read"), None);
        assert!(store.events(&sid("a")).wait().expect("events").is_empty());
        let entries: i64 = store.lock().query_row("SELECT COUNT(*) FROM journal", [], |r| r.get(0)).expect("count");
        assert_eq!(entries, 3, "only b's entries are left");
        // The other session is untouched.
        assert_eq!(store.events(&sid("b")).wait().expect("events").len(), 3);
        // Unknown ids, and deleting twice, succeed.
        store.delete_session(&sid("a")).wait().expect("delete again");
        store.delete_session(&sid("never")).wait().expect("delete unknown");
        // The id can be reused, with an empty journal.
        store.create_session(&record("a")).wait().expect("recreate");
        assert!(store.events(&sid("a")).wait().expect("events").is_empty());
    }

    #[test]
    fn file_database_survives_reopen() {
        let dir = TempDir::new();
        // Parent directories are created.
        let path = dir.0.join("nested").join("deeper").join("sessions.db");
        {
            let store = SqliteStore::open(&path).expect("open");
            store.create_session(&record("a")).wait().expect("create");
            store.append_event(&sid("a"), &event(1, 0)).wait().expect("append");
            store.append_event(&sid("a"), &event(2, 0)).wait().expect("append");
            store.touch_session(&sid("a"), Some("kept"), "2026-12-01T00:00:00.000Z").wait().expect("touch");
        }
        let store = SqliteStore::open(&path).expect("reopen");
        let a = store.session(&sid("a")).wait().expect("read").expect("kept");
        assert_eq!(a.title.as_deref(), Some("kept"));
        assert_eq!(a.additional_directories, record("a").additional_directories);
        assert_eq!(store.events(&sid("a")).wait().expect("events"), vec![event(1, 0), event(2, 0)]);
        let conn = store.lock();
        let mode: String = conn.pragma_query_value(None, "journal_mode", |r| r.get(0)).expect("journal_mode");
        assert_eq!(mode, "wal");
        let version: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0)).expect("user_version");
        assert_eq!(usize::try_from(version), Ok(SCHEMA_VERSION));
    }

    #[test]
    fn concurrent_writers_on_one_file_all_succeed() {
        const PER_WRITER: u64 = 200;
        let dir = TempDir::new();
        SqliteStore::open(dir.db()).expect("open").create_session(&record("a")).wait().expect("create");
        let writers: Vec<_> = (1..=2u64)
            .map(|writer| {
                // One store (one connection) per thread, as two processes would have.
                let store = SqliteStore::open(dir.db()).expect("open writer");
                std::thread::spawn(move || {
                    for i in 0..PER_WRITER {
                        store
                            .append_event(&sid("a"), &event(i, writer))
                            .wait()
                            .expect("append must wait, not fail with SQLITE_BUSY");
                    }
                })
            })
            .collect();
        for w in writers {
            w.join().expect("writer thread");
        }
        let events = SqliteStore::open(dir.db()).expect("open reader").events(&sid("a")).wait().expect("events");
        assert_eq!(events.len(), 400);
        for writer in 1..=2u64 {
            // Each writer's events appear in the order it appended them.
            let mine: Vec<u64> = events
                .iter()
                .filter(|e| e.header.id.as_str().starts_with(&format!("ev-{writer}-")))
                .map(|e| e.header.seq)
                .collect();
            assert_eq!(mine, (0..PER_WRITER).collect::<Vec<_>>());
        }
    }

    #[test]
    fn newer_schema_is_refused_and_left_untouched() {
        let dir = TempDir::new();
        {
            let conn = Connection::open(dir.db()).expect("raw open");
            conn.pragma_update(None, "user_version", 99).expect("set version");
        }
        let err = SqliteStore::open(dir.db()).expect_err("future schema");
        assert!(err.message().contains("schema version 99 is newer"), "{err}");
        let conn = Connection::open(dir.db()).expect("raw open");
        let tables: i64 = conn.query_row("SELECT COUNT(*) FROM sqlite_master", [], |r| r.get(0)).expect("count");
        assert_eq!(tables, 0, "nothing was created");
    }

    #[test]
    fn migrations_are_registered_in_order() {
        assert_eq!(SCHEMA_VERSION, 7);
        let store = SqliteStore::open(MEMORY).expect("open");
        let conn = store.lock();
        assert_eq!(schema_version(&conn).expect("version"), SCHEMA_VERSION);
        let names: Vec<String> = conn
            .prepare("SELECT name FROM sqlite_master WHERE type IN ('table', 'index') AND name NOT LIKE 'sqlite_%' ORDER BY name")
            .expect("prepare")
            .query_map([], |r| r.get(0))
            .expect("query")
            .collect::<Result<_, _>>()
            .expect("names");
        assert_eq!(names, ["journal", "sessions", "sessions_by_principal", "sessions_by_principal_cwd"]);
    }

    /// A version-1 database (one row per event) opens at the current version with every session's
    /// events in their order, and takes new appends after them.
    #[test]
    fn version_1_journal_is_migrated_in_order() {
        let dir = TempDir::new();
        {
            let mut conn = Connection::open(dir.db()).expect("raw open");
            let tx = conn.transaction().expect("begin");
            at_version(&tx, 1);
            for id in ["a", "b"] {
                let r = record(id);
                let additional = serde_json::to_string(&r.additional_directories).expect("encode");
                tx.execute(
                    "INSERT INTO sessions (id, cwd, additional_directories, title, created_at, updated_at)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                    params![id, r.cwd.to_str(), additional, r.title, r.created_at, r.updated_at],
                )
                .expect("session");
            }
            for (n, id) in [(5u64, "a"), (1, "b"), (9, "a"), (3, "b"), (7, "a")] {
                let body = serde_json::to_string(&event(n, 0)).expect("encode");
                tx.execute("INSERT INTO events (session_id, body) VALUES (?1, ?2)", params![id, body]).expect("event");
            }
            tx.commit().expect("commit");
        }
        let store = SqliteStore::open(dir.db()).expect("migrating open");
        assert_eq!(schema_version(&store.lock()).expect("version"), SCHEMA_VERSION);
        let seqs = |id: &str| -> Vec<u64> {
            store.events(&sid(id)).wait().expect("events").iter().map(|e| e.header.seq).collect()
        };
        assert_eq!(seqs("a"), [5, 9, 7]);
        assert_eq!(seqs("b"), [1, 3]);
        store.append_events(&sid("a"), &[event(2, 0), event(4, 0)]).wait().expect("append");
        assert_eq!(seqs("a"), [5, 9, 7, 2, 4]);
        assert_eq!(store.session(&sid("a")).wait().expect("read"), Some(record("a")));
    }

    /// A version-2 database (entries without an update time) opens as version 3: its entries keep
    /// their order, its sessions the update time of their rows, until a turn records a newer one.
    #[test]
    fn version_2_journal_is_migrated_in_order() {
        let dir = TempDir::new();
        {
            let mut conn = Connection::open(dir.db()).expect("raw open");
            let tx = conn.transaction().expect("begin");
            at_version(&tx, 2);
            for id in ["a", "b"] {
                let r = record(id);
                tx.execute(
                    "INSERT INTO sessions (id, cwd, additional_directories, title, created_at, updated_at)
                     VALUES (?1, ?2, '[]', 'T', ?3, ?4)",
                    params![id, r.cwd.to_str(), r.created_at, r.updated_at],
                )
                .expect("session");
            }
            for (n, id) in [(5u64, "a"), (1, "b"), (9, "a"), (3, "b")] {
                let entry = serde_json::to_string(&[event(n, 0), event(n + 1, 0)]).expect("encode");
                tx.execute("INSERT INTO journal (session_id, events) VALUES (?1, ?2)", params![id, entry])
                    .expect("entry");
            }
            tx.commit().expect("commit");
        }
        let store = SqliteStore::open(dir.db()).expect("migrating open");
        assert_eq!(schema_version(&store.lock()).expect("version"), SCHEMA_VERSION);
        let seqs = |id: &str| -> Vec<u64> {
            store.events(&sid(id)).wait().expect("events").iter().map(|e| e.header.seq).collect()
        };
        assert_eq!(seqs("a"), [5, 6, 9, 10]);
        assert_eq!(seqs("b"), [1, 2, 3, 4]);
        let updated = |id: &str| store.session(&sid(id)).wait().expect("read").expect("exists").updated_at;
        assert_eq!(updated("a"), record("a").updated_at);
        store
            .append_events_and_touch(&sid("a"), &[event(11, 0)], None, "2026-12-01T09:00:00.000Z")
            .wait()
            .expect("turn");
        assert_eq!(seqs("a"), [5, 6, 9, 10, 11]);
        assert_eq!(updated("a"), "2026-12-01T09:00:00.000Z");
        assert_eq!(updated("b"), record("b").updated_at);
        assert_eq!(store.session(&sid("a")).wait().expect("read").expect("exists").title.as_deref(), Some("T"));
    }

    /// A version-3 database (entries keyed by one sequence for all sessions, with a session column
    /// and its index) opens as version 4: every session's entries keep their order and times, in
    /// its own range of keys, and appends, reads, lists and deletes work on the migrated file.
    #[test]
    fn version_3_journal_is_migrated_in_order() {
        let dir = TempDir::new();
        {
            let mut conn = Connection::open(dir.db()).expect("raw open");
            let tx = conn.transaction().expect("begin");
            at_version(&tx, 3);
            for (id, title) in [("b", Some("B")), ("a", None), ("c", None)] {
                let r = record(id);
                tx.execute(
                    "INSERT INTO sessions (id, cwd, additional_directories, title, created_at, updated_at)
                     VALUES (?1, ?2, '[\"/x\"]', ?3, ?4, ?5)",
                    params![id, r.cwd.to_str(), title, r.created_at, r.updated_at],
                )
                .expect("session");
            }
            // Interleaved, some without a time (as version 2 left them).
            let entries = [
                (5u64, "a", None),
                (1, "b", Some("2026-12-01T01:00:00.000Z")),
                (9, "a", Some("2026-12-01T02:00:00.000Z")),
                (3, "b", None),
                (7, "a", None),
            ];
            for (n, id, at) in entries {
                let entry = serde_json::to_string(&[event(n, 0), event(n + 1, 0)]).expect("encode");
                tx.execute(
                    "INSERT INTO journal (session_id, updated_at, events) VALUES (?1, ?2, ?3)",
                    params![id, at, entry],
                )
                .expect("entry");
            }
            tx.commit().expect("commit");
        }
        let store = SqliteStore::open(dir.db()).expect("migrating open");
        assert_eq!(schema_version(&store.lock()).expect("version"), SCHEMA_VERSION);
        let seqs = |id: &str| -> Vec<u64> {
            store.events(&sid(id)).wait().expect("events").iter().map(|e| e.header.seq).collect()
        };
        assert_eq!(seqs("a"), [5, 6, 9, 10, 7, 8]);
        assert_eq!(seqs("b"), [1, 2, 3, 4]);
        assert!(seqs("c").is_empty());
        // Sessions numbered in their rows' order, entries from 0 within each.
        let keys: Vec<(i64, i64)> = store
            .lock()
            .prepare("SELECT seq >> 32, seq & 4294967295 FROM journal ORDER BY seq")
            .expect("prepare")
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .expect("query")
            .collect::<Result<_, _>>()
            .expect("keys");
        assert_eq!(keys, [(1, 0), (1, 1), (2, 0), (2, 1), (2, 2)]);
        let read = |id: &str| store.session(&sid(id)).wait().expect("read").expect("exists");
        // The newest entry's time where it has one, else the row's (never an older entry's).
        assert_eq!(read("a").updated_at, record("a").updated_at);
        assert_eq!(read("b").updated_at, record("b").updated_at);
        assert_eq!(read("b").title.as_deref(), Some("B"));
        assert_eq!(read("a").additional_directories, [PathBuf::from("/x")]);
        let listed: Vec<String> =
            store.list_sessions().wait().expect("list").into_iter().map(|r| r.id.0.to_string()).collect();
        assert_eq!(listed, ["a", "b", "c"]);
        // Appends go after each session's last entry, with their times.
        store
            .append_events_and_touch(&sid("a"), &[event(11, 0)], None, "2026-12-01T09:00:00.000Z")
            .wait()
            .expect("turn");
        store.append_events(&sid("a"), &[event(12, 0)]).wait().expect("append");
        store.append_events(&sid("c"), &[event(1, 0)]).wait().expect("append");
        assert_eq!(seqs("a"), [5, 6, 9, 10, 7, 8, 11, 12]);
        assert_eq!(seqs("c"), [1]);
        assert_eq!(read("a").updated_at, "2026-12-01T09:00:00.000Z");
        // Deleting the newest session frees its number; the next session starts empty.
        store.delete_session(&sid("c")).wait().expect("delete");
        store.create_session(&record("d")).wait().expect("create");
        assert!(seqs("d").is_empty());
        assert_eq!(seqs("a"), [5, 6, 9, 10, 7, 8, 11, 12]);
        assert_eq!(seqs("b"), [1, 2, 3, 4]);
    }

    /// A system prompt: the client's text, appended to the agent's own.
    fn system_prompt(text: &str) -> SystemPrompt {
        SystemPrompt::new(vec![acp_facade::harness::content::text_block(text)])
    }

    /// A version-5 database (no system prompts) opens as version 6 with its sessions whole: each
    /// reads no system prompt, until one is set; new sessions keep theirs.
    #[test]
    fn version_5_sessions_gain_no_system_prompt() {
        let dir = TempDir::new();
        {
            let mut conn = Connection::open(dir.db()).expect("raw open");
            let tx = conn.transaction().expect("begin");
            at_version(&tx, 5);
            let r = record("a");
            let additional = serde_json::to_string(&r.additional_directories).expect("encode");
            tx.execute(
                "INSERT INTO sessions (id, cwd, additional_directories, title, created_at, updated_at)
                 VALUES ('a', ?1, ?2, NULL, ?3, ?4)",
                params![r.cwd.to_str(), additional, r.created_at, r.updated_at],
            )
            .expect("session");
            tx.commit().expect("commit");
        }
        let store = SqliteStore::open(dir.db()).expect("migrating open");
        assert_eq!(schema_version(&store.lock()).expect("version"), SCHEMA_VERSION);
        assert_eq!(store.session(&sid("a")).wait().expect("read"), Some(record("a")), "no system prompt");
        assert_eq!(store.list_sessions().wait().expect("list"), [record("a")]);
        store.set_system_prompt(&sid("a"), &system_prompt("later")).wait().expect("set");
        let mut b = record("b");
        b.system_prompt = Some(system_prompt("b's"));
        store.create_session(&b).wait().expect("create");
        drop(store);
        let store = SqliteStore::open(dir.db()).expect("reopen");
        let read = |id: &str| store.session(&sid(id)).wait().expect("read").expect("exists").system_prompt;
        assert_eq!(read("a"), Some(system_prompt("later")));
        assert_eq!(read("b"), Some(system_prompt("b's")));
    }

    /// A version-6 database (no principals) opens as version 7 with its sessions whole and without
    /// principal: they page for a connection without principal, not for one with; new sessions
    /// keep their principal.
    #[test]
    fn version_6_sessions_gain_no_principal() {
        let dir = TempDir::new();
        {
            let mut conn = Connection::open(dir.db()).expect("raw open");
            let tx = conn.transaction().expect("begin");
            at_version(&tx, 6);
            for id in ["b", "a"] {
                let r = record(id);
                let additional = serde_json::to_string(&r.additional_directories).expect("encode");
                tx.execute(
                    "INSERT INTO sessions (id, cwd, additional_directories, title, created_at, updated_at)
                     VALUES (?1, ?2, ?3, NULL, ?4, ?5)",
                    params![id, r.cwd.to_str(), additional, r.created_at, r.updated_at],
                )
                .expect("session");
            }
            tx.commit().expect("commit");
        }
        let store = SqliteStore::open(dir.db()).expect("migrating open");
        assert_eq!(schema_version(&store.lock()).expect("version"), SCHEMA_VERSION);
        assert_eq!(store.session(&sid("a")).wait().expect("read"), Some(record("a")), "no principal");
        let alice = Principal::new("alice");
        let mut c = record("c");
        c.principal = Some(alice.clone());
        store.create_session(&c).wait().expect("create");
        let page = |principal: Option<&Principal>, after: Option<&str>| {
            let query = PageQuery { principal, cwd: None, after, limit: 10 };
            store.list_page(&query).wait().expect("page").into_iter().map(|r| r.id.0.to_string()).collect::<Vec<_>>()
        };
        assert_eq!(page(None, None), ["a", "b"]);
        assert_eq!(page(None, Some("a")), ["b"]);
        assert_eq!(page(Some(&alice), None), ["c"]);
        assert_eq!(page(Some(&Principal::new("bob")), None), Vec::<String>::new());
        assert_eq!(store.session(&sid("c")).wait().expect("read").expect("exists").principal, Some(alice));
    }

    /// `session/list`'s keyset reads are served by the principal indexes: the plan searches an
    /// index (no scan of the table, no sort), whatever the principal and cwd.
    #[test]
    fn page_queries_search_an_index() {
        let store = SqliteStore::open(MEMORY).expect("open");
        let conn = store.lock();
        let none = Option::<&str>::None;
        for (condition, index, params) in [
            (PAGE_ANY_CWD, "sessions_by_principal ", params![none, "", 10]),
            (PAGE_ONE_CWD, "sessions_by_principal_cwd ", params![none, "", 10, "/w"]),
        ] {
            let plan: Vec<String> = conn
                .prepare(&format!("EXPLAIN QUERY PLAN SELECT {SESSION_COLUMNS} FROM sessions s {condition}"))
                .expect("prepare")
                .query_map(params, |r| r.get::<_, String>(3))
                .expect("query")
                .collect::<Result<_, _>>()
                .expect("plan");
            let outer: Vec<&String> =
                plan.iter().filter(|step| step.contains(" s ") || step.contains("B-TREE")).collect();
            assert_eq!(outer.len(), 1, "one step on the sessions, no sort: {plan:?}");
            assert!(outer[0].starts_with("SEARCH s USING INDEX ") && outer[0].contains(index), "{plan:?}");
        }
    }

    /// A page is one principal's sessions in one cwd (or any), after a position, in id byte order.
    #[test]
    fn a_page_is_one_principals_sessions_in_id_order() {
        let store = SqliteStore::open(MEMORY).expect("open");
        let alice = Principal::new("alice");
        for (id, principal, cwd) in [
            ("b", Some(&alice), "/w/one"),
            ("a", Some(&alice), "/w/two"),
            ("Z", Some(&alice), "/w/one"),
            ("c", None, "/w/one"),
            ("d", Some(&Principal::new("bob")), "/w/one"),
        ] {
            let mut r = record(id);
            r.principal = principal.cloned();
            r.cwd = PathBuf::from(cwd);
            store.create_session(&r).wait().expect("create");
        }
        let page = |cwd: Option<&str>, after: Option<&str>, limit: usize| {
            let query = PageQuery { principal: Some(&alice), cwd: cwd.map(Path::new), after, limit };
            store.list_page(&query).wait().expect("page").into_iter().map(|r| r.id.0.to_string()).collect::<Vec<_>>()
        };
        assert_eq!(page(None, None, 10), ["Z", "a", "b"]);
        assert_eq!(page(None, None, 2), ["Z", "a"]);
        assert_eq!(page(None, Some("a"), 2), ["b"]);
        assert_eq!(page(Some("/w/one"), None, 10), ["Z", "b"]);
        assert_eq!(page(Some("/w/one"), Some("Z"), 10), ["b"]);
        assert_eq!(page(Some("/w/three"), None, 10), Vec::<String>::new());
    }

    /// A system prompt is stored as the JSON of its wire form; one that does not decode is an
    /// error naming the session and the column, for a read and a list alike, and the session can
    /// still be given a good one or deleted.
    #[test]
    fn an_unreadable_system_prompt_is_an_error_naming_its_session() {
        let store = SqliteStore::open(MEMORY).expect("open");
        let mut a = record("a");
        a.system_prompt = Some(system_prompt("extra"));
        store.create_session(&a).wait().expect("create");
        let stored: String = store
            .lock()
            .query_row("SELECT system_prompt FROM sessions WHERE id = 'a'", [], |r| r.get(0))
            .expect("stored");
        assert_eq!(stored, r#"{"mode":"append","content":[{"type":"text","text":"extra"}]}"#);
        for garbage in [
            "'{\"mode\": \"append\", '", // truncated
            "'not json'",                // not JSON
            "'{\"mode\": \"append\"}'",  // no content
            "'[]'",                      // not an object
            "x'00ff'",                   // a blob
            "CAST(x'7bff' AS TEXT)",     // invalid UTF-8
            "42",                        // a number
        ] {
            store
                .lock()
                .execute(&format!("UPDATE sessions SET system_prompt = {garbage} WHERE id = 'a'"), [])
                .expect("garble");
            let err = store.session(&sid("a")).wait().expect_err(garbage);
            assert!(err.message().contains("session a"), "{garbage}: {err}");
            assert!(err.message().contains("system_prompt"), "{garbage}: {err}");
            let err = store.list_sessions().wait().expect_err(garbage);
            assert!(err.message().contains("session a"), "{garbage}: {err}");
        }
        store.set_system_prompt(&sid("a"), &system_prompt("fixed")).wait().expect("set");
        assert_eq!(
            store.session(&sid("a")).wait().expect("read").expect("exists").system_prompt,
            Some(system_prompt("fixed"))
        );
        store.lock().execute("UPDATE sessions SET system_prompt = 'not json' WHERE id = 'a'", []).expect("garble");
        store.delete_session(&sid("a")).wait().expect("delete");
        assert!(store.list_sessions().wait().expect("list").is_empty());
    }

    /// A version-4 database, whose entries hold every event in the full form, opens as version 5
    /// with nothing rewritten: the old entries read back whole, new ones are written in the
    /// compact form, and a session's events come back in order across both.
    #[test]
    fn version_4_entries_are_read_beside_compact_ones() {
        let dir = TempDir::new();
        let mut old = event(1, 0);
        old.header.id = EventId::new("a#1");
        old.header.coordinates.turn_id = Some(acp_facade::harness::TurnId::new("t1"));
        let full = serde_json::to_string(&[old.clone(), event(2, 0)]).expect("encode");
        {
            let mut conn = Connection::open(dir.db()).expect("raw open");
            let tx = conn.transaction().expect("begin");
            at_version(&tx, 4);
            let r = record("a");
            tx.execute(
                "INSERT INTO sessions (num, id, cwd, created_at, updated_at) VALUES (1, 'a', ?1, ?2, ?3)",
                params![r.cwd.to_str(), r.created_at, r.updated_at],
            )
            .expect("session");
            tx.execute("INSERT INTO journal (seq, updated_at, events) VALUES (1 << 32, NULL, ?1)", [&full])
                .expect("entry");
            tx.commit().expect("commit");
        }
        let store = SqliteStore::open(dir.db()).expect("migrating open");
        assert_eq!(schema_version(&store.lock()).expect("version"), SCHEMA_VERSION);
        let mut new = event(3, 0);
        new.header.id = EventId::new("a#3");
        store.append_events(&sid("a"), &[new.clone()]).wait().expect("append");
        assert_eq!(store.events(&sid("a")).wait().expect("events"), [old, event(2, 0), new]);
        let entries: Vec<String> = store
            .lock()
            .prepare("SELECT events FROM journal ORDER BY seq")
            .expect("prepare")
            .query_map([], |r| r.get(0))
            .expect("query")
            .collect::<Result<_, _>>()
            .expect("entries");
        assert_eq!(entries[0], full, "an old entry is left as it was");
        assert_eq!(entries[1], r#"[{"seq":3,"kind":{"type":"context_measured","used":3,"size":0}}]"#);
    }

    /// A session's entries stay within its range of keys: an append to a full range is refused,
    /// and the next session's range is untouched. An unknown session is refused, with nothing written.
    #[test]
    fn appends_stay_in_their_sessions_range() {
        let store = SqliteStore::open(MEMORY).expect("open");
        store.create_session(&record("a")).wait().expect("create");
        store.create_session(&record("b")).wait().expect("create");
        store.append_event(&sid("a"), &event(1, 0)).wait().expect("append");
        // a's range filled up to its last key (as 2³² appends would leave it).
        for (key, n) in [("(2 << 32) - 2", 2), ("(2 << 32) - 1", 3)] {
            let entry = serde_json::to_string(&[event(n, 0)]).expect("encode");
            store
                .lock()
                .execute(&format!("INSERT INTO journal (seq, updated_at, events) VALUES ({key}, NULL, ?1)"), [entry])
                .expect("raw entry");
        }
        for with_time in [false, true] {
            let appended = if with_time {
                store.append_events_and_touch(&sid("a"), &[event(4, 0)], None, "2026-12-01T09:00:00.000Z").wait()
            } else {
                store.append_events(&sid("a"), &[event(4, 0)]).wait()
            };
            let err = appended.expect_err("the range is full");
            assert!(err.message().contains("journal of session a is full"), "{err}");
        }
        assert_eq!(store.events(&sid("a")).wait().expect("events"), [event(1, 0), event(2, 0), event(3, 0)]);
        assert!(store.events(&sid("b")).wait().expect("events").is_empty());
        store.append_event(&sid("b"), &event(5, 0)).wait().expect("append");
        assert_eq!(store.events(&sid("b")).wait().expect("events"), [event(5, 0)]);
        for with_time in [false, true] {
            let appended = if with_time {
                store.append_events_and_touch(&sid("nope"), &[event(5, 0)], None, "2026-12-01T09:00:00.000Z").wait()
            } else {
                store.append_events(&sid("nope"), &[event(5, 0)]).wait()
            };
            let err = appended.expect_err("unknown session");
            assert!(err.message().contains("no session nope"), "{err}");
        }
        let entries: i64 = store.lock().query_row("SELECT COUNT(*) FROM journal", [], |r| r.get(0)).expect("count");
        assert_eq!(entries, 4);
    }

    /// The entry buffer is kept between appends, but not when an entry made it large; every entry
    /// is written whole, whatever the buffer held before.
    #[test]
    fn the_entry_buffer_is_reused_within_bounds() {
        let store = SqliteStore::open(MEMORY).expect("open");
        store.create_session(&record("a")).wait().expect("create");
        let long = |n: u64| {
            let mut e = event(n, 0);
            e.header.id = EventId::new("x".repeat(2 * ENTRY_BUFFER_KEPT));
            e
        };
        store.append_events(&sid("a"), &[event(1, 0), event(2, 0)]).wait().expect("append");
        let kept = store.entry_buffer().capacity();
        assert!(kept > 0, "the buffer is kept");
        store.append_event(&sid("a"), &event(3, 0)).wait().expect("append");
        assert_eq!(store.entry_buffer().capacity(), kept, "and reused");
        store.append_event(&sid("a"), &long(4)).wait().expect("append a long entry");
        assert_eq!(store.entry_buffer().capacity(), 0, "a large buffer is freed");
        store.append_event(&sid("a"), &event(5, 0)).wait().expect("append");
        assert_eq!(
            store.events(&sid("a")).wait().expect("events"),
            [event(1, 0), event(2, 0), event(3, 0), long(4), event(5, 0)]
        );
    }

    /// A turn that records only its time writes its entry and nothing else; the session reports
    /// the newest time it was given, whichever way (entry or catalog row) it was recorded.
    #[test]
    fn the_update_time_travels_with_the_journal() {
        let store = SqliteStore::open(MEMORY).expect("open");
        store.create_session(&record("a")).wait().expect("create");
        let row_time = || -> String {
            store.lock().query_row("SELECT updated_at FROM sessions WHERE id = 'a'", [], |r| r.get(0)).expect("row")
        };
        let reported = || store.session(&sid("a")).wait().expect("read").expect("exists").updated_at;
        let listed = || store.list_sessions().wait().expect("list").remove(0).updated_at;

        store
            .append_events_and_touch(&sid("a"), &[event(1, 0)], None, "2026-12-01T10:00:00.000Z")
            .wait()
            .expect("turn");
        assert_eq!(row_time(), record("a").updated_at, "the catalog row is not written");
        assert_eq!(
            (reported(), listed()),
            ("2026-12-01T10:00:00.000Z".to_owned(), "2026-12-01T10:00:00.000Z".to_owned())
        );
        // An entry written without a time (mid-turn) keeps the newest one.
        store.append_events(&sid("a"), &[event(2, 0)]).wait().expect("append");
        assert_eq!(reported(), "2026-12-01T10:00:00.000Z");
        // A touch of the row with a later time is reported; then a later turn again.
        store.touch_session(&sid("a"), None, "2026-12-01T11:00:00.000Z").wait().expect("touch");
        assert_eq!(
            (reported(), listed()),
            ("2026-12-01T11:00:00.000Z".to_owned(), "2026-12-01T11:00:00.000Z".to_owned())
        );
        store
            .append_events_and_touch(&sid("a"), &[event(3, 0)], None, "2026-12-01T12:00:00.000Z")
            .wait()
            .expect("turn");
        assert_eq!(reported(), "2026-12-01T12:00:00.000Z");
        // A title goes to the row, with the time.
        store
            .append_events_and_touch(&sid("a"), &[event(4, 0)], Some("T"), "2026-12-01T13:00:00.000Z")
            .wait()
            .expect("titled turn");
        assert_eq!(row_time(), "2026-12-01T13:00:00.000Z");
        let a = store.session(&sid("a")).wait().expect("read").expect("exists");
        assert_eq!((a.title.as_deref(), a.updated_at.as_str()), (Some("T"), "2026-12-01T13:00:00.000Z"));
        // A touch without events is a touch of the row; an unknown session is refused.
        store.append_events_and_touch(&sid("a"), &[], None, "2026-12-01T14:00:00.000Z").wait().expect("touch only");
        assert_eq!(reported(), "2026-12-01T14:00:00.000Z");
        let err = store
            .append_events_and_touch(&sid("nope"), &[event(5, 0)], None, "2026-12-01T14:00:00.000Z")
            .wait()
            .expect_err("unknown session");
        assert!(err.message().contains("no session nope"), "{err}");
        assert_eq!(store.events(&sid("a")).wait().expect("events").len(), 4);
    }

    /// A failed write leaves nothing behind: the entry and the touch of one append are one
    /// transaction, and the connection is usable afterwards.
    #[test]
    fn failed_write_is_rolled_back() {
        let store = SqliteStore::open(MEMORY).expect("open");
        store.create_session(&record("a")).wait().expect("create");
        let err = store.write("test", |conn| {
            insert_events(conn, &mut Vec::new(), &sid("a"), &[event(1, 0)], None)?;
            Err::<(), _>(StoreError::new("the second step failed"))
        });
        assert!(err.is_err());
        assert!(store.events(&sid("a")).wait().expect("events").is_empty());
        let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _ = store.write("test", |conn| -> Result<(), StoreError> {
                insert_events(conn, &mut Vec::new(), &sid("a"), &[event(2, 0)], None)?;
                panic!("a panic mid-write");
            });
        }));
        assert!(panicked.is_err());
        assert!(store.events(&sid("a")).wait().expect("events").is_empty());
        assert!(store.lock().is_autocommit(), "no transaction left open");
        store
            .append_events_and_touch(&sid("a"), &[event(3, 0)], Some("T"), "2026-11-30T14:00:00.000Z")
            .wait()
            .expect("append");
        assert_eq!(store.events(&sid("a")).wait().expect("events").len(), 1);
        assert_eq!(store.session(&sid("a")).wait().expect("read").expect("exists").title.as_deref(), Some("T"));
    }

    /// The schema of a new database is exactly what the migrations build from version 0.
    #[test]
    fn new_schema_equals_the_migrated_one() {
        fn schema(conn: &Connection) -> Vec<(String, String, Option<String>)> {
            // `sqlite_sequence` is SQLite's own, left behind by version 1's `AUTOINCREMENT` and
            // unused since version 2 (SQLite never drops it).
            conn.prepare(
                "SELECT type, name, sql FROM sqlite_master WHERE name != 'sqlite_sequence' ORDER BY type, name",
            )
            .expect("prepare")
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .expect("query")
            .collect::<Result<_, _>>()
            .expect("rows")
        }
        let new = SqliteStore::open(MEMORY).expect("open");
        let mut migrated = Connection::open_in_memory().expect("raw open");
        let tx = migrated.transaction().expect("begin");
        for step in MIGRATIONS {
            step(&tx).expect("migration step");
        }
        tx.commit().expect("commit");
        assert_eq!(schema(&new.lock()), schema(&migrated));
    }

    #[test]
    fn not_a_database_is_an_error() {
        let dir = TempDir::new();
        std::fs::write(dir.db(), b"this is not an SQLite database, just some text".repeat(100)).expect("write");
        let err = SqliteStore::open(dir.db()).expect_err("garbage file");
        assert!(err.message().contains("not a database"), "{err}");
    }

    #[test]
    fn corrupt_rows_are_errors_not_panics() {
        let store = SqliteStore::open(MEMORY).expect("open");
        store.create_session(&record("a")).wait().expect("create");
        store.append_event(&sid("a"), &event(1, 0)).wait().expect("append");
        store.append_event(&sid("a"), &event(2, 0)).wait().expect("append");

        // A truncated body.
        store
            .lock()
            .execute("UPDATE journal SET events = substr(events, 1, 20) WHERE seq = (SELECT MAX(seq) FROM journal)", [])
            .expect("truncate");
        let err = store.events(&sid("a")).wait().expect_err("truncated");
        assert!(err.message().contains("unreadable"), "{err}");

        // Valid JSON that is not an event.
        store.lock().execute("UPDATE journal SET events = '[{\"header\": 3}]'", []).expect("garble");
        assert!(store.events(&sid("a")).wait().is_err());
        // An event where an array of events belongs.
        let one = serde_json::to_string(&event(1, 0)).expect("encode");
        store.lock().execute("UPDATE journal SET events = ?1", [one]).expect("not an array");
        assert!(store.events(&sid("a")).wait().is_err());

        // Not text at all: invalid UTF-8 bytes.
        store.lock().execute("UPDATE journal SET events = CAST(x'fffe00' AS TEXT)", []).expect("binary");
        assert!(store.events(&sid("a")).wait().is_err());
        store.lock().execute("UPDATE journal SET events = x'00ff'", []).expect("blob");
        assert!(store.events(&sid("a")).wait().is_err());

        // A corrupt catalog row.
        store
            .lock()
            .execute("UPDATE sessions SET additional_directories = '[\"/a\", ' WHERE id = 'a'", [])
            .expect("garble");
        let err = store.session(&sid("a")).wait().expect_err("corrupt record");
        assert!(err.message().contains("additional_directories"), "{err}");
        assert!(store.list_sessions().wait().is_err());
        store.lock().execute("UPDATE sessions SET cwd = x'0102' WHERE id = 'a'", []).expect("wrong type");
        assert!(store.session(&sid("a")).wait().is_err());

        // The store still works, and deleting the bad session clears it.
        store.delete_session(&sid("a")).wait().expect("delete");
        assert!(store.list_sessions().wait().expect("list").is_empty());
    }
}
