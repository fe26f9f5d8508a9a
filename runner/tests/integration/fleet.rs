//! Several runners on one `PostgreSQL` database, each with its own store, as processes of a fleet
//! would be, driven through the wire: a session is live in one of them at a time (load, resume
//! and delete elsewhere are `-32600` until it is closed there), a `session/list` cursor pages on
//! all of them and after a restart, a delete in one is seen by the others, and a runner whose
//! lease lapsed while another took its session over is fenced off. (Real processes, killed and
//! all, are in the conformance suite: `tests/scenarios/fleet.py`.)

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use acp_facade_runner::{PostgresStore, Runner, Store};
use common::runner::{TurnsSpec, journal_kinds, runner};
use common::stores::{open_postgres, open_postgres_with_lease, postgres_url, raw_client};
use common::{TestClient, chunk_texts, code, error_of};
use serde_json::{Value, json};

async fn member(url: &str) -> (Runner, Arc<dyn Store>) {
    let store: Arc<dyn Store> = Arc::new(open_postgres(url).await);
    let (runner, _) = runner(store.clone(), TurnsSpec::default());
    (runner, store)
}

async fn client_with_page(runner: &Runner, page: usize) -> TestClient {
    let mut client = TestClient::start_agent(runner.agent(runner.options().max_page_size(page)));
    client.initialize().await;
    client
}

async fn prompt_ok(client: &mut TestClient, sid: &str, text: &str) {
    let id = client.prompt(sid, text).await;
    let response = client.response(&id).await;
    assert_eq!(response.pointer("/result/stopReason"), Some(&json!("end_turn")), "{response}");
}

fn session(sid: &str) -> Value {
    json!({"sessionId": sid, "cwd": "/tmp", "mcpServers": []})
}

/// Loads `sid`; the replayed messages.
async fn load(client: &mut TestClient, sid: &str) -> Vec<Value> {
    let id = client.send_request("session/load", session(sid)).await;
    let (response, before) = client.response_with_preceding(&id).await;
    assert!(response.get("result").is_some(), "load {sid}: {response}");
    before
}

#[tokio::test]
async fn a_session_is_live_in_one_runner_at_a_time() {
    let Some(url) = postgres_url().await else { return };
    let (a, _) = member(&url).await;
    let (b, _) = member(&url).await;
    let mut ca = common::runner::client(&a).await;
    let mut cb = common::runner::client(&b).await;
    let sid = ca.new_session().await;
    prompt_ok(&mut ca, &sid, "say hi").await;

    for method in ["session/load", "session/resume"] {
        let error = cb.call_err(method, session(&sid)).await;
        assert_eq!(code(&error), -32600, "{method}: {error}");
        assert!(error["message"].as_str().unwrap().contains("live in another process"), "{error}");
    }
    let error = cb.call_err("session/delete", json!({"sessionId": sid})).await;
    assert_eq!(code(&error), -32600, "{error}");
    // Listing works everywhere.
    let listed = cb.call_ok("session/list", json!({})).await;
    assert_eq!(listed["sessions"][0]["sessionId"], sid.as_str());

    // Closed in a, it is b's to load, with its history.
    ca.call_ok("session/close", json!({"sessionId": sid})).await;
    let replay = load(&mut cb, &sid).await;
    assert_eq!(chunk_texts(&replay, "user_message_chunk"), ["say hi"]);
    prompt_ok(&mut cb, &sid, "say more").await;
    let error = ca.call_err("session/load", session(&sid)).await;
    assert_eq!(code(&error), -32600, "now b has it: {error}");

    // b's client goes away: every session of it is closed, and free for a.
    cb.hang_up().await;
    let replay = load(&mut ca, &sid).await;
    assert_eq!(chunk_texts(&replay, "user_message_chunk"), ["say hi", "say more"]);
    prompt_ok(&mut ca, &sid, "say again").await;
    let store: Arc<dyn Store> = Arc::new(open_postgres(&url).await);
    assert_eq!(
        journal_kinds(&store, &sid).await.iter().filter(|k| **k == "TurnStarted").count(),
        3,
        "every turn once, in order"
    );
}

