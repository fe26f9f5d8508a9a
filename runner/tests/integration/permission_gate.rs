//! Permission gates: a correlated, public `Permission` gate resolved by the loop becomes
//! `session/request_permission` offering exactly its controls; the answer reaches the host through
//! `respond_gate`; nothing else is ever flattened into a permission request; and the wait never
//! blocks the connection.

use crate::common;

use std::sync::Arc;

use acp_facade::Options;
use acp_facade::acp::ToolKind;
use acp_facade::harness::{
    ApprovalAction, EventClass, EventKind, Gate, GateId, GateKind, GateResolver, GateResponse, TokenChannel,
    ToolCallId, Visibility,
};
use common::lifecycle::{RichHost, RichSession, SessionSpec, eventually, is_agent_request};
use common::{TestClient, chunk_texts};
use serde_json::{Value, json};

const AT: (&str, &str) = ("l1", "t1");
const PERMISSION: &str = "session/request_permission";

fn tool_started(call: &str, title: &str) -> EventKind {
    EventKind::tool_call_started(ToolCallId::new(call), title, ToolKind::Edit, json!({"path": "/tmp/x"}))
}

fn gate(
    id: &str,
    kind: GateKind,
    resolver: GateResolver,
    call: Option<&str>,
    controls: &[ApprovalAction],
) -> EventKind {
    EventKind::GateOpened {
        gate: Box::new(Gate {
            id: GateId::new(id),
            kind,
            resolver,
            tool_call_id: call.map(ToolCallId::new),
            title: format!("gate {id}"),
            controls: controls.to_vec(),
            options: Vec::new(),
            schema: None,
            url: None,
        }),
    }
}

fn permission(id: &str, call: Option<&str>, controls: &[ApprovalAction]) -> EventKind {
    gate(id, GateKind::Permission, GateResolver::Loop, call, controls)
}

fn done() -> EventKind {
    EventKind::TurnDone { message: None, stop: None }
}

fn delta(text: &str) -> EventKind {
    EventKind::TokenDelta { text: text.into(), channel: TokenChannel::Message }
}

async fn start() -> (Arc<RichHost>, TestClient) {
    let host = RichHost::new(SessionSpec::default());
    let client = TestClient::initialized(Options::new(host.clone())).await;
    (host, client)
}

/// Sends a prompt and starts its turn at `at`; returns the prompt's request id.
async fn prompt_started(client: &mut TestClient, s: &RichSession, text: &str, at: (&str, &str)) -> Value {
    let id = client.prompt(s.id_str(), text).await;
    let (command, _) = s.inner.next_submit().await;
    s.inner.start_turn(&command, at);
    id
}

async fn next_permission_request(client: &mut TestClient) -> Value {
    client.wait_for(|m| is_agent_request(m, PERMISSION)).await
}

fn selected(option: &str) -> Value {
    json!({"outcome": {"outcome": "selected", "optionId": option}})
}

/// `(optionId, kind)` of each offered option, in order.
fn offered(request: &Value) -> Vec<(String, String)> {
    request["params"]["options"]
        .as_array()
        .expect("options")
        .iter()
        .map(|o| (o["optionId"].as_str().unwrap().to_owned(), o["kind"].as_str().unwrap().to_owned()))
        .collect()
}

fn pairs(expected: &[&str]) -> Vec<(String, String)> {
    expected.iter().map(|&o| (o.to_owned(), o.to_owned())).collect()
}

fn permission_requests(messages: &[Value]) -> usize {
    messages.iter().filter(|m| is_agent_request(m, PERMISSION)).count()
}

