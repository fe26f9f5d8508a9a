//! A runner whose turns call the client through [`Turn::client`], recording every outcome, plus
//! helpers for a test client that answers the agent's `fs/*`, `terminal/*` and `elicitation/*`
//! requests by hand.
//!
//! | prompt | the turn |
//! |---|---|
//! | `read PATH` | `read_text_file(PATH)`; streams the content |
//! | `readlines PATH LINE LIMIT` | `read_text_file(PATH, LINE, LIMIT)` |
//! | `write PATH TEXT…` | `write_text_file(PATH, TEXT)` |
//! | `run CMD ARG…` | `create_terminal`, `wait_for_exit`, `output`, `release`; streams `exit CODE OUTPUT` |
//! | `keep CMD` | `create_terminal`, `wait_for_exit`; returns without releasing (the turn's end does) |
//! | `fail CMD` | `create_terminal`; the turn fails (`Err`) without releasing |
//! | `drop CMD` | `create_terminal`, drops the handle, streams `dropped` |
//! | `wait CMD` | `create_terminal`, `wait_for_exit` (for cancel, close and hang-up tests) |
//! | `shown CMD` | `create_terminal`, a `tool_call` embedding it, text, then `wait_for_exit` and `release` |
//! | `twice CMD` | `create_terminal`, `release`, `release` again, then `output` (released) |
//! | `form` | `elicit_form` (a required string `name`); streams the answer |
//! | `url URL` | `elicit_url(URL)`; on accept `complete_elicitation`; streams the answer |
//!
//! Every call's outcome is recorded in the probe: `Ok(text)` or the error.

#![allow(dead_code, clippy::missing_panics_doc, clippy::must_use_candidate)]

use std::sync::{Arc, Mutex};

use acp_facade::acp::{ElicitationSchema, StopReason, ToolKind};
use acp_facade::client::{ClientError, ElicitationAnswer};
use acp_facade::error::{Error, ErrorExt};
use acp_facade_runner::{MemoryStore, Runner, Turn, TurnRunner};
use async_trait::async_trait;
use serde_json::{Value, json};
use tokio::sync::Notify;

use super::TestClient;

/// What the turns observed.
#[derive(Default)]
pub struct ClientProbe {
    /// Every call's outcome, in order.
    pub outcomes: Mutex<Vec<Result<String, ClientError>>>,
    /// Signalled (one permit) when a turn is about to make its blocking call.
    pub calling: Notify,
}

impl ClientProbe {
    pub fn outcomes(&self) -> Vec<Result<String, ClientError>> {
        self.outcomes.lock().unwrap().clone()
    }

    /// The last outcome recorded.
    pub fn last(&self) -> Result<String, ClientError> {
        self.outcomes().last().cloned().expect("an outcome was recorded")
    }

    fn record<T: std::fmt::Debug>(&self, outcome: &Result<T, ClientError>) {
        self.outcomes.lock().unwrap().push(match outcome {
            Ok(value) => Ok(format!("{value:?}")),
            Err(e) => Err(e.clone()),
        });
    }
}

/// The turn runner of the module doc.
pub struct ClientTurns {
    pub probe: Arc<ClientProbe>,
}

