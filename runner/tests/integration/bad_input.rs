//! Bad input never kills the connection: every malformed line, unknown method, undecodable params,
//! bad session id, out-of-order call, over-size line and failing host callback gets exactly the
//! right answer, and the same connection keeps serving afterwards.

use crate::common;

use std::sync::atomic::Ordering;

use acp_facade::Options;
use acp_facade::harness::EventKind;
use common::host::ScriptedHost;
use common::{Received, TestClient, assert_serving, code, error_of};
use serde_json::{Value, json};

async fn client() -> (std::sync::Arc<ScriptedHost>, TestClient) {
    let host = ScriptedHost::new();
    let client = TestClient::initialized(Options::new(host.clone())).await;
    (host, client)
}

/// Sends a raw line and returns the very next message, which must be an error response.
async fn raw_error(client: &mut TestClient, line: &str) -> Value {
    client.send_raw(line).await;
    let next = client.next().await.0;
    assert!(next.get("method").is_none(), "expected a response to {line}, got {next}");
    assert!(next.get("error").is_some(), "expected an error for {line}, got {next}");
    next
}

#[tokio::test]
async fn a_line_that_is_not_json_is_a_parse_error_with_id_null() {
    let (_host, mut client) = client().await;
    for line in ["{nope", "{\"jsonrpc\":\"2.0\",\"id\":1,", "hello", "\u{7f}\u{1}"] {
        let response = raw_error(&mut client, line).await;
        assert_eq!(response["id"], Value::Null, "{response}");
        assert_eq!(code(&response["error"]), -32700, "{response}");
        assert_serving(&mut client).await;
    }
    client.hang_up().await;
}

