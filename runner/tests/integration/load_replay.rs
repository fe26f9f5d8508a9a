//! `session/load`: the conversation is rebuilt from Enduring, Public events only, in four buckets
//! (user messages, assistant messages, completed tool calls, one usage update), all before the
//! response and without duplicates, each message's chunks under a `messageId` of their own; the
//! session is live afterwards.

use crate::common;

use std::sync::Arc;

use acp_facade::acp::{StopReason, ToolKind};
use acp_facade::harness::content::text_block;
use acp_facade::harness::{
    AiMessage, Event, EventClass, EventKind, Message, TokenChannel, ToolCallId, ToolCallRequest, ToolResultMessage,
    UserMessage, Visibility,
};
use acp_facade::{Agent, Options};
use common::lifecycle::{History, RichHost, SessionSpec, eventually, update_kinds, updates};
use common::{TestClient, chunk_texts, code};
use serde_json::{Value, json};
use tokio::sync::Semaphore;

fn user(text: &str) -> EventKind {
    EventKind::TurnStarted { message: UserMessage::new(vec![text_block(text)]) }
}

fn ai(thoughts: &[&str], content: &[&str], calls: &[(&str, &str, ToolKind)]) -> Message {
    Message::Ai(AiMessage {
        content: content.iter().map(|t| text_block(*t)).collect(),
        thoughts: thoughts.iter().map(|t| text_block(*t)).collect(),
        tool_calls: calls
            .iter()
            .map(|(id, name, kind)| ToolCallRequest::new(ToolCallId::new(*id), *name, *kind, json!({"arg": id})))
            .collect(),
    })
}

fn result(call: &str, output: &str, is_error: bool) -> Message {
    Message::ToolResult(ToolResultMessage::new(ToolCallId::new(call), vec![text_block(output).into()], is_error))
}

fn step(messages: Vec<Message>) -> EventKind {
    EventKind::StepDone { messages }
}

fn delta(text: &str) -> EventKind {
    EventKind::TokenDelta { text: text.into(), channel: TokenChannel::Message }
}

/// Two turns of history with decoys of every kind the replay must ignore.
fn history() -> Vec<Event> {
    let t1 = ("l1", "t1");
    let t2 = ("l1", "t2");
    let mut h = History::new();
    h.durable(t1, user("first question"));
    // Live-only events: never replayed.
    h.push(delta("EPHEMERAL-DELTA"), EventClass::Ephemeral, Visibility::Public, None, t1);
    h.push(
        EventKind::tool_call_started(ToolCallId::new("live-call"), "EPHEMERAL-TOOL", ToolKind::Read, json!({})),
        EventClass::Ephemeral,
        Visibility::Public,
        None,
        t1,
    );
    h.durable(
        t1,
        step(vec![
            ai(&["thinking one"], &["answer one"], &[("call-1", "Read notes", ToolKind::Read)]),
            result("call-1", "notes content", false),
        ]),
    );
    h.durable(t1, EventKind::ContextMeasured { used: 100, size: 1000, cost: None });
    h.durable(t1, step(vec![ai(&[], &["answer one, continued"], &[])]));
    h.durable(
        t1,
        EventKind::TurnDone { message: Some(ai(&[], &["TURN-DONE-DUPLICATE"], &[])), stop: Some(StopReason::EndTurn) },
    );
    // Internal events: a hard boundary, also in history.
    h.push(user("INTERNAL-USER"), EventClass::Enduring, Visibility::Internal, None, ("l9", "t9"));
    h.push(
        step(vec![
            ai(&["INTERNAL-THOUGHT"], &["INTERNAL-ANSWER"], &[("secret", "INTERNAL-TOOL", ToolKind::Execute)]),
            result("secret", "INTERNAL-OUTPUT", false),
        ]),
        EventClass::Enduring,
        Visibility::Internal,
        None,
        ("l9", "t9"),
    );
    h.push(
        EventKind::ContextMeasured { used: 555, size: 1000, cost: None },
        EventClass::Enduring,
        Visibility::Internal,
        None,
        ("l9", "t9"),
    );
    h.durable(t2, user("second question"));
    h.durable(
        t2,
        step(vec![
            ai(
                &["thinking two"],
                &["answer two"],
                &[("call-2", "Run tests", ToolKind::Execute), ("call-3", "Fetch", ToolKind::Fetch)],
            ),
            result("call-2", "tests failed", true),
            result("call-3", "fetched", false),
        ]),
    );
    h.durable(t2, EventKind::ContextMeasured { used: 300, size: 1000, cost: None });
    h.push(
        EventKind::ContextMeasured { used: 999, size: 1000, cost: None },
        EventClass::Ephemeral,
        Visibility::Public,
        None,
        t2,
    );
    h.durable(t2, EventKind::TurnDone { message: Some(ai(&[], &["TURN-DONE-DUPLICATE"], &[])), stop: None });
    h.durable(t2, EventKind::SessionMetaChanged { title: Some("META".into()), updated_at: None });
    h.build()
}

