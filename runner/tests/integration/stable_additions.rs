//! The stable v1 additions of schema 1.20, driven through the wire with clients that advertise
//! each capability and clients that do not: a turn calls the same methods either way; the client
//! that advertised gets the new updates, the other gets what it understands (a whole `plan`) or
//! nothing, and the turn learns which. `session/load` replays what was journaled, gated the same
//! way.

use std::sync::Arc;

use crate::common;

use acp_facade::acp::{Notice, NoticeSeverity, PlanEntry, PlanEntryPriority, PlanEntryStatus, StopReason, ToolKind};
use acp_facade::error::Error;
use acp_facade::harness::ApprovalAction;
use acp_facade_runner::{MemoryStore, Permission, Runner, RunnerSession, Turn, TurnRunner};
use async_trait::async_trait;
use common::{TestClient, updates};
use serde_json::{Value, json};

/// Every client capability that gates one of the additions.
fn everything() -> Value {
    json!({"session": {"notices": {}, "compaction": {}}, "subagents": {}, "plan": {}})
}

/// Turns that use the additions. The prompt's first word picks the turn:
///
/// | prompt | the turn |
/// |---|---|
/// | `notice` | a notice; text `shown` or `not shown` (what `notice` returned) |
/// | `plans` | plan `a` (2 entries), plan `b`, plan `a` again with its first step done, plan `b` removed |
/// | `subagent` | a child that is sent `hi` and replies `hello there` in two chunks, then idles |
/// | `tool` | a tool call titled `Run grep` named `grep`, asking permission, completed |
/// | anything else | text `ok` |
///
/// `/compact` succeeds with the summary `short` (or fails with `no room` when `fail_compaction`).
#[derive(Default)]
struct Additions {
    fail_compaction: bool,
}

fn entries(done: usize) -> Vec<PlanEntry> {
    (1..=2)
        .map(|i| {
            let status = if i <= done { PlanEntryStatus::Completed } else { PlanEntryStatus::Pending };
            PlanEntry::new(format!("step {i}"), PlanEntryPriority::Medium, status)
        })
        .collect()
}

#[async_trait]
impl TurnRunner for Additions {
    async fn run_turn(&self, turn: &Turn) -> Result<StopReason, Error> {
        match turn.prompt_text().as_str() {
            "notice" => {
                let shown = turn.notice(Notice::new(NoticeSeverity::Warning, "disk almost full")).await;
                turn.text(if shown { "shown" } else { "not shown" }).await;
            }
            "plans" => {
                turn.update_plan("a", entries(0)).await;
                turn.update_plan_markdown("b", "# B\n- one").await;
                turn.update_plan("a", entries(1)).await;
                turn.remove_plan("b").await;
            }
            "subagent" => {
                let child = turn.start_subagent("helper").await;
                child.send("hi").await;
                child.reply(["hello ", "there"]).await;
                child.finish(StopReason::EndTurn).await;
            }
            "tool" => {
                let call = turn.tool_call("Run grep").name("grep").kind(ToolKind::Search).start().await;
                let answer = turn.request_permission(&call, "Run grep", &[ApprovalAction::Approve]).await;
                assert_eq!(answer, Permission::Allowed);
                turn.tool_call_update(&call).complete().await;
            }
            _ => turn.text("ok").await,
        }
        turn.usage(1, 10).await;
        Ok(StopReason::EndTurn)
    }

    fn supports_compaction(&self) -> bool {
        true
    }

    async fn compact(&self, _session: &RunnerSession) -> Result<Option<String>, Error> {
        if self.fail_compaction {
            return Err(acp_facade::error::ErrorExt::internal_msg("no room"));
        }
        Ok(Some("short".to_owned()))
    }
}

async fn connect(turns: Additions, capabilities: Value) -> (TestClient, String) {
    let runner = Runner::new(Arc::new(MemoryStore::new()), Arc::new(turns));
    let mut client = TestClient::start_agent(runner.agent(runner.options()));
    client.initialize_with(capabilities).await;
    let sid = client.new_session().await;
    (client, sid)
}

/// The updates before the response to `prompt`, and the response.
async fn turn(client: &mut TestClient, sid: &str, prompt: &str) -> (Value, Vec<Value>) {
    let id = client.prompt(sid, prompt).await;
    let (response, before) = client.response_with_preceding(&id).await;
    (response, updates(&before))
}

fn of_kind<'a>(updates: &'a [Value], kind: &str) -> Vec<&'a Value> {
    updates.iter().filter(|u| u["sessionUpdate"] == kind).collect()
}