#[tokio::test]
async fn json_that_is_not_a_request_object_is_an_invalid_request() {
    let (_host, mut client) = client().await;
    let cases: &[(&str, Value)] = &[
        (r#"[{"jsonrpc":"2.0","id":1,"method":"session/new"}]"#, Value::Null),
        ("[]", Value::Null),
        ("42", Value::Null),
        (r#""initialize""#, Value::Null),
        ("null", Value::Null),
        (r#"{"id":7,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}"#, json!(7)),
        (r#"{"jsonrpc":"1.0","id":"a","method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}"#, json!("a")),
        (r#"{"jsonrpc":2,"id":8,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}"#, json!(8)),
        (r#"{"jsonrpc":"2.0","id":1.5,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}"#, Value::Null),
        (r#"{"jsonrpc":"2.0","id":{},"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}"#, Value::Null),
        (r#"{"jsonrpc":"2.0","id":[1],"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}"#, Value::Null),
        (r#"{"jsonrpc":"2.0","id":true,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}"#, Value::Null),
        (r#"{"jsonrpc":"2.0","id":9,"method":42}"#, json!(9)),
        (r#"{"jsonrpc":"2.0","params":{}}"#, Value::Null),
    ];
    for (line, id) in cases {
        let response = raw_error(&mut client, line).await;
        assert_eq!(&response["id"], id, "for {line}: {response}");
        assert_eq!(code(&response["error"]), -32600, "for {line}: {response}");
        assert_serving(&mut client).await;
    }
    client.hang_up().await;
}

#[tokio::test]
async fn an_unknown_method_is_method_not_found() {
    let (_host, mut client) = client().await;
    for method in ["session/frobnicate", "_vendor.example/op", "fs/read_text_file", "$/unknown", ""] {
        let error = client.call_err(method, json!({})).await;
        assert_eq!(code(&error), -32601, "{method}: {error}");
        assert_serving(&mut client).await;
    }
    client.hang_up().await;
}

#[tokio::test]
async fn an_unknown_notification_is_ignored_without_any_answer() {
    let (host, mut client) = client().await;
    client.notify("session/frobnicate", json!({"x": 1})).await;
    client.notify("_vendor.example/notice", json!({})).await;
    client.notify("$/progress", json!(null)).await;
    // A notification for a known request method is still a notification: never answered.
    client.notify("session/new", json!({"cwd": "/tmp", "mcpServers": []})).await;
    client.send_raw(r#"{"jsonrpc":"2.0","method":"session/cancel","params":"garbage"}"#).await;
    // The very next message must be the response to this request.
    assert_serving(&mut client).await;
    assert_eq!(host.sessions.lock().unwrap().len(), 1, "a `session/new` notification created a session");
    client.hang_up().await;
}

#[tokio::test]
async fn undecodable_params_are_invalid_params_naming_the_field() {
    let (host, mut client) = client().await;
    let session = client.new_session().await;
    let _ = host.session(&session);

    let error = client.call_err("session/new", json!({"mcpServers": []})).await;
    assert_eq!(code(&error), -32602, "{error}");
    assert!(error["message"].as_str().unwrap().contains("cwd"), "{error}");
    assert_serving(&mut client).await;

    let error = client.call_err("session/new", json!({"cwd": 5, "mcpServers": []})).await;
    assert_eq!(code(&error), -32602, "{error}");
    assert!(error["message"].as_str().unwrap().contains("cwd"), "{error}");
    assert_serving(&mut client).await;

    let error = client.call_err("session/new", json!("not an object")).await;
    assert_eq!(code(&error), -32602, "{error}");
    assert_serving(&mut client).await;

    let error = client
        .call_err("session/prompt", json!({"sessionId": session, "prompt": [{"type": "bogus", "text": "x"}]}))
        .await;
    assert_eq!(code(&error), -32602, "{error}");
    assert!(error["message"].as_str().unwrap().contains("prompt"), "{error}");
    assert_serving(&mut client).await;

    let error = client.call_err("session/prompt", json!({"sessionId": session, "prompt": "hi"})).await;
    assert_eq!(code(&error), -32602, "{error}");
    assert!(error["message"].as_str().unwrap().contains("prompt"), "{error}");
    assert_serving(&mut client).await;

    let error = client.call_err("session/prompt", json!({"sessionId": session})).await;
    assert_eq!(code(&error), -32602, "{error}");
    assert!(error["message"].as_str().unwrap().contains("prompt"), "{error}");
    assert_serving(&mut client).await;

    let error = client.call_err("session/prompt", json!({"prompt": []})).await;
    assert_eq!(code(&error), -32602, "{error}");
    assert!(error["message"].as_str().unwrap().contains("sessionId"), "{error}");
    assert_serving(&mut client).await;

    let error = client.call_err("session/set_mode", json!({"sessionId": session})).await;
    assert_eq!(code(&error), -32602, "{error}");
    assert!(error["message"].as_str().unwrap().contains("modeId"), "{error}");
    assert_serving(&mut client).await;

    let error = client.call_err("authenticate", json!({})).await;
    assert_eq!(code(&error), -32602, "{error}");
    assert!(error["message"].as_str().unwrap().contains("methodId"), "{error}");
    assert_serving(&mut client).await;

    // The bad prompts never reached the host.
    assert_eq!(host.session(&session).subscriber_count(), 0);
    client.hang_up().await;
}

/// Params of each session-scoped method, for a given session id.
fn session_scoped(session: &str) -> Vec<(&'static str, Value)> {
    vec![
        ("session/prompt", json!({"sessionId": session, "prompt": [{"type": "text", "text": "hi"}]})),
        ("session/set_mode", json!({"sessionId": session, "modeId": "fast"})),
        ("session/set_config_option", json!({"sessionId": session, "configId": "model", "value": "small"})),
        ("session/close", json!({"sessionId": session})),
    ]
}

#[tokio::test]
async fn malformed_session_ids_are_invalid_params_and_unknown_ones_not_found() {
    let (host, mut client) = client().await;
    let live = client.new_session().await;
    let malformed = [
        String::new(),
        "s\u{0}1".to_owned(),
        "line\nbreak".to_owned(),
        "tab\there".to_owned(),
        "bell\u{7}".to_owned(),
        "x".repeat(257),
        "é".repeat(129),
    ];
    for id in &malformed {
        for (method, params) in session_scoped(id) {
            let error = client.call_err(method, params).await;
            assert_eq!(code(&error), -32602, "{method} with {id:?}: {error}");
            assert!(error["message"].as_str().unwrap().contains("sessionId"), "{method}: {error}");
        }
        assert_serving(&mut client).await;
    }
    let longest_ok = "y".repeat(256);
    for id in ["nope", "s999", longest_ok.as_str(), "S1", " s1"] {
        for (method, params) in session_scoped(id) {
            let error = client.call_err(method, params).await;
            assert_eq!(code(&error), -32002, "{method} with {id:?}: {error}");
        }
        assert_serving(&mut client).await;
    }
    // None of it touched the live session.
    let s = host.session(&live);
    assert_eq!(s.subscriber_count(), 0);
    assert_eq!(s.interrupts.load(Ordering::SeqCst), 0);
    assert_eq!(s.shutdowns.load(Ordering::SeqCst), 0);
    client.hang_up().await;
}

/// Load, resume and delete stubs that count their calls.
#[derive(Default)]
struct Counting {
    calls: std::sync::atomic::AtomicUsize,
}

#[async_trait::async_trait]
impl acp_facade::host::SessionLoader for Counting {
    async fn load_session(
        &self,
        _: acp_facade::acp::SessionId,
        _: acp_facade::host::Setup,
    ) -> acp_facade::host::HostResult<acp_facade::host::LoadedSession> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        Err(acp_facade::Error::internal_error())
    }
}

#[async_trait::async_trait]
impl acp_facade::host::SessionResumer for Counting {
    async fn resume_session(
        &self,
        _: acp_facade::acp::SessionId,
        _: acp_facade::host::Setup,
    ) -> acp_facade::host::HostResult<std::sync::Arc<dyn acp_facade::host::LiveSession>> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        Err(acp_facade::Error::internal_error())
    }
}

#[async_trait::async_trait]
impl acp_facade::host::SessionDeleter for Counting {
    async fn delete_session(&self, _: acp_facade::acp::SessionId) -> acp_facade::host::HostResult<()> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

#[tokio::test]
async fn malformed_session_ids_never_reach_load_resume_or_delete() {
    let parts = std::sync::Arc::new(Counting::default());
    let options = Options::new(ScriptedHost::new()).loader(parts.clone()).resumer(parts.clone()).deleter(parts.clone());
    let mut client = TestClient::initialized(options).await;
    for id in [String::new(), "a\u{0}b".to_owned(), "nl\n".to_owned(), "x".repeat(300)] {
        for (method, params) in [
            ("session/load", json!({"sessionId": id, "cwd": "/tmp", "mcpServers": []})),
            ("session/resume", json!({"sessionId": id, "cwd": "/tmp"})),
            ("session/delete", json!({"sessionId": id})),
        ] {
            let error = client.call_err(method, params).await;
            assert_eq!(code(&error), -32602, "{method} with {id:?}: {error}");
        }
        assert_serving(&mut client).await;
    }
    assert_eq!(parts.calls.load(Ordering::SeqCst), 0, "a host part saw a malformed session id");
    client.hang_up().await;
}

/// Requests before `initialize` are served as for a client that declared no capabilities (the
/// spec asks clients to initialize first; agents do not refuse those that do not), and their
/// errors are the usual ones; `initialize` afterwards is answered as ever.
#[tokio::test]
async fn requests_before_initialize_are_served() {
    let host = ScriptedHost::new();
    let mut client = TestClient::start(Options::new(host.clone()));
    for (method, params, expected) in [
        ("authenticate", json!({"methodId": "x"}), -32602),
        ("logout", json!({}), -32601),
        ("session/list", json!({}), -32601),
        ("session/frobnicate", json!({}), -32601),
        ("session/prompt", json!({"sessionId": "sess_0", "prompt": [{"type": "text", "text": "x"}]}), -32002),
    ] {
        let error = client.call_err(method, params).await;
        assert_eq!(code(&error), expected, "{method}: {error}");
    }
    client.notify("session/cancel", json!({"sessionId": "s1"})).await;
    assert_serving(&mut client).await;
    assert_eq!(host.sessions.lock().unwrap().len(), 1, "the session/new of assert_serving reached the host");
    let result = client.initialize().await;
    assert_eq!(result["protocolVersion"], json!(1));
    assert_serving(&mut client).await;
    client.hang_up().await;
}

/// A repeated `initialize` is answered as the first was (clients and conformance kits re-send
/// it), however often; a malformed one is `-32602` and changes nothing.
#[tokio::test]
async fn a_repeated_initialize_is_answered_as_the_first() {
    let (_host, mut client) = client().await;
    let first = client.call_ok("initialize", json!({"protocolVersion": 1, "clientCapabilities": {}})).await;
    for params in [json!({"protocolVersion": 1}), json!({"protocolVersion": 1, "clientCapabilities": {}})] {
        assert_eq!(client.call_ok("initialize", params.clone()).await, first, "{params}");
        assert_serving(&mut client).await;
    }
    let error = client.call_err("initialize", json!({"protocolVersion": "1.0.0"})).await;
    assert_eq!(code(&error), -32602, "{error}");
    assert_serving(&mut client).await;
    client.hang_up().await;
}

#[tokio::test]
async fn an_over_size_line_is_rejected_with_id_null_and_the_connection_serves_on() {
    let host = ScriptedHost::new();
    let mut client = TestClient::initialized(Options::new(host).max_message_size(1024)).await;
    // A well-formed request, 1 MiB long.
    let padding = "p".repeat(1 << 20);
    let line = json!({"jsonrpc": "2.0", "id": 77, "method": "session/new",
        "params": {"cwd": "/tmp", "mcpServers": [], "_meta": {"padding": padding}}})
    .to_string();
    let response = raw_error(&mut client, &line).await;
    assert_eq!(response["id"], Value::Null, "{response}");
    assert!(code(&response["error"]) < 0, "{response}");
    assert_serving(&mut client).await;
    // Garbage just over the limit, then again.
    let response = raw_error(&mut client, &"z".repeat(1025)).await;
    assert_eq!(response["id"], Value::Null, "{response}");
    assert_serving(&mut client).await;
    // A request that fits is served.
    let fits = json!({"jsonrpc": "2.0", "id": 78, "method": "session/new",
        "params": {"cwd": "/tmp", "mcpServers": [], "_meta": {"padding": "p".repeat(900)}}})
    .to_string();
    assert!(fits.len() <= 1024);
    client.send_raw(&fits).await;
    let next = client.next().await.0;
    assert_eq!(next["id"], json!(78), "{next}");
    assert!(next["result"]["sessionId"].is_string(), "{next}");
    client.hang_up().await;
}

#[tokio::test]
async fn a_failing_host_callback_fails_only_that_request() {
    let (host, mut client) = client().await;
    *host.fail_with.lock().unwrap() =
        Some(acp_facade::Error::new(-32042, "the workspace is locked").data(json!({"why": "test"})));
    let error = client.call_err("session/new", json!({"cwd": "/tmp", "mcpServers": []})).await;
    assert_eq!(code(&error), -32042, "{error}");
    assert_eq!(error["message"], json!("the workspace is locked"));
    *host.fail_with.lock().unwrap() = Some(acp_facade::Error::auth_required());
    let error = client.call_err("session/new", json!({"cwd": "/tmp", "mcpServers": []})).await;
    assert_eq!(code(&error), -32000, "{error}");
    *host.fail_with.lock().unwrap() = None;
    assert_serving(&mut client).await;
    client.hang_up().await;
}

#[tokio::test]
async fn a_panicking_host_callback_fails_only_that_request() {
    let (host, mut client) = client().await;
    let live = client.new_session().await;
    host.panic.store(true, Ordering::SeqCst);
    let error = client.call_err("session/new", json!({"cwd": "/tmp", "mcpServers": []})).await;
    assert_eq!(code(&error), -32603, "{error}");
    host.panic.store(false, Ordering::SeqCst);
    assert_serving(&mut client).await;
    // The earlier session is untouched and still answers prompts.
    let id = client.prompt(&live, "hi").await;
    let s = host.session(&live);
    let (command, _) = s.next_submit().await;
    s.start_turn(&command, ("l", "t"));
    s.durable(("l", "t"), EventKind::TurnDone { message: None, stop: None });
    let response = client.response(&id).await;
    assert_eq!(response["result"]["stopReason"], json!("end_turn"), "{response}");
    client.hang_up().await;
}

#[tokio::test]
async fn a_failing_or_panicking_submit_fails_only_that_prompt() {
    let (host, mut client) = client().await;
    let session = client.new_session().await;
    let s = host.session(&session);
    *s.fail_submit.lock().unwrap() = Some(acp_facade::Error::new(-32077, "the model is overloaded"));
    let error = client.call_err("session/prompt", json!({"sessionId": session, "prompt": []})).await;
    assert_eq!(code(&error), -32077, "{error}");
    assert_eq!(error["message"], json!("the model is overloaded"));
    *s.fail_submit.lock().unwrap() = None;
    s.panic_on_submit.store(true, Ordering::SeqCst);
    let error = client.call_err("session/prompt", json!({"sessionId": session, "prompt": []})).await;
    assert_eq!(code(&error), -32603, "{error}");
    s.panic_on_submit.store(false, Ordering::SeqCst);
    assert_serving(&mut client).await;
    // The failed prompts did not stay in flight: the session takes the next one.
    let id = client.prompt(&session, "hi").await;
    let (command, _) = s.next_submit().await;
    s.start_turn(&command, ("l", "t"));
    s.durable(("l", "t"), EventKind::TurnDone { message: None, stop: None });
    assert_eq!(client.response(&id).await["result"]["stopReason"], json!("end_turn"));
    client.hang_up().await;
}

#[tokio::test]
async fn responses_the_agent_never_asked_for_are_dropped_silently() {
    let (_host, mut client) = client().await;
    client.send_raw(r#"{"jsonrpc":"2.0","id":99,"result":{}}"#).await;
    client.send_raw(r#"{"jsonrpc":"2.0","id":"x","error":{"code":-32603,"message":"boom"}}"#).await;
    client.send_raw(r#"{"jsonrpc":"2.0","id":5}"#).await;
    client.send_raw(r#"{"jsonrpc":"2.0","id":6,"result":{},"error":{"code":1,"message":"both"}}"#).await;
    client.send_raw("").await;
    client.send_raw("   ").await;
    assert_serving(&mut client).await;
    client.hang_up().await;
}

#[tokio::test]
async fn a_duplicate_in_flight_request_id_is_rejected_alone() {
    let (host, mut client) = client().await;
    let session = client.new_session().await;
    let other = client.new_session().await;
    let s = host.session(&session);
    let id = json!("dup");
    client
        .send_request_with_id(
            id.clone(),
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "text", "text": "hi"}]}),
        )
        .await;
    let (command, _) = s.next_submit().await;
    // Same id while the prompt is in flight (a request that would otherwise be fine: a prompt on
    // another, idle session): only the duplicate is rejected.
    client
        .send_request_with_id(
            id.clone(),
            "session/prompt",
            json!({"sessionId": other, "prompt": [{"type": "text", "text": "hi"}]}),
        )
        .await;
    let duplicate = client.next().await.0;
    assert_eq!(duplicate["id"], id, "{duplicate}");
    let error = error_of(&duplicate);
    assert_eq!(code(&error), -32600, "{duplicate}");
    assert!(error["message"].as_str().unwrap().contains("dup"), "{duplicate}");
    assert_eq!(host.session(&other).subscriber_count(), 0, "the duplicate reached the host");
    assert_serving(&mut client).await;
    // The original prompt completes normally, answered exactly once.
    s.start_turn(&command, ("l", "t"));
    s.durable(("l", "t"), EventKind::TurnDone { message: None, stop: None });
    let response = client.response(&id).await;
    assert_eq!(response["result"]["stopReason"], json!("end_turn"), "{response}");
    // Once answered, the id may be used again.
    client.send_request_with_id(id.clone(), "session/new", json!({"cwd": "/tmp", "mcpServers": []})).await;
    let again = client.next().await.0;
    assert!(Received(again.clone()).is_response_to(&id), "{again}");
    assert!(again["result"]["sessionId"].is_string(), "{again}");
    let answers = client.transcript.iter().filter(|m| m.get("id") == Some(&id) && m.get("method").is_none()).count();
    assert_eq!(answers, 3);
    client.hang_up().await;
}
