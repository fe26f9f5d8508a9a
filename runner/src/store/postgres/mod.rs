//! The `PostgreSQL` [`Store`]: the session catalog and every session's journal in one database
//! shared by any number of agent processes on any number of machines.
//!
//! The client is `tokio-postgres` (the native async `PostgreSQL` client) behind a
//! `deadpool-postgres` pool, over TLS (rustls) as the URL's `sslmode` and `sslrootcert` ask, with
//! libpq's meanings (see [`PostgresStore::connect`]; `tls` holds the rules).
//!
//! # Invariants
//!
//! - **The `SQLite` store's semantics.** Every write is one statement, so one transaction: a batch
//!   of events and its catalog update are applied together or not at all. A session's events
//!   are read back in append order (`acp_journal.n`, an identity: a session's appends are made one
//!   after another, each after the previous one committed, so each draws a larger `n`). Deleting a
//!   session deletes its journal in the same statement (`ON DELETE CASCADE`). The schema is
//!   versioned and migrated on open, safely with concurrent openers (see `schema`).
//! - **One live owner per session, fleet-wide.** `acp_sessions.owner` names the process that has
//!   the session live, as long as that process's lease is alive (see `lease`). Creating a session
//!   sets its owner; [`Store::claim_session`] sets it only when the session has no live owner;
//!   releasing clears it. Every write to a session — append, touch, system prompt — checks in its
//!   own statement that this process is the owner (the row stays locked until it commits), and a
//!   claim waits for that lock: a takeover is ordered after the previous owner's last write, which
//!   the new owner then reads, and the old owner's later writes fail
//!   ([`NotOwner`](crate::StoreErrorKind::NotOwner)). No two processes ever append to one session
//!   interleaved.
//! - **Calls are idempotent.** A call whose connection broke is run once more on a fresh
//!   connection (see `db`), and the runner repeats a batch after an unavailable store; so an
//!   append whose first event's `seq` already starts an entry of the session (`UNIQUE (session_id,
//!   first_seq)`) is taken as done, a create that finds its own session (same owner, same creation
//!   time) succeeds, and claims, releases, deletes and setting a system prompt are naturally
//!   repeatable.
//! - **Bounded waits.** Every call waits at most [`PostgresOptions::timeout`] (for a connection,
//!   then for the answer), then fails with [`Unavailable`](crate::StoreErrorKind::Unavailable);
//!   the pool reconnects when the database returns.

mod db;
mod lease;
mod local_socket;
mod schema;
mod ssl_params;
mod tls;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use tokio_postgres::Row;

use self::db::Db;
use self::lease::{Lease, Owner};
use crate::store::{Claim, PageQuery, SessionRecord, Store, StoreError};
use acp_facade::acp::{SessionId, SystemPrompt};
use acp_facade::harness::Event;
use acp_facade::host::Principal;

/// The longest [`PostgresStore::close`] waits.
pub const CLOSE_LIMIT: Duration = Duration::from_secs(3);

/// Settings of a [`PostgresStore`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct PostgresOptions {
    /// How long this process's sessions stay its own after its last lease renewal (renewed every
    /// fifth of it): the longest another process waits to take a session over after this one
    /// died. Default 10 s.
    pub lease: Duration,
    /// The most connections this store opens. Default 4.
    pub pool_size: usize,
    /// The longest a call waits for a connection, and then for its answer. Default 10 s.
    pub timeout: Duration,
}

impl Default for PostgresOptions {
    fn default() -> Self {
        Self { lease: Duration::from_secs(10), pool_size: 4, timeout: Duration::from_secs(10) }
    }
}

impl PostgresOptions {
    /// Sets the lease (at least 100 ms).
    #[must_use]
    pub fn lease(mut self, lease: Duration) -> Self {
        self.lease = lease.max(Duration::from_millis(100));
        self
    }

    /// Sets the pool size (at least 1).
    #[must_use]
    pub fn pool_size(mut self, size: usize) -> Self {
        self.pool_size = size.max(1);
        self
    }

    /// Sets the call timeout.
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }
}

/// A [`Store`] in a `PostgreSQL` database, shared by every process that opens the same database
/// (see the module doc for its guarantees).
pub struct PostgresStore {
    db: Arc<Db>,
    owner: Arc<Owner>,
    cursor_key: [u8; 32],
    lease: Lease,
}

impl std::fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresStore")
            .field("target", &self.db.target())
            .field("owner", &self.owner.id)
            .finish_non_exhaustive()
    }
}

