//! A runner session: the [`LiveSession`] the runner hands the facade.
//!
//! It runs one turn at a time, closes, compacts and tells its history. What its turns reach — the
//! session's [`EventHub`], the journal writer that records every Enduring event in the
//! [`Store`](super::Store), the gates open (one-shot channels keyed by gate id), the config
//! options — is its core (`session_core`), which a [`Turn`] holds without the session.
//!
//! # Journaling
//!
//! Enduring events are written in batches, one store transaction each (see the `journal` module
//! for order and retries):
//! - before a gate opens, a turn ends (done, failed, interrupted) or a compaction result is
//!   delivered, the batch is written first — the client never sees a turn end, or is asked a
//!   question, that is not in the store;
//! - otherwise no later than [`JOURNAL_DELAY`](crate::JOURNAL_DELAY) after the oldest unwritten
//!   event, while the turn waits (for a model, a tool, a slow client), written alongside the
//!   running turn.
//!
//! So a short turn costs one transaction, and a crash loses at most the last
//! [`JOURNAL_DELAY`](crate::JOURNAL_DELAY) of a turn in progress — never its prompt once the turn
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

pub(crate) mod journal;
pub(crate) mod live;
pub(crate) mod session_core;

use std::panic::AssertUnwindSafe;
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use async_trait::async_trait;
use futures::FutureExt;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::RunnerInner;
use crate::history::Conversation;
use crate::ids::{event_id_digits, numbered};
use crate::session::live::retrying;
use crate::session::session_core::{Opening, SessionCore};
use crate::store::StoreErrorKind;
use crate::turn::Turn;
use acp_facade::acp::{
    AvailableCommand, CompactionId, CompactionStatus, CompactionSummaryChunk, CompactionUpdate, ContentBlock,
    McpServer, SessionConfigId, SessionConfigOption, SessionConfigOptionValue, SessionId, StopReason, SystemPrompt,
};
use acp_facade::client::Client;
use acp_facade::error::{Error, ErrorCode, ErrorExt};
use acp_facade::harness::{
    CommandId, Event, EventClass, EventKind, GateId, GateResponse, Prompt, TurnId, UserMessage, Visibility,
};
use acp_facade::host::{
    Compactor, EventStream, HostResult, LiveSession, RuntimeConfig, SessionCloser, SessionControl, SessionHistory,
    Setup,
};
use acp_facade::hub::EventHub;
use acp_facade::panic::panic_message;
use acp_facade::time::now_rfc3339;

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
        let id_number = |e: &Event| -> Option<u64> { event_id_digits(e.header.id.as_str(), id)?.parse().ok() };
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

/// One session run by the [`Runner`](crate::Runner).
pub struct RunnerSession {
    /// What the session's turns share with it (see the `session_core` module).
    core: Arc<SessionCore>,
    /// The session's handle on the client; each turn gets one scoped to it.
    client: Client,
    runner: Arc<RunnerInner>,
    /// Turns started, across restarts: numbers turn ids.
    counter: AtomicU64,
    has_title: std::sync::atomic::AtomicBool,
}

impl std::fmt::Debug for RunnerSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunnerSession").field("id", &self.core.id).finish_non_exhaustive()
    }
}

impl Drop for RunnerSession {
    fn drop(&mut self) {
        let unwritten = self.core.journal.unwritten();
        if unwritten > 0 && self.core.journal.fenced().is_none() {
            tracing::error!(session = %self.core.id, events = unwritten, "a session went away with events not journaled");
        }
        // Dropped without being closed (the facade could not serve it): its claim goes back.
        if let Some(release) = self.runner.live().begin_release(&self.core.id, self) {
            self.runner.live().spawn_release(release);
        }
    }
}

impl RunnerSession {
    /// A live session opened with `setup`; its system prompt is `system_prompt` (the setup's, or
    /// the one the session kept).
    pub(crate) fn new(
        runner: Arc<RunnerInner>,
        id: SessionId,
        setup: &Setup,
        system_prompt: Option<SystemPrompt>,
        history: History,
        conversation: Conversation,
    ) -> Arc<Self> {
        let core = SessionCore::new(Opening {
            id,
            cwd: setup.cwd().to_path_buf(),
            mcp_servers: setup.mcp_servers().to_vec(),
            system_prompt,
            commands: runner.turns.commands(),
            config: runner.turns.config_options(),
            store: runner.store.clone(),
            subscriber_capacity: runner.subscriber_capacity,
            next_event: history.next_event,
            conversation,
        });
        Arc::new(Self {
            core: Arc::new(core),
            client: setup.client().clone(),
            runner,
            counter: AtomicU64::new(history.turns),
            has_title: std::sync::atomic::AtomicBool::new(history.has_title),
        })
    }

    pub(crate) fn session_id(&self) -> &SessionId {
        &self.core.id
    }

