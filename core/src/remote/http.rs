//! Streamable HTTP: one ACP connection per `initialize` POST, named by the `Acp-Connection-Id`
//! its answer carries.
//!
//! - `POST` of `initialize` without a connection id: a new connection; the answer is the body
//!   (`200`, JSON) with the `Acp-Connection-Id` header.
//! - `POST` of any other message with `Acp-Connection-Id`: handed to that connection's agent and
//!   answered `202`; what the agent says comes on an SSE stream. A message about a session
//!   (`params.sessionId`, or a session method) must carry `Acp-Session-Id` naming it (`400`
//!   otherwise, as the official TypeScript SDK's server does).
//! - `GET` with `Accept: text/event-stream` and `Acp-Connection-Id`: the connection's stream; with
//!   `Acp-Session-Id` too, that session's stream. One receiver per stream (`409` for a second);
//!   messages wait in the stream until a receiver comes.
//! - Every SSE event has an id: a `session/update`'s is its stream cursor
//!   (`params._meta["acp/cursor"]`), another message's names its place after the last cursor (see
//!   `replay`). A `GET` with `Last-Event-ID` reopens the stream where the client lost it: what the
//!   stream delivered after that event comes first, then the rest — nothing lost, nothing twice.
//!   It takes the stream over from a response still open on it (the client's cut is often seen
//!   by the client first). An id the stream no longer holds (or never sent): `409`, and the stream
//!   is left as it was.
//! - `DELETE` with `Acp-Connection-Id`: the client hangs up (`202`). A connection with no stream
//!   open and no request for [`RemoteConfig::idle_timeout`](super::RemoteConfig::idle_timeout)
//!   is hung up as if it had been deleted.
//!
//! Routing of what the agent writes (as the SDK 2.4 server does): an answer goes where its
//! request's route was (a `session/load` answer on the connection's stream); a request or
//! notification with `params.sessionId` on that session's stream; anything else on the
//! connection's. Unknown connection: `404`; a connection of another principal: `403`.
//!
//! Where the RFD ("Streamable HTTP & WebSocket transport") and the official TypeScript SDK 2.4
//! differ, this follows the SDK, whose clients are what editors use today:
//! - the RFD answers a `GET` naming a session the connection does not know with `404`; the SDK
//!   opens that session's stream (its client opens it before the `session/load` or
//!   `session/resume` that makes the session known), and so does this;
//! - the RFD requires HTTP/2; the SDK's clients (Node's `fetch`) speak HTTP/1.1 (one TCP
//!   connection per open stream): both are served — HTTP/2 over TLS by ALPN (feature
//!   `remote-tls`), and without TLS as h2c with prior knowledge, as a proxy in front speaks it;
//! - the RFD names only the session methods as needing `Acp-Session-Id`; the SDK also requires it
//!   of any message whose `params.sessionId` is set, and refuses a header that names another
//!   session than the params (`400`), as this does.
//!
//! Invariants: a connection is listed only after its `initialize` was answered, and is removed
//! once its agent ended; the messages waiting in its streams are bounded in bytes (see `budget`),
//! and a client hung up for not reading has its streams ended at once; hanging a connection up ends its agent, and the agent's end ends every
//! stream of the connection after its last message.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::Extension;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::Shared;
use super::bridge::{self, CONNECTION_ID, Outgoing, Pipe, new_connection_id};
use super::decode;
use super::guard::{Principal, refuse};
use super::limit::{self, Slot};
use super::replay::Window;
use super::shape::Kind;

/// The header naming the session a request or stream is about.
const SESSION_ID: &str = "acp-session-id";

/// The methods that are about one session, and need `Acp-Session-Id` (the SDK 2.4 server's list).
const SESSION_METHODS: &[&str] = &[
    "session/cancel",
    "session/close",
    "session/delete",
    "session/fork",
    "session/load",
    "session/prompt",
    "session/resume",
    "session/set_config_option",
    "session/set_mode",
    "session/set_model",
];

/// Where a message goes: `None` is the connection's stream, `Some(id)` that session's.
type Route = Option<String>;

/// The live HTTP connections of a server, and how many `WebSockets` are open.
#[derive(Default)]
pub(crate) struct Connections {
    http: Mutex<HashMap<String, Arc<HttpConnection>>>,
    websockets: AtomicUsize,
}

