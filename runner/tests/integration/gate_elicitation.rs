//! Gates in their v1.21.0 wire form: an ask-user gate is a form elicitation with one string
//! field, a form gate one with the host's schema, an open-URL gate a URL elicitation completed
//! (`elicitation/complete`) when the host resolves the gate; accept, decline and cancel come back
//! as the gate's answers. A client without elicitation sees nothing new. Permission gates may
//! carry host-defined options, validated against what was offered.

use crate::common;

use std::sync::Arc;

use acp_facade::Options;
use acp_facade::acp::{ElicitationSchema, PermissionOption, PermissionOptionKind, ToolKind};
use acp_facade::harness::{
    ApprovalAction, EventKind, Gate, GateId, GateKind, GateResolver, GateResponse, TokenChannel, ToolCallId,
};
use common::client_turns::{all_capabilities, calls, is_request, next_request};
use common::lifecycle::{RichHost, RichSession, SessionSpec, eventually};
use common::{TestClient, chunk_texts};
use serde_json::{Value, json};

const AT: (&str, &str) = ("l1", "t1");

async fn start(capabilities: Value) -> (Arc<RichHost>, TestClient, Arc<RichSession>, String) {
    let host = RichHost::new(SessionSpec::default());
    let mut client = TestClient::initialized_with(Options::new(host.clone()), capabilities).await;
    let sid = client.new_session().await;
    let session = host.session(&sid);
    (host, client, session, sid)
}

/// Sends a prompt and starts its turn at `at`; returns the prompt's request id.
async fn prompt_started(client: &mut TestClient, s: &RichSession, at: (&str, &str)) -> Value {
    let id = client.prompt(s.id_str(), "go").await;
    let (command, _) = s.inner.next_submit().await;
    s.inner.start_turn(&command, at);
    id
}

fn opened(gate: Gate) -> EventKind {
    EventKind::gate_opened(gate)
}

fn ask_user(id: &str, question: &str) -> Gate {
    Gate::new(id, GateKind::AskUser, GateResolver::Loop, question)
}

fn form(id: &str) -> Gate {
    let mut gate = Gate::new(id, GateKind::Form, GateResolver::Loop, "Deployment settings");
    gate.schema = Some(ElicitationSchema::new().string("region", true).integer("replicas", 1, 9, false));
    gate
}

fn open_url(id: &str, url: &str) -> Gate {
    let mut gate = Gate::new(id, GateKind::OpenUrl, GateResolver::Loop, "Sign in to continue");
    gate.url = Some(url.to_owned());
    gate
}

fn done() -> EventKind {
    EventKind::TurnDone { message: None, stop: None }
}

/// Answers the next elicitation with `result` and waits for the gate's answer; returns the
/// request and the answer.
async fn answer_elicitation(
    client: &mut TestClient,
    s: &RichSession,
    n: usize,
    result: Value,
) -> (Value, GateResponse) {
    let request = next_request(client, "elicitation/create").await;
    client.respond(&request["id"], result).await;
    eventually("the gate is answered", || s.gate_answers().len() == n).await;
    (request, s.gate_answers()[n - 1].1.clone())
}

#[tokio::test]
async fn an_ask_user_gate_is_a_form_with_one_string_field_and_each_action_is_its_answer() {
    let (_, mut client, s, sid) = start(json!({"elicitation": {"form": {}}})).await;
    let cases = [
        (json!({"action": "accept", "content": {"answer": "blue"}}), GateResponse::Values(json!("blue"))),
        (json!({"action": "decline"}), GateResponse::Declined),
        (json!({"action": "cancel"}), GateResponse::Dismissed),
        // Unusable answers: the user gave no answer.
        (json!({"action": "accept"}), GateResponse::Dismissed),
        (json!({"action": "accept", "content": {"answer": true}}), GateResponse::Dismissed),
        (json!({"action": "_custom"}), GateResponse::Dismissed),
    ];
    for (n, (result, expected)) in cases.into_iter().enumerate() {
        let turn = format!("t{n}");
        let at = ("l1", turn.as_str());
        let prompt = prompt_started(&mut client, &s, at).await;
        s.inner.durable(at, opened(ask_user(&format!("g{n}"), "Favourite colour?")));
        let (request, answer) = answer_elicitation(&mut client, &s, n + 1, result.clone()).await;
        assert_eq!(
            request["params"],
            json!({
                "sessionId": sid,
                "mode": "form",
                "message": "Favourite colour?",
                "requestedSchema": {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]},
            })
        );
        assert_eq!(answer, expected, "{result}");
        assert_eq!(s.gate_answers()[n].0, GateId::new(format!("g{n}")));
        s.inner.durable(at, done());
        assert_eq!(client.response(&prompt).await["result"]["stopReason"], "end_turn");
    }
    client.hang_up().await;
}