#[async_trait]
impl TurnRunner for ClientTurns {
    async fn run_turn(&self, turn: &Turn) -> Result<StopReason, Error> {
        let text = turn.prompt_text();
        let words: Vec<&str> = text.split(' ').collect();
        let client = turn.client();
        let probe = &self.probe;
        match words.as_slice() {
            ["read", path] => {
                let read = client.read_text_file(path, None, None).await;
                probe.record(&read);
                turn.text(read?).await;
            }
            ["readlines", path, line, limit] => {
                let read = client.read_text_file(path, line.parse().ok(), limit.parse().ok()).await;
                probe.record(&read);
                turn.text(read?).await;
            }
            ["write", path, rest @ ..] => {
                let written = client.write_text_file(path, rest.join(" ")).await;
                probe.record(&written);
                written?;
                turn.text("written").await;
            }
            ["run", command, args @ ..] => {
                let args = args.iter().map(|a| (*a).to_owned()).collect();
                let terminal = client.create_terminal(*command, args, Vec::new(), None, None).await;
                probe.record(&terminal.as_ref().map(|t| t.id().to_string()).map_err(Clone::clone));
                let terminal = terminal?;
                probe.calling.notify_one();
                let status = terminal.wait_for_exit().await;
                probe.record(&status);
                let output = terminal.output().await;
                probe.record(&output);
                let released = terminal.release().await;
                probe.record(&released);
                turn.text(format!("exit {:?} {}", status?.exit_code, output?.output)).await;
            }
            ["keep", command] => {
                let terminal = client.create_terminal(*command, Vec::new(), Vec::new(), None, None).await?;
                probe.record(&terminal.wait_for_exit().await);
                // Kept past the turn's end: the runner releases it when the turn ends.
                std::mem::forget(terminal);
            }
            ["fail", command] => {
                let terminal = client.create_terminal(*command, Vec::new(), Vec::new(), None, None).await?;
                std::mem::forget(terminal);
                return Err(Error::internal_msg("the turn failed with a terminal open"));
            }
            ["drop", command] => {
                let terminal = client.create_terminal(*command, Vec::new(), Vec::new(), None, None).await?;
                drop(terminal);
                turn.text("dropped").await;
            }
            ["wait", command] => {
                let terminal = client.create_terminal(*command, Vec::new(), Vec::new(), None, None).await?;
                probe.calling.notify_one();
                let status = terminal.wait_for_exit().await;
                probe.record(&status);
                if turn.is_cancelled() {
                    return Ok(StopReason::Cancelled);
                }
                status?;
            }
            ["shown", command] => {
                let terminal = client.create_terminal(*command, Vec::new(), Vec::new(), None, None).await?;
                turn.tool_call(*command).kind(ToolKind::Execute).content(terminal.content()).start().await;
                turn.text("running").await;
                probe.record(&terminal.wait_for_exit().await);
                probe.record(&terminal.release().await);
            }
            ["twice", command] => {
                let terminal = client.create_terminal(*command, Vec::new(), Vec::new(), None, None).await?;
                probe.record(&terminal.release().await);
                probe.record(&terminal.release().await);
                probe.record(&terminal.output().await);
            }
            ["form"] => {
                let schema = ElicitationSchema::new().string("name", true);
                let answer = client.elicit_form("Your name?", schema).await;
                probe.record(&answer);
                turn.text(format!("{:?}", answer?)).await;
            }
            ["url", url] => {
                let opened = client.elicit_url("Sign in", *url).await;
                probe.record(&opened);
                let opened = opened?;
                if matches!(opened.answer, ElicitationAnswer::Accept(_)) {
                    let completed = client.complete_elicitation(&opened.elicitation_id).await;
                    probe.record(&completed);
                }
                turn.text(format!("{:?}", opened.answer)).await;
            }
            _ => turn.text(text.clone()).await,
        }
        Ok(StopReason::EndTurn)
    }
}

/// A runner over an in-memory store running [`ClientTurns`].
pub fn client_runner() -> (Runner, Arc<ClientProbe>) {
    let probe = Arc::new(ClientProbe::default());
    let runner = Runner::new(Arc::new(MemoryStore::new()), Arc::new(ClientTurns { probe: probe.clone() }));
    (runner, probe)
}

/// Every client capability (v1.21.0).
pub fn all_capabilities() -> Value {
    json!({
        "fs": {"readTextFile": true, "writeTextFile": true},
        "terminal": true,
        "elicitation": {"form": {}, "url": {}},
    })
}

/// A client of `runner`'s agent, initialized advertising `capabilities`, with a session.
pub async fn client_with(runner: &Runner, capabilities: Value) -> (TestClient, String) {
    let mut client = TestClient::start_agent(runner.agent(runner.options()));
    client.initialize_with(capabilities).await;
    let session = client.new_session().await;
    (client, session)
}

/// Whether `message` is a request of the agent with this method.
pub fn is_request(message: &Value, method: &str) -> bool {
    message.get("id").is_some() && message.get("method").and_then(Value::as_str) == Some(method)
}

/// Whether `message` is a notification with this method.
pub fn is_notification(message: &Value, method: &str) -> bool {
    message.get("id").is_none() && message.get("method").and_then(Value::as_str) == Some(method)
}

/// The agent's next request with this method.
pub async fn next_request(client: &mut TestClient, method: &str) -> Value {
    let method = method.to_owned();
    client.wait_for(move |m| is_request(m, &method)).await
}

/// The methods of every request and notification of the agent among `messages` (responses and
/// `session/update`s left out), in order.
pub fn calls(messages: &[Value]) -> Vec<String> {
    messages
        .iter()
        .filter_map(|m| m.get("method").and_then(Value::as_str))
        .filter(|m| *m != "session/update")
        .map(str::to_owned)
        .collect()
}
