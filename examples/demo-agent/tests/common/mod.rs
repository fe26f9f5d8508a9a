//! A client for the real `acp-facade-demo` binary: spawns it, speaks newline-delimited JSON-RPC
//! over its stdin/stdout, and validates every message it reads against the ACP schema generated
//! from the wire types (`schema/v1/schema.json`), so every test also checks "nothing but protocol
//! on stdout".
//!
//! Stdout is read by a thread into a small bounded queue: when the test stops taking messages,
//! the thread stops reading and the pipe fills, which is how the back-pressure test stalls the
//! agent.

#![allow(dead_code, clippy::missing_panics_doc, clippy::must_use_candidate, clippy::needless_pass_by_value)]

#[path = "../../../../runner/tests/common/schema.rs"]
pub mod schema;

pub mod editor;

use std::collections::{HashMap, VecDeque};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, sync_channel};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

/// How long a test waits for any one message before failing (a hang guard, not a timing check).
pub const STEP: Duration = Duration::from_secs(20);

/// Lines the stdout thread may hold before it stops reading.
const QUEUE: usize = 1024;

/// The demo binary built by cargo for these tests.
pub const DEMO: &str = env!("CARGO_BIN_EXE_acp-facade-demo");

/// A running demo agent and the client side of its stdio.
pub struct Demo {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    stderr: Arc<Mutex<String>>,
    backlog: VecDeque<Value>,
    /// Method of each request we sent, by id, to validate its response.
    sent: HashMap<String, String>,
    /// Method of each request the agent sent, by id.
    agent_requests: HashMap<String, String>,
    next_id: i64,
    /// Every message read, in order.
    pub transcript: Vec<Value>,
    /// The `clientCapabilities` this client advertised: the agent must call nothing else.
    advertised: Value,
}

