//! Plans: a turn's `plan` updates stream live, whole each time, before the prompt's response;
//! nothing a turn publishes after its terminal event reaches the client (the invariant holds for
//! every new update kind: plans, usage with cost, session info, the response's `_meta`);
//! `session/load` replays the session's latest plan once, after the four buckets, and no empty
//! one.

use crate::common;

use acp_facade::Options;
use acp_facade::acp::{Cost, Meta, Plan};
use acp_facade::harness::content::text_block;
use acp_facade::harness::{AiMessage, EventKind, Message, UserMessage};
use common::host::ScriptedHost;
use common::lifecycle::{History, RichHost, SessionSpec, update_kinds};
use common::rich::{plan, rich_client, rich_runner};
use common::{TestClient, assert_serving, updates};
use serde_json::{Value, json};

fn statuses(update: &Value) -> Vec<String> {
    update["entries"].as_array().unwrap().iter().map(|e| e["status"].as_str().unwrap().to_owned()).collect()
}

#[tokio::test]
async fn a_runner_turn_streams_whole_plans_before_its_response() {
    let (runner, _) = rich_runner();
    let mut client = rich_client(&runner, |o| o).await;
    let sid = client.new_session().await;
    let id = client.prompt(&sid, "plan 2").await;
    let (response, before) = client.response_with_preceding(&id).await;
    assert_eq!(response["result"]["stopReason"], "end_turn");
    let plans: Vec<Value> = updates(&before).into_iter().filter(|u| u["sessionUpdate"] == "plan").collect();
    let progress: Vec<Vec<String>> = plans.iter().map(statuses).collect();
    assert_eq!(progress, [vec!["pending", "pending"], vec!["completed", "pending"], vec!["completed", "completed"]]);
    assert_eq!(plans[0]["entries"][1], json!({"content": "step 2", "priority": "medium", "status": "pending"}));
    let kinds = update_kinds(&before);
    let last_plan = kinds.iter().rposition(|k| k == "plan").unwrap();
    assert_eq!(kinds[last_plan + 1], "agent_message_chunk", "the chunk `planned` follows the plans: {kinds:?}");
}

#[tokio::test]
async fn nothing_a_turn_publishes_after_its_terminal_reaches_the_client() {
    let host = ScriptedHost::new();
    let mut client = TestClient::initialized(Options::new(host.clone())).await;
    let sid = client.new_session().await;
    let session = host.session(&sid);
    let id = client.prompt(&sid, "go").await;
    let (command, _) = session.next_submit().await;
    let at = ("l", "t");
    session.start_turn(&command, at);
    session.durable(at, EventKind::PlanUpdated { plan: plan(1, 0) });
    session.durable(at, EventKind::TurnDone { message: None, stop: None });
    let meta: Meta = [("late".to_owned(), json!(true))].into_iter().collect();
    for late in [
        EventKind::PlanUpdated { plan: plan(1, 1) },
        EventKind::ContextMeasured { used: 1, size: 2, cost: Some(Box::new(Cost::new(1.0, "EUR"))) },
        EventKind::SessionMetaChanged { title: Some("late".into()), updated_at: None },
        EventKind::ResponseMeta { meta },
    ] {
        session.durable(at, late);
    }
    let (response, before) = client.response_with_preceding(&id).await;
    assert_eq!(response["result"], json!({"stopReason": "end_turn"}), "no late `_meta` either");
    assert_eq!(update_kinds(&before), ["plan"]);
    assert_eq!(statuses(&updates(&before)[0]), ["pending"]);
    // The very next message is the answer to a new request: nothing was written after the response.
    assert_serving(&mut client).await;
}

#[tokio::test]
async fn load_replays_the_latest_plan_once_after_the_four_buckets() {
    let host = RichHost::new(SessionSpec::default());
    let at = ("l", "t1");
    let mut history = History::new();
    history
        .durable(at, EventKind::TurnStarted { message: UserMessage::new(vec![text_block("plan it")]) })
        .durable(at, EventKind::PlanUpdated { plan: plan(2, 0) })
        .durable(at, EventKind::PlanUpdated { plan: plan(2, 1) })
        .durable(
            at,
            EventKind::StepDone {
                messages: vec![Message::Ai(AiMessage { content: vec![text_block("done")], ..AiMessage::default() })],
            },
        )
        .durable(at, EventKind::ContextMeasured { used: 5, size: 10, cost: Some(Box::new(Cost::new(0.5, "USD"))) });
    host.store("with-plan", history.build());
    let mut emptied = History::new();
    emptied
        .durable(at, EventKind::PlanUpdated { plan: plan(1, 0) })
        .durable(at, EventKind::PlanUpdated { plan: Plan::new(Vec::new()) });
    host.store("emptied", emptied.build());
    let mut client = TestClient::initialized(Options::new(host.clone()).loader(host.clone())).await;

    let id =
        client.send_request("session/load", json!({"sessionId": "with-plan", "cwd": "/tmp", "mcpServers": []})).await;
    let (response, before) = client.response_with_preceding(&id).await;
    assert!(response.get("result").is_some(), "{response}");
    assert_eq!(update_kinds(&before), ["user_message_chunk", "agent_message_chunk", "usage_update", "plan"]);
    let replayed = updates(&before);
    assert_eq!(statuses(&replayed[3]), ["completed", "pending"], "the latest plan only");
    assert_eq!(replayed[2]["cost"], json!({"amount": 0.5, "currency": "USD"}), "usage keeps its cost");

    let id =
        client.send_request("session/load", json!({"sessionId": "emptied", "cwd": "/tmp", "mcpServers": []})).await;
    let (_, before) = client.response_with_preceding(&id).await;
    assert!(updates(&before).is_empty(), "an empty latest plan is not replayed: {before:?}");
}

#[tokio::test]
async fn a_runner_session_loads_with_its_latest_plan() {
    let (runner, _) = rich_runner();
    let mut client = rich_client(&runner, |o| o).await;
    let sid = client.new_session().await;
    let id = client.prompt(&sid, "plan 3").await;
    client.response(&id).await;
    client.hang_up().await;
    let mut client = rich_client(&runner, |o| o).await;
    let id = client.send_request("session/load", json!({"sessionId": sid, "cwd": "/tmp", "mcpServers": []})).await;
    let (_, before) = client.response_with_preceding(&id).await;
    let replayed = updates(&before);
    let plans: Vec<&Value> = replayed.iter().filter(|u| u["sessionUpdate"] == "plan").collect();
    assert_eq!(plans.len(), 1, "{replayed:?}");
    assert_eq!(statuses(plans[0]), ["completed", "completed", "completed"]);
    assert_eq!(replayed.last().unwrap()["sessionUpdate"], "plan");
}
