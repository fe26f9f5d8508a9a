//! `session/prompt`: the correlation engine; and `session/cancel`.
//!
//! A host's `submit` is fire-and-forget: it returns a command id and the turn's outcome arrives
//! later on the session's event stream. The engine bridges the two:
//!
//! 1. Subscribe to the session's events *before* submitting, so a `TurnStarted` racing in right
//!    after `submit` returns can never be missed.
//! 2. Match `TurnStarted.cause.command_id` to the submitted command id.
//! 3. Capture that event's loop id and turn id.
//! 4. From then on, handle only events carrying both ids; everything else (other loops, other
//!    turns, other commands' `TurnStarted`) is a decoy.
//! 5. Complete on the correlated terminal: `TurnDone` (its stop reason, default `end_turn`),
//!    `TurnInterrupted` (`cancelled`), `TurnFailed` (`-32603` with the failure message — or a
//!    generic one when the event is `Internal`, whose content never reaches the client).
//!    A terminal ends the turn whatever its visibility.
//!
//! Cancellation (`session/cancel`, `$/cancel_request` for the prompt, or `session/close`) interrupts
//! the host's turn and makes the answer `cancelled` — never an error. If the turn does not end
//! within the cancel grace period the prompt answers `cancelled` anyway and stops forwarding.
//!
//! Every update of the turn is queued on the connection's ordered writer before the function
//! returns, so none can follow the response. One prompt may be in flight per session.

use std::collections::HashMap;
use std::sync::Arc;

use futures::{FutureExt, StreamExt};
use serde_json::Value;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::session::{PromptGuard, SessionEntry, resolve_session};
use super::{AgentInner, Reply, compact, decode, encode, gates, translate};
use crate::acp::{
    CancelNotification, ContentBlock, PromptCapabilities, PromptRequest, PromptResponse, SessionNotification,
    SessionUpdate, StopReason,
};
use crate::error::{Error, ErrorExt};
use crate::harness::{EventKind, LoopId, ToolCallId, ToolCallRequest, TurnId};
use crate::host::EventStream;
use crate::rpc::RequestContext;

/// The `session/update` method name.
pub(crate) const SESSION_UPDATE: &str = super::method::SESSION_UPDATE;

/// Accepts a prompt on the reader: validates it and marks it in flight before anything else is
/// read, so a `session/cancel` right behind it always finds it.
pub(crate) fn accept_prompt(agent: &Arc<AgentInner>, params: Value, cx: RequestContext) -> Reply {
    let accepted = (|| {
        let request: PromptRequest = decode(params)?;
        let entry = resolve_session(agent, &request.session_id)?;
        check_content(&agent.options.prompt_capabilities, &request.prompt)?;
        let guard = entry.begin_prompt()?;
        Ok::<_, Error>((request.prompt, entry, guard))
    })();
    let agent = agent.clone();
    Box::pin(async move {
        let (prompt, entry, guard) = accepted?;
        let span = tracing::info_span!("turn", session = %entry.id);
        let outcome = run_prompt(&agent, &entry, &guard, prompt, &cx.cancelled).instrument(span).await;
        // The next prompt may start now; a close waiting for this one waits until its response
        // is queued, so it can never answer first.
        cx.keep_until_answered(guard.release());
        encode(&PromptResponse::new(outcome?))
    })
}

/// Rejects content the agent did not advertise (`-32602`).
fn check_content(capabilities: &PromptCapabilities, prompt: &[ContentBlock]) -> Result<(), Error> {
    for (index, block) in prompt.iter().enumerate() {
        let (allowed, what) = match block {
            ContentBlock::Text(_) | ContentBlock::ResourceLink(_) => (true, ""),
            ContentBlock::Image(_) => (capabilities.image, "image"),
            ContentBlock::Audio(_) => (capabilities.audio, "audio"),
            ContentBlock::Resource(_) => (capabilities.embedded_context, "resource"),
            _ => (false, "unknown"),
        };
        if !allowed {
            return Err(Error::invalid_params_msg(format!(
                "invalid params at `prompt[{index}]`: {what} content is not supported by this agent"
            )));
        }
    }
    Ok(())
}

/// Watches the prompt's two cancellation sources and the grace deadline.
pub(crate) struct Cancellation<'a> {
    prompt: &'a CancellationToken,
    request: &'a CancellationToken,
    deadline: Option<Instant>,
    grace: std::time::Duration,
}