/// A compact, comparable description of one replayed update.
fn describe(update: &Value) -> String {
    let u = &update["params"]["update"];
    let kind = u["sessionUpdate"].as_str().unwrap();
    match kind {
        "user_message_chunk" | "agent_message_chunk" | "agent_thought_chunk" => {
            format!("{kind}:{}", u["content"]["text"].as_str().unwrap())
        }
        "tool_call" => format!(
            "tool_call:{}:{}:{}:{}",
            u["toolCallId"].as_str().unwrap(),
            u["title"].as_str().unwrap(),
            u["status"].as_str().unwrap(),
            u["content"][0]["content"]["text"].as_str().unwrap_or("")
        ),
        "usage_update" => format!("usage_update:{}/{}", u["used"], u["size"]),
        other => other.to_owned(),
    }
}

fn load_params(id: &str) -> Value {
    json!({"sessionId": id, "cwd": "/tmp", "mcpServers": []})
}

#[tokio::test]
async fn load_replays_four_buckets_from_durable_public_events_before_the_response() {
    let host = RichHost::new(SessionSpec::default());
    host.store("stored-1", history());
    let mut client = TestClient::start(Options::new(host.clone()).loader(host.clone()));
    let init = client.initialize().await;
    assert_eq!(init["agentCapabilities"]["loadSession"], json!(true));

    let id = client.send_request("session/load", load_params("stored-1")).await;
    let (response, before) = client.response_with_preceding(&id).await;
    assert_eq!(response["result"], json!({}));
    assert_eq!(before.len(), updates(&before).len(), "only updates before the response: {before:#?}");
    for update in &before {
        assert_eq!(update["params"]["sessionId"], json!("stored-1"));
    }
    let replay: Vec<String> = before.iter().map(describe).collect();
    assert_eq!(
        replay,
        vec![
            "user_message_chunk:first question",
            "user_message_chunk:second question",
            "agent_thought_chunk:thinking one",
            "agent_message_chunk:answer one",
            "agent_message_chunk:answer one, continued",
            "agent_thought_chunk:thinking two",
            "agent_message_chunk:answer two",
            "tool_call:call-1:Read notes:completed:notes content",
            "tool_call:call-2:Run tests:failed:tests failed",
            "tool_call:call-3:Fetch:completed:fetched",
            "usage_update:300/1000",
        ]
    );
    // Each message's chunks carry the message's own id: a user message its `TurnStarted` event's,
    // the n-th message of a step `<StepDone event id>/<n>` — thought and text of one AI message
    // alike, so that a client neither joins two messages of a bucket nor splits one.
    let events = history();
    let event_id = |i: usize| events[i].header.id.as_str().to_owned();
    let (started, steps): (Vec<usize>, Vec<usize>) = {
        let public = |i: &usize| events[*i].is_public() && events[*i].header.class == EventClass::Enduring;
        let of = |want: fn(&EventKind) -> bool| {
            (0..events.len()).filter(public).filter(|i| want(&events[*i].kind)).collect()
        };
        (of(|k| matches!(k, EventKind::TurnStarted { .. })), of(|k| matches!(k, EventKind::StepDone { .. })))
    };
    let ids: Vec<(String, &str)> =
        before.iter().filter_map(|m| Some((describe(m), m.pointer("/params/update/messageId")?.as_str()?))).collect();
    let (first, second) = (event_id(started[0]), event_id(started[1]));
    let (one, continued, two) =
        (format!("{}/0", event_id(steps[0])), format!("{}/0", event_id(steps[1])), format!("{}/0", event_id(steps[2])));
    assert_eq!(
        ids,
        vec![
            ("user_message_chunk:first question".to_owned(), first.as_str()),
            ("user_message_chunk:second question".to_owned(), second.as_str()),
            ("agent_thought_chunk:thinking one".to_owned(), one.as_str()),
            ("agent_message_chunk:answer one".to_owned(), one.as_str()),
            ("agent_message_chunk:answer one, continued".to_owned(), continued.as_str()),
            ("agent_thought_chunk:thinking two".to_owned(), two.as_str()),
            ("agent_message_chunk:answer two".to_owned(), two.as_str()),
        ]
    );
    assert_eq!([&first, &second, &one, &continued, &two].iter().collect::<std::collections::HashSet<_>>().len(), 5);

    let call = before.iter().find(|m| m.pointer("/params/update/toolCallId") == Some(&json!("call-2"))).unwrap();
    assert_eq!(call["params"]["update"]["kind"], json!("execute"));
    assert_eq!(call["params"]["update"]["rawInput"], json!({"arg": "call-2"}));

    let text = serde_json::to_string(&before).unwrap();
    for forbidden in ["EPHEMERAL", "INTERNAL", "TURN-DONE-DUPLICATE", "live-call", "secret", "999", "555"] {
        assert!(!text.contains(forbidden), "{forbidden} leaked into the replay: {text}");
    }
    client.hang_up().await;
}

