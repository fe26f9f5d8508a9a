//! `_meta` both ways: a request's `_meta` (a W3C `traceparent`) reaches the host — the prompt's in
//! `submit_prompt` and the runner's `Turn::meta`, session setup's in `Setup::meta` (new, load,
//! resume); the host's reaches the prompt's response (`ResponseMeta`, whatever the outcome) and
//! its updates (a plan's `_meta`); `usage_update` carries the host's cost. A prompt without any
//! is answered without `_meta`.

use crate::common;

use acp_facade::Options;
use acp_facade::acp::Meta;
use acp_facade::harness::EventKind;
use common::lifecycle::{RichHost, SessionSpec};
use common::rich::{ControlledHost, plan, prompt_blocks, rich_client, rich_runner};
use common::{TestClient, updates};
use serde_json::{Value, json};

const TRACEPARENT: &str = "00-80e1afed08e019fc1110464cfa66635c-7a085853722dc6d2-01";

fn meta_of(value: Value) -> Meta {
    match value {
        Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

#[tokio::test]
async fn the_prompts_meta_reaches_the_turn_and_the_turns_meta_the_response() {
    let (runner, turns) = rich_runner();
    let mut client = rich_client(&runner, |o| o).await;
    let sid = client.new_session().await;
    let request_meta = json!({"traceparent": TRACEPARENT, "vendor.example/flag": true});
    let id =
        prompt_blocks(&mut client, &sid, json!([{"type": "text", "text": "meta"}]), Some(request_meta.clone())).await;
    let response = client.response(&id).await;
    assert_eq!(response["result"], json!({"stopReason": "end_turn", "_meta": {"echo": request_meta}}));
    assert_eq!(turns.seen()[0].meta, Some(meta_of(request_meta)));
    // Without `_meta`: none on either side.
    let id = client.prompt(&sid, "meta").await;
    assert_eq!(client.response(&id).await["result"], json!({"stopReason": "end_turn", "_meta": {"echo": null}}));
    assert_eq!(turns.seen()[1].meta, None);
    let id = client.prompt(&sid, "hello").await;
    assert_eq!(client.response(&id).await["result"], json!({"stopReason": "end_turn"}));
}

#[tokio::test]
async fn a_host_session_gets_the_prompts_meta_and_answers_with_its_own_even_when_cancelled() {
    let host = ControlledHost::new(Vec::new());
    let mut client = TestClient::initialized(Options::new(host.clone())).await;
    let sid = client.new_session().await;
    let session = host.session(0);
    let id = prompt_blocks(
        &mut client,
        &sid,
        json!([{"type": "text", "text": "go"}]),
        Some(json!({"traceparent": TRACEPARENT})),
    )
    .await;
    let (command, _) = session.inner.next_submit().await;
    assert_eq!(session.prompts()[0].meta, Some(meta_of(json!({"traceparent": TRACEPARENT}))));
    let at = ("l", "t");
    session.inner.start_turn(&command, at);
    session.inner.live(at, EventKind::ResponseMeta { meta: meta_of(json!({"first": 1})) });
    session.inner.live(at, EventKind::ResponseMeta { meta: meta_of(json!({"traceparent": TRACEPARENT})) });
    // An internal one never reaches the client.
    session.inner.internal(at, EventKind::ResponseMeta { meta: meta_of(json!({"secret": true})) });
    let mut with_meta = plan(1, 0);
    with_meta.meta = Some(meta_of(json!({"vendor.example/plan": "v1"})));
    session.inner.durable(at, EventKind::PlanUpdated { plan: with_meta });
    session.inner.durable(at, EventKind::TurnInterrupted {});
    let (response, before) = client.response_with_preceding(&id).await;
    assert_eq!(response["result"], json!({"stopReason": "cancelled", "_meta": {"traceparent": TRACEPARENT}}));
    assert_eq!(updates(&before)[0]["_meta"], json!({"vendor.example/plan": "v1"}));
}

#[tokio::test]
async fn session_setup_meta_reaches_the_host() {
    let host = RichHost::new(SessionSpec::default());
    host.store("stored", Vec::new());
    let options = Options::new(host.clone()).loader(host.clone()).resumer(host.clone());
    let mut client = TestClient::initialized(options).await;
    let meta = json!({"traceparent": TRACEPARENT});
    client.call_ok("session/new", json!({"cwd": "/tmp", "mcpServers": [], "_meta": meta})).await;
    client
        .call_ok("session/load", json!({"sessionId": "stored", "cwd": "/tmp", "mcpServers": [], "_meta": {"n": 2}}))
        .await;
    client.call_ok("session/close", json!({"sessionId": "stored"})).await;
    client.call_ok("session/resume", json!({"sessionId": "stored", "cwd": "/tmp"})).await;
    let setups = host.setups.lock().unwrap();
    let metas: Vec<Option<Meta>> = setups.iter().map(|(_, s)| s.meta().cloned()).collect();
    assert_eq!(metas, [Some(meta_of(meta)), Some(meta_of(json!({"n": 2}))), None]);
}

#[tokio::test]
async fn usage_update_carries_the_cost() {
    let (runner, _) = rich_runner();
    let mut client = rich_client(&runner, |o| o).await;
    let sid = client.new_session().await;
    let id = client.prompt(&sid, "cost").await;
    let (_, before) = client.response_with_preceding(&id).await;
    let usage: Vec<Value> = updates(&before).into_iter().filter(|u| u["sessionUpdate"] == "usage_update").collect();
    assert_eq!(
        usage,
        [
            json!({"sessionUpdate": "usage_update", "used": 10, "size": 100, "cost": {"amount": 0.25, "currency": "USD"}})
        ]
    );
}