#[tokio::test]
async fn a_form_gate_carries_the_hosts_schema_and_gets_its_values() {
    let (_, mut client, s, sid) = start(json!({"elicitation": {"form": {}}})).await;
    let prompt = prompt_started(&mut client, &s, AT).await;
    s.inner.durable(AT, opened(form("g1")));
    let (request, answer) = answer_elicitation(
        &mut client,
        &s,
        1,
        json!({"action": "accept", "content": {"region": "eu-west", "replicas": 3}}),
    )
    .await;
    assert_eq!(request["params"]["sessionId"], sid.as_str());
    assert_eq!(request["params"]["message"], "Deployment settings");
    assert_eq!(
        request["params"]["requestedSchema"],
        json!({
            "type": "object",
            "properties": {"region": {"type": "string"}, "replicas": {"type": "integer", "minimum": 1, "maximum": 9}},
            "required": ["region"],
        })
    );
    assert_eq!(answer, GateResponse::Values(json!({"region": "eu-west", "replicas": 3})));
    s.inner.durable(AT, done());
    assert_eq!(client.response(&prompt).await["result"]["stopReason"], "end_turn");

    // An answer that does not fit the schema (a required field missing) is no answer.
    let at = ("l1", "t2");
    let prompt = prompt_started(&mut client, &s, at).await;
    s.inner.durable(at, opened(form("g2")));
    let (_, answer) =
        answer_elicitation(&mut client, &s, 2, json!({"action": "accept", "content": {"replicas": 3}})).await;
    assert_eq!(answer, GateResponse::Dismissed);
    s.inner.durable(at, done());
    assert_eq!(client.response(&prompt).await["result"]["stopReason"], "end_turn");
    client.hang_up().await;
}

#[tokio::test]
async fn an_open_url_gate_is_a_url_elicitation_completed_when_the_host_resolves_it() {
    let (_, mut client, s, sid) = start(json!({"elicitation": {"url": {}}})).await;
    let prompt = prompt_started(&mut client, &s, AT).await;
    s.inner.durable(AT, opened(open_url("g1", "https://auth.example.com/device")));
    let (request, answer) = answer_elicitation(&mut client, &s, 1, json!({"action": "accept"})).await;
    let params = &request["params"];
    assert_eq!(params["mode"], "url");
    assert_eq!(params["sessionId"], sid.as_str());
    assert_eq!(params["url"], "https://auth.example.com/device");
    assert_eq!(params["message"], "Sign in to continue");
    let id = params["elicitationId"].clone();
    assert!(id.is_string());
    assert_eq!(answer, GateResponse::Values(json!({})));
    // The host's external step finishes later: then the client hears it is complete.
    s.inner.live(AT, EventKind::TokenDelta { text: "waiting".into(), channel: TokenChannel::Message });
    s.inner.durable(AT, EventKind::GateResolved { gate_id: GateId::new("g1") });
    s.inner.durable(AT, done());
    let (response, before) = client.response_with_preceding(&prompt).await;
    assert_eq!(response["result"]["stopReason"], "end_turn");
    let completes: Vec<&Value> = client.transcript.iter().filter(|m| m["method"] == "elicitation/complete").collect();
    assert_eq!(completes.len(), 1);
    assert_eq!(completes[0]["params"], json!({"elicitationId": id}));
    assert_eq!(chunk_texts(&before, "agent_message_chunk"), ["waiting"]);

    // Declined: the gate resolves, nothing is completed.
    let at = ("l1", "t2");
    let prompt = prompt_started(&mut client, &s, at).await;
    s.inner.durable(at, opened(open_url("g2", "https://auth.example.com/device")));
    let (_, answer) = answer_elicitation(&mut client, &s, 2, json!({"action": "decline"})).await;
    assert_eq!(answer, GateResponse::Declined);
    s.inner.durable(at, EventKind::GateResolved { gate_id: GateId::new("g2") });
    s.inner.durable(at, done());
    client.response(&prompt).await;
    let transcript = client.hang_up_transcript().await;
    assert_eq!(transcript.iter().filter(|m| m["method"] == "elicitation/complete").count(), 1);
}

#[tokio::test]
async fn without_elicitation_the_gates_stay_with_the_host_and_nothing_new_is_sent() {
    // A form-only client still gets no URL elicitation; a client with none gets nothing at all.
    for capabilities in [json!({}), json!({"elicitation": {"form": {}}}), json!({"elicitation": {"url": {}}})] {
        let (_, mut client, s, _) = start(capabilities.clone()).await;
        let prompt = prompt_started(&mut client, &s, AT).await;
        let form_ok = capabilities.pointer("/elicitation/form").is_some();
        let url_ok = capabilities.pointer("/elicitation/url").is_some();
        if !form_ok {
            s.inner.durable(AT, opened(ask_user("g1", "?")));
            s.inner.durable(AT, opened(form("g2")));
        }
        if !url_ok {
            s.inner.durable(AT, opened(open_url("g3", "https://x.example")));
        }
        // Gates without a faithful form, whatever the client supports.
        s.inner.durable(AT, opened(Gate::new("g4", GateKind::Form, GateResolver::Loop, "no schema")));
        s.inner.durable(AT, opened(open_url("g5", "not a url")));
        // Gates the session resolves are never the facade's.
        let mut owned = ask_user("g6", "?");
        owned.resolver = GateResolver::Session;
        s.inner.durable(AT, opened(owned));
        s.inner.live(AT, EventKind::TokenDelta { text: "drained".into(), channel: TokenChannel::Message });
        s.inner.durable(AT, done());
        let (response, before) = client.response_with_preceding(&prompt).await;
        assert_eq!(response["result"]["stopReason"], "end_turn", "{capabilities}");
        assert_eq!(calls(&before), Vec::<String>::new(), "{capabilities}: {before:#?}");
        assert_eq!(chunk_texts(&before, "agent_message_chunk"), ["drained"]);
        assert!(s.gate_answers().is_empty(), "{capabilities}");
        client.hang_up().await;
    }
}

