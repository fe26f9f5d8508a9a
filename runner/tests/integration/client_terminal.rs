//! The client handle's terminals, through the wire: `terminal/*` calls from a runner turn, and a
//! terminal released exactly once on every path — its explicit release, the end of its turn
//! (normal and failed), its handle dropped, the turn cancelled (killed first), the session closed,
//! and the client hanging up — always before the prompt's response.

use crate::common;

use acp_facade::client::ClientError;
use common::client_turns::{all_capabilities, calls, client_runner, client_with, is_request, next_request};
use common::{STEP, TestClient, chunk_texts};
use serde_json::{Value, json};

fn stop(response: &Value) -> &str {
    response.pointer("/result/stopReason").and_then(Value::as_str).unwrap_or_else(|| panic!("{response}"))
}

/// Answers the next `terminal/create` with `id`; returns the request.
async fn created(client: &mut TestClient, id: &str) -> Value {
    let request = next_request(client, "terminal/create").await;
    client.respond(&request["id"], json!({"terminalId": id})).await;
    request
}

/// How many `method` requests for terminal `id` are in `messages`.
fn count(messages: &[Value], method: &str, id: &str) -> usize {
    messages.iter().filter(|m| is_request(m, method) && m["params"]["terminalId"] == id).count()
}

/// The `terminal/*` calls among `messages`, in order.
fn terminal_calls(messages: &[Value]) -> Vec<String> {
    calls(messages).into_iter().filter(|m| m.starts_with("terminal/")).collect()
}

/// Everything the agent sent from its response to prompt `after` on (exclusive) up to and
/// including the response to `id`: the turn of `id` as the client saw it.
fn turn_of(client: &TestClient, id: &Value) -> Vec<Value> {
    let end = client.transcript.iter().position(|m| m.get("id") == Some(id) && m.get("method").is_none()).unwrap();
    let start = client.transcript[..end]
        .iter()
        .rposition(|m| {
            m.get("method").is_none() && m.pointer("/result/sessionId").is_some()
                || m.pointer("/result/stopReason").is_some()
        })
        .map_or(0, |p| p + 1);
    client.transcript[start..end].to_vec()
}

/// Runs a few more prompts and hangs up, then checks that the whole conversation released
/// terminal `id` exactly once (and never called it after that).
async fn assert_released_once(mut client: TestClient, sid: &str, id: &str) {
    let prompt = client.prompt(sid, "hello").await;
    assert_eq!(stop(&client.response(&prompt).await), "end_turn");
    let transcript = client.hang_up_transcript().await;
    assert_eq!(count(&transcript, "terminal/release", id), 1, "released once: {transcript:#?}");
    let release = transcript.iter().position(|m| is_request(m, "terminal/release")).unwrap();
    let after: Vec<&Value> = transcript[release + 1..].iter().filter(|m| m["params"]["terminalId"] == id).collect();
    assert!(after.is_empty(), "nothing for the terminal after its release: {after:?}");
}

#[tokio::test]
async fn a_command_runs_in_a_client_terminal_and_is_released_once() {
    let (runner, probe) = client_runner();
    let (mut client, sid) = client_with(&runner, all_capabilities()).await;
    let id = client.prompt(&sid, "run cargo test --quiet").await;
    let create = created(&mut client, "term-1").await;
    assert_eq!(create["params"], json!({"sessionId": sid, "command": "cargo", "args": ["test", "--quiet"]}));
    let wait = next_request(&mut client, "terminal/wait_for_exit").await;
    assert_eq!(wait["params"], json!({"sessionId": sid, "terminalId": "term-1"}));
    client.respond(&wait["id"], json!({"exitCode": 0, "signal": null})).await;
    let output = next_request(&mut client, "terminal/output").await;
    client.respond(&output["id"], json!({"output": "ok\n", "truncated": false, "exitStatus": {"exitCode": 0}})).await;
    let release = next_request(&mut client, "terminal/release").await;
    assert_eq!(release["params"], json!({"sessionId": sid, "terminalId": "term-1"}));
    client.respond(&release["id"], json!({})).await;
    let (response, before) = client.response_with_preceding(&id).await;
    assert_eq!(stop(&response), "end_turn");
    assert_eq!(chunk_texts(&before, "agent_message_chunk"), ["exit Some(0) ok\n"]);
    assert_eq!(probe.outcomes().iter().filter(|o| o.is_err()).count(), 0, "{:?}", probe.outcomes());
    assert_released_once(client, &sid, "term-1").await;
}

#[tokio::test]
async fn a_second_release_sends_nothing_and_a_released_terminal_refuses_calls() {
    let (runner, probe) = client_runner();
    let (mut client, sid) = client_with(&runner, all_capabilities()).await;
    let id = client.prompt(&sid, "twice sleep").await;
    created(&mut client, "term-2").await;
    let release = next_request(&mut client, "terminal/release").await;
    client.respond(&release["id"], json!({})).await;
    assert_eq!(stop(&client.response(&id).await), "end_turn");
    let outcomes = probe.outcomes();
    assert_eq!(outcomes[0], Ok("()".to_owned()));
    assert_eq!(outcomes[1], Ok("()".to_owned()), "a second release succeeds quietly");
    assert_eq!(outcomes[2], Err(ClientError::Released { terminal_id: "term-2".into() }));
    assert_released_once(client, &sid, "term-2").await;
}