#[tokio::test]
async fn a_list_cursor_pages_on_every_runner_and_after_a_restart() {
    let Some(url) = postgres_url().await else { return };
    let (a, _) = member(&url).await;
    let (b, _) = member(&url).await;
    let mut ca = client_with_page(&a, 2).await;
    let mut cb = client_with_page(&b, 2).await;
    for _ in 0..5 {
        ca.new_session().await;
    }
    let first = ca.call_ok("session/list", json!({})).await;
    let cursor = first["nextCursor"].as_str().expect("more pages").to_owned();
    let in_a = ca.call_ok("session/list", json!({"cursor": cursor})).await;
    let in_b = cb.call_ok("session/list", json!({"cursor": cursor})).await;
    assert_eq!(in_a["sessions"], in_b["sessions"], "the same page from either runner");
    assert_eq!(in_b["sessions"].as_array().unwrap().len(), 2);
    // Following the cursors through b: every session once.
    let mut seen: Vec<String> =
        first["sessions"].as_array().unwrap().iter().map(|s| s["sessionId"].as_str().unwrap().to_owned()).collect();
    let mut next = Some(cursor.clone());
    while let Some(c) = next {
        let page = cb.call_ok("session/list", json!({"cursor": c})).await;
        seen.extend(page["sessions"].as_array().unwrap().iter().map(|s| s["sessionId"].as_str().unwrap().to_owned()));
        next = page["nextCursor"].as_str().map(str::to_owned);
    }
    let mut unique = seen.clone();
    unique.sort();
    unique.dedup();
    assert_eq!((seen.len(), unique.len()), (5, 5), "{seen:?}");

    // A tampered cursor is refused everywhere.
    let mut tampered = cursor.clone().into_bytes();
    tampered[2] = if tampered[2] == b'A' { b'B' } else { b'A' };
    let tampered = String::from_utf8(tampered).unwrap();
    for client in [&mut ca, &mut cb] {
        let error = client.call_err("session/list", json!({"cursor": tampered})).await;
        assert_eq!(code(&error), -32602, "{error}");
    }
    // A runner started later (a restart) takes the cursor too.
    drop(ca);
    let (c, _) = member(&url).await;
    let mut cc = client_with_page(&c, 2).await;
    assert_eq!(cc.call_ok("session/list", json!({"cursor": cursor})).await["sessions"], in_a["sessions"]);
}

#[tokio::test]
async fn a_delete_in_one_runner_is_seen_by_the_others() {
    let Some(url) = postgres_url().await else { return };
    let (a, _) = member(&url).await;
    let (b, _) = member(&url).await;
    let mut ca = common::runner::client(&a).await;
    let mut cb = common::runner::client(&b).await;
    let sid = ca.new_session().await;
    prompt_ok(&mut ca, &sid, "say doomed").await;
    ca.call_ok("session/close", json!({"sessionId": sid})).await;
    assert_eq!(cb.call_ok("session/delete", json!({"sessionId": sid})).await, json!({}));
    let listed = ca.call_ok("session/list", json!({})).await;
    assert_eq!(listed["sessions"], json!([]), "{listed}");
    let error = ca.call_err("session/load", session(&sid)).await;
    assert_eq!(code(&error), -32002, "{error}");
}

/// A runner cut off from the database long enough for its lease to lapse, whose session another
/// runner took over meanwhile: its next turn fails (nothing of it is written), its prompts after
/// that are refused, and the new owner's journal holds only what the new owner wrote after the
/// takeover.
#[tokio::test]
async fn a_runner_whose_session_was_taken_over_is_fenced_off() {
    let Some(url) = postgres_url().await else { return };
    let a_store = Arc::new(open_postgres_with_lease(&url, Duration::from_secs(600)).await);
    let a_owner = a_store.owner_id().to_owned();
    let (a, _) = runner(a_store.clone() as Arc<dyn Store>, TurnsSpec::default());
    let (b, b_store) = member(&url).await;
    let mut ca = common::runner::client(&a).await;
    let mut cb = common::runner::client(&b).await;
    let sid = ca.new_session().await;
    prompt_ok(&mut ca, &sid, "say before").await;

    // a's lease lapses (as if its heartbeats had not reached the database), and b takes over.
    raw_client(&url)
        .await
        .execute("UPDATE acp_owners SET expires_at = now() - interval '1 second' WHERE id = $1", &[&a_owner])
        .await
        .expect("expire a's lease");
    load(&mut cb, &sid).await;

    let id = ca.prompt(&sid, "say late").await;
    let response = ca.response(&id).await;
    let error = error_of(&response);
    assert_eq!(code(&error), -32603, "{response}");
    assert!(error["message"].as_str().unwrap().contains("owned by another process"), "{error}");
    let error =
        ca.call_err("session/prompt", json!({"sessionId": sid, "prompt": [{"type": "text", "text": "x"}]})).await;
    assert_eq!(code(&error), -32600, "{error}");
    assert!(error["message"].as_str().unwrap().contains("no longer live here"), "{error}");

    prompt_ok(&mut cb, &sid, "say after").await;
    let kinds = journal_kinds(&b_store, &sid).await;
    assert_eq!(kinds.iter().filter(|k| **k == "TurnStarted").count(), 2, "{kinds:?}");
    let replay = load_after_close(&mut cb, &sid).await;
    assert_eq!(chunk_texts(&replay, "user_message_chunk"), ["say before", "say after"]);
    let _: &PostgresStore = &a_store;
}

async fn load_after_close(client: &mut TestClient, sid: &str) -> Vec<Value> {
    client.call_ok("session/close", json!({"sessionId": sid})).await;
    load(client, sid).await
}