    /// The session's working directory.
    pub fn cwd(&self) -> &Path {
        self.core.cwd()
    }

    /// The session's handle on the client (see [`Client`]); a turn's own is [`Turn::client`].
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The session's event hub.
    pub fn hub(&self) -> &EventHub {
        &self.core.hub
    }

    /// The MCP servers of the `session/new`, `load` or `resume` that opened the session, in order.
    pub fn mcp_servers(&self) -> &[McpServer] {
        self.core.mcp_servers()
    }

    /// The facade's control of the session, once a connection serves it (see
    /// [`SessionControl`]): the way to change the session's mode, options or commands yourself.
    pub fn control(&self) -> Option<Arc<dyn SessionControl>> {
        self.core.control()
    }

    /// Replaces the session's host-defined slash commands; the client is told once they have been
    /// advertised (from the session's first prompt on).
    pub async fn set_commands(&self, commands: Vec<AvailableCommand>) -> Result<(), Error> {
        self.core.set_commands(commands).await
    }

    /// The current value of a select config option.
    pub fn config_value(&self, config_id: &str) -> Option<String> {
        self.core.config_value(config_id)
    }

    /// Answers an open gate (also the way a product answers ask-user gates out of band).
    pub fn answer_gate(&self, gate_id: &GateId, response: GateResponse) -> Result<(), Error> {
        self.core.answer_gate(gate_id, response)
    }

    /// Writes what the journal holds now; a failure is logged and the batch kept for the next
    /// write (the turn's end, at the latest).
    async fn write_journal_now(&self) {
        if let Err(e) = self.core.journal.write().await {
            tracing::warn!(session = %self.core.id, error = %e, "could not journal events yet");
        }
    }

    /// Closing: writes what is left of the journal, then gives the session's claim back to the
    /// store (see the `live` module), both from a task of its own — a close that outlives its
    /// grace period still finishes them — which this waits for. Nothing happens unless this is
    /// the live session of its id.
    async fn give_back(&self) {
        let live = self.runner.live();
        let Some(this) = live.get(&self.core.id).filter(|s| std::ptr::eq(Arc::as_ptr(s), self)) else {
            return;
        };
        let Some(release) = live.begin_release(&self.core.id, self) else {
            return;
        };
        let live = live.clone();
        let task = tokio::spawn(async move {
            if let Err(e) = retrying(&this.core.id, "write its last events", || this.core.journal.write()).await {
                tracing::error!(session = %this.core.id, error = %e, "the session's last events were not journaled");
            }
            drop(this);
            live.release(release).await;
        });
        let _ = task.await;
    }