impl Connections {
    pub(crate) fn len(&self) -> usize {
        lock(&self.http).len()
    }

    pub(crate) fn websockets(&self) -> usize {
        self.websockets.load(Ordering::SeqCst)
    }

    pub(crate) fn websocket_opened(&self) {
        self.websockets.fetch_add(1, Ordering::SeqCst);
    }

    pub(crate) fn websocket_closed(&self) {
        self.websockets.fetch_sub(1, Ordering::SeqCst);
    }

    /// Hangs every HTTP connection up (the server shuts down).
    pub(crate) fn hang_up_all(&self) {
        for connection in lock(&self.http).values() {
            connection.hang_up();
        }
    }

    fn get(&self, id: &str) -> Option<Arc<HttpConnection>> {
        lock(&self.http).get(id).cloned()
    }

    fn remove(&self, id: &str) -> Option<Arc<HttpConnection>> {
        lock(&self.http).remove(id)
    }
}

/// One HTTP ACP connection.
struct HttpConnection {
    id: String,
    principal: Principal,
    /// The agent's input; `None` once the client hung up.
    pipe: Mutex<Option<Pipe>>,
    routes: Mutex<Routes>,
    streams: Mutex<HashMap<Route, Mailbox>>,
    /// The bytes the streams' replay windows hold together (see `replay`).
    replay_bytes: Arc<AtomicUsize>,
    /// Streams no response holds and nothing waits in, kept for their replay window (a client
    /// may reopen them with `Last-Event-ID`), oldest first: at most [`KEPT_STREAMS`].
    kept: Mutex<std::collections::VecDeque<Route>>,
    /// Whether the agent has ended (no stream may be opened any more).
    ended: std::sync::atomic::AtomicBool,
    /// How many SSE responses of this connection are open.
    receivers: AtomicUsize,
    /// When the client last made a request, or last had a stream open.
    last_seen: Mutex<tokio::time::Instant>,
    /// Cancelled when the client was hung up for not reading: its SSE responses end at once.
    stalled: tokio_util::sync::CancellationToken,
    /// Its place under the server's connection limit, given back with the connection.
    _slot: Option<Slot>,
}

/// The most elicitations of one connection whose stream is remembered (see `Routes`).
const MAX_ELICITATIONS: usize = 1024;

#[derive(Default)]
struct Routes {
    /// The client's requests in flight: id key → where their answer goes.
    pending: HashMap<String, Route>,
    /// The agent's requests in flight: id key → the route the client's answer must name.
    client: HashMap<String, Route>,
    /// Elicitations the agent opened on a session's stream: elicitation id → that stream, for the
    /// `elicitation/complete` that names no session (forgotten when it comes; at most
    /// `MAX_ELICITATIONS` kept, for elicitations never completed).
    elicitations: HashMap<String, Route>,
    /// The `initialize` being answered: its id key and who waits for the answer's text.
    initial: Option<(String, oneshot::Sender<String>)>,
}

impl HttpConnection {
    fn pipe(&self) -> Option<Pipe> {
        lock(&self.pipe).clone()
    }

    fn hang_up(&self) {
        lock(&self.pipe).take();
    }

    fn touch(&self) {
        *lock(&self.last_seen) = tokio::time::Instant::now();
    }

    /// Whether the client has had no stream open and made no request for `idle`.
    fn is_idle(&self, idle: Duration) -> bool {
        self.receivers.load(Ordering::SeqCst) == 0 && lock(&self.last_seen).elapsed() >= idle
    }

