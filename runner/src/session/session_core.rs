//! The core of a runner session: what its turns reach. The session's facts (id, working
//! directory, MCP servers, config options, slash commands, the facade's control of it), its events
//! (built, numbered by the hub, journaled, delivered: the journaling rules are in the
//! [`session`](crate::session) module doc), its open gates, and the cancellation of its running
//! turn.
//!
//! A [`RunnerSession`](crate::RunnerSession) owns one and runs the turns; a [`Turn`](crate::Turn)
//! holds it as well, so the turn API needs nothing of the session that runs it (the two would
//! otherwise use each other).
//!
//! Invariant: an event is numbered and gathered into the journal before anyone receives it, and an
//! event that ends a turn, opens a gate or settles a compaction is delivered only once its batch
//! is written (or is delivered as the failure to write it).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use crate::history::{Conversation, HistoryPage, HistoryPosition, PageSource};
use crate::ids::event_id;
use crate::session::journal::{Journal, unrecorded};
use crate::store::Store;
use acp_facade::acp::{
    AvailableCommand, McpServer, SessionConfigId, SessionConfigKind, SessionConfigOption, SessionConfigOptionValue,
    SessionId, SystemPrompt,
};
use acp_facade::error::{Error, ErrorExt};
use acp_facade::harness::{
    Cause, CommandId, Coordinates, Event, EventClass, EventHeader, EventKind, GateId, GateResponse, LoopId, TurnId,
    Visibility,
};
use acp_facade::host::SessionControl;
use acp_facade::hub::{EventHub, HubFull};

/// The turn a session runs now: how to cancel it, and what fires once it has ended.
struct Running {
    cancel: CancellationToken,
    finished: CancellationToken,
}

/// What a session's turns share with it; see the module doc.
pub(crate) struct SessionCore {
    pub(crate) id: SessionId,
    cwd: PathBuf,
    /// The MCP servers of the request that opened the session.
    mcp_servers: Vec<McpServer>,
    /// The client's system prompt the session was opened with (or kept from before), replaced
    /// when the client reopens the live session with another; each turn reads it once, at its
    /// start.
    system_prompt: Mutex<Option<SystemPrompt>>,
    /// The session's host-defined slash commands.
    commands: Mutex<Vec<AvailableCommand>>,
    /// The facade's control of the session, once it serves it.
    control: Mutex<Option<Arc<dyn SessionControl>>>,
    pub(crate) hub: EventHub,
    running: Mutex<Option<Running>>,
    gates: Mutex<HashMap<GateId, oneshot::Sender<GateResponse>>>,
    /// The writer of the session's Enduring events.
    pub(crate) journal: Journal,
    /// Why the running turn must fail: a gate's batch could not be written.
    turn_failure: Mutex<Option<String>>,
    config: Mutex<Vec<SessionConfigOption>>,
    /// Events built, across restarts: numbers event ids.
    event_counter: AtomicU64,
    /// The session's conversation (its newest entries), folded from every Enduring event as it
    /// is journaled (see the `history` module).
    conversation: Mutex<Conversation>,
}

impl std::fmt::Debug for SessionCore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionCore").field("id", &self.id).finish_non_exhaustive()
    }
}

/// What a session starts with.
pub(crate) struct Opening {
    pub(crate) id: SessionId,
    pub(crate) cwd: PathBuf,
    pub(crate) mcp_servers: Vec<McpServer>,
    pub(crate) system_prompt: Option<SystemPrompt>,
    pub(crate) commands: Vec<AvailableCommand>,
    pub(crate) config: Vec<SessionConfigOption>,
    pub(crate) store: Arc<dyn Store>,
    pub(crate) subscriber_capacity: usize,
    /// The number of the session's next event (past its journal's, for a reopened session).
    pub(crate) next_event: u64,
    /// Its conversation so far (folded from its journal, for a reopened session).
    pub(crate) conversation: Conversation,
}

