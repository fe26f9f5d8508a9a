//! `session/prompt`: prompt-to-turn correlation, terminals, one prompt in flight per session,
//! accepted prompt content, and the live translation of every `Public` event kind.

use crate::common;

use std::sync::Arc;

use acp_facade::Options;
use acp_facade::acp::{PromptCapabilities, StopReason, ToolCallStatus, ToolKind};
use acp_facade::harness::{
    AiMessage, CommandId, EventClass, EventKind, GateId, Message, TokenChannel, ToolCallId, UserMessage, Visibility,
    content::text_block,
};
use common::host::{ScriptedHost, ScriptedSession};
use common::{TestClient, chunk_texts, code, error_of, updates};
use serde_json::{Value, json};

fn delta(text: &str) -> EventKind {
    EventKind::TokenDelta { text: text.into(), channel: TokenChannel::Message }
}

fn done(stop: Option<StopReason>) -> EventKind {
    EventKind::TurnDone { message: None, stop }
}

async fn setup() -> (Arc<ScriptedHost>, TestClient, String) {
    let host = ScriptedHost::new();
    let mut client = TestClient::initialized(Options::new(host.clone())).await;
    let session = client.new_session().await;
    (host, client, session)
}

/// Sends a prompt and waits for the host to receive it.
async fn prompt(
    client: &mut TestClient,
    host: &ScriptedHost,
    session: &str,
    text: &str,
) -> (Value, Arc<ScriptedSession>, CommandId) {
    let id = client.prompt(session, text).await;
    let s = host.session(session);
    let (command, _) = s.next_submit().await;
    (id, s, command)
}

// ---------------------------------------------------------------------------------------------
// Decoys
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn interleaved_decoys_are_never_forwarded() {
    let (host, mut client, session) = setup().await;
    let (id, s, command) = prompt(&mut client, &host, &session, "hi").await;
    let at = ("loop-a", "turn-1");

    // Before the turn started: even events at the turn's future coordinates are decoys.
    s.live(at, delta("decoy: before TurnStarted"));
    s.live(("loop-a", "turn-0"), delta("decoy: earlier turn"));
    // Another command's turn starts first, in the same loop.
    let other = CommandId::new("someone-else");
    s.start_turn(&other, ("loop-a", "turn-x"));
    s.live(("loop-a", "turn-x"), delta("decoy: other command's turn"));
    // A TurnStarted without a cause, and one caused by our command's lookalike.
    s.emit(
        EventKind::TurnStarted { message: UserMessage::default() },
        EventClass::Enduring,
        Visibility::Public,
        None,
        Some(("loop-a", "turn-y")),
    );
    s.start_turn(&CommandId::new(format!("{}x", command.as_str())), ("loop-a", "turn-z"));
    s.live(("loop-a", "turn-z"), delta("decoy: lookalike command"));

    // Our turn.
    s.start_turn(&command, at);
    s.live(at, delta("real 1"));
    s.live(("loop-b", "turn-1"), delta("decoy: other loop, same turn id"));
    s.live(("loop-a", "turn-2"), delta("decoy: same loop, other turn"));
    s.live(("loop-a", "turn-x"), delta("decoy: the other command's turn again"));
    s.emit(delta("decoy: no coordinates"), EventClass::Ephemeral, Visibility::Public, None, None);
    // Another TurnStarted for our command elsewhere does not re-target the prompt.
    s.start_turn(&command, ("loop-c", "turn-9"));
    s.live(("loop-c", "turn-9"), delta("decoy: second TurnStarted of our command"));
    s.live(at, delta("real 2"));
    // Terminals of other turns do not complete the prompt.
    s.durable(("loop-a", "turn-x"), done(Some(StopReason::MaxTokens)));
    s.durable(("loop-b", "turn-1"), EventKind::TurnFailed { error: "decoy failure".into() });
    s.durable(("loop-a", "turn-2"), EventKind::TurnInterrupted {});
    s.durable(("loop-c", "turn-9"), done(Some(StopReason::Refusal)));
    s.live(at, delta("real 3"));
    s.durable(at, done(Some(StopReason::MaxTurnRequests)));
    // After our terminal: nothing more is forwarded.
    s.live(at, delta("decoy: after the terminal"));

    let (response, before) = client.response_with_preceding(&id).await;
    assert_eq!(response["result"], json!({"stopReason": "max_turn_requests"}), "{response}");
    assert_eq!(chunk_texts(&before, "agent_message_chunk"), ["real 1", "real 2", "real 3"]);
    assert_eq!(updates(&before).len(), 3, "{before:?}");
    // Nothing arrives after the response: the next message is the answer to a fresh request.
    common::assert_serving(&mut client).await;
    let all: Vec<&Value> = client.transcript.iter().collect();
    assert!(!all.iter().any(|m| m.to_string().contains("decoy")), "a decoy was forwarded");
    client.hang_up().await;
}

