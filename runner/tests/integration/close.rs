//! `session/close`: an orchestrated lifecycle operation. The in-flight prompt ends `cancelled`,
//! pending permission requests are abandoned and their gates denied, the shutdown hook runs only
//! after the prompt drained and is bounded by the grace period, the session leaves the registry
//! last, and durable history is never touched. A hang-up closes every live session once.

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use acp_facade::harness::{
    ApprovalAction, EventKind, Gate, GateId, GateKind, GateResolver, GateResponse, TokenChannel, ToolCallId,
};
use acp_facade::host::{HostResult, LiveSession, SessionHost, Setup};
use acp_facade::{Agent, Options};
use async_trait::async_trait;
use common::lifecycle::{RichHost, RichSession, SessionSpec, Shutdown, eventually, is_agent_request};
use common::{TestClient, code};
use serde_json::{Value, json};
use tokio::sync::Semaphore;

const AT: (&str, &str) = ("l1", "t1");
const PERMISSION: &str = "session/request_permission";

fn delta(text: &str) -> EventKind {
    EventKind::TokenDelta { text: text.into(), channel: TokenChannel::Message }
}

fn permission_gate(id: &str) -> EventKind {
    EventKind::GateOpened {
        gate: Box::new(Gate {
            id: GateId::new(id),
            kind: GateKind::Permission,
            resolver: GateResolver::Loop,
            tool_call_id: Some(ToolCallId::new("call-1")),
            title: "run it?".into(),
            controls: vec![ApprovalAction::Approve, ApprovalAction::Deny],
            options: Vec::new(),
            schema: None,
            url: None,
        }),
    }
}

fn tool_started() -> EventKind {
    EventKind::tool_call_started(ToolCallId::new("call-1"), "Run", acp_facade::acp::ToolKind::Execute, json!({}))
}

async fn prompt_started(client: &mut TestClient, s: &RichSession, at: (&str, &str)) -> Value {
    let id = client.prompt(s.id_str(), "work").await;
    let (command, _) = s.inner.next_submit().await;
    s.inner.start_turn(&command, at);
    id
}

/// Starts a prompt that parks on a permission request; returns (prompt id, permission request).
async fn parked_on_permission(client: &mut TestClient, s: &RichSession) -> (Value, Value) {
    s.interrupt_ends(AT);
    let prompt = prompt_started(client, s, AT).await;
    s.inner.live(AT, tool_started());
    s.inner.durable(AT, permission_gate("g1"));
    let request = client.wait_for(|m| is_agent_request(m, PERMISSION)).await;
    (prompt, request)
}

fn position(transcript: &[Value], pred: impl Fn(&Value) -> bool) -> usize {
    transcript.iter().position(pred).expect("message in transcript")
}

fn response_to(id: &Value) -> impl Fn(&Value) -> bool + '_ {
    move |m: &Value| m.get("id") == Some(id) && m.get("method").is_none()
}

#[tokio::test]
async fn close_cancels_the_prompt_abandons_the_permission_request_then_shuts_down_and_removes() {
    let host = RichHost::new(SessionSpec::default());
    let agent = Agent::new(Options::new(host.clone()).deleter(host.clone()));
    let mut client = TestClient::start_agent(agent.clone());
    client.initialize().await;
    let session = client.new_session().await;
    let s = host.session(&session);
    let (prompt, request) = parked_on_permission(&mut client, &s).await;

    let close = client.send_request("session/close", json!({"sessionId": session})).await;
    let close_response = client.response(&close).await;
    assert_eq!(close_response["result"], json!({}));

    let t = &client.transcript;
    // The permission request was abandoned with `$/cancel_request` for it.
    let cancel_request = position(t, |m| {
        m.get("method") == Some(&json!("$/cancel_request")) && m["params"]["requestId"] == request["id"]
    });
    let prompt_answered = position(t, response_to(&prompt));
    let close_answered = position(t, response_to(&close));
    assert_eq!(t[prompt_answered]["result"]["stopReason"], json!("cancelled"));
    assert!(cancel_request < close_answered);
    assert!(prompt_answered < close_answered, "the prompt is answered before close returns");

    // The host saw: interrupt and the gate denied, then shutdown once the prompt had drained.
    assert_eq!(s.gate_answers(), vec![(GateId::new("g1"), GateResponse::Approval(ApprovalAction::Deny))]);
    let log = host.log.entries();
    let interrupt = host.log.position(&format!("{session}:interrupt")).expect("interrupted");
    let denied = log.iter().position(|e| e.starts_with(&format!("{session}:gate:g1"))).expect("gate answered");
    let shutdown = host.log.position(&format!("{session}:shutdown")).expect("shut down");
    assert!(interrupt < denied, "interrupt before the gates are denied: {log:?}");
    assert!(denied < shutdown, "{log:?}");
    assert_eq!(s.shutdown_count(), 1);
    assert_eq!(
        *s.subscriptions_at_shutdown.lock().unwrap(),
        Some(0),
        "shutdown must wait until the prompt stopped draining events"
    );
    assert_eq!(agent.live_sessions(), 0);
    assert!(host.deletes().is_empty(), "closing must not touch durable history");

    // Gone: every session-scoped method now answers -32002.
    let error = client
        .call_err("session/prompt", json!({"sessionId": session, "prompt": [{"type": "text", "text": "hi"}]}))
        .await;
    assert_eq!(code(&error), -32002);
    client.hang_up().await;
    assert_eq!(s.shutdown_count(), 1, "a closed session is not closed again at hang-up");
}

