//! The one client of `acp-facade-bench remote`, the same for every server: ACP over WebSocket
//! (one JSON-RPC message per text frame, tokio-tungstenite) and over Streamable HTTP (hyper,
//! HTTP/1.1), speaking the wire the official SDK 2.4 clients speak.
//!
//! Streamable HTTP, as those clients do it: `initialize` is sent as a POST and answered in the body with
//! the `Acp-Connection-Id` header; the client then opens the connection's SSE stream (`GET`,
//! `Accept: text/event-stream`, `Acp-Connection-Id`), and after `session/new` that session's
//! stream (`Acp-Session-Id` too); every later POST carries the connection id (and the session id
//! when it is about a session) and is answered `202`, its answer coming on a stream. POSTs share
//! one keep-alive TCP connection; each SSE stream has its own (HTTP/1.1, as Node's `fetch`).
//!
//! Invariants: every message received from any stream of a connection comes out of one queue,
//! in the order each stream delivered it (a server may route an answer to either stream); a
//! failure (a refused request, a closed stream, a malformed event) is an `Err` naming it, never
//! a silent skip.

use std::net::SocketAddr;

use futures::{SinkExt as _, StreamExt as _};
use http_body_util::{BodyExt as _, Full};
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde::Deserialize;
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::Message;

/// What every measurement may fail with: a sentence naming what went wrong.
pub(crate) type Result<T> = std::result::Result<T, String>;

/// Where a server listens: its address and the endpoint path.
#[derive(Clone, Debug)]
pub(crate) struct Endpoint {
    pub(crate) addr: SocketAddr,
    pub(crate) path: String,
}

impl Endpoint {
    /// Parses the `http://HOST:PORT/PATH` a server printed.
    pub(crate) fn parse(url: &str) -> Result<Self> {
        let rest = url.strip_prefix("http://").ok_or_else(|| format!("not an http:// URL: {url}"))?;
        let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
        let addr = authority.parse().map_err(|e| format!("bad address in {url}: {e}"))?;
        Ok(Self { addr, path: format!("/{path}") })
    }

    fn ws_url(&self) -> String {
        format!("ws://{}{}", self.addr, self.path)
    }
}

/// The parts of a JSON-RPC message the measurements look at (the rest is skipped unparsed).
#[derive(Deserialize)]
pub(crate) struct Peek<'a> {
    pub(crate) id: Option<u64>,
    #[serde(borrow)]
    pub(crate) method: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow)]
    pub(crate) params: Option<PeekParams<'a>>,
    pub(crate) error: Option<serde::de::IgnoredAny>,
}

/// `params.sessionId` and `params.update.sessionUpdate`.
#[derive(Deserialize)]
pub(crate) struct PeekParams<'a> {
    #[serde(borrow, rename = "sessionId")]
    pub(crate) session_id: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow)]
    pub(crate) update: Option<PeekUpdate<'a>>,
}

/// `sessionUpdate` of a `session/update`.
#[derive(Deserialize)]
pub(crate) struct PeekUpdate<'a> {
    #[serde(borrow, rename = "sessionUpdate")]
    pub(crate) kind: Option<std::borrow::Cow<'a, str>>,
}

/// Parses the parts of `text` the measurements need.
pub(crate) fn peek(text: &str) -> Result<Peek<'_>> {
    serde_json::from_str(text).map_err(|e| format!("not a JSON-RPC message ({e}): {}", clip(text)))
}

/// The first 200 characters of `text`, for error messages.
pub(crate) fn clip(text: &str) -> String {
    text.chars().take(200).collect()
}

/// `initialize` with id 1 (protocol v1, no client capabilities).
pub(crate) const INITIALIZE: &str =
    r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}"#;

/// `session/new` with `id`.
pub(crate) fn session_new(id: u64) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"session/new","params":{{"cwd":"/tmp","mcpServers":[]}}}}"#)
}

/// `session/prompt` of `text` in `session` with `id`.
pub(crate) fn prompt(id: u64, session: &str, text: &str) -> String {
    serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "session/prompt",
        "params": {"sessionId": session, "prompt": [{"type": "text", "text": text}]}})
    .to_string()
}

/// The `sessionId` of a `session/new` answer.
pub(crate) fn session_id(answer: &str) -> Result<String> {
    let value: serde_json::Value = serde_json::from_str(answer).map_err(|e| format!("bad answer ({e})"))?;
    value["result"]["sessionId"].as_str().map(str::to_owned).ok_or_else(|| format!("no sessionId in {}", clip(answer)))
}

/// Checks that `text` is the successful answer to `id`.
pub(crate) fn expect_answer(text: &str, id: u64) -> Result<()> {
    let message = peek(text)?;
    if message.id != Some(id) || message.method.is_some() {
        return Err(format!("expected the answer to {id}, got {}", clip(text)));
    }
    if message.error.is_some() {
        return Err(format!("request {id} failed: {}", clip(text)));
    }
    Ok(())
}