impl SessionCore {
    pub(crate) fn new(opening: Opening) -> Self {
        let Opening {
            id,
            cwd,
            mcp_servers,
            system_prompt,
            commands,
            config,
            store,
            subscriber_capacity,
            next_event,
            conversation,
        } = opening;
        Self {
            journal: Journal::new(id.clone(), store),
            id,
            cwd,
            mcp_servers,
            system_prompt: Mutex::new(system_prompt),
            commands: Mutex::new(commands),
            control: Mutex::default(),
            hub: EventHub::continuing(subscriber_capacity, next_event),
            running: Mutex::default(),
            gates: Mutex::default(),
            turn_failure: Mutex::default(),
            config: Mutex::new(config),
            event_counter: AtomicU64::new(next_event),
            conversation: Mutex::new(conversation),
        }
    }

    /// The session's working directory.
    pub(crate) fn cwd(&self) -> &Path {
        &self.cwd
    }

    /// The client's system prompt, if the session has one.
    pub(crate) fn system_prompt(&self) -> Option<SystemPrompt> {
        self.system_prompt.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }

    /// Replaces the client's system prompt (the store's copy is the caller's to write first).
    pub(crate) fn set_system_prompt(&self, system_prompt: SystemPrompt) {
        *self.system_prompt.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(system_prompt);
    }

    /// The MCP servers of the `session/new`, `load` or `resume` that opened the session, in order.
    pub(crate) fn mcp_servers(&self) -> &[McpServer] {
        &self.mcp_servers
    }