#[tokio::test]
async fn a_prompt_racing_a_close_is_rejected_while_closing_and_not_found_after() {
    let permits = Arc::new(Semaphore::new(0));
    let host = RichHost::new(SessionSpec { shutdown: Shutdown::Held(permits.clone()), ..SessionSpec::default() });
    let agent = Agent::new(Options::new(host.clone()));
    let mut client = TestClient::start_agent(agent.clone());
    client.initialize().await;
    let session = client.new_session().await;
    let s = host.session(&session);
    s.interrupt_ends(AT);
    let prompt = prompt_started(&mut client, &s, AT).await;
    s.inner.live(AT, delta("working"));

    let close = client.send_request("session/close", json!({"sessionId": session})).await;
    assert_eq!(client.response(&prompt).await["result"]["stopReason"], json!("cancelled"));
    eventually("shutdown started", || s.shutdown_count() == 1).await;

    // Closing: still registered, but it takes no prompt and no second close.
    assert_eq!(agent.live_sessions(), 1);
    let racing = json!({"sessionId": session, "prompt": [{"type": "text", "text": "too late"}]});
    let error = client.call_err("session/prompt", racing.clone()).await;
    assert_eq!(code(&error), -32600, "{error}");
    let error = client.call_err("session/close", json!({"sessionId": session})).await;
    assert_eq!(code(&error), -32600, "{error}");

    permits.add_permits(1);
    assert_eq!(client.response(&close).await["result"], json!({}));
    assert_eq!(agent.live_sessions(), 0);
    let error = client.call_err("session/prompt", racing).await;
    assert_eq!(code(&error), -32002, "{error}");
    assert_eq!(s.shutdown_count(), 1);
    client.hang_up().await;
    assert_eq!(s.shutdown_count(), 1);
}

#[tokio::test]
async fn closing_an_unknown_session_or_twice_is_a_clear_error() {
    let host = RichHost::new(SessionSpec::default());
    let mut client = TestClient::initialized(Options::new(host.clone())).await;
    let error = client.call_err("session/close", json!({"sessionId": "nope"})).await;
    assert_eq!(code(&error), -32002, "{error}");
    assert!(error["message"].as_str().unwrap().contains("nope"), "{error}");
    let error = client.call_err("session/close", json!({"sessionId": ""})).await;
    assert_eq!(code(&error), -32602, "{error}");

    let session = client.new_session().await;
    let s = host.session(&session);
    assert_eq!(client.call_ok("session/close", json!({"sessionId": session})).await, json!({}));
    let error = client.call_err("session/close", json!({"sessionId": session})).await;
    assert_eq!(code(&error), -32002, "{error}");
    assert_eq!(s.shutdown_count(), 1, "shutdown runs once");
    assert_eq!(s.interrupt_count(), 0, "nothing was running");
    client.hang_up().await;
    assert_eq!(s.shutdown_count(), 1);
}

#[tokio::test]
async fn a_session_without_a_shutdown_hook_closes_too() {
    let host = RichHost::new(SessionSpec { shutdown: Shutdown::Absent, ..SessionSpec::default() });
    let agent = Agent::new(Options::new(host.clone()));
    let mut client = TestClient::start_agent(agent.clone());
    client.initialize().await;
    let session = client.new_session().await;
    assert_eq!(client.call_ok("session/close", json!({"sessionId": session})).await, json!({}));
    assert_eq!(agent.live_sessions(), 0);
    client.hang_up().await;
}

