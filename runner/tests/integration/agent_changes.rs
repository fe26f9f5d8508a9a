//! Agent-initiated changes through the facade's `SessionControl`: the host's mode and option
//! changes take the one `apply_config_option` path (unknown → `-32602` and nothing sent, the
//! current value → a silent no-op), the client gets `current_mode_update` (when the mode moved)
//! and then `config_option_update`; a change made during a turn reaches the client in order with
//! the turn's updates, before the response; the client's own `set_mode` / `set_config_option`
//! get `config_option_update` only; a closed session's control fails `-32002`.

use crate::common;

use std::sync::Arc;

use acp_facade::Options;
use acp_facade::acp::{AvailableCommand, SessionModeId};
use acp_facade::harness::{EventKind, TokenChannel};
use common::lifecycle::update_kinds;
use common::rich::{ControlledHost, rich_client, rich_runner, shout};
use common::{TestClient, assert_serving, chunk_texts, updates};
use serde_json::{Value, json};

fn current(update: &Value) -> Vec<String> {
    update["configOptions"].as_array().unwrap().iter().map(|o| o["currentValue"].as_str().unwrap().to_owned()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_switching_modes_is_told_in_order_before_the_response() {
    let (runner, _) = rich_runner();
    let mut client = rich_client(&runner, |o| o).await;
    // Several sessions, on a multi-threaded runtime: the order never varies.
    for _ in 0..20 {
        let sid = client.new_session().await;
        let id = client.prompt(&sid, "switch code").await;
        let (response, before) = client.response_with_preceding(&id).await;
        assert_eq!(response["result"]["stopReason"], "end_turn");
        assert_eq!(
            update_kinds(&before),
            [
                "available_commands_update",
                "session_info_update",
                "agent_message_chunk",
                "current_mode_update",
                "config_option_update",
                "agent_message_chunk",
            ]
        );
        let ups = updates(&before);
        assert_eq!(ups[3], json!({"sessionUpdate": "current_mode_update", "currentModeId": "code"}));
        assert_eq!(current(&ups[4]), ["code", "fast"]);
        assert_eq!(chunk_texts(&before, "agent_message_chunk"), ["before", "after"]);
    }
}

#[tokio::test]
async fn an_unknown_or_current_mode_sends_nothing() {
    let (runner, _) = rich_runner();
    let mut client = rich_client(&runner, |o| o).await;
    let sid = client.new_session().await;
    for (prompt, chunks) in
        [("switch yolo", vec!["before", "error -32602", "after"]), ("switch ask", vec!["before", "after"])]
    {
        let id = client.prompt(&sid, prompt).await;
        let (_, before) = client.response_with_preceding(&id).await;
        let kinds = update_kinds(&before);
        assert!(!kinds.iter().any(|k| k == "current_mode_update" || k == "config_option_update"), "{kinds:?}");
        assert_eq!(chunk_texts(&before, "agent_message_chunk"), chunks);
    }
    // Another option: config_option_update only (the mode did not move).
    let id = client.prompt(&sid, "model smart").await;
    let (_, before) = client.response_with_preceding(&id).await;
    let changes: Vec<Value> =
        updates(&before).into_iter().filter(|u| u["sessionUpdate"] != "agent_message_chunk").collect();
    assert_eq!(changes.len(), 1, "{changes:?}");
    assert_eq!(changes[0]["sessionUpdate"], "config_option_update");
    assert_eq!(current(&changes[0]), ["ask", "smart"]);
}

#[tokio::test]
async fn the_clients_own_changes_get_config_option_update_only() {
    let (runner, _) = rich_runner();
    let mut client = rich_client(&runner, |o| o).await;
    let sid = client.new_session().await;
    let id = client.send_request("session/set_mode", json!({"sessionId": sid, "modeId": "code"})).await;
    let (_, before) = client.response_with_preceding(&id).await;
    assert_eq!(update_kinds(&before), ["config_option_update"]);
    let id = client
        .send_request("session/set_config_option", json!({"sessionId": sid, "configId": "mode", "value": "ask"}))
        .await;
    let (_, before) = client.response_with_preceding(&id).await;
    assert_eq!(update_kinds(&before), ["config_option_update"]);
}

#[tokio::test]
async fn a_change_between_turns_is_sent_at_once_and_a_closed_sessions_control_fails() {
    let (runner, _) = rich_runner();
    let mut client = rich_client(&runner, |o| o).await;
    let sid = client.new_session().await;
    let session = runner.live_session(&acp_facade::acp::SessionId::new(sid.as_str())).expect("live");
    let control = session.control().expect("the facade handed the session its control");
    assert_eq!(control.session_id().0.as_ref(), sid);
    control.set_mode(SessionModeId::new("code")).await.expect("a known mode");
    let (first, second) = (client.next().await.0, client.next().await.0);
    assert_eq!(first["params"]["update"], json!({"sessionUpdate": "current_mode_update", "currentModeId": "code"}));
    assert_eq!(current(&second["params"]["update"]), ["code", "fast"]);
    // The turn sees it.
    let created = client
        .call_ok("session/set_config_option", json!({"sessionId": sid, "configId": "model", "value": "smart"}))
        .await;
    assert_eq!(current(&created), ["code", "smart"]);
    client.next().await; // its config_option_update
    client.call_ok("session/close", json!({"sessionId": sid})).await;
    let error = control.set_mode(SessionModeId::new("ask")).await.expect_err("closed");
    assert_eq!(i32::from(error.code), -32002);
    let error = control.set_commands(Vec::new()).await.expect_err("closed");
    assert_eq!(i32::from(error.code), -32002);
    assert_serving(&mut client).await;
}

#[tokio::test]
async fn a_change_during_a_turn_follows_every_event_published_before_it() {
    const CHUNKS: usize = 4000;
    let host = ControlledHost::new(vec![shout()]);
    let mut client = TestClient::initialized(Options::new(host.clone())).await;
    let sid = client.new_session().await;
    let session = host.session(0);
    assert_eq!(session.set_controls.load(std::sync::atomic::Ordering::SeqCst), 1);
    let id = client.prompt(&sid, "go").await;
    let (command, _) = session.inner.next_submit().await;
    let at = ("l", "t");
    session.inner.start_turn(&command, at);
    // Far more than the pipe holds while the client does not read: most of them are still queued
    // for the prompt's drain when the change is made.
    let chunk = "x".repeat(1024);
    for _ in 0..CHUNKS {
        session.inner.live(at, EventKind::TokenDelta { text: chunk.clone(), channel: TokenChannel::Message });
    }
    let control = session.control();
    let change = tokio::spawn(async move { control.set_commands(vec![AvailableCommand::new("later", "Later")]).await });
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    session.inner.live(at, EventKind::TokenDelta { text: "last".into(), channel: TokenChannel::Message });
    session.inner.durable(at, EventKind::TurnDone { message: None, stop: None });
    let (_, before) = client.response_with_preceding(&id).await;
    change.await.unwrap().expect("applied by the prompt's drain");
    let kinds = update_kinds(&before);
    assert_eq!(kinds.first().map(String::as_str), Some("available_commands_update"), "the first prompt's");
    assert_eq!(kinds.len(), CHUNKS + 3);
    // After every chunk published before the change (the drain applies it once it has caught up,
    // so the chunk published after it may come first or not).
    let advertised = kinds.iter().rposition(|k| k == "available_commands_update").unwrap();
    assert!(advertised > CHUNKS, "the change overtook chunks published before it: at {advertised}");
    assert_eq!(updates(&before)[advertised]["availableCommands"], json!([{"name": "later", "description": "Later"}]));
}

#[tokio::test]
async fn a_host_session_without_options_refuses_a_mode_change() {
    let host = ControlledHost::new(Vec::new());
    let mut client = TestClient::initialized(Options::new(host.clone())).await;
    client.new_session().await;
    let control: Arc<dyn acp_facade::host::SessionControl> = host.session(0).control();
    let error = control.set_mode(SessionModeId::new("code")).await.expect_err("no options");
    assert_eq!(i32::from(error.code), -32602);
    assert_serving(&mut client).await;
}
