//! Re-attaching a live session: `session/load` and `session/resume` of a session that
//! is live and idle on the same connection succeed without the host opening anything — load
//! replays the session's history (told by the live session itself), resume sends nothing — and
//! they stay refused while a prompt is in flight; delete of a live session stays refused.

use crate::common;

use acp_facade::Options;
use acp_facade::harness::{AiMessage, EventKind, Message, TokenChannel, UserMessage};
use common::lifecycle::{History, RichHost, SessionSpec, update_kinds, updates};
use common::{TestClient, chunk_texts, code};
use serde_json::{Value, json};

fn history() -> Vec<acp_facade::harness::Event> {
    let at = ("l1", "t1");
    let text = acp_facade::harness::content::text_block;
    History::new()
        .durable(at, EventKind::TurnStarted { message: UserMessage::new(vec![text("a question")]) })
        .durable(
            at,
            EventKind::StepDone {
                messages: vec![Message::Ai(AiMessage { content: vec![text("an answer")], ..Default::default() })],
            },
        )
        .durable(at, EventKind::ContextMeasured { used: 12, size: 100, cost: None })
        .durable(at, EventKind::TurnDone { message: None, stop: None })
        .build()
}

fn params(id: &str) -> Value {
    json!({"sessionId": id, "cwd": "/tmp", "mcpServers": []})
}

async fn start() -> (std::sync::Arc<RichHost>, TestClient) {
    let host = RichHost::new(SessionSpec { config: true, ..SessionSpec::default() });
    host.store("s1", history());
    let options = Options::new(host.clone()).loader(host.clone()).resumer(host.clone()).deleter(host.clone());
    let client = TestClient::initialized(options).await;
    (host, client)
}

#[tokio::test]
async fn load_of_a_live_idle_session_replays_what_the_first_load_did() {
    let (host, mut client) = start().await;
    let id = client.send_request("session/load", params("s1")).await;
    let (first, first_replay) = client.response_with_preceding(&id).await;
    assert!(first["result"]["configOptions"].is_array(), "{first}");
    // The live session tells its history (the host's stored one, here).
    *host.session("s1").history.lock().unwrap() = Some(history());

    let id = client.send_request("session/load", params("s1")).await;
    let (again, replay) = client.response_with_preceding(&id).await;
    assert_eq!(again["result"], first["result"], "the same config state");
    assert_eq!(replay, first_replay, "the same replay, before the response");
    assert_eq!(update_kinds(&replay), ["user_message_chunk", "agent_message_chunk", "usage_update"], "{replay:#?}");
    assert_eq!(*host.loads.lock().unwrap(), ["s1"], "the host opened it once");
    assert_eq!(host.all_sessions().len(), 1);
    assert!(host.log.entries().contains(&"s1:history".to_owned()));

    // Still the same live session, and usable.
    let s = host.session("s1");
    let prompt = client.prompt("s1", "go on").await;
    let (command, _) = s.inner.next_submit().await;
    s.inner.start_turn(&command, ("l1", "t2"));
    s.inner.live(("l1", "t2"), EventKind::TokenDelta { text: "more".into(), channel: TokenChannel::Message });
    s.inner.durable(("l1", "t2"), EventKind::TurnDone { message: None, stop: None });
    let (response, before) = client.response_with_preceding(&prompt).await;
    assert_eq!(response["result"]["stopReason"], "end_turn");
    assert_eq!(chunk_texts(&before, "agent_message_chunk"), ["more"]);
    client.hang_up().await;
    assert_eq!(s.shutdown_count(), 1, "one session, shut down once");
}

#[tokio::test]
async fn resume_of_a_live_idle_session_answers_and_sends_nothing() {
    let (host, mut client) = start().await;
    let load = client.send_request("session/load", params("s1")).await;
    client.response_with_preceding(&load).await;
    let mark = client.transcript.len();
    let id = client.send_request("session/resume", params("s1")).await;
    let (response, before) = client.response_with_preceding(&id).await;
    assert!(response["result"]["configOptions"].is_array(), "{response}");
    assert!(before.is_empty(), "{before:#?}");
    assert!(updates(&client.transcript[mark..]).is_empty());
    assert!(host.resumes.lock().unwrap().is_empty(), "the host is not asked");
    assert!(!host.log.entries().contains(&"s1:history".to_owned()), "resume needs no history");
    client.hang_up().await;
}