impl<'a> Cancellation<'a> {
    pub(crate) fn new(
        prompt: &'a CancellationToken,
        request: &'a CancellationToken,
        grace: std::time::Duration,
    ) -> Self {
        Self { prompt, request, deadline: None, grace }
    }

    /// Whether cancellation was requested (and noticed).
    pub(crate) fn requested(&self) -> bool {
        self.deadline.is_some() || self.prompt.is_cancelled() || self.request.is_cancelled()
    }

    /// Resolves when a not-yet-noticed cancellation arrives.
    pub(crate) async fn arrives(&self) {
        tokio::select! {
            () = self.prompt.cancelled() => {}
            () = self.request.cancelled() => {}
        }
    }

    /// Notes the cancellation and starts the grace period.
    pub(crate) fn notice(&mut self) {
        if self.deadline.is_none() {
            self.deadline = Some(Instant::now() + self.grace);
        }
    }

    pub(crate) fn noticed(&self) -> bool {
        self.deadline.is_some()
    }

    /// Resolves when the grace period is over (never, before cancellation).
    pub(crate) async fn expired(&self) {
        match self.deadline {
            Some(deadline) => tokio::time::sleep_until(deadline).await,
            None => std::future::pending().await,
        }
    }
}

async fn run_prompt(
    agent: &Arc<AgentInner>,
    entry: &Arc<SessionEntry>,
    guard: &PromptGuard,
    prompt: Vec<ContentBlock>,
    request_cancel: &CancellationToken,
) -> Result<StopReason, Error> {
    let mut cancel = Cancellation::new(&guard.cancel, request_cancel, agent.options.cancel_grace);
    compact::ensure_advertised(agent, entry).await;
    if cancel.requested() {
        // Cancelled before anything was submitted: nothing to interrupt.
        return Ok(StopReason::Cancelled);
    }
    if agent.options.compaction && compact::is_compact_command(&prompt) {
        return compact::run(agent, entry, &mut cancel).await;
    }
    let events = entry.live.subscribe_events()?;
    // A host whose submit never returns must not hold the prompt (and with it cancel and close)
    // forever: once cancelled, it gets the grace period.
    let command = tokio::select! {
        biased;
        command = entry.live.submit(prompt) => command?,
        () = async {
            cancel.arrives().await;
            tokio::time::sleep(agent.options.cancel_grace).await;
        } => {
            tracing::warn!(session = %entry.id, "submit did not return within the cancel grace period");
            return Ok(StopReason::Cancelled);
        }
    };
    tracing::debug!(session = %entry.id, %command, "prompt submitted");
    let mut drain = Drain { agent, entry, events, tool_calls: HashMap::new() };
    drain.until_terminal(&command, &mut cancel).await
}

/// Interrupts the session's turn, logging a host failure (the prompt still ends `cancelled`).
pub(crate) async fn interrupt(entry: &SessionEntry) {
    if let Err(e) = entry.live.interrupt().await {
        tracing::warn!(session = %entry.id, error = %e.message, "interrupt failed");
    }
}

struct Drain<'a> {
    agent: &'a Arc<AgentInner>,
    entry: &'a Arc<SessionEntry>,
    events: EventStream,
    /// Tool calls announced in this turn, for the permission requests that refer to them.
    tool_calls: HashMap<ToolCallId, ToolCallRequest>,
}

