//! Many sessions on one connection with interleaved prompts, permission answers, cancels, closes
//! and a hang-up with prompts still in flight: nothing hangs, every request is answered exactly
//! once, every session is shut down exactly once.

use crate::common;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use acp_facade::acp::{ContentBlock, ToolKind};
use acp_facade::harness::content::{plain_text, text_block};
use acp_facade::harness::{
    ApprovalAction, CommandId, EventKind, Gate, GateId, GateKind, GateResolver, GateResponse, TokenChannel, ToolCallId,
};
use acp_facade::{Agent, Options};
use common::TestClient;
use common::host::ScriptedSession;
use common::lifecycle::{RichHost, SessionSpec};
use serde_json::{Value, json};

const SESSIONS: usize = 200;
const GROUPS: [&str; 7] = ["plain", "permission", "cancel", "close", "hangup", "cancel-asking", "close-asking"];

fn group_of(index: usize) -> &'static str {
    GROUPS[index % GROUPS.len()]
}

fn delta(text: &str) -> EventKind {
    EventKind::TokenDelta { text: text.into(), channel: TokenChannel::Message }
}

/// The host reacts to each submit from a spawned task, as a runtime would.
fn on_submit(session: &Arc<ScriptedSession>, command: &CommandId, prompt: &[ContentBlock]) {
    let session = session.clone();
    let command = command.clone();
    let group = plain_text(prompt);
    tokio::spawn(async move {
        tokio::task::yield_now().await;
        let turn = command.to_string();
        let at = ("loop", turn.as_str());
        match group.as_str() {
            "plain" => {
                session.start_turn(&command, at);
                session.live(at, delta("one "));
                session.live(at, delta("two"));
                session.durable(at, EventKind::TurnDone { message: None, stop: None });
            }
            "permission" | "cancel-asking" | "close-asking" => {
                if group != "permission" {
                    *session.interrupt_ends.lock().unwrap() = Some(("loop".into(), turn.clone()));
                }
                session.start_turn(&command, at);
                session.live(
                    at,
                    EventKind::tool_call_started(
                        ToolCallId::new(format!("call-{turn}")),
                        "Run",
                        ToolKind::Execute,
                        json!({}),
                    ),
                );
                session.durable(
                    at,
                    EventKind::GateOpened {
                        gate: Box::new(Gate {
                            id: GateId::new(format!("gate-{turn}")),
                            kind: GateKind::Permission,
                            resolver: GateResolver::Loop,
                            tool_call_id: Some(ToolCallId::new(format!("call-{turn}"))),
                            title: "run?".into(),
                            controls: vec![ApprovalAction::Approve, ApprovalAction::Deny],
                            options: Vec::new(),
                            schema: None,
                            url: None,
                        }),
                    },
                );
            }
            _ => {
                // Runs until interrupted.
                *session.interrupt_ends.lock().unwrap() = Some(("loop".into(), turn.clone()));
                session.start_turn(&command, at);
                session.live(at, delta("wait"));
            }
        }
    });
}

/// When a permission gate is answered, the tool completes and the turn ends.
fn on_gate(session: &Arc<ScriptedSession>, gate: &GateId, _response: &GateResponse) {
    let session = session.clone();
    let turn = gate.as_str().trim_start_matches("gate-").to_owned();
    tokio::spawn(async move {
        let at = ("loop", turn.as_str());
        session.live(
            at,
            EventKind::tool_call_completed(
                ToolCallId::new(format!("call-{turn}")),
                vec![text_block("ok").into()],
                false,
            ),
        );
        session.durable(at, EventKind::TurnDone { message: None, stop: None });
    });
}

