//! Shared helpers for the integration tests: an in-memory client that validates every message the
//! agent sends against the generated ACP v1 schema (schema/README.md), and a scripted host whose
//! events the test controls.

#![allow(dead_code, clippy::missing_panics_doc, clippy::must_use_candidate)]

pub mod auth;
pub mod chaos;
pub mod client_turns;
pub mod event;
pub mod framing_model;
pub mod host;
pub mod lifecycle;
pub mod rich;
pub mod runner;
pub mod schema;
pub mod stores;

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use acp_facade::{Agent, Options};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines, ReadHalf, WriteHalf};
use tokio::task::JoinHandle;

/// How long a test waits for any one message before failing.
pub const STEP: Duration = Duration::from_secs(10);

/// One message from the agent, already schema-validated.
#[derive(Debug, Clone)]
pub struct Received(pub Value);

impl Received {
    pub fn is_response_to(&self, id: &Value) -> bool {
        self.0.get("id") == Some(id) && self.0.get("method").is_none()
    }
    pub fn method(&self) -> Option<&str> {
        self.0.get("method").and_then(Value::as_str)
    }
    pub fn update_kind(&self) -> Option<&str> {
        self.0.pointer("/params/update/sessionUpdate").and_then(Value::as_str)
    }
}

/// A client speaking raw JSON-RPC to an agent over an in-memory duplex pipe.
pub struct TestClient {
    lines: Lines<BufReader<ReadHalf<DuplexStream>>>,
    writer: WriteHalf<DuplexStream>,
    /// Messages read but not yet consumed, in arrival order.
    backlog: VecDeque<Value>,
    /// Method of each request we sent, by id, to validate its response.
    sent: HashMap<String, String>,
    /// Method of each request the agent sent us, by id.
    agent_requests: HashMap<String, String>,
    next_id: i64,
    pub serve: JoinHandle<std::io::Result<()>>,
    /// Every message received, in order (for transcript assertions).
    pub transcript: Vec<Value>,
    /// Every line sent, kept for the fuzz seed corpus (see [`SentLines`]).
    sent_lines: SentLines,
    /// The `clientCapabilities` this client advertised: the agent must call nothing else.
    advertised: Value,
}

/// The environment variable naming a directory where every [`TestClient`] leaves the lines it
/// sent, one file per client (`fuzz/seed-corpus` turns them into the fuzz targets' seeds).
pub const DUMP_SENT_LINES_ENV: &str = "ACP_FACADE_DUMP_SENT_LINES";

/// The lines a client sent; written to [`DUMP_SENT_LINES_ENV`]'s directory when dropped.
#[derive(Default)]
struct SentLines {
    dir: Option<std::path::PathBuf>,
    bytes: Vec<u8>,
}

impl SentLines {
    fn new() -> Self {
        Self { dir: std::env::var_os(DUMP_SENT_LINES_ENV).filter(|d| !d.is_empty()).map(Into::into), bytes: Vec::new() }
    }

    fn record(&mut self, line: &[u8]) {
        if self.dir.is_some() {
            self.bytes.extend_from_slice(line);
            self.bytes.push(b'\n');
        }
    }
}

impl Drop for SentLines {
    fn drop(&mut self) {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static COUNTER: AtomicUsize = AtomicUsize::new(0);
        let Some(dir) = &self.dir else { return };
        if self.bytes.is_empty() {
            return;
        }
        let test = std::thread::current().name().unwrap_or("test").replace(|c: char| !c.is_ascii_alphanumeric(), "_");
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let _ = std::fs::create_dir_all(dir);
        let _ = std::fs::write(dir.join(format!("{test}-{}-{n}.jsonl", std::process::id())), &self.bytes);
    }
}

impl TestClient {
    /// Starts `agent` on an in-memory pipe.
    pub fn start(options: Options) -> Self {
        Self::start_agent(Agent::new(options))
    }

    pub fn start_agent(agent: Agent) -> Self {
        let (client_side, agent_side) = tokio::io::duplex(1 << 20);
        let (agent_read, agent_write) = tokio::io::split(agent_side);
        let serve = tokio::spawn(async move { agent.serve(agent_read, agent_write).await });
        let (read, writer) = tokio::io::split(client_side);
        Self {
            lines: BufReader::new(read).lines(),
            writer,
            backlog: VecDeque::new(),
            sent: HashMap::new(),
            agent_requests: HashMap::new(),
            next_id: 1,
            serve,
            transcript: Vec::new(),
            sent_lines: SentLines::new(),
            advertised: json!({}),
        }
    }

