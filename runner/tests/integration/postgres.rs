//! What is particular to the `PostgreSQL` store (its shared contract is in `store.rs`): owner
//! leases and takeovers, repeats applied once, the shared cursor key, schema versions, and how it
//! fails. Each test runs on a schema of its own on the test server (`common::stores`); without
//! one configured, each says so and does nothing (a failure when it is required).

use crate::common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use acp_facade::host::Principal;
use acp_facade_runner::{Claim, PageQuery, PostgresStore, Store, StoreErrorKind};
use common::stores::{open_postgres, open_postgres_with_lease, postgres_url, raw_client};

use acp_facade::acp::SystemPromptMode;

use super::store::{event, record, seqs, sid, system_prompt};

/// Waits (at most `limit`) until `claim` of session `id` by `store` succeeds; returns how long.
async fn claim_within(store: &Arc<dyn Store>, id: &str, limit: Duration) -> Duration {
    let started = Instant::now();
    loop {
        if store.claim_session(&sid(id)).await.expect("claim") == Claim::Claimed {
            return started.elapsed();
        }
        assert!(started.elapsed() < limit, "session {id} was never freed");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn a_dead_owners_sessions_are_taken_over_once_its_lease_expires() {
    let Some(url) = postgres_url().await else { return };
    let lease = Duration::from_secs(1);
    let one: Arc<dyn Store> = Arc::new(open_postgres_with_lease(&url, lease).await);
    let two: Arc<dyn Store> = Arc::new(open_postgres_with_lease(&url, lease).await);
    one.create_session(&record("a")).await.expect("create");
    one.append_event(&sid("a"), &event(1, 1)).await.expect("append");
    // The owner "dies": no close, no release; its heartbeat stops with it.
    drop(one);
    let Claim::HeldElsewhere { holder } = two.claim_session(&sid("a")).await.expect("claim") else {
        panic!("the dead owner's lease runs on for a while")
    };
    assert!(holder.contains(&format!("process {}", std::process::id())), "{holder}");
    let waited = claim_within(&two, "a", lease * 10).await;
    assert!(waited > Duration::ZERO, "taken over only once the lease expired");
    two.append_event(&sid("a"), &event(2, 2)).await.expect("the new owner appends");
    assert_eq!(seqs(&two, "a").await, [1, 2]);
}

#[tokio::test]
async fn a_live_owner_keeps_its_sessions_past_its_lease() {
    let Some(url) = postgres_url().await else { return };
    let lease = Duration::from_millis(500);
    let one: Arc<dyn Store> = Arc::new(open_postgres_with_lease(&url, lease).await);
    let two: Arc<dyn Store> = Arc::new(open_postgres_with_lease(&url, lease).await);
    one.create_session(&record("a")).await.expect("create");
    // Several leases long: the heartbeat renews it.
    tokio::time::sleep(lease * 4).await;
    assert!(matches!(two.claim_session(&sid("a")).await.expect("claim"), Claim::HeldElsewhere { .. }));
    one.append_event(&sid("a"), &event(1, 1)).await.expect("still the owner");
}

#[tokio::test]
async fn closing_a_store_frees_its_sessions_at_once() {
    let Some(url) = postgres_url().await else { return };
    let one = open_postgres_with_lease(&url, Duration::from_secs(60)).await;
    let two: Arc<dyn Store> = Arc::new(open_postgres(&url).await);
    one.create_session(&record("a")).await.expect("create");
    one.create_session(&record("b")).await.expect("create");
    one.close().await.expect("close");
    for id in ["a", "b"] {
        assert_eq!(two.claim_session(&sid(id)).await.expect("claim"), Claim::Claimed, "{id}");
    }
    // Its owner row is gone.
    let rows = raw_client(&url).await.query("SELECT 1 FROM acp_owners WHERE id = $1", &[&one.owner_id()]).await;
    assert!(rows.expect("query").is_empty());
}

/// After a failure whose outcome is unknown the runner appends the same batch again: it is applied
/// once.
#[tokio::test]
async fn a_repeated_append_is_applied_once() {
    let Some(url) = postgres_url().await else { return };
    let store: Arc<dyn Store> = Arc::new(open_postgres(&url).await);
    store.create_session(&record("a")).await.expect("create");
    let batch = [event(5, 0), event(6, 0)];
    store.append_events(&sid("a"), &batch).await.expect("append");
    store.append_events(&sid("a"), &batch).await.expect("the repeat succeeds");
    let mut rewritten = batch.clone();
    rewritten[1] = event(6, 9);
    store
        .append_events_and_touch(&sid("a"), &rewritten, Some("t"), "2026-12-01T00:00:00.000Z")
        .await
        .expect("a repeat whose last event was rewritten succeeds");
    store.append_events(&sid("a"), &[event(7, 0)]).await.expect("append");
    assert_eq!(store.events(&sid("a")).await.expect("events"), vec![event(5, 0), event(6, 0), event(7, 0)]);
    let touched = store.session(&sid("a")).await.expect("read").expect("exists");
    assert_eq!(touched.title.as_deref(), Some("t"), "the catalog update of a repeat is applied (it is idempotent)");
}

#[tokio::test]
async fn every_store_on_one_database_has_the_same_cursor_key() {
    let Some(url) = postgres_url().await else { return };
    let one = open_postgres(&url).await;
    let key = one.cursor_key().expect("a PostgreSQL store keeps a cursor key");
    drop(one);
    assert_eq!(open_postgres(&url).await.cursor_key(), Some(key), "the same after a restart");
    let Some(other) = postgres_url().await else { return };
    assert_ne!(open_postgres(&other).await.cursor_key(), Some(key), "another database has its own");
}

#[tokio::test]
async fn the_schema_is_versioned_and_a_newer_one_is_refused_untouched() {
    let Some(url) = postgres_url().await else { return };
    drop(open_postgres(&url).await);
    let raw = raw_client(&url).await;
    let version: String =
        raw.query_one("SELECT value FROM acp_meta WHERE key = 'schema_version'", &[]).await.expect("version").get(0);
    assert_eq!(version, "4");
    let mut tables: Vec<String> = raw
        .query("SELECT tablename::text FROM pg_tables WHERE schemaname = current_schema() ORDER BY 1", &[])
        .await
        .expect("tables")
        .iter()
        .map(|r| r.get(0))
        .collect();
    tables.sort();
    assert_eq!(tables, ["acp_journal", "acp_meta", "acp_owners", "acp_sessions"]);
    raw.execute("UPDATE acp_meta SET value = '99' WHERE key = 'schema_version'", &[]).await.expect("newer");
    let err = PostgresStore::connect(&url).await.expect_err("a newer schema");
    assert!(err.message().contains("schema version 99 is newer"), "{err}");
    let version: String =
        raw.query_one("SELECT value FROM acp_meta WHERE key = 'schema_version'", &[]).await.expect("version").get(0);
    assert_eq!(version, "99", "left untouched");
}

#[tokio::test]
async fn an_unreachable_database_fails_to_open_with_a_clear_error() {
    let Some(_) = postgres_url().await else { return };
    let dir = common::stores::TempDir::new("no-postgres");
    let url = format!("postgres://acp@/postgres?host={}&connect_timeout=5", dir.path().display());
    let started = Instant::now();
    let err = PostgresStore::connect(&url).await.expect_err("nothing listens there");
    assert_eq!(err.kind(), StoreErrorKind::Unavailable, "{err}");
    assert!(err.message().contains("cannot connect to PostgreSQL"), "{err}");
    assert!(err.message().contains(&format!("host={}", dir.path().display())), "names the server: {err}");
    assert!(started.elapsed() < Duration::from_secs(30), "gave up instead of hanging");
    let err =
        PostgresStore::connect("postgres://acp:s3cret@/postgres?host=/nonexistent/dir").await.expect_err("no server");
    assert!(!err.message().contains("s3cret"), "never the password: {err}");
}

#[tokio::test]
async fn unreadable_rows_are_errors_not_panics() {
    let Some(url) = postgres_url().await else { return };
    let store: Arc<dyn Store> = Arc::new(open_postgres(&url).await);
    store.create_session(&record("a")).await.expect("create");
    store.append_event(&sid("a"), &event(1, 0)).await.expect("append");
    let raw = raw_client(&url).await;
    for garbage in ["[{\"header\": 3}]", "not json", "{}"] {
        raw.execute("UPDATE acp_journal SET events = $1", &[&garbage]).await.expect("garble");
        let err = store.events(&sid("a")).await.expect_err("unreadable");
        assert!(err.message().contains("unreadable"), "{err}");
    }
    // The store still works, and deleting the session clears it.
    store.delete_session(&sid("a")).await.expect("delete");
    assert!(store.list_sessions().await.expect("list").is_empty());
}

/// A system prompt is stored as the JSON text of its wire form; one that does not decode is an
/// error naming the session and the column, for a read and a list alike, and the session can
/// still be given a good one or deleted.
#[tokio::test]
async fn an_unreadable_system_prompt_is_an_error_naming_its_session() {
    let Some(url) = postgres_url().await else { return };
    let store: Arc<dyn Store> = Arc::new(open_postgres(&url).await);
    let mut a = record("a");
    a.system_prompt = Some(system_prompt(SystemPromptMode::Append, &["extra"]));
    store.create_session(&a).await.expect("create");
    let raw = raw_client(&url).await;
    let stored: String =
        raw.query_one("SELECT system_prompt FROM acp_sessions WHERE id = 'a'", &[]).await.expect("stored").get(0);
    assert_eq!(stored, r#"{"mode":"append","content":[{"type":"text","text":"extra"}]}"#);
    for garbage in [r#"{"mode": "append", "#, "not json", r#"{"mode": "append"}"#, "[]", ""] {
        raw.execute("UPDATE acp_sessions SET system_prompt = $1 WHERE id = 'a'", &[&garbage]).await.expect("garble");
        for err in [
            store.session(&sid("a")).await.expect_err("unreadable"),
            store.list_sessions().await.expect_err("unreadable"),
        ] {
            assert!(err.message().contains("session a: unreadable system_prompt"), "{garbage:?}: {err}");
        }
    }
    let fixed = system_prompt(SystemPromptMode::Override, &["fixed"]);
    store.set_system_prompt(&sid("a"), &fixed).await.expect("set");
    assert_eq!(store.session(&sid("a")).await.expect("read").expect("exists").system_prompt, Some(fixed));
    raw.execute("UPDATE acp_sessions SET system_prompt = 'not json'", &[]).await.expect("garble");
    store.delete_session(&sid("a")).await.expect("delete");
    assert!(store.list_sessions().await.expect("list").is_empty());
}

/// A database of schema version 2 (no system prompts) is migrated when a store opens it: its
/// sessions are kept and read no system prompt until one is set; new sessions keep theirs.
#[tokio::test]
async fn a_version_2_database_gains_system_prompts() {
    let Some(url) = postgres_url().await else { return };
    {
        let store = open_postgres(&url).await;
        store.create_session(&record("a")).await.expect("create");
        store.append_event(&sid("a"), &event(1, 0)).await.expect("append");
        store.close().await.expect("close");
    }
    // Version 3 is version 2 and the column (with its comment): without them, it is version 2.
    // (Version 4's column goes too, its indexes with it.)
    let raw = raw_client(&url).await;
    raw.batch_execute(
        "ALTER TABLE acp_sessions DROP COLUMN principal;
         ALTER TABLE acp_sessions DROP COLUMN system_prompt;
         UPDATE acp_meta SET value = '2' WHERE key = 'schema_version';",
    )
    .await
    .expect("back to version 2");

    let store: Arc<dyn Store> = Arc::new(open_postgres(&url).await);
    let version: String =
        raw.query_one("SELECT value FROM acp_meta WHERE key = 'schema_version'", &[]).await.expect("version").get(0);
    assert_eq!(version, "4");
    assert_eq!(store.session(&sid("a")).await.expect("read"), Some(record("a")), "no system prompt");
    assert_eq!(store.list_sessions().await.expect("list"), [record("a")]);
    assert_eq!(seqs(&store, "a").await, [1]);
    let later = system_prompt(SystemPromptMode::Append, &["later"]);
    assert_eq!(store.claim_session(&sid("a")).await.expect("claim"), Claim::Claimed);
    store.set_system_prompt(&sid("a"), &later).await.expect("set");
    let mut b = record("b");
    b.system_prompt = Some(system_prompt(SystemPromptMode::Override, &["b's"]));
    store.create_session(&b).await.expect("create");
    let other = open_postgres(&url).await;
    assert_eq!(other.session(&sid("a")).await.expect("read").expect("kept").system_prompt, Some(later));
    assert_eq!(other.session(&sid("b")).await.expect("read"), Some(b));
}

/// The ids of one page (of at most 10) of `store`'s sessions.
async fn page_ids(
    store: &Arc<dyn Store>,
    principal: Option<&Principal>,
    cwd: Option<&std::path::Path>,
    after: Option<&str>,
) -> Vec<String> {
    let query = PageQuery { principal, cwd, after, limit: 10 };
    store.list_page(&query).await.expect("page").into_iter().map(|r| r.id.0.to_string()).collect()
}

/// A database of schema version 3 (no principals) with sessions is migrated when a store opens
/// it: its sessions have no principal and page for a connection without one; new sessions keep
/// theirs; the indexes of `session/list`'s keyset reads exist.
#[tokio::test]
async fn a_version_3_database_gains_principals() {
    let Some(url) = postgres_url().await else { return };
    {
        let store = open_postgres(&url).await;
        for id in ["b", "a"] {
            store.create_session(&record(id)).await.expect("create");
        }
        store.close().await.expect("close");
    }
    // Version 4 is version 3, the column and its indexes: without them, it is version 3.
    let raw = raw_client(&url).await;
    raw.batch_execute(
        "ALTER TABLE acp_sessions DROP COLUMN principal;
         UPDATE acp_meta SET value = '3' WHERE key = 'schema_version';",
    )
    .await
    .expect("back to version 3");

    let store: Arc<dyn Store> = Arc::new(open_postgres(&url).await);
    let version: String =
        raw.query_one("SELECT value FROM acp_meta WHERE key = 'schema_version'", &[]).await.expect("version").get(0);
    assert_eq!(version, "4");
    let indexes: Vec<String> = raw
        .query(
            "SELECT indexname::text FROM pg_indexes WHERE schemaname = current_schema()
             AND tablename = 'acp_sessions' AND indexname LIKE '%principal%' ORDER BY 1",
            &[],
        )
        .await
        .expect("indexes")
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(
        indexes,
        [
            "acp_sessions_by_principal",
            "acp_sessions_by_principal_cwd",
            "acp_sessions_without_principal",
            "acp_sessions_without_principal_by_cwd"
        ]
    );
    assert_eq!(store.session(&sid("a")).await.expect("read"), Some(record("a")), "no principal");
    let alice = Principal::new("alice");
    let mut c = record("c");
    c.principal = Some(alice.clone());
    store.create_session(&c).await.expect("create");
    let cwd = record("a").cwd;
    let elsewhere = std::path::Path::new("/elsewhere");
    assert_eq!(page_ids(&store, None, None, None).await, ["a", "b"]);
    assert_eq!(page_ids(&store, None, Some(&cwd), Some("a")).await, ["b"]);
    assert_eq!(page_ids(&store, None, Some(elsewhere), None).await, Vec::<String>::new());
    assert_eq!(page_ids(&store, Some(&alice), None, None).await, ["c"]);
    assert_eq!(page_ids(&store, Some(&alice), Some(&cwd), Some("c")).await, Vec::<String>::new());
    let other = open_postgres(&url).await;
    assert_eq!(other.session(&sid("c")).await.expect("read").expect("kept").principal.as_ref(), Some(&alice));
}

/// Entries written before the compact form (schema version 1: every event with its full
/// header) are read as they are, in order with those written since.
#[tokio::test]
async fn entries_in_the_full_form_are_still_read() {
    let Some(url) = postgres_url().await else { return };
    let store: Arc<dyn Store> = Arc::new(open_postgres(&url).await);
    store.create_session(&record("a")).await.expect("create");
    let full = serde_json::to_string(&[event(1, 0), event(2, 0)]).expect("encode");
    assert!(full.contains("\"header\""), "{full}");
    let raw = raw_client(&url).await;
    raw.execute("INSERT INTO acp_journal (session_id, first_seq, events) VALUES ('a', 1, $1)", &[&full])
        .await
        .expect("an entry of version 1");
    store.append_event(&sid("a"), &event(3, 0)).await.expect("append");
    assert_eq!(store.events(&sid("a")).await.expect("events"), vec![event(1, 0), event(2, 0), event(3, 0)]);
    let written: String =
        raw.query_one("SELECT events FROM acp_journal WHERE first_seq = 3", &[]).await.expect("the new entry").get(0);
    assert!(written.starts_with(r#"[{"seq":3,"id":"ev-0-3","kind":"#), "compact: {written}");
}

#[tokio::test]
async fn owners_dead_for_long_are_forgotten_and_their_sessions_freed() {
    let Some(url) = postgres_url().await else { return };
    let store: Arc<dyn Store> = Arc::new(open_postgres(&url).await);
    store.create_session(&record("a")).await.expect("create");
    let raw = raw_client(&url).await;
    raw.batch_execute(
        "INSERT INTO acp_owners (id, expires_at, pid, host) VALUES ('ghost', now() - interval '2 hours', 1, 'gone');
         UPDATE acp_sessions SET owner = 'ghost';",
    )
    .await
    .expect("a long-dead owner");
    drop(open_postgres(&url).await);
    let ghosts = raw.query("SELECT 1 FROM acp_owners WHERE id = 'ghost'", &[]).await.expect("owners");
    assert!(ghosts.is_empty(), "forgotten when a store opened");
    let owner: Option<String> =
        raw.query_one("SELECT owner FROM acp_sessions WHERE id = 'a'", &[]).await.expect("session").get(0);
    assert_eq!(owner, None, "its session is nobody's");
    assert_eq!(store.claim_session(&sid("a")).await.expect("claim"), Claim::Claimed);
}

/// Drops `schema` (and what it holds) and `role` (when given) on the test server at `base`.
async fn drop_schema_and_role(base: &str, schema: &str, role: Option<&str>) {
    let raw = raw_client(base).await;
    raw.batch_execute(&format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE")).await.expect("drop the schema");
    if let Some(role) = role {
        raw.batch_execute(&format!("DROP ROLE IF EXISTS \"{role}\"")).await.expect("drop the role");
    }
}

/// Whether `schema` exists, and the `acp_` tables it holds.
async fn tables_in(base: &str, schema: &str) -> (bool, Vec<String>) {
    let raw = raw_client(base).await;
    let exists: bool = raw
        .query_one("SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)", &[&schema])
        .await
        .expect("schema query")
        .get(0);
    let tables = raw
        .query("SELECT tablename::text FROM pg_tables WHERE schemaname = $1 ORDER BY 1", &[&schema])
        .await
        .expect("tables query")
        .iter()
        .map(|row| row.get::<_, String>(0))
        .collect();
    (exists, tables)
}

/// `options=-c search_path=NAME` naming a schema that does not exist: the first store creates it
/// (quoted: the name needs it) and its tables go there; several processes starting at once all
/// open, with one cursor key.
#[tokio::test]
async fn a_schema_named_in_search_path_is_created_on_first_use_by_concurrent_openers() {
    let Some(base) = common::stores::postgres_base_url() else { return };
    // A hyphen: only a quoted identifier creates this name.
    let schema = format!("{}-new", common::stores::unique_schema_name());
    let url = common::stores::with_search_path(&base, &schema);
    assert_eq!(tables_in(&base, &schema).await, (false, vec![]), "not there before");
    let stores = futures::future::join_all((0..4).map(|_| PostgresStore::connect(&url))).await;
    let stores: Vec<PostgresStore> =
        stores.into_iter().map(|opened| opened.unwrap_or_else(|e| panic!("every opener opens: {e}"))).collect();
    let (exists, tables) = tables_in(&base, &schema).await;
    assert!(exists, "the schema was created");
    assert_eq!(tables, ["acp_journal", "acp_meta", "acp_owners", "acp_sessions"], "the tables are in it");
    let key = stores[0].cursor_key();
    assert!(stores.iter().all(|store| store.cursor_key() == key), "one cursor key for all");
    let store: &dyn Store = &stores[1];
    store.create_session(&record("a")).await.expect("create");
    let raw = raw_client(&base).await;
    let sessions: i64 =
        raw.query_one(&format!("SELECT count(*) FROM \"{schema}\".acp_sessions"), &[]).await.expect("count").get(0);
    assert_eq!(sessions, 1, "sessions are written there");
    for store in &stores {
        store.close().await.expect("close");
    }
    drop(stores);
    drop_schema_and_role(&base, &schema, None).await;
}

/// A role that may not create the schema gets an error naming the exact statement to run as a role
/// that may; once it is run, the same URL opens.
#[tokio::test]
async fn a_role_that_may_not_create_the_schema_is_told_the_create_schema_step() {
    let Some(base) = common::stores::postgres_base_url() else { return };
    let schema = common::stores::unique_schema_name();
    let role = format!("{schema}_role");
    let raw = raw_client(&base).await;
    // No CREATE on the database (PUBLIC has only CONNECT and TEMPORARY).
    raw.batch_execute(&format!("CREATE ROLE \"{role}\" LOGIN")).await.expect("create a role");
    let separator = if base.contains('?') { '&' } else { '?' };
    let url = common::stores::with_search_path(&format!("{base}{separator}user={role}"), &schema);
    let err = PostgresStore::connect(&url).await.expect_err("the role may not create schemas");
    let step = format!("CREATE SCHEMA \"{schema}\" AUTHORIZATION \"{role}\";");
    assert!(err.message().contains(&step), "names the step: {err}");
    assert!(err.message().contains("permission denied"), "and the server's reason: {err}");
    assert_eq!(err.kind(), StoreErrorKind::Failed, "not worth retrying: {err}");
    assert_eq!(tables_in(&base, &schema).await, (false, vec![]), "nothing created");
    // The step, as the error says, then the same URL.
    raw.batch_execute(&step).await.expect("run the step as a superuser");
    let store = PostgresStore::connect(&url).await.unwrap_or_else(|e| panic!("opens once the schema exists: {e}"));
    assert_eq!(tables_in(&base, &schema).await.1.len(), 4, "the tables are in the role's schema");
    store.close().await.expect("close");
    drop(store);
    drop_schema_and_role(&base, &schema, Some(&role)).await;
}
