//! The remote transport (`acp_facade::remote`, feature `remote`) driven through the wire: a
//! runner-backed agent served in process, a plain HTTP/1.1 client (hyper) for Streamable HTTP and
//! its status codes, and a WebSocket client (tokio-tungstenite).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use acp_facade::remote::{RemoteConfig, RemoteServer, TokenVerifier, serve_http};
use acp_facade_runner::{MemoryStore, Store};
use futures::{SinkExt as _, StreamExt as _};
use http_body_util::{BodyExt as _, Full};
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response, StatusCode};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest as _;

use crate::common::runner::{TurnsSpec, journal_kinds, runner};

const LOOPBACK: &str = "127.0.0.1:0";

/// A runner-backed agent served remotely with `config`.
pub(super) async fn serve(config: RemoteConfig) -> RemoteServer {
    serve_on(Arc::new(MemoryStore::new()), config).await
}

/// A runner-backed agent on `store` served remotely with `config`.
pub(super) async fn serve_on(store: Arc<dyn Store>, config: RemoteConfig) -> RemoteServer {
    let (runner, _probe) = runner(store, TurnsSpec::default());
    serve_http(runner.options().protocol_v2(true), config).await.expect("serve_http")
}

/// Waits (polling, up to two minutes) until `done` holds.
async fn eventually(what: &str, mut done: impl AsyncFnMut() -> bool) {
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    while !done().await {
        assert!(std::time::Instant::now() < deadline, "never: {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

pub(super) fn loopback() -> RemoteConfig {
    RemoteConfig::new(LOOPBACK.parse().unwrap())
}

/// `alice` with the token `s3cret`, `bob` with `b0b`.
fn verifier() -> TokenVerifier {
    Arc::new(|token: &str| {
        let name = match token {
            "s3cret" => Some("alice".to_owned()),
            "b0b" => Some("bob".to_owned()),
            _ => None,
        };
        Box::pin(async move { name })
    })
}

/// Sends one request on a fresh HTTP/1.1 connection.
pub(super) async fn send(addr: SocketAddr, request: Request<Full<Bytes>>) -> Response<Incoming> {
    let stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream)).await.expect("handshake");
    tokio::spawn(connection);
    sender.send_request(request).await.expect("send the request")
}

/// A request to the server's endpoint with `headers` (a `Host` naming the server unless given).
pub(super) fn request(
    server: &RemoteServer,
    method: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Request<Full<Bytes>> {
    let mut builder = Request::builder().method(method).uri("/acp");
    if !headers.iter().any(|(name, _)| name.eq_ignore_ascii_case("host")) {
        builder = builder.header("host", server.local_addr().to_string());
    }
    for (name, value) in headers {
        builder = builder.header(*name, *value);
    }
    builder.body(Full::new(Bytes::from(body.to_owned()))).unwrap()
}

/// A JSON POST with `headers`.
pub(super) async fn post(server: &RemoteServer, headers: &[(&str, &str)], message: &Value) -> Response<Incoming> {
    let mut all = vec![("content-type", "application/json")];
    all.extend_from_slice(headers);
    send(server.local_addr(), request(server, "POST", &all, &message.to_string())).await
}

pub(super) async fn body_text(response: Response<Incoming>) -> String {
    String::from_utf8(response.into_body().collect().await.unwrap().to_bytes().to_vec()).unwrap()
}

pub(super) fn initialize_request() -> Value {
    json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}})
}

/// The messages of one SSE response, one event at a time.
pub(super) struct Events {
    body: Incoming,
    buffer: String,
    /// The id of the last event returned.
    pub(super) last_id: Option<String>,
}

impl Events {
    pub(super) async fn open(server: &RemoteServer, connection: &str, session: Option<&str>) -> Self {
        Self::reopen(server, connection, session, None).await.expect("the stream opens")
    }

    /// Opens the stream, after the event `last_event_id` when given (`Last-Event-ID`); the
    /// refusal's status and body when it is refused.
    pub(super) async fn reopen(
        server: &RemoteServer,
        connection: &str,
        session: Option<&str>,
        last_event_id: Option<&str>,
    ) -> Result<Self, (StatusCode, String)> {
        let mut headers = vec![("accept", "text/event-stream"), ("acp-connection-id", connection)];
        if let Some(session) = session {
            headers.push(("acp-session-id", session));
        }
        if let Some(id) = last_event_id {
            headers.push(("last-event-id", id));
        }
        let response = send(server.local_addr(), request(server, "GET", &headers, "")).await;
        if response.status() != StatusCode::OK {
            return Err((response.status(), body_text(response).await));
        }
        assert_eq!(response.headers()["content-type"], "text/event-stream");
        Ok(Self { body: response.into_body(), buffer: String::new(), last_id: None })
    }

    /// The next event's JSON (keep-alive comments skipped); `None` when the stream ended.
    pub(super) async fn next(&mut self) -> Option<Value> {
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let event: String = self.buffer.drain(..end + 2).collect();
                let data: String =
                    event.lines().filter_map(|line| line.strip_prefix("data:")).map(str::trim_start).collect();
                if data.is_empty() {
                    continue;
                }
                self.last_id =
                    event.lines().find_map(|line| line.strip_prefix("id:")).map(|id| id.trim_start().to_owned());
                return Some(serde_json::from_str(&data).expect("an event's data is JSON"));
            }
            let frame =
                tokio::time::timeout(Duration::from_secs(10), self.body.frame()).await.expect("an event in time");
            match frame {
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        self.buffer.push_str(std::str::from_utf8(&data).unwrap());
                    }
                }
                _ => return None,
            }
        }
    }

    /// Events up to and including the answer to `id`.
    pub(super) async fn until_answer(&mut self, id: u64) -> Vec<Value> {
        let mut seen = Vec::new();
        while let Some(event) = self.next().await {
            let done = event["id"] == json!(id) && event.get("method").is_none();
            seen.push(event);
            if done {
                return seen;
            }
        }
        panic!("the stream ended before the answer to {id}: {seen:?}");
    }
}