    /// Starts and initializes.
    pub async fn initialized(options: Options) -> Self {
        let mut client = Self::start(options);
        client.initialize().await;
        client
    }

    pub async fn initialize(&mut self) -> Value {
        self.initialize_with(json!({})).await
    }

    /// Initializes advertising `capabilities` (`clientCapabilities`); from then on every message
    /// of the agent is checked against them (see [`schema::check_capability`]).
    pub async fn initialize_with(&mut self, capabilities: Value) -> Value {
        self.advertised = capabilities.clone();
        self.call_ok("initialize", json!({"protocolVersion": 1, "clientCapabilities": capabilities})).await
    }

    /// Starts and initializes advertising `capabilities`.
    pub async fn initialized_with(options: Options, capabilities: Value) -> Self {
        let mut client = Self::start(options);
        client.initialize_with(capabilities).await;
        client
    }

    /// Writes one raw line (a newline is appended).
    pub async fn send_raw(&mut self, line: &str) {
        self.sent_lines.record(line.as_bytes());
        self.writer.write_all(line.as_bytes()).await.unwrap();
        self.writer.write_all(b"\n").await.unwrap();
        self.writer.flush().await.unwrap();
    }

    /// Sends a request and returns its id.
    pub async fn send_request(&mut self, method: &str, params: Value) -> Value {
        let id = json!(self.next_id);
        self.next_id += 1;
        self.send_request_with_id(id.clone(), method, params).await;
        id
    }

    pub async fn send_request_with_id(&mut self, id: Value, method: &str, params: Value) {
        self.sent.insert(id.to_string(), method.to_owned());
        let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.send_raw(&message.to_string()).await;
    }

    pub async fn notify(&mut self, method: &str, params: Value) {
        let message = json!({"jsonrpc": "2.0", "method": method, "params": params});
        self.send_raw(&message.to_string()).await;
    }

    /// Answers one of the agent's requests.
    pub async fn respond(&mut self, id: &Value, result: Value) {
        let message = json!({"jsonrpc": "2.0", "id": id, "result": result});
        self.send_raw(&message.to_string()).await;
    }

    /// Answers one of the agent's requests with an error object.
    pub async fn respond_error(&mut self, id: &Value, error: Value) {
        let message = json!({"jsonrpc": "2.0", "id": id, "error": error});
        self.send_raw(&message.to_string()).await;
    }

