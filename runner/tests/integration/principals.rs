//! Sessions belong to principals, driven through the wire: runners over one database (an `SQLite`
//! file, and `PostgreSQL` when configured), as processes of a fleet would be, serving connections
//! whose options carry different principals. Another principal's session does not exist for a
//! connection — every session method answers it byte for byte as it answers an unknown id, and
//! `session/list` leaves it out — while each principal pages through its own sessions with `cwd`
//! filters and cursors. `session/list` reads one page from the store, never the whole catalog.

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use acp_facade::acp::SessionId;
use acp_facade::harness::Event;
use acp_facade::host::Principal;
use acp_facade_runner::{Claim, PageQuery, Runner, SessionRecord, Store, StoreError};
use common::TestClient;
use common::runner::{TurnsSpec, runner};
use common::stores::{Database, TempDir};
use serde_json::{Value, json};

/// An initialized client of `runner` on behalf of `principal` (none: as over stdio).
async fn connect(runner: &Runner, principal: Option<&str>, page: usize) -> TestClient {
    let mut options = runner.options().max_page_size(page);
    if let Some(name) = principal {
        options = options.principal(Principal::new(name));
    }
    let mut client = TestClient::start_agent(runner.agent(options));
    client.initialize().await;
    client
}

/// The whole answer to a request (its id left out), with `sid` written as `<sid>`: what a client
/// reads, comparable between two session ids.
async fn answer(client: &mut TestClient, method: &str, sid: &str, mut params: Value) -> String {
    params["sessionId"] = json!(sid);
    let id = client.send_request(method, params).await;
    let mut response = client.response(&id).await;
    response.as_object_mut().expect("a response object").remove("id");
    response.to_string().replace(sid, "<sid>")
}

async fn new_session_in(client: &mut TestClient, cwd: &str) -> String {
    let result = client.call_ok("session/new", json!({"cwd": cwd, "mcpServers": []})).await;
    result["sessionId"].as_str().expect("sessionId").to_owned()
}

/// Every page of `session/list` (with `params`), followed through `nextCursor`: the session ids
/// of each page.
async fn pages(client: &mut TestClient, params: Value) -> Vec<Vec<String>> {
    let mut pages = Vec::new();
    let mut params = params;
    loop {
        let result = client.call_ok("session/list", params.clone()).await;
        let ids = result["sessions"].as_array().expect("sessions");
        pages.push(ids.iter().map(|s| s["sessionId"].as_str().expect("id").to_owned()).collect());
        match result.get("nextCursor") {
            Some(cursor) => params["cursor"] = cursor.clone(),
            None => return pages,
        }
    }
}

fn sorted(mut ids: Vec<String>) -> Vec<String> {
    ids.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
    ids
}