#[tokio::test]
async fn a_permission_gate_asks_for_the_tool_call_with_exactly_its_controls() {
    let (host, mut client) = start().await;
    let session = client.new_session().await;
    let s = host.session(&session);
    let prompt = prompt_started(&mut client, &s, "edit it", AT).await;
    s.inner.live(AT, tool_started("call-1", "Write /tmp/x"));
    s.inner.durable(
        AT,
        permission(
            "g1",
            Some("call-1"),
            &[ApprovalAction::Approve, ApprovalAction::ApproveAlways, ApprovalAction::Deny],
        ),
    );

    let request = next_permission_request(&mut client).await;
    let params = &request["params"];
    assert_eq!(params["sessionId"], json!(session));
    assert_eq!(params["toolCall"]["toolCallId"], json!("call-1"));
    assert_eq!(params["toolCall"]["title"], json!("Write /tmp/x"));
    assert_eq!(offered(&request), pairs(&["allow_once", "allow_always", "reject_once"]));
    // The tool call was announced before permission was asked for it.
    let announced = client
        .transcript
        .iter()
        .position(|m| m.pointer("/params/update/toolCallId") == Some(&json!("call-1")))
        .expect("tool_call announced");
    let asked = client.transcript.iter().position(|m| is_agent_request(m, PERMISSION)).unwrap();
    assert!(announced < asked);
    assert!(s.gate_answers().is_empty(), "the gate must wait for the client");

    client.respond(&request["id"], selected("allow_always")).await;
    eventually("the gate is answered", || !s.gate_answers().is_empty()).await;
    assert_eq!(s.gate_answers(), vec![(GateId::new("g1"), GateResponse::Approval(ApprovalAction::ApproveAlways))]);
    s.inner.durable(AT, done());
    let response = client.response(&prompt).await;
    assert_eq!(response["result"]["stopReason"], json!("end_turn"));
    client.hang_up().await;
}

#[tokio::test]
async fn a_subset_of_controls_offers_only_that_subset_in_order() {
    use ApprovalAction::{Approve, ApproveAlways, Deny};
    let cases: [(&[ApprovalAction], &[&str]); 6] = [
        (&[Approve, Deny], &["allow_once", "reject_once"]),
        (&[Deny, Approve], &["reject_once", "allow_once"]),
        (&[Deny], &["reject_once"]),
        (&[ApproveAlways], &["allow_always"]),
        (&[Approve], &["allow_once"]),
        (&[ApproveAlways, Deny], &["allow_always", "reject_once"]),
    ];
    let (host, mut client) = start().await;
    let session = client.new_session().await;
    let s = host.session(&session);
    for (n, (controls, expected)) in cases.iter().enumerate() {
        let turn = format!("t{n}");
        let at = ("l1", turn.as_str());
        let call = format!("call-{n}");
        let gate_id = format!("g{n}");
        let prompt = prompt_started(&mut client, &s, "go", at).await;
        s.inner.live(at, tool_started(&call, "Run"));
        s.inner.durable(at, permission(&gate_id, Some(&call), controls));
        let request = next_permission_request(&mut client).await;
        assert_eq!(offered(&request), pairs(expected), "controls {controls:?}");
        assert_eq!(request["params"]["toolCall"]["toolCallId"], json!(call));
        // Choose the last offered option: it must come back as its control.
        client.respond(&request["id"], selected(expected[expected.len() - 1])).await;
        eventually("the gate is answered", || s.gate_answers().len() == n + 1).await;
        let (answered_gate, answer) = s.gate_answers()[n].clone();
        assert_eq!(answered_gate, GateId::new(gate_id.as_str()));
        assert_eq!(answer, GateResponse::Approval(controls[controls.len() - 1]));
        s.inner.durable(at, done());
        assert_eq!(client.response(&prompt).await["result"]["stopReason"], json!("end_turn"));
    }
    client.hang_up().await;
}

#[tokio::test]
async fn an_option_that_was_not_offered_denies() {
    let (host, mut client) = start().await;
    let session = client.new_session().await;
    let s = host.session(&session);
    for (n, choice) in ["allow_always", "bogus", "ALLOW_ONCE", ""].into_iter().enumerate() {
        let turn = format!("t{n}");
        let at = ("l1", turn.as_str());
        let prompt = prompt_started(&mut client, &s, "go", at).await;
        s.inner.live(at, tool_started("call-1", "Run"));
        s.inner.durable(at, permission("g", Some("call-1"), &[ApprovalAction::Approve, ApprovalAction::Deny]));
        let request = next_permission_request(&mut client).await;
        client.respond(&request["id"], selected(choice)).await;
        eventually("the gate is answered", || s.gate_answers().len() == n + 1).await;
        assert_eq!(s.gate_answers()[n].1, GateResponse::Approval(ApprovalAction::Deny), "choice {choice:?}");
        s.inner.durable(at, done());
        assert_eq!(client.response(&prompt).await["result"]["stopReason"], json!("end_turn"));
    }
    client.hang_up().await;
}

