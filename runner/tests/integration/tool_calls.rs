//! Tool calls, complete: a runner turn announces a call with every field (kind, title, status,
//! content of every kind — text and other blocks, `diff`, `terminal` — locations, raw input and
//! output), changes any subset of them, and finishes it; the journal keeps it as it ended;
//! `session/load` replays each finished call once, with its content but its terminals (the live
//! turn's, which a loading client does not have); no tool-call update ever
//! follows the prompt's response; and journals written before the full vocabulary still replay.

use crate::common;

use std::sync::Arc;

use acp_facade::Options;
use acp_facade::acp::{ContentBlock, ImageContent, StopReason, ToolCallStatus, ToolKind};
use acp_facade::error::Error;
use acp_facade::harness::content::text_block;
use acp_facade::harness::{AiMessage, Event, EventKind, Message, ToolCallId, ToolResultMessage};
use acp_facade_runner::{MemoryStore, Runner, SqliteStore, Store, Turn, TurnRunner};
use async_trait::async_trait;
use common::host::ScriptedHost;
use common::lifecycle::{History, RichHost, SessionSpec};
use common::{TestClient, updates};
use serde_json::{Value, json};

/// Turns that exercise the tool-call API:
///
/// | prompt | the turn |
/// |---|---|
/// | `edit` | one call with every field, updated field by field, completed with raw output |
/// | `shorthands` | the first API: `start_tool_call`, `tool_progress`, `complete_tool_call`, `fail_tool_call` |
/// | `span` | a call started in one step (closed by `usage`) and finished in the next |
struct ToolTurns;

#[async_trait]
impl TurnRunner for ToolTurns {
    async fn run_turn(&self, turn: &Turn) -> Result<StopReason, Error> {
        match turn.prompt_text().as_str() {
            "edit" => {
                let call = turn
                    .tool_call("edit /w/a.rs")
                    .kind(ToolKind::Edit)
                    .status(ToolCallStatus::InProgress)
                    .location("/w/a.rs", Some(1))
                    .diff("/w/a.rs", Some("old\n".into()), "new\n")
                    .text("editing")
                    .raw_input(json!({"path": "/w/a.rs"}))
                    .start()
                    .await;
                // Any subset of the fields, one change at a time.
                turn.tool_call_update(&call).title("edit /w/a.rs (2 hunks)").send().await;
                turn.tool_call_update(&call).location("/w/a.rs", Some(7)).location("/w/b.rs", None).send().await;
                turn.tool_call_update(&call)
                    .content(ContentBlock::Image(ImageContent::new("aGk=", "image/png")))
                    .diff("/w/b.rs", None, "created\n")
                    .content(acp_facade::acp::ToolCallContent::Terminal(acp_facade::acp::Terminal::new("term-1")))
                    .send()
                    .await;
                turn.tool_call_update(&call).kind(ToolKind::Move).raw_input(json!({"paths": 2})).send().await;
                turn.tool_call_update(&call).raw_output(json!({"ok": true})).complete().await;
                turn.text("edited").await;
            }
            "shorthands" => {
                let read = turn.start_tool_call("Read", ToolKind::Read, json!({"p": 1})).await;
                turn.tool_progress(&read, Some(ToolCallStatus::InProgress), Some(vec![text_block("reading")])).await;
                turn.complete_tool_call(&read, vec![text_block("read")]).await;
                let run = turn.start_tool_call("Run", ToolKind::Execute, Value::Null).await;
                turn.fail_tool_call(&run, Vec::new()).await;
            }
            "span" => {
                let call = turn.tool_call("long").kind(ToolKind::Fetch).start().await;
                turn.usage(10, 100).await;
                turn.tool_call_update(&call).text("fetched").complete().await;
            }
            other => turn.text(other.to_owned()).await,
        }
        Ok(StopReason::EndTurn)
    }
}

fn stores() -> Vec<(&'static str, Arc<dyn Store>)> {
    vec![
        ("memory", Arc::new(MemoryStore::new()) as Arc<dyn Store>),
        ("sqlite", Arc::new(SqliteStore::open(":memory:").unwrap()) as Arc<dyn Store>),
    ]
}

async fn client_of(runner: &Runner) -> TestClient {
    let mut client = TestClient::start_agent(runner.agent(runner.options()));
    client.initialize().await;
    client
}