fn response_id(message: &Value) -> Option<i64> {
    if message.get("method").is_some() {
        return None;
    }
    message.get("id").and_then(Value::as_i64)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[allow(clippy::too_many_lines, reason = "one scenario, read top to bottom")]
async fn many_sessions_with_interleaved_lifecycles_settle_exactly_once() {
    let host = RichHost::new(SessionSpec {
        on_submit: Some(Arc::new(on_submit)),
        on_gate: Some(Arc::new(on_gate)),
        ..SessionSpec::default()
    });
    let agent = Agent::new(Options::new(host.clone()));
    let mut client = TestClient::start_agent(agent.clone());
    client.initialize().await;
    // From here on only `next()` reads, so every message is seen exactly once.
    let mut sent: Vec<i64> = Vec::new();
    let mut responses: HashMap<i64, Vec<Value>> = HashMap::new();

    let mut creating: HashMap<i64, usize> = HashMap::new();
    for index in 0..SESSIONS {
        let id = client.send_request("session/new", json!({"cwd": "/tmp", "mcpServers": []})).await;
        sent.push(id.as_i64().unwrap());
        creating.insert(id.as_i64().unwrap(), index);
    }
    let mut sessions: Vec<String> = vec![String::new(); SESSIONS];
    while responses.len() < SESSIONS {
        let message = client.next().await.0;
        let id = response_id(&message).expect("only session/new responses so far");
        sessions[creating[&id]] = message["result"]["sessionId"].as_str().expect("created").to_owned();
        responses.entry(id).or_default().push(message);
    }
    let index_of: HashMap<String, usize> = sessions.iter().enumerate().map(|(i, s)| (s.clone(), i)).collect();

    // Prompts, interleaving the groups.
    let mut prompts: HashMap<i64, usize> = HashMap::new();
    for (index, session) in sessions.iter().enumerate() {
        let id = client.prompt(session, group_of(index)).await;
        sent.push(id.as_i64().unwrap());
        prompts.insert(id.as_i64().unwrap(), index);
    }

    let mut closes: HashMap<i64, usize> = HashMap::new();
    let mut waiting: HashSet<usize> = HashSet::new();
    let mut permission_answers: HashMap<usize, ApprovalAction> = HashMap::new();
    let mut abandoned: Vec<Value> = Vec::new();
    let mut withdrawn: Vec<Value> = Vec::new();
    let settled = |responses: &HashMap<i64, Vec<Value>>, closes: &HashMap<i64, usize>, waiting: &HashSet<usize>| {
        let hangups = (0..SESSIONS).filter(|i| group_of(*i) == "hangup").count();
        let prompts_done = prompts.keys().filter(|id| responses.contains_key(id)).count();
        let closes_done = closes.keys().filter(|id| responses.contains_key(id)).count();
        let all_closes_sent =
            closes.len() == (0..SESSIONS).filter(|i| matches!(group_of(*i), "close" | "close-asking")).count();
        let hangups_streaming = waiting.iter().filter(|i| group_of(**i) == "hangup").count();
        prompts_done == SESSIONS - hangups
            && all_closes_sent
            && closes_done == closes.len()
            && hangups_streaming == hangups
    };
    while !settled(&responses, &closes, &waiting) {
        let message = client.next().await.0;
        if let Some(id) = response_id(&message) {
            responses.entry(id).or_default().push(message);
            continue;
        }
        let session = message["params"]["sessionId"].as_str().unwrap_or_default().to_owned();
        let index = index_of.get(&session).copied();
        match message["method"].as_str() {
            Some("session/request_permission") => {
                let index = index.expect("a known session");
                match group_of(index) {
                    "permission" => {
                        let (outcome, action) = if index % 2 == 0 {
                            (json!({"outcome": "selected", "optionId": "allow_once"}), ApprovalAction::Approve)
                        } else {
                            (json!({"outcome": "cancelled"}), ApprovalAction::Deny)
                        };
                        permission_answers.insert(index, action);
                        client.respond(&message["id"], json!({"outcome": outcome})).await;
                    }
                    "cancel-asking" => {
                        client.notify("session/cancel", json!({"sessionId": session})).await;
                        client.respond(&message["id"], json!({"outcome": {"outcome": "cancelled"}})).await;
                    }
                    "close-asking" => {
                        // Left unanswered: the close abandons it.
                        abandoned.push(message["id"].clone());
                        let id = client.send_request("session/close", json!({"sessionId": session})).await;
                        sent.push(id.as_i64().unwrap());
                        closes.insert(id.as_i64().unwrap(), index);
                    }
                    other => panic!("no permission expected for {other}"),
                }
            }
            Some("session/update") if message.pointer("/params/update/content/text") == Some(&json!("wait")) => {
                let index = index.expect("a known session");
                assert!(waiting.insert(index), "one `wait` per session");
                match group_of(index) {
                    "cancel" => client.notify("session/cancel", json!({"sessionId": session})).await,
                    "close" => {
                        let id = client.send_request("session/close", json!({"sessionId": session})).await;
                        sent.push(id.as_i64().unwrap());
                        closes.insert(id.as_i64().unwrap(), index);
                    }
                    _ => {}
                }
            }
            Some("$/cancel_request") => withdrawn.push(message["params"]["requestId"].clone()),
            _ => {}
        }
    }

    // Before the hang-up: each answered prompt ended as its group says.
    for (id, index) in &prompts {
        let Some(answers) = responses.get(id) else {
            assert_eq!(group_of(*index), "hangup");
            continue;
        };
        let expected = match group_of(*index) {
            "plain" => "end_turn",
            // A permission prompt answered `cancelled` cancels the turn (docs/DEMO.md).
            "permission" if index % 2 == 0 => "end_turn",
            _ => "cancelled",
        };
        assert_eq!(answers[0]["result"]["stopReason"], json!(expected), "session {index}: {:?}", answers[0]);
    }
    for id in closes.keys() {
        assert_eq!(responses[id][0]["result"], json!({}));
    }
    assert_eq!(agent.live_sessions(), SESSIONS - closes.len());

    let rest = client.hang_up().await;
    for message in rest {
        if let Some(id) = response_id(&message) {
            responses.entry(id).or_default().push(message);
        } else if message["method"] == json!("$/cancel_request") {
            withdrawn.push(message["params"]["requestId"].clone());
        }
    }
    abandoned.sort_by_key(Value::as_i64);
    withdrawn.sort_by_key(Value::as_i64);
    assert_eq!(withdrawn, abandoned, "exactly the abandoned permission requests are withdrawn, once");
    for id in &sent {
        let count = responses.get(id).map_or(0, Vec::len);
        assert_eq!(count, 1, "request {id} answered {count} times");
    }
    assert_eq!(responses.len(), sent.len(), "no response to a request that was never sent");
    for (id, index) in &prompts {
        if group_of(*index) == "hangup" {
            assert_eq!(responses[id][0]["result"]["stopReason"], json!("cancelled"), "session {index}");
        }
    }

    assert_eq!(agent.live_sessions(), 0);
    for (index, id) in sessions.iter().enumerate() {
        let s = host.session(id);
        assert_eq!(s.shutdown_count(), 1, "session {index} ({})", group_of(index));
        let interrupts = match group_of(index) {
            "plain" => 0,
            // Odd permission sessions answer `cancelled`, which interrupts the turn.
            "permission" => index % 2,
            _ => 1,
        };
        assert_eq!(s.interrupt_count(), interrupts, "session {index} ({})", group_of(index));
        let answers = s.gate_answers();
        match group_of(index) {
            "permission" => {
                assert_eq!(answers.len(), 1, "session {index}");
                assert_eq!(answers[0].1, GateResponse::Approval(permission_answers[&index]));
            }
            "cancel-asking" | "close-asking" => {
                assert_eq!(answers.len(), 1, "session {index}");
                assert_eq!(answers[0].1, GateResponse::Approval(ApprovalAction::Deny));
            }
            _ => assert!(answers.is_empty(), "session {index}"),
        }
    }
}
