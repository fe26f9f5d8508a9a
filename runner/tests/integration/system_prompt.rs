//! The client's system prompt (ACP `systemPrompt`) through the runner, driven over the wire: a
//! turn runner that accepts it is advertised as `sessionCapabilities.systemPrompt`, gets it from
//! `session/new`, keeps it in the store across a `session/load` by another agent over another
//! store instance on the same database (as another process would), and has it replaced by a
//! `session/resume` that carries one; a turn runner that does not accept it never sees it.

use crate::common;

use std::sync::Arc;

use acp_facade::acp::{SessionId, StopReason};
use acp_facade::error::Error;
use acp_facade_runner::{Runner, Store, Turn, TurnRunner};
use async_trait::async_trait;
use common::stores::Database;
use common::{TestClient, chunk_texts};
use serde_json::{Value, json};

/// The agent's own system prompt.
const OWN: &str = "own";

/// Answers every prompt with the system prompt its model would get: [`OWN`] with the client's
/// applied ([`Turn::compose_system_prompt`]).
struct Composer {
    accepts: bool,
}

#[async_trait]
impl TurnRunner for Composer {
    async fn run_turn(&self, turn: &Turn) -> Result<StopReason, Error> {
        turn.text(turn.compose_system_prompt(OWN)).await;
        Ok(StopReason::EndTurn)
    }

    fn accepts_system_prompt(&self) -> bool {
        self.accepts
    }
}

/// An initialized client of a new runner over `store`; also the `initialize` result.
async fn agent(store: Arc<dyn Store>, accepts: bool) -> (TestClient, Value) {
    let runner = Runner::new(store, Arc::new(Composer { accepts }));
    let mut client = TestClient::start_agent(runner.agent(runner.options()));
    let init = client.initialize().await;
    (client, init)
}

/// `systemPrompt` of `mode` with one text block.
fn system_prompt(mode: &str, text: &str) -> Value {
    json!({"mode": mode, "content": [{"type": "text", "text": text}]})
}

/// The params of `session/new` (no `sessionId`), `load` or `resume` in `/tmp`, with
/// `systemPrompt` when given.
fn params(sid: Option<&str>, prompt: Option<Value>) -> Value {
    let mut params = json!({"cwd": "/tmp", "mcpServers": []});
    if let Some(sid) = sid {
        params["sessionId"] = json!(sid);
    }
    if let Some(prompt) = prompt {
        params["systemPrompt"] = prompt;
    }
    params
}

/// Loads or resumes (`method`) `sid` with `params`; the replayed history is left out.
async fn reopen(client: &mut TestClient, method: &str, params: Value) {
    let id = client.send_request(method, params).await;
    let (response, _replayed) = client.response_with_preceding(&id).await;
    assert!(response.get("result").is_some(), "{method}: {response}");
}

/// Prompts `sid` and returns the text the turn streamed, after checking it ended normally.
async fn answer(client: &mut TestClient, sid: &str) -> String {
    let id = client.prompt(sid, "hello").await;
    let (response, before) = client.response_with_preceding(&id).await;
    assert_eq!(response.pointer("/result/stopReason"), Some(&json!("end_turn")), "{response}");
    chunk_texts(&before, "agent_message_chunk").concat()
}

/// Where `initialize` advertises the system prompt capability (`None`: not advertised).
fn advertised(init: &Value) -> Option<&Value> {
    init.pointer("/agentCapabilities/sessionCapabilities/systemPrompt")
}

#[tokio::test]
async fn the_capability_is_advertised_only_when_the_turn_runner_accepts_system_prompts() {
    let (client, init) = agent(Arc::new(acp_facade_runner::MemoryStore::new()), true).await;
    assert_eq!(advertised(&init), Some(&json!({})), "{init}");
    client.hang_up().await;
    let (client, init) = agent(Arc::new(acp_facade_runner::MemoryStore::new()), false).await;
    assert!(init.pointer("/agentCapabilities/sessionCapabilities").is_some(), "{init}");
    assert_eq!(advertised(&init), None, "{init}");
    client.hang_up().await;
}