async fn prompt(client: &mut TestClient, sid: &str, text: &str) -> Vec<Value> {
    let id = client.prompt(sid, text).await;
    let (response, before) = client.response_with_preceding(&id).await;
    assert_eq!(response["result"]["stopReason"], "end_turn", "{response}");
    updates(&before)
}

/// The tool-call updates among `updates`.
fn tool_updates(updates: &[Value]) -> Vec<Value> {
    updates
        .iter()
        .filter(|u| u["sessionUpdate"] == "tool_call" || u["sessionUpdate"] == "tool_call_update")
        .cloned()
        .collect()
}

fn edited_tool_call(id: &Value) -> Value {
    json!({
        "sessionUpdate": "tool_call",
        "toolCallId": id,
        "title": "edit /w/a.rs (2 hunks)",
        "kind": "move",
        "status": "completed",
        "content": [
            {"type": "content", "content": {"type": "image", "data": "aGk=", "mimeType": "image/png"}},
            {"type": "diff", "path": "/w/b.rs", "newText": "created\n"},
            {"type": "terminal", "terminalId": "term-1"},
        ],
        "locations": [{"path": "/w/a.rs", "line": 7}, {"path": "/w/b.rs"}],
        "rawInput": {"paths": 2},
        "rawOutput": {"ok": true},
    })
}

#[tokio::test]
async fn a_tool_call_carries_every_field_and_an_update_changes_any_subset() {
    let runner = Runner::new(Arc::new(MemoryStore::new()), Arc::new(ToolTurns));
    let mut client = client_of(&runner).await;
    let sid = client.new_session().await;
    let calls = tool_updates(&prompt(&mut client, &sid, "edit").await);
    let id = calls[0]["toolCallId"].clone();
    let expected = [
        json!({
            "sessionUpdate": "tool_call",
            "toolCallId": id,
            "title": "edit /w/a.rs",
            "kind": "edit",
            "status": "in_progress",
            "content": [
                {"type": "diff", "path": "/w/a.rs", "oldText": "old\n", "newText": "new\n"},
                {"type": "content", "content": {"type": "text", "text": "editing"}},
            ],
            "locations": [{"path": "/w/a.rs", "line": 1}],
            "rawInput": {"path": "/w/a.rs"},
        }),
        json!({"sessionUpdate": "tool_call_update", "toolCallId": id, "title": "edit /w/a.rs (2 hunks)"}),
        json!({
            "sessionUpdate": "tool_call_update",
            "toolCallId": id,
            "locations": [{"path": "/w/a.rs", "line": 7}, {"path": "/w/b.rs"}],
        }),
        json!({
            "sessionUpdate": "tool_call_update",
            "toolCallId": id,
            "content": edited_tool_call(&id)["content"],
        }),
        json!({"sessionUpdate": "tool_call_update", "toolCallId": id, "kind": "move", "rawInput": {"paths": 2}}),
        json!({"sessionUpdate": "tool_call_update", "toolCallId": id, "status": "completed", "rawOutput": {"ok": true}}),
    ];
    assert_eq!(calls, expected);
    client.hang_up().await;
}

#[tokio::test]
async fn the_first_tool_call_api_sends_what_it_always_sent() {
    let runner = Runner::new(Arc::new(MemoryStore::new()), Arc::new(ToolTurns));
    let mut client = client_of(&runner).await;
    let sid = client.new_session().await;
    let calls = tool_updates(&prompt(&mut client, &sid, "shorthands").await);
    let (read, run) = (calls[0]["toolCallId"].clone(), calls[3]["toolCallId"].clone());
    assert_eq!(
        calls,
        [
            json!({"sessionUpdate": "tool_call", "toolCallId": read, "title": "Read", "kind": "read", "rawInput": {"p": 1}}),
            json!({"sessionUpdate": "tool_call_update", "toolCallId": read, "status": "in_progress",
                   "content": [{"type": "content", "content": {"type": "text", "text": "reading"}}]}),
            json!({"sessionUpdate": "tool_call_update", "toolCallId": read, "status": "completed",
                   "content": [{"type": "content", "content": {"type": "text", "text": "read"}}]}),
            json!({"sessionUpdate": "tool_call", "toolCallId": run, "title": "Run", "kind": "execute"}),
            json!({"sessionUpdate": "tool_call_update", "toolCallId": run, "status": "failed"}),
        ]
    );
    client.hang_up().await;
}

