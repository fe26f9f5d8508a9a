//! Idempotent prompts through the wire: a `session/prompt` repeating an idempotency key its
//! session accepted (v1: `_meta["acp/idempotencyKey"]`; v2: `idempotencyKey`) never reaches the
//! host and is answered as the first was — after the first's turn ended (v1), with the same
//! acknowledgement (v2) — also while that turn runs, and after it failed or was cancelled. Other
//! keys, other sessions and prompts without a key run; bad keys are `-32602` naming the field.

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use acp_facade::Options;
use acp_facade::acp::StopReason;
use acp_facade::error::Error;
use acp_facade::harness::{CommandId, EventKind, TokenChannel};
use acp_facade_runner::{MemoryStore, Runner, Turn, TurnRunner};
use async_trait::async_trait;
use common::host::{ScriptedHost, ScriptedSession};
use common::{TestClient, code, error_of, updates};
use serde_json::{Value, json};

const KEY: &str = "acp/idempotencyKey";

fn delta(text: &str) -> EventKind {
    EventKind::TokenDelta { text: text.into(), channel: TokenChannel::Message }
}

async fn setup() -> (Arc<ScriptedHost>, TestClient, String) {
    let host = ScriptedHost::new();
    let mut client = TestClient::initialized(Options::new(host.clone())).await;
    let session = client.new_session().await;
    (host, client, session)
}

/// Sends a v1 `session/prompt` of `text` carrying the idempotency key `key` (any JSON value).
async fn keyed_prompt(client: &mut TestClient, session: &str, text: &str, key: Value) -> Value {
    let params = json!({
        "sessionId": session,
        "prompt": [{"type": "text", "text": text}],
        "_meta": {KEY: key, "traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"},
    });
    client.send_request("session/prompt", params).await
}

/// The host's next submit: panics if it takes longer than a step.
async fn submitted(s: &ScriptedSession) -> CommandId {
    s.next_submit().await.0
}

/// Asserts the host is submitted nothing more (within a short while).
async fn no_submit(s: &ScriptedSession) {
    let none = s.next_submit_or(tokio::time::sleep(Duration::from_millis(100))).await;
    assert!(none.is_none(), "the host ran a repeat: {none:?}");
}

/// A turn of `command` at `at` streaming `text`, ended by `terminal`.
fn run_turn(s: &ScriptedSession, command: &CommandId, at: (&str, &str), text: &str, terminal: EventKind) {
    s.start_turn(command, at);
    s.live(at, delta(text));
    s.durable(at, terminal);
}

fn done() -> EventKind {
    EventKind::TurnDone { message: None, stop: Some(StopReason::EndTurn) }
}

/// The response without its id (a repeat's id is its own).
fn answer(response: &Value) -> Value {
    let mut response = response.clone();
    response.as_object_mut().unwrap().remove("id");
    response
}

#[tokio::test]
async fn a_repeat_after_the_turn_ended_is_answered_as_the_first_and_never_reaches_the_host() {
    let (host, mut client, session) = setup().await;
    let first = keyed_prompt(&mut client, &session, "hello", json!("k1")).await;
    let s = host.session(&session);
    let command = submitted(&s).await;
    run_turn(&s, &command, ("l", "t"), "hi", done());
    let (first, turn) = client.response_with_preceding(&first).await;
    assert_eq!(first["result"]["stopReason"], "end_turn", "{first}");
    assert_eq!(common::chunk_texts(&turn, "agent_message_chunk"), ["hi"]);
    // The same key with another prompt is still a repeat: the key names the operation.
    let repeat = keyed_prompt(&mut client, &session, "something else", json!("k1")).await;
    let (repeat, before) = client.response_with_preceding(&repeat).await;
    assert_eq!(answer(&repeat), answer(&first));
    assert!(updates(&before).is_empty(), "a repeat sends nothing: {before:?}");
    no_submit(&s).await;
    // Prompts without a key run as ever.
    let plain = client.prompt(&session, "again").await;
    let command = submitted(&s).await;
    run_turn(&s, &command, ("l", "t2"), "ok", done());
    assert_eq!(client.response(&plain).await["result"]["stopReason"], "end_turn");
    client.hang_up().await;
}

