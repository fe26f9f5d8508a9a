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
//! returns, so none can follow the response. One prompt may be in flight per session; a repeat
//! of an idempotency key the session accepted takes no slot and runs nothing: it is answered as
//! the prompt that first carried the key (see `idempotency`).
//!
//! Besides its events, the engine applies the host's own changes of the session made while the
//! prompt is in flight (see `control_queue`), each when it has forwarded every event queued
//! before it. It also dedupes `SessionMetaChanged` (see `SessionEntry::session_info_update`) and
//! takes the response's `_meta` from the turn's last `ResponseMeta` event.

use std::collections::HashMap;
use std::sync::Arc;

use futures::{FutureExt, StreamExt};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::cancellation::{Attention, Cancellation};
use super::capabilities::check_prompt;
use super::control_queue::Draining;
use super::elicitation::OpenUrls;
use super::idempotency::{self, Keyed, Recorder};
use super::prompt_params::DecodedPrompt;
use super::session_state::{PromptGuard, SessionEntry};
use super::state::AgentInner;
use super::v2::message_ids::{ChunkKind, MessageIds};
use super::wire::{Reply, decode_params, encode_error};
use super::{commands, compact, gates, translate, update_cursor};
use crate::acp::{CancelNotification, ContentBlock, Meta, PromptResponse, SessionUpdate, StopReason, ToolCall};
use crate::error::{Error, ErrorExt};
use crate::harness::{EventKind, LoopId, Prompt, ToolCallId, TurnId};
use crate::host::EventStream;
use crate::rpc::{Answer, Params, RequestContext};

/// Accepts a prompt on the reader: validates it and marks it in flight before anything else is
/// read, so a `session/cancel` right behind it always finds it. A repeat of a prompt the session
/// accepted with the same idempotency key is answered as that one (see `idempotency`).
pub(crate) fn accept_prompt(agent: &Arc<AgentInner>, params: Params, cx: RequestContext) -> Reply {
    let accepted = match accept(agent, params) {
        Ok(Accepted::Repeat(first)) => return Box::pin(idempotency::answer_repeat(first, cx.cancelled)),
        Ok(Accepted::Turn(turn)) => Ok(turn),
        Err(e) => Err(e),
    };
    let agent = agent.clone();
    Box::pin(async move {
        let (prompt, meta, entry, guard, mut recorder) = accepted?;
        let v2 = agent.dialect.is_v2();
        let (message_id, message_ids) = if v2 {
            // ACP v2: acknowledged now, with the user message's id; the turn's end is an idle
            // `state_update`. The drain writes the turn's chunks with the ids of its messages.
            // A repeat of its key is answered with the same acknowledgement.
            let (id, ids) = super::v2::lifecycle::accepted(&agent, &cx, &entry, &prompt, recorder.take()).await;
            (Some(id), Some(ids))
        } else {
            (None, None)
        };
        let span = tracing::info_span!("turn", session = %entry.id);
        // Calls through the session's client handle meanwhile belong to this prompt.
        let calls = entry.setup.client().link.begin_prompt();
        let prompt = Prompt::new(prompt).meta(meta).message_id(message_id);
        let outcome = run_prompt(&agent, &entry, &guard, prompt, message_ids, &cx.cancelled).instrument(span).await;
        // A cancelled prompt's terminals are killed and released before it is answered.
        entry.setup.client().link.end_prompt(&calls).await;
        if v2 {
            super::v2::lifecycle::ended(&agent, &entry, outcome.as_ref().map(|a| a.stop)).await;
            cx.keep_until_answered(guard.release());
            // Not sent: the request was answered when it was accepted.
            return outcome.map(|_| Answer::from(serde_json::Value::Null));
        }
        // The next prompt may start now; a close waiting for this one waits until its response
        // is queued, so it can never answer first.
        cx.keep_until_answered(guard.release());
        let answer = outcome.and_then(|Answered { stop, meta }| {
            // Serialised straight to text: a plain struct, the same bytes as through a value.
            Answer::serialize(&PromptResponse::new(stop).meta(meta)).map_err(|e| encode_error(&e))
        });
        // Every update of the turn is queued: its repeats are answered once this response is.
        if let Some(recorder) = recorder {
            cx.keep_until_answered(recorder.record(&answer));
        }
        answer
    })
}

