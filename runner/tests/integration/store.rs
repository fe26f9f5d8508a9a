//! The `Store` contract, one test list for every store: each test runs against an `SQLite` file
//! and a `PostgreSQL` schema (see `common::stores`), opening several stores on one database where
//! it is about sharing (as several processes would).
//!
//! What is particular to one store stays with it: `SQLite`'s file format, pragmas and migrations
//! in `runner/src/store/sqlite/`; `PostgreSQL`'s leases, migrations and failures in `postgres.rs`.

use crate::common;

use std::path::PathBuf;
use std::sync::Arc;

use acp_facade::acp::{SessionId, SystemPrompt, SystemPromptMode};
use acp_facade::harness::{Cause, Coordinates, Event, EventClass, EventHeader, EventId, EventKind, Visibility};
use acp_facade_runner::{Claim, SessionRecord, Store, StoreErrorKind};
use common::stores::Database;

pub fn record(id: &str) -> SessionRecord {
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

/// An event numbered `seq`, written by `writer` (its id says which).
pub fn event(seq: u64, writer: u64) -> Event {
    Event {
        header: EventHeader {
            id: EventId::new(format!("ev-{writer}-{seq}")),
            seq,
            class: EventClass::Enduring,
            visibility: Visibility::Public,
            cause: Cause::default(),
            coordinates: Coordinates::default(),
        },
        kind: EventKind::ContextMeasured { used: seq, size: writer, cost: None },
    }
}

/// A system prompt of the given mode whose content is one text block per text.
pub fn system_prompt(mode: SystemPromptMode, texts: &[&str]) -> SystemPrompt {
    SystemPrompt::new(texts.iter().map(|t| acp_facade::harness::content::text_block(*t)).collect()).mode(mode)
}

pub fn sid(id: &str) -> SessionId {
    SessionId::new(id)
}

pub async fn seqs(store: &Arc<dyn Store>, id: &str) -> Vec<u64> {
    store.events(&sid(id)).await.expect("events").iter().map(|e| e.header.seq).collect()
}

#[tokio::test]
async fn records_and_events_round_trip() {
    for db in Database::all().await {
        let name = db.name();
        let store = db.open().await;
        assert_eq!(store.session(&sid("a")).await.expect("read"), None, "{name}");
        assert!(store.list_sessions().await.expect("list").is_empty(), "{name}");

        let a = record("a");
        store.create_session(&a).await.expect("create");
        assert_eq!(store.session(&sid("a")).await.expect("read"), Some(a.clone()), "{name}");

        let events: Vec<Event> = (0..10).map(|i| event(i, 0)).collect();
        for e in &events {
            store.append_event(&sid("a"), e).await.expect("append");
        }
        assert_eq!(store.events(&sid("a")).await.expect("events"), events, "{name}");
        assert!(store.events(&sid("unknown")).await.expect("events").is_empty(), "{name}");

        store.touch_session(&sid("a"), Some("A title"), "2026-11-30T12:00:00.000Z").await.expect("touch");
        store.touch_session(&sid("a"), None, "2026-11-30T13:00:00.000Z").await.expect("touch");
        let touched = store.session(&sid("a")).await.expect("read").expect("exists");
        assert_eq!(touched.title.as_deref(), Some("A title"), "{name}");
        assert_eq!(touched.updated_at, "2026-11-30T13:00:00.000Z", "{name}");
        assert_eq!(touched.created_at, a.created_at, "{name}");
        store
            .touch_session(&sid("unknown"), Some("t"), "2026-11-30T13:00:00.000Z")
            .await
            .expect("touching an unknown session is a no-op");

        // A batch and its catalog update, at once.
        store
            .append_events_and_touch(&sid("a"), &[event(10, 0), event(11, 0)], Some("New"), "2026-11-30T14:00:00.000Z")
            .await
            .expect("append and touch");
        let touched = store.session(&sid("a")).await.expect("read").expect("exists");
        assert_eq!((touched.title.as_deref(), touched.updated_at.as_str()), (Some("New"), "2026-11-30T14:00:00.000Z"));
        assert_eq!(seqs(&store, "a").await, (0..12).collect::<Vec<_>>(), "{name}");

        let mut b = record("b");
        b.title = Some("B".to_owned());
        b.additional_directories.clear();
        b.created_at = "2026-11-30T11:21:00.000Z".to_owned();
        store.create_session(&b).await.expect("create b");
        let mut listed = store.list_sessions().await.expect("list");
        listed.sort_by(|x, y| x.id.0.cmp(&y.id.0));
        assert_eq!(listed, vec![touched, b], "{name}");
    }
}

/// Every header reads back as it was written, whether it holds the runner's usual values (which
/// the compact entry leaves out: the id `<session>#<seq>`, enduring, public) or not.
#[tokio::test]
async fn headers_round_trip_whatever_they_hold() {
    use acp_facade::harness::{CommandId, LoopId, TurnId};
    let runner_style = |seq: u64| {
        let mut e = event(seq, 0);
        e.header.id = EventId::new(format!("a#{seq}"));
        e.header.coordinates = Coordinates { loop_id: Some(LoopId::new("main")), turn_id: Some(TurnId::new("t1")) };
        e
    };
    let mut started = runner_style(0);
    started.header.cause.command_id = Some(CommandId::new("a/c1"));
    let mut odd = runner_style(1);
    odd.header.id = EventId::new("a#01");
    odd.header.class = EventClass::Ephemeral;
    odd.header.visibility = Visibility::Internal;
    odd.header.coordinates.turn_id = None;
    let events = vec![started, odd, runner_style(2), event(3, 7)];
    for db in Database::all().await {
        let name = db.name();
        let store = db.open().await;
        store.create_session(&record("a")).await.expect("create");
        store.append_events(&sid("a"), &events[..2]).await.expect("append");
        store.append_events(&sid("a"), &events[2..]).await.expect("append");
        assert_eq!(store.events(&sid("a")).await.expect("events"), events, "{name}");
    }
}

#[tokio::test]
async fn a_duplicate_session_is_refused() {
    for db in Database::all().await {
        let name = db.name();
        let store = db.open().await;
        store.create_session(&record("a")).await.expect("create");
        store.append_event(&sid("a"), &event(1, 0)).await.expect("append");
        let mut again = record("a");
        again.title = Some("other".to_owned());
        again.created_at = "2026-12-01T00:00:00.000Z".to_owned();
        let err = store.create_session(&again).await.expect_err("duplicate");
        assert!(err.message().contains("already exists"), "{name}: {err}");
        // The original is untouched.
        assert_eq!(store.session(&sid("a")).await.expect("read"), Some(record("a")), "{name}");
        assert_eq!(store.events(&sid("a")).await.expect("events").len(), 1, "{name}");
        // Another store on the same database is refused the same way.
        let other = db.open().await;
        assert!(other.create_session(&record("a")).await.is_err(), "{name}");
    }
}

#[tokio::test]
async fn appending_to_an_unknown_session_fails() {
    for db in Database::all().await {
        let store = db.open().await;
        let err = store.append_event(&sid("ghost"), &event(1, 0)).await.expect_err("no session");
        assert!(err.message().contains("no session ghost"), "{}: {err}", db.name());
    }
}

#[tokio::test]
async fn events_keep_append_order_per_session() {
    for db in Database::all().await {
        let store = db.open().await;
        store.create_session(&record("a")).await.expect("create");
        store.create_session(&record("b")).await.expect("create");
        // Interleaved, with header seqs that do not sort in append order.
        let order = [5u64, 1, 9, 3, 7, 2, 8];
        for &n in &order {
            store.append_event(&sid("a"), &event(n, 1)).await.expect("append a");
            store.append_event(&sid("b"), &event(n * 10, 2)).await.expect("append b");
        }
        assert_eq!(seqs(&store, "a").await, order, "{}", db.name());
        assert_eq!(seqs(&store, "b").await, order.map(|n| n * 10), "{}", db.name());
    }
}

#[tokio::test]
async fn delete_takes_the_journal_with_it() {
    for db in Database::all().await {
        let name = db.name();
        let store = db.open().await;
        store.create_session(&record("a")).await.expect("create");
        store.create_session(&record("b")).await.expect("create");
        for i in 0..3 {
            store.append_event(&sid("a"), &event(i, 0)).await.expect("append");
            store.append_event(&sid("b"), &event(i, 0)).await.expect("append");
        }
        store.delete_session(&sid("a")).await.expect("delete");
        assert_eq!(store.session(&sid("a")).await.expect("read"), None, "{name}");
        assert!(store.events(&sid("a")).await.expect("events").is_empty(), "{name}");
        // The other session is untouched.
        assert_eq!(store.events(&sid("b")).await.expect("events").len(), 3, "{name}");
        // Unknown ids, and deleting twice, succeed.
        store.delete_session(&sid("a")).await.expect("delete again");
        store.delete_session(&sid("never")).await.expect("delete unknown");
        // The id can be used again, with an empty journal.
        store.create_session(&record("a")).await.expect("recreate");
        assert!(store.events(&sid("a")).await.expect("events").is_empty(), "{name}");
        // A journal whose first seq repeats a deleted session's starts afresh too.
        store.append_event(&sid("a"), &event(0, 9)).await.expect("append");
        assert_eq!(store.events(&sid("a")).await.expect("events"), vec![event(0, 9)], "{name}");
    }
}

#[tokio::test]
async fn what_one_store_wrote_another_reads_after_it_is_gone() {
    for db in Database::all().await {
        let name = db.name();
        {
            let store = db.open().await;
            store.create_session(&record("a")).await.expect("create");
            store.append_event(&sid("a"), &event(1, 0)).await.expect("append");
            store.append_event(&sid("a"), &event(2, 0)).await.expect("append");
            store.touch_session(&sid("a"), Some("kept"), "2026-12-01T00:00:00.000Z").await.expect("touch");
        }
        let store = db.open().await;
        let a = store.session(&sid("a")).await.expect("read").expect("kept");
        assert_eq!(a.title.as_deref(), Some("kept"), "{name}");
        assert_eq!(a.additional_directories, record("a").additional_directories, "{name}");
        assert_eq!(store.events(&sid("a")).await.expect("events"), vec![event(1, 0), event(2, 0)], "{name}");
    }
}

#[tokio::test]
async fn two_stores_on_one_database_share_sessions() {
    for db in Database::all().await {
        let name = db.name();
        let one = db.open().await;
        let two = db.open().await;
        one.create_session(&record("a")).await.expect("create a");
        two.create_session(&record("b")).await.expect("create b");
        assert_eq!(one.list_sessions().await.expect("list").len(), 2, "{name}");
        assert_eq!(two.session(&sid("a")).await.expect("read"), Some(record("a")), "{name}");
        // Handing session a over from the first store to the second.
        one.release_session(&sid("a")).await.expect("release");
        let claim = two.claim_session(&sid("a")).await.expect("claim");
        assert_eq!(claim, Claim::Claimed, "{name}");
        two.append_event(&sid("a"), &event(1, 0)).await.expect("append");
        assert_eq!(one.events(&sid("a")).await.expect("events"), vec![event(1, 0)], "{name}");
        assert!(two.create_session(&record("a")).await.is_err(), "{name}");
    }
}

/// A session keeps the client's system prompt as it was given — its mode (one unknown to this
/// version too), content and `_meta` — for every store on the database to read, in a record and
/// in the list; setting one replaces it, also where there was none; an unknown session is left
/// alone (and not created).
#[tokio::test]
async fn system_prompts_are_kept_replaced_and_listed() {
    let mut meta = serde_json::Map::new();
    meta.insert("origin".to_owned(), serde_json::json!({"editor": "test", "n": 1}));
    let first = system_prompt(SystemPromptMode::Override, &["You are terse.", " Answer in French."]).meta(meta);
    let replaced = system_prompt(SystemPromptMode::Append, &["extra"]);
    let unknown_mode = system_prompt(SystemPromptMode::Other("prepend".to_owned()), &["first of all"]);
    for db in Database::all().await {
        let name = db.name();
        let mut a = record("a");
        a.system_prompt = Some(first.clone());
        let mut b = record("b");
        b.created_at = "2026-11-30T11:21:00.000Z".to_owned();
        {
            let store = db.open().await;
            store.create_session(&a).await.expect("create a");
            store.create_session(&b).await.expect("create b");
            assert_eq!(store.session(&sid("a")).await.expect("read"), Some(a.clone()), "{name}");
            // Closed by their client: free for any process to load.
            store.release_session(&sid("a")).await.expect("release");
            store.release_session(&sid("b")).await.expect("release");
        }

        // Another store (another process) reads them as written.
        let store = db.open().await;
        assert_eq!(store.session(&sid("a")).await.expect("read"), Some(a.clone()), "{name}");
        assert_eq!(store.session(&sid("b")).await.expect("read"), Some(b.clone()), "{name}: none");
        assert_eq!(store.list_sessions().await.expect("list"), [a.clone(), b.clone()], "{name}");

        // Claimed and given another (a load or resume that carried one), or a first one.
        for id in ["a", "b"] {
            assert_eq!(store.claim_session(&sid(id)).await.expect("claim"), Claim::Claimed, "{name}");
        }
        store.set_system_prompt(&sid("a"), &replaced).await.expect("replace");
        store.set_system_prompt(&sid("b"), &unknown_mode).await.expect("set a first one");
        a.system_prompt = Some(replaced.clone());
        b.system_prompt = Some(unknown_mode.clone());
        let reader = db.open().await;
        assert_eq!(reader.session(&sid("a")).await.expect("read"), Some(a.clone()), "{name}");
        assert_eq!(reader.session(&sid("b")).await.expect("read"), Some(b.clone()), "{name}");
        assert_eq!(reader.list_sessions().await.expect("list"), [a.clone(), b.clone()], "{name}");
        // Setting it again is the same (a repeat after a lost answer).
        store.set_system_prompt(&sid("a"), &replaced).await.expect("again");
        assert_eq!(reader.session(&sid("a")).await.expect("read"), Some(a.clone()), "{name}");

        // The rest of the record is untouched by it, and it by the rest.
        store.touch_session(&sid("a"), Some("T"), "2026-12-01T00:00:00.000Z").await.expect("touch");
        store.append_events_and_touch(&sid("a"), &[event(1, 0)], None, "2026-12-01T01:00:00.000Z").await.expect("turn");
        let touched = reader.session(&sid("a")).await.expect("read").expect("exists");
        assert_eq!(touched.system_prompt, Some(replaced.clone()), "{name}");
        assert_eq!(touched.title.as_deref(), Some("T"), "{name}");

        store.set_system_prompt(&sid("ghost"), &replaced).await.expect("an unknown session is left alone");
        assert_eq!(reader.session(&sid("ghost")).await.expect("read"), None, "{name}");
        assert_eq!(reader.list_sessions().await.expect("list").len(), 2, "{name}");
    }
}

/// A session has one owner at a time where the store has owners; where it has none, every store
/// may write every session.
#[tokio::test]
async fn only_the_owner_writes_a_session() {
    for db in Database::all().await {
        let name = db.name();
        let one = db.open().await;
        let two = db.open().await;
        one.create_session(&record("a")).await.expect("create");
        one.append_event(&sid("a"), &event(1, 1)).await.expect("the creator owns it");
        let claim = two.claim_session(&sid("a")).await.expect("claim");
        let appended = two.append_event(&sid("a"), &event(2, 2)).await;
        let touched = two.touch_session(&sid("a"), Some("two"), "2026-12-01T00:00:00.000Z").await;
        let prompted = two.set_system_prompt(&sid("a"), &system_prompt(SystemPromptMode::Append, &["two"])).await;
        let deleted = two.delete_session(&sid("a")).await;
        if db.has_owners() {
            assert!(matches!(&claim, Claim::HeldElsewhere { holder } if holder.starts_with("process ")), "{claim:?}");
            for refused in [&appended, &touched, &prompted, &deleted] {
                let err = refused.as_ref().expect_err("not the owner");
                assert_eq!(err.kind(), StoreErrorKind::NotOwner, "{name}: {err}");
            }
            assert!(deleted.as_ref().unwrap_err().message().contains("live in another process"));
            assert_eq!(seqs(&one, "a").await, [1], "{name}: nothing of the second store was written");
            assert_eq!(one.session(&sid("a")).await.expect("read"), Some(record("a")), "{name}: no title, no prompt");
            // Released, it passes to the second store, and the first is fenced off.
            one.release_session(&sid("a")).await.expect("release");
            assert_eq!(two.claim_session(&sid("a")).await.expect("claim"), Claim::Claimed, "{name}");
            two.append_event(&sid("a"), &event(3, 2)).await.expect("the new owner appends");
            let err = one.append_event(&sid("a"), &event(4, 1)).await.expect_err("fenced off");
            assert_eq!(err.kind(), StoreErrorKind::NotOwner, "{name}: {err}");
            assert_eq!(seqs(&one, "a").await, [1, 3], "{name}");
            // Claiming what one owns already succeeds; the owner deletes.
            assert_eq!(two.claim_session(&sid("a")).await.expect("claim again"), Claim::Claimed);
            two.delete_session(&sid("a")).await.expect("the owner deletes");
        } else {
            assert_eq!(claim, Claim::Claimed, "{name}");
            appended.expect("no owners: any store appends");
            touched.expect("no owners: any store touches");
            prompted.expect("no owners: any store sets the system prompt");
            deleted.expect("no owners: any store deletes");
        }
        assert_eq!(one.session(&sid("a")).await.expect("read"), None, "{name}");
        // Claiming or releasing an unknown session changes nothing.
        assert_eq!(one.claim_session(&sid("ghost")).await.expect("claim"), Claim::Claimed, "{name}");
        one.release_session(&sid("ghost")).await.expect("release");
        assert_eq!(one.session(&sid("ghost")).await.expect("read"), None, "{name}");
    }
}

/// One store used by many tasks at once: every append lands, each task's in its order.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_appends_through_one_store_all_land_in_order() {
    const PER_WRITER: u64 = 50;
    for db in Database::all().await {
        let store = db.open().await;
        store.create_session(&record("a")).await.expect("create");
        let writers: Vec<_> = (1..=4u64)
            .map(|writer| {
                let store = store.clone();
                tokio::spawn(async move {
                    for i in 0..PER_WRITER {
                        store.append_event(&sid("a"), &event(writer * 1000 + i, writer)).await.expect("append");
                    }
                })
            })
            .collect();
        for w in writers {
            w.await.expect("writer");
        }
        let events = db.open().await.events(&sid("a")).await.expect("events");
        assert_eq!(events.len(), 200, "{}", db.name());
        for writer in 1..=4u64 {
            let mine: Vec<u64> = events
                .iter()
                .filter(|e| e.header.id.as_str().starts_with(&format!("ev-{writer}-")))
                .map(|e| e.header.seq)
                .collect();
            assert_eq!(mine, (0..PER_WRITER).map(|i| writer * 1000 + i).collect::<Vec<_>>(), "{}", db.name());
        }
    }
}

/// Many stores opening one new database at once (processes starting together): each opens, the
/// schema is made once, and all of them work on it.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_openers_are_safe() {
    for db in Database::all().await {
        let db = Arc::new(db);
        let openers: Vec<_> = (0..8)
            .map(|n| {
                let db = db.clone();
                tokio::spawn(async move {
                    let store = db.open().await;
                    store.create_session(&record(&format!("s{n}"))).await.expect("create");
                    store
                })
            })
            .collect();
        let mut stores = Vec::new();
        for opener in openers {
            stores.push(opener.await.expect("opener"));
        }
        for store in &stores {
            assert_eq!(store.list_sessions().await.expect("list").len(), 8, "{}", db.name());
        }
    }
}