#[tokio::test]
async fn a_repeat_while_the_turn_runs_is_not_refused_and_both_are_answered_when_it_ends() {
    let (host, mut client, session) = setup().await;
    let first = keyed_prompt(&mut client, &session, "hello", json!("k")).await;
    let s = host.session(&session);
    let command = submitted(&s).await;
    s.start_turn(&command, ("l", "t"));
    s.live(("l", "t"), delta("one "));
    client.wait_for(|m| m.pointer("/params/update/content/text") == Some(&json!("one "))).await;
    let repeats = [
        keyed_prompt(&mut client, &session, "hello", json!("k")).await,
        keyed_prompt(&mut client, &session, "hello", json!("k")).await,
    ];
    // Neither the first nor its repeats are answered while the turn runs; a prompt with another
    // key is refused as ever (one prompt at a time).
    let other = keyed_prompt(&mut client, &session, "hello", json!("other")).await;
    let (refused, before) = client.response_with_preceding(&other).await;
    assert_eq!(code(&error_of(&refused)), -32600, "{refused}");
    assert!(before.iter().all(|m| m.get("id").is_none()), "answered while the turn runs: {before:?}");
    s.live(("l", "t"), delta("two"));
    s.durable(("l", "t"), done());
    let (first, turn) = client.response_with_preceding(&first).await;
    assert_eq!(first["result"]["stopReason"], "end_turn", "{first}");
    assert!(turn.iter().any(|m| m.pointer("/params/update/content/text") == Some(&json!("two"))));
    for repeat in &repeats {
        let (repeat, before) = client.response_with_preceding(repeat).await;
        assert_eq!(answer(&repeat), answer(&first));
        assert!(updates(&before).is_empty(), "no update after the turn's answers: {before:?}");
    }
    no_submit(&s).await;
    // The key of the refused prompt was not remembered: it runs now.
    let other = keyed_prompt(&mut client, &session, "hello", json!("other")).await;
    let command = submitted(&s).await;
    run_turn(&s, &command, ("l", "t2"), "ran", done());
    assert_eq!(client.response(&other).await["result"]["stopReason"], "end_turn");
    client.hang_up().await;
}

#[tokio::test]
async fn a_repeat_of_a_failed_turn_gets_the_same_error() {
    let (host, mut client, session) = setup().await;
    let first = keyed_prompt(&mut client, &session, "hello", json!("k")).await;
    let s = host.session(&session);
    let command = submitted(&s).await;
    run_turn(&s, &command, ("l", "t"), "partial", EventKind::TurnFailed { error: "the provider is down".into() });
    let first = client.response(&first).await;
    assert_eq!(error_of(&first)["message"], "the provider is down", "{first}");
    let repeat = keyed_prompt(&mut client, &session, "hello", json!("k")).await;
    let repeat = client.response(&repeat).await;
    assert_eq!(answer(&repeat), answer(&first));
    no_submit(&s).await;
    client.hang_up().await;
}

#[tokio::test]
async fn a_repeat_after_a_cancel_answers_cancelled_again() {
    let (host, mut client, session) = setup().await;
    let first = keyed_prompt(&mut client, &session, "hello", json!("k")).await;
    let s = host.session(&session);
    let command = submitted(&s).await;
    *s.interrupt_ends.lock().unwrap() = Some(("l".into(), "t".into()));
    s.start_turn(&command, ("l", "t"));
    client.notify("session/cancel", json!({"sessionId": session})).await;
    let first = client.response(&first).await;
    assert_eq!(first["result"]["stopReason"], "cancelled", "{first}");
    let repeat = keyed_prompt(&mut client, &session, "hello", json!("k")).await;
    assert_eq!(answer(&client.response(&repeat).await), answer(&first));
    no_submit(&s).await;
    client.hang_up().await;
}

#[tokio::test]
async fn cancelling_a_repeat_cancels_the_turn_its_key_names() {
    let (host, mut client, session) = setup().await;
    let first = keyed_prompt(&mut client, &session, "hello", json!("k")).await;
    let s = host.session(&session);
    let command = submitted(&s).await;
    *s.interrupt_ends.lock().unwrap() = Some(("l".into(), "t".into()));
    s.start_turn(&command, ("l", "t"));
    let repeat = keyed_prompt(&mut client, &session, "hello", json!("k")).await;
    client.notify("$/cancel_request", json!({"requestId": repeat})).await;
    s.wait_interrupts(1).await;
    let first = client.response(&first).await;
    assert_eq!(first["result"]["stopReason"], "cancelled", "{first}");
    assert_eq!(answer(&client.response(&repeat).await), answer(&first));
    client.hang_up().await;
}