    /// Delivers one message of the agent to its stream.
    fn route(&self, message: Outgoing) {
        let key = message.shape.id.clone();
        let route = {
            let mut routes = lock(&self.routes);
            if message.shape.kind == Kind::Response {
                let key = key.unwrap_or_default();
                if routes.initial.as_ref().is_some_and(|(initial, _)| *initial == key) {
                    if let Some((_, waiter)) = routes.initial.take() {
                        let _ = waiter.send(message.text);
                    }
                    return;
                }
                routes.pending.remove(&key).flatten()
            } else {
                // The agent abandoning a request of its own (`$/cancel_request`, which names no
                // session) goes where that request went: on one stream it cannot overtake what the
                // agent wrote before it there (the request's session's updates, the prompt's answer).
                // Likewise an `elicitation/complete`: where its `elicitation/create` went.
                let abandoned = message.shape.cancels.as_ref().and_then(|request| routes.client.get(request)).cloned();
                let route = match (abandoned, &message.shape.elicitation, &message.shape.session) {
                    (Some(route), _, _) => route,
                    (None, Some(elicitation), None) => routes.elicitations.remove(elicitation).flatten(),
                    (None, Some(elicitation), Some(_)) => {
                        if routes.elicitations.len() >= MAX_ELICITATIONS {
                            routes.elicitations.clear();
                        }
                        routes.elicitations.insert(elicitation.clone(), message.shape.session.clone());
                        message.shape.session.clone()
                    }
                    (None, None, _) => message.shape.session.clone(),
                };
                if let Some(key) = key {
                    routes.client.insert(key, route.clone());
                }
                route
            }
        };
        let mut streams = lock(&self.streams);
        streams.entry(route).or_insert_with(|| Mailbox::new(&self.replay_bytes)).push(message);
    }

    /// The agent ended: every stream ends after what it holds.
    fn end(&self) {
        self.ended.store(true, Ordering::SeqCst);
        lock(&self.streams).clear();
        lock(&self.routes).initial.take();
    }
}

/// A stream's messages, kept until its one receiver takes them. Unbounded in count, bounded in
/// bytes: each message holds its share of the connection's buffer (see `budget`). What the stream
/// delivered lately is kept in its replay window.
struct Mailbox {
    sender: mpsc::UnboundedSender<Outgoing>,
    receiver: Arc<Mutex<Option<mpsc::UnboundedReceiver<Outgoing>>>>,
    window: Window,
    /// Ends the response holding the receiver, for a client that reopens the stream.
    holder: Mutex<CancellationToken>,
}

impl Mailbox {
    fn new(replay_bytes: &Arc<AtomicUsize>) -> Self {
        let (sender, receiver) = mpsc::unbounded_channel();
        Self {
            sender,
            receiver: Arc::new(Mutex::new(Some(receiver))),
            window: Window::new(replay_bytes.clone()),
            holder: Mutex::new(CancellationToken::new()),
        }
    }

    fn push(&self, message: Outgoing) {
        let _ = self.sender.send(message);
    }

    /// Whether no receiver holds it and nothing waits in it.
    fn is_drained(&self) -> bool {
        lock(&self.receiver).as_ref().is_some_and(mpsc::UnboundedReceiver::is_empty)
    }

    /// The receiving end, unless a receiver holds it; with the token that ends its response.
    fn lease(&self) -> Option<(Lease, CancellationToken)> {
        let receiver = lock(&self.receiver).take()?;
        let holder = CancellationToken::new();
        *lock(&self.holder) = holder.clone();
        Some((Lease { receiver: Some(receiver), slot: self.receiver.clone() }, holder))
    }

    /// Asks the response holding the receiver to end.
    fn take_over(&self) {
        lock(&self.holder).cancel();
    }
}

/// A stream's receiving end, held by one SSE response; given back when that response ends.
struct Lease {
    receiver: Option<mpsc::UnboundedReceiver<Outgoing>>,
    slot: Arc<Mutex<Option<mpsc::UnboundedReceiver<Outgoing>>>>,
}

impl Drop for Lease {
    fn drop(&mut self) {
        *lock(&self.slot) = self.receiver.take();
    }
}

/// How many streams a connection keeps, for their replay windows, once no response holds them
/// and nothing waits in them.
const KEPT_STREAMS: usize = 16;

/// One open SSE response of a connection, on `route`: the connection is not idle while it is
/// open. When it ends, its stream is forgotten if nothing waits in it and it has nothing to
/// replay (as the SDK's server forgets it), so streams a client opened and left do not pile up;
/// one with a replay window is kept among the connection's last [`KEPT_STREAMS`]. A later message
/// makes a forgotten stream anew.
struct Receiving(Arc<HttpConnection>, Route);

impl Receiving {
    fn new(connection: Arc<HttpConnection>, route: Route) -> Self {
        connection.receivers.fetch_add(1, Ordering::SeqCst);
        Self(connection, route)
    }
}

