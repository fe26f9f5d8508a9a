//! The runner's questions, end to end: `Turn::ask`, `Turn::fill_form`, `Turn::open_url` and
//! `Turn::request_permission_with_options` open gates that reach a client as elicitations (or a
//! permission request with host-defined options), and each answer comes back to the turn as its
//! [`Reply`] or [`PermissionAnswer`].

use crate::common;

use std::sync::{Arc, Mutex};

use acp_facade::acp::{ElicitationSchema, PermissionOption, PermissionOptionKind, StopReason, ToolKind};
use acp_facade::error::Error;
use acp_facade::harness::ApprovalAction;
use acp_facade_runner::{MemoryStore, PermissionAnswer, Reply, Runner, Turn, TurnRunner};
use async_trait::async_trait;
use common::client_turns::{all_capabilities, next_request};
use common::{TestClient, chunk_texts};
use serde_json::{Value, json};

/// `ask Q`, `form`, `url URL`, `permit`: one question each; the answer is recorded.
#[derive(Default)]
struct Questions {
    replies: Mutex<Vec<String>>,
    /// Signalled (one permit) when a turn starts.
    started: tokio::sync::Notify,
}

#[async_trait]
impl TurnRunner for Questions {
    async fn run_turn(&self, turn: &Turn) -> Result<StopReason, Error> {
        self.started.notify_one();
        let text = turn.prompt_text();
        let (verb, rest) = text.split_once(' ').unwrap_or((text.as_str(), ""));
        let reply = match verb {
            "ask" => format!("{:?}", turn.ask(rest).await),
            "form" => {
                let schema = ElicitationSchema::new().string("city", true).boolean("remember", false);
                format!("{:?}", turn.fill_form("Where to?", schema).await)
            }
            "url" => format!("{:?}", turn.open_url("Sign in", rest).await),
            "permit" => {
                let call = turn.start_tool_call("Delete /w/x", ToolKind::Delete, Value::Null).await;
                let options = vec![PermissionOption::new("never", "Never", PermissionOptionKind::RejectAlways)];
                let answer = turn
                    .request_permission_with_options(&call, "Delete /w/x", &[ApprovalAction::Approve], options)
                    .await;
                format!("{answer:?}")
            }
            _ => String::new(),
        };
        self.replies.lock().unwrap().push(reply.clone());
        if reply == format!("{:?}", Reply::Cancelled) || reply == format!("{:?}", PermissionAnswer::Cancelled) {
            return Ok(StopReason::Cancelled);
        }
        turn.text(reply).await;
        Ok(StopReason::EndTurn)
    }
}

async fn start(capabilities: Value) -> (Arc<Questions>, TestClient, String) {
    let questions = Arc::new(Questions::default());
    let runner = Runner::new(Arc::new(MemoryStore::new()), questions.clone());
    let mut client = TestClient::start_agent(runner.agent(runner.options()));
    client.initialize_with(capabilities).await;
    let sid = client.new_session().await;
    (questions, client, sid)
}

/// Prompts `text`, answers the request `method` with `result`, returns the prompt's reply text.
async fn answered(client: &mut TestClient, sid: &str, text: &str, method: &str, result: Value) -> (Value, String) {
    let id = client.prompt(sid, text).await;
    let request = next_request(client, method).await;
    client.respond(&request["id"], result).await;
    let (response, before) = client.response_with_preceding(&id).await;
    assert_eq!(response["result"]["stopReason"], "end_turn", "{text}: {response}");
    (request, chunk_texts(&before, "agent_message_chunk").join(""))
}

#[tokio::test]
async fn each_answer_reaches_the_turn_as_its_reply() {
    let (_, mut client, sid) = start(all_capabilities()).await;
    let cases = [
        ("ask colour?", json!({"action": "accept", "content": {"answer": "teal"}}), Reply::Answered(json!("teal"))),
        ("ask colour?", json!({"action": "decline"}), Reply::Declined),
        ("ask colour?", json!({"action": "cancel"}), Reply::Dismissed),
        (
            "form",
            json!({"action": "accept", "content": {"city": "Oslo", "remember": true}}),
            Reply::Answered(json!({"city": "Oslo", "remember": true})),
        ),
        ("url https://example.com/sso", json!({"action": "accept"}), Reply::Answered(json!({}))),
        ("url https://example.com/sso", json!({"action": "decline"}), Reply::Declined),
    ];
    for (text, result, expected) in cases {
        let (request, reply) = answered(&mut client, &sid, text, "elicitation/create", result.clone()).await;
        assert_eq!(reply, format!("{expected:?}"), "{text} answered {result}");
        if text == "form" {
            assert_eq!(
                request["params"]["requestedSchema"],
                json!({"type": "object", "properties": {"city": {"type": "string"}, "remember": {"type": "boolean"}},
                       "required": ["city"]})
            );
        }
    }
    // The accepted URL was completed when the turn's gate resolved; the declined one never was.
    let completes: Vec<&Value> = client.transcript.iter().filter(|m| m["method"] == "elicitation/complete").collect();
    assert_eq!(completes.len(), 1, "{completes:?}");
    client.hang_up().await;
}

#[tokio::test]
async fn a_permission_with_host_options_answers_the_option_chosen() {
    let (_, mut client, sid) = start(json!({})).await;
    let cases = [
        ("never", PermissionAnswer::Selected("never".into())),
        ("allow_once", PermissionAnswer::Action(ApprovalAction::Approve)),
        ("reject_once", PermissionAnswer::Action(ApprovalAction::Deny)),
    ];
    for (choice, expected) in cases {
        let selected = json!({"outcome": {"outcome": "selected", "optionId": choice}});
        let (request, reply) = answered(&mut client, &sid, "permit", "session/request_permission", selected).await;
        let offered: Vec<&str> =
            request["params"]["options"].as_array().unwrap().iter().map(|o| o["optionId"].as_str().unwrap()).collect();
        assert_eq!(offered, ["allow_once", "never"]);
        assert_eq!(reply, format!("{expected:?}"), "{choice}");
    }
    client.hang_up().await;
}

#[tokio::test]
async fn without_elicitation_a_question_waits_for_the_cancel() {
    let (questions, mut client, sid) = start(json!({"fs": {"readTextFile": true}})).await;
    let id = client.prompt(&sid, "ask anyone?").await;
    // Nothing is sent; the turn waits until the client cancels.
    tokio::time::timeout(common::STEP, questions.started.notified()).await.expect("the turn started");
    client.notify("session/cancel", json!({"sessionId": sid})).await;
    let (response, before) = client.response_with_preceding(&id).await;
    assert_eq!(response["result"]["stopReason"], "cancelled");
    assert!(!before.iter().any(|m| m.get("id").is_some() && m.get("method").is_some()), "{before:#?}");
    assert_eq!(questions.replies.lock().unwrap().clone(), [format!("{:?}", Reply::Cancelled)]);
    client.hang_up().await;
}