#[tokio::test]
async fn another_key_or_another_session_runs() {
    let (host, mut client, session) = setup().await;
    let s = host.session(&session);
    for key in ["k1", "k2"] {
        let id = keyed_prompt(&mut client, &session, "hello", json!(key)).await;
        let command = submitted(&s).await;
        run_turn(&s, &command, ("l", key), key, done());
        assert_eq!(client.response(&id).await["result"]["stopReason"], "end_turn");
    }
    // Keys are per session.
    let other = client.new_session().await;
    let id = keyed_prompt(&mut client, &other, "hello", json!("k1")).await;
    let o = host.session(&other);
    let command = submitted(&o).await;
    run_turn(&o, &command, ("l", "t"), "other", done());
    assert_eq!(client.response(&id).await["result"]["stopReason"], "end_turn");
    client.hang_up().await;
}

#[tokio::test]
async fn a_key_that_is_no_string_of_1_to_256_bytes_is_refused_naming_it() {
    let (host, mut client, session) = setup().await;
    let longest = "é".repeat(128);
    for bad in [json!(7), json!(null), json!({"k": 1}), json!(["k"]), json!(""), json!(format!("{longest}x"))] {
        let id = keyed_prompt(&mut client, &session, "hello", bad.clone()).await;
        let error = error_of(&client.response(&id).await);
        assert_eq!(code(&error), -32602, "{bad}: {error}");
        assert!(error["message"].as_str().unwrap().contains(KEY), "{bad}: {error}");
    }
    let s = host.session(&session);
    no_submit(&s).await;
    // 256 bytes is a key.
    let id = keyed_prompt(&mut client, &session, "hello", json!(longest)).await;
    let command = submitted(&s).await;
    run_turn(&s, &command, ("l", "t"), "ok", done());
    assert_eq!(client.response(&id).await["result"]["stopReason"], "end_turn");
    client.hang_up().await;
}

// ---------------------------------------------------------------------------------------------
// ACP v2: `idempotencyKey`
// ---------------------------------------------------------------------------------------------

/// Counts its turns. `hold` waits until cancelled; `fail` fails; anything else says `hi`.
#[derive(Default)]
struct Counted {
    turns: AtomicUsize,
}

#[async_trait]
impl TurnRunner for Counted {
    async fn run_turn(&self, turn: &Turn) -> Result<StopReason, Error> {
        self.turns.fetch_add(1, Ordering::SeqCst);
        match turn.prompt_text().as_str() {
            "hold" => {
                turn.text("holding").await;
                turn.cancelled().await;
                Ok(StopReason::Cancelled)
            }
            "fail" => Err(acp_facade::error::ErrorExt::internal_msg("it broke")),
            _ => {
                turn.text("hi").await;
                Ok(StopReason::EndTurn)
            }
        }
    }
}

async fn v2_client() -> (Arc<Counted>, TestClient, String) {
    let turns = Arc::new(Counted::default());
    let runner = Runner::new(Arc::new(MemoryStore::new()), turns.clone());
    let mut client = TestClient::start_agent(runner.agent(runner.options().protocol_v2(true)));
    client.initialize_v2().await;
    let sid = client.call_ok("session/new", json!({"cwd": "/tmp"})).await["sessionId"].as_str().unwrap().to_owned();
    (turns, client, sid)
}

async fn v2_prompt(client: &mut TestClient, session: &str, text: &str, key: Value) -> Value {
    let params = json!({"sessionId": session, "prompt": [{"type": "text", "text": text}], "idempotencyKey": key});
    client.send_request("session/prompt", params).await
}

/// Waits for the session's idle `state_update`; returns its stop reason and the updates before.
async fn until_idle(client: &mut TestClient) -> (Value, Vec<Value>) {
    let mut seen = Vec::new();
    loop {
        let message = client.wait_for(|m| m["method"] == "session/update").await;
        let update = message["params"]["update"].clone();
        if update["sessionUpdate"] == "state_update" && update["state"] == "idle" {
            return (update["stopReason"].clone(), seen);
        }
        seen.push(update);
    }
}