#[tokio::test]
async fn a_cancelled_answer_cancels_the_turn_and_a_failed_answer_denies_and_runs_on() {
    let (host, mut client) = start().await;
    let session = client.new_session().await;
    let s = host.session(&session);

    // Outcome `cancelled`: the user cancelled the turn from the permission prompt. The turn is
    // interrupted (as session/cancel would), the gate answered deny, and the prompt answers
    // `cancelled` whatever terminal the host then reports.
    let prompt = prompt_started(&mut client, &s, "go", AT).await;
    s.inner.live(AT, tool_started("call-1", "Run"));
    s.inner.durable(AT, permission("g1", Some("call-1"), &[ApprovalAction::Approve, ApprovalAction::Deny]));
    let request = next_permission_request(&mut client).await;
    client.respond(&request["id"], json!({"outcome": {"outcome": "cancelled"}})).await;
    eventually("the gate is answered", || s.gate_answers().len() == 1).await;
    assert_eq!(s.gate_answers()[0], (GateId::new("g1"), GateResponse::Approval(ApprovalAction::Deny)));
    assert!(s.inner.interrupts.load(std::sync::atomic::Ordering::SeqCst) >= 1, "the turn was interrupted");
    s.inner.live(AT, delta("denied, winding down"));
    s.inner.durable(AT, EventKind::TurnDone { message: None, stop: Some(acp_facade::acp::StopReason::MaxTokens) });
    let (response, before) = client.response_with_preceding(&prompt).await;
    assert_eq!(response["result"]["stopReason"], json!("cancelled"));
    assert_eq!(chunk_texts(&before, "agent_message_chunk"), vec!["denied, winding down"]);

    // A JSON-RPC error instead of an answer.
    let at = ("l1", "t2");
    let prompt = prompt_started(&mut client, &s, "again", at).await;
    s.inner.durable(at, permission("g2", None, &[ApprovalAction::Approve]));
    let request = next_permission_request(&mut client).await;
    let error = json!({"jsonrpc": "2.0", "id": request["id"], "error": {"code": -32603, "message": "client broke"}});
    client.send_raw(&error.to_string()).await;
    eventually("the gate is answered", || s.gate_answers().len() == 2).await;
    assert_eq!(s.gate_answers()[1], (GateId::new("g2"), GateResponse::Approval(ApprovalAction::Deny)));
    s.inner.durable(at, done());
    assert_eq!(client.response(&prompt).await["result"]["stopReason"], json!("end_turn"));
    client.hang_up().await;
}

#[tokio::test]
async fn a_gate_for_an_unannounced_tool_call_still_names_the_call_and_the_gate_title() {
    let (host, mut client) = start().await;
    let session = client.new_session().await;
    let s = host.session(&session);
    let prompt = prompt_started(&mut client, &s, "go", AT).await;
    s.inner.durable(AT, permission("g1", Some("call-9"), &[ApprovalAction::Approve]));
    let request = next_permission_request(&mut client).await;
    assert_eq!(request["params"]["toolCall"]["toolCallId"], json!("call-9"));
    assert_eq!(request["params"]["toolCall"]["title"], json!("gate g1"));
    client.respond(&request["id"], selected("allow_once")).await;
    eventually("the gate is answered", || s.gate_answers().len() == 1).await;
    assert_eq!(s.gate_answers()[0].1, GateResponse::Approval(ApprovalAction::Approve));
    s.inner.durable(AT, done());
    assert_eq!(client.response(&prompt).await["result"]["stopReason"], json!("end_turn"));
    client.hang_up().await;
}