fn is_exchange(update: &Value) -> bool {
    ["subagent_update", "session_message", "session_message_chunk"]
        .contains(&update["sessionUpdate"].as_str().unwrap_or(""))
}

fn kinds(updates: &[Value]) -> Vec<String> {
    updates.iter().map(|u| u["sessionUpdate"].as_str().unwrap_or_default().to_owned()).collect()
}

/// Closes `sid` and loads it again; returns the replayed updates.
async fn reload(client: &mut TestClient, sid: &str) -> Vec<Value> {
    client.call_ok("session/close", json!({"sessionId": sid})).await;
    let id = client.send_request("session/load", json!({"sessionId": sid, "cwd": "/tmp", "mcpServers": []})).await;
    let (response, before) = client.response_with_preceding(&id).await;
    assert!(response.get("result").is_some(), "load failed: {response}");
    updates(&before)
}

#[tokio::test]
async fn a_notice_reaches_only_a_client_that_advertised_notices_and_the_turn_knows() {
    let (mut client, sid) = connect(Additions::default(), everything()).await;
    let (_, seen) = turn(&mut client, &sid, "notice").await;
    assert_eq!(
        of_kind(&seen, "notice"),
        [&json!({"sessionUpdate": "notice", "severity": "warning", "title": "disk almost full"})]
    );
    assert_eq!(common::chunk_texts(&seen, "agent_message_chunk"), ["shown"]);
    // Notices are not history: a load does not replay them.
    assert!(of_kind(&reload(&mut client, &sid).await, "notice").is_empty());

    let (mut client, sid) = client_without(json!({"session": {"compaction": {}}})).await;
    let (_, seen) = turn(&mut client, &sid, "notice").await;
    assert!(of_kind(&seen, "notice").is_empty());
    assert_eq!(common::chunk_texts(&seen, "agent_message_chunk"), ["not shown"]);
}

async fn client_without(capabilities: Value) -> (TestClient, String) {
    connect(Additions::default(), capabilities).await
}

#[tokio::test]
async fn plans_with_ids_are_upserts_for_a_client_with_plan_operations_and_whole_plans_otherwise() {
    let (mut client, sid) = connect(Additions::default(), everything()).await;
    let (_, seen) = turn(&mut client, &sid, "plans").await;
    assert_eq!(kinds(&seen)[..4], ["plan_update", "plan_update", "plan_update", "plan_removed"]);
    assert_eq!(seen[1]["plan"], json!({"type": "markdown", "planId": "b", "content": "# B\n- one"}));
    assert_eq!(seen[2]["plan"]["planId"], "a");
    assert_eq!(seen[2]["plan"]["entries"][0]["status"], "completed");
    assert_eq!(seen[3], json!({"sessionUpdate": "plan_removed", "planId": "b"}));
    // The replay: each remaining plan's latest form, once.
    let replayed = reload(&mut client, &sid).await;
    let plans = of_kind(&replayed, "plan_update");
    assert_eq!(plans.len(), 1, "{replayed:?}");
    assert_eq!(plans[0]["plan"]["entries"][0]["status"], "completed");
    assert!(of_kind(&replayed, "plan").is_empty());

    let (mut client, sid) = client_without(json!({})).await;
    let (_, seen) = turn(&mut client, &sid, "plans").await;
    assert_eq!(kinds(&seen)[..4], ["plan", "plan", "plan", "plan"]);
    assert_eq!(seen[0]["entries"].as_array().unwrap().len(), 2);
    assert_eq!(seen[1]["entries"], json!([]), "a Markdown plan has no entries");
    assert_eq!(seen[2]["entries"][0]["status"], "completed");
    assert_eq!(seen[3]["entries"], json!([]), "a removal empties the plan");
    // The replay: the latest plan, which is empty, so none.
    assert!(of_kind(&reload(&mut client, &sid).await, "plan").is_empty());
}