#[tokio::test]
async fn load_replays_each_finished_tool_call_once_with_its_content() {
    for (name, store) in stores() {
        let runner = Runner::new(store.clone(), Arc::new(ToolTurns));
        let mut client = client_of(&runner).await;
        let sid = client.new_session().await;
        let live = tool_updates(&prompt(&mut client, &sid, "edit").await);
        let id = live[0]["toolCallId"].clone();
        let spanned = tool_updates(&prompt(&mut client, &sid, "span").await);
        let long = spanned[0]["toolCallId"].clone();
        let shorthands = tool_updates(&prompt(&mut client, &sid, "shorthands").await);
        client.hang_up().await;

        // The journal keeps each finished call as it ended.
        let journal = store.events(&acp_facade::acp::SessionId::new(sid.as_str())).await.unwrap();
        let results: Vec<&ToolResultMessage> = journal
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::StepDone { messages } => Some(messages),
                _ => None,
            })
            .flatten()
            .filter_map(|m| if let Message::ToolResult(r) = m { Some(r) } else { None })
            .collect();
        assert_eq!(results.len(), 4, "{name}: {results:#?}");
        assert_eq!(results[0].changes.raw_output, Some(json!({"ok": true})), "{name}");
        assert_eq!(results[0].output.len(), 3, "{name}");

        // The terminal the call embedded was the live turn's; the replay leaves it out, and
        // keeps the rest of the content (the journal above still holds all three items).
        let mut edited = edited_tool_call(&id);
        edited["content"].as_array_mut().expect("content").retain(|c| c["type"] != "terminal");
        assert_eq!(edited["content"].as_array().map(Vec::len), Some(2));

        // Twice, on two connections: the same replay, one `tool_call` per finished call.
        for round in 0..2 {
            let mut client = client_of(&runner).await;
            let id_load =
                client.send_request("session/load", json!({"sessionId": sid, "cwd": "/tmp", "mcpServers": []})).await;
            let (response, before) = client.response_with_preceding(&id_load).await;
            assert!(response.get("result").is_some(), "{name}: {response}");
            let replayed = tool_updates(&updates(&before));
            let read = shorthands[0]["toolCallId"].clone();
            let run = shorthands[3]["toolCallId"].clone();
            assert_eq!(
                replayed,
                [
                    edited.clone(),
                    json!({"sessionUpdate": "tool_call", "toolCallId": long, "title": "long", "kind": "fetch",
                           "status": "completed", "content": [{"type": "content", "content": {"type": "text", "text": "fetched"}}]}),
                    json!({"sessionUpdate": "tool_call", "toolCallId": read, "title": "Read", "kind": "read",
                           "status": "completed", "content": [{"type": "content", "content": {"type": "text", "text": "read"}}],
                           "rawInput": {"p": 1}}),
                    json!({"sessionUpdate": "tool_call", "toolCallId": run, "title": "Run", "kind": "execute",
                           "status": "failed"}),
                ],
                "{name}, round {round}"
            );
            client.hang_up().await;
        }
    }
}

#[tokio::test]
async fn a_call_finished_twice_and_a_journal_of_bare_blocks_replay_once() {
    let at = ("l1", "t1");
    let mut h = History::new();
    h.durable(at, EventKind::TurnStarted { message: acp_facade::harness::UserMessage::default() });
    // Written the way journals were before the full vocabulary (output as bare content blocks).
    let old: Event = serde_json::from_value(json!({
        "header": {"id": "e-old", "seq": 1, "class": "enduring", "visibility": "public",
                   "coordinates": {"loop_id": "l1", "turn_id": "t1"}},
        "kind": {"type": "step_done", "messages": [
            {"role": "ai", "content": [], "tool_calls": [{"call_id": "c1", "name": "Grep", "kind": "search", "input": {"q": "x"}}]},
            {"role": "tool_result", "call_id": "c1", "output": [{"type": "text", "text": "first"}], "is_error": false},
        ]},
    }))
    .expect("an old journal entry decodes");
    h.push(old.kind, old.header.class, old.header.visibility, None, at);
    // The same call's result again, later: replayed once, with the last result, in its place.
    let mut again = ToolResultMessage::new(ToolCallId::new("c1"), vec![text_block("second").into()], true);
    again.changes.raw_output = Some(json!(3));
    h.durable(at, EventKind::StepDone { messages: vec![Message::ToolResult(again)] });
    h.durable(
        at,
        EventKind::StepDone {
            messages: vec![Message::Ai(AiMessage { content: vec![text_block("done")], ..AiMessage::default() })],
        },
    );
    let host = RichHost::new(SessionSpec::default());
    host.store("stored", h.build());
    let mut client = TestClient::initialized(Options::new(host.clone()).loader(host.clone())).await;
    let id = client.send_request("session/load", json!({"sessionId": "stored", "cwd": "/tmp", "mcpServers": []})).await;
    let (_, before) = client.response_with_preceding(&id).await;
    assert_eq!(
        tool_updates(&updates(&before)),
        [
            json!({"sessionUpdate": "tool_call", "toolCallId": "c1", "title": "Grep", "kind": "search", "status": "failed",
                "content": [{"type": "content", "content": {"type": "text", "text": "second"}}],
                "rawInput": {"q": "x"}, "rawOutput": 3})
        ]
    );
    client.hang_up().await;
}

