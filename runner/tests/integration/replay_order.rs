//! The replay order of `session/load`, through the wire: a runner session of two turns — each a
//! thought, text and a tool call started in one step, the call finished and more text in a second
//! step — recorded on one connection and loaded on others. v1 replays it grouped by default (every question, then every
//! answer, then the tool calls) and turn by turn with `Options::replay_order(Conversation)`; both
//! replay the same updates with the same message ids, the usage and the latest plan last. v2's
//! `session/resume` with `replayFrom` replays turn by turn whatever the option says.

use std::sync::Arc;

use crate::common;

use acp_facade::acp::{Plan, PlanEntry, PlanEntryPriority, PlanEntryStatus, StopReason, ToolKind};
use acp_facade::agent::ReplayOrder;
use acp_facade::error::Error;
use acp_facade::harness::content::text_block;
use acp_facade_runner::{MemoryStore, Runner, Turn, TurnRunner};
use async_trait::async_trait;
use common::{TestClient, updates};
use serde_json::{Value, json};

/// Every prompt `q`: step one thinks, answers and starts looking `q` up; step two finishes the
/// tool call and says it is done; then the usage. The first prompt also sets a plan, the second
/// completes it.
struct Turns;

#[async_trait]
impl TurnRunner for Turns {
    async fn run_turn(&self, turn: &Turn) -> Result<StopReason, Error> {
        let q = turn.prompt_text();
        let status = if q == "q1" { PlanEntryStatus::InProgress } else { PlanEntryStatus::Completed };
        turn.plan(Plan::new(vec![PlanEntry::new("answer", PlanEntryPriority::High, status)])).await;
        turn.thought(format!("thinking about {q}")).await;
        turn.text(format!("answer to {q}")).await;
        let call = turn.start_tool_call(format!("look up {q}"), ToolKind::Search, json!({"q": q})).await;
        turn.end_step().await;
        turn.complete_tool_call(&call, vec![text_block(format!("found {q}"))]).await;
        turn.text(format!("{q} done")).await;
        turn.usage(if q == "q1" { 10 } else { 20 }, 100).await;
        Ok(StopReason::EndTurn)
    }
}

fn runner() -> Runner {
    Runner::new(Arc::new(MemoryStore::new()), Arc::new(Turns))
}

/// Records a session of the prompts `q1` and `q2` on a v1 connection; returns its id.
async fn recorded_v1(runner: &Runner) -> String {
    let mut client = TestClient::start_agent(runner.agent(runner.options()));
    client.initialize().await;
    let sid = client.new_session().await;
    for q in ["q1", "q2"] {
        let id = client.prompt(&sid, q).await;
        assert_eq!(client.response(&id).await["result"]["stopReason"], "end_turn");
    }
    client.hang_up().await;
    sid
}

/// The updates a fresh v1 connection of an agent with `order` receives before its
/// `session/load` of `sid` is answered (`None`: the option left at its default).
async fn loaded_v1(runner: &Runner, sid: &str, order: Option<ReplayOrder>) -> Vec<Value> {
    let options = match order {
        Some(order) => runner.options().replay_order(order),
        None => runner.options(),
    };
    let mut client = TestClient::start_agent(runner.agent(options));
    client.initialize().await;
    let id = client.send_request("session/load", json!({"sessionId": sid, "cwd": "/tmp", "mcpServers": []})).await;
    let (response, before) = client.response_with_preceding(&id).await;
    assert!(response["result"].is_object(), "{response}");
    assert_eq!(before.len(), updates(&before).len(), "only updates before the response: {before:#?}");
    client.hang_up().await;
    updates(&before)
}

/// One replayed update, compactly: its kind and its text, title or numbers (v1's and v2's forms).
fn describe(u: &Value) -> String {
    let kind = u["sessionUpdate"].as_str().unwrap();
    match kind {
        "user_message_chunk" | "agent_message_chunk" | "agent_thought_chunk" => {
            format!("{kind}:{}", u["content"]["text"].as_str().unwrap())
        }
        "tool_call" | "tool_call_update" => format!("{kind}:{}:{}", u["title"].as_str().unwrap(), u["status"]),
        "usage_update" => format!("usage_update:{}", u["used"]),
        "plan" => format!("plan:{}", u["entries"][0]["status"]),
        "plan_update" => format!("plan_update:{}", u["plan"]["entries"][0]["status"]),
        other => other.to_owned(),
    }
}

fn described(replay: &[Value]) -> Vec<String> {
    replay.iter().map(describe).collect()
}

const GROUPED: [&str; 12] = [
    "user_message_chunk:q1",
    "user_message_chunk:q2",
    "agent_thought_chunk:thinking about q1",
    "agent_message_chunk:answer to q1",
    "agent_message_chunk:q1 done",
    "agent_thought_chunk:thinking about q2",
    "agent_message_chunk:answer to q2",
    "agent_message_chunk:q2 done",
    "tool_call:look up q1:\"completed\"",
    "tool_call:look up q2:\"completed\"",
    "usage_update:20",
    "plan:\"completed\"",
];

const CONVERSATION: [&str; 12] = [
    "user_message_chunk:q1",
    "agent_thought_chunk:thinking about q1",
    "agent_message_chunk:answer to q1",
    "tool_call:look up q1:\"completed\"",
    "agent_message_chunk:q1 done",
    "user_message_chunk:q2",
    "agent_thought_chunk:thinking about q2",
    "agent_message_chunk:answer to q2",
    "tool_call:look up q2:\"completed\"",
    "agent_message_chunk:q2 done",
    "usage_update:20",
    "plan:\"completed\"",
];