impl Drain<'_> {
    async fn until_terminal(
        &mut self,
        command: &crate::harness::CommandId,
        cancel: &mut Cancellation<'_>,
    ) -> Result<StopReason, Error> {
        let mut turn: Option<(LoopId, TurnId)> = None;
        let mut checked: u32 = 0;
        loop {
            // Fast path, taken while streaming: an event is already queued and there is no
            // cancellation to notice, so skip building the select's wakers.
            // Checking the cancellation tokens takes their locks, so on this path it is done every
            // few events only (a cancellation is still noticed within microseconds).
            checked = checked.wrapping_add(1);
            let ready =
                if checked.is_multiple_of(32) && cancel.requested() { None } else { self.events.next().now_or_never() };
            let event = if let Some(event) = ready {
                event
            } else {
                tokio::select! {
                    biased;
                    () = cancel.arrives(), if !cancel.noticed() => {
                        cancel.notice();
                        interrupt(self.entry).await;
                        continue;
                    }
                    () = cancel.expired() => {
                        tracing::warn!(session = %self.entry.id, "the turn did not end within the cancel grace period");
                        return Ok(StopReason::Cancelled);
                    }
                    event = self.events.next() => event,
                }
            };
            let Some(event) = event else {
                if cancel.requested() {
                    return Ok(StopReason::Cancelled);
                }
                return Err(Error::internal_msg("the session's event stream ended before the turn finished"));
            };
            let Some((loop_id, turn_id)) = &turn else {
                if matches!(event.kind, EventKind::TurnStarted { .. }) && event.is_caused_by(command) {
                    let coordinates = &event.header.coordinates;
                    match (&coordinates.loop_id, &coordinates.turn_id) {
                        (Some(l), Some(t)) => turn = Some((l.clone(), t.clone())),
                        _ => return Err(Error::internal_msg("the host started a turn without loop and turn ids")),
                    }
                }
                continue;
            };
            if !event.is_in(loop_id, turn_id) {
                continue;
            }
            match &event.kind {
                EventKind::TurnDone { stop, .. } => {
                    return Ok(if cancel.requested() {
                        StopReason::Cancelled
                    } else {
                        stop.unwrap_or(StopReason::EndTurn)
                    });
                }
                EventKind::TurnInterrupted {} => return Ok(StopReason::Cancelled),
                EventKind::TurnFailed { error } => {
                    if cancel.requested() {
                        return Ok(StopReason::Cancelled);
                    }
                    // An internal failure still ends the turn, but its text stays in the host.
                    if !event.is_public() {
                        tracing::warn!(session = %self.entry.id, error = %error, "the turn failed (internal)");
                        return Err(Error::internal_msg("the turn failed"));
                    }
                    return Err(Error::internal_msg(error.clone()));
                }
                EventKind::GateOpened { gate } if event.is_public() => {
                    let tool_call = gate.tool_call_id.as_ref().and_then(|id| self.tool_calls.get(id));
                    gates::resolve(self.agent, self.entry, gate, tool_call, cancel).await;
                }
                EventKind::ToolCallStarted { call_id, name, kind, input } if event.is_public() => {
                    self.tool_calls.insert(
                        call_id.clone(),
                        ToolCallRequest {
                            call_id: call_id.clone(),
                            name: name.clone(),
                            kind: *kind,
                            input: input.clone(),
                        },
                    );
                    forward(self.agent, &self.entry.id, event.clone()).await?;
                }
                _ => forward(self.agent, &self.entry.id, event).await?,
            }
        }
    }
}

/// Sends the live translation of `event`, if it has one.
async fn forward(
    agent: &AgentInner,
    session_id: &crate::acp::SessionId,
    event: crate::harness::Event,
) -> Result<(), Error> {
    if let (true, EventKind::TokenDelta { text, channel }) = (event.is_public(), &event.kind) {
        let line = translate::text_chunk_line(&session_id.0, *channel, text);
        agent.peer().send_line(line).await?;
        return Ok(());
    }
    if let Some(update) = translate::translate_owned(event) {
        send_update(agent, session_id, update).await?;
    }
    Ok(())
}

/// Sends one `session/update` through the ordered writer.
pub(crate) async fn send_update(
    agent: &AgentInner,
    session_id: &crate::acp::SessionId,
    update: SessionUpdate,
) -> Result<(), Error> {
    let notification = SessionNotification::new(session_id.clone(), update);
    agent.peer().notify(SESSION_UPDATE, &notification).await?;
    Ok(())
}

/// `session/cancel`: cancels the session's in-flight prompt; a no-op when there is none.
///
/// Synchronous on purpose: it runs on the connection's reader, so it takes effect before any
/// later message (such as the next `session/prompt`) is accepted.
pub(crate) fn cancel(agent: &AgentInner, params: Value) {
    let notification: CancelNotification = match decode(params) {
        Ok(n) => n,
        Err(e) => {
            tracing::warn!(error = %e.message, "malformed `session/cancel`; ignored");
            return;
        }
    };
    match resolve_session(agent, &notification.session_id) {
        Ok(entry) => {
            if !entry.cancel_prompt() {
                tracing::debug!(session = %entry.id, "`session/cancel` with no prompt in flight");
            }
        }
        Err(e) => tracing::warn!(error = %e.message, "`session/cancel` for no live session; ignored"),
    }
}