#[tokio::test]
async fn a_loaded_session_is_live_and_cannot_be_loaded_again() {
    let host = RichHost::new(SessionSpec::default());
    host.store("stored-1", history());
    let mut client = TestClient::initialized(Options::new(host.clone()).loader(host.clone())).await;
    let id = client.send_request("session/load", load_params("stored-1")).await;
    let (_, replay) = client.response_with_preceding(&id).await;
    assert_eq!(replay.len(), 11);
    let replayed = client.transcript.len();

    let s = host.session("stored-1");
    let prompt = client.prompt("stored-1", "third question").await;
    let (command, _) = s.inner.next_submit().await;
    s.inner.start_turn(&command, ("l1", "t3"));
    s.inner.live(("l1", "t3"), delta("answer three"));
    s.inner.durable(("l1", "t3"), EventKind::TurnDone { message: None, stop: None });
    let (response, before) = client.response_with_preceding(&prompt).await;
    assert_eq!(response["result"]["stopReason"], json!("end_turn"));
    assert_eq!(chunk_texts(&before, "agent_message_chunk"), vec!["answer three"]);

    let id = client.send_request("session/load", load_params("stored-1")).await;
    let (response, before) = client.response_with_preceding(&id).await;
    assert_eq!(code(&response["error"]), -32600, "{response}");
    assert!(updates(&before).is_empty(), "a refused load replays nothing");
    assert_eq!(*host.loads.lock().unwrap(), vec!["stored-1".to_owned()]);
    assert_eq!(update_kinds(&client.transcript[replayed..]), vec!["agent_message_chunk"], "nothing replayed again");
    client.hang_up().await;
}

#[tokio::test]
async fn load_rejects_bad_setups_and_unknown_sessions_without_replaying() {
    let host = RichHost::new(SessionSpec::default());
    host.store("stored-1", history());
    let mut client = TestClient::initialized(Options::new(host.clone()).loader(host.clone())).await;
    let error = client.call_err("session/load", json!({"sessionId": "stored-1", "cwd": "tmp", "mcpServers": []})).await;
    assert_eq!(code(&error), -32602, "{error}");
    let error = client.call_err("session/load", load_params("")).await;
    assert_eq!(code(&error), -32602, "{error}");
    assert!(host.loads.lock().unwrap().is_empty());
    let error = client.call_err("session/load", load_params("missing")).await;
    assert_eq!(code(&error), -32002, "{error}");
    assert!(updates(&client.transcript).is_empty());
    client.hang_up().await;
}

#[tokio::test]
async fn an_empty_history_replays_nothing_and_the_config_state_is_answered() {
    let host = RichHost::new(SessionSpec { config: true, ..SessionSpec::default() });
    host.store("empty", Vec::new());
    let mut client = TestClient::initialized(Options::new(host.clone()).loader(host.clone())).await;
    let id = client.send_request("session/load", load_params("empty")).await;
    let (response, before) = client.response_with_preceding(&id).await;
    assert!(before.is_empty(), "{before:#?}");
    assert_eq!(response["result"]["modes"]["currentModeId"], json!("ask"));
    assert_eq!(response["result"]["configOptions"].as_array().unwrap().len(), 2);
    client.hang_up().await;
}

