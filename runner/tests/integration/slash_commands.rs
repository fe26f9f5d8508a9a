//! Host-defined slash commands: advertised beside `compact` in `available_commands_update`,
//! lazily on a session's first prompt; a new list is advertised at once from then on (not before,
//! and not when unchanged); a prompt `/name input` naming an advertised command reaches the host
//! as that command with its input, anything else as a plain prompt.

use crate::common;

use acp_facade::Options;
use acp_facade::acp::AvailableCommand;
use acp_facade::harness::{EventKind, SlashCommand};
use common::lifecycle::update_kinds;
use common::rich::{ControlledHost, RichTurns, rich_client, rich_runner, shout, with_turns};
use common::{TestClient, assert_serving, chunk_texts, updates};
use serde_json::{Value, json};

fn names(update: &Value) -> Vec<String> {
    update["availableCommands"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap().to_owned()).collect()
}

fn adverts(messages: &[Value]) -> Vec<Value> {
    updates(messages).into_iter().filter(|u| u["sessionUpdate"] == "available_commands_update").collect()
}

#[tokio::test]
async fn host_commands_are_advertised_on_the_first_prompt_and_invoked_with_their_input() {
    let (runner, turns) = rich_runner();
    let mut client = rich_client(&runner, |o| o).await;
    let sid = client.new_session().await;
    assert_serving(&mut client).await;
    let id = client.prompt(&sid, "/shout hello world").await;
    let (response, before) = client.response_with_preceding(&id).await;
    assert_eq!(response["result"]["stopReason"], "end_turn");
    assert_eq!(
        adverts(&before),
        [json!({
            "sessionUpdate": "available_commands_update",
            "availableCommands": [{"name": "shout", "description": "Repeat the input in capitals", "input": {"hint": "text"}}]
        })]
    );
    assert_eq!(update_kinds(&before)[0], "available_commands_update", "before the turn's updates");
    assert_eq!(chunk_texts(&before, "agent_message_chunk"), ["HELLO WORLD"]);
    let seen = turns.seen();
    assert_eq!(seen[0].command, Some(SlashCommand { name: "shout".into(), input: "hello world".into() }));
    // Anything that does not name an advertised command is a plain prompt.
    for text in ["/whisper hi", "shout hi", "/shoutx", "/ shout"] {
        let id = client.prompt(&sid, text).await;
        let (_, before) = client.response_with_preceding(&id).await;
        assert!(adverts(&before).is_empty(), "advertised once only");
        assert_eq!(turns.seen().last().unwrap().command, None, "{text}");
    }
}

#[tokio::test]
async fn a_new_list_is_advertised_at_once_only_after_advertising_started_and_only_when_changed() {
    let (runner, turns) = rich_runner();
    let mut client = rich_client(&runner, |o| o).await;
    let sid = client.new_session().await;
    // Before the first prompt: kept, not sent.
    let session = runner.live_session(&acp_facade::acp::SessionId::new(sid.as_str())).unwrap();
    session.set_commands(vec![AvailableCommand::new("early", "Early")]).await.unwrap();
    assert_serving(&mut client).await;
    let id = client.prompt(&sid, "hello").await;
    let (_, before) = client.response_with_preceding(&id).await;
    let first = adverts(&before);
    assert_eq!(first.len(), 1);
    assert_eq!(names(&first[0]), ["early"]);
    // A turn replaces the list: advertised before its response.
    let id = client.prompt(&sid, "commands a b").await;
    let (_, before) = client.response_with_preceding(&id).await;
    let replaced = adverts(&before);
    assert_eq!(replaced.len(), 1);
    assert_eq!(names(&replaced[0]), ["a", "b"]);
    // The same list again: nothing.
    let id = client.prompt(&sid, "commands a b").await;
    let (_, before) = client.response_with_preceding(&id).await;
    assert!(adverts(&before).is_empty());
    // The old command is gone, the new one is one.
    let id = client.prompt(&sid, "/early x").await;
    client.response_with_preceding(&id).await;
    assert_eq!(turns.seen().last().unwrap().command, None);
    let id = client.prompt(&sid, "/b  spaced input ").await;
    client.response_with_preceding(&id).await;
    assert_eq!(
        turns.seen().last().unwrap().command,
        Some(SlashCommand { name: "b".into(), input: "spaced input".into() })
    );
    // Between turns: sent at once. Emptied: an empty list is sent.
    session.set_commands(Vec::new()).await.unwrap();
    let sent = client.next().await.0;
    assert_eq!(
        sent["params"]["update"],
        json!({"sessionUpdate": "available_commands_update", "availableCommands": []})
    );
}

#[tokio::test]
async fn compact_comes_first_and_a_host_command_cannot_shadow_it() {
    let (runner, turns) = with_turns(RichTurns { compaction: true, ..RichTurns::default() });
    let mut client = rich_client(&runner, |o| o).await;
    let sid = client.new_session().await;
    let id = client.prompt(&sid, "/compact").await;
    let (response, before) = client.response_with_preceding(&id).await;
    assert_eq!(response["result"]["stopReason"], "end_turn");
    let advertised = adverts(&before);
    assert_eq!(names(&advertised[0]), ["compact", "shout"]);
    assert!(turns.seen().is_empty(), "/compact compacted, no turn ran");
    let id = client.prompt(&sid, "/compact now").await;
    client.response(&id).await;
    assert_eq!(turns.seen().last().unwrap().command, None, "the host's `compact` is not invoked");
}

#[tokio::test]
async fn a_host_session_receives_the_command_with_the_prompt_as_typed() {
    let host = ControlledHost::new(vec![shout()]);
    let mut client = TestClient::initialized(Options::new(host.clone())).await;
    let sid = client.new_session().await;
    let session = host.session(0);
    let id = client
        .send_request(
            "session/prompt",
            json!({"sessionId": sid, "prompt": [{"type": "text", "text": " /shout  hi there "}, {"type": "text", "text": "more"}]}),
        )
        .await;
    let (command, content) = session.inner.next_submit().await;
    session.inner.start_turn(&command, ("l", "t"));
    session.inner.durable(("l", "t"), EventKind::TurnDone { message: None, stop: None });
    client.response(&id).await;
    let prompt = session.prompts().pop().unwrap();
    assert_eq!(prompt.command, Some(SlashCommand { name: "shout".into(), input: "hi there".into() }));
    assert_eq!(prompt.content, content);
    assert_eq!(content.len(), 2, "the content is passed on as typed");
}
