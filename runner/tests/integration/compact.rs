//! `/compact`: advertised lazily on a session's first prompt, once, only when compaction is
//! configured; routed to the session's own compactor and completed by the compaction events that
//! carry its command id; plain text otherwise.

use crate::common;

use std::sync::Arc;

use acp_facade::Options;
use acp_facade::harness::content::plain_text;
use acp_facade::harness::{CommandId, EventClass, EventKind, TokenChannel, Visibility};
use common::lifecycle::{RichHost, RichSession, SessionSpec, update_kinds};
use common::{TestClient, chunk_texts};
use serde_json::{Value, json};

fn host() -> Arc<RichHost> {
    RichHost::new(SessionSpec { compactor: true, ..SessionSpec::default() })
}

/// Emits a compaction reply caused by `command`.
fn reply(s: &RichSession, command: &CommandId, kind: EventKind) {
    s.inner.emit(kind, EventClass::Enduring, Visibility::Public, Some(command), None);
}

/// Runs an ordinary prompt to `end_turn`; returns what the agent sent before the response.
async fn ordinary_prompt(client: &mut TestClient, s: &RichSession, turn: &str) -> Vec<Value> {
    let id = client.prompt(s.id_str(), "hello").await;
    let (command, _) = s.inner.next_submit().await;
    let at = ("l1", turn);
    s.inner.start_turn(&command, at);
    s.inner.live(at, EventKind::TokenDelta { text: "hi".into(), channel: TokenChannel::Message });
    s.inner.durable(at, EventKind::TurnDone { message: None, stop: None });
    let (response, before) = client.response_with_preceding(&id).await;
    assert_eq!(response["result"]["stopReason"], json!("end_turn"));
    before
}

fn commands_updates(messages: &[Value]) -> Vec<Value> {
    messages
        .iter()
        .filter(|m| m.pointer("/params/update/sessionUpdate") == Some(&json!("available_commands_update")))
        .cloned()
        .collect()
}

#[tokio::test]
async fn the_command_is_advertised_on_the_first_prompt_only_once() {
    let host = host();
    let mut client = TestClient::initialized(Options::new(host.clone()).compaction(true)).await;
    let session = client.new_session().await;
    assert!(commands_updates(&client.transcript).is_empty(), "never at session establishment");
    let s = host.session(&session);

    let before = ordinary_prompt(&mut client, &s, "t1").await;
    assert_eq!(update_kinds(&before), vec!["available_commands_update", "agent_message_chunk"]);
    let advertised = &commands_updates(&before)[0]["params"];
    assert_eq!(advertised["sessionId"], json!(session));
    let names: Vec<&str> = advertised["update"]["availableCommands"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, vec!["compact"]);

    let before = ordinary_prompt(&mut client, &s, "t2").await;
    assert!(commands_updates(&before).is_empty(), "advertised once");
    // Another session gets its own advertisement on its own first prompt.
    let other = client.new_session().await;
    let o = host.session(&other);
    let before = ordinary_prompt(&mut client, &o, "t1").await;
    assert_eq!(commands_updates(&before).len(), 1);
    assert_eq!(commands_updates(&before)[0]["params"]["sessionId"], json!(other));
    assert_eq!(commands_updates(&client.transcript).len(), 2);
    client.hang_up().await;
}

#[tokio::test]
async fn compact_resolves_on_the_matching_reply_and_ignores_decoys() {
    let host = host();
    let mut client = TestClient::initialized(Options::new(host.clone()).compaction(true)).await;
    let session = client.new_session().await;
    let s = host.session(&session);
    let compactor = s.compactor.as_ref().unwrap();

    let id = client.prompt(&session, "/compact").await;
    let command = compactor.next_call().await;
    // Decoys: another command's replies.
    reply(&s, &CommandId::new("someone-else"), EventKind::CompactWaiterRejected { reason: "decoy".into() });
    reply(&s, &CommandId::new("someone-else"), EventKind::CompactWaiterResolved {});
    // Even so: nothing is answered until the matching reply.
    let id_probe = client.send_request("session/list", json!({})).await;
    client.response(&id_probe).await;
    assert!(!client.transcript.iter().any(|m| m.get("id") == Some(&id)), "answered on a decoy");

    reply(&s, &command, EventKind::CompactWaiterResolved {});
    let (response, before) = client.response_with_preceding(&id).await;
    assert_eq!(response["result"]["stopReason"], json!("end_turn"), "{response}");
    assert_eq!(update_kinds(&before), vec!["available_commands_update"]);
    assert_eq!(compactor.calls(), 1);
    client.hang_up().await;
    let submitted = host.log.entries().iter().filter(|e| e.ends_with(":submit")).count();
    assert_eq!(submitted, 0, "`/compact` never goes to submit");
}