impl Drop for Receiving {
    fn drop(&mut self) {
        self.0.touch();
        self.0.receivers.fetch_sub(1, Ordering::SeqCst);
        let mut streams = lock(&self.0.streams);
        let Some(mailbox) = streams.get(&self.1) else { return };
        if !mailbox.is_drained() {
            return;
        }
        if mailbox.window.is_empty() {
            streams.remove(&self.1);
            return;
        }
        let mut kept = lock(&self.0.kept);
        kept.retain(|route| *route != self.1);
        kept.push_back(self.1.clone());
        while kept.len() > KEPT_STREAMS {
            let Some(oldest) = kept.pop_front() else { break };
            if streams.get(&oldest).is_some_and(Mailbox::is_drained) {
                streams.remove(&oldest);
            }
        }
    }
}

/// Hangs a new connection up unless it was kept (its `initialize` POST answered).
struct Unkept(Option<Arc<HttpConnection>>);

impl Drop for Unkept {
    fn drop(&mut self) {
        if let Some(connection) = self.0.take() {
            connection.hang_up();
        }
    }
}

/// `POST`: `initialize` makes a connection; anything else goes to one.
pub(crate) async fn post(
    State(shared): State<Arc<Shared>>,
    Extension(principal): Extension<Principal>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let content_type = headers.get(header::CONTENT_TYPE).map(HeaderValue::as_bytes);
    let message = match decode::post_body(content_type, &body) {
        Ok(message) => message,
        Err(refusal) if refusal.json_rpc => {
            let error = json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32600, "message": refusal.reason}});
            return json_response(StatusCode::BAD_REQUEST, &error);
        }
        Err(refusal) => {
            let status = StatusCode::from_u16(refusal.status).unwrap_or(StatusCode::BAD_REQUEST);
            return refuse(status, refusal.reason);
        }
    };
    let connection_id = headers.get(CONNECTION_ID).and_then(|v| v.to_str().ok());
    let is_initialize = message.get("method").and_then(Value::as_str) == Some("initialize");
    if is_initialize && message.get("id").is_some() {
        if connection_id.is_some() {
            return refuse(StatusCode::BAD_REQUEST, "Initialize not allowed on existing connection");
        }
        if shared.draining.is_cancelled() {
            return refuse(StatusCode::SERVICE_UNAVAILABLE, "the server is shutting down");
        }
        return initialize(&shared, principal, &message).await;
    }
    let connection = match connection_of(&shared, connection_id, &principal) {
        Ok(connection) => connection,
        Err(refused) => return refused,
    };
    let session_header = headers.get(SESSION_ID).and_then(|v| v.to_str().ok()).map(str::to_owned);
    if bridge::is_response(&message) {
        // The client's answer to the agent's request: it must name the session the request did.
        let key = message.get("id").map(id_key).unwrap_or_default();
        if let Some(Some(session)) = lock(&connection.routes).client.get(&key) {
            match &session_header {
                None => return refuse(StatusCode::BAD_REQUEST, "Missing Acp-Session-Id"),
                Some(header) if header != session => {
                    return refuse(StatusCode::BAD_REQUEST, "Mismatched Acp-Session-Id");
                }
                Some(_) => {}
            }
        }
        lock(&connection.routes).client.remove(&key);
    } else {
        let method = message.get("method").and_then(Value::as_str).unwrap_or_default();
        let in_params = session_of(&message);
        if (SESSION_METHODS.contains(&method) || in_params.is_some()) && session_header.is_none() {
            return refuse(StatusCode::BAD_REQUEST, "Missing Acp-Session-Id");
        }
        if let (Some(header), Some(param)) = (&session_header, &in_params)
            && header != param
        {
            return refuse(StatusCode::BAD_REQUEST, "Mismatched Acp-Session-Id");
        }
        if bridge::is_request(&message) {
            let route = if method == "session/load" { None } else { session_header.or(in_params) };
            let key = message.get("id").map(id_key).unwrap_or_default();
            lock(&connection.routes).pending.insert(key, route);
        }
    }
    let Some(pipe) = connection.pipe() else {
        return refuse(StatusCode::NOT_FOUND, "Unknown Acp-Connection-Id");
    };
    if !pipe.send(&message).await {
        return refuse(StatusCode::NOT_FOUND, "Unknown Acp-Connection-Id");
    }
    StatusCode::ACCEPTED.into_response()
}

