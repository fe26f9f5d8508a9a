//! A runner session: the [`LiveSession`] the runner hands the facade.
//!
//! It owns the session's [`EventHub`], journals every Enduring event to the
//! [`Store`](super::Store) through its journal writer, runs one turn at a time on its own task, and
//! answers gates through one-shot channels keyed by gate id.
//!
//! # Journaling
//!
//! Enduring events are written in batches, one store transaction each (see the `journal` module
//! for order and retries):
//! - before a gate opens, a turn ends (done, failed, interrupted) or a compaction result is
//!   delivered, the batch is written first — the client never sees a turn end, or is asked a
//!   question, that is not in the store;
//! - otherwise no later than [`JOURNAL_DELAY`](super::JOURNAL_DELAY) after the oldest unwritten
//!   event, while the turn waits (for a model, a tool, a slow client), written alongside the
//!   running turn.
//!
//! So a short turn costs one transaction, and a crash loses at most the last
//! [`JOURNAL_DELAY`](super::JOURNAL_DELAY) of a turn in progress — never its prompt once the turn
//! has run that long, never an earlier turn.
//!
//! An event is gathered once the hub has numbered it, before anyone receives it, so the journal
//! holds the `seq`s the client's stream had, in order. A session reopened from its journal
//! continues its numbering — turn ids, event ids and `seq`s — after the journal's last event.
//!
//! # When the store fails
//!
//! Nothing the client was told had succeeded is missing from the store:
//! - a turn whose last batch cannot be written ends as a failure (`session/prompt` answers
//!   `-32603` naming the store's error), never `end_turn`; a compaction's result becomes a
//!   rejection likewise; a gate whose batch cannot be written is not asked: the turn is cancelled
//!   and fails the same way;
//! - the unwritten batches are kept, and written before anything newer; a new prompt first writes
//!   them, and fails at once (`-32603`) if it cannot, so no new turn runs on a journal with a
//!   hole; a close writes them too, retrying while the store is unavailable;
//! - once the store refuses a write because another process took the session over (its owner
//!   lease had expired), the session is fenced off: its prompts fail with `-32600` and nothing
//!   more of it is written; load it again to continue.

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use futures::FutureExt;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::RunnerInner;
use super::journal::{Journal, unrecorded};
use super::live::retrying;
use super::store::StoreErrorKind;
use super::turn::Turn;
use crate::acp::{
    AvailableCommand, ContentBlock, McpServer, SessionConfigId, SessionConfigKind, SessionConfigOption,
    SessionConfigOptionValue, SessionId, StopReason,
};
use crate::client::Client;
use crate::error::{Error, ErrorCode, ErrorExt};
use crate::harness::{
    Cause, CommandId, Coordinates, Event, EventClass, EventHeader, EventId, EventKind, GateId, GateResponse, LoopId,
    Prompt, TurnId, UserMessage, Visibility,
};
use crate::host::{
    Compactor, EventStream, HostResult, LiveSession, RuntimeConfig, SessionCloser, SessionControl, SessionHistory,
    Setup,
};
use crate::hub::EventHub;
use crate::panic::panic_message;
use crate::time::now_rfc3339;

/// Where a session's numbering continues: nothing for a new session, its journal for a
/// reopened one.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct History {
    /// Turns already run (the next turn id continues after them).
    pub(crate) turns: u64,
    /// The `seq` (and event id number) of the next event: one past the journal's last.
    pub(crate) next_event: u64,
    /// Whether the session already has a title.
    pub(crate) has_title: bool,
}

impl History {
    /// The numbering of session `id` reopened with `journal` (its events in order).
    ///
    /// The next event number is past every journaled `seq` and every journaled event id's number:
    /// ids are numbered as events are built, `seq`s as they are delivered, and an event that a
    /// full queue turned away (`try_text`) used up an id but no `seq`.
    pub(crate) fn of(id: &SessionId, journal: &[Event], has_title: bool) -> Self {
        let id_number = |e: &Event| -> Option<u64> {
            e.header.id.as_str().strip_prefix(id.0.as_ref())?.strip_prefix('#')?.parse().ok()
        };
        Self {
            turns: u64::try_from(journal.iter().filter(|e| matches!(e.kind, EventKind::TurnStarted { .. })).count())
                .unwrap_or(u64::MAX),
            next_event: journal
                .iter()
                .flat_map(|e| [Some(e.header.seq), id_number(e)])
                .flatten()
                .map(|n| n.saturating_add(1))
                .max()
                .unwrap_or(0),
            has_title,
        }
    }
}