#[tokio::test]
async fn late_events_of_a_previous_turn_are_decoys_for_the_next_prompt() {
    let (host, mut client, session) = setup().await;
    let (id, s, command) = prompt(&mut client, &host, &session, "first").await;
    s.start_turn(&command, ("l", "t1"));
    s.live(("l", "t1"), delta("one"));
    s.durable(("l", "t1"), done(None));
    let (response, before) = client.response_with_preceding(&id).await;
    assert_eq!(response["result"]["stopReason"], json!("end_turn"));
    assert_eq!(chunk_texts(&before, "agent_message_chunk"), ["one"]);

    let (id, s, command) = prompt(&mut client, &host, &session, "second").await;
    s.live(("l", "t1"), delta("decoy: late one"));
    s.durable(("l", "t1"), done(Some(StopReason::Refusal)));
    s.start_turn(&command, ("l", "t2"));
    s.live(("l", "t1"), delta("decoy: later one"));
    s.live(("l", "t2"), delta("two"));
    s.durable(("l", "t2"), done(Some(StopReason::MaxTokens)));
    let (response, before) = client.response_with_preceding(&id).await;
    assert_eq!(response["result"]["stopReason"], json!("max_tokens"));
    assert_eq!(chunk_texts(&before, "agent_message_chunk"), ["two"]);
    client.hang_up().await;
}

#[tokio::test]
async fn a_decoy_terminal_does_not_complete_the_prompt() {
    let (host, mut client, session) = setup().await;
    let (id, s, command) = prompt(&mut client, &host, &session, "hi").await;
    s.start_turn(&command, ("l", "mine"));
    s.durable(("l", "theirs"), done(Some(StopReason::MaxTokens)));
    s.live(("l", "mine"), delta("after the decoy"));
    s.durable(("l", "mine"), done(Some(StopReason::Refusal)));
    let (response, before) = client.response_with_preceding(&id).await;
    assert_eq!(response["result"]["stopReason"], json!("refusal"), "{response}");
    assert_eq!(chunk_texts(&before, "agent_message_chunk"), ["after the decoy"]);
    client.hang_up().await;
}

// ---------------------------------------------------------------------------------------------
// Terminals
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn the_prompt_completes_on_its_own_terminal() {
    let (host, mut client, session) = setup().await;
    let cases: Vec<(EventKind, Result<&str, &str>)> = vec![
        (done(None), Ok("end_turn")),
        (done(Some(StopReason::EndTurn)), Ok("end_turn")),
        (done(Some(StopReason::MaxTokens)), Ok("max_tokens")),
        (done(Some(StopReason::MaxTurnRequests)), Ok("max_turn_requests")),
        (done(Some(StopReason::Refusal)), Ok("refusal")),
        (done(Some(StopReason::Cancelled)), Ok("cancelled")),
        (
            EventKind::TurnDone {
                message: Some(Message::Ai(AiMessage {
                    content: vec![text_block("never re-sent")],
                    ..AiMessage::default()
                })),
                stop: Some(StopReason::MaxTokens),
            },
            Ok("max_tokens"),
        ),
        (EventKind::TurnInterrupted {}, Ok("cancelled")),
        (EventKind::TurnFailed { error: "the model provider is down".into() }, Err("the model provider is down")),
    ];
    for (n, (terminal, expected)) in cases.into_iter().enumerate() {
        let (id, s, command) = prompt(&mut client, &host, &session, "go").await;
        let at = ("loop", format!("turn-{n}"));
        let at = (at.0, at.1.as_str());
        s.start_turn(&command, at);
        s.live(at, delta("x"));
        s.durable(at, terminal);
        let (response, before) = client.response_with_preceding(&id).await;
        assert_eq!(chunk_texts(&before, "agent_message_chunk"), ["x"], "case {n}");
        match expected {
            Ok(stop) => assert_eq!(response["result"], json!({"stopReason": stop}), "case {n}: {response}"),
            Err(message) => {
                let error = error_of(&response);
                assert_eq!(code(&error), -32603, "case {n}: {response}");
                assert!(error["message"].as_str().unwrap().contains(message), "case {n}: {response}");
            }
        }
    }
    client.hang_up().await;
}

