//! `session/resume`: no replay and no `session/update` at all before the response; the session is
//! registered and usable; a live id, a relative cwd and an unknown id are rejected; the response
//! carries the session's config state.

use crate::common;

use acp_facade::Options;
use acp_facade::harness::{EventKind, Message, TokenChannel, UserMessage};
use common::lifecycle::{History, RichHost, SessionSpec, updates};
use common::{TestClient, chunk_texts, code};
use serde_json::json;

fn stored_history() -> Vec<acp_facade::harness::Event> {
    let at = ("l1", "t1");
    History::new()
        .durable(
            at,
            EventKind::TurnStarted {
                message: UserMessage::new(vec![acp_facade::harness::content::text_block("old question")]),
            },
        )
        .durable(
            at,
            EventKind::StepDone {
                messages: vec![Message::Ai(acp_facade::harness::AiMessage {
                    content: vec![acp_facade::harness::content::text_block("old answer")],
                    ..Default::default()
                })],
            },
        )
        .durable(at, EventKind::ContextMeasured { used: 10, size: 100, cost: None })
        .durable(at, EventKind::TurnDone { message: None, stop: None })
        .build()
}

fn resume_params(id: &str) -> serde_json::Value {
    json!({"sessionId": id, "cwd": "/tmp", "mcpServers": []})
}

#[tokio::test]
async fn resume_sends_nothing_before_its_response_and_the_session_is_live_after() {
    let host = RichHost::new(SessionSpec::default());
    host.store("stored-1", stored_history());
    // Compaction on: even the lazy command advertisement must not precede the response.
    let options = Options::new(host.clone()).resumer(host.clone()).compaction(true);
    let mut client = TestClient::start(options);
    let init = client.initialize().await;
    assert_eq!(init["agentCapabilities"]["sessionCapabilities"]["resume"], json!({}));

    let id = client.send_request("session/resume", resume_params("stored-1")).await;
    let (response, before) = client.response_with_preceding(&id).await;
    assert_eq!(response["result"], json!({}));
    assert!(before.is_empty(), "resume must send nothing before its response: {before:#?}");
    assert!(updates(&client.transcript).is_empty(), "no session/update at all");
    assert_eq!(*host.resumes.lock().unwrap(), vec!["stored-1".to_owned()]);
    let setups = host.setups.lock().unwrap().clone();
    assert_eq!(setups[0].1.cwd(), std::fs::canonicalize("/tmp").unwrap());

    // Registered: a prompt works, and streams only the new turn.
    let s = host.session("stored-1");
    let prompt = client.prompt("stored-1", "new question").await;
    let (command, _) = s.inner.next_submit().await;
    s.inner.start_turn(&command, ("l1", "t2"));
    s.inner.live(("l1", "t2"), EventKind::TokenDelta { text: "new answer".into(), channel: TokenChannel::Message });
    s.inner.durable(("l1", "t2"), EventKind::TurnDone { message: None, stop: None });
    let (response, before) = client.response_with_preceding(&prompt).await;
    assert_eq!(response["result"]["stopReason"], json!("end_turn"));
    assert_eq!(chunk_texts(&before, "agent_message_chunk"), vec!["new answer"]);
    assert!(chunk_texts(&client.transcript, "user_message_chunk").is_empty(), "nothing replayed");

    // Closable like any session.
    assert_eq!(client.call_ok("session/close", json!({"sessionId": "stored-1"})).await, json!({}));
    assert_eq!(s.shutdown_count(), 1);
    client.hang_up().await;
}

#[tokio::test]
async fn resume_rejects_a_relative_cwd_and_an_unknown_id_and_reattaches_a_live_one() {
    let host = RichHost::new(SessionSpec::default());
    host.store("stored-1", stored_history());
    let mut client = TestClient::initialized(Options::new(host.clone()).resumer(host.clone())).await;

    let error = client
        .call_err("session/resume", json!({"sessionId": "stored-1", "cwd": "relative/dir", "mcpServers": []}))
        .await;
    assert_eq!(code(&error), -32602, "{error}");
    assert!(error["message"].as_str().unwrap().contains("cwd"), "{error}");
    assert!(host.resumes.lock().unwrap().is_empty(), "the host is not called for a bad setup");

    let error = client.call_err("session/resume", resume_params("")).await;
    assert_eq!(code(&error), -32602, "{error}");
    assert!(host.resumes.lock().unwrap().is_empty());

    let error = client.call_err("session/resume", resume_params("unknown")).await;
    assert_eq!(code(&error), -32002, "{error}");

    // mcpServers is optional for resume.
    client.call_ok("session/resume", json!({"sessionId": "stored-1", "cwd": "/tmp"})).await;
    // Issue 11: resuming it again while it is live and idle re-attaches it: the answer, with
    // nothing sent before it, and the host not asked again.
    let mark = client.transcript.len();
    client.call_ok("session/resume", resume_params("stored-1")).await;
    assert!(updates(&client.transcript[mark..]).is_empty(), "resume sends nothing");
    assert_eq!(
        *host.resumes.lock().unwrap(),
        vec!["unknown".to_owned(), "stored-1".to_owned()],
        "an already-live id never reaches the host"
    );
    // ... but only with the cwd it lives in.
    let error =
        client.call_err("session/resume", json!({"sessionId": "stored-1", "cwd": "/var", "mcpServers": []})).await;
    assert_eq!(code(&error), -32602, "{error}");
    assert!(error["message"].as_str().unwrap().contains("cwd"), "{error}");

    // A session created with session/new is live too.
    let fresh = client.new_session().await;
    host.store(&fresh, Vec::new());
    client.call_ok("session/resume", resume_params(&fresh)).await;
    assert_eq!(host.resumes.lock().unwrap().len(), 2);
    assert!(updates(&client.transcript).is_empty());
    client.hang_up().await;
}

#[tokio::test]
async fn resume_answers_with_the_config_state_and_modes() {
    let host = RichHost::new(SessionSpec { config: true, ..SessionSpec::default() });
    host.store("stored-1", Vec::new());
    let mut client = TestClient::initialized(Options::new(host.clone()).resumer(host.clone())).await;
    let id = client.send_request("session/resume", resume_params("stored-1")).await;
    let (response, before) = client.response_with_preceding(&id).await;
    assert!(before.is_empty(), "{before:#?}");
    let result = &response["result"];
    let ids: Vec<&str> =
        result["configOptions"].as_array().expect("configOptions").iter().map(|o| o["id"].as_str().unwrap()).collect();
    // The client did not advertise boolean options.
    assert_eq!(ids, vec!["mode", "model"]);
    assert_eq!(result["configOptions"][0]["currentValue"], json!("ask"));
    assert_eq!(result["modes"]["currentModeId"], json!("ask"));
    let modes: Vec<&str> =
        result["modes"]["availableModes"].as_array().unwrap().iter().map(|m| m["id"].as_str().unwrap()).collect();
    assert_eq!(modes, vec!["ask", "code"]);
    client.hang_up().await;
}

#[tokio::test]
async fn resume_is_not_offered_without_a_resumer() {
    let host = RichHost::new(SessionSpec::default());
    host.store("stored-1", Vec::new());
    let mut client = TestClient::start(Options::new(host.clone()));
    let init = client.initialize().await;
    assert!(
        init.pointer("/agentCapabilities/sessionCapabilities/resume").is_none_or(serde_json::Value::is_null),
        "{init}"
    );
    let error = client.call_err("session/resume", resume_params("stored-1")).await;
    assert_eq!(code(&error), -32601, "{error}");
    client.hang_up().await;
}
