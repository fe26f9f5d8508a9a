//! How the store's connections are set up — waiting for other writers, WAL, `synchronous=FULL`,
//! foreign keys — and how a failed `SQLite` call becomes a [`StoreError`].
//!
//! Invariant: every connection waits (up to [`BUSY_TIMEOUT`]) for another's write instead of
//! failing, and a file database runs in WAL mode with an fsync per commit, or is not opened.

use std::time::{Duration, Instant};

use rusqlite::Connection;

use super::BUSY_TIMEOUT;
use crate::store::StoreError;

/// Per-connection settings.
pub(super) fn configure(conn: &Connection, in_memory: bool) -> Result<(), StoreError> {
    // First, so that everything below also waits for other connections rather than failing.
    conn.busy_timeout(BUSY_TIMEOUT).map_err(|e| sql_error("set busy timeout", &e))?;
    if !in_memory {
        // WAL: a crash mid-write leaves the main database file untouched (the uncommitted tail
        // of the WAL is ignored on recovery), and readers never block the writer. The mode is
        // stored in the file; setting it again is a no-op.
        let mode = switch_to_wal(conn)?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(StoreError::new(format!(
                "cannot use WAL journal mode (got {mode}); is the file on a network filesystem?"
            )));
        }
        // FULL rather than NORMAL: both keep the database uncorrupted through any crash (WAL plus
        // transactions give that), but NORMAL may lose the last commits on power loss. The
        // journal holds few, small Enduring events, so an fsync per commit is cheap, and an event
        // the client has seen is never forgotten.
        conn.pragma_update(None, "synchronous", "FULL").map_err(|e| sql_error("set synchronous=FULL", &e))?;
    }
    conn.pragma_update(None, "foreign_keys", "ON").map_err(|e| sql_error("set foreign_keys=ON", &e))?;
    let foreign_keys: bool = conn
        .pragma_query_value(None, "foreign_keys", |row| row.get(0))
        .map_err(|e| sql_error("read foreign_keys", &e))?;
    if !foreign_keys {
        return Err(StoreError::new("SQLite refused foreign_keys=ON".to_owned()));
    }
    Ok(())
}

/// Sets the WAL journal mode; answers the mode the file is now in. `SQLite` answers "database is
/// locked" to the switch at once, without its busy handler, while another connection holds the
/// fresh file (two processes opening a new store together): the switch is retried until
/// [`BUSY_TIMEOUT`], as every other statement waits.
fn switch_to_wal(conn: &Connection) -> Result<String, StoreError> {
    let deadline = Instant::now() + BUSY_TIMEOUT;
    loop {
        match conn.pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get::<_, String>(0)) {
            Err(rusqlite::Error::SqliteFailure(e, _))
                if e.code == rusqlite::ErrorCode::DatabaseBusy && Instant::now() < deadline =>
            {
                std::thread::sleep(Duration::from_millis(5));
            }
            result => return result.map_err(|e| sql_error("set journal_mode=WAL", &e)),
        }
    }
}

pub(super) fn sql_error(what: &str, e: &rusqlite::Error) -> StoreError {
    StoreError::new(format!("{what}: {e}"))
}