#[tokio::test]
async fn compact_fails_with_the_reason_on_the_matching_rejection() {
    let host = host();
    let mut client = TestClient::initialized(Options::new(host.clone()).compaction(true)).await;
    let session = client.new_session().await;
    let s = host.session(&session);
    let compactor = s.compactor.as_ref().unwrap();

    let id = client.prompt(&session, "/compact").await;
    let command = compactor.next_call().await;
    reply(&s, &CommandId::new("decoy"), EventKind::CompactWaiterResolved {});
    reply(&s, &command, EventKind::CompactWaiterRejected { reason: "nothing to compact yet".into() });
    let response = client.response(&id).await;
    let error = &response["error"];
    assert!(error.is_object(), "{response}");
    assert!(
        error["message"].as_str().unwrap().contains("nothing to compact yet"),
        "the reason reaches the client: {error}"
    );

    // The session goes on: the next `/compact` is a new command.
    let id = client.prompt(&session, "/compact").await;
    let second = compactor.next_call().await;
    assert_ne!(second, command);
    reply(&s, &command, EventKind::CompactWaiterRejected { reason: "stale".into() });
    reply(&s, &second, EventKind::CompactWaiterResolved {});
    assert_eq!(client.response(&id).await["result"]["stopReason"], json!("end_turn"));
    client.hang_up().await;
}

/// Issue 11: an `Internal` reply to the compaction ends it (a rejection as a generic error whose
/// reason stays in the host) instead of leaving the prompt waiting until it is cancelled.
#[tokio::test]
async fn an_internal_reply_ends_the_compaction_without_leaking_its_reason() {
    let host = host();
    let mut client = TestClient::initialized(Options::new(host.clone()).compaction(true)).await;
    let session = client.new_session().await;
    let s = host.session(&session);
    let compactor = s.compactor.as_ref().unwrap();
    let internal = |command: &CommandId, kind: EventKind| {
        s.inner.emit(kind, EventClass::Enduring, Visibility::Internal, Some(command), None);
    };

    let id = client.prompt(&session, "/compact").await;
    let command = compactor.next_call().await;
    internal(&command, EventKind::CompactWaiterRejected { reason: "secret internal reason".into() });
    let response = client.response(&id).await;
    assert_eq!(response["error"]["code"], json!(-32603), "{response}");
    assert!(!response.to_string().contains("secret"), "the internal reason stays in the host: {response}");

    let id = client.prompt(&session, "/compact").await;
    let command = compactor.next_call().await;
    internal(&command, EventKind::CompactWaiterResolved {});
    assert_eq!(client.response(&id).await["result"]["stopReason"], json!("end_turn"));
    assert!(!client.transcript.iter().any(|m| m.to_string().contains("secret")));
    client.hang_up().await;
}

#[tokio::test]
async fn each_session_compacts_with_its_own_compactor() {
    let host = host();
    let mut client = TestClient::initialized(Options::new(host.clone()).compaction(true)).await;
    let a = client.new_session().await;
    let b = client.new_session().await;
    let sa = host.session(&a);
    let sb = host.session(&b);
    let id = client.prompt(&b, "/compact").await;
    let command = sb.compactor.as_ref().unwrap().next_call().await;
    reply(&sb, &command, EventKind::CompactWaiterResolved {});
    assert_eq!(client.response(&id).await["result"]["stopReason"], json!("end_turn"));
    assert_eq!(sa.compactor.as_ref().unwrap().calls(), 0);
    assert_eq!(sb.compactor.as_ref().unwrap().calls(), 1);
    client.hang_up().await;
}

