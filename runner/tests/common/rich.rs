//! Test doubles for rich turns: a [`TurnRunner`] whose turns use the rich turn API (plans, typed
//! prompt blocks, slash commands, mode and option changes, response `_meta`, usage cost, MCP
//! servers), and a scripted host whose sessions record what `submit_prompt` received and keep
//! the [`SessionControl`] the facade handed them.

#![allow(dead_code, clippy::missing_panics_doc, clippy::must_use_candidate)]

use std::sync::{Arc, Mutex};

use acp_facade::acp::{
    AvailableCommand, ContentBlock, Cost, McpServer, Meta, Plan, PlanEntry, PlanEntryPriority, PlanEntryStatus,
    SessionConfigOption, SessionConfigOptionCategory, SessionConfigSelectOption, SessionId, StopReason,
    UnstructuredCommandInput,
};
use acp_facade::error::Error;
use acp_facade::harness::{CommandId, GateId, GateResponse, Prompt, SlashCommand};
use acp_facade::host::{EventStream, HostResult, LiveSession, SessionControl, SessionHost, Setup};
use acp_facade_runner::{MemoryStore, Runner, Turn, TurnRunner};
use async_trait::async_trait;
use serde_json::{Value, json};

use super::TestClient;
use super::host::ScriptedSession;

/// What one turn of [`RichTurns`] saw.
#[derive(Debug, Clone)]
pub struct Seen {
    pub blocks: Vec<ContentBlock>,
    pub command: Option<SlashCommand>,
    pub meta: Option<Meta>,
    pub mcp_servers: Vec<McpServer>,
}

/// The `shout` command: `/shout TEXT`.
pub fn shout() -> AvailableCommand {
    AvailableCommand::new("shout", "Repeat the input in capitals")
        .input(acp_facade::acp::AvailableCommandInput::Unstructured(UnstructuredCommandInput::new("text")))
}

/// A plan of `n` entries, the first `done` completed, the rest pending.
pub fn plan(n: usize, done: usize) -> Plan {
    Plan::new(
        (1..=n)
            .map(|i| {
                let status = if i <= done { PlanEntryStatus::Completed } else { PlanEntryStatus::Pending };
                PlanEntry::new(format!("step {i}"), PlanEntryPriority::Medium, status)
            })
            .collect(),
    )
}

/// A [`TurnRunner`] of rich turns. The prompt's first word picks the turn:
///
/// | prompt | the turn |
/// |---|---|
/// | `plan N` | a plan of N pending entries, then one plan per step completing it; text `planned` |
/// | `switch MODE` | text `before`, `set_mode(MODE)` (its error code as text on failure), text `after` |
/// | `model V` | `set_config_option("model", V)` |
/// | `commands A …` | `set_commands` to commands named A, … ; text `set` |
/// | `meta` | the response's `_meta` is `{"echo": <the request's _meta>}` |
/// | `cost` | `usage_with_cost(10, 100, 0.25 USD)` |
/// | `/shout TEXT` | (a command) text TEXT in capitals |
/// | anything else | text `ok` |
///
/// Every turn records what it saw ([`Seen`]). Sessions start with the `shout` command and the
/// options `mode` (`ask`, `code`) and `model` (`fast`, `smart`).
#[derive(Default)]
pub struct RichTurns {
    pub seen: Mutex<Vec<Seen>>,
    /// Offer `/compact` (which always succeeds), and a host command named `compact` too.
    pub compaction: bool,
}

impl RichTurns {
    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

#[async_trait]
impl TurnRunner for RichTurns {
    async fn run_turn(&self, turn: &Turn) -> Result<StopReason, Error> {
        self.seen.lock().unwrap().push(Seen {
            blocks: turn.prompt().to_vec(),
            command: turn.command().cloned(),
            meta: turn.meta().cloned(),
            mcp_servers: turn.mcp_servers().to_vec(),
        });
        if let Some(command) = turn.command() {
            turn.text(command.input.to_uppercase()).await;
            return Ok(StopReason::EndTurn);
        }
        let text = turn.prompt_text();
        let (verb, rest) = text.split_once(' ').unwrap_or((text.as_str(), ""));
        match verb {
            "plan" => {
                let n: usize = rest.parse().unwrap_or(0);
                for done in 0..=n {
                    turn.plan(plan(n, done)).await;
                }
                turn.text("planned").await;
            }
            "switch" => {
                turn.text("before").await;
                if let Err(e) = turn.set_mode(rest).await {
                    turn.text(format!("error {}", i32::from(e.code))).await;
                }
                turn.text("after").await;
            }
            "model" => {
                turn.set_config_option("model", rest).await?;
            }
            "commands" => {
                let commands = rest.split(' ').map(|name| AvailableCommand::new(name, format!("The {name}"))).collect();
                turn.set_commands(commands).await?;
                turn.text("set").await;
            }
            "meta" => {
                let echo: Meta = [("echo".to_owned(), turn.meta().cloned().map_or(Value::Null, Value::Object))]
                    .into_iter()
                    .collect();
                turn.set_response_meta(echo).await;
            }
            "cost" => turn.usage_with_cost(10, 100, Cost::new(0.25, "USD")).await,
            _ => turn.text("ok").await,
        }
        Ok(StopReason::EndTurn)
    }