#[tokio::test]
async fn a_shutdown_that_never_returns_is_bounded_by_the_close_grace() {
    let host = RichHost::new(SessionSpec { shutdown: Shutdown::Never, ..SessionSpec::default() });
    let agent = Agent::new(Options::new(host.clone()).close_grace(Duration::from_millis(100)));
    let mut client = TestClient::start_agent(agent.clone());
    client.initialize().await;
    let session = client.new_session().await;
    let s = host.session(&session);
    assert_eq!(client.call_ok("session/close", json!({"sessionId": session})).await, json!({}));
    assert_eq!(s.shutdown_count(), 1);
    assert_eq!(agent.live_sessions(), 0, "removed even though shutdown hung");

    // The same bound holds at hang-up.
    let other = client.new_session().await;
    let o = host.session(&other);
    client.hang_up().await;
    assert_eq!(o.shutdown_count(), 1);
}

#[tokio::test]
async fn hanging_up_closes_every_live_session_exactly_once() {
    let host = RichHost::new(SessionSpec::default());
    let agent = Agent::new(Options::new(host.clone()).deleter(host.clone()));
    let mut client = TestClient::start_agent(agent.clone());
    client.initialize().await;
    let idle = client.new_session().await;
    let streaming = client.new_session().await;
    let asking = client.new_session().await;
    let closed = client.new_session().await;
    assert_eq!(client.call_ok("session/close", json!({"sessionId": closed})).await, json!({}));

    let s_streaming = host.session(&streaming);
    s_streaming.interrupt_ends(AT);
    let streaming_prompt = prompt_started(&mut client, &s_streaming, AT).await;
    s_streaming.inner.live(AT, delta("half a tho"));
    client.wait_for(|m| m.pointer("/params/update/content/text") == Some(&json!("half a tho"))).await;
    let s_asking = host.session(&asking);
    let (asking_prompt, _request) = parked_on_permission(&mut client, &s_asking).await;

    let rest = client.hang_up().await;
    for prompt in [&streaming_prompt, &asking_prompt] {
        let answers: Vec<&Value> = rest.iter().filter(|m| response_to(prompt)(m)).collect();
        assert_eq!(answers.len(), 1, "prompt {prompt} answered once: {rest:#?}");
        assert_eq!(answers[0]["result"]["stopReason"], json!("cancelled"));
    }
    for id in [&idle, &streaming, &asking, &closed] {
        let s = host.session(id);
        assert_eq!(s.shutdown_count(), 1, "session {id}");
        assert_eq!(*s.subscriptions_at_shutdown.lock().unwrap(), Some(0), "session {id}");
    }
    assert_eq!(s_asking.gate_answers(), vec![(GateId::new("g1"), GateResponse::Approval(ApprovalAction::Deny))]);
    assert_eq!(agent.live_sessions(), 0);
    assert!(host.deletes().is_empty(), "a hang-up must not touch durable history");
}

/// A host whose `new_session` waits for a permit (creating a session can take a while).
struct SlowHost {
    inner: Arc<RichHost>,
    permits: Arc<Semaphore>,
}

#[async_trait]
impl SessionHost for SlowHost {
    async fn new_session(&self, setup: Setup) -> HostResult<Arc<dyn LiveSession>> {
        self.permits.acquire().await.expect("open").forget();
        self.inner.new_session(setup).await
    }
}

#[tokio::test]
async fn a_session_still_being_created_at_hang_up_is_closed_too() {
    let inner = RichHost::new(SessionSpec::default());
    let permits = Arc::new(Semaphore::new(0));
    let host = SlowHost { inner: inner.clone(), permits: permits.clone() };
    let agent = Agent::new(Options::new(Arc::new(host)));
    let mut client = TestClient::start_agent(agent.clone());
    client.initialize().await;
    permits.add_permits(1);
    let live = client.new_session().await;
    let pending = client.send_request("session/new", json!({"cwd": "/tmp", "mcpServers": []})).await;
    // The host finishes creating it only after the client is gone.
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        permits.add_permits(1);
    });
    let rest = client.hang_up().await;
    let answers: Vec<&Value> = rest.iter().filter(|m| response_to(&pending)(m)).collect();
    assert_eq!(answers.len(), 1, "{rest:#?}");
    let sessions = inner.all_sessions();
    assert_eq!(sessions.len(), 2);
    for s in &sessions {
        assert_eq!(s.shutdown_count(), 1, "session {} (first: {live})", s.id_str());
    }
    assert_eq!(agent.live_sessions(), 0, "nothing outlives the connection");
}