#[tokio::test]
async fn load_of_a_live_session_that_cannot_tell_its_history_is_refused_and_it_stays_live() {
    let (host, mut client) = start().await;
    let fresh = client.new_session().await;
    let error = client.call_err("session/load", params(&fresh)).await;
    assert_eq!(code(&error), -32600, "{error}");
    assert!(error["message"].as_str().unwrap().contains("replay"), "{error}");
    assert!(host.loads.lock().unwrap().is_empty());
    // Resume needs no history: it re-attaches.
    client.call_ok("session/resume", params(&fresh)).await;
    assert_eq!(host.session(&fresh).shutdown_count(), 0, "still live");
    client.call_ok("session/close", json!({"sessionId": fresh})).await;
    client.hang_up().await;
}

#[tokio::test]
async fn reattach_is_refused_while_a_prompt_is_in_flight_and_allowed_after() {
    let (host, mut client) = start().await;
    client.call_ok("session/load", params("s1")).await;
    let s = host.session("s1");
    *s.history.lock().unwrap() = Some(history());
    let prompt = client.prompt("s1", "busy").await;
    let (command, _) = s.inner.next_submit().await;
    s.inner.start_turn(&command, ("l1", "t2"));

    for method in ["session/load", "session/resume"] {
        let error = client.call_err(method, params("s1")).await;
        assert_eq!(code(&error), -32600, "{method}: {error}");
        assert!(error["message"].as_str().unwrap().contains("prompt in flight"), "{method}: {error}");
    }
    // Deleting a live session stays refused, busy or not.
    let error = client.call_err("session/delete", json!({"sessionId": "s1"})).await;
    assert_eq!(code(&error), -32600, "{error}");

    s.inner.durable(("l1", "t2"), EventKind::TurnDone { message: None, stop: None });
    assert_eq!(client.response(&prompt).await["result"]["stopReason"], "end_turn");
    client.call_ok("session/resume", params("s1")).await;
    client.call_ok("session/load", params("s1")).await;
    let error = client.call_err("session/delete", json!({"sessionId": "s1"})).await;
    assert_eq!(code(&error), -32600, "{error}");
    assert!(host.deletes().is_empty());
    assert_eq!(*host.loads.lock().unwrap(), ["s1"]);
    client.hang_up().await;
}

#[tokio::test]
async fn reattach_needs_the_cwd_the_session_lives_in() {
    let (host, mut client) = start().await;
    client.call_ok("session/load", params("s1")).await;
    *host.session("s1").history.lock().unwrap() = Some(history());
    for method in ["session/load", "session/resume"] {
        let error = client.call_err(method, json!({"sessionId": "s1", "cwd": "/", "mcpServers": []})).await;
        assert_eq!(code(&error), -32602, "{method}: {error}");
        assert!(error["message"].as_str().unwrap().contains("cwd"), "{method}: {error}");
    }
    client.hang_up().await;
}

#[tokio::test]
async fn a_closed_session_is_reopened_through_the_host_again() {
    let (host, mut client) = start().await;
    let load = client.send_request("session/load", params("s1")).await;
    client.response_with_preceding(&load).await;
    client.call_ok("session/close", json!({"sessionId": "s1"})).await;
    let id = client.send_request("session/load", params("s1")).await;
    let (response, replay) = client.response_with_preceding(&id).await;
    assert!(response.get("result").is_some(), "{response}");
    assert_eq!(update_kinds(&replay), ["user_message_chunk", "agent_message_chunk", "usage_update"]);
    assert_eq!(*host.loads.lock().unwrap(), ["s1", "s1"]);
    client.hang_up().await;
}