/// The text of the `agent_message_chunk`s among `messages`.
pub(super) fn said(messages: &[Value]) -> String {
    messages
        .iter()
        .filter(|m| m["params"]["update"]["sessionUpdate"] == "agent_message_chunk")
        .map(|m| m["params"]["update"]["content"]["text"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn streamable_http_serves_initialize_a_session_and_a_streamed_prompt() {
    let server = serve(loopback()).await;
    let response = post(&server, &[], &initialize_request()).await;
    assert_eq!(response.status(), StatusCode::OK);
    let connection = response.headers()["acp-connection-id"].to_str().unwrap().to_owned();
    let answer: Value = serde_json::from_str(&body_text(response).await).unwrap();
    assert_eq!(answer["id"], 0);
    assert_eq!(answer["result"]["protocolVersion"], 1);
    let id = connection.as_str();

    let mut events = Events::open(&server, id, None).await;
    let new = json!({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/tmp", "mcpServers": []}});
    assert_eq!(post(&server, &[("acp-connection-id", id)], &new).await.status(), StatusCode::ACCEPTED);
    let answer = events.until_answer(1).await.pop().unwrap();
    let session = answer["result"]["sessionId"].as_str().expect("a session id").to_owned();

    let prompt = json!({"jsonrpc": "2.0", "id": 2, "method": "session/prompt",
        "params": {"sessionId": session, "prompt": [{"type": "text", "text": "say one two three"}]}});
    // A message about a session must name it in `Acp-Session-Id`, and name the same one.
    let missing = post(&server, &[("acp-connection-id", id)], &prompt).await;
    assert_eq!(missing.status(), StatusCode::BAD_REQUEST);
    assert_eq!(body_text(missing).await, "Missing Acp-Session-Id");
    let mismatched = post(&server, &[("acp-connection-id", id), ("acp-session-id", "other")], &prompt).await;
    assert_eq!(mismatched.status(), StatusCode::BAD_REQUEST);

    let mut session_events = Events::open(&server, id, Some(&session)).await;
    // One receiver per stream.
    let second = send(
        server.local_addr(),
        request(
            &server,
            "GET",
            &[("accept", "text/event-stream"), ("acp-connection-id", id), ("acp-session-id", &session)],
            "",
        ),
    )
    .await;
    assert_eq!(second.status(), StatusCode::CONFLICT);
    let accepted = post(&server, &[("acp-connection-id", id), ("acp-session-id", &session)], &prompt).await;
    assert_eq!(accepted.status(), StatusCode::ACCEPTED);
    let mut seen = session_events.until_answer(2).await;
    let answer = seen.pop().unwrap();
    assert_eq!(answer["result"]["stopReason"], "end_turn");
    assert_eq!(said(&seen), "one two three");
    assert!(seen.iter().all(|m| m["params"]["sessionId"] == json!(session)));

    // A hang-up: the connection is gone, and its streams end.
    let deleted = send(server.local_addr(), request(&server, "DELETE", &[("acp-connection-id", id)], "")).await;
    assert_eq!(deleted.status(), StatusCode::ACCEPTED);
    assert_eq!(events.next().await, None);
    assert_eq!(session_events.next().await, None);
    let gone = post(&server, &[("acp-connection-id", id), ("acp-session-id", &session)], &prompt).await;
    assert_eq!(gone.status(), StatusCode::NOT_FOUND);
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn streamable_http_refuses_what_is_not_acp() {
    let server = serve(loopback()).await;
    let text = send(server.local_addr(), request(&server, "POST", &[("content-type", "text/plain")], "{}")).await;
    assert_eq!(text.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE);
    let bad =
        send(server.local_addr(), request(&server, "POST", &[("content-type", "application/json")], "{nope")).await;
    assert_eq!(bad.status(), StatusCode::BAD_REQUEST);
    let batch = post(&server, &[], &json!([initialize_request()])).await;
    assert_eq!(batch.status(), StatusCode::BAD_REQUEST);
    assert_eq!(serde_json::from_str::<Value>(&body_text(batch).await).unwrap()["error"]["code"], -32600);
    let no_connection = post(&server, &[], &json!({"jsonrpc": "2.0", "id": 1, "method": "session/list"})).await;
    assert_eq!(no_connection.status(), StatusCode::BAD_REQUEST);
    let unknown =
        post(&server, &[("acp-connection-id", "nope")], &json!({"jsonrpc": "2.0", "id": 1, "method": "session/list"}))
            .await;
    assert_eq!(unknown.status(), StatusCode::NOT_FOUND);
    let not_events = send(server.local_addr(), request(&server, "GET", &[("acp-connection-id", "nope")], "")).await;
    assert_eq!(not_events.status(), StatusCode::NOT_ACCEPTABLE);
    server.shutdown().await.unwrap();
}

/// A WebSocket client on `server`, with `Authorization: Bearer token` when given.
pub(super) async fn websocket(
    server: &RemoteServer,
    token: Option<&str>,
) -> Result<
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>,
    tokio_tungstenite::tungstenite::Error,
> {
    let mut request = server.url().replace("http://", "ws://").into_client_request().unwrap();
    if let Some(token) = token {
        request.headers_mut().insert("authorization", format!("Bearer {token}").parse().unwrap());
    }
    tokio_tungstenite::connect_async(request).await.map(|(socket, response)| {
        assert!(response.headers().contains_key("acp-connection-id"));
        socket
    })
}

pub(super) type Socket = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

pub(super) async fn ws_send(socket: &mut Socket, message: &Value) {
    socket.send(Message::text(message.to_string())).await.unwrap();
}

/// Messages up to and including the answer to `id`.
pub(super) async fn ws_until_answer(socket: &mut Socket, id: u64) -> Vec<Value> {
    let mut seen = Vec::new();
    loop {
        let message = tokio::time::timeout(Duration::from_secs(10), socket.next()).await.expect("a message in time");
        match message {
            Some(Ok(Message::Text(text))) => {
                let value: Value = serde_json::from_str(text.as_str()).unwrap();
                let done = value["id"] == json!(id) && value.get("method").is_none();
                seen.push(value);
                if done {
                    return seen;
                }
            }
            Some(Ok(_)) => {}
            other => panic!("the socket ended before the answer to {id}: {other:?} after {seen:?}"),
        }
    }
}

/// A WebSocket on `server` that has been initialized (request id 0) and has made a session
/// (request id 1): the socket and the session id.
pub(super) async fn ws_session(server: &RemoteServer) -> (Socket, Value) {
    let mut socket = websocket(server, None).await.expect("the upgrade");
    ws_send(&mut socket, &initialize_request()).await;
    assert_eq!(ws_until_answer(&mut socket, 0).await.pop().unwrap()["result"]["protocolVersion"], 1);
    ws_send(
        &mut socket,
        &json!({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/tmp", "mcpServers": []}}),
    )
    .await;
    let session = ws_until_answer(&mut socket, 1).await.pop().unwrap()["result"]["sessionId"].clone();
    (socket, session)
}

/// A `session/prompt` of `text` with request id `id`.
pub(super) fn prompt(id: u64, session: &Value, text: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "session/prompt",
        "params": {"sessionId": session, "prompt": [{"type": "text", "text": text}]}})
}

#[tokio::test]
async fn websocket_serves_initialize_a_session_and_a_streamed_prompt() {
    let server = serve(loopback()).await;
    let (mut socket, session) = ws_session(&server).await;
    // Pretty-printed JSON (line breaks inside a message) is one message.
    let prompt = json!({"jsonrpc": "2.0", "id": 2, "method": "session/prompt",
        "params": {"sessionId": session, "prompt": [{"type": "text", "text": "say one two"}]}});
    socket.send(Message::text(serde_json::to_string_pretty(&prompt).unwrap())).await.unwrap();
    let mut seen = ws_until_answer(&mut socket, 2).await;
    assert_eq!(seen.pop().unwrap()["result"]["stopReason"], "end_turn");
    assert_eq!(said(&seen), "one two");
    // Text that is not JSON is answered with a parse error, and the connection goes on.
    socket.send(Message::text("not json")).await.unwrap();
    let error: Value = match socket.next().await {
        Some(Ok(Message::Text(text))) => serde_json::from_str(text.as_str()).unwrap(),
        other => panic!("{other:?}"),
    };
    assert_eq!(error["error"]["code"], -32700);
    assert_eq!(server.connections(), 1);
    socket.close(None).await.unwrap();
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_token_verifier_answers_401_before_any_acp_and_connections_keep_their_principal() {
    let server = serve(loopback().token_verifier(verifier())).await;
    for headers in [vec![], vec![("authorization", "Bearer wrong")], vec![("authorization", "Basic s3cret")]] {
        let refused = post(&server, &headers, &initialize_request()).await;
        assert_eq!(refused.status(), StatusCode::UNAUTHORIZED, "{headers:?}");
        assert_eq!(refused.headers()["www-authenticate"], "Bearer");
    }
    assert_eq!(server.connections(), 0, "nothing was served");
    match websocket(&server, Some("wrong")).await {
        Err(tokio_tungstenite::tungstenite::Error::Http(response)) => {
            assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
        }
        other => panic!("a WebSocket with a wrong token: {:?}", other.map(|_| ())),
    }
    assert!(websocket(&server, Some("s3cret")).await.is_ok());

    let alice = post(&server, &[("authorization", "Bearer s3cret")], &initialize_request()).await;
    assert_eq!(alice.status(), StatusCode::OK);
    let connection = alice.headers()["acp-connection-id"].to_str().unwrap().to_owned();
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "session/list", "params": {}});
    let bob = post(&server, &[("authorization", "Bearer b0b"), ("acp-connection-id", &connection)], &list).await;
    assert_eq!(bob.status(), StatusCode::FORBIDDEN, "another principal's connection");
    let again = post(&server, &[("authorization", "Bearer s3cret"), ("acp-connection-id", &connection)], &list).await;
    assert_eq!(again.status(), StatusCode::ACCEPTED);
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_session_belongs_to_the_principal_whose_connection_created_it() {
    let server = serve(loopback().token_verifier(verifier())).await;
    let mut alice = websocket(&server, Some("s3cret")).await.expect("alice's upgrade");
    let mut bob = websocket(&server, Some("b0b")).await.expect("bob's upgrade");
    for socket in [&mut alice, &mut bob] {
        ws_send(socket, &initialize_request()).await;
        ws_until_answer(socket, 0).await;
    }
    ws_send(
        &mut alice,
        &json!({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/tmp", "mcpServers": []}}),
    )
    .await;
    let session = ws_until_answer(&mut alice, 1).await.pop().unwrap()["result"]["sessionId"].clone();
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "session/list", "params": {}});
    ws_send(&mut alice, &list).await;
    let listed = ws_until_answer(&mut alice, 2).await.pop().unwrap();
    assert_eq!(listed["result"]["sessions"][0]["sessionId"], session, "{listed}");
    ws_send(&mut bob, &list).await;
    let listed = ws_until_answer(&mut bob, 2).await.pop().unwrap();
    assert_eq!(listed["result"]["sessions"], json!([]), "bob lists none of alice's: {listed}");
    // To bob, alice's session answers exactly as a session id nobody has.
    let resume = |id: u64, session: &Value| {
        json!({"jsonrpc": "2.0", "id": id, "method": "session/resume",
            "params": {"sessionId": session, "cwd": "/tmp", "mcpServers": []}})
    };
    ws_send(&mut bob, &resume(3, &session)).await;
    let theirs = ws_until_answer(&mut bob, 3).await.pop().unwrap();
    ws_send(&mut bob, &resume(3, &json!("no-such-session"))).await;
    let unknown = ws_until_answer(&mut bob, 3).await.pop().unwrap();
    assert!(theirs.get("error").is_some(), "{theirs}");
    let unknown_text = unknown.to_string().replace("no-such-session", "SESSION");
    let session_text = session.as_str().unwrap();
    assert_eq!(theirs.to_string().replace(session_text, "SESSION"), unknown_text);
    for socket in [&mut alice, &mut bob] {
        socket.close(None).await.unwrap();
    }
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn origins_not_allowed_and_non_loopback_hosts_are_refused_with_403() {
    let server = serve(loopback().allow_origin("https://editor.example")).await;
    let evil = post(&server, &[("origin", "https://evil.example")], &initialize_request()).await;
    assert_eq!(evil.status(), StatusCode::FORBIDDEN);
    let allowed = post(&server, &[("origin", "https://editor.example")], &initialize_request()).await;
    assert_eq!(allowed.status(), StatusCode::OK);
    // DNS rebinding: a page of evil.example whose name now resolves to 127.0.0.1.
    let port = server.local_addr().port();
    let rebound = post(&server, &[("host", &format!("evil.example:{port}"))], &initialize_request()).await;
    assert_eq!(rebound.status(), StatusCode::FORBIDDEN);
    for host in [format!("localhost:{port}"), format!("127.0.0.1:{port}"), "localhost".to_owned()] {
        let ok = post(&server, &[("host", &host)], &initialize_request()).await;
        assert_eq!(ok.status(), StatusCode::OK, "{host}");
    }
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_body_over_the_limit_is_answered_413() {
    let server = serve(loopback().max_body_size(1024)).await;
    let mut big = initialize_request();
    big["params"]["padding"] = json!("x".repeat(2048));
    assert_eq!(post(&server, &[], &big).await.status(), StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(post(&server, &[], &initialize_request()).await.status(), StatusCode::OK);
    // Over a WebSocket: the socket is closed with 1009 (message too big).
    let mut socket = websocket(&server, None).await.unwrap();
    ws_send(&mut socket, &big).await;
    match tokio::time::timeout(Duration::from_secs(10), socket.next()).await.unwrap() {
        Some(Ok(Message::Close(Some(frame)))) => assert_eq!(u16::from(frame.code), 1009),
        other => panic!("expected the server's close: {other:?}"),
    }
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_non_loopback_address_without_a_token_verifier_is_refused() {
    let (runner, _probe) = runner(Arc::new(MemoryStore::new()), TurnsSpec::default());
    let error = serve_http(runner.options(), RemoteConfig::new("0.0.0.0:0".parse().unwrap())).await.unwrap_err();
    assert_eq!(error.kind(), std::io::ErrorKind::InvalidInput);
    assert!(error.to_string().contains("token verifier"), "{error}");
    let with_verifier = RemoteConfig::new("0.0.0.0:0".parse().unwrap()).token_verifier(verifier());
    serve_http(runner.options(), with_verifier).await.expect("allowed with a verifier").shutdown().await.unwrap();
}

#[tokio::test]
async fn shutdown_waits_for_a_turn_that_ends_within_the_grace_period() {
    let server = serve(loopback().shutdown_grace(Duration::from_secs(20))).await;
    let (mut socket, session) = ws_session(&server).await;
    ws_send(&mut socket, &prompt(2, &session, "wait")).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let shutdown = tokio::spawn(server.shutdown());
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!shutdown.is_finished(), "the turn in flight holds the shutdown");
    // The connection still serves during the grace period: the client ends its turn itself.
    ws_send(&mut socket, &json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": session}}))
        .await;
    let answer = ws_until_answer(&mut socket, 2).await.pop().unwrap();
    assert_eq!(answer["result"]["stopReason"], "cancelled");
    tokio::time::timeout(Duration::from_secs(5), shutdown)
        .await
        .expect("well before the grace period")
        .unwrap()
        .unwrap();
}

#[tokio::test]
async fn shutdown_lets_the_turn_in_flight_be_answered_then_closes_the_socket() {
    let server = serve(loopback().shutdown_grace(Duration::from_millis(300))).await;
    let (mut socket, session) = ws_session(&server).await;
    // `wait`: a turn that runs until it is cancelled, longer than the grace period.
    ws_send(&mut socket, &prompt(2, &session, "wait")).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let started = std::time::Instant::now();
    let shutdown = tokio::spawn(server.shutdown());
    let answer = ws_until_answer(&mut socket, 2).await.pop().unwrap();
    // The turn was given the grace period before the hang-up cancelled it.
    assert!(started.elapsed() >= Duration::from_millis(250), "answered after {:?}", started.elapsed());
    assert!(answer.get("result").is_some() || answer.get("error").is_some(), "{answer}");
    match tokio::time::timeout(Duration::from_secs(10), socket.next()).await.unwrap() {
        Some(Ok(Message::Close(Some(frame)))) => assert_eq!(u16::from(frame.code), 1001),
        other => panic!("expected the server's close: {other:?}"),
    }
    tokio::time::timeout(Duration::from_secs(10), shutdown).await.unwrap().unwrap().unwrap();
}

#[tokio::test]
async fn streamable_http_is_served_over_http2_too() {
    // The RFD asks for HTTP/2 (one TCP connection for every stream and POST); h2c with prior
    // knowledge, as a proxy in front speaks it.
    let server = serve(loopback()).await;
    let stream = tokio::net::TcpStream::connect(server.local_addr()).await.unwrap();
    let (mut sender, connection) = hyper::client::conn::http2::handshake(
        hyper_util::rt::TokioExecutor::new(),
        hyper_util::rt::TokioIo::new(stream),
    )
    .await
    .expect("an HTTP/2 handshake");
    tokio::spawn(connection);
    let uri = format!("http://{}/acp", server.local_addr());
    let initialize = Request::post(&uri)
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(initialize_request().to_string())))
        .unwrap();
    let response = sender.send_request(initialize).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.version(), hyper::Version::HTTP_2);
    let connection_id = response.headers()["acp-connection-id"].to_str().unwrap().to_owned();
    let events = Request::get(&uri)
        .header("accept", "text/event-stream")
        .header("acp-connection-id", &connection_id)
        .body(Full::new(Bytes::new()))
        .unwrap();
    let mut events =
        Events { body: sender.send_request(events).await.unwrap().into_body(), buffer: String::new(), last_id: None };
    let list = Request::post(&uri)
        .header("content-type", "application/json")
        .header("acp-connection-id", &connection_id)
        .body(Full::new(Bytes::from(
            json!({"jsonrpc": "2.0", "id": 1, "method": "session/list", "params": {}}).to_string(),
        )))
        .unwrap();
    assert_eq!(sender.send_request(list).await.unwrap().status(), StatusCode::ACCEPTED);
    let answer = events.until_answer(1).await.pop().unwrap();
    assert!(answer["result"]["sessions"].is_array(), "{answer}");
    // The `:authority` is held to the loopback rule as `Host` is.
    let rebound = Request::post(format!("http://evil.example:{}/acp", server.local_addr().port()))
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(initialize_request().to_string())))
        .unwrap();
    assert_eq!(sender.send_request(rebound).await.unwrap().status(), StatusCode::FORBIDDEN);
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn an_http_connection_left_idle_without_a_stream_is_hung_up() {
    let server = serve(loopback().idle_timeout(Duration::from_millis(200))).await;
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "session/list", "params": {}});
    let open = |response: Response<Incoming>| response.headers()["acp-connection-id"].to_str().unwrap().to_owned();
    let vanished = open(post(&server, &[], &initialize_request()).await);
    let listening = open(post(&server, &[], &initialize_request()).await);
    let mut events = Events::open(&server, &listening, None).await;
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert_eq!(post(&server, &[("acp-connection-id", &vanished)], &list).await.status(), StatusCode::NOT_FOUND);
    // A connection whose client holds its stream open is not idle.
    assert_eq!(post(&server, &[("acp-connection-id", &listening)], &list).await.status(), StatusCode::ACCEPTED);
    assert!(events.until_answer(1).await.pop().unwrap()["result"]["sessions"].is_array());
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn dropping_the_server_hangs_its_connections_up() {
    let server = serve(loopback()).await;
    let mut socket = websocket(&server, None).await.unwrap();
    ws_send(&mut socket, &initialize_request()).await;
    ws_until_answer(&mut socket, 0).await;
    drop(server);
    match tokio::time::timeout(Duration::from_secs(10), socket.next()).await.unwrap() {
        Some(Ok(Message::Close(Some(frame)))) => assert_eq!(u16::from(frame.code), 1001),
        other => panic!("expected the server's close: {other:?}"),
    }
}

#[tokio::test]
async fn during_the_grace_period_http_clients_are_served_and_new_connections_refused() {
    let server = serve(loopback().shutdown_grace(Duration::from_secs(20))).await;
    let response = post(&server, &[], &initialize_request()).await;
    let connection = response.headers()["acp-connection-id"].to_str().unwrap().to_owned();
    let id = connection.as_str();
    let mut events = Events::open(&server, id, None).await;
    let new = json!({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/tmp", "mcpServers": []}});
    post(&server, &[("acp-connection-id", id)], &new).await;
    let session = events.until_answer(1).await.pop().unwrap()["result"]["sessionId"].as_str().unwrap().to_owned();
    let mut session_events = Events::open(&server, id, Some(&session)).await;
    let prompt = json!({"jsonrpc": "2.0", "id": 2, "method": "session/prompt",
        "params": {"sessionId": session, "prompt": [{"type": "text", "text": "wait"}]}});
    post(&server, &[("acp-connection-id", id), ("acp-session-id", &session)], &prompt).await;
    tokio::time::sleep(Duration::from_millis(100)).await;

    let addr = server.local_addr();
    let host = addr.to_string();
    let shutdown = tokio::spawn(server.shutdown());
    tokio::time::sleep(Duration::from_millis(100)).await;
    let json_post = |headers: &[(&str, &str)], message: &Value| {
        let mut builder = Request::post("/acp").header("host", &host).header("content-type", "application/json");
        for (name, value) in headers {
            builder = builder.header(*name, *value);
        }
        builder.body(Full::new(Bytes::from(message.to_string()))).unwrap()
    };
    let refused = send(addr, json_post(&[], &initialize_request())).await;
    assert_eq!(refused.status(), StatusCode::SERVICE_UNAVAILABLE, "no new connection while shutting down");
    let cancel = json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": session}});
    let accepted = send(addr, json_post(&[("acp-connection-id", id), ("acp-session-id", &session)], &cancel)).await;
    assert_eq!(accepted.status(), StatusCode::ACCEPTED, "an open connection is still served");
    let answer = session_events.until_answer(2).await.pop().unwrap();
    assert_eq!(answer["result"]["stopReason"], "cancelled");
    tokio::time::timeout(Duration::from_secs(5), shutdown)
        .await
        .expect("well before the grace period")
        .unwrap()
        .unwrap();
    assert_eq!(session_events.next().await, None, "the streams end with the connection");
}

/// How many chunks the turns of the slow-reader tests stream: about 30 MB of messages, far over
/// the buffer those servers allow.
const MANY: usize = 200_000;

/// `t0 t1 … t{n-1} `: what `stream n` says.
pub(super) fn streamed(n: usize) -> String {
    (0..n).map(|i| ["t", &i.to_string(), " "].concat()).collect()
}

/// `said` is what `stream MANY` says up to some chunk, at least one: the part of the turn that
/// was recorded (the turn is interrupted once its client is gone, unless it finished first), all
/// of it, in order.
fn assert_whole_prefix(said: &str) {
    let chunks = said.split_terminator(' ').count();
    assert!(chunks > 0, "nothing replayed");
    assert!(chunks <= MANY, "{chunks} chunks");
    assert_eq!(said, streamed(chunks), "the replay is every chunk up to the last, in order");
}

/// Waits until the turn of `session` is recorded as ended in `store` (interrupted: its client
/// went away), then loads the session on a new WebSocket of `server` and returns what the replay
/// said.
async fn reload_after_the_turn(server: &RemoteServer, store: &Arc<dyn Store>, session: &Value) -> String {
    let id = session.as_str().unwrap().to_owned();
    eventually("the turn recorded as ended", async || {
        let kinds = journal_kinds(store, &id).await;
        kinds.contains(&"TurnDone") || kinds.contains(&"TurnInterrupted")
    })
    .await;
    let mut socket = websocket(server, None).await.expect("a new connection");
    ws_send(&mut socket, &initialize_request()).await;
    ws_until_answer(&mut socket, 0).await;
    ws_send(
        &mut socket,
        &json!({"jsonrpc": "2.0", "id": 1, "method": "session/load",
            "params": {"sessionId": session, "cwd": "/tmp", "mcpServers": []}}),
    )
    .await;
    let mut replay = ws_until_answer(&mut socket, 1).await;
    let answer = replay.pop().unwrap();
    assert!(answer.get("result").is_some(), "{answer}");
    socket.close(None).await.unwrap();
    said(&replay)
}

#[tokio::test]
async fn a_websocket_client_that_stops_reading_is_hung_up_and_a_new_connection_loads_the_whole_turn() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let config = loopback().max_buffered_bytes(64 * 1024).keepalive_interval(Duration::from_millis(300));
    let server = serve_on(store.clone(), config).await;
    let (mut socket, session) = ws_session(&server).await;
    ws_send(&mut socket, &prompt(2, &session, &format!("stream {MANY}"))).await;
    // The client reads nothing from now on: the server hangs it up.
    eventually("the connection hung up", async || server.connections() == 0).await;
    // What reaches the client now is what the kernel held, then the end (a Close frame, if it
    // got through, says why).
    loop {
        match tokio::time::timeout(Duration::from_secs(30), socket.next()).await.expect("the end in time") {
            Some(Ok(Message::Close(frame))) => {
                if let Some(frame) = frame {
                    assert_eq!(u16::from(frame.code), 1008, "{frame:?}");
                }
                break;
            }
            Some(Ok(_)) => {}
            Some(Err(_)) | None => break,
        }
    }
    assert_whole_prefix(&reload_after_the_turn(&server, &store, &session).await);
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn an_http_client_that_stops_reading_its_stream_is_hung_up_and_a_new_connection_loads_the_whole_turn() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let config = loopback().max_buffered_bytes(64 * 1024).keepalive_interval(Duration::from_millis(300));
    let server = serve_on(store.clone(), config).await;
    let response = post(&server, &[], &initialize_request()).await;
    let connection = response.headers()["acp-connection-id"].to_str().unwrap().to_owned();
    let id = connection.as_str();
    let mut events = Events::open(&server, id, None).await;
    let new = json!({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/tmp", "mcpServers": []}});
    post(&server, &[("acp-connection-id", id)], &new).await;
    let session = events.until_answer(1).await.pop().unwrap()["result"]["sessionId"].clone();
    let session_id = session.as_str().unwrap();
    // The session's stream is open, and never read.
    let mut session_events = Events::open(&server, id, Some(session_id)).await;
    let sent = post(
        &server,
        &[("acp-connection-id", id), ("acp-session-id", session_id)],
        &prompt(2, &session, &format!("stream {MANY}")),
    )
    .await;
    assert_eq!(sent.status(), StatusCode::ACCEPTED);
    let list = json!({"jsonrpc": "2.0", "id": 3, "method": "session/list", "params": {}});
    eventually("the connection hung up", async || {
        post(&server, &[("acp-connection-id", id)], &list).await.status() == StatusCode::NOT_FOUND
    })
    .await;
    // Both streams end (after what the kernel held, for the one that was not read).
    while session_events.next().await.is_some() {}
    while events.next().await.is_some() {}
    assert_whole_prefix(&reload_after_the_turn(&server, &store, &session).await);
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_client_slower_than_its_agent_but_reading_gets_every_message() {
    // A buffer far smaller than the turn: the agent is slowed down to the client's pace.
    let config = loopback().max_buffered_bytes(16 * 1024).keepalive_interval(Duration::from_millis(500));
    let server = serve(config).await;
    let (mut socket, session) = ws_session(&server).await;
    let chunks = 5_000;
    ws_send(&mut socket, &prompt(2, &session, &format!("stream {chunks}"))).await;
    let mut seen = Vec::new();
    loop {
        let message = tokio::time::timeout(Duration::from_secs(30), socket.next()).await.expect("a message in time");
        let Some(Ok(Message::Text(text))) = message else {
            assert!(matches!(message, Some(Ok(Message::Ping(_)))), "{message:?}");
            continue;
        };
        let value: Value = serde_json::from_str(text.as_str()).unwrap();
        let done = value["id"] == json!(2);
        seen.push(value);
        if done {
            break;
        }
        if seen.len() % 500 == 0 {
            // A reader that pauses now and then, shorter than the stall timeout.
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    assert_eq!(seen.pop().unwrap()["result"]["stopReason"], "end_turn");
    assert_eq!(said(&seen), streamed(chunks));
    assert_eq!(server.connections(), 1, "still connected");
    socket.close(None).await.unwrap();
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn connections_over_the_limit_are_answered_503_with_retry_after() {
    let server = serve(loopback().max_connections(2)).await;
    let first = post(&server, &[], &initialize_request()).await;
    assert_eq!(first.status(), StatusCode::OK);
    let first = first.headers()["acp-connection-id"].to_str().unwrap().to_owned();
    let (mut socket, _session) = ws_session(&server).await;
    assert_eq!(server.connections(), 2);
    let refused = post(&server, &[], &initialize_request()).await;
    assert_eq!(refused.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(refused.headers()["retry-after"], "1");
    match websocket(&server, None).await {
        Err(tokio_tungstenite::tungstenite::Error::Http(response)) => {
            assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
            assert!(response.headers().contains_key("retry-after"));
        }
        other => panic!("a WebSocket over the limit: {:?}", other.map(|_| ())),
    }
    // The open connections are served as before.
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "session/list", "params": {}});
    assert_eq!(post(&server, &[("acp-connection-id", &first)], &list).await.status(), StatusCode::ACCEPTED);
    ws_send(&mut socket, &json!({"jsonrpc": "2.0", "id": 5, "method": "session/list", "params": {}})).await;
    assert!(ws_until_answer(&mut socket, 5).await.pop().unwrap()["result"]["sessions"].is_array());
    // A connection that ends gives its place back.
    socket.close(None).await.unwrap();
    eventually("a place free again", async || {
        post(&server, &[], &initialize_request()).await.status() == StatusCode::OK
    })
    .await;
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn an_idle_sse_stream_carries_keepalive_comments() {
    let server = serve(loopback().keepalive_interval(Duration::from_millis(100))).await;
    let response = post(&server, &[], &initialize_request()).await;
    let connection = response.headers()["acp-connection-id"].to_str().unwrap().to_owned();
    let mut events = Events::open(&server, &connection, None).await;
    let mut raw = String::new();
    while !raw.contains(": keepalive\n") {
        let frame = tokio::time::timeout(Duration::from_secs(10), events.body.frame()).await.expect("a frame in time");
        let data = frame.expect("the stream goes on").unwrap().into_data().unwrap();
        raw.push_str(std::str::from_utf8(&data).unwrap());
    }
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_websocket_is_pinged_and_a_client_that_answers_no_ping_is_closed() {
    let server = serve(loopback().keepalive_interval(Duration::from_millis(100))).await;
    let (mut reading, _session) = ws_session(&server).await;
    // A client that reads gets pings (and its library answers them).
    match tokio::time::timeout(Duration::from_secs(10), reading.next()).await.expect("a ping in time") {
        Some(Ok(Message::Ping(_))) => {}
        other => panic!("a ping on an idle socket: {other:?}"),
    }
    // The reading client goes on reading (its library answering the pings) until an answer.
    let (mut sink, mut stream) = reading.split();
    let answered = tokio::spawn(async move {
        loop {
            match stream.next().await {
                Some(Ok(Message::Text(text))) => {
                    let value: Value = serde_json::from_str(text.as_str()).unwrap();
                    if value["id"] == json!(5) {
                        return value;
                    }
                }
                Some(Ok(_)) => {}
                other => panic!("the reading client's socket ended: {other:?}"),
            }
        }
    });
    // A client that reads nothing answers no ping: it is hung up; the one that reads is not.
    let (mut silent, _session) = ws_session(&server).await;
    eventually("the silent client hung up", async || server.connections() == 1).await;
    // Reading now, it finds the pings, then the server's Close frame saying why — unless its
    // library's belated answers to those pings hit the closed socket first.
    loop {
        match tokio::time::timeout(Duration::from_secs(10), silent.next()).await.expect("the end in time") {
            Some(Ok(Message::Close(Some(frame)))) => {
                assert_eq!(u16::from(frame.code), 1008);
                assert_eq!(frame.reason.as_str(), "the client answered no ping");
                break;
            }
            Some(Ok(Message::Ping(_))) => {}
            Some(Err(_)) | None => break,
            Some(Ok(other)) => panic!("expected the server's close: {other:?}"),
        }
    }
    // The reading client is still served.
    sink.send(Message::text(json!({"jsonrpc": "2.0", "id": 5, "method": "session/list", "params": {}}).to_string()))
        .await
        .unwrap();
    let answer = tokio::time::timeout(Duration::from_secs(10), answered).await.expect("an answer in time").unwrap();
    assert!(answer["result"]["sessions"].is_array(), "{answer}");
    sink.close().await.unwrap();
    server.shutdown().await.unwrap();
}

/// A fresh directory for one test's files.
fn scratch_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("acp-remote-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A self-signed certificate for `localhost` written as PEM files in `dir`: (certificate, key,
/// the certificate itself).
fn certificate(dir: &std::path::Path) -> (std::path::PathBuf, std::path::PathBuf, rcgen::CertifiedKey<rcgen::KeyPair>) {
    let generated = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    std::fs::write(&cert, generated.cert.pem()).unwrap();
    std::fs::write(&key, generated.signing_key.serialize_pem()).unwrap();
    (cert, key, generated)
}

/// A TLS client trusting only `certificate`, speaking HTTP/1.1.
fn tls_connector(certificate: &rcgen::CertifiedKey<rcgen::KeyPair>) -> tokio_rustls::TlsConnector {
    use tokio_rustls::rustls;
    let mut roots = rustls::RootCertStore::empty();
    roots.add(certificate.cert.der().clone()).unwrap();
    #[expect(deprecated, reason = "the server's provider, ring")]
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    tokio_rustls::TlsConnector::from(Arc::new(config))
}

#[tokio::test]
async fn tls_serves_initialize_over_https_and_wss() {
    let dir = scratch_dir("tls");
    let (cert, key, generated) = certificate(&dir);
    let server = serve(loopback().tls(&cert, &key)).await;
    let port = server.local_addr().port();
    assert_eq!(server.url(), format!("https://127.0.0.1:{port}/acp"));
    let connector = tls_connector(&generated);
    let name = tokio_rustls::rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let connect = async || {
        let tcp = tokio::net::TcpStream::connect(server.local_addr()).await.unwrap();
        connector.connect(name.clone(), tcp).await.expect("a TLS handshake with the server")
    };

    // HTTPS: the initialize POST is answered in its body.
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(connect().await)).await.unwrap();
    tokio::spawn(connection);
    let initialize = Request::post("/acp")
        .header("host", format!("localhost:{port}"))
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(initialize_request().to_string())))
        .unwrap();
    let response = sender.send_request(initialize).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert!(response.headers().contains_key("acp-connection-id"));
    let answer: Value = serde_json::from_str(&body_text(response).await).unwrap();
    assert_eq!(answer["result"]["protocolVersion"], 1);

    // WSS: the same over a WebSocket.
    let (mut socket, _) =
        tokio_tungstenite::client_async(format!("wss://localhost:{port}/acp"), connect().await).await.unwrap();
    socket.send(Message::text(initialize_request().to_string())).await.unwrap();
    let mut answered = None;
    while answered.is_none() {
        match tokio::time::timeout(Duration::from_secs(10), socket.next()).await.unwrap() {
            Some(Ok(Message::Text(text))) => answered = Some(serde_json::from_str::<Value>(text.as_str()).unwrap()),
            Some(Ok(_)) => {}
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(answered.unwrap()["result"]["protocolVersion"], 1);
    socket.close(None).await.unwrap();
    server.shutdown().await.unwrap();
    std::fs::remove_dir_all(dir).unwrap();
}

#[tokio::test]
async fn unusable_tls_files_are_refused_naming_the_file() {
    let dir = scratch_dir("bad-tls");
    let (cert, key, _) = certificate(&dir);
    let other_key = dir.join("other-key.pem");
    std::fs::write(&other_key, rcgen::KeyPair::generate().unwrap().serialize_pem()).unwrap();
    let not_pem = dir.join("not.pem");
    std::fs::write(&not_pem, "hello").unwrap();
    let missing = dir.join("missing.pem");
    let (runner, _probe) = runner(Arc::new(MemoryStore::new()), TurnsSpec::default());
    for (cert, key, named) in [
        (&missing, &key, &missing),
        (&not_pem, &key, &not_pem),
        (&cert, &not_pem, &not_pem),
        (&cert, &other_key, &other_key),
    ] {
        let error = serve_http(runner.options(), loopback().tls(cert, key)).await.unwrap_err();
        assert_eq!(error.kind(), std::io::ErrorKind::InvalidInput, "{error}");
        assert!(error.to_string().starts_with(&format!("{}: ", named.display())), "{error}");
    }
    std::fs::remove_dir_all(dir).unwrap();
}
