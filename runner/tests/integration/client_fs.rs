//! The client handle's file calls, through the wire: `fs/read_text_file` and `fs/write_text_file`
//! from a runner turn — nothing sent for an unadvertised capability or a relative path, the
//! client's error typed with its code, message and data (the turn carries on), a malformed result
//! a protocol error, and a cancel during a read abandoning it with `$/cancel_request`.

use crate::common;

use std::time::{Duration, Instant};

use acp_facade::client::ClientError;
use common::client_turns::{all_capabilities, calls, client_runner, client_with, next_request};
use common::{TestClient, chunk_texts};
use serde_json::{Value, json};

async fn prompt(client: &mut TestClient, sid: &str, text: &str) -> (Value, Vec<Value>) {
    let id = client.prompt(sid, text).await;
    client.response_with_preceding(&id).await
}

fn stop(response: &Value) -> &str {
    response.pointer("/result/stopReason").and_then(Value::as_str).unwrap_or_else(|| panic!("{response}"))
}

#[tokio::test]
async fn a_read_goes_to_the_client_and_its_content_comes_back() {
    let (runner, probe) = client_runner();
    let (mut client, sid) = client_with(&runner, all_capabilities()).await;
    let id = client.prompt(&sid, "readlines /work/a.txt 3 2").await;
    let request = next_request(&mut client, "fs/read_text_file").await;
    assert_eq!(request["params"], json!({"sessionId": sid, "path": "/work/a.txt", "line": 3, "limit": 2}));
    client.respond(&request["id"], json!({"content": "line three\nline four\n"})).await;
    let (response, before) = client.response_with_preceding(&id).await;
    assert_eq!(stop(&response), "end_turn");
    assert_eq!(chunk_texts(&before, "agent_message_chunk"), ["line three\nline four\n"]);
    assert_eq!(probe.last(), Ok(format!("{:?}", "line three\nline four\n")));
}

#[tokio::test]
async fn a_write_goes_to_the_client_and_a_null_result_is_accepted() {
    let (runner, probe) = client_runner();
    let (mut client, sid) = client_with(&runner, all_capabilities()).await;
    for result in [json!({}), Value::Null] {
        let id = client.prompt(&sid, "write /work/b.txt hello there").await;
        let request = next_request(&mut client, "fs/write_text_file").await;
        assert_eq!(request["params"], json!({"sessionId": sid, "path": "/work/b.txt", "content": "hello there"}));
        client.respond(&request["id"], result.clone()).await;
        let (response, before) = client.response_with_preceding(&id).await;
        assert_eq!(stop(&response), "end_turn", "{result}");
        assert_eq!(chunk_texts(&before, "agent_message_chunk"), ["written"], "{result}");
        assert_eq!(probe.last(), Ok("()".to_owned()), "{result}");
    }
}

#[tokio::test]
async fn nothing_is_sent_for_a_capability_the_client_did_not_advertise() {
    let cases: [(&str, Value, &str, &str); 3] = [
        ("read /a", json!({}), "fs/read_text_file", "fs.readTextFile"),
        ("write /a x", json!({"fs": {"readTextFile": true}}), "fs/write_text_file", "fs.writeTextFile"),
        ("read /a", json!({"fs": {"writeTextFile": true}, "terminal": true}), "fs/read_text_file", "fs.readTextFile"),
    ];
    for (text, capabilities, method, capability) in cases {
        let (runner, probe) = client_runner();
        // The test client fails on any request the capabilities do not allow.
        let (mut client, sid) = client_with(&runner, capabilities.clone()).await;
        let (response, before) = prompt(&mut client, &sid, text).await;
        // The turn returned the error: the prompt fails, nothing was asked of the client.
        assert!(response.get("error").is_some(), "{text}: {response}");
        assert!(calls(&before).is_empty(), "{text}: {before:?}");
        assert_eq!(probe.last(), Err(ClientError::Unsupported { method, capability }), "{text} with {capabilities}");
    }
}

#[tokio::test]
async fn a_relative_path_fails_at_once() {
    let (runner, probe) = client_runner();
    let (mut client, sid) = client_with(&runner, all_capabilities()).await;
    for text in ["read notes.txt", "write ./notes.txt x", "read ../x"] {
        let (response, before) = prompt(&mut client, &sid, text).await;
        // The turn returned it, so the prompt failed with its text.
        let message = response["error"]["message"].as_str().unwrap_or_else(|| panic!("{text}: {response}"));
        assert!(message.contains("must be an absolute path"), "{text}: {response}");
        assert!(calls(&before).is_empty(), "{text}: {before:?}");
        assert!(matches!(probe.last(), Err(ClientError::RelativePath { field: "path", .. })), "{text}");
    }
}

#[tokio::test]
async fn the_clients_error_is_typed_with_its_code_message_and_data() {
    let (runner, probe) = client_runner();
    let (mut client, sid) = client_with(&runner, all_capabilities()).await;
    let id = client.prompt(&sid, "read /missing.txt").await;
    let request = next_request(&mut client, "fs/read_text_file").await;
    let error = json!({"code": -32002, "message": "Resource not found", "data": {"uri": "file:///missing.txt"}});
    client.respond_error(&request["id"], error.clone()).await;
    let response = client.response(&id).await;
    // The turn chose to return it: the prompt fails with its message.
    assert_eq!(response["error"]["message"], "Resource not found", "{response}");
    let Err(ClientError::Rejected { method, error: rejected }) = probe.last() else { panic!("{:?}", probe.last()) };
    assert_eq!(method, "fs/read_text_file");
    assert_eq!(serde_json::to_value(&rejected).unwrap(), error);
    // The session carries on.
    let (response, _) = prompt(&mut client, &sid, "hello").await;
    assert_eq!(stop(&response), "end_turn");
}