#[tokio::test]
async fn v2_a_repeat_gets_the_first_acknowledgement_and_inserts_no_message() {
    let (turns, mut client, sid) = v2_client().await;
    let first = v2_prompt(&mut client, &sid, "hello", json!("k")).await;
    let first = client.response(&first).await;
    let message_id = first["result"]["messageId"].clone();
    assert!(message_id.is_string(), "{first}");
    assert_eq!(until_idle(&mut client).await.0, "end_turn");
    // After the end, and with another prompt: the same message id, nothing sent, nothing run.
    let repeat = v2_prompt(&mut client, &sid, "other words", json!("k")).await;
    let (repeat, before) = client.response_with_preceding(&repeat).await;
    assert_eq!(answer(&repeat), answer(&first));
    assert!(updates(&before).is_empty(), "{before:?}");
    // `null` is no key; another key is another prompt.
    for key in [json!(null), json!("k2")] {
        let id = v2_prompt(&mut client, &sid, "hello", key).await;
        assert_ne!(client.response(&id).await["result"]["messageId"], message_id);
        assert_eq!(until_idle(&mut client).await.0, "end_turn");
    }
    assert_eq!(turns.turns.load(Ordering::SeqCst), 3);
    client.hang_up().await;
}

#[tokio::test]
async fn v2_a_repeat_while_the_turn_runs_is_not_refused_nor_after_its_cancel() {
    let (turns, mut client, sid) = v2_client().await;
    let first = v2_prompt(&mut client, &sid, "hold", json!("k")).await;
    let first = client.response(&first).await;
    client.wait_for(|m| m.pointer("/params/update/content/text") == Some(&json!("holding"))).await;
    let repeat = v2_prompt(&mut client, &sid, "hold", json!("k")).await;
    assert_eq!(answer(&client.response(&repeat).await), answer(&first));
    client.notify("session/cancel", json!({"sessionId": sid})).await;
    let (stop, seen) = until_idle(&mut client).await;
    assert_eq!(stop, "cancelled");
    let messages = seen.iter().filter(|u| u["sessionUpdate"] == "user_message").count();
    assert_eq!(messages, 1, "one user message: {seen:?}");
    let repeat = v2_prompt(&mut client, &sid, "hold", json!("k")).await;
    assert_eq!(answer(&client.response(&repeat).await), answer(&first));
    assert_eq!(turns.turns.load(Ordering::SeqCst), 1);
    client.hang_up().await;
}

#[tokio::test]
async fn v2_a_repeat_of_a_failed_turn_gets_the_same_acknowledgement() {
    let (turns, mut client, sid) = v2_client().await;
    let first = v2_prompt(&mut client, &sid, "fail", json!("k")).await;
    let first = client.response(&first).await;
    assert_eq!(until_idle(&mut client).await.0, "error");
    let repeat = v2_prompt(&mut client, &sid, "fail", json!("k")).await;
    assert_eq!(answer(&client.response(&repeat).await), answer(&first));
    assert_eq!(turns.turns.load(Ordering::SeqCst), 1);
    client.hang_up().await;
}

#[tokio::test]
async fn v2_a_key_that_is_no_string_of_1_to_255_characters_is_refused_naming_it() {
    let (turns, mut client, sid) = v2_client().await;
    let longest = "é".repeat(255);
    for bad in [json!(7), json!(true), json!({}), json!(""), json!(format!("{longest}x"))] {
        let id = v2_prompt(&mut client, &sid, "hello", bad.clone()).await;
        let error = error_of(&client.response(&id).await);
        assert_eq!(code(&error), -32602, "{bad}: {error}");
        assert!(error["message"].as_str().unwrap().contains("idempotencyKey"), "{bad}: {error}");
    }
    // v1's `_meta` key means nothing on v2.
    let params = json!({"sessionId": sid, "prompt": [{"type": "text", "text": "x"}], "_meta": {KEY: 7}});
    let id = client.send_request("session/prompt", params).await;
    assert!(client.response(&id).await["result"]["messageId"].is_string());
    assert_eq!(until_idle(&mut client).await.0, "end_turn");
    let id = v2_prompt(&mut client, &sid, "hello", json!(longest)).await;
    assert!(client.response(&id).await["result"]["messageId"].is_string());
    assert_eq!(until_idle(&mut client).await.0, "end_turn");
    assert_eq!(turns.turns.load(Ordering::SeqCst), 2);
    client.hang_up().await;
}
