//! Stream cursors over the remote transports, driven through the wire: every `session/update`
//! carries its position (`_meta["acp/cursor"]`, and the SSE event id), and an SSE stream reopened
//! with `Last-Event-ID` gives exactly what the client lost — at fifty different cut points of a
//! streamed turn.

use std::collections::HashSet;

use futures::StreamExt as _;
use hyper::StatusCode;
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;

use super::remote::{
    Events, body_text, initialize_request, loopback, post, prompt, said, serve, streamed, ws_send, ws_session,
    ws_until_answer,
};

/// The cursor an update carries.
fn cursor(message: &Value) -> Option<&str> {
    message["params"]["_meta"]["acp/cursor"].as_str()
}

fn is_update(message: &Value) -> bool {
    message["method"] == "session/update"
}

/// An initialized HTTP connection with one session: the connection id and the session id.
async fn http_session(server: &acp_facade::remote::RemoteServer) -> (String, String) {
    let response = post(server, &[], &initialize_request()).await;
    let connection = response.headers()["acp-connection-id"].to_str().unwrap().to_owned();
    body_text(response).await;
    let mut events = Events::open(server, &connection, None).await;
    let new = json!({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/tmp", "mcpServers": []}});
    post(server, &[("acp-connection-id", &connection)], &new).await;
    let session = events.until_answer(1).await.pop().unwrap()["result"]["sessionId"].as_str().unwrap().to_owned();
    (connection, session)
}

#[tokio::test]
async fn every_update_carries_its_cursor_in_meta_and_as_its_sse_event_id() {
    let server = serve(loopback()).await;
    let (connection, session) = http_session(&server).await;
    let mut events = Events::open(&server, &connection, Some(&session)).await;
    let headers = [("acp-connection-id", connection.as_str()), ("acp-session-id", session.as_str())];
    let session_value = json!(session);
    let mut ids = Vec::new();
    let mut cursors = Vec::new();
    for (id, text) in [(2, "tool"), (3, "say one two three"), (4, "usage")] {
        post(&server, &headers, &prompt(id, &session_value, text)).await;
        loop {
            let message = events.next().await.expect("the turn's messages");
            let event_id = events.last_id.clone().expect("every event has an id");
            ids.push(event_id.clone());
            if is_update(&message) {
                let cursor = cursor(&message).unwrap_or_else(|| panic!("an update without a cursor: {message}"));
                assert_eq!(event_id, cursor, "the SSE event id is the update's cursor");
                cursors.push(cursor.parse::<u64>().expect("a cursor of digits"));
            } else {
                assert!(event_id.contains('.'), "a message without a cursor is named after the last one: {event_id}");
            }
            if message["id"] == json!(id) && message.get("method").is_none() {
                break;
            }
        }
    }
    assert!(cursors.len() >= 8, "tool calls, chunks and usage all carry cursors: {cursors:?}");
    assert!(cursors.windows(2).all(|pair| pair[0] < pair[1]), "cursors increase along the stream: {cursors:?}");
    assert_eq!(ids.iter().collect::<HashSet<_>>().len(), ids.len(), "event ids are unique: {ids:?}");

    // A WebSocket carries the same cursors in its updates.
    let (mut socket, session) = ws_session(&server).await;
    ws_send(&mut socket, &prompt(2, &session, "say a b c")).await;
    let seen = ws_until_answer(&mut socket, 2).await;
    let updates: Vec<&Value> = seen.iter().filter(|m| is_update(m)).collect();
    assert_eq!(updates.len(), 3);
    assert!(updates.iter().all(|m| cursor(m).is_some_and(|c| c.parse::<u64>().is_ok())), "{updates:?}");

    // ACP v2: the lines rewritten into v2's forms (tool calls) keep their cursors.
    let mut socket = super::remote::websocket(&server, None).await.expect("the upgrade");
    let ask = json!({"protocolVersion": 2, "info": {"name": "t", "version": "1"}, "capabilities": {}});
    ws_send(&mut socket, &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": ask})).await;
    assert_eq!(ws_until_answer(&mut socket, 0).await.pop().unwrap()["result"]["protocolVersion"], 2);
    ws_send(&mut socket, &json!({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/tmp"}})).await;
    let session = ws_until_answer(&mut socket, 1).await.pop().unwrap()["result"]["sessionId"].clone();
    ws_send(&mut socket, &prompt(2, &session, "tool")).await;
    // v2 acknowledges the prompt at once; its turn ends with an idle state update.
    let mut seen = ws_until_answer(&mut socket, 2).await;
    while !seen.last().is_some_and(|m| m["params"]["update"]["state"] == "idle") {
        let message = tokio::time::timeout(std::time::Duration::from_secs(10), socket.next()).await.expect("in time");
        if let Some(Ok(Message::Text(text))) = message {
            seen.push(serde_json::from_str(text.as_str()).unwrap());
        }
    }
    let kinds = |m: &Value| m["params"]["update"]["sessionUpdate"].as_str().unwrap_or_default().to_owned();
    let turn: Vec<&Value> = seen
        .iter()
        .filter(|m| {
            is_update(m) && ["tool_call", "tool_call_update", "agent_message_chunk"].contains(&kinds(m).as_str())
        })
        .collect();
    assert!(turn.len() >= 3, "{seen:?}");
    assert!(turn.iter().all(|m| cursor(m).is_some()), "v2 lines keep their cursors: {turn:?}");
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_stream_reopened_after_the_last_event_seen_misses_nothing_and_gets_nothing_twice() {
    const CHUNKS: usize = 60;
    let server = serve(loopback()).await;
    let (connection, session) = http_session(&server).await;
    let headers = [("acp-connection-id", connection.as_str()), ("acp-session-id", session.as_str())];
    let session_value = json!(session);
    let mut events = Events::open(&server, &connection, Some(&session)).await;
    // Each turn is cut once, after `cut` events, at fifty different points.
    for cut in 1..=50_u64 {
        let id = 100 + cut;
        post(&server, &headers, &prompt(id, &session_value, &format!("stream {CHUNKS}"))).await;
        let mut received = Vec::new();
        for _ in 0..cut {
            received.push(events.next().await.expect("an event before the cut"));
        }
        let last_seen = events.last_id.clone().expect("the events have ids");
        // The cut: the client's connection goes, with whatever it had not read yet.
        drop(events);
        events = Events::reopen(&server, &connection, Some(&session), Some(&last_seen))
            .await
            .unwrap_or_else(|refused| panic!("cut {cut} after {last_seen}: {refused:?}"));
        received.extend(events.until_answer(id).await);
        let answers = received.iter().filter(|m| m["id"] == json!(id)).count();
        assert_eq!(answers, 1, "cut {cut}: the answer comes once");
        assert_eq!(received.last().unwrap()["result"]["stopReason"], "end_turn", "cut {cut}");
        assert_eq!(said(&received), streamed(CHUNKS), "cut {cut}: every chunk once, in order");
        let cursors: Vec<&str> = received.iter().filter_map(cursor).collect();
        assert_eq!(cursors.iter().collect::<HashSet<_>>().len(), cursors.len(), "cut {cut}: no update twice");
    }
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_stream_reopened_while_its_old_response_is_open_takes_it_over() {
    let server = serve(loopback()).await;
    let (connection, session) = http_session(&server).await;
    let headers = [("acp-connection-id", connection.as_str()), ("acp-session-id", session.as_str())];
    let mut old = Events::open(&server, &connection, Some(&session)).await;
    post(&server, &headers, &prompt(2, &json!(session), "say one two three")).await;
    let first = old.next().await.unwrap();
    let last_seen = old.last_id.clone().unwrap();
    // The client thinks the old stream is dead; the server does not know yet.
    let mut new = Events::reopen(&server, &connection, Some(&session), Some(&last_seen)).await.expect("taken over");
    let mut received = vec![first];
    received.extend(new.until_answer(2).await);
    assert_eq!(said(&received), "one two three");
    // The old response ended (after anything it had already sent, which the client ignores).
    while old.next().await.is_some() {}
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_stream_reopened_after_an_unknown_event_is_refused_409_and_left_as_it_was() {
    let server = serve(loopback()).await;
    let (connection, session) = http_session(&server).await;
    let headers = [("acp-connection-id", connection.as_str()), ("acp-session-id", session.as_str())];
    let mut events = Events::open(&server, &connection, Some(&session)).await;
    post(&server, &headers, &prompt(2, &json!(session), "say a b")).await;
    events.until_answer(2).await;
    for unknown in ["999999", "not-a-cursor", ""] {
        let refused = Events::reopen(&server, &connection, Some(&session), Some(unknown)).await.err();
        assert_eq!(refused, Some((StatusCode::CONFLICT, format!("Unknown Last-Event-ID: {unknown}"))), "{unknown:?}");
    }
    // A stream the client never opened holds no event either.
    let refused = Events::reopen(&server, &connection, Some("sess-other"), Some("1")).await.err();
    assert_eq!(refused.map(|(status, _)| status), Some(StatusCode::CONFLICT));
    // The open stream still serves.
    post(&server, &headers, &prompt(3, &json!(session), "say c d")).await;
    assert_eq!(said(&events.until_answer(3).await), "c d");
    server.shutdown().await.unwrap();
}