#[tokio::test]
async fn a_subagent_exchange_reaches_a_client_with_subagents_and_is_replayed_on_load() {
    let (mut client, sid) = connect(Additions::default(), everything()).await;
    let (response, seen) = turn(&mut client, &sid, "subagent").await;
    assert_eq!(response["result"]["stopReason"], "end_turn");
    let exchange: Vec<Value> = seen.iter().filter(|u| is_exchange(u)).cloned().collect();
    assert_eq!(
        kinds(&exchange),
        [
            "subagent_update",
            "session_message",
            "session_message",
            "session_message_chunk",
            "session_message_chunk",
            "subagent_update"
        ]
    );
    let child = exchange[0]["sessionId"].clone();
    assert_eq!(exchange[0]["title"], "helper");
    assert_ne!(child, json!(sid));
    let messages = of_kind(&exchange, "session_message");
    assert_eq!(messages[0]["senderSessionId"], json!(sid));
    assert_eq!(messages[0]["recipientSessionId"], child);
    assert_eq!(messages[0]["content"], json!([{"type": "text", "text": "hi"}]));
    assert_eq!(messages[1]["senderSessionId"], child);
    let reply: Vec<&Value> = of_kind(&exchange, "session_message_chunk");
    assert!(reply.iter().all(|c| c["messageId"] == messages[1]["messageId"]));
    assert_eq!(reply.iter().map(|c| c["content"]["text"].as_str().unwrap()).collect::<String>(), "hello there");
    let last = of_kind(&exchange, "subagent_update")[1];
    assert_eq!(last["state"], json!({"state": "idle", "stopReason": "end_turn"}));

    let replayed = reload(&mut client, &sid).await;
    let replayed_exchange: Vec<Value> = replayed.into_iter().filter(is_exchange).collect();
    assert_eq!(replayed_exchange, exchange, "load replays the exchange as it was sent");

    let (mut client, sid) = client_without(json!({"plan": {}})).await;
    let (_, seen) = turn(&mut client, &sid, "subagent").await;
    for kind in ["subagent_update", "session_message", "session_message_chunk"] {
        assert!(of_kind(&seen, kind).is_empty(), "{kind} sent to a client without subagents");
    }
    let replayed = reload(&mut client, &sid).await;
    assert!(of_kind(&replayed, "session_message").is_empty());
}

#[tokio::test]
async fn compaction_is_reported_to_a_client_that_opted_in_before_the_response() {
    let (mut client, sid) = connect(Additions::default(), everything()).await;
    let (response, seen) = turn(&mut client, &sid, "/compact").await;
    assert_eq!(response["result"]["stopReason"], "end_turn");
    let reports: Vec<&Value> =
        seen.iter().filter(|u| u["sessionUpdate"].as_str().unwrap().starts_with("compaction")).collect();
    let id = reports[0]["compactionId"].clone();
    assert_eq!(
        reports,
        [
            &json!({"sessionUpdate": "compaction_update", "compactionId": id, "status": "in_progress"}),
            &json!({"sessionUpdate": "compaction_summary_chunk", "compactionId": id, "content": {"type": "text", "text": "short"}}),
            &json!({"sessionUpdate": "compaction_update", "compactionId": id, "status": "completed"}),
        ]
    );

    let (mut client, sid) = connect(Additions { fail_compaction: true }, everything()).await;
    let (response, seen) = turn(&mut client, &sid, "/compact").await;
    assert_eq!(common::code(&response["error"]), -32603);
    let failed = of_kind(&seen, "compaction_update");
    assert_eq!(failed.last().unwrap()["status"], "failed");
    assert_eq!(failed.last().unwrap()["error"], "no room");

    let (mut client, sid) = client_without(json!({"session": {"notices": {}}})).await;
    let (response, seen) = turn(&mut client, &sid, "/compact").await;
    assert_eq!(response["result"]["stopReason"], "end_turn");
    assert!(seen.iter().all(|u| !u["sessionUpdate"].as_str().unwrap().starts_with("compaction")), "{seen:?}");
}

#[tokio::test]
async fn a_tool_calls_name_is_sent_with_its_title_in_the_call_the_permission_request_and_the_replay() {
    let (mut client, sid) = connect(Additions::default(), json!({})).await;
    let id = client.prompt(&sid, "tool").await;
    let request = client.wait_for(|v| v["method"] == "session/request_permission").await;
    assert_eq!(request["params"]["toolCall"]["name"], "grep");
    client.respond(&request["id"], json!({"outcome": {"outcome": "selected", "optionId": "allow_once"}})).await;
    let (_, before) = client.response_with_preceding(&id).await;
    let seen = updates(&before);
    let announced = of_kind(&seen, "tool_call")[0];
    assert_eq!((announced["title"].as_str(), announced["name"].as_str()), (Some("Run grep"), Some("grep")));
    let replayed = reload(&mut client, &sid).await;
    let call = of_kind(&replayed, "tool_call")[0];
    assert_eq!((call["title"].as_str(), call["name"].as_str()), (Some("Run grep"), Some("grep")));
    assert_eq!(call["status"], "completed");
}