impl Demo {
    /// Starts the demo with these arguments.
    pub fn start(args: &[&str]) -> Self {
        let mut child = Command::new(DEMO)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .env_remove("ACP_FACADE_LOG")
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {DEMO}: {e}"));
        let stdout = child.stdout.take().expect("stdout");
        let (tx, lines) = sync_channel(QUEUE);
        std::thread::spawn(move || read_lines(BufReader::new(stdout), &tx));
        let stderr_pipe = child.stderr.take().expect("stderr");
        let stderr = Arc::new(Mutex::new(String::new()));
        {
            let stderr = stderr.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(stderr_pipe).lines() {
                    let Ok(line) = line else { break };
                    let mut all = stderr.lock().unwrap();
                    all.push_str(&line);
                    all.push('\n');
                }
            });
        }
        Self {
            stdin: child.stdin.take(),
            child,
            lines,
            stderr,
            backlog: VecDeque::new(),
            sent: HashMap::new(),
            agent_requests: HashMap::new(),
            next_id: 1,
            transcript: Vec::new(),
            advertised: json!({}),
        }
    }

    /// Starts the demo on a private in-memory store, initialized.
    pub fn in_memory() -> Self {
        Self::initialized(&["--store", ":memory:"])
    }

    /// Starts and initializes.
    pub fn initialized(args: &[&str]) -> Self {
        let mut demo = Self::start(args);
        demo.initialize();
        demo
    }

    pub fn initialize(&mut self) -> Value {
        self.initialize_with(json!({}))
    }

    /// Initializes advertising `capabilities`; from then on every message of the agent is checked
    /// against them (see [`schema::check_capability`]).
    pub fn initialize_with(&mut self, capabilities: Value) -> Value {
        self.advertised = capabilities.clone();
        self.call_ok("initialize", json!({"protocolVersion": 1, "clientCapabilities": capabilities}))
    }

    /// Answers one of the agent's requests with an error object.
    pub fn respond_error(&mut self, id: &Value, error: Value) {
        let message = json!({"jsonrpc": "2.0", "id": id, "error": error});
        self.send_raw(&message.to_string());
    }

    /// The agent's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// What the agent wrote to stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// Writes one raw line (a newline is appended).
    pub fn send_raw(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin is open");
        stdin.write_all(line.as_bytes()).expect("write to the agent");
        stdin.write_all(b"\n").expect("write to the agent");
        stdin.flush().expect("flush to the agent");
    }

    /// Sends a request and returns its id.
    pub fn send_request(&mut self, method: &str, params: Value) -> Value {
        let id = json!(self.next_id);
        self.next_id += 1;
        self.sent.insert(id.to_string(), method.to_owned());
        let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.send_raw(&message.to_string());
        id
    }

    pub fn notify(&mut self, method: &str, params: Value) {
        let message = json!({"jsonrpc": "2.0", "method": method, "params": params});
        self.send_raw(&message.to_string());
    }

    /// Answers one of the agent's requests.
    pub fn respond(&mut self, id: &Value, result: Value) {
        let message = json!({"jsonrpc": "2.0", "id": id, "result": result});
        self.send_raw(&message.to_string());
    }

    /// The next raw stdout line, unvalidated and not kept (for bulk reads); `None` at EOF.
    pub fn next_line_raw(&mut self) -> Option<String> {
        assert!(self.backlog.is_empty(), "raw reads need an empty backlog");
        match self.lines.recv_timeout(STEP) {
            Ok(line) => Some(line),
            Err(RecvTimeoutError::Disconnected) => None,
            Err(RecvTimeoutError::Timeout) => panic!("timed out waiting for the agent; stderr:\n{}", self.stderr()),
        }
    }

    /// Validates one raw line as an agent message and keeps it in the transcript.
    pub fn accept_line(&mut self, line: &str) -> Value {
        let value: Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("the agent wrote a non-JSON line to stdout {line:?}: {e}"));
        schema::validate_agent_message(&value, &self.sent, &mut self.agent_requests);
        schema::check_capability(&value, &self.advertised);
        self.transcript.push(value.clone());
        value
    }

    fn read_one(&mut self) -> Value {
        let line = match self.lines.recv_timeout(STEP) {
            Ok(line) => line,
            Err(RecvTimeoutError::Timeout) => panic!("timed out waiting for the agent; stderr:\n{}", self.stderr()),
            Err(RecvTimeoutError::Disconnected) => {
                panic!("the agent closed its stdout; stderr:\n{}", self.stderr())
            }
        };
        self.accept_line(&line)
    }

    /// The next message, from the backlog first.
    pub fn next(&mut self) -> Value {
        self.backlog.pop_front().unwrap_or_else(|| self.read_one())
    }

    /// Waits for the message matching `pred`, keeping the others in the backlog.
    pub fn wait_for(&mut self, pred: impl Fn(&Value) -> bool) -> Value {
        if let Some(pos) = self.backlog.iter().position(&pred) {
            return self.backlog.remove(pos).unwrap();
        }
        loop {
            let v = self.read_one();
            if pred(&v) {
                return v;
            }
            self.backlog.push_back(v);
        }
    }

    /// Waits for the response to `id`; returns it and everything before it (taken from the
    /// backlog too), in order.
    pub fn response_with_preceding(&mut self, id: &Value) -> (Value, Vec<Value>) {
        let mut before = Vec::new();
        loop {
            let v = self.next();
            if is_response_to(&v, id) {
                return (v, before);
            }
            before.push(v);
        }
    }

    /// Waits for the response to `id`.
    pub fn response(&mut self, id: &Value) -> Value {
        let id = id.clone();
        self.wait_for(move |v| is_response_to(v, &id))
    }

    /// Sends a request and returns its `result`, panicking on an error.
    pub fn call_ok(&mut self, method: &str, params: Value) -> Value {
        let id = self.send_request(method, params);
        let response = self.response(&id);
        match response.get("result") {
            Some(result) => result.clone(),
            None => panic!("`{method}` failed: {response}"),
        }
    }

    /// Sends a request and returns its `error`, panicking on success.
    pub fn call_err(&mut self, method: &str, params: Value) -> Value {
        let id = self.send_request(method, params);
        let response = self.response(&id);
        match response.get("error") {
            Some(error) => error.clone(),
            None => panic!("`{method}` unexpectedly succeeded: {response}"),
        }
    }

    /// `session/new` in `/tmp`; returns the whole result.
    pub fn new_session_result(&mut self) -> Value {
        self.call_ok("session/new", json!({"cwd": "/tmp", "mcpServers": []}))
    }

    /// `session/new` in `/tmp`; returns the session id.
    pub fn new_session(&mut self) -> String {
        self.new_session_result()["sessionId"].as_str().expect("sessionId").to_owned()
    }

    /// Sends `session/prompt` with one text block; returns the request id.
    pub fn prompt(&mut self, session: &str, text: &str) -> Value {
        self.send_request("session/prompt", json!({"sessionId": session, "prompt": [{"type": "text", "text": text}]}))
    }

    /// Prompts and waits for the response; returns it and every message before it.
    pub fn prompt_done(&mut self, session: &str, text: &str) -> (Value, Vec<Value>) {
        let id = self.prompt(session, text);
        self.response_with_preceding(&id)
    }

    /// Waits for the agent's next `session/request_permission`.
    pub fn permission_request(&mut self) -> Value {
        self.wait_for(|m| m.get("method").and_then(Value::as_str) == Some("session/request_permission"))
    }

    /// Kills the agent with SIGKILL and reaps it.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Closes the agent's stdin (EOF) and waits for it to exit; returns whether it exited 0.
    pub fn hang_up(mut self) -> bool {
        drop(self.stdin.take());
        let deadline = std::time::Instant::now() + STEP;
        loop {
            if let Some(status) = self.child.try_wait().expect("wait for the agent") {
                return status.success();
            }
            assert!(std::time::Instant::now() < deadline, "the agent did not exit after EOF");
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Demo {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn read_lines(stdout: BufReader<std::process::ChildStdout>, tx: &SyncSender<String>) {
    for line in stdout.lines() {
        let Ok(line) = line else { break };
        if tx.send(line).is_err() {
            break;
        }
    }
}

pub fn is_response_to(message: &Value, id: &Value) -> bool {
    message.get("id") == Some(id) && message.get("method").is_none()
}

/// The `session/update` notifications among `messages`, as `params.update` objects.
pub fn updates(messages: &[Value]) -> Vec<Value> {
    messages
        .iter()
        .filter(|m| m.get("method").and_then(Value::as_str) == Some("session/update"))
        .map(|m| m["params"]["update"].clone())
        .collect()
}

/// The `sessionUpdate` kinds of the updates among `messages`.
pub fn update_kinds(messages: &[Value]) -> Vec<String> {
    updates(messages).iter().map(|u| u["sessionUpdate"].as_str().unwrap_or_default().to_owned()).collect()
}

/// The texts of the updates of one kind (`agent_message_chunk`, …), in order.
pub fn chunk_texts(messages: &[Value], kind: &str) -> Vec<String> {
    updates(messages)
        .iter()
        .filter(|u| u["sessionUpdate"] == kind)
        .map(|u| u["content"]["text"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// The stop reason of a prompt response.
pub fn stop_reason(response: &Value) -> &str {
    response
        .pointer("/result/stopReason")
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("not a prompt result: {response}"))
}

/// The error code of a response or error object.
pub fn code(error: &Value) -> i64 {
    error
        .get("error")
        .unwrap_or(error)
        .get("code")
        .and_then(Value::as_i64)
        .unwrap_or_else(|| panic!("no error code: {error}"))
}

/// A unique directory under the system temp dir, removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> Self {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos();
        let dir = std::env::temp_dir().join(format!(
            "acp-facade-demo-{tag}-{}-{nanos}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).expect("create temp dir");
        Self(dir)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
