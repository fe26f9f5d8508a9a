//! The session's own client handle, as a host (not the runner) gets it on [`Setup`]: the
//! client's capabilities reach the host typed; a call works between prompts; a call made while a
//! prompt is in flight is cancelled with that prompt (`$/cancel_request`) and its terminals killed
//! and released; closing the session releases what it still holds and refuses later calls; a
//! call before the session is established sends nothing.

use crate::common;

use std::sync::{Arc, Mutex};

use acp_facade::Options;
use acp_facade::client::{ClientError, Terminal};
use acp_facade::harness::EventKind;
use acp_facade::host::{HostResult, LiveSession, SessionHost, Setup};
use async_trait::async_trait;
use common::client_turns::{all_capabilities, calls, is_request, next_request};
use common::host::ScriptedHost;
use common::{STEP, TestClient};
use serde_json::{Value, json};

async fn start(capabilities: Value) -> (Arc<ScriptedHost>, TestClient, String, Setup) {
    let host = ScriptedHost::new();
    let mut client = TestClient::initialized_with(Options::new(host.clone()), capabilities).await;
    let sid = client.new_session().await;
    let setup = host.setups.lock().unwrap().last().cloned().expect("a setup");
    (host, client, sid, setup)
}

#[tokio::test]
async fn the_clients_capabilities_reach_the_host_typed() {
    let advertised = json!({
        "fs": {"readTextFile": true, "writeTextFile": false},
        "terminal": true,
        "elicitation": {"form": {}, "url": null},
        "auth": {"terminal": true},
        "_meta": {"vendor.example": {"beta": true}},
    });
    let (_, client, _, setup) = start(advertised).await;
    let capabilities = setup.client_capabilities();
    assert!(capabilities.read_text_file() && !capabilities.write_text_file());
    assert!(capabilities.terminal());
    assert!(capabilities.elicitation_form() && !capabilities.elicitation_url(), "a null mode advertises nothing");
    assert!(capabilities.auth_terminal());
    assert_eq!(capabilities.meta().and_then(|m| m.get("vendor.example")), Some(&json!({"beta": true})));
    client.hang_up().await;

    // Nothing advertised, and `{}` for elicitation: nothing at all.
    let (_, client, _, setup) = start(json!({"elicitation": {}})).await;
    let capabilities = setup.client_capabilities();
    assert!(!capabilities.read_text_file() && !capabilities.terminal());
    assert!(!capabilities.elicitation_form() && !capabilities.elicitation_url());
    client.hang_up().await;
}

#[tokio::test]
async fn the_session_handle_calls_the_client_between_prompts() {
    let (_, mut client, sid, setup) = start(all_capabilities()).await;
    let handle = setup.client().clone();
    let read = tokio::spawn(async move { handle.read_text_file("/etc/hosts", None, Some(1)).await });
    let request = next_request(&mut client, "fs/read_text_file").await;
    assert_eq!(request["params"], json!({"sessionId": sid, "path": "/etc/hosts", "limit": 1}));
    client.respond(&request["id"], json!({"content": "127.0.0.1 localhost\n"})).await;
    assert_eq!(read.await.unwrap(), Ok("127.0.0.1 localhost\n".to_owned()));
    assert_eq!(setup.client().session_id().map(|s| s.0.to_string()), Some(sid));
    client.hang_up().await;
}

#[tokio::test]
async fn a_call_made_during_a_prompt_is_cancelled_with_it() {
    let (host, mut client, sid, setup) = start(all_capabilities()).await;
    let prompt = client.prompt(&sid, "go").await;
    let session = host.session(&sid);
    let (command, _) = session.next_submit().await;
    session.start_turn(&command, ("l", "t"));
    // The host's turn reads a file and starts a terminal through the session's handle.
    let handle = setup.client().clone();
    let terminal: Arc<Mutex<Option<Terminal>>> = Arc::default();
    let kept = terminal.clone();
    let work = tokio::spawn(async move {
        let created = handle.create_terminal("server", Vec::new(), Vec::new(), None, None).await?;
        *kept.lock().unwrap() = Some(created);
        handle.read_text_file("/big.txt", None, None).await
    });
    let create = next_request(&mut client, "terminal/create").await;
    client.respond(&create["id"], json!({"terminalId": "t-host"})).await;
    let read = next_request(&mut client, "fs/read_text_file").await;
    client.notify("session/cancel", json!({"sessionId": sid})).await;
    session.wait_interrupts(1).await;
    assert_eq!(work.await.unwrap(), Err(ClientError::Cancelled { method: "fs/read_text_file" }));
    session.durable(("l", "t"), EventKind::TurnInterrupted {});
    let response = client.response(&prompt).await;
    assert_eq!(response["result"]["stopReason"], "cancelled");
    let transcript = client.transcript.clone();
    let cancel = transcript.iter().find(|m| m["method"] == "$/cancel_request").expect("abandoned");
    assert_eq!(cancel["params"]["requestId"], read["id"]);
    let answered = transcript.iter().position(|m| m.get("id") == Some(&prompt) && m.get("method").is_none()).unwrap();
    let released = transcript.iter().position(|m| is_request(m, "terminal/release")).expect("released");
    let killed = transcript.iter().position(|m| is_request(m, "terminal/kill")).expect("killed");
    assert!(killed < released && released < answered, "killed, released, then answered: {transcript:#?}");
    assert!(terminal.lock().unwrap().as_ref().is_some_and(Terminal::is_released));
    // The session's handle works again for the next prompt (and between prompts).
    let handle = setup.client().clone();
    let read = tokio::spawn(async move { handle.read_text_file("/small.txt", None, None).await });
    let request = next_request(&mut client, "fs/read_text_file").await;
    client.respond(&request["id"], json!({"content": "x"})).await;
    assert_eq!(read.await.unwrap(), Ok("x".to_owned()));
    drop(terminal);
    let transcript = client.hang_up_transcript().await;
    assert_eq!(transcript.iter().filter(|m| is_request(m, "terminal/release")).count(), 1);
}