#[tokio::test]
async fn other_text_is_an_ordinary_prompt_even_with_compaction() {
    let host = host();
    let mut client = TestClient::initialized(Options::new(host.clone()).compaction(true)).await;
    let session = client.new_session().await;
    let s = host.session(&session);
    for text in ["/compact now", "/compacting", "please /compact", "/help"] {
        let id = client.prompt(&session, text).await;
        let (command, prompt) = s.inner.next_submit().await;
        assert_eq!(plain_text(&prompt), text);
        s.inner.start_turn(&command, ("l", text));
        s.inner.durable(("l", text), EventKind::TurnDone { message: None, stop: None });
        assert_eq!(client.response(&id).await["result"]["stopReason"], json!("end_turn"));
    }
    assert_eq!(s.compactor.as_ref().unwrap().calls(), 0);
    client.hang_up().await;
}

#[tokio::test]
async fn without_compaction_compact_is_plain_text_and_nothing_is_advertised() {
    let host = host();
    let mut client = TestClient::initialized(Options::new(host.clone())).await;
    let session = client.new_session().await;
    let s = host.session(&session);
    let id = client.prompt(&session, "/compact").await;
    let (command, prompt) = s.inner.next_submit().await;
    assert_eq!(plain_text(&prompt), "/compact");
    s.inner.start_turn(&command, ("l", "t"));
    s.inner
        .live(("l", "t"), EventKind::TokenDelta { text: "the host handled it".into(), channel: TokenChannel::Message });
    s.inner.durable(("l", "t"), EventKind::TurnDone { message: None, stop: None });
    let (response, before) = client.response_with_preceding(&id).await;
    assert_eq!(response["result"]["stopReason"], json!("end_turn"));
    assert_eq!(chunk_texts(&before, "agent_message_chunk"), vec!["the host handled it"]);
    assert_eq!(s.compactor.as_ref().unwrap().calls(), 0);
    let _ = ordinary_prompt(&mut client, &s, "t2").await;
    assert!(commands_updates(&client.transcript).is_empty());
    client.hang_up().await;
}

#[tokio::test]
async fn a_cancelled_compaction_answers_cancelled_however_it_ends() {
    let host = host();
    let mut client = TestClient::initialized(Options::new(host.clone()).compaction(true)).await;
    let session = client.new_session().await;
    let s = host.session(&session);
    let compactor = s.compactor.as_ref().unwrap();
    let outcomes =
        [EventKind::CompactWaiterRejected { reason: "interrupted".into() }, EventKind::CompactWaiterResolved {}];
    for (n, outcome) in outcomes.into_iter().enumerate() {
        let id = client.prompt(&session, "/compact").await;
        let command = compactor.next_call().await;
        client.notify("session/cancel", json!({"sessionId": session})).await;
        common::lifecycle::eventually("the session is interrupted", || s.interrupt_count() == n + 1).await;
        reply(&s, &command, outcome);
        let response = client.response(&id).await;
        assert_eq!(response["result"]["stopReason"], json!("cancelled"), "{response}");
    }
    client.hang_up().await;
}

#[tokio::test]
async fn a_session_without_a_compactor_is_not_offered_the_command() {
    let host = RichHost::new(SessionSpec::default());
    let mut client = TestClient::initialized(Options::new(host.clone()).compaction(true)).await;
    let session = client.new_session().await;
    let s = host.session(&session);
    let _ = ordinary_prompt(&mut client, &s, "t1").await;
    assert!(commands_updates(&client.transcript).is_empty(), "nothing it could run is advertised");
    let error = client
        .call_err("session/prompt", json!({"sessionId": session, "prompt": [{"type": "text", "text": "/compact"}]}))
        .await;
    assert_eq!(common::code(&error), -32600, "{error}");
    client.hang_up().await;
}