/// A prompt as the reader accepted it: its content, its `_meta`, its session, its hold on the
/// session's slot, and the recorder of its idempotency key, if it has one.
type Turn = (Vec<ContentBlock>, Option<Meta>, Arc<SessionEntry>, PromptGuard, Option<Recorder>);

/// What [`accept`] made of a prompt.
enum Accepted {
    /// A prompt to run.
    Turn(Turn),
    /// A repeat of the prompt that first carried its idempotency key.
    Repeat(Arc<Keyed>),
}

/// The synchronous part of accepting a prompt: its params decoded, its session resolved, then
/// either a repeat of a remembered key, or the prompt checked and holding the session's slot
/// (its key, if any, remembered from then on).
fn accept(agent: &AgentInner, params: Params) -> Result<Accepted, Error> {
    let v2 = agent.dialect.is_v2();
    let DecodedPrompt { request, v2_key } = super::prompt_params::decode_prompt(params, v2)?;
    let key = if v2 { idempotency::v2_key(v2_key)? } else { idempotency::v1_key(request.meta.as_ref())? };
    let entry = agent.resolve_session(&request.session_id)?;
    // A key names the operation: its repeat is one whatever its content.
    if let Some(first) = key.as_deref().and_then(|key| entry.keys.find(key)) {
        tracing::debug!(session = %entry.id, "a repeat of an idempotency key: answered as its first prompt");
        return Ok(Accepted::Repeat(first));
    }
    check_prompt(&agent.options.prompt_capabilities, &request.prompt)?;
    let guard = entry.begin_prompt()?;
    let recorder = key.map(|key| entry.keys.remember(key, guard.cancel.clone()));
    Ok(Accepted::Turn((request.prompt, request.meta, entry, guard, recorder)))
}

/// How a prompt is answered.
struct Answered {
    stop: StopReason,
    /// The response's `_meta`, from the turn's last `ResponseMeta`.
    meta: Option<Meta>,
}

impl From<StopReason> for Answered {
    fn from(stop: StopReason) -> Self {
        Self { stop, meta: None }
    }
}

async fn run_prompt(
    agent: &Arc<AgentInner>,
    entry: &Arc<SessionEntry>,
    guard: &PromptGuard,
    prompt: Prompt,
    message_ids: Option<MessageIds>,
    request_cancel: &CancellationToken,
) -> Result<Answered, Error> {
    let mut cancel = Cancellation::new(&guard.cancel, request_cancel, agent.options.cancel_grace);
    commands::ensure_advertised(agent, entry).await;
    if cancel.requested() {
        // Cancelled before anything was submitted: nothing to interrupt.
        return Ok(StopReason::Cancelled.into());
    }
    if agent.options.compaction && compact::is_compact_command(&prompt.content) {
        // Boxed: rare, and its future would otherwise be part of every prompt's.
        return Box::pin(compact::run(agent, entry, &mut cancel)).await.map(Answered::from);
    }
    let command = if commands::may_invoke(&prompt.content) {
        Box::pin(commands::invoked(agent, entry, &prompt.content)).await
    } else {
        None
    };
    let events = entry.live.subscribe_events()?;
    // From now on the host's calls to the client wait for the updates of what it published
    // before them (for hosts that ask for it; see `Client::in_order_with`).
    let forwarding = &entry.setup.client().link.forwarding;
    forwarding.start();
    let _stop = StopForwarding(forwarding);
    // From here on the host's own changes of the session wait for this prompt (see
    // `control_queue`); while the host's submit runs they are applied at once.
    let control = entry.control.begin();
    let submitted = submit(agent, entry, prompt.command(command), &control, &cancel).await;
    let outcome = match submitted {
        Ok(Some(command)) => {
            tracing::debug!(session = %entry.id, %command, "prompt submitted");
            let mut drain = Drain {
                agent,
                entry,
                events,
                control: &control,
                tool_calls: HashMap::new(),
                urls: OpenUrls::default(),
                received: None,
                response_meta: None,
                message_ids,
            };
            drain.until_terminal(&command, &mut cancel).await.map(|stop| Answered { stop, meta: drain.response_meta })
        }
        Ok(None) => Ok(StopReason::Cancelled.into()),
        Err(e) => Err(e),
    };
    control.finish().await;
    outcome
}

