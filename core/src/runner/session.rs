//! A runner session: the [`LiveSession`] the runner hands the facade.
//!
//! It owns the session's [`EventHub`], journals every Enduring event to the
//! [`Store`](super::Store), runs one turn at a time on its own task, and answers gates through
//! one-shot channels keyed by gate id.
//!
//! # Journaling
//!
//! Enduring events are written in batches, one store transaction each (see
//! `RunnerSession::publish`):
//! - before a gate opens, a turn ends (done, failed, interrupted) or a compaction result is
//!   delivered, the batch is written first — the client never sees a turn end, or is asked a
//!   question, that is not on disk;
//! - otherwise no later than [`JOURNAL_DELAY`] after the oldest unwritten event, while the turn
//!   waits (for a model, a tool, a slow client).
//!
//! So a short turn costs one transaction, and a crash loses at most the last [`JOURNAL_DELAY`] of
//! a turn in progress — never its prompt once the turn has run that long, never an earlier turn.
//! Batches are written under the lock that gathers them, so they reach the store in order.
//!
//! An event is gathered once the hub has numbered it, before anyone receives it, so the journal
//! holds the `seq`s the client's stream had, in order. A session reopened from its journal
//! continues its numbering — turn ids, event ids and `seq`s — after the journal's last event.

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use futures::FutureExt;
use tokio::sync::{Notify, oneshot};
use tokio_util::sync::CancellationToken;

use super::RunnerInner;
use super::turn::Turn;
use crate::acp::{
    ContentBlock, SessionConfigId, SessionConfigKind, SessionConfigOption, SessionConfigOptionValue, SessionId,
    StopReason,
};
use crate::error::{Error, ErrorExt};
use crate::harness::{
    Cause, CommandId, Coordinates, Event, EventClass, EventHeader, EventId, EventKind, GateId, GateResponse, LoopId,
    TurnId, UserMessage, Visibility,
};
use crate::host::{Compactor, EventStream, HostResult, LiveSession, RuntimeConfig, SessionCloser, SessionHistory};
use crate::hub::EventHub;
use crate::panic::panic_message;
use crate::time::now_rfc3339;

/// How long an Enduring event may wait for its batch to be written while its turn runs on.
pub const JOURNAL_DELAY: Duration = Duration::from_millis(10);

/// Enduring events published but not yet journaled, and the catalog update to write with them.
#[derive(Default)]
struct Unjournaled {
    events: Vec<Event>,
    /// Title (when new) and update time of the session, recorded with the next batch.
    touch: Option<(Option<String>, String)>,
}

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
    runner: Arc<RunnerInner>,
    hub: EventHub,
    running: Mutex<Option<Running>>,
    gates: Mutex<HashMap<GateId, oneshot::Sender<GateResponse>>>,
    /// Enduring events published but not yet journaled (see [`RunnerSession::publish`]).
    unjournaled: Mutex<Unjournaled>,
    /// Signalled when an event arrives in an empty [`RunnerSession::unjournaled`]: starts the
    /// [`JOURNAL_DELAY`] clock of the running turn.
    unjournaled_arrived: Notify,
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

impl RunnerSession {
    pub(crate) fn new(runner: Arc<RunnerInner>, id: SessionId, cwd: PathBuf, history: History) -> Arc<Self> {
        let config = runner.turns.config_options();
        Arc::new(Self {
            id,
            cwd,
            hub: EventHub::continuing(runner.subscriber_capacity, history.next_event),
            runner,
            running: Mutex::default(),
            gates: Mutex::default(),
            unjournaled: Mutex::default(),
            unjournaled_arrived: Notify::new(),
            config: Mutex::new(config),
            counter: AtomicU64::new(history.turns),
            event_counter: AtomicU64::new(history.next_event),
            has_title: std::sync::atomic::AtomicBool::new(history.has_title),
        })
    }

    /// The session's working directory.
    pub fn cwd(&self) -> &Path {
        &self.cwd
    }

    /// The session's event hub.
    pub fn hub(&self) -> &EventHub {
        &self.hub
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
    /// delivered; other Enduring events wait for that or for [`JOURNAL_DELAY`]. A journal
    /// failure is logged and the event still delivered, so the live client sees what happened.
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
        self.hub
            .publish_numbered(event, |event| {
                let mut pending = self.unjournaled.lock().unwrap_or_else(PoisonError::into_inner);
                let first = pending.events.is_empty();
                pending.events.push(event.clone());
                if flush {
                    self.write_journal(&mut pending);
                } else if first {
                    self.unjournaled_arrived.notify_one();
                }
            })
            .await;
    }

    /// Records a title (when new) and the update time with the next journal batch.
    fn touch_with_next_batch(&self, title: Option<String>, at: String) {
        self.unjournaled.lock().unwrap_or_else(PoisonError::into_inner).touch = Some((title, at));
    }