/// Another principal's session — live in another runner, or stored — is answered on `load`,
/// `resume`, `prompt`, `close`, `set_mode`, `set_config_option` and `delete` exactly as an
/// unknown id is, is not listed, and survives bob's delete; a connection without principal sees
/// only the sessions without one, and they only it.
#[tokio::test]
async fn another_principals_session_is_an_unknown_id() {
    let workspace = TempDir::new("principals-cwd");
    let cwd = workspace.path().to_str().expect("utf-8").to_owned();
    for database in Database::all().await {
        let name = database.name();
        let spec = TurnsSpec { config: true, ..TurnsSpec::default() };
        let (one, _) = runner(database.open().await, spec.clone());
        let (two, _) = runner(database.open().await, spec);
        let mut alice = connect(&one, Some("alice"), 50).await;
        let mut bob = connect(&two, Some("bob"), 50).await;
        let mut stdio = connect(&two, None, 50).await;

        let live = new_session_in(&mut alice, &cwd).await;
        let stored = new_session_in(&mut alice, &cwd).await;
        alice.call_ok("session/close", json!({"sessionId": stored})).await;
        let unprincipled = new_session_in(&mut stdio, &cwd).await;
        let unknown = "sess_ffffffffffffffff0";

        let setup = json!({"cwd": cwd, "mcpServers": []});
        let requests = [
            ("session/load", setup.clone()),
            ("session/resume", setup),
            ("session/prompt", json!({"prompt": [{"type": "text", "text": "hi"}]})),
            ("session/set_mode", json!({"modeId": "code"})),
            ("session/set_config_option", json!({"configId": "mode", "value": "code"})),
            ("session/close", json!({})),
            ("session/delete", json!({})),
        ];
        for (method, params) in &requests {
            let expected = answer(&mut bob, method, unknown, params.clone()).await;
            assert!(expected.contains("error") || *method == "session/delete", "{name} {method}: {expected}");
            for sid in [&live, &stored, &unprincipled] {
                let got = answer(&mut bob, method, sid, params.clone()).await;
                assert_eq!(got, expected, "{name} {method} of another's session {sid}");
            }
            for sid in [&live, &stored] {
                let got = answer(&mut stdio, method, sid, params.clone()).await;
                let expected = answer(&mut stdio, method, unknown, params.clone()).await;
                assert_eq!(got, expected, "{name} {method} without principal of alice's {sid}");
            }
        }

        // Nothing was deleted, and each sees exactly its own.
        assert_eq!(pages(&mut bob, json!({})).await, [Vec::<String>::new()], "{name}");
        assert_eq!(pages(&mut stdio, json!({})).await, [vec![unprincipled.clone()]], "{name}");
        assert_eq!(pages(&mut alice, json!({})).await, [sorted(vec![live.clone(), stored.clone()])], "{name}");
        // Alice still has hers: the stored one loads, the live one prompts.
        alice.call_ok("session/load", json!({"sessionId": stored, "cwd": cwd, "mcpServers": []})).await;
        let id = alice.prompt(&live, "hi").await;
        let response = alice.response(&id).await;
        assert_eq!(response.pointer("/result/stopReason"), Some(&json!("end_turn")), "{name}: {response}");
        // Alice on another runner, as after a reconnect elsewhere, finds hers too.
        let mut again = connect(&two, Some("alice"), 50).await;
        assert_eq!(pages(&mut again, json!({})).await, [sorted(vec![live.clone(), stored.clone()])], "{name}");
        alice.call_ok("session/close", json!({"sessionId": stored})).await;
        again.call_ok("session/delete", json!({"sessionId": stored})).await;
        assert_eq!(pages(&mut alice, json!({})).await, [vec![live.clone()]], "{name}: alice deletes her own");
    }
}

/// Each principal pages through its own sessions, in session-id byte order, with and without a
/// `cwd` filter, following cursors; a cursor made under one filter is refused under another.
#[tokio::test]
async fn each_principal_pages_through_its_own_sessions() {
    let one_dir = TempDir::new("principals-one");
    let two_dir = TempDir::new("principals-two");
    let one = one_dir.path().to_str().expect("utf-8").to_owned();
    let two = two_dir.path().to_str().expect("utf-8").to_owned();
    for database in Database::all().await {
        let name = database.name();
        let (a, _) = runner(database.open().await, TurnsSpec::default());
        let (b, _) = runner(database.open().await, TurnsSpec::default());
        let mut alice = connect(&a, Some("alice"), 2).await;
        let mut bob = connect(&b, Some("bob"), 2).await;
        let mut stdio = connect(&b, None, 2).await;
        let (mut alice_one, mut alice_two, mut bob_one, mut none_one) = (vec![], vec![], vec![], vec![]);
        for _ in 0..5 {
            alice_one.push(new_session_in(&mut alice, &one).await);
            bob_one.push(new_session_in(&mut bob, &one).await);
        }
        for _ in 0..2 {
            alice_two.push(new_session_in(&mut alice, &two).await);
            none_one.push(new_session_in(&mut stdio, &one).await);
        }
        let flat = |pages: Vec<Vec<String>>| {
            assert!(pages.iter().all(|p| p.len() <= 2), "{name}: pages of at most 2: {pages:?}");
            assert!(pages[..pages.len() - 1].iter().all(|p| p.len() == 2), "{name}: only the last is short: {pages:?}");
            pages.concat()
        };
        let all_alice = sorted([alice_one.clone(), alice_two.clone()].concat());
        assert_eq!(flat(pages(&mut alice, json!({})).await), all_alice, "{name}");
        assert_eq!(flat(pages(&mut alice, json!({"cwd": one})).await), sorted(alice_one.clone()), "{name}");
        assert_eq!(flat(pages(&mut alice, json!({"cwd": two})).await), sorted(alice_two.clone()), "{name}");
        assert_eq!(flat(pages(&mut bob, json!({"cwd": one})).await), sorted(bob_one.clone()), "{name}");
        assert_eq!(flat(pages(&mut bob, json!({"cwd": two})).await), Vec::<String>::new(), "{name}");
        assert_eq!(flat(pages(&mut stdio, json!({})).await), sorted(none_one.clone()), "{name}");

        // A page's cwd and entries are what a client listed; a cursor is bound to its filter.
        let first = alice.call_ok("session/list", json!({"cwd": one})).await;
        assert!(first["sessions"].as_array().unwrap().iter().all(|s| s["cwd"] == one.as_str()), "{name}: {first}");
        let cursor = first["nextCursor"].clone();
        let error = alice.call_err("session/list", json!({"cwd": two, "cursor": cursor})).await;
        assert_eq!(common::code(&error), -32602, "{name}: {error}");
    }
}