    /// Reads the next message from the wire (validated), or panics after [`STEP`].
    async fn read_one(&mut self) -> Value {
        let line = tokio::time::timeout(STEP, self.lines.next_line())
            .await
            .expect("timed out waiting for the agent")
            .expect("read failed")
            .expect("the agent closed the connection");
        let value: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("agent sent non-JSON {line:?}: {e}"));
        schema::validate_agent_message(&value, &self.sent, &mut self.agent_requests);
        schema::check_capability(&value, &self.advertised);
        self.transcript.push(value.clone());
        value
    }

    /// The next message, from the backlog first.
    pub async fn next(&mut self) -> Received {
        if let Some(v) = self.backlog.pop_front() {
            return Received(v);
        }
        Received(self.read_one().await)
    }

    /// Waits for the message matching `pred`, keeping the others in the backlog.
    pub async fn wait_for(&mut self, pred: impl Fn(&Value) -> bool) -> Value {
        if let Some(pos) = self.backlog.iter().position(&pred) {
            return self.backlog.remove(pos).unwrap();
        }
        loop {
            let v = self.read_one().await;
            if pred(&v) {
                return v;
            }
            self.backlog.push_back(v);
        }
    }

    /// Waits for the response to `id`; returns the whole response and everything that came
    /// before it (removed from the backlog), in order.
    pub async fn response_with_preceding(&mut self, id: &Value) -> (Value, Vec<Value>) {
        let mut before: Vec<Value> = Vec::new();
        while let Some(v) = self.backlog.pop_front() {
            if Received(v.clone()).is_response_to(id) {
                return (v, before);
            }
            before.push(v);
        }
        loop {
            let v = self.read_one().await;
            if Received(v.clone()).is_response_to(id) {
                return (v, before);
            }
            before.push(v);
        }
    }

    /// Waits for the response to `id`.
    pub async fn response(&mut self, id: &Value) -> Value {
        let id = id.clone();
        self.wait_for(move |v| Received(v.clone()).is_response_to(&id)).await
    }

    /// Sends a request and returns its `result`, panicking on an error.
    pub async fn call_ok(&mut self, method: &str, params: Value) -> Value {
        let id = self.send_request(method, params).await;
        let response = self.response(&id).await;
        match response.get("result") {
            Some(result) => result.clone(),
            None => panic!("`{method}` failed: {response}"),
        }
    }

    /// Sends a request and returns its `error`, panicking on success.
    pub async fn call_err(&mut self, method: &str, params: Value) -> Value {
        let id = self.send_request(method, params).await;
        let response = self.response(&id).await;
        match response.get("error") {
            Some(error) => error.clone(),
            None => panic!("`{method}` unexpectedly succeeded: {response}"),
        }
    }

    /// `session/new` in `/tmp`; returns the session id.
    pub async fn new_session(&mut self) -> String {
        let result = self.call_ok("session/new", json!({"cwd": "/tmp", "mcpServers": []})).await;
        result["sessionId"].as_str().expect("sessionId").to_owned()
    }

    /// Sends `session/prompt` with one text block; returns the request id.
    pub async fn prompt(&mut self, session: &str, text: &str) -> Value {
        self.send_request("session/prompt", json!({"sessionId": session, "prompt": [{"type": "text", "text": text}]}))
            .await
    }

    /// Like [`TestClient::hang_up`], returning every message the agent sent over the whole
    /// connection, in order (those read before and after the hang-up).
    pub async fn hang_up_transcript(mut self) -> Vec<Value> {
        let mut transcript = std::mem::take(&mut self.transcript);
        let backlog = self.backlog.len();
        transcript.extend(self.hang_up().await.into_iter().skip(backlog));
        transcript
    }

    /// Closes the client's writing side (EOF for the agent) and waits for `serve` to return.
    pub async fn hang_up(mut self) -> Vec<Value> {
        self.writer.shutdown().await.unwrap();
        let mut rest: Vec<Value> = self.backlog.drain(..).collect();
        while let Ok(Some(line)) = tokio::time::timeout(STEP, self.lines.next_line()).await.expect("timed out draining")
        {
            let value: Value = serde_json::from_str(&line).unwrap();
            schema::validate_agent_message(&value, &self.sent, &mut self.agent_requests);
            schema::check_capability(&value, &self.advertised);
            rest.push(value);
        }
        tokio::time::timeout(STEP, self.serve).await.expect("serve did not return").unwrap().unwrap();
        rest
    }
}

/// Proves the connection still serves: a fresh `session/new` succeeds and is the very next
/// message from the agent. Returns the new session's id.
pub async fn assert_serving(client: &mut TestClient) -> String {
    let id = client.send_request("session/new", json!({"cwd": "/tmp", "mcpServers": []})).await;
    let next = client.next().await.0;
    assert!(Received(next.clone()).is_response_to(&id), "expected the `session/new` response next, got {next}");
    next.pointer("/result/sessionId")
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("`session/new` failed: {next}"))
        .to_owned()
}

/// The `session/update` notifications in `messages`, as `params.update` objects.
pub fn updates(messages: &[Value]) -> Vec<Value> {
    messages
        .iter()
        .filter(|m| m.get("method").and_then(Value::as_str) == Some("session/update"))
        .map(|m| m["params"]["update"].clone())
        .collect()
}

/// The error object of a response, panicking when it succeeded.
pub fn error_of(response: &Value) -> Value {
    response.get("error").cloned().unwrap_or_else(|| panic!("expected an error: {response}"))
}

/// The error code of an error object.
pub fn code(error: &Value) -> i64 {
    error["code"].as_i64().expect("error code")
}

/// The agent message chunks' texts, in order.
pub fn chunk_texts(messages: &[Value], kind: &str) -> Vec<String> {
    messages
        .iter()
        .filter(|m| m.pointer("/params/update/sessionUpdate").and_then(Value::as_str) == Some(kind))
        .map(|m| m.pointer("/params/update/content/text").and_then(Value::as_str).unwrap_or_default().to_owned())
        .collect()
}

/// Arc helper.
pub fn arc<T>(t: T) -> Arc<T> {
    Arc::new(t)
}
