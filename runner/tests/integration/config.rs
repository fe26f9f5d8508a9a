//! `session/set_config_option` and `session/set_mode` through one validation path: unknown ids and
//! values are refused before the controller, an unchanged value is a silent no-op, a change sends
//! exactly one `config_option_update` with the full state; establishment responses carry the
//! state; boolean options only for clients that support them.

use crate::common;

use std::sync::Arc;

use acp_facade::Options;
use common::lifecycle::{RichHost, RichSession, SessionSpec, updates};
use common::{TestClient, code};
use serde_json::{Value, json};

fn host() -> Arc<RichHost> {
    RichHost::new(SessionSpec { config: true, ..SessionSpec::default() })
}

async fn client_with(host: &Arc<RichHost>, capabilities: Value) -> TestClient {
    let mut client = TestClient::start(Options::new(host.clone()));
    client.call_ok("initialize", json!({"protocolVersion": 1, "clientCapabilities": capabilities})).await;
    client
}

fn boolean_capable() -> Value {
    json!({"session": {"configOptions": {"boolean": {}}}})
}

/// Sends a request; returns its response and everything the agent sent before it.
async fn exchange(client: &mut TestClient, method: &str, params: Value) -> (Value, Vec<Value>) {
    let id = client.send_request(method, params).await;
    client.response_with_preceding(&id).await
}

fn set_option(session: &str, id: &str, value: &str) -> Value {
    json!({"sessionId": session, "configId": id, "value": value})
}

fn current(options: &Value, id: &str) -> Value {
    options
        .as_array()
        .expect("options")
        .iter()
        .find(|o| o["id"] == json!(id))
        .unwrap_or_else(|| panic!("no option {id} in {options}"))["currentValue"]
        .clone()
}

fn ids(options: &Value) -> Vec<String> {
    options.as_array().unwrap().iter().map(|o| o["id"].as_str().unwrap().to_owned()).collect()
}

async fn new_session(client: &mut TestClient, host: &RichHost) -> (Value, Arc<RichSession>) {
    let result = client.call_ok("session/new", json!({"cwd": "/tmp", "mcpServers": []})).await;
    let session = host.session(result["sessionId"].as_str().unwrap());
    (result, session)
}

#[tokio::test]
async fn session_new_answers_with_config_options_and_modes() {
    let host = host();
    let mut client = client_with(&host, json!({})).await;
    let (result, _) = new_session(&mut client, &host).await;
    assert_eq!(ids(&result["configOptions"]), vec!["mode", "model"], "no boolean without the capability");
    assert_eq!(result["configOptions"][0]["type"], json!("select"));
    assert_eq!(result["configOptions"][0]["category"], json!("mode"));
    assert_eq!(result["configOptions"][0]["currentValue"], json!("ask"));
    assert_eq!(
        result["modes"],
        json!({
            "currentModeId": "ask",
            "availableModes": [
                {"id": "ask", "name": "Ask", "description": "Ask before editing"},
                {"id": "code", "name": "Code"}
            ]
        })
    );
    client.hang_up().await;

    let mut client = client_with(&host, boolean_capable()).await;
    let (result, _) = new_session(&mut client, &host).await;
    assert_eq!(ids(&result["configOptions"]), vec!["mode", "model", "verbose"]);
    assert_eq!(current(&result["configOptions"], "verbose"), json!(false));
    client.hang_up().await;

    // A session without runtime config answers neither.
    let plain = RichHost::new(SessionSpec::default());
    let mut client = client_with(&plain, json!({})).await;
    let result = client.call_ok("session/new", json!({"cwd": "/tmp", "mcpServers": []})).await;
    assert!(result.get("configOptions").is_none_or(Value::is_null), "{result}");
    assert!(result.get("modes").is_none_or(Value::is_null), "{result}");
    let session = result["sessionId"].as_str().unwrap().to_owned();
    let error = client.call_err("session/set_mode", json!({"sessionId": session, "modeId": "code"})).await;
    assert_eq!(code(&error), -32602, "{error}");
    let error = client.call_err("session/set_config_option", set_option(&session, "mode", "code")).await;
    assert_eq!(code(&error), -32602, "{error}");
    client.hang_up().await;
}

