//! `session/delete`: never for a live (or closing) session, the deleter is called otherwise, and
//! the capability exists only when a deleter is configured.

use crate::common;

use std::sync::Arc;

use acp_facade::Options;
use common::lifecycle::{RichHost, SessionSpec, Shutdown, eventually};
use common::{TestClient, code};
use serde_json::json;
use tokio::sync::Semaphore;

#[tokio::test]
async fn the_capability_is_advertised_only_with_a_deleter() {
    let host = RichHost::new(SessionSpec::default());
    let mut client = TestClient::start(Options::new(host.clone()).deleter(host.clone()));
    let init = client.initialize().await;
    assert_eq!(init["agentCapabilities"]["sessionCapabilities"]["delete"], json!({}));
    client.hang_up().await;

    let mut client = TestClient::start(Options::new(host.clone()));
    let init = client.initialize().await;
    assert!(
        init.pointer("/agentCapabilities/sessionCapabilities/delete").is_none_or(serde_json::Value::is_null),
        "{init}"
    );
    let session = client.new_session().await;
    assert_eq!(code(&client.call_err("session/delete", json!({"sessionId": "stored"})).await), -32601);
    assert_eq!(code(&client.call_err("session/delete", json!({"sessionId": session})).await), -32601);
    client.hang_up().await;
    assert!(host.deletes().is_empty());
}

#[tokio::test]
async fn a_live_session_is_never_deleted_and_a_closed_one_is() {
    let host = RichHost::new(SessionSpec::default());
    let mut client = TestClient::initialized(Options::new(host.clone()).deleter(host.clone())).await;
    let session = client.new_session().await;

    let error = client.call_err("session/delete", json!({"sessionId": session})).await;
    assert_eq!(code(&error), -32600, "{error}");
    assert!(host.deletes().is_empty(), "the deleter must not be consulted for a live session");

    // Still live and usable after the refused delete.
    let s = host.session(&session);
    let prompt = client.prompt(&session, "still here?").await;
    let (command, _) = s.inner.next_submit().await;
    s.inner.start_turn(&command, ("l", "t"));
    s.inner.durable(("l", "t"), acp_facade::harness::EventKind::TurnDone { message: None, stop: None });
    assert_eq!(client.response(&prompt).await["result"]["stopReason"], json!("end_turn"));

    assert_eq!(client.call_ok("session/close", json!({"sessionId": session})).await, json!({}));
    assert_eq!(client.call_ok("session/delete", json!({"sessionId": session})).await, json!({}));
    assert_eq!(host.deletes(), vec![session.clone()]);
    let log = host.log.entries();
    assert_eq!(log.iter().filter(|e| e.starts_with("delete:")).count(), 1);
    let shutdown = host.log.position(&format!("{session}:shutdown")).unwrap();
    let deleted = host.log.position(&format!("delete:{session}")).unwrap();
    assert!(shutdown < deleted);
    client.hang_up().await;
}

#[tokio::test]
async fn a_closing_session_is_still_live_for_delete() {
    let permits = Arc::new(Semaphore::new(0));
    let host = RichHost::new(SessionSpec { shutdown: Shutdown::Held(permits.clone()), ..SessionSpec::default() });
    let mut client = TestClient::initialized(Options::new(host.clone()).deleter(host.clone())).await;
    let session = client.new_session().await;
    let s = host.session(&session);
    let close = client.send_request("session/close", json!({"sessionId": session})).await;
    eventually("shutdown started", || s.shutdown_count() == 1).await;
    let error = client.call_err("session/delete", json!({"sessionId": session})).await;
    assert_eq!(code(&error), -32600, "{error}");
    assert!(host.deletes().is_empty());
    permits.add_permits(1);
    assert_eq!(client.response(&close).await["result"], json!({}));
    assert_eq!(client.call_ok("session/delete", json!({"sessionId": session})).await, json!({}));
    assert_eq!(host.deletes(), vec![session]);
    client.hang_up().await;
}

#[tokio::test]
async fn stored_and_unknown_ids_go_to_the_deleter_and_malformed_ids_do_not() {
    let host = RichHost::new(SessionSpec::default());
    host.store("stored-1", Vec::new());
    let mut client = TestClient::initialized(Options::new(host.clone()).deleter(host.clone())).await;
    assert_eq!(client.call_ok("session/delete", json!({"sessionId": "stored-1"})).await, json!({}));
    assert_eq!(client.call_ok("session/delete", json!({"sessionId": "never-existed"})).await, json!({}));
    assert_eq!(host.deletes(), vec!["stored-1".to_owned(), "never-existed".to_owned()]);
    assert!(!host.stored.lock().unwrap().contains_key("stored-1"));

    for bad in [json!(""), json!("a\u{0007}b"), json!("x".repeat(300))] {
        let error = client.call_err("session/delete", json!({"sessionId": bad})).await;
        assert_eq!(code(&error), -32602, "{error}");
    }
    let error = client.call_err("session/delete", json!({})).await;
    assert_eq!(code(&error), -32602, "{error}");
    assert_eq!(host.deletes().len(), 2, "malformed ids never reach the deleter");
    client.hang_up().await;
}

/// A deletion the host is already running is not abandoned on `$/cancel_request`: the request
/// answers with what happened (deleted), never `-32800` about a session that is gone.
#[tokio::test]
async fn a_deletion_in_progress_runs_to_its_end_despite_cancel_request() {
    let host = RichHost::new(SessionSpec::default());
    let mut client = TestClient::initialized(Options::new(host.clone()).deleter(host.clone())).await;
    let session = client.new_session().await;
    client.call_ok("session/close", json!({"sessionId": session})).await;
    let permits = Arc::new(Semaphore::new(0));
    *host.hold_delete.lock().unwrap() = Some(permits.clone());
    let id = client.send_request("session/delete", json!({"sessionId": session})).await;
    tokio::time::timeout(common::STEP, host.deleting.notified()).await.expect("the deleter was called");
    client.notify("$/cancel_request", json!({"requestId": id})).await;
    common::assert_serving(&mut client).await;
    permits.add_permits(1);
    let response = client.response(&id).await;
    assert_eq!(response["result"], json!({}), "{response}");
    assert_eq!(host.deletes(), [session]);
    client.hang_up().await;
}