#[tokio::test]
async fn the_event_stream_ending_early_is_an_internal_error_not_a_hang() {
    let (host, mut client, session) = setup().await;
    let (id, s, command) = prompt(&mut client, &host, &session, "hi").await;
    s.start_turn(&command, ("l", "t"));
    // Dropping every subscriber ends the prompt's stream.
    s.drop_subscribers();
    let response = client.response(&id).await;
    assert_eq!(code(&error_of(&response)), -32603, "{response}");
    // The session takes prompts again.
    let (id, s, command) = prompt(&mut client, &host, &session, "again").await;
    s.start_turn(&command, ("l", "t2"));
    s.durable(("l", "t2"), done(None));
    assert_eq!(client.response(&id).await["result"]["stopReason"], json!("end_turn"));
    client.hang_up().await;
}

// ---------------------------------------------------------------------------------------------
// One prompt in flight
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn a_second_concurrent_prompt_is_an_invalid_request() {
    let (host, mut client, session) = setup().await;
    let other = client.new_session().await;
    let (id, s, command) = prompt(&mut client, &host, &session, "first").await;

    let error = client
        .call_err("session/prompt", json!({"sessionId": session, "prompt": [{"type": "text", "text": "second"}]}))
        .await;
    assert_eq!(code(&error), -32600, "{error}");
    assert_eq!(s.subscriber_count(), 1, "the second prompt reached the host");

    // Another session is independent.
    let (id2, s2, command2) = prompt(&mut client, &host, &other, "elsewhere").await;
    s2.start_turn(&command2, ("l", "t"));
    s2.live(("l", "t"), delta("from the other session"));
    s2.durable(("l", "t"), done(None));
    let (response, before) = client.response_with_preceding(&id2).await;
    assert_eq!(response["result"]["stopReason"], json!("end_turn"));
    let sessions: Vec<&Value> = before.iter().map(|m| &m["params"]["sessionId"]).collect();
    assert_eq!(sessions, [&json!(other)]);

    s.start_turn(&command, ("l", "t"));
    s.live(("l", "t"), delta("first"));
    s.durable(("l", "t"), done(None));
    let (response, before) = client.response_with_preceding(&id).await;
    assert_eq!(response["result"]["stopReason"], json!("end_turn"));
    assert!(before.iter().all(|m| m["params"]["sessionId"] == json!(session)));

    // Once answered, the session takes the next prompt.
    let (id, s, command) = prompt(&mut client, &host, &session, "third").await;
    s.start_turn(&command, ("l", "t3"));
    s.durable(("l", "t3"), done(None));
    assert_eq!(client.response(&id).await["result"]["stopReason"], json!("end_turn"));
    client.hang_up().await;
}

// ---------------------------------------------------------------------------------------------
// Prompt content
// ---------------------------------------------------------------------------------------------

