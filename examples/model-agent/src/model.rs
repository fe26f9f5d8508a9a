//! The model: one streamed call of the Chat Completions API, which OpenAI-compatible servers —
//! hosted services, vLLM, llama.cpp, Ollama — all speak. The request carries `stream: true`; the answer is
//! server-sent events, one `data:` line per chunk and `data: [DONE]` at the end. Each chunk's
//! `delta.content` streams to the editor as message text, `delta.reasoning_content` (servers of
//! reasoning models) as a thought, and `delta.tool_calls` fragments (an `index`, then its `id`,
//! `function.name` and `arguments` in pieces) are put together into whole tool calls.
//!
//! Failures are one line for the user: the server's error message for a non-2xx answer, the
//! offending line for a malformed stream, the cause for a server that cannot be reached.

use std::collections::BTreeMap;

use acp_facade_runner::Turn;
use serde_json::{Value, json};

/// Where the model is, from the environment: `OPENAI_BASE_URL`, `OPENAI_API_KEY`, `OPENAI_MODEL`.
pub struct Model {
    http: reqwest::Client,
    url: String,
    api_key: Option<String>,
    /// The model's name (`OPENAI_MODEL`); empty when not set.
    pub name: String,
}

/// One tool call the model asked for, put together from its streamed fragments.
#[derive(Default, Debug)]
pub struct ToolCall {
    /// The model's id for the call, which its result must quote.
    pub id: String,
    /// The function's name.
    pub name: String,
    /// The function's arguments: a JSON object, as text.
    pub arguments: String,
}

/// What one model call answered: its text and its tool calls.
#[derive(Default, Debug)]
pub struct Reply {
    /// The answer's text, as streamed.
    pub text: String,
    /// The tool calls, in the order of their stream index.
    pub calls: Vec<ToolCall>,
}

impl Reply {
    /// The answer as an assistant message, for the next call's context.
    pub fn message(&self) -> Value {
        let calls: Vec<Value> = self
            .calls
            .iter()
            .map(|c| json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}))
            .collect();
        let text = if self.text.is_empty() { Value::Null } else { Value::from(self.text.as_str()) };
        json!({"role": "assistant", "content": text, "tool_calls": calls})
    }
}

impl Model {
    /// The model the environment names; fails only when the HTTP client cannot be built (its
    /// TLS roots).
    pub fn from_env() -> Result<Self, String> {
        let base = std::env::var("OPENAI_BASE_URL").unwrap_or_default();
        let base = if base.is_empty() { "https://api.openai.com/v1" } else { base.trim_end_matches('/') };
        // A server that does not answer fails the prompt in seconds; a slow answer is waited for.
        let http = reqwest::Client::builder().connect_timeout(std::time::Duration::from_secs(10)).build();
        Ok(Self {
            http: http.map_err(|e| format!("cannot set up the HTTP client: {}", causes(&e)))?,
            url: format!("{base}/chat/completions"),
            api_key: std::env::var("OPENAI_API_KEY").ok().filter(|k| !k.is_empty()),
            name: std::env::var("OPENAI_MODEL").unwrap_or_default(),
        })
    }

    /// One model call with `messages` and `tools`, streamed to the editor through `turn`.
    /// Dropping the future (the turn was cancelled) drops the response: the connection closes.
    pub async fn stream(&self, turn: &Turn, messages: &[Value], tools: &Value) -> Result<Reply, String> {
        let body = json!({"model": self.name, "messages": messages, "tools": tools, "stream": true});
        let mut request = self.http.post(&self.url).json(&body);
        if let Some(key) = &self.api_key {
            request = request.bearer_auth(key);
        }
        let unreachable =
            |e: reqwest::Error| format!("cannot talk to the model server at {}: {}", self.url, causes(&e));
        let mut response = request.send().await.map_err(unreachable)?;
        let status = response.status();
        if !status.is_success() {
            let body = response.text().await.unwrap_or_default();
            return Err(format!("the model server answered {}: {}", status.as_u16(), error_text(&body, status)));
        }
        let mut reply = Reply::default();
        let mut calls = BTreeMap::<u64, ToolCall>::new();
        let mut pending = Vec::new();
        while let Some(bytes) = response.chunk().await.map_err(unreachable)? {
            pending.extend_from_slice(&bytes);
            while let Some(end) = pending.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = pending.drain(..=end).collect();
                if read_line(turn, String::from_utf8_lossy(&line).trim(), &mut reply, &mut calls).await? {
                    reply.calls = calls.into_values().collect();
                    return Ok(reply);
                }
            }
        }
        reply.calls = calls.into_values().collect();
        Ok(reply)
    }
}

/// Handles one SSE line; `true` at `data: [DONE]`.
async fn read_line(
    turn: &Turn,
    line: &str,
    reply: &mut Reply,
    calls: &mut BTreeMap<u64, ToolCall>,
) -> Result<bool, String> {
    // Blank lines, SSE comments and `event:` lines carry nothing.
    let Some(data) = line.strip_prefix("data:").map(str::trim) else { return Ok(false) };
    if data == "[DONE]" {
        return Ok(true);
    }
    let chunk: Value = serde_json::from_str(data).map_err(|_| {
        format!("the model server sent a malformed stream line: {}", data.chars().take(200).collect::<String>())
    })?;
    // A failure after the stream started.
    if !chunk["error"].is_null() {
        let error = &chunk["error"];
        let message = error["message"].as_str().map_or_else(|| error.to_string(), str::to_owned);
        return Err(format!("the model server failed mid-stream: {message}"));
    }
    for choice in chunk["choices"].as_array().into_iter().flatten() {
        let delta = &choice["delta"];
        if let Some(thought) = delta["reasoning_content"].as_str().filter(|t| !t.is_empty()) {
            turn.thought(thought).await;
        }
        if let Some(text) = delta["content"].as_str().filter(|t| !t.is_empty()) {
            reply.text.push_str(text);
            turn.text(text).await;
        }
        for part in delta["tool_calls"].as_array().into_iter().flatten() {
            let call = calls.entry(part["index"].as_u64().unwrap_or(0)).or_default();
            if let Some(id) = part["id"].as_str() {
                id.clone_into(&mut call.id);
            }
            call.name.push_str(part["function"]["name"].as_str().unwrap_or_default());
            call.arguments.push_str(part["function"]["arguments"].as_str().unwrap_or_default());
        }
    }
    Ok(false)
}

/// The message of an OpenAI-style error body (`{"error": {"message": …}}`), else the body.
fn error_text(body: &str, status: reqwest::StatusCode) -> String {
    match serde_json::from_str::<Value>(body) {
        Ok(error) if error["error"]["message"].is_string() => {
            error["error"]["message"].as_str().unwrap_or_default().to_owned()
        }
        _ if body.is_empty() => status.canonical_reason().unwrap_or("no message").to_owned(),
        _ => body.chars().take(500).collect(),
    }
}

/// An error and its causes, joined: reqwest's own message alone does not say "connection refused".
fn causes(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