/// A new connection: its agent answers `initialize`, and the answer is this POST's body.
async fn initialize(shared: &Arc<Shared>, principal: Principal, message: &Value) -> Response {
    let id = message.get("id").cloned().unwrap_or(Value::Null);
    if id.is_null() {
        return refuse(StatusCode::BAD_REQUEST, "Initialize request must include an ID");
    }
    let Some(slot) = shared.slots.take(shared.config.max_connections) else {
        return limit::full();
    };
    let connection_id = new_connection_id();
    let bridge::Opened { pipe, outgoing, stalled } = bridge::start(shared, principal.0.as_deref(), &connection_id);
    let connection = Arc::new(HttpConnection {
        id: connection_id,
        principal,
        pipe: Mutex::new(Some(pipe.clone())),
        routes: Mutex::new(Routes::default()),
        streams: Mutex::new(HashMap::new()),
        replay_bytes: Arc::default(),
        kept: Mutex::default(),
        ended: std::sync::atomic::AtomicBool::new(false),
        receivers: AtomicUsize::new(0),
        last_seen: Mutex::new(tokio::time::Instant::now()),
        stalled: stalled.clone(),
        _slot: Some(slot),
    });
    let mut unkept = Unkept(Some(connection.clone()));
    let (answered, answer) = oneshot::channel();
    lock(&connection.routes).initial = Some((id_key(&id), answered));
    shared.tasks.spawn(route_outgoing(shared.clone(), connection.clone(), outgoing, stalled));
    let sent = pipe.send(message).await;
    drop(pipe);
    let answer = if sent { answer.await.ok() } else { None };
    let Some(answer) = answer else {
        let error = json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32603, "message": "Initialize failed"}});
        return json_response(StatusCode::INTERNAL_SERVER_ERROR, &error);
    };
    if connection.ended.load(Ordering::SeqCst) {
        return refuse(StatusCode::SERVICE_UNAVAILABLE, "the server is shutting down");
    }
    unkept.0 = None;
    lock(&shared.connections.http).insert(connection.id.clone(), connection.clone());
    if shared.hang_up.is_cancelled() {
        // Shut down while this was answered: the connection is hung up with the others.
        connection.hang_up();
    }
    let mut response = (StatusCode::OK, [(header::CONTENT_TYPE, "application/json")], answer).into_response();
    if let Ok(value) = HeaderValue::from_str(&connection.id) {
        response.headers_mut().insert(CONNECTION_ID, value);
    }
    response
}

/// Routes everything the agent says, until it ends; then the connection is gone.
///
/// A connection whose client has had no stream open and made no request for the idle timeout
/// ([`RemoteConfig::idle_timeout`](super::RemoteConfig::idle_timeout)) is hung up: its client
/// vanished without a `DELETE`, and its agent would otherwise keep its sessions live for ever.
/// A connection whose client stopped reading (`stalled`, see `budget`) is hung up at once and its
/// streams end, what they held dropped.
async fn route_outgoing(
    shared: Arc<Shared>,
    connection: Arc<HttpConnection>,
    mut outgoing: mpsc::UnboundedReceiver<Outgoing>,
    stalled: tokio_util::sync::CancellationToken,
) {
    let idle = shared.config.idle_timeout;
    let mut tick = tokio::time::interval((idle / 4).clamp(Duration::from_millis(10), Duration::from_secs(5)));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            message = outgoing.recv() => match message {
                Some(message) => connection.route(message),
                None => break,
            },
            _ = tick.tick() => {
                if connection.is_idle(idle) && lock(&connection.pipe).is_some() {
                    tracing::info!(connection = connection.id, "an idle HTTP connection hung up");
                    connection.hang_up();
                }
            }
            () = stalled.cancelled(), if !connection.ended.load(Ordering::SeqCst) => {
                // The bridge warned, naming the connection; it drops the agent's further messages.
                shared.connections.remove(&connection.id);
                connection.hang_up();
                connection.end();
            }
        }
    }
    connection.end();
    shared.connections.remove(&connection.id);
}