#[tokio::test]
async fn load_is_not_offered_without_a_loader() {
    let host = RichHost::new(SessionSpec::default());
    host.store("stored-1", history());
    let mut client = TestClient::start(Options::new(host.clone()));
    let init = client.initialize().await;
    assert_eq!(init["agentCapabilities"]["loadSession"], json!(false));
    let error = client.call_err("session/load", load_params("stored-1")).await;
    assert_eq!(code(&error), -32601, "{error}");
    client.hang_up().await;
}

#[tokio::test]
async fn concurrent_loads_of_one_id_reach_the_host_once_and_replay_once() {
    let host = RichHost::new(SessionSpec::default());
    host.store("stored-1", history());
    let permits = Arc::new(Semaphore::new(0));
    *host.hold_opening.lock().unwrap() = Some(permits.clone());
    let options = Options::new(host.clone()).loader(host.clone()).resumer(host.clone()).deleter(host.clone());
    let mut client = TestClient::initialized(options).await;

    let first = client.send_request("session/load", load_params("stored-1")).await;
    eventually("the host is loading", || host.loads.lock().unwrap().len() == 1).await;
    // While it is being opened: no second load or resume, and no delete.
    let error = client.call_err("session/load", load_params("stored-1")).await;
    assert_eq!(code(&error), -32600, "{error}");
    let error = client.call_err("session/resume", load_params("stored-1")).await;
    assert_eq!(code(&error), -32600, "{error}");
    let error = client.call_err("session/delete", json!({"sessionId": "stored-1"})).await;
    assert_eq!(code(&error), -32600, "{error}");
    assert!(host.deletes().is_empty());
    assert!(host.resumes.lock().unwrap().is_empty());

    permits.add_permits(1);
    let (response, before) = client.response_with_preceding(&first).await;
    assert_eq!(response["result"], json!({}));
    assert_eq!(before.len(), 11, "one replay: {before:#?}");
    assert_eq!(chunk_texts(&client.transcript, "user_message_chunk").len(), 2, "replayed once");
    assert_eq!(*host.loads.lock().unwrap(), vec!["stored-1".to_owned()]);
    assert_eq!(host.all_sessions().len(), 1, "the host opened it once");
    client.hang_up().await;
}

#[tokio::test]
async fn a_loaded_session_that_cannot_be_served_is_shut_down_again() {
    let host = RichHost::new(SessionSpec::default());
    host.store("stored-1", history());
    let agent = Agent::new(Options::new(host.clone()).loader(host.clone()).resumer(host.clone()));
    let mut client = TestClient::start_agent(agent.clone());
    client.initialize().await;

    // The host reopens another session than asked for.
    *host.reopen_as.lock().unwrap() = Some("impostor".into());
    let id = client.send_request("session/load", load_params("stored-1")).await;
    let (response, before) = client.response_with_preceding(&id).await;
    assert_eq!(code(&response["error"]), -32603, "{response}");
    assert!(before.is_empty(), "nothing replayed for a session that is not served: {before:#?}");
    let error = client.call_err("session/resume", load_params("stored-1")).await;
    assert_eq!(code(&error), -32603, "{error}");
    *host.reopen_as.lock().unwrap() = None;
    let impostors: Vec<_> = host.all_sessions().into_iter().filter(|s| s.id_str() == "impostor").collect();
    assert_eq!(impostors.len(), 2);
    for s in &impostors {
        assert_eq!(s.shutdown_count(), 1, "a session the facade will not serve is shut down");
    }
    assert_eq!(agent.live_sessions(), 0);

    // Its config cannot be read: the establishment fails and leaves nothing live.
    host.set_spec(SessionSpec { broken_config: true, ..SessionSpec::default() });
    for method in ["session/load", "session/resume"] {
        let error = client.call_err(method, load_params("stored-1")).await;
        assert_eq!(code(&error), -32603, "{method}: {error}");
        assert_eq!(agent.live_sessions(), 0, "{method}");
        let last = host.all_sessions().pop().unwrap();
        assert_eq!(last.shutdown_count(), 1, "{method}");
    }

    // And then it loads fine.
    host.set_spec(SessionSpec::default());
    client.call_ok("session/load", load_params("stored-1")).await;
    assert_eq!(agent.live_sessions(), 1);
    client.hang_up().await;
}