impl PostgresStore {
    /// Connects to the database at `url` (`postgres://user:password@host:port/dbname`, or
    /// `postgres://user@/dbname?host=/run/postgresql` for a Unix socket; any libpq-style
    /// connection string) with the default [`PostgresOptions`].
    ///
    /// TLS is what the URL's `sslmode` asks, as in libpq: `disable`; `prefer`, the default (TLS
    /// when the server offers it, its certificate not checked); `require` (TLS, the certificate
    /// not checked); `verify-ca` (the certificate's chain checked up to a root); `verify-full`
    /// (the chain, and that the certificate names the URL's host). The roots are the PEM file
    /// `sslrootcert=FILE` names — given with `prefer` or `require`, it makes them check the chain
    /// too, as libpq does — or, without it or with `sslrootcert=system`, the Mozilla roots built in
    /// (`webpki-roots`; no system store is read). For example
    /// `postgres://app:secret@db.example/sessions?sslmode=verify-full&sslrootcert=/etc/ssl/db-ca.pem`.
    /// Over a Unix socket no TLS is used, whatever the mode. Another `sslmode` (`allow` too) or an
    /// `sslrootcert` that cannot be read fails at once with an error naming the parameter.
    ///
    /// Fails when the database cannot be reached (within the timeout) or used: the schema is
    /// created or migrated, the cursor key read, and this process's lease registered, before this
    /// returns. A certificate that fails its check fails the connection, saying why. Must be
    /// called within a Tokio runtime, which then runs the lease's heartbeat.
    pub async fn connect(url: &str) -> Result<Self, StoreError> {
        Self::connect_with(url, PostgresOptions::default()).await
    }

    /// Like [`PostgresStore::connect`], with `options`.
    pub async fn connect_with(url: &str, options: PostgresOptions) -> Result<Self, StoreError> {
        let db = Arc::new(Db::new(url, options.pool_size, options.timeout)?);
        let cursor_key = schema::prepare(&db).await?;
        let owner = Arc::new(Owner::new());
        let lease = Lease::register(&db, &owner, options.lease).await?;
        tracing::debug!(target = db.target(), owner = owner.id, "PostgreSQL session store open");
        Ok(Self { db, owner, cursor_key, lease })
    }

    /// Ends this process's use of the store: stops renewing its lease and frees every session it
    /// still owns at once (without this, they are free when the lease expires). Waits at most
    /// [`CLOSE_LIMIT`] (a process on its way out should not hang on a database that is down: the
    /// lease then expires on its own). The store must not be used afterwards.
    pub async fn close(&self) -> Result<(), StoreError> {
        match tokio::time::timeout(CLOSE_LIMIT, self.lease.retire(&self.db, &self.owner)).await {
            Ok(retired) => retired,
            Err(_) => Err(StoreError::unavailable(format!(
                "could not retire this process's lease within {CLOSE_LIMIT:?} ({}): its sessions are free \
                 once it expires",
                self.db.target()
            ))),
        }
    }

    /// This process's owner id (its row in `acp_owners`).
    pub fn owner_id(&self) -> &str {
        &self.owner.id
    }
}

/// A session's live owner, if it has one: `(pid, host)`, NULLs when it has none.
const HOLDER: &str = "SELECT o.pid, o.host FROM acp_sessions s
     LEFT JOIN acp_owners o ON o.id = s.owner AND o.expires_at > now()
     WHERE s.id = $1";

/// `process PID on HOST` from a [`HOLDER`] row, or `None`.
fn holder_of(row: &Row) -> Option<String> {
    let pid: Option<i64> = row.get(0);
    let host: Option<String> = row.get(1);
    Some(format!("process {} on {}", pid?, host?))
}

fn path_text<'p>(path: &'p std::path::Path, what: &str) -> Result<&'p str, StoreError> {
    path.to_str()
        .ok_or_else(|| StoreError::new(format!("{what} {} is not valid UTF-8 and cannot be stored", path.display())))
}

/// A session's record from a row of `session_columns!`; a system prompt that does not decode is
/// an error naming the session.
fn record_of(row: &Row) -> Result<SessionRecord, StoreError> {
    let id: String = row.get(0);
    let additional: Vec<String> = row.get(2);
    let system_prompt = row
        .get::<_, Option<&str>>(6)
        .map(serde_json::from_str::<SystemPrompt>)
        .transpose()
        .map_err(|e| StoreError::new(format!("session {id}: unreadable system_prompt: {e}")))?;
    Ok(SessionRecord {
        id: SessionId::new(id),
        cwd: PathBuf::from(row.get::<_, String>(1)),
        additional_directories: additional.into_iter().map(PathBuf::from).collect(),
        title: row.get(3),
        created_at: row.get(4),
        updated_at: row.get(5),
        system_prompt,
        principal: row.get::<_, Option<String>>(7).map(Principal::new),
    })
}