#[tokio::test]
async fn unknown_ids_values_and_types_are_refused_before_the_controller() {
    let host = host();
    let mut client = client_with(&host, json!({})).await;
    let (result, s) = new_session(&mut client, &host).await;
    let session = result["sessionId"].as_str().unwrap().to_owned();
    let config = s.config.as_ref().unwrap();

    for (params, what) in [
        (set_option(&session, "temperature", "hot"), "unknown id"),
        (set_option(&session, "mode", "architect"), "unknown value"),
        (set_option(&session, "model", "ask"), "a value of another option"),
        (json!({"sessionId": session, "configId": "mode", "type": "boolean", "value": true}), "wrong type"),
        // Boolean options were not offered to this client.
        (json!({"sessionId": session, "configId": "verbose", "type": "boolean", "value": true}), "not offered"),
    ] {
        let (response, before) = exchange(&mut client, "session/set_config_option", params).await;
        assert_eq!(code(&response["error"]), -32602, "{what}: {response}");
        assert!(updates(&before).is_empty(), "{what}");
    }
    for mode in ["architect", "fast", ""] {
        let (response, before) =
            exchange(&mut client, "session/set_mode", json!({"sessionId": session, "modeId": mode})).await;
        assert_eq!(code(&response["error"]), -32602, "mode {mode:?}: {response}");
        assert!(updates(&before).is_empty());
    }
    let error = client.call_err("session/set_config_option", set_option("nope", "mode", "code")).await;
    assert_eq!(code(&error), -32002, "{error}");
    assert_eq!(config.controller_calls(), 0, "the controller is never consulted for bad input");
    client.hang_up().await;
}

#[tokio::test]
async fn the_same_value_is_a_silent_no_op_and_a_new_value_sends_one_full_update() {
    let host = host();
    let mut client = client_with(&host, json!({})).await;
    let (result, s) = new_session(&mut client, &host).await;
    let session = result["sessionId"].as_str().unwrap().to_owned();
    let config = s.config.as_ref().unwrap();

    let (response, before) =
        exchange(&mut client, "session/set_config_option", set_option(&session, "model", "fast")).await;
    assert!(before.is_empty(), "no notification for an unchanged value: {before:#?}");
    assert_eq!(response["result"]["configOptions"], result["configOptions"]);
    assert_eq!(config.controller_calls(), 0);

    let (response, before) =
        exchange(&mut client, "session/set_config_option", set_option(&session, "model", "smart")).await;
    let sent = updates(&before);
    assert_eq!(sent.len(), 1, "exactly one update: {before:#?}");
    let update = &sent[0]["params"]["update"];
    assert_eq!(update["sessionUpdate"], json!("config_option_update"));
    assert_eq!(ids(&update["configOptions"]), vec!["mode", "model"], "the full state");
    assert_eq!(current(&update["configOptions"], "model"), json!("smart"));
    assert_eq!(current(&update["configOptions"], "mode"), json!("ask"));
    assert_eq!(response["result"]["configOptions"], update["configOptions"], "the response carries the same state");
    assert_eq!(config.controller_calls(), 1);

    // The host changed the model itself: the latest state counts, never a cached one.
    config.set_directly("model", "fast");
    let (response, before) =
        exchange(&mut client, "session/set_config_option", set_option(&session, "model", "fast")).await;
    assert!(before.is_empty(), "{before:#?}");
    assert_eq!(current(&response["result"]["configOptions"], "model"), json!("fast"));
    assert_eq!(config.controller_calls(), 1);
    client.hang_up().await;
}