/// `GET` that is not a WebSocket upgrade: the SSE stream of a connection (or of one of its
/// sessions).
pub(crate) async fn events(shared: &Shared, principal: &Principal, headers: &HeaderMap) -> Response {
    let accepts_events = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.to_ascii_lowercase().contains("text/event-stream"));
    if !accepts_events {
        return refuse(StatusCode::NOT_ACCEPTABLE, "Not Acceptable");
    }
    let connection_id = headers.get(CONNECTION_ID).and_then(|v| v.to_str().ok());
    let connection = match connection_of(shared, connection_id, principal) {
        Ok(connection) => connection,
        Err(refused) => return refused,
    };
    let route: Route = headers.get(SESSION_ID).and_then(|v| v.to_str().ok()).map(str::to_owned);
    let last_event_id = headers.get(LAST_EVENT_ID).and_then(|v| v.to_str().ok()).map(str::to_owned);
    if let Some(id) = &last_event_id {
        // Checked before a response holding the stream is ended for this one.
        let known = lock(&connection.streams).get(&route).is_some_and(|mailbox| mailbox.window.holds(id));
        if !known {
            return unknown_event(&connection, id);
        }
    }
    let (lease, holder, window) = match lease_stream(&connection, &route, last_event_id.is_some()).await {
        Ok(leased) => leased,
        Err(refused) => return refused,
    };
    // What the client lost: the window's messages after the last one it saw.
    let missed = match &last_event_id {
        None => Vec::new(),
        Some(id) => match window.after(id) {
            Some(missed) => missed,
            None => return unknown_event(&connection, id),
        },
    };
    let stalled = connection.stalled.clone();
    let receiving = Receiving::new(connection, route);
    // The lease is dropped first (the tuple's order), so the stream is whole again when
    // `Receiving` looks at it.
    // A message's share of the buffer is given back once its event is made (the body has it).
    // A client hung up for not reading, or a client that reopened the stream: this response ends
    // at once (what it took is in the window).
    let replayed = futures::stream::iter(
        missed.into_iter().map(|(id, text)| Ok::<_, Infallible>(Event::default().data(text).id(id))),
    );
    let live = futures::stream::unfold((lease, receiving), move |(mut lease, receiving)| {
        let stalled = stalled.clone();
        let holder = holder.clone();
        let window = window.clone();
        async move {
            let message = tokio::select! {
                biased;
                () = stalled.cancelled() => None,
                () = holder.cancelled() => None,
                message = lease.receiver.as_mut()?.recv() => message,
            }?;
            let event = Event::default().data(&message.text);
            let id = window.delivered(message.shape.cursor.as_deref(), message.text);
            Some((Ok::<_, Infallible>(event.id(id)), (lease, receiving)))
        }
    });
    let keepalive = KeepAlive::new().interval(shared.config.keepalive()).text("keepalive");
    Sse::new(futures::StreamExt::chain(replayed, live)).keep_alive(keepalive).into_response()
}

/// `409` for a stream reopened after an event it does not hold (never sent, or no longer kept).
fn unknown_event(connection: &HttpConnection, id: &str) -> Response {
    tracing::info!(connection = connection.id, last_event_id = id, "a stream reopened after an unknown event");
    let body = format!("Unknown Last-Event-ID: {id}");
    (StatusCode::CONFLICT, [(header::CONTENT_TYPE, "text/plain")], body).into_response()
}

/// The header a reopened SSE stream names the last event its client saw with.
const LAST_EVENT_ID: &str = "last-event-id";

/// How long a reopened stream waits for the response still holding it to end.
const TAKE_OVER: Duration = Duration::from_secs(5);