struct Running {
    cancel: CancellationToken,
    finished: CancellationToken,
}

/// One session run by the [`Runner`](super::Runner).
pub struct RunnerSession {
    id: SessionId,
    cwd: PathBuf,
    /// The session's handle on the client; each turn gets one scoped to it.
    client: Client,
    /// The MCP servers of the request that opened the session.
    mcp_servers: Vec<McpServer>,
    /// The session's host-defined slash commands.
    commands: Mutex<Vec<AvailableCommand>>,
    /// The facade's control of the session, once it serves it.
    control: Mutex<Option<Arc<dyn SessionControl>>>,
    runner: Arc<RunnerInner>,
    hub: EventHub,
    running: Mutex<Option<Running>>,
    gates: Mutex<HashMap<GateId, oneshot::Sender<GateResponse>>>,
    /// The writer of the session's Enduring events (see the module doc).
    journal: Journal,
    /// Why the running turn must fail: a gate's batch could not be written.
    turn_failure: Mutex<Option<String>>,
    config: Mutex<Vec<SessionConfigOption>>,
    /// Turns started, across restarts: numbers turn ids.
    counter: AtomicU64,
    /// Events built, across restarts: numbers event ids.
    event_counter: AtomicU64,
    has_title: std::sync::atomic::AtomicBool,
}

impl std::fmt::Debug for RunnerSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunnerSession").field("id", &self.id).finish_non_exhaustive()
    }
}

impl Drop for RunnerSession {
    fn drop(&mut self) {
        let unwritten = self.journal.unwritten();
        if unwritten > 0 && self.journal.fenced().is_none() {
            tracing::error!(session = %self.id, events = unwritten, "a session went away with events not journaled");
        }
        // Dropped without being closed (the facade could not serve it): its claim goes back.
        if let Some(release) = self.runner.live().begin_release(&self.id, self) {
            self.runner.live().spawn_release(release);
        }
    }
}

impl RunnerSession {
    pub(crate) fn new(runner: Arc<RunnerInner>, id: SessionId, setup: &Setup, history: History) -> Arc<Self> {
        let config = runner.turns.config_options();
        let commands = runner.turns.commands();
        Arc::new(Self {
            journal: Journal::new(id.clone(), runner.store.clone()),
            id,
            cwd: setup.cwd().to_path_buf(),
            client: setup.client().clone(),
            mcp_servers: setup.mcp_servers().to_vec(),
            commands: Mutex::new(commands),
            control: Mutex::default(),
            hub: EventHub::continuing(runner.subscriber_capacity, history.next_event),
            runner,
            running: Mutex::default(),
            gates: Mutex::default(),
            turn_failure: Mutex::default(),
            config: Mutex::new(config),
            counter: AtomicU64::new(history.turns),
            event_counter: AtomicU64::new(history.next_event),
            has_title: std::sync::atomic::AtomicBool::new(history.has_title),
        })
    }

    pub(crate) fn session_id(&self) -> &SessionId {
        &self.id
    }

    /// The session's working directory.
    pub fn cwd(&self) -> &Path {
        &self.cwd
    }

    /// The session's handle on the client (see [`Client`]); a turn's own is [`Turn::client`].
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The session's event hub.
    pub fn hub(&self) -> &EventHub {
        &self.hub
    }

    /// The MCP servers of the `session/new`, `load` or `resume` that opened the session, in order.
    pub fn mcp_servers(&self) -> &[McpServer] {
        &self.mcp_servers
    }

