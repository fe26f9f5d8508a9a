//! The turn API: what a product's `run_turn` uses to stream, call tools, ask for permission and
//! report usage. Each call becomes a harness event with the right class, visibility and turn
//! coordinates, so the facade (live streaming, replay, list) needs no further product code.
//!
//! Steps: text, thoughts, tool calls and tool results accumulate into the current step, which
//! [`Turn::usage`] closes (a `StepDone` then a `ContextMeasured`, both Enduring); whatever is left
//! when the turn returns is closed the same way, without a measurement.

pub(crate) mod control;
pub mod gates;
pub mod session_updates;
pub mod tool_calls;
pub(crate) mod tool_fields;
pub(crate) mod tool_state;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::Value;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use crate::history::{HistoryEntry, HistoryPage, HistoryPosition};
use crate::session::session_core::SessionCore;
use crate::turn::tool_state::ToolCalls;
use acp_facade::acp::{ContentBlock, Cost, McpServer, Meta, Plan, SessionId, SystemPrompt, SystemPromptMode};
use acp_facade::client::{Capabilities, Client};
use acp_facade::error::Error;
use acp_facade::harness::content::{plain_text, text_block};
use acp_facade::harness::{
    AiMessage, ApprovalAction, CommandId, EventClass, EventKind, Gate, GateId, GateKind, GateResolver, GateResponse,
    LoopId, Message, Prompt, SlashCommand, TokenChannel, ToolCallId, ToolCallRequest, ToolResultMessage, TurnId,
    Visibility,
};

/// How a permission request was answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Permission {
    /// Allowed for this call.
    Allowed,
    /// Allowed, and the user asked not to be asked again in this workspace.
    AllowedAlways,
    /// Denied.
    Denied,
    /// The turn was cancelled while waiting.
    Cancelled,
}

impl Permission {
    /// Whether the tool may run.
    pub fn is_allowed(self) -> bool {
        matches!(self, Self::Allowed | Self::AllowedAlways)
    }

    /// Its name in the bindings: `allowed`, `allowed_always`, `denied` or `cancelled`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Allowed => "allowed",
            Self::AllowedAlways => "allowed_always",
            Self::Denied => "denied",
            Self::Cancelled => "cancelled",
        }
    }
}

#[derive(Default)]
pub(crate) struct Step {
    text: String,
    thoughts: String,
    pub(crate) tool_calls: Vec<ToolCallRequest>,
    pub(crate) results: Vec<ToolResultMessage>,
}

impl Step {
    fn is_empty(&self) -> bool {
        self.text.is_empty() && self.thoughts.is_empty() && self.tool_calls.is_empty() && self.results.is_empty()
    }

    fn into_messages(self) -> Vec<Message> {
        // One block each, allocated for one: a first `push` would make room for four (a content
        // block is large, and four of them are more than the allocator's small-size caches hold).
        let mut ai = AiMessage::default();
        if !self.text.is_empty() {
            ai.content = vec![text_block(self.text)];
        }
        if !self.thoughts.is_empty() {
            ai.thoughts = vec![text_block(self.thoughts)];
        }
        ai.tool_calls = self.tool_calls;
        let mut messages = vec![Message::Ai(ai)];
        messages.extend(self.results.into_iter().map(Message::ToolResult));
        messages
    }
}