/// The column text of a system prompt: its ACP wire form as JSON.
fn encode_system_prompt(id: &SessionId, system_prompt: &SystemPrompt) -> Result<String, StoreError> {
    serde_json::to_string(system_prompt)
        .map_err(|e| StoreError::new(format!("encoding the system prompt of session {id}: {e}")))
}

/// The key of an append: its first event's `seq`.
fn first_seq(id: &SessionId, events: &[Event]) -> Result<i64, StoreError> {
    let seq = events.first().map_or(0, |e| e.header.seq);
    i64::try_from(seq).map_err(|_| StoreError::new(format!("session {id}: seq {seq} is too large to store")))
}

/// The events of one append as a JSON array, in the compact form (`crate::store::entry`).
fn encode_events(id: &SessionId, events: &[Event]) -> Result<String, StoreError> {
    let mut entry = Vec::with_capacity(128 * events.len());
    crate::store::entry::encode(&mut entry, id, events)
        .map_err(|e| StoreError::new(format!("encoding an event of session {id}: {e}")))?;
    String::from_utf8(entry).map_err(|e| StoreError::new(format!("encoding an event of session {id}: {e}")))
}

const APPEND: &str = "WITH owned AS (SELECT id FROM acp_sessions WHERE id = $1 AND owner = $2 FOR SHARE),
     appended AS (INSERT INTO acp_journal (session_id, first_seq, events) SELECT id, $3, $4 FROM owned
                  ON CONFLICT (session_id, first_seq) DO NOTHING RETURNING 1)
     SELECT (SELECT count(*) FROM owned), (SELECT count(*) FROM appended)";

const APPEND_AND_TOUCH: &str = "WITH owned AS (UPDATE acp_sessions SET title = COALESCE($5, title), updated_at = $6
                    WHERE id = $1 AND owner = $2 RETURNING id),
     appended AS (INSERT INTO acp_journal (session_id, first_seq, events) SELECT id, $3, $4 FROM owned
                  ON CONFLICT (session_id, first_seq) DO NOTHING RETURNING 1)
     SELECT (SELECT count(*) FROM owned), (SELECT count(*) FROM appended)";

impl PostgresStore {
    /// One append, fenced by ownership (see the module doc), with the catalog update when given.
    async fn append(
        &self,
        id: &SessionId,
        events: &[Event],
        touch: Option<(Option<&str>, &str)>,
    ) -> Result<(), StoreError> {
        if events.is_empty() {
            return match touch {
                Some((title, at)) => self.touch_session(id, title, at).await,
                None => Ok(()),
            };
        }
        let first = first_seq(id, events)?;
        let entry = encode_events(id, events)?;
        let what = format!("append events to session {id}");
        let env = (&*id.0, self.owner.id.as_str(), first, entry.as_str(), touch);
        let owned: i64 = self
            .db
            .run(&what, &env, |c, (id, owner, first, entry, touch)| {
                Box::pin(async move {
                    let row = if let Some((title, at)) = touch {
                        let statement = c.prepare_cached(APPEND_AND_TOUCH).await?;
                        c.query_one(&statement, &[id, owner, first, entry, title, at]).await?
                    } else {
                        let statement = c.prepare_cached(APPEND).await?;
                        c.query_one(&statement, &[id, owner, first, entry]).await?
                    };
                    Ok(row.get(0))
                })
            })
            .await?;
        if owned == 0 {
            return Err(self
                .not_owned(id, &what)
                .await?
                .unwrap_or_else(|| StoreError::new(format!("no session {id}"))));
        }
        Ok(())
    }

    /// Why a write to `id` found no session owned by this process: a [`StoreErrorKind::NotOwner`](crate::StoreErrorKind::NotOwner)
    /// error, or `None` when there is no such session.
    async fn not_owned(&self, id: &SessionId, what: &str) -> Result<Option<StoreError>, StoreError> {
        let holder = self.holder(id, what).await?;
        Ok(holder.map(|holder| {
            StoreError::not_owner(match holder {
                Some(holder) => format!("session {id} is owned by another process ({holder})"),
                None => format!("session {id} is not owned by this process: it was closed or taken over"),
            })
        }))
    }

