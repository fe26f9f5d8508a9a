//! The client handle's elicitations, through the wire: a form (`elicitation/create`, form mode)
//! with the answer checked against the schema, a URL (URL mode, a fresh id) and its
//! `elicitation/complete`; nothing sent for an unadvertised mode.

use crate::common;

use acp_facade::acp::ElicitationContentValue;
use acp_facade::client::{ClientError, ElicitationAnswer};
use common::client_turns::{all_capabilities, calls, client_runner, client_with, next_request};
use common::{TestClient, chunk_texts};
use serde_json::{Value, json};

async fn prompt_done(client: &mut TestClient, id: &Value) -> (Value, Vec<Value>) {
    client.response_with_preceding(id).await
}

#[tokio::test]
async fn a_form_elicitation_carries_the_schema_and_each_action_comes_back_typed() {
    let (runner, probe) = client_runner();
    let (mut client, sid) = client_with(&runner, all_capabilities()).await;
    let answers = [
        (json!({"action": "accept", "content": {"name": "Ada"}}), {
            let mut values = std::collections::BTreeMap::new();
            values.insert("name".to_owned(), ElicitationContentValue::String("Ada".into()));
            ElicitationAnswer::Accept(values)
        }),
        (json!({"action": "decline"}), ElicitationAnswer::Decline),
        (json!({"action": "cancel"}), ElicitationAnswer::Cancel),
        (json!({"action": "_vendor_later"}), ElicitationAnswer::Other("_vendor_later".into())),
    ];
    for (result, expected) in answers {
        let id = client.prompt(&sid, "form").await;
        let request = next_request(&mut client, "elicitation/create").await;
        assert_eq!(
            request["params"],
            json!({
                "sessionId": sid,
                "mode": "form",
                "message": "Your name?",
                "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
            })
        );
        client.respond(&request["id"], result.clone()).await;
        let (response, _) = prompt_done(&mut client, &id).await;
        assert_eq!(response["result"]["stopReason"], "end_turn", "{result}: {response}");
        assert_eq!(probe.last(), Ok(format!("{expected:?}")), "{result}");
    }
}

#[tokio::test]
async fn a_form_answer_that_does_not_fit_the_schema_is_a_protocol_error() {
    let (runner, probe) = client_runner();
    let (mut client, sid) = client_with(&runner, all_capabilities()).await;
    for bad in [json!({"action": "accept", "content": {}}), json!({"action": "accept", "content": {"name": 7}})] {
        let id = client.prompt(&sid, "form").await;
        let request = next_request(&mut client, "elicitation/create").await;
        client.respond(&request["id"], bad.clone()).await;
        let (response, _) = prompt_done(&mut client, &id).await;
        assert!(response.get("error").is_some(), "{bad}: {response}");
        assert!(matches!(probe.last(), Err(ClientError::Protocol { method: "elicitation/create", .. })), "{bad}");
    }
}

#[tokio::test]
async fn a_url_elicitation_has_a_fresh_id_and_is_completed_after_accept() {
    let (runner, probe) = client_runner();
    let (mut client, sid) = client_with(&runner, all_capabilities()).await;
    let mut ids = Vec::new();
    for _ in 0..2 {
        let id = client.prompt(&sid, "url https://example.com/login").await;
        let request = next_request(&mut client, "elicitation/create").await;
        let params = &request["params"];
        assert_eq!(params["mode"], "url");
        assert_eq!(params["url"], "https://example.com/login");
        assert_eq!(params["sessionId"], sid.as_str());
        assert_eq!(params["message"], "Sign in");
        let elicitation = params["elicitationId"].as_str().expect("an id").to_owned();
        client.respond(&request["id"], json!({"action": "accept"})).await;
        let (response, before) = prompt_done(&mut client, &id).await;
        assert_eq!(response["result"]["stopReason"], "end_turn");
        let complete = before.iter().find(|m| m["method"] == "elicitation/complete").expect("completed");
        assert_eq!(complete["params"], json!({"elicitationId": elicitation}));
        assert_eq!(
            chunk_texts(&before, "agent_message_chunk"),
            [format!("{:?}", ElicitationAnswer::Accept(std::collections::BTreeMap::new()))]
        );
        ids.push(elicitation);
    }
    assert_ne!(ids[0], ids[1], "a fresh id each time");
    // Declined: no completion.
    let id = client.prompt(&sid, "url https://example.com/login").await;
    let request = next_request(&mut client, "elicitation/create").await;
    client.respond(&request["id"], json!({"action": "decline"})).await;
    let (_, before) = prompt_done(&mut client, &id).await;
    assert_eq!(calls(&before), Vec::<String>::new(), "{before:?}");
    assert!(probe.outcomes().iter().all(Result::is_ok), "{:?}", probe.outcomes());
}

#[tokio::test]
async fn nothing_is_sent_for_an_unadvertised_elicitation_mode_or_a_bad_url() {
    let cases = [
        (
            "form",
            json!({"elicitation": {"url": {}}}),
            ClientError::Unsupported { method: "elicitation/create", capability: "elicitation.form" },
        ),
        (
            "url https://x.example",
            json!({"elicitation": {"form": {}}}),
            ClientError::Unsupported { method: "elicitation/create", capability: "elicitation.url" },
        ),
        (
            "form",
            json!({"elicitation": {"form": null}}),
            ClientError::Unsupported { method: "elicitation/create", capability: "elicitation.form" },
        ),
        (
            "url /relative/path",
            all_capabilities(),
            ClientError::InvalidArgument { field: "url", reason: "\"/relative/path\" is not an absolute URL".into() },
        ),
    ];
    for (text, capabilities, expected) in cases {
        let (runner, probe) = client_runner();
        let (mut client, sid) = client_with(&runner, capabilities.clone()).await;
        let id = client.prompt(&sid, text).await;
        let (response, before) = prompt_done(&mut client, &id).await;
        assert!(response.get("error").is_some(), "{text}: {response}");
        assert!(calls(&before).is_empty(), "{text} with {capabilities}: {before:?}");
        assert_eq!(probe.last(), Err(expected), "{text} with {capabilities}");
    }
}