#[tokio::test]
async fn a_malformed_result_is_a_protocol_error() {
    let (runner, probe) = client_runner();
    let (mut client, sid) = client_with(&runner, all_capabilities()).await;
    for bad in [json!({"content": 42}), json!({"text": "no content field"}), json!("a string")] {
        let id = client.prompt(&sid, "read /a.txt").await;
        let request = next_request(&mut client, "fs/read_text_file").await;
        client.respond(&request["id"], bad.clone()).await;
        let response = client.response(&id).await;
        assert_eq!(response["error"]["code"], -32603, "{bad}: {response}");
        assert!(
            matches!(probe.last(), Err(ClientError::Protocol { method: "fs/read_text_file", .. })),
            "{bad}: {:?}",
            probe.last()
        );
    }
}

#[tokio::test]
async fn cancel_during_a_read_sends_cancel_request_and_the_turn_ends_cancelled_in_the_grace_period() {
    let (runner, probe) = client_runner();
    let grace = Duration::from_secs(2);
    let mut client = TestClient::start_agent(runner.agent(runner.options().cancel_grace(grace)));
    client.initialize_with(all_capabilities()).await;
    let sid = client.new_session().await;
    let id = client.prompt(&sid, "read /slow.txt").await;
    let request = next_request(&mut client, "fs/read_text_file").await;
    let started = Instant::now();
    client.notify("session/cancel", json!({"sessionId": sid})).await;
    // The read is abandoned: `$/cancel_request` names it; the client never answers.
    let cancel = client.wait_for(|m| m.get("method").and_then(Value::as_str) == Some("$/cancel_request")).await;
    assert_eq!(cancel["params"]["requestId"], request["id"], "{cancel}");
    let response = client.response(&id).await;
    assert_eq!(stop(&response), "cancelled", "{response}");
    assert!(started.elapsed() < grace, "answered within the grace period, not at its end");
    assert_eq!(probe.last(), Err(ClientError::Cancelled { method: "fs/read_text_file" }));
    // A late answer to the abandoned read is dropped quietly; the connection serves on.
    client.respond(&request["id"], json!({"content": "late"})).await;
    let (response, _) = prompt(&mut client, &sid, "hello").await;
    assert_eq!(stop(&response), "end_turn");
}

#[tokio::test]
async fn a_cancel_request_for_the_prompt_cancels_its_read_too() {
    let (runner, probe) = client_runner();
    let (mut client, sid) = client_with(&runner, all_capabilities()).await;
    let id = client.prompt(&sid, "read /slow.txt").await;
    let request = next_request(&mut client, "fs/read_text_file").await;
    client.notify("$/cancel_request", json!({"requestId": id})).await;
    let cancel = client.wait_for(|m| m.get("method").and_then(Value::as_str) == Some("$/cancel_request")).await;
    assert_eq!(cancel["params"]["requestId"], request["id"]);
    assert_eq!(stop(&client.response(&id).await), "cancelled");
    assert_eq!(probe.last(), Err(ClientError::Cancelled { method: "fs/read_text_file" }));
}

#[tokio::test]
async fn a_client_that_hangs_up_during_a_read_cancels_it() {
    let (runner, probe) = client_runner();
    let (mut client, sid) = client_with(&runner, all_capabilities()).await;
    let id = client.prompt(&sid, "read /slow.txt").await;
    let _request = next_request(&mut client, "fs/read_text_file").await;
    let rest = client.hang_up().await;
    // The prompt is still answered, `cancelled`, before the agent stops.
    let response = rest.iter().find(|m| m.get("id") == Some(&id) && m.get("method").is_none()).expect("answered");
    assert_eq!(stop(response), "cancelled", "{rest:?}");
    assert_eq!(probe.last(), Err(ClientError::Cancelled { method: "fs/read_text_file" }));
}

/// A connection's client capabilities are those of its first `initialize`: none before it (the
/// session made then reads nothing), the first one's after it, whatever a repeat declares.
#[tokio::test]
async fn the_first_initialize_declares_the_clients_capabilities() {
    let (runner, probe) = client_runner();
    let mut client = TestClient::start_agent(runner.agent(runner.options()));
    let early = client.new_session().await;
    let (response, before) = prompt(&mut client, &early, "read /a").await;
    assert!(response.get("error").is_some(), "{response}");
    assert!(calls(&before).is_empty(), "{before:?}");
    assert_eq!(
        probe.last(),
        Err(ClientError::Unsupported { method: "fs/read_text_file", capability: "fs.readTextFile" })
    );

    let first = client.initialize_with(all_capabilities()).await;
    // A repeat declaring nothing is answered as the first was; the test client still holds the
    // agent to the first one's capabilities.
    let again = client.call_ok("initialize", json!({"protocolVersion": 1, "clientCapabilities": {}})).await;
    assert_eq!(again, first);
    let sid = client.new_session().await;
    let id = client.prompt(&sid, "read /work/a.txt").await;
    let request = next_request(&mut client, "fs/read_text_file").await;
    client.respond(&request["id"], json!({"content": "yes"})).await;
    let (response, _) = client.response_with_preceding(&id).await;
    assert_eq!(stop(&response), "end_turn");
    assert_eq!(probe.last(), Ok(format!("{:?}", "yes")));
}