    /// Who has session `id` live: `None` when there is no such session, `Some(None)` when nobody
    /// has it live.
    async fn holder(&self, id: &SessionId, what: &str) -> Result<Option<Option<String>>, StoreError> {
        let row = self
            .db
            .run(what, &*id.0, |c, id| {
                Box::pin(async move {
                    let statement = c.prepare_cached(HOLDER).await?;
                    c.query_opt(&statement, &[&id]).await
                })
            })
            .await?;
        Ok(row.map(|row| holder_of(&row)))
    }
}

const CREATE: &str = "INSERT INTO acp_sessions
         (id, cwd, additional_directories, title, created_at, updated_at, owner, system_prompt, principal)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (id) DO NOTHING";

/// The columns of a session's record, in the order [`record_of`] reads them. A macro, so that the
/// statements holding them stay literals.
macro_rules! session_columns {
    () => {
        "id, cwd, additional_directories, title, created_at, updated_at, system_prompt, principal"
    };
}

const READ_SESSION: &str = concat!("SELECT ", session_columns!(), " FROM acp_sessions WHERE id = $1");

const LIST_SESSIONS: &str = concat!("SELECT ", session_columns!(), " FROM acp_sessions ORDER BY created_at, id");

/// `session/list`'s keyset reads, in session-id byte order: `$1` after this id (`''`: from the
/// first), `$2` at most, then the principal and the cwd where named, in that order. Each is served by one
/// of version 4's indexes (see the schema module).
const PAGE_OF_PRINCIPAL: &str = concat!(
    "SELECT ",
    session_columns!(),
    r#" FROM acp_sessions WHERE principal = $3 AND id COLLATE "C" > $1 ORDER BY id COLLATE "C" LIMIT $2"#
);
const PAGE_OF_PRINCIPAL_IN_CWD: &str = concat!(
    "SELECT ",
    session_columns!(),
    r#" FROM acp_sessions WHERE principal = $3 AND cwd = $4 AND id COLLATE "C" > $1 ORDER BY id COLLATE "C" LIMIT $2"#
);
const PAGE_WITHOUT_PRINCIPAL: &str = concat!(
    "SELECT ",
    session_columns!(),
    r#" FROM acp_sessions WHERE principal IS NULL AND id COLLATE "C" > $1 ORDER BY id COLLATE "C" LIMIT $2"#
);
const PAGE_WITHOUT_PRINCIPAL_IN_CWD: &str = concat!(
    "SELECT ",
    session_columns!(),
    r#" FROM acp_sessions WHERE principal IS NULL AND cwd = $3 AND id COLLATE "C" > $1 ORDER BY id COLLATE "C" LIMIT $2"#
);

const TOUCH: &str = "UPDATE acp_sessions SET title = COALESCE($3, title), updated_at = $4 WHERE id = $1 AND owner = $2";

const SET_SYSTEM_PROMPT: &str = "UPDATE acp_sessions SET system_prompt = $3 WHERE id = $1 AND owner = $2";

const READ_JOURNAL: &str = "SELECT n, events FROM acp_journal WHERE session_id = $1 ORDER BY n";

/// Deletes a session nobody else has live (its journal goes with it: ON DELETE CASCADE).
const DELETE: &str = "DELETE FROM acp_sessions s WHERE s.id = $1 AND (s.owner IS NULL OR s.owner = $2
     OR NOT EXISTS (SELECT 1 FROM acp_owners o WHERE o.id = s.owner AND o.expires_at > now()))";

/// Takes a session nobody else has live, by the database's clock.
const CLAIM: &str = "UPDATE acp_sessions s SET owner = $2 WHERE s.id = $1 AND (s.owner IS NULL OR s.owner = $2
     OR NOT EXISTS (SELECT 1 FROM acp_owners o WHERE o.id = s.owner AND o.expires_at > now()))";

const RELEASE: &str = "UPDATE acp_sessions SET owner = NULL WHERE id = $1 AND owner = $2";