/// A store that counts the session records it hands out, and how many times the whole catalog
/// was read.
struct CountingRows {
    inner: Arc<dyn Store>,
    rows: AtomicUsize,
    whole_reads: AtomicUsize,
}

#[async_trait::async_trait]
impl Store for CountingRows {
    async fn create_session(&self, record: &SessionRecord) -> Result<(), StoreError> {
        self.inner.create_session(record).await
    }
    async fn session(&self, id: &SessionId) -> Result<Option<SessionRecord>, StoreError> {
        self.inner.session(id).await
    }
    async fn list_sessions(&self) -> Result<Vec<SessionRecord>, StoreError> {
        self.whole_reads.fetch_add(1, Ordering::SeqCst);
        let all = self.inner.list_sessions().await?;
        self.rows.fetch_add(all.len(), Ordering::SeqCst);
        Ok(all)
    }
    async fn list_page(&self, query: &PageQuery<'_>) -> Result<Vec<SessionRecord>, StoreError> {
        let page = self.inner.list_page(query).await?;
        self.rows.fetch_add(page.len(), Ordering::SeqCst);
        Ok(page)
    }
    async fn touch_session(&self, id: &SessionId, title: Option<&str>, updated_at: &str) -> Result<(), StoreError> {
        self.inner.touch_session(id, title, updated_at).await
    }
    async fn set_system_prompt(
        &self,
        id: &SessionId,
        system_prompt: &acp_facade::acp::SystemPrompt,
    ) -> Result<(), StoreError> {
        self.inner.set_system_prompt(id, system_prompt).await
    }
    async fn append_events(&self, id: &SessionId, events: &[Event]) -> Result<(), StoreError> {
        self.inner.append_events(id, events).await
    }
    async fn append_events_and_touch(
        &self,
        id: &SessionId,
        events: &[Event],
        title: Option<&str>,
        updated_at: &str,
    ) -> Result<(), StoreError> {
        self.inner.append_events_and_touch(id, events, title, updated_at).await
    }
    async fn events(&self, id: &SessionId) -> Result<Vec<Event>, StoreError> {
        self.inner.events(id).await
    }
    async fn delete_session(&self, id: &SessionId) -> Result<(), StoreError> {
        self.inner.delete_session(id).await
    }
    async fn claim_session(&self, id: &SessionId) -> Result<Claim, StoreError> {
        self.inner.claim_session(id).await
    }
    async fn release_session(&self, id: &SessionId) -> Result<(), StoreError> {
        self.inner.release_session(id).await
    }
    fn cursor_key(&self) -> Option<[u8; 32]> {
        self.inner.cursor_key()
    }
}

/// With 40 sessions of two principals stored, each `session/list` call reads at most a page and
/// one more row from the store, and never the whole catalog.
#[tokio::test]
async fn list_reads_one_page_not_the_catalog() {
    for database in Database::all().await {
        let name = database.name();
        let counting = Arc::new(CountingRows {
            inner: database.open().await,
            rows: AtomicUsize::new(0),
            whole_reads: AtomicUsize::new(0),
        });
        let (runner, _) = runner(counting.clone(), TurnsSpec::default());
        let mut alice = connect(&runner, Some("alice"), 3).await;
        let mut bob = connect(&runner, Some("bob"), 3).await;
        let mut mine = Vec::new();
        for _ in 0..20 {
            mine.push(alice.new_session().await);
            bob.new_session().await;
        }
        let mut params = json!({});
        let mut listed = Vec::new();
        loop {
            let before = counting.rows.load(Ordering::SeqCst);
            let result = alice.call_ok("session/list", params.clone()).await;
            let read = counting.rows.load(Ordering::SeqCst) - before;
            assert!(read <= 4, "{name}: a page of 3 read {read} rows");
            listed.extend(
                result["sessions"].as_array().unwrap().iter().map(|s| s["sessionId"].as_str().unwrap().to_owned()),
            );
            match result.get("nextCursor") {
                Some(cursor) => params["cursor"] = cursor.clone(),
                None => break,
            }
        }
        assert_eq!(listed, sorted(mine), "{name}");
        assert_eq!(counting.whole_reads.load(Ordering::SeqCst), 0, "{name}: the whole catalog was never read");
    }
}