fn blocks() -> [(&'static str, Value); 5] {
    [
        ("text", json!({"type": "text", "text": "look at this"})),
        ("resource_link", json!({"type": "resource_link", "name": "main.rs", "uri": "file:///tmp/main.rs"})),
        ("image", json!({"type": "image", "data": "aGVsbG8=", "mimeType": "image/png"})),
        ("audio", json!({"type": "audio", "data": "aGVsbG8=", "mimeType": "audio/wav"})),
        (
            "resource",
            json!({"type": "resource", "resource": {"uri": "file:///tmp/a.txt", "mimeType": "text/plain", "text": "hi"}}),
        ),
    ]
}

/// Sends a prompt; returns the submitted blocks, or the error.
async fn try_prompt(
    client: &mut TestClient,
    host: &ScriptedHost,
    session: &str,
    turn: &str,
    prompt: Value,
) -> Result<Value, Value> {
    let id = client.send_request("session/prompt", json!({"sessionId": session, "prompt": prompt})).await;
    // Either an immediate error, or the host sees the submit.
    let s = host.session(session);
    let wait_submit = s.next_submit();
    let id2 = id.clone();
    let early = client.wait_for(move |m| common::Received(m.clone()).is_response_to(&id2) || m.get("method").is_some());
    let first = tokio::select! {
        biased;
        submitted = wait_submit => Err(submitted),
        message = early => Ok(message),
    };
    match first {
        Ok(response) => Err(error_of(&response)),
        Err((command, blocks)) => {
            s.start_turn(&command, ("l", turn));
            s.durable(("l", turn), done(None));
            let response = client.response(&id).await;
            assert_eq!(response["result"]["stopReason"], json!("end_turn"));
            Ok(serde_json::to_value(blocks).unwrap())
        }
    }
}

#[tokio::test]
async fn text_and_resource_links_are_accepted_and_passed_through() {
    let (host, mut client, session) = setup().await;
    let [text, link, ..] = blocks();
    let prompt = json!([text.1, link.1, {"type": "text", "text": "and more"}]);
    let submitted = try_prompt(&mut client, &host, &session, "t1", prompt.clone()).await.expect("accepted");
    assert_eq!(submitted, prompt);
    client.hang_up().await;
}

#[tokio::test]
async fn unadvertised_content_is_invalid_params() {
    let (host, mut client, session) = setup().await;
    for (n, (kind, block)) in blocks().into_iter().enumerate().skip(2) {
        let prompt = json!([{"type": "text", "text": "see"}, block]);
        let error = try_prompt(&mut client, &host, &session, &format!("t{n}"), prompt).await.expect_err(kind);
        assert_eq!(code(&error), -32602, "{kind}: {error}");
        let message = error["message"].as_str().unwrap();
        assert!(message.contains("prompt") && message.contains(kind), "{kind}: {error}");
    }
    assert_eq!(host.session(&session).subscriber_count(), 0);
    // The session still takes a valid prompt.
    try_prompt(&mut client, &host, &session, "ok", json!([{"type": "text", "text": "fine"}])).await.expect("accepted");
    client.hang_up().await;
}

#[tokio::test]
async fn advertised_content_is_accepted_and_only_that() {
    for (advertised, caps) in [
        ("image", PromptCapabilities::new().image(true)),
        ("audio", PromptCapabilities::new().audio(true)),
        ("resource", PromptCapabilities::new().embedded_context(true)),
    ] {
        let host = ScriptedHost::new();
        let mut client = TestClient::initialized(Options::new(host.clone()).prompt_capabilities(caps)).await;
        let session = client.new_session().await;
        for (n, (kind, block)) in blocks().into_iter().enumerate() {
            let prompt = json!([block]);
            let outcome = try_prompt(&mut client, &host, &session, &format!("t{n}"), prompt.clone()).await;
            if kind == advertised || kind == "text" || kind == "resource_link" {
                assert_eq!(outcome.expect(kind), prompt, "{kind} with {advertised} advertised");
            } else {
                let error = outcome.expect_err(kind);
                assert_eq!(code(&error), -32602, "{kind} with {advertised} advertised: {error}");
            }
        }
        client.hang_up().await;
    }
}

// ---------------------------------------------------------------------------------------------
// Translation
// ---------------------------------------------------------------------------------------------

/// Asserts that every key of `expected` has the same value in `actual` (recursively for objects).
fn assert_subset(expected: &Value, actual: &Value, context: &str) {
    match (expected, actual) {
        (Value::Object(e), Value::Object(a)) => {
            for (key, value) in e {
                let got = a.get(key).unwrap_or_else(|| panic!("{context}: missing `{key}` in {actual}"));
                assert_subset(value, got, context);
            }
        }
        _ => assert_eq!(expected, actual, "{context}"),
    }
}

#[tokio::test]
async fn every_public_event_kind_is_translated_and_turn_markers_are_not() {
    let (host, mut client, session) = setup().await;
    let (id, s, command) = prompt(&mut client, &host, &session, "hi").await;
    let at = ("l", "t");
    s.start_turn(&command, at);
    s.live(at, EventKind::TokenDelta { text: "thinking".into(), channel: TokenChannel::Thought });
    s.live(at, delta("hello"));
    s.live(
        at,
        EventKind::tool_call_started(
            ToolCallId::new("call-1"),
            "Read /tmp/a",
            ToolKind::Read,
            json!({"path": "/tmp/a"}),
        ),
    );
    s.live(
        at,
        EventKind::tool_call_progress(
            ToolCallId::new("call-1"),
            Some(ToolCallStatus::InProgress),
            Some(vec![text_block("partial").into()]),
        ),
    );
    s.live(
        at,
        EventKind::tool_call_completed(ToolCallId::new("call-1"), vec![text_block("file contents").into()], false),
    );
    s.live(
        at,
        EventKind::tool_call_started(
            ToolCallId::new("call-2"),
            "rm -rf /",
            ToolKind::Execute,
            json!({"command": "rm -rf /"}),
        ),
    );
    s.live(at, EventKind::tool_call_completed(ToolCallId::new("call-2"), vec![], true));
    s.durable(
        at,
        EventKind::StepDone {
            messages: vec![Message::Ai(AiMessage {
                content: vec![text_block("NOT-LIVE step text")],
                ..AiMessage::default()
            })],
        },
    );
    s.durable(at, EventKind::GateResolved { gate_id: GateId::new("g") });
    s.durable(at, EventKind::ContextMeasured { used: 1234, size: 200_000, cost: None });
    s.durable(
        at,
        EventKind::TurnDone {
            message: Some(Message::Ai(AiMessage {
                content: vec![text_block("NOT-LIVE final message")],
                ..AiMessage::default()
            })),
            stop: None,
        },
    );
    let (response, before) = client.response_with_preceding(&id).await;
    assert_eq!(response["result"]["stopReason"], json!("end_turn"));
    let got = updates(&before);
    let expected = [
        json!({"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "thinking"}}),
        json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hello"}}),
        json!({"sessionUpdate": "tool_call", "toolCallId": "call-1", "title": "Read /tmp/a", "kind": "read",
               "rawInput": {"path": "/tmp/a"}}),
        json!({"sessionUpdate": "tool_call_update", "toolCallId": "call-1", "status": "in_progress",
               "content": [{"type": "content", "content": {"type": "text", "text": "partial"}}]}),
        json!({"sessionUpdate": "tool_call_update", "toolCallId": "call-1", "status": "completed",
               "content": [{"type": "content", "content": {"type": "text", "text": "file contents"}}]}),
        json!({"sessionUpdate": "tool_call", "toolCallId": "call-2", "title": "rm -rf /", "kind": "execute",
               "rawInput": {"command": "rm -rf /"}}),
        json!({"sessionUpdate": "tool_call_update", "toolCallId": "call-2", "status": "failed"}),
        json!({"sessionUpdate": "usage_update", "used": 1234, "size": 200_000}),
    ];
    assert_eq!(got.len(), expected.len(), "updates: {got:#?}");
    for (n, (e, g)) in expected.iter().zip(&got).enumerate() {
        assert_subset(e, g, &format!("update {n}"));
        if g["sessionUpdate"] == json!("tool_call") {
            // A new tool call is pending (the schema's default when `status` is absent).
            assert!(matches!(g.get("status"), None | Some(Value::Null)) || g["status"] == json!("pending"), "{g}");
        }
    }
    // Every notification names the session.
    assert!(before.iter().all(|m| m["params"]["sessionId"] == json!(session)));
    assert!(
        !before.iter().any(|m| m.to_string().contains("NOT-LIVE")),
        "StepDone or TurnDone content was streamed live"
    );
    client.hang_up().await;
}

/// Subscribe before submit: a host that runs the whole turn inside `submit`, before it
/// returns the command id, still has every event of the turn forwarded and the prompt completed.
#[tokio::test]
async fn a_turn_run_entirely_inside_submit_is_forwarded_whole() {
    use common::lifecycle::{RichHost, SessionSpec};
    let on_submit: common::lifecycle::SubmitHook = Arc::new(|session, command, _prompt| {
        let at = ("inside", "submit");
        session.start_turn(command, at);
        session.live(at, EventKind::TokenDelta { text: "said ".into(), channel: TokenChannel::Message });
        session.live(at, EventKind::TokenDelta { text: "inside".into(), channel: TokenChannel::Message });
        session.durable(at, EventKind::TurnDone { message: None, stop: Some(StopReason::MaxTokens) });
    });
    let host = RichHost::new(SessionSpec { on_submit: Some(on_submit), ..SessionSpec::default() });
    let mut client = TestClient::initialized(Options::new(host.clone())).await;
    let session = client.new_session().await;
    for _ in 0..3 {
        let id = client.prompt(&session, "go").await;
        let (response, before) = client.response_with_preceding(&id).await;
        assert_eq!(response["result"]["stopReason"], "max_tokens", "{response}");
        assert_eq!(chunk_texts(&before, "agent_message_chunk"), ["said ", "inside"]);
    }
    client.hang_up().await;
}