/// One running turn, handed to [`TurnRunner::run_turn`](crate::TurnRunner::run_turn).
///
/// Everything a turn reports goes to the client as it happens: text and thoughts stream as
/// `agent_message_chunk` / `agent_thought_chunk`, tool calls as `tool_call` and
/// `tool_call_update`, a permission question as `session/request_permission`. Awaiting a call
/// waits only when the client reads slower than the turn writes. The turn sees its cancellation
/// (`session/cancel`, `$/cancel_request`, close) through [`Turn::cancelled`] and
/// [`Turn::is_cancelled`].
///
/// ```no_run
/// use acp_facade::acp::{StopReason, ToolKind};
/// use acp_facade::harness::ApprovalAction;
/// use acp_facade::harness::content::text_block;
/// use acp_facade_runner::{Permission, Turn};
///
/// async fn run_turn(turn: &Turn) -> Result<StopReason, acp_facade::Error> {
///     turn.thought("The user wants the tests run.").await;
///     let call = turn.start_tool_call("cargo test", ToolKind::Execute, serde_json::json!({ "cmd": "cargo test" })).await;
///     let choices = [ApprovalAction::Approve, ApprovalAction::ApproveAlways, ApprovalAction::Deny];
///     match turn.request_permission(&call, "Run the tests?", &choices).await {
///         Permission::Cancelled => return Ok(StopReason::Cancelled),
///         answer if answer.is_allowed() => {
///             let output = tokio::select! {
///                 () = turn.cancelled() => return Ok(StopReason::Cancelled),
///                 output = run_the_tests() => output,
///             };
///             turn.complete_tool_call(&call, vec![text_block(output)]).await;
///             turn.text("The tests pass.").await;
///         }
///         _ => turn.fail_tool_call(&call, vec![text_block("denied")]).await,
///     }
///     turn.usage(1_200, 200_000).await; // context usage: `usage_update`
///     Ok(StopReason::EndTurn)
/// }
/// # async fn run_the_tests() -> String { String::new() }
/// ```
#[allow(clippy::struct_field_names, reason = "`turn_id` names the harness id, as on events")]
pub struct Turn {
    pub(crate) session: Arc<SessionCore>,
    pub(crate) command: CommandId,
    pub(crate) loop_id: LoopId,
    pub(crate) turn_id: TurnId,
    prompt: Prompt,
    cancel: CancellationToken,
    client: Client,
    step: Mutex<Step>,
    /// The turn's tool calls as they stand.
    pub(crate) tools: Mutex<ToolCalls>,
    /// The session's system prompt as the turn started.
    system_prompt: Option<SystemPrompt>,
    next_call: AtomicU64,
}

impl std::fmt::Debug for Turn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Turn").field("session", &self.session.id).field("turn", &self.turn_id).finish_non_exhaustive()
    }
}

impl Turn {
    pub(crate) fn new(
        session: Arc<SessionCore>,
        command: CommandId,
        turn_id: TurnId,
        prompt: Prompt,
        cancel: CancellationToken,
        client: Client,
    ) -> Self {
        let system_prompt = session.system_prompt();
        Self {
            system_prompt,
            session,
            command,
            loop_id: LoopId::new("main"),
            turn_id,
            prompt,
            cancel,
            client,
            step: Mutex::default(),
            tools: Mutex::default(),
            next_call: AtomicU64::new(0),
        }
    }

    /// The session this turn runs in.
    pub fn session_id(&self) -> SessionId {
        self.session.id.clone()
    }

    /// The session's working directory.
    pub fn cwd(&self) -> &std::path::Path {
        self.session.cwd()
    }

    /// The prompt's content blocks, typed, as the client sent them: text and resource links
    /// always; images, audio and embedded resources when the agent advertises them
    /// ([`Options::prompt_capabilities`](acp_facade::Options), checked before the turn starts).
    ///
    /// ```
    /// # use acp_facade::acp::ContentBlock;
    /// # fn describe(turn: &acp_facade_runner::Turn) -> Vec<String> {
    /// turn.prompt()
    ///     .iter()
    ///     .map(|block| match block {
    ///         ContentBlock::Text(text) => format!("text {}", text.text),
    ///         ContentBlock::Image(image) => format!("image {}", image.mime_type),
    ///         ContentBlock::Audio(audio) => format!("audio {}", audio.mime_type),
    ///         ContentBlock::ResourceLink(link) => format!("link {}", link.uri),
    ///         ContentBlock::Resource(_) => "embedded resource".to_owned(),
    ///         _ => "other".to_owned(),
    ///     })
    ///     .collect()
    /// # }
    /// ```
    pub fn prompt(&self) -> &[ContentBlock] {
        &self.prompt.content
    }

    /// The id the client knows the prompt's user message by (ACP v2), if it was told one.
    pub(crate) fn message_id(&self) -> Option<&str> {
        self.prompt.message_id.as_deref()
    }

    /// The prompt's text blocks, concatenated.
    pub fn prompt_text(&self) -> String {
        plain_text(&self.prompt.content)
    }

    /// The host-defined slash command this prompt invokes (`/name input`, see
    /// [`TurnRunner::commands`](crate::TurnRunner::commands)), if any.
    pub fn command(&self) -> Option<&SlashCommand> {
        self.prompt.command.as_ref()
    }

