//! The turn API: what a product's `run_turn` uses to stream, call tools, ask for permission and
//! report usage. Each call becomes a harness event with the right class, visibility and turn
//! coordinates, so the facade (live streaming, replay, list) needs no further product code.
//!
//! Steps: text, thoughts, tool calls and tool results accumulate into the current step, which
//! [`Turn::usage`] closes (a `StepDone` then a `ContextMeasured`, both Enduring); whatever is left
//! when the turn returns is closed the same way, without a measurement.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::Value;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::session::RunnerSession;
use crate::acp::{ContentBlock, SessionId, ToolCallStatus, ToolKind};
use crate::harness::content::{plain_text, text_block};
use crate::harness::{
    AiMessage, ApprovalAction, CommandId, EventClass, EventKind, Gate, GateId, GateKind, GateResolver, GateResponse,
    LoopId, Message, TokenChannel, ToolCallId, ToolCallRequest, ToolResultMessage, TurnId, Visibility,
};
use crate::host::LiveSession;

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
struct Step {
    text: String,
    thoughts: String,
    tool_calls: Vec<ToolCallRequest>,
    results: Vec<ToolResultMessage>,
}

impl Step {
    fn is_empty(&self) -> bool {
        self.text.is_empty() && self.thoughts.is_empty() && self.tool_calls.is_empty() && self.results.is_empty()
    }

    fn into_messages(self) -> Vec<Message> {
        let mut ai = AiMessage::default();
        if !self.text.is_empty() {
            ai.content.push(text_block(self.text));
        }
        if !self.thoughts.is_empty() {
            ai.thoughts.push(text_block(self.thoughts));
        }
        ai.tool_calls = self.tool_calls;
        let mut messages = vec![Message::Ai(ai)];
        messages.extend(self.results.into_iter().map(Message::ToolResult));
        messages
    }
}

/// One running turn, handed to [`TurnRunner::run_turn`](super::TurnRunner::run_turn).
#[allow(clippy::struct_field_names, reason = "`turn_id` names the harness id, as on events")]
pub struct Turn {
    pub(crate) session: Arc<RunnerSession>,
    pub(crate) command: CommandId,
    pub(crate) loop_id: LoopId,
    pub(crate) turn_id: TurnId,
    prompt: Vec<ContentBlock>,
    cancel: CancellationToken,
    step: Mutex<Step>,
    next_call: AtomicU64,
}

impl std::fmt::Debug for Turn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Turn").field("session", &self.session.id()).field("turn", &self.turn_id).finish_non_exhaustive()
    }
}

impl Turn {
    pub(crate) fn new(
        session: Arc<RunnerSession>,
        command: CommandId,
        turn_id: TurnId,
        prompt: Vec<ContentBlock>,
        cancel: CancellationToken,
    ) -> Self {
        Self {
            session,
            command,
            loop_id: LoopId::new("main"),
            turn_id,
            prompt,
            cancel,
            step: Mutex::default(),
            next_call: AtomicU64::new(0),
        }
    }

    /// The session this turn runs in.
    pub fn session_id(&self) -> SessionId {
        self.session.id()
    }

    /// The session's working directory.
    pub fn cwd(&self) -> &std::path::Path {
        self.session.cwd()
    }

    /// The prompt's content blocks, as the client sent them.
    pub fn prompt(&self) -> &[ContentBlock] {
        &self.prompt
    }