/// The receiving end of `route`'s stream, its response's end signal and its replay window. A
/// stream held by another response is `409`, unless the client reopens it (`take_over`): that
/// response is ended, and its end awaited for up to [`TAKE_OVER`].
async fn lease_stream(
    connection: &HttpConnection,
    route: &Route,
    take_over: bool,
) -> Result<(Lease, CancellationToken, Window), Response> {
    let deadline = tokio::time::Instant::now() + TAKE_OVER;
    loop {
        {
            let mut streams = lock(&connection.streams);
            if connection.ended.load(Ordering::SeqCst) {
                return Err(refuse(StatusCode::NOT_FOUND, "Unknown Acp-Connection-Id"));
            }
            let mailbox = streams.entry(route.clone()).or_insert_with(|| Mailbox::new(&connection.replay_bytes));
            if let Some((lease, holder)) = mailbox.lease() {
                return Ok((lease, holder, mailbox.window.clone()));
            }
            if !take_over || tokio::time::Instant::now() >= deadline {
                return Err(refuse(StatusCode::CONFLICT, "Outbound stream already has an active receiver"));
            }
            mailbox.take_over();
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// `DELETE`: the client hangs a connection up.
pub(crate) async fn delete(
    State(shared): State<Arc<Shared>>,
    Extension(principal): Extension<Principal>,
    headers: HeaderMap,
) -> Response {
    let connection_id = headers.get(CONNECTION_ID).and_then(|v| v.to_str().ok());
    let connection = match connection_of(&shared, connection_id, &principal) {
        Ok(connection) => connection,
        Err(refused) => return refused,
    };
    shared.connections.remove(&connection.id);
    connection.hang_up();
    StatusCode::ACCEPTED.into_response()
}

/// The connection a request names, if it exists and belongs to the request's principal.
fn connection_of(shared: &Shared, id: Option<&str>, principal: &Principal) -> Result<Arc<HttpConnection>, Response> {
    let Some(id) = id else {
        return Err(refuse(StatusCode::BAD_REQUEST, "Missing Acp-Connection-Id"));
    };
    let Some(connection) = shared.connections.get(id) else {
        return Err(refuse(StatusCode::NOT_FOUND, "Unknown Acp-Connection-Id"));
    };
    if connection.principal != *principal {
        return Err(refuse(StatusCode::FORBIDDEN, "the connection belongs to another principal"));
    }
    connection.touch();
    Ok(connection)
}

/// A JSON body.
fn json_response(status: StatusCode, body: &Value) -> Response {
    (status, [(header::CONTENT_TYPE, "application/json")], body.to_string()).into_response()
}

/// The session a message's params name.
fn session_of(message: &Value) -> Option<String> {
    message.get("params")?.get("sessionId")?.as_str().map(str::to_owned)
}

/// A JSON-RPC id as a map key (`1` and `"1"` differ).
fn id_key(id: &Value) -> String {
    id.to_string()
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn connection() -> Arc<HttpConnection> {
        Arc::new(HttpConnection {
            id: "c".to_owned(),
            principal: Principal(None),
            pipe: Mutex::new(None),
            routes: Mutex::new(Routes::default()),
            streams: Mutex::new(HashMap::new()),
            replay_bytes: Arc::default(),
            kept: Mutex::default(),
            ended: std::sync::atomic::AtomicBool::new(false),
            receivers: AtomicUsize::new(0),
            last_seen: Mutex::new(tokio::time::Instant::now()),
            stalled: tokio_util::sync::CancellationToken::new(),
            _slot: None,
        })
    }

    /// Opens `route`'s stream as an SSE response does; the returned pair is that response.
    fn open(connection: &Arc<HttpConnection>, route: &Route) -> (Lease, Receiving) {
        let (lease, _holder) = lock(&connection.streams)
            .entry(route.clone())
            .or_insert_with(|| Mailbox::new(&connection.replay_bytes))
            .lease()
            .unwrap();
        (lease, Receiving::new(connection.clone(), route.clone()))
    }

    #[tokio::test]
    async fn a_stream_left_empty_is_forgotten_and_one_with_messages_waiting_is_kept() {
        let connection = connection();
        let session = Some("s".to_owned());
        let response = open(&connection, &session);
        assert_eq!(connection.receivers.load(Ordering::SeqCst), 1);
        drop(response);
        assert_eq!(connection.receivers.load(Ordering::SeqCst), 0);
        assert!(lock(&connection.streams).is_empty(), "an empty stream nobody reads is forgotten");

        let response = open(&connection, &session);
        let budget = crate::remote::budget::Budget::new(1024);
        let credit = budget.reserve(2, Duration::from_secs(1)).await.unwrap();
        let message =
            Outgoing { text: "{}".to_owned(), shape: crate::remote::shape::of("{}").unwrap(), _credit: credit };
        lock(&connection.streams)[&session].push(message);
        drop(response);
        assert!(lock(&connection.streams).contains_key(&session), "a message waits in it");
        let mut again = open(&connection, &session);
        assert_eq!(again.0.receiver.as_mut().unwrap().recv().await.unwrap().text, "{}");
    }

    /// A stream that delivered something keeps its replay window after its response ended, for
    /// a client that reopens it; only the last [`KEPT_STREAMS`] such streams are kept.
    #[tokio::test]
    async fn streams_with_a_replay_window_are_kept_up_to_a_bound() {
        let connection = connection();
        for n in 0..=KEPT_STREAMS {
            let route = Some(format!("s{n}"));
            let response = open(&connection, &route);
            lock(&connection.streams)[&route].window.delivered(Some("1"), "{}".to_owned());
            drop(response);
        }
        let streams = lock(&connection.streams);
        assert_eq!(streams.len(), KEPT_STREAMS);
        assert!(!streams.contains_key(&Some("s0".to_owned())), "the oldest kept stream is forgotten");
        assert!(streams[&Some(format!("s{KEPT_STREAMS}"))].window.holds("1"));
    }

    /// The agent's `$/cancel_request` names no session, yet goes on the stream its request went
    /// on: over two streams it could overtake the session's later lines (the request's
    /// `terminal/kill`, the prompt's answer), which over stdio it precedes.
    #[tokio::test]
    async fn an_abandoned_request_is_cancelled_on_the_stream_the_request_went_on() {
        let connection = connection();
        let session = Some("s".to_owned());
        let budget = crate::remote::budget::Budget::new(1 << 16);
        for line in [
            r#"{"jsonrpc":"2.0","id":4,"method":"terminal/wait_for_exit","params":{"sessionId":"s","terminalId":"t"}}"#,
            r#"{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":4}}"#,
            r#"{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":99}}"#,
        ] {
            let credit = budget.reserve(line.len(), Duration::from_secs(1)).await.unwrap();
            let shape = crate::remote::shape::of(line).unwrap();
            connection.route(Outgoing { text: line.to_owned(), shape, _credit: credit });
        }
        let (mut on_session, _receiving) = open(&connection, &session);
        let receiver = on_session.receiver.as_mut().unwrap();
        assert!(receiver.recv().await.unwrap().text.contains("terminal/wait_for_exit"));
        assert!(receiver.recv().await.unwrap().text.contains(r#""requestId":4"#));
        assert!(receiver.is_empty(), "the cancellation of a request never sent goes to the connection's stream");
        let (mut on_connection, _receiving) = open(&connection, &None);
        assert!(on_connection.receiver.as_mut().unwrap().recv().await.unwrap().text.contains(r#""requestId":99"#));
    }

    /// `elicitation/complete` names no session, yet follows its `elicitation/create` onto the
    /// session's stream, behind the turn's later lines as over stdio.
    #[tokio::test]
    async fn an_elicitation_completes_on_the_stream_it_was_created_on() {
        let connection = connection();
        let session = Some("s".to_owned());
        let budget = crate::remote::budget::Budget::new(1 << 16);
        for line in [
            r#"{"jsonrpc":"2.0","id":5,"method":"elicitation/create","params":{"elicitationId":"e-1","mode":"url","sessionId":"s","url":"https://x"}}"#,
            r#"{"jsonrpc":"2.0","method":"elicitation/complete","params":{"elicitationId":"e-1"}}"#,
            r#"{"jsonrpc":"2.0","method":"elicitation/complete","params":{"elicitationId":"e-unknown"}}"#,
        ] {
            let credit = budget.reserve(line.len(), Duration::from_secs(1)).await.unwrap();
            let shape = crate::remote::shape::of(line).unwrap();
            connection.route(Outgoing { text: line.to_owned(), shape, _credit: credit });
        }
        let (mut on_session, _receiving) = open(&connection, &session);
        let receiver = on_session.receiver.as_mut().unwrap();
        assert!(receiver.recv().await.unwrap().text.contains("elicitation/create"));
        assert!(receiver.recv().await.unwrap().text.contains(r#""elicitationId":"e-1""#));
        assert!(receiver.is_empty());
        let (mut on_connection, _receiving) = open(&connection, &None);
        assert!(on_connection.receiver.as_mut().unwrap().recv().await.unwrap().text.contains("e-unknown"));
        assert!(lock(&connection.routes).elicitations.is_empty(), "a completed elicitation is forgotten");
    }
}