    /// The `session/prompt` request's `_meta` (for example a W3C `traceparent`), as the client
    /// sent it.
    pub fn meta(&self) -> Option<&Meta> {
        self.prompt.meta.as_ref()
    }

    /// The MCP servers the session was given (by the `session/new`, `load` or `resume` that
    /// opened it), in order.
    pub fn mcp_servers(&self) -> &[McpServer] {
        self.session.mcp_servers()
    }

    /// The current value of one of the session's select config options.
    pub fn config_value(&self, config_id: &str) -> Option<String> {
        self.session.config_value(config_id)
    }

    /// Whether the turn was cancelled (`session/cancel`, `$/cancel_request`, close).
    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// Resolves when the turn is cancelled.
    pub async fn cancelled(&self) {
        self.cancel.cancelled().await;
    }

    /// The turn's cancellation token.
    pub fn cancellation(&self) -> &CancellationToken {
        &self.cancel
    }

    /// The turn's handle on the client: read and write files through the editor, run commands in
    /// its terminals, ask the user. Its calls are cancelled with the turn; its terminals are
    /// released when the turn ends (killed first when it was cancelled).
    ///
    /// ```no_run
    /// # async fn demo(turn: &acp_facade_runner::Turn) -> Result<(), acp_facade::Error> {
    /// let path = turn.cwd().join("notes.txt");
    /// let notes = turn.client().read_text_file(&path, None, None).await?;
    /// turn.text(notes).await;
    /// # Ok(()) }
    /// ```
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The client's system prompt for the session (`systemPrompt` of the `session/new`, or of
    /// the latest `load` or `resume` that carried one; kept in the store), when the turn runner
    /// [accepts system prompts](crate::TurnRunner::accepts_system_prompt).
    pub fn system_prompt(&self) -> Option<&SystemPrompt> {
        self.system_prompt.as_ref()
    }

    /// The system prompt for the model: `own` (the agent's) with the client's system prompt
    /// applied — `append`: `own`, a newline, then the client's text; `override`: the client's
    /// text alone; none: `own`. The client's text is its text blocks, joined.
    pub fn compose_system_prompt(&self, own: &str) -> String {
        let Some(client) = self.system_prompt() else { return own.to_owned() };
        let text: String = client
            .content
            .iter()
            .filter_map(|block| match block {
                ContentBlock::Text(t) => Some(t.text.as_str()),
                _ => None,
            })
            .collect();
        match client.mode {
            SystemPromptMode::Override => text,
            _ => format!("{own}\n{text}"),
        }
    }

    /// What the client advertised (`fs`, `terminal`, `elicitation`, `_meta`).
    pub fn client_capabilities(&self) -> &Capabilities {
        self.client.capabilities()
    }