#[tokio::test]
async fn no_tool_call_update_follows_the_prompts_response() {
    let host = ScriptedHost::new();
    let mut client = TestClient::initialized(Options::new(host.clone())).await;
    let sid = client.new_session().await;
    let s = host.session(&sid);
    for round in 0..3 {
        let turn = format!("t{round}");
        let at = ("l", turn.as_str());
        let id = client.prompt(&sid, "go").await;
        let (command, _) = s.next_submit().await;
        s.start_turn(&command, at);
        s.live(at, EventKind::tool_call_started(format!("c{round}"), "t", ToolKind::Other, Value::Null));
        s.live(at, EventKind::tool_call_progress(format!("c{round}"), Some(ToolCallStatus::InProgress), None));
        s.durable(at, EventKind::TurnDone { message: None, stop: None });
        // A host that goes on after its turn ended: nothing of it may reach the client.
        s.live(at, EventKind::tool_call_completed(format!("c{round}"), vec![text_block("late").into()], false));
        let (response, before) = client.response_with_preceding(&id).await;
        assert_eq!(response["result"]["stopReason"], "end_turn");
        assert_eq!(tool_updates(&updates(&before)).len(), 2, "{before:#?}");
    }
    let transcript = client.hang_up_transcript().await;
    let last_response = transcript.iter().rposition(|m| m.pointer("/result/stopReason").is_some()).unwrap();
    let after: Vec<&Value> = transcript[last_response..].iter().filter(|m| m["method"] == "session/update").collect();
    assert!(after.is_empty(), "{after:#?}");
    assert!(!transcript.iter().any(|m| m.pointer("/params/update/content/0/content/text") == Some(&json!("late"))));
}

#[tokio::test]
async fn a_host_sends_the_whole_vocabulary_through_its_events() {
    let host = ScriptedHost::new();
    let mut client = TestClient::initialized(Options::new(host.clone())).await;
    let sid = client.new_session().await;
    let s = host.session(&sid);
    let id = client.prompt(&sid, "go").await;
    let (command, _) = s.next_submit().await;
    let at = ("l", "t");
    s.start_turn(&command, at);
    // Events in their serde form, as a binding's host writes them.
    let started: EventKind = serde_json::from_value(json!({
        "type": "tool_call_started", "call_id": "c", "name": "Edit", "kind": "edit", "input": null,
        "status": "in_progress", "locations": [{"path": "/w/x"}],
        "content": [{"type": "diff", "path": "/w/x", "newText": "n"}, {"type": "text", "text": "plain"}],
    }))
    .unwrap();
    let progress: EventKind = serde_json::from_value(json!({
        "type": "tool_call_progress", "call_id": "c", "status": null, "content": null, "title": "Edit x",
    }))
    .unwrap();
    s.live(at, started);
    s.live(at, progress);
    s.durable(at, EventKind::TurnDone { message: None, stop: None });
    let (_, before) = client.response_with_preceding(&id).await;
    assert_eq!(
        tool_updates(&updates(&before)),
        [
            json!({"sessionUpdate": "tool_call", "toolCallId": "c", "title": "Edit", "kind": "edit", "status": "in_progress",
                   "content": [{"type": "diff", "path": "/w/x", "newText": "n"},
                               {"type": "content", "content": {"type": "text", "text": "plain"}}],
                   "locations": [{"path": "/w/x"}]}),
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "c", "title": "Edit x"}),
        ]
    );
    client.hang_up().await;
}