#[tokio::test]
async fn set_mode_and_set_config_option_converge() {
    let host = host();
    let mut client = client_with(&host, json!({})).await;
    let (result, s) = new_session(&mut client, &host).await;
    let session = result["sessionId"].as_str().unwrap().to_owned();
    let config = s.config.as_ref().unwrap();

    let (response, before) =
        exchange(&mut client, "session/set_mode", json!({"sessionId": session, "modeId": "code"})).await;
    assert_eq!(response["result"], json!({}));
    let sent = updates(&before);
    assert_eq!(sent.len(), 1, "{before:#?}");
    let via_mode = sent[0]["params"]["update"]["configOptions"].clone();
    assert_eq!(current(&via_mode, "mode"), json!("code"));
    assert_eq!(config.controller_calls(), 1);

    // The mode option already says `code`: a no-op through the other method too.
    let (response, before) =
        exchange(&mut client, "session/set_config_option", set_option(&session, "mode", "code")).await;
    assert!(before.is_empty(), "{before:#?}");
    assert_eq!(response["result"]["configOptions"], via_mode, "both methods see the same state");
    assert_eq!(config.controller_calls(), 1);

    // And back through set_config_option; set_mode then sees it as current.
    let (response, before) =
        exchange(&mut client, "session/set_config_option", set_option(&session, "mode", "ask")).await;
    assert_eq!(updates(&before).len(), 1);
    assert_eq!(current(&response["result"]["configOptions"], "mode"), json!("ask"));
    let (_, before) = exchange(&mut client, "session/set_mode", json!({"sessionId": session, "modeId": "ask"})).await;
    assert!(before.is_empty(), "{before:#?}");
    assert_eq!(config.controller_calls(), 2);
    let calls = config.sets.lock().unwrap().clone();
    assert_eq!(calls.iter().map(|(id, _)| id.as_str()).collect::<Vec<_>>(), vec!["mode", "mode"]);
    client.hang_up().await;
}

#[tokio::test]
async fn boolean_options_are_settable_only_for_clients_that_support_them() {
    let host = host();
    let mut client = client_with(&host, boolean_capable()).await;
    let (result, s) = new_session(&mut client, &host).await;
    let session = result["sessionId"].as_str().unwrap().to_owned();
    let config = s.config.as_ref().unwrap();
    let verbose = json!({"sessionId": session, "configId": "verbose", "type": "boolean", "value": true});
    let (response, before) = exchange(&mut client, "session/set_config_option", verbose.clone()).await;
    let sent = updates(&before);
    assert_eq!(sent.len(), 1, "{before:#?}");
    assert_eq!(ids(&sent[0]["params"]["update"]["configOptions"]), vec!["mode", "model", "verbose"]);
    assert_eq!(current(&response["result"]["configOptions"], "verbose"), json!(true));
    let (_, before) = exchange(&mut client, "session/set_config_option", verbose).await;
    assert!(before.is_empty(), "unchanged boolean: {before:#?}");
    // A string for a boolean option is the wrong type.
    let error = client.call_err("session/set_config_option", set_option(&session, "verbose", "true")).await;
    assert_eq!(code(&error), -32602, "{error}");
    assert_eq!(config.controller_calls(), 1);
    client.hang_up().await;
}

/// A change the controller is already making is not abandoned on `$/cancel_request`: the request
/// runs to its end and answers with what happened, so a client is never told `-32800` about a
/// change that was applied (a binding's host keeps running the call it was given).
#[tokio::test]
async fn a_change_in_progress_runs_to_its_end_despite_cancel_request() {
    let host = host();
    let mut client = client_with(&host, json!({})).await;
    let (result, s) = new_session(&mut client, &host).await;
    let session = result["sessionId"].as_str().unwrap().to_owned();
    let config = s.config.as_ref().unwrap();
    let permits = Arc::new(tokio::sync::Semaphore::new(0));
    *config.hold.lock().unwrap() = Some(permits.clone());
    for (method, params, id_changed, value) in [
        ("session/set_config_option", set_option(&session, "model", "smart"), "model", "smart"),
        ("session/set_mode", json!({"sessionId": session, "modeId": "code"}), "mode", "code"),
    ] {
        let id = client.send_request(method, params).await;
        tokio::time::timeout(common::STEP, config.setting.notified()).await.expect("the controller was called");
        client.notify("$/cancel_request", json!({"requestId": id})).await;
        // Answered after the cancel was read: the agent had seen it before the change completed.
        common::assert_serving(&mut client).await;
        permits.add_permits(1);
        let (response, before) = client.response_with_preceding(&id).await;
        assert!(response.get("error").is_none(), "{method}: {response}");
        let sent = updates(&before);
        assert_eq!(sent.len(), 1, "{method}: {before:#?}");
        assert_eq!(current(&sent[0]["params"]["update"]["configOptions"], id_changed), json!(value), "{method}");
    }
    assert_eq!(config.controller_calls(), 2);
    client.hang_up().await;
}