#[tokio::test]
async fn closing_the_session_releases_its_terminals_and_refuses_later_calls() {
    let (_, mut client, sid, setup) = start(all_capabilities()).await;
    let handle = setup.client().clone();
    let create = tokio::spawn(async move { handle.create_terminal("watch", Vec::new(), Vec::new(), None, None).await });
    let request = next_request(&mut client, "terminal/create").await;
    client.respond(&request["id"], json!({"terminalId": "t-watch"})).await;
    let terminal = create.await.unwrap().expect("created");
    let close = client.send_request("session/close", json!({"sessionId": sid})).await;
    let (closed, before) = client.response_with_preceding(&close).await;
    assert_eq!(closed["result"], json!({}));
    assert_eq!(calls(&before), ["terminal/kill", "terminal/release"], "{before:#?}");
    assert!(terminal.is_released());
    assert_eq!(terminal.output().await.unwrap_err().kind(), "released");
    assert_eq!(
        setup.client().read_text_file("/x", None, None).await,
        Err(ClientError::Cancelled { method: "fs/read_text_file" })
    );
    drop(terminal);
    let transcript = client.hang_up_transcript().await;
    assert_eq!(transcript.iter().filter(|m| is_request(m, "terminal/release")).count(), 1, "{transcript:#?}");
    assert!(!transcript.iter().any(|m| is_request(m, "fs/read_text_file")));
}

#[tokio::test]
async fn a_handle_on_a_client_that_hung_up_is_cancelled() {
    let (_, client, _, setup) = start(all_capabilities()).await;
    client.hang_up().await;
    assert_eq!(
        setup.client().write_text_file("/x", "y").await,
        Err(ClientError::Cancelled { method: "fs/write_text_file" })
    );
}

/// A host whose `new_session` calls the client through the setup's handle before returning.
struct EagerHost {
    inner: Arc<ScriptedHost>,
    seen: Mutex<Option<Result<String, ClientError>>>,
}

#[async_trait]
impl SessionHost for EagerHost {
    async fn new_session(&self, setup: Setup) -> HostResult<Arc<dyn LiveSession>> {
        let early = setup.client().read_text_file("/early.txt", None, None).await;
        *self.seen.lock().unwrap() = Some(early);
        self.inner.new_session(setup).await
    }
}

#[tokio::test]
async fn a_call_before_the_session_is_established_sends_nothing() {
    let host = Arc::new(EagerHost { inner: ScriptedHost::new(), seen: Mutex::default() });
    let mut client = TestClient::initialized_with(Options::new(host.clone()), all_capabilities()).await;
    let created = client.send_request("session/new", json!({"cwd": "/tmp", "mcpServers": []})).await;
    let (response, before) = client.response_with_preceding(&created).await;
    assert!(response["result"]["sessionId"].is_string(), "{response}");
    assert!(calls(&before).is_empty(), "{before:?}");
    assert_eq!(
        host.seen.lock().unwrap().clone(),
        Some(Err(ClientError::NotEstablished { method: "fs/read_text_file" }))
    );
    let _ = tokio::time::timeout(STEP, client.hang_up()).await;
}

#[tokio::test]
async fn a_setup_made_by_hand_has_a_detached_handle_that_sends_nothing() {
    let setup = Setup::new("/tmp", Vec::new(), Vec::new()).unwrap();
    assert_eq!(
        setup.client().read_text_file("/x", None, None).await,
        Err(ClientError::Unsupported { method: "fs/read_text_file", capability: "fs.readTextFile" })
    );
    assert!(!setup.client_capabilities().terminal());
}
