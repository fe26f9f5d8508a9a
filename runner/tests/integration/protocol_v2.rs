//! ACP v2 (Preview) from the same host code, through the wire: which version a connection gets,
//! the v2 prompt lifecycle (acknowledged, then `user_message`, `running`, the turn, `idle` with the
//! stop reason — nothing of the turn after it), failures and cancellation as stop reasons,
//! `session/resume` with a replay, `auth/login`, a client handle without file system or terminals,
//! and a v1 client of a v2-enabled agent seeing exactly what it saw before. Every message is
//! validated against the schema of the version its connection speaks.

use std::sync::Arc;

use crate::common;

use acp_facade::acp::{StopReason, ToolKind};
use acp_facade::client::ClientError;
use acp_facade::error::Error;
use acp_facade::harness::ApprovalAction;
use acp_facade_runner::{MemoryStore, Runner, Turn, TurnRunner};
use async_trait::async_trait;
use common::{TestClient, updates};
use serde_json::{Value, json};

/// `hello` → text `hi ` `there`; `fail` → an error; `wait` → until cancelled; `tool` → a tool
/// call asking permission; `read` → `fs/read_text_file` through the client handle, its outcome
/// as text; `plan` → a whole plan.
struct Turns;

#[async_trait]
impl TurnRunner for Turns {
    async fn run_turn(&self, turn: &Turn) -> Result<StopReason, Error> {
        match turn.prompt_text().as_str() {
            "fail" => return Err(acp_facade::error::ErrorExt::internal_msg("it broke")),
            "wait" => {
                turn.cancelled().await;
                return Ok(StopReason::Cancelled);
            }
            "tool" => {
                let call = turn.tool_call("Run ls").name("ls").kind(ToolKind::Execute).start().await;
                let answer = turn.request_permission(&call, "Run ls?", &[ApprovalAction::Approve]).await;
                turn.tool_call_update(&call).complete().await;
                turn.text(format!("{answer:?}")).await;
            }
            "read" => {
                let outcome = turn.client().read_text_file(std::path::Path::new("/tmp/x"), None, None).await;
                turn.text(match outcome {
                    Err(ClientError::Unsupported { .. }) => "unsupported".to_owned(),
                    other => format!("{other:?}"),
                })
                .await;
            }
            "plan" => {
                turn.plan(acp_facade::acp::Plan::new(Vec::new())).await;
            }
            "ask" => {
                let answer = turn.ask_user("Your name?").await;
                turn.text(format!("{answer:?}")).await;
            }
            _ => {
                turn.text("hi ").await;
                turn.text("there").await;
            }
        }
        turn.usage(1, 10).await;
        Ok(StopReason::EndTurn)
    }
}

fn runner() -> Runner {
    Runner::new(Arc::new(MemoryStore::new()), Arc::new(Turns))
}

async fn v2_client(runner: &Runner) -> (TestClient, String) {
    let mut client = TestClient::start_agent(runner.agent(runner.options().protocol_v2(true)));
    client.initialize_v2().await;
    let sid = client.call_ok("session/new", json!({"cwd": "/tmp"})).await["sessionId"].as_str().unwrap().to_owned();
    (client, sid)
}

/// Prompts `text`; returns the acknowledgement's result and the session's updates up to and
/// including the idle state.
async fn v2_turn(client: &mut TestClient, sid: &str, text: &str) -> (Value, Vec<Value>) {
    let id = client.prompt(sid, text).await;
    let (ack, before) = client.response_with_preceding(&id).await;
    assert!(updates(&before).is_empty(), "nothing of the turn before its acknowledgement: {before:?}");
    let mut seen = Vec::new();
    loop {
        let message = client.wait_for(|m| m["method"] == "session/update").await;
        let update = message["params"]["update"].clone();
        let idle = update["sessionUpdate"] == "state_update" && update["state"] == "idle";
        seen.push(update);
        if idle {
            return (ack["result"].clone(), seen);
        }
    }
}