#[async_trait]
impl Store for PostgresStore {
    async fn create_session(&self, record: &SessionRecord) -> Result<(), StoreError> {
        let cwd = path_text(&record.cwd, "cwd")?;
        let additional = record
            .additional_directories
            .iter()
            .map(|p| path_text(p, "additional directory"))
            .collect::<Result<Vec<_>, _>>()?;
        let prompt = record.system_prompt.as_ref().map(|p| encode_system_prompt(&record.id, p)).transpose()?;
        let principal = record.principal.as_ref().map(Principal::as_str);
        let env = (record, cwd, additional, self.owner.id.as_str(), prompt, principal);
        let mut attempts = 0;
        let inserted = self
            .db
            .run(
                &format!("create session {}", record.id),
                &env,
                |c, (record, cwd, additional, owner, prompt, principal)| {
                    attempts += 1;
                    let repeat = attempts > 1;
                    Box::pin(async move {
                        let statement = c.prepare_cached(CREATE).await?;
                        let id = &*record.id.0;
                        let params: [&(dyn tokio_postgres::types::ToSql + Sync); 9] = [
                            &id,
                            cwd,
                            additional,
                            &record.title,
                            &record.created_at,
                            &record.updated_at,
                            owner,
                            prompt,
                            principal,
                        ];
                        if c.execute(&statement, &params).await? == 1 {
                            return Ok(true);
                        }
                        if !repeat {
                            return Ok(false);
                        }
                        // The second attempt, after a broken connection, finds the row the first one
                        // wrote before its answer was lost.
                        let mine = c
                            .query_opt(
                                "SELECT 1 FROM acp_sessions WHERE id = $1 AND owner = $2 AND created_at = $3",
                                &[&id, owner, &record.created_at],
                            )
                            .await?;
                        Ok(mine.is_some())
                    })
                },
            )
            .await?;
        if !inserted {
            return Err(StoreError::new(format!("session {} already exists", record.id)));
        }
        Ok(())
    }

    async fn session(&self, id: &SessionId) -> Result<Option<SessionRecord>, StoreError> {
        let row = self
            .db
            .run(&format!("read session {id}"), &*id.0, |c, id| {
                Box::pin(async move {
                    let statement = c.prepare_cached(READ_SESSION).await?;
                    c.query_opt(&statement, &[&id]).await
                })
            })
            .await?;
        row.as_ref().map(record_of).transpose()
    }

    async fn list_sessions(&self) -> Result<Vec<SessionRecord>, StoreError> {
        let rows = self
            .db
            .run("list sessions", &(), |c, ()| {
                Box::pin(async move {
                    let statement = c.prepare_cached(LIST_SESSIONS).await?;
                    c.query(&statement, &[]).await
                })
            })
            .await?;
        rows.iter().map(record_of).collect()
    }

    async fn list_page(&self, query: &PageQuery<'_>) -> Result<Vec<SessionRecord>, StoreError> {
        let cwd = query.cwd.map(|cwd| path_text(cwd, "cwd")).transpose()?;
        let env = (
            query.principal.map(Principal::as_str),
            cwd,
            query.after.unwrap_or(""),
            i64::try_from(query.limit).unwrap_or(i64::MAX),
        );
        let rows = self
            .db
            .run("list a page of sessions", &env, |c, (principal, cwd, after, limit)| {
                Box::pin(async move {
                    let (sql, params): (&str, Vec<&(dyn tokio_postgres::types::ToSql + Sync)>) = match (principal, cwd)
                    {
                        (Some(principal), None) => (PAGE_OF_PRINCIPAL, vec![after, limit, principal]),
                        (Some(principal), Some(cwd)) => (PAGE_OF_PRINCIPAL_IN_CWD, vec![after, limit, principal, cwd]),
                        (None, None) => (PAGE_WITHOUT_PRINCIPAL, vec![after, limit]),
                        (None, Some(cwd)) => (PAGE_WITHOUT_PRINCIPAL_IN_CWD, vec![after, limit, cwd]),
                    };
                    let statement = c.prepare_cached(sql).await?;
                    c.query(&statement, &params).await
                })
            })
            .await?;
        rows.iter().map(record_of).collect()
    }

    async fn touch_session(&self, id: &SessionId, title: Option<&str>, updated_at: &str) -> Result<(), StoreError> {
        let what = format!("touch session {id}");
        let env = (&*id.0, self.owner.id.as_str(), title, updated_at);
        let touched = self
            .db
            .run(&what, &env, |c, (id, owner, title, updated_at)| {
                Box::pin(async move {
                    let statement = c.prepare_cached(TOUCH).await?;
                    c.execute(&statement, &[id, owner, title, updated_at]).await
                })
            })
            .await?;
        if touched > 0 {
            return Ok(());
        }
        // An unknown session is left alone, as in every store; another's is refused.
        match self.not_owned(id, &what).await? {
            Some(not_owner) => Err(not_owner),
            None => Ok(()),
        }
    }

