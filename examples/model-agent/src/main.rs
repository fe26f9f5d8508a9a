//! `acp-facade-model-agent`: a model-backed ACP agent over stdio — any OpenAI-compatible Chat
//! Completions server (hosted, vLLM, llama.cpp, Ollama) behind the acp-facade turn runner, with
//! durable, resumable sessions in one `SQLite` file.
//!
//! Each turn sends the model the system prompt (the agent's, with the client's applied), the
//! session's conversation so far ([`Turn::history`]: from the journal, so it survives a restart)
//! and the prompt; streams the answer to the editor; runs the tools the model calls through the
//! editor (`tools`) and sends their results back, until the model answers without a tool call (at
//! most [`MAX_STEPS`] model calls). Cancelling the turn drops the HTTP request. A model or HTTP
//! error fails the prompt: the JSON-RPC error carries its message (`model`).
//!
//! Environment: `OPENAI_MODEL` (required: each prompt fails, saying so, while it is missing),
//! `OPENAI_BASE_URL` (default `https://api.openai.com/v1`), `OPENAI_API_KEY` (optional for local
//! servers), `MODEL_AGENT_STORE` (the `SQLite` file; default
//! `$XDG_DATA_HOME/acp-facade/model-agent.sqlite`), `ACP_FACADE_LOG` (log directives, to stderr).
//! Guide: docs/calling-a-real-model-rust.md.

mod model;
mod tools;

use std::path::PathBuf;
use std::sync::Arc;

use acp_facade::acp::StopReason;
use acp_facade::error::ErrorExt;
use acp_facade_runner::{HistoryEntry, Runner, SqliteStore, Turn, TurnRunner};
use serde_json::{Value, json};

use crate::model::Model;

/// The most model calls one turn makes: then it stops with `max_turn_requests`.
const MAX_STEPS: usize = 10;

/// How many entries of the session's conversation each model call sees.
const HISTORY: usize = 100;

struct ModelAgent {
    model: Model,
    tools: Value,
}

#[async_trait::async_trait]
impl TurnRunner for ModelAgent {
    async fn run_turn(&self, turn: &Turn) -> Result<StopReason, acp_facade::Error> {
        if self.model.name.is_empty() {
            let missing = "OPENAI_MODEL is not set: start the agent with the model's name in OPENAI_MODEL";
            return Err(acp_facade::Error::internal_msg(missing));
        }
        let own = format!(
            "You are a coding agent. The user's project is in {}. Use the tools to read, change and run things there.",
            turn.cwd().display()
        );
        let mut messages = vec![json!({"role": "system", "content": turn.compose_system_prompt(&own)})];
        messages.extend(turn.history(HISTORY).await?.iter().flat_map(history_messages));
        messages.push(json!({"role": "user", "content": turn.prompt_text()}));
        for _ in 0..MAX_STEPS {
            // Cancellation drops the model call, and with it the HTTP response: the stream closes.
            let reply = tokio::select! {
                () = turn.cancelled() => return Ok(StopReason::Cancelled),
                reply = self.model.stream(turn, &messages, &self.tools) => reply.map_err(acp_facade::Error::internal_msg)?,
            };
            if reply.calls.is_empty() {
                return Ok(StopReason::EndTurn);
            }
            messages.push(reply.message());
            for call in &reply.calls {
                let Some(result) = tools::run(turn, &call.name, &call.arguments).await else {
                    return Ok(StopReason::Cancelled);
                };
                messages.push(json!({"role": "tool", "tool_call_id": call.id, "content": result}));
            }
            turn.end_step().await;
        }
        turn.text(format!("\n\n(Stopped: {MAX_STEPS} model calls in one turn.)")).await;
        Ok(StopReason::MaxTurnRequests)
    }

    fn accepts_system_prompt(&self) -> bool {
        true
    }
}

/// One entry of the session's conversation as Chat Completions messages. Thoughts stay out:
/// models do not take their reasoning back.
fn history_messages(entry: &HistoryEntry) -> Vec<Value> {
    match entry {
        HistoryEntry::User { text, .. } => vec![json!({"role": "user", "content": text})],
        HistoryEntry::Assistant { text, .. } => vec![json!({"role": "assistant", "content": text})],
        HistoryEntry::Summary { text, .. } => {
            vec![json!({"role": "user", "content": format!("Summary of the conversation so far:\n{text}")})]
        }
        HistoryEntry::ToolCall(call) if call.name.is_some() => {
            let arguments = call.input.clone().unwrap_or_else(|| json!({})).to_string();
            let result = call.text();
            vec![
                json!({"role": "assistant", "content": null, "tool_calls": [
                    {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": arguments}}
                ]}),
                json!({"role": "tool", "tool_call_id": call.id,
                    "content": if result.is_empty() { "(no output)".to_owned() } else { result }}),
            ]
        }
        _ => Vec::new(),
    }
}

/// `MODEL_AGENT_STORE`, else `$XDG_DATA_HOME/acp-facade/model-agent.sqlite` (or under
/// `~/.local/share`).
fn store_path() -> Result<PathBuf, String> {
    if let Some(path) = std::env::var_os("MODEL_AGENT_STORE").filter(|p| !p.is_empty()) {
        return Ok(PathBuf::from(path));
    }
    let data = std::env::var_os("XDG_DATA_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".local/share")))
        .ok_or("cannot find a data directory: set MODEL_AGENT_STORE, XDG_DATA_HOME or HOME")?;
    std::fs::create_dir_all(data.join("acp-facade")).map_err(|e| e.to_string())?;
    Ok(data.join("acp-facade").join("model-agent.sqlite"))
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::process::ExitCode {
    {
        use tracing_subscriber::Layer as _;
        use tracing_subscriber::layer::SubscriberExt as _;
        use tracing_subscriber::util::SubscriberInitExt as _;
        // Logs go to stderr: stdout is the protocol.
        let filter = std::env::var("ACP_FACADE_LOG")
            .ok()
            .and_then(|directives| directives.parse::<tracing_subscriber::filter::Targets>().ok())
            .unwrap_or_else(|| tracing_subscriber::filter::Targets::new().with_default(tracing::Level::WARN));
        let stderr = tracing_subscriber::fmt::layer().with_writer(std::io::stderr).with_filter(filter);
        tracing_subscriber::registry().with(stderr).init();
    }
    let model = match Model::from_env() {
        Ok(model) => model,
        Err(e) => {
            tracing::error!(error = %e, "cannot reach models");
            return std::process::ExitCode::FAILURE;
        }
    };
    if model.name.is_empty() {
        tracing::warn!("OPENAI_MODEL is not set: every prompt will fail until it is");
    }
    let store = match store_path().and_then(|path| SqliteStore::open(&path).map_err(|e| e.to_string())) {
        Ok(store) => store,
        Err(e) => {
            tracing::error!(error = %e, "cannot open the session store");
            return std::process::ExitCode::FAILURE;
        }
    };
    let runner = Runner::new(Arc::new(store), Arc::new(ModelAgent { model, tools: tools::declarations() }));
    let agent = runner.agent(runner.options().agent_info("acp-facade-model-agent", env!("CARGO_PKG_VERSION")));
    match agent.serve_stdio().await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!(error = %e, "serving failed");
            std::process::ExitCode::FAILURE
        }
    }
}