#[tokio::test]
async fn a_client_asking_for_2_gets_it_only_from_an_agent_that_enables_v2_and_has_its_baseline() {
    let runner = runner();
    let ask = json!({"protocolVersion": 2, "info": {"name": "t", "version": "1"}, "capabilities": {}});
    let mut off = TestClient::start_agent(runner.agent(runner.options()));
    assert_eq!(off.call_ok("initialize", ask.clone()).await["protocolVersion"], 1);
    let mut on = TestClient::start_agent(runner.agent(runner.options().protocol_v2(true)));
    let result = on.call_ok("initialize", ask.clone()).await;
    assert_eq!(result["protocolVersion"], 2);
    assert_eq!(result["info"]["name"], "acp-facade");
    assert_eq!(result["capabilities"]["session"]["mcp"], json!({"stdio": {}}));
    assert!(result.get("agentCapabilities").is_none());
    // A repeat, whatever it asks, is answered as the first was.
    assert_eq!(on.call_ok("initialize", json!({"protocolVersion": 1, "clientCapabilities": {}})).await, result);
    // Without `session/list`, v2's baseline is missing: answered 1.
    let options = runner.options().protocol_v2(true);
    let host = Arc::new(runner.clone());
    let bare = acp_facade::Options::new(host).resumer(options.resumer.clone().unwrap()).protocol_v2(true);
    let mut bare = TestClient::start_agent(runner.agent(bare));
    assert_eq!(bare.call_ok("initialize", ask).await["protocolVersion"], 1);
}

#[tokio::test]
async fn a_prompt_is_acknowledged_then_its_turn_runs_and_ends_idle_with_nothing_after() {
    let runner = runner();
    let (mut client, sid) = v2_client(&runner).await;
    let (ack, seen) = v2_turn(&mut client, &sid, "hello").await;
    let message_id = ack["messageId"].as_str().expect("the user message's id").to_owned();
    assert_eq!(
        seen[0],
        json!({"sessionUpdate": "user_message", "messageId": message_id, "content": [{"type": "text", "text": "hello"}]})
    );
    assert_eq!(seen[1], json!({"sessionUpdate": "state_update", "state": "running"}));
    let chunks: Vec<&Value> = seen.iter().filter(|u| u["sessionUpdate"] == "agent_message_chunk").collect();
    assert_eq!(chunks.len(), 2);
    assert!(chunks.iter().all(|c| c["messageId"] == chunks[0]["messageId"] && c["messageId"] != json!(message_id)));
    assert_eq!(
        seen.last().unwrap(),
        &json!({"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"})
    );
    // The next prompt's messages are new ones.
    let (second, seen) = v2_turn(&mut client, &sid, "hello").await;
    assert_ne!(second["messageId"], ack["messageId"]);
    let chunk = seen.iter().find(|u| u["sessionUpdate"] == "agent_message_chunk").unwrap();
    assert_ne!(chunk["messageId"], chunks[0]["messageId"]);
    // Every request got exactly one response, nothing came after the turn's end.
    let transcript = client.hang_up_transcript().await;
    let idle_at = transcript.iter().rposition(|m| m.pointer("/params/update/state") == Some(&json!("idle"))).unwrap();
    assert!(transcript[idle_at + 1..].iter().all(|m| m.get("method").is_none()), "{:?}", &transcript[idle_at..]);
}

#[tokio::test]
async fn a_failed_turn_ends_idle_error_and_a_cancelled_one_idle_cancelled() {
    let runner = runner();
    let (mut client, sid) = v2_client(&runner).await;
    let (ack, seen) = v2_turn(&mut client, &sid, "fail").await;
    assert!(ack["messageId"].is_string());
    assert_eq!(seen.last().unwrap()["stopReason"], "error");
    let id = client.prompt(&sid, "wait").await;
    client.response(&id).await;
    client.wait_for(|m| m.pointer("/params/update/state") == Some(&json!("running"))).await;
    client.notify("session/cancel", json!({"sessionId": sid})).await;
    let idle = client.wait_for(|m| m.pointer("/params/update/state") == Some(&json!("idle"))).await;
    assert_eq!(idle["params"]["update"]["stopReason"], "cancelled");
}

#[tokio::test]
async fn tools_plans_and_the_client_handle_speak_v2() {
    let runner = runner();
    let (mut client, sid) = v2_client(&runner).await;
    let id = client.prompt(&sid, "tool").await;
    client.response(&id).await;
    let asked = client.wait_for(|m| m["method"] == "session/request_permission").await;
    assert_eq!(asked["params"]["title"], "Run ls?", "the gate's prompt copy");
    assert_eq!(asked["params"]["subject"]["type"], "tool_call");
    assert_eq!(asked["params"]["subject"]["toolCall"]["name"], "ls");
    client.respond(&asked["id"], json!({"outcome": {"outcome": "selected", "optionId": "allow_once"}})).await;
    client.wait_for(|m| m.pointer("/params/update/state") == Some(&json!("idle"))).await;
    let states: Vec<Value> = client
        .take_backlog()
        .iter()
        .chain(std::iter::once(&asked))
        .filter_map(|m| m.pointer("/params/update/state").cloned())
        .collect();
    assert!(states.contains(&json!("requires_action")), "waiting for the user is `requires_action`: {states:?}");
    let (_, seen) = v2_turn(&mut client, &sid, "plan").await;
    assert!(seen.iter().any(|u| u["sessionUpdate"] == "plan_update" && u["plan"]["planId"] == "plan"));
    let (_, seen) = v2_turn(&mut client, &sid, "read").await;
    let chunk = seen.iter().find(|u| u["sessionUpdate"] == "agent_message_chunk").unwrap();
    assert_eq!(chunk["content"]["text"], "unsupported", "v2 has no client file system");
}