    /// The facade's control of the session, once a connection serves it (see
    /// [`SessionControl`]): the way to change the session's mode, options or commands yourself.
    pub fn control(&self) -> Option<Arc<dyn SessionControl>> {
        self.control.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Replaces the session's host-defined slash commands; the client is told once they have been
    /// advertised (from the session's first prompt on).
    pub async fn set_commands(&self, commands: Vec<AvailableCommand>) -> Result<(), Error> {
        commands.clone_into(&mut self.commands.lock().unwrap_or_else(PoisonError::into_inner));
        match self.control() {
            Some(control) => control.set_commands(commands).await,
            None => Ok(()),
        }
    }

    /// The facade's control, or `-32002` while no connection serves the session.
    pub(crate) fn served_control(&self) -> Result<Arc<dyn SessionControl>, Error> {
        self.control().ok_or_else(|| Error::session_not_found(&self.id.0))
    }

    /// The current value of a select config option.
    pub fn config_value(&self, config_id: &str) -> Option<String> {
        let config = self.config.lock().unwrap_or_else(PoisonError::into_inner);
        config.iter().find(|o| o.id.0.as_ref() == config_id).and_then(|o| match &o.kind {
            SessionConfigKind::Select(select) => Some(select.current_value.0.to_string()),
            SessionConfigKind::Boolean(b) => Some(b.current_value.to_string()),
            _ => None,
        })
    }

    fn build_event(
        &self,
        class: EventClass,
        visibility: Visibility,
        command: Option<&CommandId>,
        at: Option<(&LoopId, &TurnId)>,
        kind: EventKind,
    ) -> Event {
        let n = self.event_counter.fetch_add(1, Ordering::Relaxed);
        Event {
            header: EventHeader {
                id: event_id(&self.id, n),
                seq: 0,
                class,
                visibility,
                cause: Cause { command_id: command.cloned() },
                coordinates: Coordinates { loop_id: at.map(|(l, _)| l.clone()), turn_id: at.map(|(_, t)| t.clone()) },
            },
            kind,
        }
    }

    /// Publishes an event.
    ///
    /// Enduring events are journaled in batches (see the module doc): a gate opening, a turn's
    /// terminal or a compaction result writes the batch, itself included, before it is
    /// delivered; other Enduring events wait for that or for
    /// [`JOURNAL_DELAY`](super::JOURNAL_DELAY). When that write fails, a terminal or compaction
    /// result is delivered as a failure instead and a gate is not delivered at all (the turn is
    /// cancelled and will fail).
    pub(crate) async fn publish(
        &self,
        class: EventClass,
        visibility: Visibility,
        command: Option<&CommandId>,
        at: Option<(&LoopId, &TurnId)>,
        kind: EventKind,
    ) {
        let event = self.build_event(class, visibility, command, at, kind);
        if class != EventClass::Enduring {
            self.hub.publish(event).await;
            return;
        }
        let flush = matches!(
            event.kind,
            EventKind::GateOpened { .. }
                | EventKind::TurnDone { .. }
                | EventKind::TurnFailed { .. }
                | EventKind::TurnInterrupted {}
                | EventKind::CompactWaiterResolved {}
                | EventKind::CompactWaiterRejected { .. }
        );
        // Journaled once the hub has numbered it: the journal keeps the live `seq`s, in order.
        let mut numbered = self.hub.number(event).await;
        self.journal.gather(numbered.event());
        if flush
            && let Err(e) = self
                .journal
                .write_then(|last, e| {
                    if let Some(kind) = unrecorded(&last.kind, e) {
                        last.kind = kind;
                    }
                })
                .await
        {
            tracing::error!(session = %self.id, error = %e, "could not journal events");
            if let EventKind::GateOpened { .. } = numbered.event().kind {
                self.fail_running_turn(format!(
                    "the turn failed: the session store could not record its question: {}",
                    e.message()
                ));
                return;
            }
            if let Some(kind) = unrecorded(&numbered.event().kind, &e) {
                numbered.set_kind(kind);
            }
        }
        numbered.deliver().await;
    }

    /// Makes the running turn fail with `reason` once it ends, and cancels it.
    fn fail_running_turn(&self, reason: String) {
        self.turn_failure.lock().unwrap_or_else(PoisonError::into_inner).get_or_insert(reason);
        self.cancel_running();
    }

    /// Publishes an Ephemeral public event without waiting; on a full queue the event's payload
    /// comes back untouched.
    pub(crate) fn try_publish_ephemeral(&self, at: (&LoopId, &TurnId), kind: EventKind) -> Result<(), EventKind> {
        let event = self.build_event(EventClass::Ephemeral, Visibility::Public, None, Some(at), kind);
        self.hub.try_publish(event).map_err(|full| full.0.kind)
    }

    pub(crate) fn open_gate(&self, gate_id: GateId, tx: oneshot::Sender<GateResponse>) {
        self.gates.lock().unwrap_or_else(PoisonError::into_inner).insert(gate_id, tx);
    }

    pub(crate) fn forget_gate(&self, gate_id: &GateId) {
        self.gates.lock().unwrap_or_else(PoisonError::into_inner).remove(gate_id);
    }

    /// Answers an open gate (also the way a product answers ask-user gates out of band).
    pub fn answer_gate(&self, gate_id: &GateId, response: GateResponse) -> Result<(), Error> {
        let tx = self.gates.lock().unwrap_or_else(PoisonError::into_inner).remove(gate_id);
        match tx {
            Some(tx) => {
                let _ = tx.send(response);
                Ok(())
            }
            None => Err(Error::invalid_params_msg(format!("no open gate {gate_id}"))),
        }
    }

    /// Cancels the running turn, if any.
    fn cancel_running(&self) -> Option<CancellationToken> {
        let running = self.running.lock().unwrap_or_else(PoisonError::into_inner);
        running.as_ref().map(|r| {
            r.cancel.cancel();
            r.finished.clone()
        })
    }

    /// Writes what the journal holds now; a failure is logged and the batch kept for the next
    /// write (the turn's end, at the latest).
    async fn write_journal_now(&self) {
        if let Err(e) = self.journal.write().await {
            tracing::warn!(session = %self.id, error = %e, "could not journal events yet");
        }
    }

    /// Closing: writes what is left of the journal, then gives the session's claim back to the
    /// store (see the `live` module), both from a task of its own — a close that outlives its
    /// grace period still finishes them — which this waits for. Nothing happens unless this is
    /// the live session of its id.
    async fn give_back(&self) {
        let live = self.runner.live();
        let Some(this) = live.get(&self.id).filter(|s| std::ptr::eq(Arc::as_ptr(s), self)) else {
            return;
        };
        let Some(release) = live.begin_release(&self.id, self) else {
            return;
        };
        let live = live.clone();
        let task = tokio::spawn(async move {
            if let Err(e) = retrying(&this.id, "write its last events", || this.journal.write()).await {
                tracing::error!(session = %this.id, error = %e, "the session's last events were not journaled");
            }
            drop(this);
            live.release(release).await;
        });
        let _ = task.await;
    }

    /// Before a turn starts: the session still belongs to this process, and nothing earlier
    /// waits to be journaled (a new turn never runs on a journal with a hole).
    async fn journal_ready(&self) -> Result<(), Error> {
        if let Some(fenced) = self.journal.fenced() {
            return Err(Error::invalid_request_msg(format!(
                "session {} is no longer live here: {}; load it again",
                self.id,
                fenced.message()
            )));
        }
        if self.journal.has_backlog()
            && let Err(e) = self.journal.write().await
        {
            return Err(match e.kind() {
                StoreErrorKind::NotOwner => Error::invalid_request_msg(format!(
                    "session {} is no longer live here: {}; load it again",
                    self.id,
                    e.message()
                )),
                _ => Error::internal_msg(format!(
                    "session {}: earlier events could not be journaled, so no new turn starts: {}",
                    self.id,
                    e.message()
                )),
            });
        }
        Ok(())
    }

    async fn run(self: Arc<Self>, turn: Turn, finished: CancellationToken) {
        let prompt_text = turn.prompt_text();
        let at = (&turn.loop_id, &turn.turn_id);
        let now = now_rfc3339();
        let title = if self.has_title.load(Ordering::Acquire) { None } else { self.runner.turns.title(&prompt_text) };
        // Recorded in the same transaction as the turn's start.
        self.journal.touch_with_next_batch(title.clone(), now.clone());
        self.publish(
            EventClass::Enduring,
            Visibility::Public,
            Some(&turn.command),
            Some(at),
            EventKind::TurnStarted { message: UserMessage { content: turn.prompt().to_vec() } },
        )
        .await;
        if let Some(title) = title {
            self.has_title.store(true, Ordering::Release);
            turn.emit(
                EventClass::Ephemeral,
                EventKind::SessionMetaChanged { title: Some(title), updated_at: Some(now) },
            )
            .await;
        }
        let outcome = {
            let run_turn = AssertUnwindSafe(self.runner.turns.run_turn(&turn)).catch_unwind();
            tokio::pin!(run_turn);
            // A write started by the journal clock runs alongside the turn (which may be waiting
            // for it to publish) and is never abandoned half-way.
            let mut writing: Option<Pin<Box<dyn Future<Output = ()> + Send + '_>>> = None;
            let outcome = loop {
                // The turn first: one that ends without waiting never starts the journal clock.
                tokio::select! {
                    biased;
                    outcome = &mut run_turn => break outcome,
                    () = self.journal.deadline(), if writing.is_none() => {
                        writing = Some(Box::pin(self.write_journal_now()));
                    }
                    Some(()) = futures::future::OptionFuture::from(writing.as_mut()), if writing.is_some() => {
                        writing = None;
                    }
                }
            };
            if let Some(write) = writing {
                write.await;
            }
            outcome
        };
        // The turn's terminals not released yet are released now (killed first when cancelled),
        // before anyone hears that the turn ended.
        turn.client().release_terminals().await;
        turn.end_step().await;
        let cancelled = turn.is_cancelled();
        let failure = self.turn_failure.lock().unwrap_or_else(PoisonError::into_inner).take();
        let terminal = match (failure, outcome) {
            // A question that could not be journaled cancelled the turn: it failed.
            (Some(error), _) => EventKind::TurnFailed { error },
            (None, Ok(Ok(StopReason::Cancelled))) => EventKind::TurnInterrupted {},
            (None, Ok(Ok(_) | Err(_))) if cancelled => EventKind::TurnInterrupted {},
            // A turn that gives up because a call of it was cancelled (the client went away
            // before the interrupt reached the turn) is a cancelled turn.
            (None, Ok(Err(e))) if e.code == ErrorCode::RequestCancelled => EventKind::TurnInterrupted {},
            (None, Ok(Ok(stop))) => EventKind::TurnDone { message: None, stop: Some(stop) },
            (None, Ok(Err(e))) => EventKind::TurnFailed { error: e.message },
            (None, Err(panic)) => {
                EventKind::TurnFailed { error: format!("the turn panicked: {}", panic_message(&*panic)) }
            }
        };
        // Clear the slot before the terminal is seen, so the client's next prompt is accepted.
        *self.running.lock().unwrap_or_else(PoisonError::into_inner) = None;
        turn.emit(EventClass::Enduring, terminal).await;
        finished.cancel();
    }
}

/// `<session>#<n>`: an event's id (built once per streamed token; see [`numbered`]).
fn event_id(session: &SessionId, n: u64) -> EventId {
    EventId::new(numbered(&session.0, "#", n))
}

/// `<prefix><separator><n>`, built without the formatting machinery (this runs for every event
/// and twice per turn): the digits on the stack, the id assembled in a stack buffer and copied
/// once into the id's shared allocation (a long prefix takes the heap path).
fn numbered(prefix: &str, separator: &str, n: u64) -> Arc<str> {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    let mut rest = n;
    loop {
        at -= 1;
        digits[at] = b'0' + u8::try_from(rest % 10).unwrap_or(0);
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    let digits = &digits[at..];
    let len = prefix.len() + separator.len() + digits.len();
    let mut buffer = [0u8; 96];
    if let Some(text) = buffer.get_mut(..len) {
        let (head, tail) = text.split_at_mut(prefix.len());
        head.copy_from_slice(prefix.as_bytes());
        let (middle, end) = tail.split_at_mut(separator.len());
        middle.copy_from_slice(separator.as_bytes());
        end.copy_from_slice(digits);
        if let Ok(text) = std::str::from_utf8(text) {
            return Arc::from(text);
        }
    }
    let mut text = String::with_capacity(len);
    text.push_str(prefix);
    text.push_str(separator);
    text.extend(digits.iter().map(|&d| char::from(d)));
    Arc::from(text)
}

#[async_trait]
impl LiveSession for RunnerSession {
    fn id(&self) -> SessionId {
        self.id.clone()
    }

    fn subscribe_events(&self) -> HostResult<EventStream> {
        Ok(self.hub.subscribe())
    }

    async fn submit(&self, prompt: Vec<ContentBlock>) -> HostResult<CommandId> {
        self.submit_prompt(Prompt::new(prompt)).await
    }

    async fn submit_prompt(&self, prompt: Prompt) -> HostResult<CommandId> {
        let this = self
            .runner
            .live_session(&self.id)
            .ok_or_else(|| Error::invalid_request_msg(format!("session {} is closed", self.id)))?;
        self.journal_ready().await?;
        let cancel = CancellationToken::new();
        let finished = CancellationToken::new();
        {
            let mut running = self.running.lock().unwrap_or_else(PoisonError::into_inner);
            if running.is_some() {
                return Err(Error::invalid_request_msg(format!("session {} is already running a turn", self.id)));
            }
            *running = Some(Running { cancel: cancel.clone(), finished: finished.clone() });
        }
        let n = self.counter.fetch_add(1, Ordering::Relaxed) + 1;
        let command = CommandId::new(numbered(&self.id.0, "/c", n));
        // The turn's calls to the client go out after the updates of what it published before.
        let hub = Arc::downgrade(&this);
        let client = self
            .client
            .scoped(cancel.clone())
            .in_order_with(Arc::new(move || hub.upgrade().map_or(0, |session| session.hub.published())));
        let turn = Turn::new(this.clone(), command.clone(), TurnId::new(numbered("", "t", n)), prompt, cancel, client);
        // Boxed: the turn's future is large, and a task moves its future several times on the way
        // into its cell (and writes a stage as large as it when it ends); a box moves a pointer.
        tokio::spawn(Box::pin(this.run(turn, finished)));
        Ok(command)
    }

    async fn interrupt(&self) -> HostResult<()> {
        self.cancel_running();
        Ok(())
    }

    async fn respond_gate(&self, gate_id: GateId, response: GateResponse) -> HostResult<()> {
        self.answer_gate(&gate_id, response)
    }

    fn closer(&self) -> Option<&dyn SessionCloser> {
        Some(self)
    }

    fn compactor(&self) -> Option<&dyn Compactor> {
        self.runner.turns.supports_compaction().then_some(self as &dyn Compactor)
    }

    fn config(&self) -> Option<&dyn RuntimeConfig> {
        let has_options = !self.config.lock().unwrap_or_else(PoisonError::into_inner).is_empty();
        has_options.then_some(self as &dyn RuntimeConfig)
    }

    fn history(&self) -> Option<&dyn SessionHistory> {
        Some(self)
    }

    fn commands(&self) -> Vec<AvailableCommand> {
        self.commands.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    fn set_control(&self, control: Arc<dyn SessionControl>) {
        *self.control.lock().unwrap_or_else(PoisonError::into_inner) = Some(control);
    }
}

#[async_trait]
impl SessionHistory for RunnerSession {
    /// The journal, once every event published so far is in it.
    async fn history(&self) -> HostResult<Vec<Event>> {
        // Unwritten events would be missing from what the store tells: write them first (a store
        // that cannot is an error, not a silently shorter history).
        self.journal.write().await?;
        Ok(self.runner.store.events(&self.id).await?)
    }
}

#[async_trait]
impl SessionCloser for RunnerSession {
    async fn shutdown(&self) -> HostResult<()> {
        if let Some(finished) = self.cancel_running() {
            finished.cancelled().await;
        }
        self.give_back().await;
        Ok(())
    }
}

#[async_trait]
impl Compactor for RunnerSession {
    async fn compact(&self) -> HostResult<CommandId> {
        let this = self
            .runner
            .live_session(&self.id)
            .ok_or_else(|| Error::invalid_request_msg(format!("session {} is closed", self.id)))?;
        let n = self.counter.fetch_add(1, Ordering::Relaxed) + 1;
        let command = CommandId::new(format!("{}/c{n}", self.id));
        let reply_to = command.clone();
        tokio::spawn(async move {
            let outcome = AssertUnwindSafe(this.runner.turns.compact(&this)).catch_unwind().await;
            let kind = match outcome {
                Ok(Ok(())) => EventKind::CompactWaiterResolved {},
                Ok(Err(e)) => EventKind::CompactWaiterRejected { reason: e.message },
                Err(panic) => EventKind::CompactWaiterRejected { reason: panic_message(&*panic) },
            };
            this.publish(EventClass::Enduring, Visibility::Public, Some(&reply_to), None, kind).await;
        });
        Ok(command)
    }
}

#[async_trait]
impl RuntimeConfig for RunnerSession {
    async fn snapshot(&self) -> HostResult<Vec<SessionConfigOption>> {
        Ok(self.config.lock().unwrap_or_else(PoisonError::into_inner).clone())
    }

    async fn set_option(&self, config_id: SessionConfigId, value: SessionConfigOptionValue) -> HostResult<()> {
        let mut config = self.config.lock().unwrap_or_else(PoisonError::into_inner);
        let option = config
            .iter_mut()
            .find(|o| o.id == config_id)
            .ok_or_else(|| Error::invalid_params_msg(format!("unknown config option `{config_id}`")))?;
        match (&mut option.kind, value) {
            (SessionConfigKind::Select(select), SessionConfigOptionValue::ValueId { value }) => {
                select.current_value = value;
            }
            (SessionConfigKind::Boolean(boolean), SessionConfigOptionValue::Boolean { value }) => {
                boolean.current_value = value;
            }
            _ => return Err(Error::invalid_params_msg(format!("wrong value type for `{config_id}`"))),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_ids_join_session_and_number() {
        assert_eq!(event_id(&SessionId::new("s"), 0).as_str(), "s#0");
        assert_eq!(event_id(&SessionId::new("sess_0a1b"), 1_234_567).as_str(), "sess_0a1b#1234567");
        assert_eq!(event_id(&SessionId::new("é"), u64::MAX).as_str(), "é#18446744073709551615");
        // Longer than the stack buffer: the same id, built on the heap.
        let long = "x".repeat(200);
        assert_eq!(event_id(&SessionId::new(long.as_str()), 42).as_str(), format!("{long}#42"));
    }

    #[test]
    fn command_and_turn_ids_are_numbered_like_format() {
        for n in [0, 7, 10, 1_234_567, u64::MAX] {
            assert_eq!(&*numbered("sess_0a1b", "/c", n), format!("sess_0a1b/c{n}"));
            assert_eq!(&*numbered("", "t", n), format!("t{n}"));
        }
        let long = "é".repeat(100);
        assert_eq!(&*numbered(&long, "/c", 3), format!("{long}/c3"));
    }

    #[test]
    fn a_reopened_session_numbers_past_every_journaled_seq_and_id() {
        let sid = SessionId::new("s");
        let journaled = |id: &str, seq: u64, kind: EventKind| Event {
            header: EventHeader {
                id: EventId::new(id),
                seq,
                class: EventClass::Enduring,
                visibility: Visibility::Public,
                cause: Cause::default(),
                coordinates: Coordinates::default(),
            },
            kind,
        };
        let started = || EventKind::TurnStarted { message: UserMessage { content: Vec::new() } };
        assert_eq!((History::of(&sid, &[], false).next_event, History::of(&sid, &[], false).turns), (0, 0));
        // Ids ahead of seqs (turned-away token deltas used up ids 3 and 4), and ids not ours.
        let journal = [
            journaled("s#0", 0, started()),
            journaled("s#5", 2, EventKind::TurnInterrupted {}),
            journaled("other#99", 3, started()),
            journaled("s#x", 4, EventKind::TurnInterrupted {}),
        ];
        let history = History::of(&sid, &journal, true);
        assert_eq!((history.next_event, history.turns, history.has_title), (6, 2, true));
        let journal = [journaled("s#1", 9, started())];
        assert_eq!(History::of(&sid, &journal, false).next_event, 10, "past the seq when it is ahead");
    }
}