/// One ACP connection over WebSocket.
pub(crate) struct Ws {
    socket: tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<TcpStream>>,
}

impl Ws {
    /// Opens the WebSocket (no message is sent yet).
    pub(crate) async fn connect(endpoint: &Endpoint) -> Result<Self> {
        let (socket, _) = tokio_tungstenite::connect_async(endpoint.ws_url())
            .await
            .map_err(|e| format!("WebSocket to {}: {e}", endpoint.ws_url()))?;
        Ok(Self { socket })
    }

    /// Sends one message in one text frame.
    pub(crate) async fn send(&mut self, text: String) -> Result<()> {
        self.socket.send(Message::text(text)).await.map_err(|e| format!("WebSocket send: {e}"))
    }

    /// The next message (pings are answered by tungstenite and skipped here).
    pub(crate) async fn recv(&mut self) -> Result<Message> {
        loop {
            match self.socket.next().await {
                Some(Ok(message @ (Message::Text(_) | Message::Binary(_) | Message::Close(_)))) => return Ok(message),
                Some(Ok(_)) => {}
                Some(Err(e)) => return Err(format!("WebSocket receive: {e}")),
                None => return Err("the server closed the WebSocket".to_owned()),
            }
        }
    }

    /// The next text message.
    pub(crate) async fn recv_text(&mut self) -> Result<String> {
        match self.recv().await? {
            Message::Text(text) => Ok(text.as_str().to_owned()),
            other => Err(format!("expected a text frame, got {other:?}")),
        }
    }

    /// Sends `request` and waits for its answer (nothing else may come before it).
    pub(crate) async fn call(&mut self, request: String, id: u64) -> Result<String> {
        self.send(request).await?;
        let answer = self.recv_text().await?;
        expect_answer(&answer, id)?;
        Ok(answer)
    }

    /// An initialized connection.
    pub(crate) async fn initialized(endpoint: &Endpoint) -> Result<Self> {
        let mut ws = Self::connect(endpoint).await?;
        ws.call(INITIALIZE.to_owned(), 1).await?;
        Ok(ws)
    }
}

/// One ACP connection over Streamable HTTP.
pub(crate) struct Http {
    endpoint: Endpoint,
    connection_id: String,
    /// The keep-alive connection the POSTs go on.
    posts: hyper::client::conn::http1::SendRequest<Full<Bytes>>,
    /// Every message of every open stream, in arrival order.
    incoming: mpsc::Receiver<Result<String>>,
    incoming_tx: mpsc::Sender<Result<String>>,
}

/// A new HTTP/1.1 connection to `endpoint`, its driver task spawned.
async fn http_connection(endpoint: &Endpoint) -> Result<hyper::client::conn::http1::SendRequest<Full<Bytes>>> {
    let tcp = TcpStream::connect(endpoint.addr).await.map_err(|e| format!("connect {}: {e}", endpoint.addr))?;
    tcp.set_nodelay(true).map_err(|e| format!("TCP_NODELAY: {e}"))?;
    let (sender, connection) =
        hyper::client::conn::http1::handshake(TokioIo::new(tcp)).await.map_err(|e| format!("HTTP handshake: {e}"))?;
    tokio::spawn(connection);
    Ok(sender)
}

fn request(endpoint: &Endpoint, method: &str) -> hyper::http::request::Builder {
    Request::builder().method(method).uri(endpoint.path.as_str()).header("host", endpoint.addr.to_string())
}

async fn send(
    sender: &mut hyper::client::conn::http1::SendRequest<Full<Bytes>>,
    request: Request<Full<Bytes>>,
) -> Result<Response<Incoming>> {
    sender.ready().await.map_err(|e| format!("HTTP connection: {e}"))?;
    sender.send_request(request).await.map_err(|e| format!("HTTP request: {e}"))
}

async fn body_text(response: Response<Incoming>) -> Result<String> {
    let body = response.into_body().collect().await.map_err(|e| format!("HTTP body: {e}"))?.to_bytes();
    String::from_utf8(body.to_vec()).map_err(|e| format!("HTTP body not UTF-8: {e}"))
}