#[tokio::test]
async fn a_terminal_left_open_is_released_when_its_turn_ends() {
    let (runner, _) = client_runner();
    let (mut client, sid) = client_with(&runner, all_capabilities()).await;
    let id = client.prompt(&sid, "keep make").await;
    created(&mut client, "term-3").await;
    let wait = next_request(&mut client, "terminal/wait_for_exit").await;
    client.respond(&wait["id"], json!({"exitCode": 2})).await;
    let response = client.response(&id).await;
    let before = turn_of(&client, &id);
    assert_eq!(stop(&response), "end_turn");
    // It had exited: released, not killed — before the response.
    assert_eq!(terminal_calls(&before), ["terminal/create", "terminal/wait_for_exit", "terminal/release"]);
    assert_released_once(client, &sid, "term-3").await;
}

#[tokio::test]
async fn a_terminal_of_a_failed_turn_is_released_before_the_error_answers_the_prompt() {
    let (runner, _) = client_runner();
    let (mut client, sid) = client_with(&runner, all_capabilities()).await;
    let id = client.prompt(&sid, "fail make").await;
    created(&mut client, "term-4").await;
    let response = client.response(&id).await;
    let before = turn_of(&client, &id);
    assert_eq!(response["error"]["message"], "the turn failed with a terminal open", "{response}");
    assert_eq!(terminal_calls(&before), ["terminal/create", "terminal/release"]);
    assert_released_once(client, &sid, "term-4").await;
}

#[tokio::test]
async fn a_terminal_whose_call_the_client_rejects_is_released_when_the_failed_turn_ends() {
    let (runner, probe) = client_runner();
    let (mut client, sid) = client_with(&runner, all_capabilities()).await;
    let id = client.prompt(&sid, "wait make").await;
    created(&mut client, "term-10").await;
    let wait = next_request(&mut client, "terminal/wait_for_exit").await;
    client.respond_error(&wait["id"], json!({"code": -32603, "message": "terminal crashed"})).await;
    let response = client.response(&id).await;
    assert_eq!(response["error"]["message"], "terminal crashed", "{response}");
    let before = turn_of(&client, &id);
    // Not cancelled, so not killed: released.
    assert_eq!(terminal_calls(&before), ["terminal/create", "terminal/wait_for_exit", "terminal/release"]);
    assert!(matches!(probe.last(), Err(ClientError::Rejected { method: "terminal/wait_for_exit", .. })));
    assert_released_once(client, &sid, "term-10").await;
}

#[tokio::test]
async fn a_dropped_terminal_is_released_at_once() {
    let (runner, _) = client_runner();
    let (mut client, sid) = client_with(&runner, all_capabilities()).await;
    let id = client.prompt(&sid, "drop make").await;
    created(&mut client, "term-5").await;
    let (response, before) = client.response_with_preceding(&id).await;
    assert_eq!(stop(&response), "end_turn");
    // Released as the handle dropped: before the turn's next update.
    let release = before.iter().position(|m| is_request(m, "terminal/release")).expect("released");
    let chunk = before.iter().position(|m| m.pointer("/params/update/content/text") == Some(&json!("dropped")));
    assert!(chunk.is_some_and(|c| release < c), "{before:#?}");
    assert_released_once(client, &sid, "term-5").await;
}

#[tokio::test]
async fn a_cancelled_turn_kills_and_releases_its_running_terminal() {
    let (runner, probe) = client_runner();
    let (mut client, sid) = client_with(&runner, all_capabilities()).await;
    let id = client.prompt(&sid, "wait server").await;
    created(&mut client, "term-6").await;
    let wait = next_request(&mut client, "terminal/wait_for_exit").await;
    client.notify("session/cancel", json!({"sessionId": sid})).await;
    let response = client.response(&id).await;
    let before = turn_of(&client, &id);
    assert_eq!(stop(&response), "cancelled");
    // The wait is abandoned, then the terminal killed and released, all before the response.
    let cancel = before.iter().find(|m| m["method"] == "$/cancel_request").expect("the wait is abandoned");
    assert_eq!(cancel["params"]["requestId"], wait["id"]);
    assert_eq!(
        calls(&before),
        ["terminal/create", "terminal/wait_for_exit", "$/cancel_request", "terminal/kill", "terminal/release"]
    );
    assert_eq!(probe.last(), Err(ClientError::Cancelled { method: "terminal/wait_for_exit" }));
    assert_released_once(client, &sid, "term-6").await;
}