    /// Fenced by ownership, like a touch: an unknown session is left alone, another process's is
    /// refused ([`NotOwner`](crate::StoreErrorKind::NotOwner)).
    async fn set_system_prompt(&self, id: &SessionId, system_prompt: &SystemPrompt) -> Result<(), StoreError> {
        let system_prompt = encode_system_prompt(id, system_prompt)?;
        let what = format!("set the system prompt of session {id}");
        let env = (&*id.0, self.owner.id.as_str(), system_prompt.as_str());
        let set = self
            .db
            .run(&what, &env, |c, (id, owner, system_prompt)| {
                Box::pin(async move {
                    let statement = c.prepare_cached(SET_SYSTEM_PROMPT).await?;
                    c.execute(&statement, &[id, owner, system_prompt]).await
                })
            })
            .await?;
        if set > 0 {
            return Ok(());
        }
        match self.not_owned(id, &what).await? {
            Some(not_owner) => Err(not_owner),
            None => Ok(()),
        }
    }

    async fn append_events(&self, id: &SessionId, events: &[Event]) -> Result<(), StoreError> {
        self.append(id, events, None).await
    }

    async fn append_events_and_touch(
        &self,
        id: &SessionId,
        events: &[Event],
        title: Option<&str>,
        updated_at: &str,
    ) -> Result<(), StoreError> {
        self.append(id, events, Some((title, updated_at))).await
    }

    async fn events(&self, id: &SessionId) -> Result<Vec<Event>, StoreError> {
        let rows = self
            .db
            .run(&format!("read the events of session {id}"), &*id.0, |c, id| {
                Box::pin(async move {
                    let statement = c.prepare_cached(READ_JOURNAL).await?;
                    c.query(&statement, &[&id]).await
                })
            })
            .await?;
        let mut events = Vec::new();
        for row in rows {
            let n: i64 = row.get(0);
            let entry: &str = row.get(1);
            let entry = crate::store::entry::decode(id, entry)
                .map_err(|e| StoreError::new(format!("session {id}: journal entry {n} is unreadable: {e}")))?;
            events.extend(entry);
        }
        Ok(events)
    }

    async fn delete_session(&self, id: &SessionId) -> Result<(), StoreError> {
        let what = format!("delete session {id}");
        let env = (&*id.0, self.owner.id.as_str());
        let deleted = self
            .db
            .run(&what, &env, |c, (id, owner)| {
                Box::pin(async move {
                    let statement = c.prepare_cached(DELETE).await?;
                    c.execute(&statement, &[id, owner]).await
                })
            })
            .await?;
        if deleted > 0 {
            return Ok(());
        }
        match self.holder(id, &what).await? {
            None => Ok(()),
            Some(Some(holder)) => {
                Err(StoreError::not_owner(format!("session {id} is live in another process ({holder})")))
            }
            // Freed in between: delete again.
            Some(None) => self.delete_session(id).await,
        }
    }

    async fn claim_session(&self, id: &SessionId) -> Result<Claim, StoreError> {
        let what = format!("claim session {id}");
        let env = (&*id.0, self.owner.id.as_str());
        // A holder that lets go between the claim and the look at who holds it: claim again.
        for _ in 0..5 {
            let claimed = self
                .db
                .run(&what, &env, |c, (id, owner)| {
                    Box::pin(async move {
                        let statement = c.prepare_cached(CLAIM).await?;
                        c.execute(&statement, &[id, owner]).await
                    })
                })
                .await?;
            if claimed > 0 {
                return Ok(Claim::Claimed);
            }
            match self.holder(id, &what).await? {
                // No such session: nothing to own (reading it says so).
                None => return Ok(Claim::Claimed),
                Some(Some(holder)) => return Ok(Claim::HeldElsewhere { holder }),
                Some(None) => {}
            }
        }
        Err(StoreError::unavailable(format!("{what}: its owner keeps changing; try again")))
    }

    async fn release_session(&self, id: &SessionId) -> Result<(), StoreError> {
        let env = (&*id.0, self.owner.id.as_str());
        self.db
            .run(&format!("release session {id}"), &env, |c, (id, owner)| {
                Box::pin(async move {
                    let statement = c.prepare_cached(RELEASE).await?;
                    c.execute(&statement, &[id, owner]).await
                })
            })
            .await
            .map(drop)
    }

    fn cursor_key(&self) -> Option<[u8; 32]> {
        Some(self.cursor_key)
    }
}