    pub(crate) fn lock_step(&self) -> std::sync::MutexGuard<'_, Step> {
        self.step.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) async fn emit(&self, class: EventClass, kind: EventKind) {
        self.session.publish(class, Visibility::Public, None, Some((&self.loop_id, &self.turn_id)), kind).await;
    }

    /// Streams reply text (`agent_message_chunk`); waits while the client is slow to read.
    pub async fn text(&self, text: impl Into<String>) {
        let text = text.into();
        self.lock_step().text.push_str(&text);
        self.emit(EventClass::Ephemeral, EventKind::TokenDelta { text, channel: TokenChannel::Message }).await;
    }

    /// [`Turn::text`] for callers that cannot await (bindings), not a second spelling: when a
    /// subscriber's queue is full it delivers nothing and hands the text back, so the caller can
    /// fall back to the awaiting form.
    pub fn try_text(&self, text: String) -> Result<(), String> {
        self.try_token(text, TokenChannel::Message)
    }

    /// Like [`Turn::thought`] but never waits; see [`Turn::try_text`].
    pub fn try_thought(&self, text: String) -> Result<(), String> {
        self.try_token(text, TokenChannel::Thought)
    }

    fn try_token(&self, text: String, channel: TokenChannel) -> Result<(), String> {
        let at = (&self.loop_id, &self.turn_id);
        let kept = text.clone();
        match self.session.try_publish_ephemeral(at, EventKind::TokenDelta { text, channel }) {
            Ok(()) => {
                let mut step = self.lock_step();
                match channel {
                    TokenChannel::Message => step.text.push_str(&kept),
                    TokenChannel::Thought => step.thoughts.push_str(&kept),
                }
                Ok(())
            }
            Err(_) => Err(kept),
        }
    }

    /// Streams reasoning (`agent_thought_chunk`).
    pub async fn thought(&self, text: impl Into<String>) {
        let text = text.into();
        self.lock_step().thoughts.push_str(&text);
        self.emit(EventClass::Ephemeral, EventKind::TokenDelta { text, channel: TokenChannel::Thought }).await;
    }

    /// Asks the client for permission to run `call_id` (`session/request_permission`), offering
    /// `controls`; waits for the answer or the turn's cancellation. A shorthand of
    /// [`Turn::request_permission_with_options`] with no host-defined options, its answer
    /// mapped to a [`Permission`] (any action but approve and approve-always is a denial).
    pub async fn request_permission(
        &self,
        call_id: &ToolCallId,
        title: impl Into<String>,
        controls: &[ApprovalAction],
    ) -> Permission {
        let mut gate = Gate::new(self.gate_id(), GateKind::Permission, GateResolver::Loop, title);
        gate.tool_call_id = Some(call_id.clone());
        gate.controls = controls.to_vec();
        match self.wait_gate(gate).await {
            Some(GateResponse::Approval(ApprovalAction::Approve)) => Permission::Allowed,
            Some(GateResponse::Approval(ApprovalAction::ApproveAlways)) => Permission::AllowedAlways,
            Some(_) => Permission::Denied,
            None => Permission::Cancelled,
        }
    }

    /// Asks the user a question (an ask-user gate): the answer's text, or `None` when the user
    /// declined or dismissed it, or the turn was cancelled. A shorthand of
    /// `turn.ask(question).await.answered()`: [`Turn::ask`] tells those apart.
    ///
    /// Over ACP it is a form elicitation when the client advertised `elicitation.form`; otherwise
    /// it waits until the turn is cancelled, unless the product answers it out of band through
    /// [`RunnerSession::answer_gate`](crate::RunnerSession::answer_gate).
    pub async fn ask_user(&self, question: impl Into<String>) -> Option<Value> {
        self.ask(question).await.answered()
    }

    pub(crate) fn gate_id(&self) -> GateId {
        GateId::new(format!("{}-gate{}", self.turn_id, self.next_number()))
    }

    /// A fresh tool call id of this turn.
    pub(crate) fn tool_call_id(&self) -> ToolCallId {
        ToolCallId::new(format!("{}-call{}", self.turn_id, self.next_number()))
    }

    /// The next number of the turn's own ids (gates, tool calls, subagents, messages).
    pub(crate) fn next_number(&self) -> u64 {
        self.next_call.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// Opens `gate` and waits for its answer (`None`: the turn was cancelled first).
    pub(crate) async fn wait_gate(&self, gate: Gate) -> Option<GateResponse> {
        let (tx, rx) = oneshot::channel();
        let gate_id = gate.id.clone();
        self.session.open_gate(gate_id.clone(), tx);
        self.emit(EventClass::Enduring, EventKind::gate_opened(gate)).await;
        // Cancellation wins over an answer that raced it: on `session/cancel` or close the facade
        // interrupts the turn first and only then answers the gate (deny), so both may be ready.
        let answer = tokio::select! {
            biased;
            () = self.cancel.cancelled() => None,
            answer = rx => answer.ok(),
        };
        self.session.forget_gate(&gate_id);
        self.emit(EventClass::Enduring, EventKind::GateResolved { gate_id }).await;
        answer
    }

    /// Reports context usage; closes the current step first (`StepDone`, then `usage_update`).
    /// A shorthand of [`Turn::usage_with_cost`] for an agent that reports no cost.
    pub async fn usage(&self, used: u64, size: u64) {
        self.end_step().await;
        self.emit(EventClass::Enduring, EventKind::ContextMeasured { used, size, cost: None }).await;
    }

    /// Reports context usage with the session's cumulative cost (`usage_update.cost`); closes
    /// the current step first (`StepDone`, then `usage_update`). The primary form of
    /// [`Turn::usage`] (Python's and Node's `usage` take the cost as an optional argument).
    pub async fn usage_with_cost(&self, used: u64, size: u64, cost: Cost) {
        self.end_step().await;
        self.emit(EventClass::Enduring, EventKind::ContextMeasured { used, size, cost: Some(Box::new(cost)) }).await;
    }

    /// Sends the turn's plan (`plan`): every entry with its current status. Each plan replaces
    /// the one before at the client; send it again, whole, as entries progress. `session/load`
    /// replays the session's latest plan.
    pub async fn plan(&self, plan: Plan) {
        self.emit(EventClass::Enduring, EventKind::PlanUpdated { plan }).await;
    }

    /// Sets the `_meta` of the prompt's response, whatever the turn's outcome (the last call
    /// counts).
    pub async fn set_response_meta(&self, meta: Meta) {
        self.emit(EventClass::Ephemeral, EventKind::ResponseMeta { meta }).await;
    }

    /// Closes the current step, if it has content (`StepDone`).
    pub async fn end_step(&self) {
        let step = std::mem::take(&mut *self.lock_step());
        if !step.is_empty() {
            self.emit(EventClass::Enduring, EventKind::StepDone { messages: step.into_messages() }).await;
        }
    }

    /// The session's conversation before this turn: its last `limit` entries, oldest first —
    /// user prompts, assistant messages, thoughts, and tool calls with their final state, from
    /// every earlier turn of the session (also those run before it was loaded or resumed, in any
    /// process sharing the store), with what the latest compaction replaced standing as one
    /// [`HistoryEntry::Summary`] first. This turn's own prompt and
    /// steps are not in it. See the [`history`](crate::history) module for how events become
    /// entries.
    ///
    /// Served from the entries the session holds in memory (the newest
    /// [`HISTORY_CACHE_ENTRIES`](crate::HISTORY_CACHE_ENTRIES)); a `limit` reaching older ones
    /// reads the journal from the store. Fails only when that read does.
    ///
    /// ```
    /// use acp_facade_runner::{HistoryEntry, Turn};
    ///
    /// /// The conversation as chat messages for a model: (role, text).
    /// async fn messages(turn: &Turn) -> Result<Vec<(&'static str, String)>, acp_facade::Error> {
    ///     let mut messages = Vec::new();
    ///     for entry in turn.history(50).await? {
    ///         match entry {
    ///             HistoryEntry::User { text, .. } => messages.push(("user", text)),
    ///             HistoryEntry::Assistant { text } => messages.push(("assistant", text)),
    ///             HistoryEntry::ToolCall(call) => messages.push(("tool", format!("{}: {}", call.title, call.text()))),
    ///             HistoryEntry::Summary { text } => messages.push(("system", format!("Earlier: {text}"))),
    ///             _ => {} // thoughts, and entries of later versions
    ///         }
    ///     }
    ///     messages.push(("user", turn.prompt_text()));
    ///     Ok(messages)
    /// }
    /// ```
    pub async fn history(&self, limit: usize) -> Result<Vec<HistoryEntry>, Error> {
        Ok(self.history_page(None, limit).await?.entries)
    }

    /// One page of the session's conversation before this turn: at most `limit` entries, oldest
    /// first, ending before `before` (`None`: the newest, as [`Turn::history`] returns them), and
    /// the position to ask for the page before it ([`HistoryPage::older`], `None` once the
    /// oldest entry is in). A position stays valid until the session is compacted again; one
    /// given before that is refused with `-32602`.
    ///
    /// ```
    /// # async fn all(turn: &acp_facade_runner::Turn) -> Result<(), acp_facade::Error> {
    /// // Every entry, newest page first.
    /// let mut page = turn.history_page(None, 100).await?;
    /// let mut entries = page.entries;
    /// while let Some(older) = page.older {
    ///     page = turn.history_page(Some(&older), 100).await?;
    ///     entries.splice(0..0, page.entries.iter().cloned());
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn history_page(&self, before: Option<&HistoryPosition>, limit: usize) -> Result<HistoryPage, Error> {
        self.session.history_page(before, limit).await
    }

    /// The text streamed in the current step so far.
    pub fn step_text(&self) -> String {
        self.lock_step().text.clone()
    }
}