#[tokio::test]
async fn a_v2_client_with_form_elicitation_is_asked_in_v2s_form() {
    let runner = runner();
    let mut client = TestClient::start_agent(runner.agent(runner.options().protocol_v2(true)));
    let ask = json!({"protocolVersion": 2, "info": {"name": "t", "version": "1"}, "capabilities": {"elicitation": {"form": {}}}});
    assert_eq!(client.call_ok("initialize", ask).await["protocolVersion"], 2);
    let sid = client.call_ok("session/new", json!({"cwd": "/tmp"})).await["sessionId"].as_str().unwrap().to_owned();
    let id = client.prompt(&sid, "ask").await;
    client.response(&id).await;
    let asked = client.wait_for(|m| m["method"] == "elicitation/create").await;
    assert_eq!(asked["params"]["mode"], "form");
    client.respond(&asked["id"], json!({"action": {"action": "accept", "content": {"answer": "Ada"}}})).await;
    let idle = client.wait_for(|m| m.pointer("/params/update/state") == Some(&json!("idle"))).await;
    assert_eq!(idle["params"]["update"]["stopReason"], "end_turn");
}

#[tokio::test]
async fn resume_with_a_replay_replays_then_marks_its_end_and_without_one_replays_nothing() {
    let runner = runner();
    let (mut client, sid) = v2_client(&runner).await;
    v2_turn(&mut client, &sid, "hello").await;
    client.call_ok("session/close", json!({"sessionId": sid})).await;
    let id = client
        .send_request("session/resume", json!({"sessionId": sid, "cwd": "/tmp", "replayFrom": {"type": "start"}}))
        .await;
    let (response, before) = client.response_with_preceding(&id).await;
    assert!(response["result"].is_object() && response["result"].get("modes").is_none(), "{response}");
    let replayed = updates(&before);
    assert_eq!(replayed.last().unwrap(), &json!({"sessionUpdate": "replay_complete"}));
    let texts: Vec<&str> = replayed
        .iter()
        .filter(|u| u["sessionUpdate"] == "agent_message_chunk")
        .map(|u| u["content"]["text"].as_str().unwrap())
        .collect();
    assert_eq!(texts, ["hi there"]);
    client.call_ok("session/close", json!({"sessionId": sid})).await;
    let id = client.send_request("session/resume", json!({"sessionId": sid, "cwd": "/tmp"})).await;
    let (_, before) = client.response_with_preceding(&id).await;
    assert!(updates(&before).is_empty(), "{before:?}");
    let error = client.call_err("session/load", json!({"sessionId": sid, "cwd": "/tmp", "mcpServers": []})).await;
    assert_eq!(common::code(&error), -32601, "v2 has no session/load");
}

#[tokio::test]
async fn a_v1_client_of_a_v2_enabled_agent_sees_exactly_what_it_saw_before() {
    async fn transcript(v2: bool) -> Vec<Value> {
        let runner = runner();
        let mut client = TestClient::start_agent(runner.agent(runner.options().protocol_v2(v2)));
        client.initialize().await;
        let sid = client.new_session().await;
        for text in ["hello", "plan", "fail"] {
            let id = client.prompt(&sid, text).await;
            client.response(&id).await;
        }
        let mut transcript = client.hang_up_transcript().await;
        // Session ids and times differ from run to run.
        for message in &mut transcript {
            if let Some(params) = message.get_mut("params").and_then(Value::as_object_mut) {
                params.remove("sessionId");
                if let Some(update) = params.get_mut("update").and_then(Value::as_object_mut) {
                    update.remove("updatedAt");
                }
            }
            if let Some(result) = message.get_mut("result").and_then(Value::as_object_mut) {
                result.remove("sessionId");
            }
        }
        transcript
    }
    assert_eq!(transcript(true).await, transcript(false).await);
}