    /// The facade's control of the session, once a connection serves it.
    pub(crate) fn control(&self) -> Option<Arc<dyn SessionControl>> {
        self.control.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    pub(crate) fn set_control(&self, control: Arc<dyn SessionControl>) {
        *self.control.lock().unwrap_or_else(PoisonError::into_inner) = Some(control);
    }

    /// The facade's control, or `-32002` while no connection serves the session.
    pub(crate) fn served_control(&self) -> Result<Arc<dyn SessionControl>, Error> {
        self.control().ok_or_else(|| Error::unknown_session(&self.id.0))
    }

    /// The session's host-defined slash commands.
    pub(crate) fn commands(&self) -> Vec<AvailableCommand> {
        self.commands.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Replaces the session's host-defined slash commands; the client is told once they have been
    /// advertised (from the session's first prompt on).
    pub(crate) async fn set_commands(&self, commands: Vec<AvailableCommand>) -> Result<(), Error> {
        commands.clone_into(&mut self.commands.lock().unwrap_or_else(PoisonError::into_inner));
        match self.control() {
            Some(control) => control.set_commands(commands).await,
            None => Ok(()),
        }
    }

    /// The session's config options as they are now.
    pub(crate) fn config_options(&self) -> Vec<SessionConfigOption> {
        self.config.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    pub(crate) fn has_config_options(&self) -> bool {
        !self.config.lock().unwrap_or_else(PoisonError::into_inner).is_empty()
    }

    /// The current value of a select (or boolean) config option.
    pub(crate) fn config_value(&self, config_id: &str) -> Option<String> {
        let config = self.config.lock().unwrap_or_else(PoisonError::into_inner);
        config.iter().find(|o| o.id.0.as_ref() == config_id).and_then(|o| match &o.kind {
            SessionConfigKind::Select(select) => Some(select.current_value.0.to_string()),
            SessionConfigKind::Boolean(b) => Some(b.current_value.to_string()),
            _ => None,
        })
    }

    /// Sets one config option's value; `-32602` for an unknown option or a value of the wrong type.
    pub(crate) fn set_config_option(
        &self,
        config_id: &SessionConfigId,
        value: SessionConfigOptionValue,
    ) -> Result<(), Error> {
        let mut config = self.config.lock().unwrap_or_else(PoisonError::into_inner);
        let option = config
            .iter_mut()
            .find(|o| &o.id == config_id)
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
    /// Enduring events are journaled in batches (see the `session` module doc): a gate opening, a
    /// turn's terminal or a compaction result writes the batch, itself included, before it is
    /// delivered; other Enduring events wait for that or for
    /// [`JOURNAL_DELAY`](crate::JOURNAL_DELAY). When that write fails, a terminal or compaction
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
        // Each wait below is boxed and taken only when the hub is busy or a queue full, or to
        // write the journal: this future is part of every turn's, once per call of the turn API,
        // and a large future is a large allocation per turn.
        let event = self.build_event(class, visibility, command, at, kind);
        if class != EventClass::Enduring {
            if let Err(HubFull(event)) = self.hub.try_publish(event) {
                Box::pin(self.hub.publish(*event)).await;
            }
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
        let mut numbered = match self.hub.try_number(event) {
            Ok(numbered) => numbered,
            Err(event) => Box::pin(self.hub.number(event)).await,
        };
        self.journal.gather(numbered.event());
        self.conversation.lock().unwrap_or_else(PoisonError::into_inner).record(numbered.event());
        if flush
            && let Err(e) = Box::pin(self.journal.write_then(|last, e| {
                if let Some(kind) = unrecorded(&last.kind, e) {
                    last.kind = kind;
                }
            }))
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
        if let Err(numbered) = numbered.try_deliver() {
            Box::pin(numbered.deliver()).await;
        }
    }

    /// A page of the conversation before the running turn: at most `limit` entries ending
    /// before `before` (none: the newest). Served from the entries the session holds; a page
    /// reaching older ones writes the journal and folds it again from the store.
    pub(crate) async fn history_page(
        &self,
        before: Option<&HistoryPosition>,
        limit: usize,
    ) -> Result<HistoryPage, Error> {
        let source = self.conversation.lock().unwrap_or_else(PoisonError::into_inner).page(before, limit)?;
        let (epoch, start, end) = match source {
            PageSource::Held(page) => return Ok(page),
            PageSource::Journal { epoch, start, end } => (epoch, start, end),
        };
        // Unwritten events would be missing from the store's journal: write them first.
        self.journal.write().await?;
        let journal = self.journal.store().events(&self.id).await?;
        Conversation::of(&journal, usize::MAX).page_of_whole(epoch, start, end).ok_or_else(|| {
            Error::invalid_params_msg(
                "history position: the session was compacted since it was given; start again from the newest page",
            )
        })
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

    /// Answers an open gate; `-32602` when no gate of that id is open.
    pub(crate) fn answer_gate(&self, gate_id: &GateId, response: GateResponse) -> Result<(), Error> {
        let tx = self.gates.lock().unwrap_or_else(PoisonError::into_inner).remove(gate_id);
        match tx {
            Some(tx) => {
                let _ = tx.send(response);
                Ok(())
            }
            None => Err(Error::invalid_params_msg(format!("no open gate {gate_id}"))),
        }
    }

    /// Records a new running turn; `-32600` while one runs.
    pub(crate) fn start_running(&self, cancel: CancellationToken, finished: CancellationToken) -> Result<(), Error> {
        let mut running = self.running.lock().unwrap_or_else(PoisonError::into_inner);
        if running.is_some() {
            return Err(Error::invalid_request_msg(format!("session {} is already running a turn", self.id)));
        }
        *running = Some(Running { cancel, finished });
        Ok(())
    }

    /// The running turn has ended: the session takes a new prompt.
    pub(crate) fn clear_running(&self) {
        *self.running.lock().unwrap_or_else(PoisonError::into_inner) = None;
    }

    /// Cancels the running turn, if any; what fires once it has ended.
    pub(crate) fn cancel_running(&self) -> Option<CancellationToken> {
        let running = self.running.lock().unwrap_or_else(PoisonError::into_inner);
        running.as_ref().map(|r| {
            r.cancel.cancel();
            r.finished.clone()
        })
    }

    /// Makes the running turn fail with `reason` once it ends, and cancels it.
    fn fail_running_turn(&self, reason: String) {
        self.turn_failure.lock().unwrap_or_else(PoisonError::into_inner).get_or_insert(reason);
        self.cancel_running();
    }

    /// Why the turn that just ended must fail, if it must (taken: asked once per turn).
    pub(crate) fn take_turn_failure(&self) -> Option<String> {
        self.turn_failure.lock().unwrap_or_else(PoisonError::into_inner).take()
    }
}