#[tokio::test]
async fn other_gate_kinds_session_resolved_and_internal_gates_never_become_requests() {
    let (host, mut client) = start().await;
    let session = client.new_session().await;
    let s = host.session(&session);
    let prompt = prompt_started(&mut client, &s, "go", AT).await;
    s.inner.live(AT, tool_started("call-1", "Run"));
    let all = [ApprovalAction::Approve, ApprovalAction::ApproveAlways, ApprovalAction::Deny];
    for (n, kind) in [GateKind::AskUser, GateKind::Form, GateKind::OpenUrl].into_iter().enumerate() {
        for resolver in [GateResolver::Loop, GateResolver::Session] {
            s.inner.durable(AT, gate(&format!("g{n}-{resolver:?}"), kind, resolver, Some("call-1"), &all));
        }
    }
    // A permission gate the session resolves out of band.
    s.inner.durable(AT, gate("host-owned", GateKind::Permission, GateResolver::Session, Some("call-1"), &all));
    // An internal permission gate, in both classes.
    for class in [EventClass::Enduring, EventClass::Ephemeral] {
        s.inner.emit(permission("secret", Some("call-1"), &all), class, Visibility::Internal, None, Some(AT));
    }
    s.inner.live(AT, delta("still draining"));
    s.inner.durable(AT, done());
    let (response, before) = client.response_with_preceding(&prompt).await;
    assert_eq!(response["result"]["stopReason"], json!("end_turn"));
    assert_eq!(chunk_texts(&before, "agent_message_chunk"), vec!["still draining"]);
    assert_eq!(permission_requests(&client.transcript), 0, "{:#?}", client.transcript);
    assert!(s.gate_answers().is_empty(), "the facade must leave these gates to the host");
    let rest = client.hang_up().await;
    assert_eq!(permission_requests(&rest), 0);
}

#[tokio::test]
async fn a_pending_permission_blocks_neither_other_sessions_nor_cancel() {
    let (host, mut client) = start().await;
    let a = client.new_session().await;
    let b = client.new_session().await;
    let sa = host.session(&a);
    let sb = host.session(&b);
    sa.interrupt_ends(AT);

    let prompt_a = prompt_started(&mut client, &sa, "needs approval", AT).await;
    sa.inner.live(AT, tool_started("call-1", "Run"));
    sa.inner.durable(AT, permission("g1", Some("call-1"), &[ApprovalAction::Approve, ApprovalAction::Deny]));
    let request = next_permission_request(&mut client).await;

    // Another session's prompt streams and completes while A waits.
    let prompt_b = prompt_started(&mut client, &sb, "hello", ("lb", "tb")).await;
    sb.inner.live(("lb", "tb"), delta("b says hi"));
    sb.inner.durable(("lb", "tb"), done());
    let (response_b, before_b) = client.response_with_preceding(&prompt_b).await;
    assert_eq!(response_b["result"]["stopReason"], json!("end_turn"));
    assert!(
        before_b.iter().any(|m| m.pointer("/params/update/content/text") == Some(&json!("b says hi"))),
        "B's update must arrive before B's response"
    );
    assert!(sa.gate_answers().is_empty());

    // A cancel for A is processed while its permission request is still open.
    client.notify("session/cancel", json!({"sessionId": a})).await;
    eventually("A is interrupted", || sa.interrupt_count() == 1).await;
    assert!(sa.gate_answers().is_empty(), "the client answers the pending request itself");

    // The client answers `cancelled`, as ACP requires after a cancel.
    client.respond(&request["id"], json!({"outcome": {"outcome": "cancelled"}})).await;
    let response_a = client.response(&prompt_a).await;
    assert_eq!(response_a["result"]["stopReason"], json!("cancelled"));
    assert_eq!(sa.gate_answers(), vec![(GateId::new("g1"), GateResponse::Approval(ApprovalAction::Deny))]);
    assert_eq!(sa.interrupt_count(), 1, "one interrupt per cancel");
    client.hang_up().await;
}