    /// Writes the unjournaled events, if any, as one batch.
    fn flush_journal(&self) {
        self.write_journal(&mut self.unjournaled.lock().unwrap_or_else(PoisonError::into_inner));
    }

    /// Writes `pending` (the locked batch) to the store and empties it; the lock is held for the
    /// write so that batches reach the store in the order they were gathered.
    fn write_journal(&self, pending: &mut Unjournaled) {
        if pending.events.is_empty() {
            return;
        }
        let journaled = match pending.touch.take() {
            Some((title, at)) => {
                self.runner.store.append_events_and_touch(&self.id, &pending.events, title.as_deref(), &at)
            }
            None => self.runner.store.append_events(&self.id, &pending.events),
        };
        pending.events.clear();
        if let Err(e) = journaled {
            tracing::error!(session = %self.id, error = %e, "could not journal events");
        }
    }

    /// Completes [`JOURNAL_DELAY`] after an event is waiting to be journaled.
    async fn journal_deadline(&self) {
        self.unjournaled_arrived.notified().await;
        tokio::time::sleep(JOURNAL_DELAY).await;
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

    async fn run(self: Arc<Self>, turn: Turn, finished: CancellationToken) {
        let prompt_text = turn.prompt_text();
        let at = (&turn.loop_id, &turn.turn_id);
        let now = now_rfc3339();
        let title = if self.has_title.load(Ordering::Acquire) { None } else { self.runner.turns.title(&prompt_text) };
        // Recorded in the same transaction as the turn's start.
        self.touch_with_next_batch(title.clone(), now.clone());
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
            loop {
                // The turn first: one that ends without waiting never starts the journal clock.
                tokio::select! {
                    biased;
                    outcome = &mut run_turn => break outcome,
                    () = self.journal_deadline() => self.flush_journal(),
                }
            }
        };
        turn.end_step().await;
        let cancelled = turn.is_cancelled();
        let terminal = match outcome {
            Ok(Ok(StopReason::Cancelled)) => EventKind::TurnInterrupted {},
            Ok(Ok(_) | Err(_)) if cancelled => EventKind::TurnInterrupted {},
            Ok(Ok(stop)) => EventKind::TurnDone { message: None, stop: Some(stop) },
            Ok(Err(e)) => EventKind::TurnFailed { error: e.message },
            Err(panic) => EventKind::TurnFailed { error: format!("the turn panicked: {}", panic_message(&*panic)) },
        };
        // Clear the slot before the terminal is seen, so the client's next prompt is accepted.
        *self.running.lock().unwrap_or_else(PoisonError::into_inner) = None;
        turn.emit(EventClass::Enduring, terminal).await;
        finished.cancel();
    }
}

/// `<session>#<n>`, built without the formatting machinery (this runs once per streamed token):
/// the digits on the stack, the id assembled in a stack buffer and copied once into the id's
/// shared allocation (a long session id takes the heap path).
fn event_id(session: &SessionId, n: u64) -> EventId {
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
    let (prefix, digits) = (session.0.as_bytes(), &digits[at..]);
    let len = prefix.len() + 1 + digits.len();
    let mut buffer = [0u8; 96];
    if let Some(id) = buffer.get_mut(..len) {
        id[..prefix.len()].copy_from_slice(prefix);
        id[prefix.len()] = b'#';
        id[prefix.len() + 1..].copy_from_slice(digits);
        if let Ok(id) = std::str::from_utf8(id) {
            return EventId::new(id);
        }
    }
    let mut id = String::with_capacity(len);
    id.push_str(&session.0);
    id.push('#');
    id.extend(digits.iter().map(|&d| char::from(d)));
    EventId::new(id)
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
        let this = self
            .runner
            .live_session(&self.id)
            .ok_or_else(|| Error::invalid_request_msg(format!("session {} is closed", self.id)))?;
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
        let command = CommandId::new(format!("{}/c{n}", self.id));
        let turn = Turn::new(this.clone(), command.clone(), TurnId::new(format!("t{n}")), prompt, cancel);
        tokio::spawn(this.run(turn, finished));
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
}

#[async_trait]
impl SessionHistory for RunnerSession {
    /// The journal, once every event published so far is in it.
    async fn history(&self) -> HostResult<Vec<Event>> {
        self.flush_journal();
        Ok(self.runner.store.events(&self.id)?)
    }
}

#[async_trait]
impl SessionCloser for RunnerSession {
    async fn shutdown(&self) -> HostResult<()> {
        if let Some(finished) = self.cancel_running() {
            finished.cancelled().await;
        }
        self.runner.forget_live(&self.id);
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
