//! `session_info_update` is sent only when the title or the update time differs from what the
//! client was last told — for `SessionMetaChanged` events of a turn and for
//! `Agent::observe_session_meta` alike (one record per session behind both).

use crate::common;

use acp_facade::harness::EventKind;
use acp_facade::host::SessionCatalogEntry;
use acp_facade::{Agent, Options};
use common::host::ScriptedHost;
use common::lifecycle::update_kinds;
use common::{TestClient, assert_serving, updates};
use serde_json::{Value, json};

fn meta(title: Option<&str>, updated_at: Option<&str>) -> EventKind {
    EventKind::SessionMetaChanged { title: title.map(str::to_owned), updated_at: updated_at.map(str::to_owned) }
}

/// Runs one turn emitting `events`; returns the `session_info_update`s the client got.
async fn turn(client: &mut TestClient, host: &ScriptedHost, sid: &str, n: usize, events: Vec<EventKind>) -> Vec<Value> {
    let session = host.session(sid);
    let id = client.prompt(sid, "go").await;
    let (command, _) = session.next_submit().await;
    let turn = format!("t{n}");
    let at = ("l", turn.as_str());
    session.start_turn(&command, at);
    for event in events {
        session.live(at, event);
    }
    session.durable(at, EventKind::TurnDone { message: None, stop: None });
    let (_, before) = client.response_with_preceding(&id).await;
    updates(&before).into_iter().filter(|u| u["sessionUpdate"] == "session_info_update").collect()
}

#[tokio::test]
async fn a_repeated_title_is_not_sent_again() {
    let host = ScriptedHost::new();
    let mut client = TestClient::initialized(Options::new(host.clone())).await;
    let sid = client.new_session().await;
    let first = turn(&mut client, &host, &sid, 1, vec![meta(Some("Title"), None), meta(Some("Title"), None)]).await;
    assert_eq!(first, [json!({"sessionUpdate": "session_info_update", "title": "Title"})]);
    let again = turn(&mut client, &host, &sid, 2, vec![meta(Some("Title"), None), meta(None, None)]).await;
    assert!(again.is_empty(), "{again:?}");
    let changed = turn(
        &mut client,
        &host,
        &sid,
        3,
        vec![meta(Some("Title"), Some("2026-01-01T00:00:00Z")), meta(Some("New"), None)],
    )
    .await;
    assert_eq!(
        changed,
        [
            json!({"sessionUpdate": "session_info_update", "updatedAt": "2026-01-01T00:00:00Z"}),
            json!({"sessionUpdate": "session_info_update", "title": "New"}),
        ]
    );
}

#[tokio::test]
async fn events_and_observations_share_what_the_client_was_told() {
    let host = ScriptedHost::new();
    let agent = Agent::new(Options::new(host.clone()));
    let mut client = TestClient::start_agent(agent.clone());
    client.initialize().await;
    let sid = client.new_session().await;
    turn(&mut client, &host, &sid, 1, vec![meta(Some("Title"), None)]).await;
    let session_id = acp_facade::acp::SessionId::new(sid.as_str());
    let entry = |title: &str| SessionCatalogEntry {
        session_id: session_id.clone(),
        cwd: None,
        additional_directories: Vec::new(),
        title: Some(title.to_owned()),
        updated_at: None,
    };
    // The same title observed out of band: nothing is sent.
    agent.observe_session_meta(entry("Title")).await;
    assert_serving(&mut client).await;
    // A new one is; and the turn that reports it again afterwards sends nothing.
    agent.observe_session_meta(entry("Renamed")).await;
    let sent = client.next().await.0;
    assert_eq!(sent["params"]["update"], json!({"sessionUpdate": "session_info_update", "title": "Renamed"}));
    let again = turn(&mut client, &host, &sid, 2, vec![meta(Some("Renamed"), None)]).await;
    assert!(again.is_empty(), "{again:?}");
    assert!(update_kinds(&client.transcript).iter().filter(|k| *k == "session_info_update").count() == 2);
}