impl Http {
    /// POSTs `initialize` and returns the connection it made.
    pub(crate) async fn initialize(endpoint: &Endpoint) -> Result<Self> {
        let mut posts = http_connection(endpoint).await?;
        let request = request(endpoint, "POST")
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(Full::new(Bytes::from_static(INITIALIZE.as_bytes())))
            .map_err(|e| e.to_string())?;
        let response = send(&mut posts, request).await?;
        let status = response.status();
        let connection_id = response
            .headers()
            .get("acp-connection-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
            .ok_or_else(|| format!("initialize answered {status} without Acp-Connection-Id"))?;
        let event_stream = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        let body = body_text(response).await?;
        let answer = if event_stream {
            let mut parser = SseParser::default();
            parser.feed(body.as_bytes())?.into_iter().next().ok_or("an empty initialize event stream")?
        } else {
            body
        };
        if status != StatusCode::OK {
            return Err(format!("initialize answered {status}: {}", clip(&answer)));
        }
        expect_answer(&answer, 1)?;
        let (incoming_tx, incoming) = mpsc::channel(1024);
        Ok(Self { endpoint: endpoint.clone(), connection_id, posts, incoming, incoming_tx })
    }

    /// Opens the connection's SSE stream (`session: None`) or that session's; its messages come
    /// out of [`Http::recv`].
    pub(crate) async fn open_stream(&mut self, session: Option<&str>) -> Result<()> {
        let mut sender = http_connection(&self.endpoint).await?;
        let mut builder = request(&self.endpoint, "GET")
            .header("accept", "text/event-stream")
            .header("acp-connection-id", self.connection_id.as_str());
        if let Some(session) = session {
            builder = builder.header("acp-session-id", session);
        }
        let response = send(&mut sender, builder.body(Full::new(Bytes::new())).map_err(|e| e.to_string())?).await?;
        if response.status() != StatusCode::OK {
            let status = response.status();
            return Err(format!("GET stream ({session:?}) answered {status}: {}", clip(&body_text(response).await?)));
        }
        let tx = self.incoming_tx.clone();
        tokio::spawn(async move {
            // Keeps the TCP connection alive as long as the stream is read.
            let _sender = sender;
            let mut body = response.into_body();
            let mut parser = SseParser::default();
            loop {
                let messages = match body.frame().await {
                    Some(Ok(frame)) => match frame.into_data() {
                        Ok(data) => parser.feed(&data),
                        Err(_) => continue,
                    },
                    Some(Err(e)) => Err(format!("SSE stream: {e}")),
                    None => Err("the server ended an SSE stream".to_owned()),
                };
                let failed = messages.is_err();
                for message in messages.map_or_else(|e| vec![Err(e)], |m| m.into_iter().map(Ok).collect()) {
                    if tx.send(message).await.is_err() {
                        return;
                    }
                }
                if failed {
                    return;
                }
            }
        });
        Ok(())
    }

    /// POSTs `message` (about `session` when given); the server must accept it (`202`, or `200`).
    pub(crate) async fn post(&mut self, message: String, session: Option<&str>) -> Result<()> {
        let mut builder = request(&self.endpoint, "POST")
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("acp-connection-id", self.connection_id.as_str());
        if let Some(session) = session {
            builder = builder.header("acp-session-id", session);
        }
        let request = builder.body(Full::new(Bytes::from(message))).map_err(|e| e.to_string())?;
        let response = send(&mut self.posts, request).await?;
        let status = response.status();
        let body = body_text(response).await?;
        if !status.is_success() {
            return Err(format!("POST answered {status}: {}", clip(&body)));
        }
        Ok(())
    }

    /// The next message from any open stream.
    pub(crate) async fn recv(&mut self) -> Result<String> {
        self.incoming.recv().await.unwrap_or_else(|| Err("every SSE stream ended".to_owned()))
    }
}

/// Server-Sent Events: `data:` lines joined by newlines, one message per blank-line-ended event.
#[derive(Default)]
struct SseParser {
    buffer: Vec<u8>,
    data: String,
}

impl SseParser {
    /// Feeds bytes and returns the complete events' data (comments and other fields ignored).
    fn feed(&mut self, bytes: &[u8]) -> Result<Vec<String>> {
        self.buffer.extend_from_slice(bytes);
        let mut out = Vec::new();
        let mut start = 0;
        while let Some(n) = memchr::memchr(b'\n', &self.buffer[start..]) {
            let mut line = &self.buffer[start..start + n];
            start += n + 1;
            if let [rest @ .., b'\r'] = line {
                line = rest;
            }
            if line.is_empty() {
                if !self.data.is_empty() {
                    out.push(std::mem::take(&mut self.data));
                }
            } else if let Some(value) = line.strip_prefix(b"data:") {
                let value = value.strip_prefix(b" ").unwrap_or(value);
                let value = std::str::from_utf8(value).map_err(|e| format!("SSE data not UTF-8: {e}"))?;
                if !self.data.is_empty() {
                    self.data.push('\n');
                }
                self.data.push_str(value);
            }
        }
        self.buffer.drain(..start);
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::SseParser;

    #[test]
    fn sse_events_split_across_frames_and_crlf() {
        let mut parser = SseParser::default();
        assert!(parser.feed(b"event: message\r\ndata: {\"a\"").unwrap().is_empty());
        assert_eq!(
            parser.feed(b":1}\r\n\r\n: keep-alive\n\ndata: x\ndata: y\n\n").unwrap(),
            vec!["{\"a\":1}".to_owned(), "x\ny".to_owned()]
        );
    }

    #[test]
    fn endpoints_parse_from_the_listening_line() {
        let endpoint = super::Endpoint::parse("http://127.0.0.1:4000/acp").unwrap();
        assert_eq!(endpoint.addr.port(), 4000);
        assert_eq!(endpoint.path, "/acp");
        assert!(super::Endpoint::parse("ws://x").is_err());
    }
}