/// Submits `prompt` to the host; `None` when cancelled and the host's submit did not return
/// within the grace period (a host whose submit never returns must not hold the prompt — and with
/// it cancel and close — forever). The host's own changes of the session meanwhile are applied at
/// once: the turn's events cannot be told apart before its command id is known.
async fn submit(
    agent: &AgentInner,
    entry: &SessionEntry,
    prompt: Prompt,
    control: &Draining<'_>,
    cancel: &Cancellation<'_>,
) -> Result<Option<crate::harness::CommandId>, Error> {
    let submit = entry.live.submit_prompt(prompt);
    let given_up = async {
        cancel.arrives().await;
        tokio::time::sleep(agent.options.cancel_grace).await;
    };
    tokio::pin!(submit, given_up);
    loop {
        tokio::select! {
            biased;
            command = &mut submit => return command.map(Some),
            () = &mut given_up => {
                tracing::warn!(session = %entry.id, "submit did not return within the cancel grace period");
                return Ok(None);
            }
            () = control.ready() => control.apply_waiting().await,
        }
    }
}

struct Drain<'a> {
    agent: &'a Arc<AgentInner>,
    entry: &'a Arc<SessionEntry>,
    events: EventStream,
    /// The host's own changes of the session, applied in order with the turn's events.
    control: &'a Draining<'a>,
    /// Tool calls announced in this turn as they stand now, for the permission requests that
    /// refer to them.
    tool_calls: HashMap<ToolCallId, ToolCall>,
    /// Open-URL gates of this turn the user accepted: completed when the host resolves them.
    urls: OpenUrls,
    /// The `seq` of the event being handled, marked forwarded once it is (see
    /// `client::link::Forwarding`).
    received: Option<u64>,
    /// The response's `_meta`, from the turn's last public `ResponseMeta`.
    response_meta: Option<Meta>,
    /// On a v2 connection, the ids of the turn's messages: its chunks are written with them here
    /// (see `v2::message_ids`), and a tool call or a plan sent between chunks ends a message.
    message_ids: Option<MessageIds>,
}