    /// The prompt's text blocks, concatenated.
    pub fn prompt_text(&self) -> String {
        plain_text(&self.prompt)
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

    fn lock_step(&self) -> std::sync::MutexGuard<'_, Step> {
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

    /// Like [`Turn::text`] but never waits, for callers that cannot await (bindings): when a
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

    /// Announces a tool call (`tool_call`, status pending); returns its id.
    pub async fn start_tool_call(&self, title: impl Into<String>, kind: ToolKind, input: Value) -> ToolCallId {
        let n = self.next_call.fetch_add(1, Ordering::Relaxed) + 1;
        let call_id = ToolCallId::new(format!("{}-call{n}", self.turn_id));
        let name = title.into();
        self.lock_step().tool_calls.push(ToolCallRequest {
            call_id: call_id.clone(),
            name: name.clone(),
            kind,
            input: input.clone(),
        });
        self.emit(EventClass::Ephemeral, EventKind::ToolCallStarted { call_id: call_id.clone(), name, kind, input })
            .await;
        call_id
    }

    /// Reports progress of a tool call (`tool_call_update`).
    pub async fn tool_progress(
        &self,
        call_id: &ToolCallId,
        status: Option<ToolCallStatus>,
        content: Option<Vec<ContentBlock>>,
    ) {
        self.emit(EventClass::Ephemeral, EventKind::ToolCallProgress { call_id: call_id.clone(), status, content })
            .await;
    }

    /// Finishes a tool call successfully (`tool_call_update`, status completed).
    pub async fn complete_tool_call(&self, call_id: &ToolCallId, output: Vec<ContentBlock>) {
        self.finish_tool_call(call_id, output, false).await;
    }

    /// Finishes a tool call as failed (`tool_call_update`, status failed).
    pub async fn fail_tool_call(&self, call_id: &ToolCallId, output: Vec<ContentBlock>) {
        self.finish_tool_call(call_id, output, true).await;
    }

    async fn finish_tool_call(&self, call_id: &ToolCallId, output: Vec<ContentBlock>, is_error: bool) {
        self.lock_step().results.push(ToolResultMessage { call_id: call_id.clone(), output: output.clone(), is_error });
        self.emit(EventClass::Ephemeral, EventKind::ToolCallCompleted { call_id: call_id.clone(), output, is_error })
            .await;
    }

    /// Asks the client for permission to run `call_id` (`session/request_permission`), offering
    /// `controls`; waits for the answer or the turn's cancellation.
    pub async fn request_permission(
        &self,
        call_id: &ToolCallId,
        title: impl Into<String>,
        controls: &[ApprovalAction],
    ) -> Permission {
        let gate = Gate {
            id: self.gate_id(),
            kind: GateKind::Permission,
            resolver: GateResolver::Loop,
            tool_call_id: Some(call_id.clone()),
            title: title.into(),
            controls: controls.to_vec(),
        };
        match self.wait_gate(gate).await {
            Some(GateResponse::Approval(ApprovalAction::Approve)) => Permission::Allowed,
            Some(GateResponse::Approval(ApprovalAction::ApproveAlways)) => Permission::AllowedAlways,
            Some(_) => Permission::Denied,
            None => Permission::Cancelled,
        }
    }

    /// Asks the user a question. ACP v1.20.0 has no wire form for it, so over ACP this waits
    /// until the turn is cancelled (`None`) unless the product answers it out of band through
    /// [`RunnerSession::answer_gate`](super::RunnerSession::answer_gate).
    pub async fn ask_user(&self, question: impl Into<String>) -> Option<Value> {
        let gate = Gate {
            id: self.gate_id(),
            kind: GateKind::AskUser,
            resolver: GateResolver::Loop,
            tool_call_id: None,
            title: question.into(),
            controls: Vec::new(),
        };
        match self.wait_gate(gate).await {
            Some(GateResponse::Values(value)) => Some(value),
            Some(GateResponse::Approval(_)) | None => None,
        }
    }

    fn gate_id(&self) -> GateId {
        let n = self.next_call.fetch_add(1, Ordering::Relaxed) + 1;
        GateId::new(format!("{}-gate{n}", self.turn_id))
    }

    async fn wait_gate(&self, gate: Gate) -> Option<GateResponse> {
        let (tx, rx) = oneshot::channel();
        let gate_id = gate.id.clone();
        self.session.open_gate(gate_id.clone(), tx);
        self.emit(EventClass::Enduring, EventKind::GateOpened { gate }).await;
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
    pub async fn usage(&self, used: u64, size: u64) {
        self.end_step().await;
        self.emit(EventClass::Enduring, EventKind::ContextMeasured { used, size }).await;
    }

    /// Closes the current step, if it has content (`StepDone`).
    pub async fn end_step(&self) {
        let step = std::mem::take(&mut *self.lock_step());
        if !step.is_empty() {
            self.emit(EventClass::Enduring, EventKind::StepDone { messages: step.into_messages() }).await;
        }
    }

    /// The text streamed in the current step so far.
    pub fn step_text(&self) -> String {
        self.lock_step().text.clone()
    }
}