#[tokio::test]
async fn closing_the_session_kills_and_releases_its_running_terminal() {
    let (runner, _) = client_runner();
    let (mut client, sid) = client_with(&runner, all_capabilities()).await;
    let prompt = client.prompt(&sid, "wait server").await;
    created(&mut client, "term-7").await;
    next_request(&mut client, "terminal/wait_for_exit").await;
    let close = client.send_request("session/close", json!({"sessionId": sid})).await;
    let (closed, before) = client.response_with_preceding(&close).await;
    assert_eq!(closed["result"], json!({}), "{closed}");
    let answered = before.iter().find(|m| m.get("id") == Some(&prompt) && m.get("method").is_none());
    assert_eq!(stop(answered.expect("the prompt is answered first")), "cancelled");
    assert_eq!(count(&before, "terminal/kill", "term-7"), 1, "{before:#?}");
    assert_eq!(count(&before, "terminal/release", "term-7"), 1, "{before:#?}");
    let transcript = client.hang_up_transcript().await;
    assert_eq!(count(&transcript, "terminal/release", "term-7"), 1);
}

#[tokio::test]
async fn a_client_that_hangs_up_gets_its_running_terminal_killed_and_released_once() {
    let (runner, probe) = client_runner();
    let (mut client, sid) = client_with(&runner, all_capabilities()).await;
    let _prompt = client.prompt(&sid, "wait server").await;
    created(&mut client, "term-8").await;
    next_request(&mut client, "terminal/wait_for_exit").await;
    let transcript = client.hang_up_transcript().await;
    // The client may still read what the agent writes after its EOF: the release goes out once.
    assert_eq!(count(&transcript, "terminal/kill", "term-8"), 1, "{transcript:#?}");
    assert_eq!(count(&transcript, "terminal/release", "term-8"), 1, "{transcript:#?}");
    assert_eq!(probe.last(), Err(ClientError::Cancelled { method: "terminal/wait_for_exit" }));
}

#[tokio::test]
async fn cancel_while_the_client_creates_the_terminal_releases_it_once_named() {
    let (runner, probe) = client_runner();
    let (mut client, sid) = client_with(&runner, all_capabilities()).await;
    let id = client.prompt(&sid, "wait server").await;
    let create = next_request(&mut client, "terminal/create").await;
    client.notify("session/cancel", json!({"sessionId": sid})).await;
    assert_eq!(stop(&client.response(&id).await), "cancelled");
    assert_eq!(probe.outcomes(), Vec::new(), "the turn never got a terminal");
    // The client names it late: it is killed and released at once.
    client.respond(&create["id"], json!({"terminalId": "term-9"})).await;
    let kill = tokio::time::timeout(STEP, next_request(&mut client, "terminal/kill")).await.expect("killed");
    assert_eq!(kill["params"]["terminalId"], "term-9");
    let release = next_request(&mut client, "terminal/release").await;
    assert_eq!(release["params"]["terminalId"], "term-9");
    assert_released_once(client, &sid, "term-9").await;
}

#[tokio::test]
async fn no_terminal_call_reaches_a_client_without_the_terminal_capability() {
    let (runner, probe) = client_runner();
    let (mut client, sid) = client_with(&runner, json!({"fs": {"readTextFile": true, "writeTextFile": true}})).await;
    let id = client.prompt(&sid, "run ls").await;
    let (response, before) = client.response_with_preceding(&id).await;
    assert!(response.get("error").is_some(), "{response}");
    assert!(calls(&before).is_empty(), "{before:?}");
    assert_eq!(probe.last(), Err(ClientError::Unsupported { method: "terminal/create", capability: "terminal" }));
}

#[tokio::test]
async fn a_turns_calls_follow_the_updates_it_published_before_them() {
    let (runner, _) = client_runner();
    let (mut client, sid) = client_with(&runner, all_capabilities()).await;
    for round in 0..20 {
        let terminal = format!("term-order-{round}");
        let id = client.prompt(&sid, "shown make").await;
        created(&mut client, &terminal).await;
        let wait = next_request(&mut client, "terminal/wait_for_exit").await;
        // Everything the turn published before waiting is on the wire before the wait.
        let at = |pred: &dyn Fn(&Value) -> bool| client.transcript.iter().rposition(pred).unwrap();
        let waited = at(&|m| m.get("id") == Some(&wait["id"]) && m.get("method").is_some());
        let announced = at(&|m| m.pointer("/params/update/sessionUpdate") == Some(&json!("tool_call")));
        let chunk_line = at(&|m| m.pointer("/params/update/content/text") == Some(&json!("running")));
        assert!(announced < chunk_line && chunk_line < waited, "round {round}: {:#?}", client.transcript);
        client.respond(&wait["id"], json!({"exitCode": 0})).await;
        let release = next_request(&mut client, "terminal/release").await;
        client.respond(&release["id"], json!({})).await;
        assert_eq!(stop(&client.response(&id).await), "end_turn");
    }
    client.hang_up().await;
}