#[tokio::test]
async fn v1_load_replays_grouped_by_default_and_when_asked() {
    let runner = runner();
    let sid = recorded_v1(&runner).await;
    assert_eq!(described(&loaded_v1(&runner, &sid, None).await), GROUPED);
    assert_eq!(described(&loaded_v1(&runner, &sid, Some(ReplayOrder::Grouped)).await), GROUPED);
}

#[tokio::test]
async fn v1_load_replays_turn_by_turn_in_conversation_order() {
    let runner = runner();
    let sid = recorded_v1(&runner).await;
    assert_eq!(described(&loaded_v1(&runner, &sid, Some(ReplayOrder::Conversation)).await), CONVERSATION);
}

#[tokio::test]
async fn both_orders_replay_the_same_updates_with_the_same_message_ids() {
    let runner = runner();
    let sid = recorded_v1(&runner).await;
    let sorted = |replay: Vec<Value>| {
        let mut lines: Vec<String> = replay.iter().map(|u| serde_json::to_string(u).unwrap()).collect();
        lines.sort();
        lines
    };
    let grouped = loaded_v1(&runner, &sid, Some(ReplayOrder::Grouped)).await;
    let conversation = loaded_v1(&runner, &sid, Some(ReplayOrder::Conversation)).await;
    assert_ne!(described(&grouped), described(&conversation), "the orders differ");
    assert_eq!(sorted(grouped.clone()), sorted(conversation.clone()), "the same updates, byte for byte");
    // Every message keeps one id of its own, the same in both orders and at every load.
    let ids = |replay: &[Value]| -> Vec<(String, String)> {
        let mut ids: Vec<(String, String)> =
            replay.iter().filter_map(|u| Some((describe(u), u.get("messageId")?.as_str()?.to_owned()))).collect();
        ids.sort();
        ids
    };
    assert_eq!(ids(&grouped).len(), 8);
    assert_eq!(ids(&grouped), ids(&conversation));
    assert_eq!(ids(&conversation), ids(&loaded_v1(&runner, &sid, Some(ReplayOrder::Conversation)).await));
    let thought = |replay: &[Value], q: &str| {
        let id =
            |text: String| replay.iter().find(|u| u["content"]["text"] == json!(text)).unwrap()["messageId"].clone();
        (id(format!("thinking about {q}")), id(format!("answer to {q}")), id(format!("{q} done")))
    };
    let (thinking, answer, done) = thought(&conversation, "q1");
    assert_eq!(thinking, answer, "a step's thought and text are one message");
    assert_ne!(answer, done, "two steps are two messages");
}

/// Records `q1` and `q2` on a v2 connection of an agent whose replay order is `order`, then
/// resumes the closed session with a replay from the start; returns the replayed updates (up to
/// `replay_complete`) and the user messages' acknowledged ids.
async fn resumed_v2(order: ReplayOrder) -> (Vec<Value>, Vec<Value>) {
    let runner = runner();
    let mut client = TestClient::start_agent(runner.agent(runner.options().protocol_v2(true).replay_order(order)));
    client.initialize_v2().await;
    let sid = client.call_ok("session/new", json!({"cwd": "/tmp"})).await["sessionId"].as_str().unwrap().to_owned();
    let mut acknowledged = Vec::new();
    for q in ["q1", "q2"] {
        let id = client.prompt(&sid, q).await;
        acknowledged.push(client.response(&id).await["result"]["messageId"].clone());
        // The turn, up to its idle state, consumed.
        while client.wait_for(|m| m["method"] == "session/update").await["params"]["update"]["state"] != "idle" {}
    }
    client.call_ok("session/close", json!({"sessionId": sid})).await;
    let params = json!({"sessionId": sid, "cwd": "/tmp", "replayFrom": {"type": "start"}});
    let id = client.send_request("session/resume", params).await;
    let (response, before) = client.response_with_preceding(&id).await;
    assert!(response["result"].is_object(), "{response}");
    let mut replayed = updates(&before);
    let end = replayed.iter().position(|u| u["sessionUpdate"] == "replay_complete").expect("replay_complete");
    assert_eq!(replayed[end + 1..], [json!({"sessionUpdate": "state_update", "state": "idle"})]);
    replayed.truncate(end);
    client.hang_up().await;
    (replayed, acknowledged)
}

#[tokio::test]
async fn v2_resume_replays_turn_by_turn_whatever_the_option() {
    let expected: Vec<String> = CONVERSATION
        .iter()
        .map(|line| line.replace("tool_call:", "tool_call_update:").replace("plan:", "plan_update:"))
        .collect();
    for order in [ReplayOrder::Grouped, ReplayOrder::Conversation] {
        let (replayed, acknowledged) = resumed_v2(order).await;
        assert_eq!(described(&replayed), expected, "{order}");
        // A user message keeps the id it was acknowledged with.
        let users: Vec<&Value> =
            replayed.iter().filter(|u| u["sessionUpdate"] == "user_message_chunk").map(|u| &u["messageId"]).collect();
        assert_eq!(users, acknowledged.iter().collect::<Vec<_>>(), "{order}");
    }
}