    /// Before a turn starts: the session still belongs to this process, and nothing earlier
    /// waits to be journaled (a new turn never runs on a journal with a hole).
    async fn journal_ready(&self) -> Result<(), Error> {
        if let Some(fenced) = self.core.journal.fenced() {
            return Err(Error::invalid_request_msg(format!(
                "session {} is no longer live here: {}; load it again",
                self.core.id,
                fenced.message()
            )));
        }
        if self.core.journal.has_backlog()
            && let Err(e) = self.core.journal.write().await
        {
            return Err(match e.kind() {
                StoreErrorKind::NotOwner => Error::invalid_request_msg(format!(
                    "session {} is no longer live here: {}; load it again",
                    self.core.id,
                    e.message()
                )),
                _ => Error::internal_msg(format!(
                    "session {}: earlier events could not be journaled, so no new turn starts: {}",
                    self.core.id,
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
        self.core.journal.touch_with_next_batch(title.clone(), now.clone());
        self.core
            .publish(
                EventClass::Enduring,
                Visibility::Public,
                Some(&turn.command),
                Some(at),
                EventKind::TurnStarted {
                    message: UserMessage::new(turn.prompt().to_vec()).with_id(turn.message_id().map(str::to_owned)),
                },
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
                    () = self.core.journal.deadline(), if writing.is_none() => {
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
        let failure = self.core.take_turn_failure();
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
        self.core.clear_running();
        turn.emit(EventClass::Enduring, terminal).await;
        finished.cancel();
    }
}

#[async_trait]
impl LiveSession for RunnerSession {
    fn id(&self) -> SessionId {
        self.core.id.clone()
    }

    async fn reopened(&self, setup: &Setup) -> HostResult<()> {
        // A system prompt on the request replaces the kept one, as when the session is opened.
        if let Some(system_prompt) = setup.system_prompt() {
            self.runner.store.set_system_prompt(&self.core.id, system_prompt).await?;
            self.core.set_system_prompt(system_prompt.clone());
        }
        Ok(())
    }

    fn subscribe_events(&self) -> HostResult<EventStream> {
        Ok(self.core.hub.subscribe())
    }

    async fn submit(&self, prompt: Vec<ContentBlock>) -> HostResult<CommandId> {
        self.submit_prompt(Prompt::new(prompt)).await
    }

    async fn submit_prompt(&self, prompt: Prompt) -> HostResult<CommandId> {
        let this = self
            .runner
            .live_session(&self.core.id)
            .ok_or_else(|| Error::invalid_request_msg(format!("session {} is closed", self.core.id)))?;
        self.journal_ready().await?;
        let cancel = CancellationToken::new();
        let finished = CancellationToken::new();
        self.core.start_running(cancel.clone(), finished.clone())?;
        let n = self.counter.fetch_add(1, Ordering::Relaxed) + 1;
        let command = CommandId::new(numbered(&self.core.id.0, "/c", n));
        // The turn's calls to the client go out after the updates of what it published before.
        let core = Arc::downgrade(&this.core);
        let client = self
            .client
            .scoped(cancel.clone())
            .in_order_with(Arc::new(move || core.upgrade().map_or(0, |core| core.hub.published())));
        let turn =
            Turn::new(this.core.clone(), command.clone(), TurnId::new(numbered("", "t", n)), prompt, cancel, client);
        // The turn runs here, on the submitting task, until it first waits, and on a task of its
        // own from then on: a turn that never waits (an echo, a canned answer) costs no task — a
        // spawn is an aligned allocation and a scheduling round, about 4% of such a turn — and its
        // events are all queued for the facade's drain when this returns. A turn that waits was
        // polled with a waker that drops its wake-up; the spawned task polls it again at once,
        // which registers the task's own, and keeps the caller's span (the facade's `turn`), so
        // that the turn logs in one span wherever it runs. Boxed: the future is large, and a box
        // moves a pointer into the task's cell.
        let mut run = Box::pin(this.run(turn, finished));
        if run.as_mut().now_or_never().is_none() {
            tokio::spawn(run.instrument(tracing::Span::current()));
        }
        Ok(command)
    }

    async fn interrupt(&self) -> HostResult<()> {
        self.core.cancel_running();
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
        self.core.has_config_options().then_some(self as &dyn RuntimeConfig)
    }

    fn history(&self) -> Option<&dyn SessionHistory> {
        Some(self)
    }

    fn commands(&self) -> Vec<AvailableCommand> {
        self.core.commands()
    }

    fn set_control(&self, control: Arc<dyn SessionControl>) {
        self.core.set_control(control);
    }
}

#[async_trait]
impl SessionHistory for RunnerSession {
    /// The journal, once every event published so far is in it.
    async fn history(&self) -> HostResult<Vec<Event>> {
        // Unwritten events would be missing from what the store tells: write them first (a store
        // that cannot is an error, not a silently shorter history).
        self.core.journal.write().await?;
        Ok(self.runner.store.events(&self.core.id).await?)
    }
}

#[async_trait]
impl SessionCloser for RunnerSession {
    async fn shutdown(&self) -> HostResult<()> {
        if let Some(finished) = self.core.cancel_running() {
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
            .live_session(&self.core.id)
            .ok_or_else(|| Error::invalid_request_msg(format!("session {} is closed", self.core.id)))?;
        let n = self.counter.fetch_add(1, Ordering::Relaxed) + 1;
        let command = CommandId::new(format!("{}/c{n}", self.core.id));
        let reply_to = command.clone();
        tokio::spawn(async move {
            // Reported as it goes (started, the summary, how it ended) to a client that opted in;
            // the compaction's id is its command's.
            let compaction = CompactionId::new(reply_to.as_str());
            let report = |update: CompactionUpdate| EventKind::CompactionChanged { update: Box::new(update) };
            let started = report(CompactionUpdate::new(compaction.clone(), CompactionStatus::InProgress));
            this.core.publish(EventClass::Enduring, Visibility::Public, Some(&reply_to), None, started).await;
            let outcome = AssertUnwindSafe(this.runner.turns.compact(&this)).catch_unwind().await;
            let outcome = match outcome {
                Ok(outcome) => outcome.map_err(|e| e.message),
                Err(panic) => Err(panic_message(&*panic)),
            };
            let mut kinds = Vec::new();
            match outcome {
                Ok(summary) => {
                    if let Some(summary) = summary {
                        let chunk = CompactionSummaryChunk::new(compaction.clone(), ContentBlock::from(summary));
                        kinds.push(EventKind::CompactionSummary { chunk: Box::new(chunk) });
                    }
                    kinds.push(report(CompactionUpdate::new(compaction, CompactionStatus::Completed)));
                    kinds.push(EventKind::CompactWaiterResolved {});
                }
                Err(reason) => {
                    let failed = CompactionUpdate::new(compaction, CompactionStatus::Failed).error(reason.clone());
                    kinds.push(report(failed));
                    kinds.push(EventKind::CompactWaiterRejected { reason });
                }
            }
            for kind in kinds {
                this.core.publish(EventClass::Enduring, Visibility::Public, Some(&reply_to), None, kind).await;
            }
        });
        Ok(command)
    }
}

#[async_trait]
impl RuntimeConfig for RunnerSession {
    async fn snapshot(&self) -> HostResult<Vec<SessionConfigOption>> {
        Ok(self.core.config_options())
    }

    async fn set_option(&self, config_id: SessionConfigId, value: SessionConfigOptionValue) -> HostResult<()> {
        self.core.set_config_option(&config_id, value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{MemoryStore, Runner, TurnRunner};
    use acp_facade::harness::content::text_block;
    use acp_facade::host::SessionHost;
    use futures::StreamExt;

    /// Waits on `go` when the prompt is `wait`; streams `done` and ends. Records the name of the
    /// span it ends in.
    struct Turns {
        go: Arc<tokio::sync::Notify>,
        span: std::sync::Mutex<Option<&'static str>>,
    }

    #[async_trait]
    impl TurnRunner for Turns {
        async fn run_turn(&self, turn: &Turn) -> Result<StopReason, Error> {
            if turn.prompt_text() == "wait" {
                self.go.notified().await;
            }
            *self.span.lock().expect("span") = tracing::Span::current().metadata().map(tracing::Metadata::name);
            turn.text("done").await;
            Ok(StopReason::EndTurn)
        }
    }

    /// A session of a runner on `Turns`, in memory, and a subscription to its events.
    async fn session() -> (Arc<Turns>, Arc<dyn LiveSession>, EventStream) {
        let turns = Arc::new(Turns { go: Arc::new(tokio::sync::Notify::new()), span: std::sync::Mutex::default() });
        let runner = Runner::new(Arc::new(MemoryStore::new()), turns.clone());
        let live = runner.new_session(Setup::new("/tmp", Vec::new(), Vec::new()).expect("setup")).await.expect("new");
        let events = live.subscribe_events().expect("subscribe");
        (turns, live, events)
    }

    /// Receives events until the turn's end.
    async fn until_done(events: &mut EventStream) {
        let done = tokio::time::timeout(std::time::Duration::from_secs(10), async {
            while !matches!(events.next().await.expect("the stream ended").kind, EventKind::TurnDone { .. }) {}
        });
        assert!(done.await.is_ok(), "the turn never ended");
    }

    /// The events queued on `events` now, without waiting: `TurnStarted`, `TurnDone` or `other`.
    fn queued(events: &mut EventStream) -> Vec<&'static str> {
        let kind = |event: Event| match event.kind {
            EventKind::TurnStarted { .. } => "TurnStarted",
            EventKind::TurnDone { .. } => "TurnDone",
            _ => "other",
        };
        std::iter::from_fn(|| events.next().now_or_never().flatten()).map(kind).collect()
    }

    #[tokio::test]
    async fn a_turn_runs_on_the_submitting_task_until_it_first_waits() {
        let (turns, live, mut events) = session().await;

        // A turn that never waits has ended when its submit returns.
        live.submit_prompt(Prompt::new(vec![text_block("now")])).await.expect("submit");
        let ended = queued(&mut events);
        assert_eq!(ended.first(), Some(&"TurnStarted"), "{ended:?}");
        assert_eq!(ended.last(), Some(&"TurnDone"), "{ended:?}");

        // One that waits goes on by itself on a task of its own, with nobody polling the caller.
        live.submit_prompt(Prompt::new(vec![text_block("wait")])).await.expect("submit");
        let started = queued(&mut events);
        assert!(started.contains(&"TurnStarted") && !started.contains(&"TurnDone"), "{started:?}");
        turns.go.notify_one();
        until_done(&mut events).await;
        live.closer().expect("closer").shutdown().await.expect("close");
    }

    #[test]
    fn a_turn_that_waits_goes_on_in_the_span_it_was_submitted_in() {
        let _subscriber = tracing::subscriber::set_default(tracing_subscriber::registry());
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        runtime.block_on(async {
            let (turns, live, mut events) = session().await;
            let submitted = live.submit_prompt(Prompt::new(vec![text_block("wait")]));
            submitted.instrument(tracing::info_span!("prompt")).await.expect("submit");
            turns.go.notify_one();
            until_done(&mut events).await;
            assert_eq!(*turns.span.lock().expect("span"), Some("prompt"), "the spawned rest of the turn");
            live.closer().expect("closer").shutdown().await.expect("close");
        });
    }

    #[test]
    fn a_reopened_session_numbers_past_every_journaled_seq_and_id() {
        let sid = SessionId::new("s");
        let journaled = Event::plain;
        let started = || EventKind::TurnStarted { message: UserMessage::new(Vec::new()) };
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