impl Drain<'_> {
    /// Forwards the turn's events until its terminal one; returns the prompt's outcome.
    ///
    /// Each event is received and handled by [`Drain::step`]; what is awaited here (the send of a
    /// line, a permission round trip) never holds an event, so the future — part of every
    /// prompt's — stays small.
    async fn until_terminal(
        &mut self,
        command: &crate::harness::CommandId,
        cancel: &mut Cancellation<'_>,
    ) -> Result<StopReason, Error> {
        let mut turn: Option<(LoopId, TurnId)> = None;
        let mut checked: u32 = 0;
        loop {
            checked = checked.wrapping_add(1);
            if let Some(seq) = self.received.take() {
                // What the last event asked for is queued: calls of the host waiting for it go.
                self.entry.setup.client().link.forwarding.forwarded(seq);
            }
            let line = match self.step(command, &mut turn, cancel, checked).await {
                Step::Skip => continue,
                Step::Send(line) => line,
                Step::Interrupt => {
                    cancel.notice();
                    self.entry.interrupt().await;
                    continue;
                }
                Step::Gate(gate) => {
                    let tool_call = gate.tool_call_id.as_ref().and_then(|id| self.tool_calls.get(id));
                    // Boxed: permission requests are rare, and their future would otherwise be
                    // part of every prompt's.
                    Box::pin(gates::resolve(self.agent, self.entry, &gate, tool_call, cancel, &mut self.urls)).await;
                    continue;
                }
                Step::Control => {
                    self.control.apply_waiting().await;
                    continue;
                }
                Step::Finish(stop) => return Ok(stop),
                Step::Fail(error) => return Err(*error),
            };
            let line = match self.received {
                Some(seq) if self.agent.options.stream_cursors => update_cursor::stamp(line, seq),
                _ => line,
            };
            self.agent.peer().send_line(line).await?;
        }
    }

    /// Receives the next event and decides what to do with it ([`Drain::handle`]); or notices a
    /// cancellation, or the end of the cancel grace period. `checked` counts the calls.
    async fn step(
        &mut self,
        command: &crate::harness::CommandId,
        turn: &mut Option<(LoopId, TurnId)>,
        cancel: &mut Cancellation<'_>,
        checked: u32,
    ) -> Step {
        // Fast path, taken while streaming: an event is already queued and there is no
        // cancellation to notice, so skip building the select's wakers.
        // Checking the cancellation tokens takes their locks, so on this path it is done every
        // few events only (a cancellation is still noticed within microseconds).
        if !(checked.is_multiple_of(32) && cancel.requested())
            && let Some(event) = self.events.next().now_or_never()
        {
            return self.received(event, command, turn, cancel);
        }
        tokio::select! {
            biased;
            attention = cancel.attention() => match attention {
                Attention::Arrived => Step::Interrupt,
                Attention::Expired => {
                    tracing::warn!(session = %self.entry.id, "the turn did not end within the cancel grace period");
                    Step::Finish(StopReason::Cancelled)
                }
            },
            event = self.events.next() => self.received(event, command, turn, cancel),
            // After the events: a change is applied once every event queued before it is handled.
            () = self.control.ready() => Step::Control,
        }
    }

    /// [`Drain::handle`]s the stream's next item (`None`: the stream ended).
    fn received(
        &mut self,
        event: Option<crate::harness::Event>,
        command: &crate::harness::CommandId,
        turn: &mut Option<(LoopId, TurnId)>,
        cancel: &Cancellation<'_>,
    ) -> Step {
        match event {
            Some(event) => {
                self.received = Some(event.header.seq);
                self.handle(&event, command, turn, cancel)
            }
            None if cancel.requested() => Step::Finish(StopReason::Cancelled),
            None => Step::fail(Error::internal_msg("the session's event stream ended before the turn finished")),
        }
    }

    /// What to do with one event: correlation (steps 2–5 of the module doc) and translation.
    fn handle(
        &mut self,
        event: &crate::harness::Event,
        command: &crate::harness::CommandId,
        turn: &mut Option<(LoopId, TurnId)>,
        cancel: &Cancellation<'_>,
    ) -> Step {
        let Some((loop_id, turn_id)) = turn.as_ref() else {
            if matches!(event.kind, EventKind::TurnStarted { .. }) && event.is_caused_by(command) {
                let coordinates = &event.header.coordinates;
                match (&coordinates.loop_id, &coordinates.turn_id) {
                    (Some(l), Some(t)) => *turn = Some((l.clone(), t.clone())),
                    _ => {
                        return Step::fail(Error::internal_msg("the host started a turn without loop and turn ids"));
                    }
                }
            }
            return Step::Skip;
        };
        if !event.is_in(loop_id, turn_id) {
            return Step::Skip;
        }
        let public = event.is_public();
        match &event.kind {
            EventKind::TurnDone { stop, .. } => Step::Finish(if cancel.requested() {
                StopReason::Cancelled
            } else {
                stop.unwrap_or(StopReason::EndTurn)
            }),
            EventKind::TurnInterrupted {} => Step::Finish(StopReason::Cancelled),
            EventKind::TurnFailed { .. } if cancel.requested() => Step::Finish(StopReason::Cancelled),
            EventKind::TurnFailed { error } if !public => {
                // An internal failure still ends the turn, but its text stays in the host.
                tracing::warn!(session = %self.entry.id, error = %error, "the turn failed (internal)");
                Step::fail(Error::internal_msg("the turn failed"))
            }
            EventKind::TurnFailed { error } => Step::fail(Error::internal_msg(error.clone())),
            // Rare: the gate is copied out so that no event is held while the client is asked.
            EventKind::GateOpened { gate } if public => Step::Gate(gate.clone()),
            // An accepted open-URL gate resolved by the host: its elicitation is complete.
            EventKind::GateResolved { gate_id } if public => {
                self.urls.complete_line(gate_id).map_or(Step::Skip, Step::Send)
            }
            EventKind::SessionMetaChanged { title, updated_at } if public => {
                self.entry.session_info_update(title.as_ref(), updated_at.as_ref()).map_or(Step::Skip, |info| {
                    Step::Send(translate::update_line(&self.entry.id, SessionUpdate::SessionInfoUpdate(info)))
                })
            }
            EventKind::ResponseMeta { meta } if public => {
                self.response_meta = Some(meta.clone());
                Step::Skip
            }
            EventKind::ToolCallStarted { call_id, .. } if public => {
                let Some(call) = translate::tool_call(event) else { return Step::Skip };
                let line = translate::update_line(&self.entry.id, SessionUpdate::ToolCall(call.clone()));
                self.tool_calls.insert(call_id.clone(), call);
                self.end_message();
                Step::Send(line)
            }
            EventKind::ToolCallProgress { call_id, .. } | EventKind::ToolCallCompleted { call_id, .. } if public => {
                let Some(update) = translate::translate(event, self.entry.setup.client_capabilities()) else {
                    return Step::Skip;
                };
                if let (SessionUpdate::ToolCallUpdate(update), Some(call)) = (&update, self.tool_calls.get_mut(call_id))
                {
                    call.update(update.fields.clone());
                }
                self.end_message();
                Step::Send(translate::update_line(&self.entry.id, update))
            }
            EventKind::TokenDelta { text, channel } if public && self.message_ids.is_some() => {
                // v2: the chunk with its message's id, written as v1's is.
                let id = self.message_ids.as_mut().map(|ids| ids.chunk_json(ChunkKind::of_channel(*channel)));
                Step::Send(translate::text_chunk_line(&self.entry.update_head, *channel, id, text))
            }
            _ => {
                let line = translate::live_update_line(
                    &self.entry.id,
                    &self.entry.update_head,
                    event,
                    self.entry.setup.client_capabilities(),
                );
                let plan = matches!(
                    event.kind,
                    EventKind::PlanUpdated { .. } | EventKind::PlanChanged { .. } | EventKind::PlanRemoved { .. }
                );
                if plan && line.is_some() {
                    self.end_message();
                }
                line.map_or(Step::Skip, Step::Send)
            }
        }
    }

    /// A tool call or a plan is sent: on a v2 connection, the next chunk starts a new message.
    fn end_message(&mut self) {
        if let Some(ids) = &mut self.message_ids {
            ids.interrupt();
        }
    }
}