/// The system prompt of `session/new` applies to the session's turns; closed, the session is
/// loaded by a second agent over a second store on the same database (another process) without
/// `systemPrompt`, and the kept one applies; a `session/resume` carrying one replaces it, for
/// that agent and for whoever loads the session next.
#[tokio::test]
async fn a_system_prompt_outlives_its_agent_and_a_resume_replaces_it() {
    for db in Database::all().await {
        let name = db.name();
        let (mut first, _) = agent(db.open().await, true).await;
        let created = first.call_ok("session/new", params(None, Some(system_prompt("append", "extra")))).await;
        let sid = created["sessionId"].as_str().expect("sessionId").to_owned();
        assert_eq!(answer(&mut first, &sid).await, "own\nextra", "{name}");
        first.call_ok("session/close", json!({"sessionId": sid})).await;

        let (mut second, _) = agent(db.open().await, true).await;
        reopen(&mut second, "session/load", params(Some(&sid), None)).await;
        assert_eq!(answer(&mut second, &sid).await, "own\nextra", "{name}: kept by the store");
        second.call_ok("session/close", json!({"sessionId": sid})).await;
        reopen(&mut second, "session/resume", params(Some(&sid), Some(system_prompt("override", "replaced")))).await;
        assert_eq!(answer(&mut second, &sid).await, "replaced", "{name}: the resume's own");
        second.call_ok("session/close", json!({"sessionId": sid})).await;

        // The replacement is what the store keeps now.
        let (mut third, _) = agent(db.open().await, true).await;
        reopen(&mut third, "session/load", params(Some(&sid), None)).await;
        assert_eq!(answer(&mut third, &sid).await, "replaced", "{name}");
        let record = db.open().await.session(&SessionId::new(sid.as_str())).await.expect("read").expect("kept");
        let kept = serde_json::to_value(record.system_prompt).expect("encode");
        assert_eq!(kept, system_prompt("override", "replaced"), "{name}");
        for client in [first, second, third] {
            client.hang_up().await;
        }
    }
}

/// A turn runner that does not accept system prompts never gets one: a client's `systemPrompt`
/// (which ACP says it must not send then) is left out of `session/new` and `session/load`, and
/// the store keeps none.
#[tokio::test]
async fn a_turn_runner_that_does_not_accept_system_prompts_ignores_a_clients() {
    for db in Database::all().await {
        let name = db.name();
        let (mut first, _) = agent(db.open().await, false).await;
        let created = first.call_ok("session/new", params(None, Some(system_prompt("override", "theirs")))).await;
        let sid = created["sessionId"].as_str().expect("sessionId").to_owned();
        assert_eq!(answer(&mut first, &sid).await, OWN, "{name}");
        first.call_ok("session/close", json!({"sessionId": sid})).await;
        reopen(&mut first, "session/load", params(Some(&sid), Some(system_prompt("append", "more")))).await;
        assert_eq!(answer(&mut first, &sid).await, OWN, "{name}");
        let record = db.open().await.session(&SessionId::new(sid.as_str())).await.expect("read").expect("kept");
        assert_eq!(record.system_prompt, None, "{name}");
        first.hang_up().await;
    }
}

#[tokio::test]
async fn reopening_a_live_session_with_a_system_prompt_replaces_it_and_without_one_keeps_it() {
    let store: Arc<dyn Store> = Arc::new(acp_facade_runner::MemoryStore::new());
    let (mut client, _) = agent(store.clone(), true).await;
    let result = client.call_ok("session/new", params(None, Some(system_prompt("append", "extra")))).await;
    let sid = result["sessionId"].as_str().unwrap().to_owned();
    assert_eq!(answer(&mut client, &sid).await, "own\nextra");
    // Still live on the connection: re-attached, not reopened by the host.
    reopen(&mut client, "session/resume", params(Some(&sid), Some(system_prompt("override", "only this")))).await;
    assert_eq!(answer(&mut client, &sid).await, "only this");
    reopen(&mut client, "session/load", params(Some(&sid), None)).await;
    assert_eq!(answer(&mut client, &sid).await, "only this");
    let stored = store.session(&SessionId::new(sid.as_str())).await.unwrap().unwrap();
    assert_eq!(serde_json::to_value(stored.system_prompt).unwrap(), system_prompt("override", "only this"));
}