#[tokio::test]
async fn cancel_during_an_elicitation_abandons_it_and_dismisses_the_gate() {
    let (_, mut client, s, sid) = start(all_capabilities()).await;
    s.interrupt_ends(AT);
    let prompt = prompt_started(&mut client, &s, AT).await;
    s.inner.durable(AT, opened(ask_user("g1", "Still there?")));
    let request = next_request(&mut client, "elicitation/create").await;
    client.notify("session/cancel", json!({"sessionId": sid})).await;
    let response = client.response(&prompt).await;
    assert_eq!(response["result"]["stopReason"], "cancelled");
    let cancel = client.transcript.iter().find(|m| m["method"] == "$/cancel_request").expect("abandoned");
    assert_eq!(cancel["params"]["requestId"], request["id"]);
    eventually("the gate is answered", || s.gate_answers().len() == 1).await;
    assert_eq!(s.gate_answers()[0], (GateId::new("g1"), GateResponse::Dismissed));
    assert_eq!(s.interrupt_count(), 1);
    client.hang_up().await;
}

#[tokio::test]
async fn closing_during_an_elicitation_abandons_it() {
    let (_, mut client, s, sid) = start(all_capabilities()).await;
    s.interrupt_ends(AT);
    let prompt = prompt_started(&mut client, &s, AT).await;
    s.inner.durable(AT, opened(form("g1")));
    let request = next_request(&mut client, "elicitation/create").await;
    let close = client.send_request("session/close", json!({"sessionId": sid})).await;
    assert_eq!(client.response(&close).await["result"], json!({}));
    assert_eq!(client.response(&prompt).await["result"]["stopReason"], "cancelled");
    let cancel = client.transcript.iter().find(|m| m["method"] == "$/cancel_request").expect("abandoned");
    assert_eq!(cancel["params"]["requestId"], request["id"]);
    client.hang_up().await;
}

#[tokio::test]
async fn a_permission_gate_offers_host_defined_options_after_its_controls() {
    let (_, mut client, s, _) = start(json!({})).await;
    let options = vec![
        PermissionOption::new("reject_always", "Never for this file", PermissionOptionKind::RejectAlways),
        PermissionOption::new("allow_session", "Allow for this session", PermissionOptionKind::AllowAlways),
        // Same id as a control's: offered once, as the control.
        PermissionOption::new("allow_once", "Duplicate", PermissionOptionKind::AllowOnce),
    ];
    let choices = [
        ("reject_always", GateResponse::Selected("reject_always".into())),
        ("allow_session", GateResponse::Selected("allow_session".into())),
        ("allow_once", GateResponse::Approval(ApprovalAction::Approve)),
        ("reject_once", GateResponse::Approval(ApprovalAction::Deny)),
        ("not_offered", GateResponse::Approval(ApprovalAction::Deny)),
    ];
    for (n, (choice, expected)) in choices.into_iter().enumerate() {
        let turn = format!("t{n}");
        let at = ("l1", turn.as_str());
        let prompt = prompt_started(&mut client, &s, at).await;
        s.inner.live(at, EventKind::tool_call_started("call-1", "Edit /tmp/x", ToolKind::Edit, json!({})));
        let mut gate = Gate::new(format!("g{n}"), GateKind::Permission, GateResolver::Loop, "Edit /tmp/x");
        gate.tool_call_id = Some(ToolCallId::new("call-1"));
        gate.controls = vec![ApprovalAction::Approve, ApprovalAction::Deny];
        gate.options.clone_from(&options);
        s.inner.durable(at, opened(gate));
        let request = client.wait_for(|m| is_request(m, "session/request_permission")).await;
        let offered: Vec<(&str, &str, &str)> = request["params"]["options"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| (o["optionId"].as_str().unwrap(), o["name"].as_str().unwrap(), o["kind"].as_str().unwrap()))
            .collect();
        assert_eq!(
            offered,
            [
                ("allow_once", "Allow once", "allow_once"),
                ("reject_once", "Reject", "reject_once"),
                ("reject_always", "Never for this file", "reject_always"),
                ("allow_session", "Allow for this session", "allow_always"),
            ]
        );
        client.respond(&request["id"], json!({"outcome": {"outcome": "selected", "optionId": choice}})).await;
        eventually("the gate is answered", || s.gate_answers().len() == n + 1).await;
        assert_eq!(s.gate_answers()[n].1, expected, "{choice}");
        s.inner.durable(at, done());
        assert_eq!(client.response(&prompt).await["result"]["stopReason"], "end_turn");
    }
    client.hang_up().await;
}