/// Marks the end of a prompt's forwarding when dropped (on every way out of the prompt).
struct StopForwarding<'a>(&'a crate::client::link::Forwarding);

impl Drop for StopForwarding<'_> {
    fn drop(&mut self) {
        self.0.stop();
    }
}

/// What [`Drain::until_terminal`] does next. Small on purpose (the rare payloads are boxed): it
/// is kept while a permission request is awaited, inside every prompt's future.
enum Step {
    /// Nothing: a decoy, or an event without a live form.
    Skip,
    /// Queue this `session/update` line.
    Send(Vec<u8>),
    /// A cancellation arrived: interrupt the host's turn.
    Interrupt,
    /// Ask the client about this gate.
    Gate(Box<crate::harness::Gate>),
    /// Apply the host's own changes of the session that are waiting.
    Control,
    /// The turn is over: answer the prompt with this stop reason.
    Finish(StopReason),
    /// The turn is over: answer the prompt with this error.
    Fail(Box<Error>),
}

impl Step {
    fn fail(error: Error) -> Self {
        Self::Fail(Box::new(error))
    }
}

/// `session/cancel`: cancels the session's in-flight prompt; a no-op when there is none.
///
/// Synchronous on purpose: it runs on the connection's reader, so it takes effect before any
/// later message (such as the next `session/prompt`) is accepted.
pub(crate) fn cancel(agent: &AgentInner, params: Params) {
    let notification: CancelNotification = match decode_params(params) {
        Ok(n) => n,
        Err(e) => {
            tracing::warn!(error = %e.message, "malformed `session/cancel`; ignored");
            return;
        }
    };
    match agent.resolve_session(&notification.session_id) {
        Ok(entry) => {
            if !entry.cancel_prompt() {
                tracing::debug!(session = %entry.id, "`session/cancel` with no prompt in flight");
            }
        }
        Err(e) => tracing::warn!(error = %e.message, "`session/cancel` for no live session; ignored"),
    }
}