    fn config_options(&self) -> Vec<SessionConfigOption> {
        vec![
            SessionConfigOption::select(
                "mode",
                "Mode",
                "ask",
                vec![SessionConfigSelectOption::new("ask", "Ask"), SessionConfigSelectOption::new("code", "Code")],
            )
            .category(SessionConfigOptionCategory::Mode),
            SessionConfigOption::select(
                "model",
                "Model",
                "fast",
                vec![SessionConfigSelectOption::new("fast", "Fast"), SessionConfigSelectOption::new("smart", "Smart")],
            )
            .category(SessionConfigOptionCategory::Model),
        ]
    }

    fn commands(&self) -> Vec<AvailableCommand> {
        if self.compaction { vec![AvailableCommand::new("compact", "The host's own"), shout()] } else { vec![shout()] }
    }

    fn supports_compaction(&self) -> bool {
        self.compaction
    }

    async fn compact(&self, _session: &acp_facade_runner::RunnerSession) -> Result<Option<String>, Error> {
        Ok(Some("the summary".to_owned()))
    }

    fn title(&self, first_prompt: &str) -> Option<String> {
        Some(first_prompt.chars().take(10).collect())
    }
}

/// A runner of [`RichTurns`] over a memory store.
pub fn rich_runner() -> (Runner, Arc<RichTurns>) {
    with_turns(RichTurns::default())
}

/// A runner of `turns` over a memory store.
pub fn with_turns(turns: RichTurns) -> (Runner, Arc<RichTurns>) {
    let turns = Arc::new(turns);
    (Runner::new(Arc::new(MemoryStore::new()), turns.clone()), turns)
}

/// An initialized client on `runner`'s agent, with `adjust` applied to the runner's options.
pub async fn rich_client(
    runner: &Runner,
    adjust: impl FnOnce(acp_facade::Options) -> acp_facade::Options,
) -> TestClient {
    let mut client = TestClient::start_agent(runner.agent(adjust(runner.options())));
    client.initialize().await;
    client
}

/// A prompt of `blocks` with `_meta` (when given); returns the request id.
pub async fn prompt_blocks(client: &mut TestClient, session: &str, blocks: Value, meta: Option<Value>) -> Value {
    let mut params = json!({"sessionId": session, "prompt": blocks});
    if let Some(meta) = meta {
        params["_meta"] = meta;
    }
    client.send_request("session/prompt", params).await
}

/// A [`ScriptedSession`] that records every [`Prompt`] it was submitted, offers `commands`, and
/// keeps its [`SessionControl`].
pub struct ControlledSession {
    pub inner: Arc<ScriptedSession>,
    pub prompts: Mutex<Vec<Prompt>>,
    pub commands: Vec<AvailableCommand>,
    pub control: Mutex<Option<Arc<dyn SessionControl>>>,
    pub set_controls: std::sync::atomic::AtomicUsize,
}

impl ControlledSession {
    pub fn control(&self) -> Arc<dyn SessionControl> {
        self.control.lock().unwrap().clone().expect("the facade handed the session its control")
    }

    pub fn prompts(&self) -> Vec<Prompt> {
        self.prompts.lock().unwrap().clone()
    }
}

#[async_trait]
impl LiveSession for ControlledSession {
    fn id(&self) -> SessionId {
        self.inner.id()
    }

    fn subscribe_events(&self) -> HostResult<EventStream> {
        self.inner.subscribe_events()
    }

    async fn submit(&self, prompt: Vec<ContentBlock>) -> HostResult<CommandId> {
        self.inner.submit(prompt).await
    }

    async fn submit_prompt(&self, prompt: Prompt) -> HostResult<CommandId> {
        self.prompts.lock().unwrap().push(prompt.clone());
        self.inner.submit(prompt.content).await
    }

    async fn interrupt(&self) -> HostResult<()> {
        self.inner.interrupt().await
    }

    async fn respond_gate(&self, gate_id: GateId, response: GateResponse) -> HostResult<()> {
        self.inner.respond_gate(gate_id, response).await
    }

    fn commands(&self) -> Vec<AvailableCommand> {
        self.commands.clone()
    }

    fn set_control(&self, control: Arc<dyn SessionControl>) {
        self.set_controls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        *self.control.lock().unwrap() = Some(control);
    }
}

/// Creates [`ControlledSession`]s named `c1`, `c2`, … offering `commands`; records every setup.
#[derive(Default)]
pub struct ControlledHost {
    pub commands: Vec<AvailableCommand>,
    pub sessions: Mutex<Vec<Arc<ControlledSession>>>,
    pub setups: Mutex<Vec<Setup>>,
}

impl ControlledHost {
    pub fn new(commands: Vec<AvailableCommand>) -> Arc<Self> {
        Arc::new(Self { commands, ..Self::default() })
    }

    pub fn session(&self, n: usize) -> Arc<ControlledSession> {
        self.sessions.lock().unwrap()[n].clone()
    }
}

#[async_trait]
impl SessionHost for ControlledHost {
    async fn new_session(&self, setup: Setup) -> HostResult<Arc<dyn LiveSession>> {
        let n = self.sessions.lock().unwrap().len() + 1;
        let session = Arc::new(ControlledSession {
            inner: ScriptedSession::new(&format!("c{n}")),
            prompts: Mutex::default(),
            commands: self.commands.clone(),
            control: Mutex::default(),
            set_controls: std::sync::atomic::AtomicUsize::new(0),
        });
        self.sessions.lock().unwrap().push(session.clone());
        self.setups.lock().unwrap().push(setup);
        Ok(session)
    }
}
