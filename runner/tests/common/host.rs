//! A scripted host: sessions whose events the test emits by hand, recording every host call.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use acp_facade::acp::{ContentBlock, SessionId};
use acp_facade::harness::{CommandId, Event, EventClass, EventKind, GateId, GateResponse, Visibility};
use acp_facade::host::{EventStream, HostResult, LiveSession, SessionCloser, SessionHost, Setup};
use async_trait::async_trait;

use super::event::make_event;
use tokio::sync::{Notify, mpsc};

/// Creates [`ScriptedSession`]s named `s1`, `s2`, …
#[derive(Default)]
pub struct ScriptedHost {
    pub sessions: Mutex<Vec<Arc<ScriptedSession>>>,
    pub setups: Mutex<Vec<Setup>>,
    counter: AtomicUsize,
    /// When set, `new_session` fails with this error.
    pub fail_with: Mutex<Option<acp_facade::Error>>,
    /// When set, `new_session` panics.
    pub panic: std::sync::atomic::AtomicBool,
    pub created: Notify,
    /// When set, `new_session` signals `new_session_entered` and then waits for
    /// `release_new_session` before creating the session (a host call that blocks).
    pub hold_new_session: std::sync::atomic::AtomicBool,
    /// Signalled (one permit) each time a held `new_session` starts waiting.
    pub new_session_entered: Notify,
    /// Releases one held `new_session` (one permit).
    pub release_new_session: Notify,
}

impl ScriptedHost {
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// The session with this id.
    pub fn session(&self, id: &str) -> Arc<ScriptedSession> {
        self.sessions
            .lock()
            .unwrap()
            .iter()
            .find(|s| &*s.id.0 == id)
            .cloned()
            .unwrap_or_else(|| panic!("no session {id}"))
    }
}

#[async_trait]
impl SessionHost for ScriptedHost {
    async fn new_session(&self, setup: Setup) -> HostResult<Arc<dyn LiveSession>> {
        assert!(!self.panic.load(Ordering::SeqCst), "scripted host panic in new_session");
        if self.hold_new_session.load(Ordering::SeqCst) {
            self.new_session_entered.notify_one();
            self.release_new_session.notified().await;
        }
        if let Some(e) = self.fail_with.lock().unwrap().clone() {
            return Err(e);
        }
        let n = self.counter.fetch_add(1, Ordering::SeqCst) + 1;
        let session = ScriptedSession::new(&format!("s{n}"));
        self.sessions.lock().unwrap().push(session.clone());
        self.setups.lock().unwrap().push(setup);
        self.created.notify_waiters();
        Ok(session)
    }
}

/// A session whose events are emitted by the test.
pub struct ScriptedSession {
    pub id: SessionId,
    subscribers: Mutex<Vec<mpsc::UnboundedSender<Event>>>,
    submits_tx: mpsc::UnboundedSender<(CommandId, Vec<ContentBlock>)>,
    submits_rx: tokio::sync::Mutex<mpsc::UnboundedReceiver<(CommandId, Vec<ContentBlock>)>>,
    seq: AtomicU64,
    commands: AtomicU64,
    pub interrupts: AtomicUsize,
    pub interrupted: Notify,
    pub gate_answers: Mutex<Vec<(GateId, GateResponse)>>,
    pub gate_answered: Notify,
    pub shutdowns: AtomicUsize,
    /// When set, `interrupt` emits `TurnInterrupted` for this loop/turn.
    pub interrupt_ends: Mutex<Option<(String, String)>>,
    /// Whether this session offers a shutdown hook.
    pub has_closer: std::sync::atomic::AtomicBool,
    /// When set, `submit` fails with this error.
    pub fail_submit: Mutex<Option<acp_facade::Error>>,
    /// When set, `submit` panics.
    pub panic_on_submit: std::sync::atomic::AtomicBool,
    /// When set, `interrupt` fails (after counting the call).
    pub fail_interrupt: std::sync::atomic::AtomicBool,
}

impl ScriptedSession {
    pub fn new(id: &str) -> Arc<Self> {
        let (submits_tx, submits_rx) = mpsc::unbounded_channel();
        Arc::new(Self {
            id: SessionId::new(id),
            subscribers: Mutex::default(),
            submits_tx,
            submits_rx: tokio::sync::Mutex::new(submits_rx),
            seq: AtomicU64::new(0),
            commands: AtomicU64::new(0),
            interrupts: AtomicUsize::new(0),
            interrupted: Notify::new(),
            gate_answers: Mutex::default(),
            gate_answered: Notify::new(),
            shutdowns: AtomicUsize::new(0),
            interrupt_ends: Mutex::default(),
            has_closer: std::sync::atomic::AtomicBool::new(true),
            fail_submit: Mutex::default(),
            panic_on_submit: std::sync::atomic::AtomicBool::new(false),
            fail_interrupt: std::sync::atomic::AtomicBool::new(false),
        })
    }

    /// Waits for the next submitted prompt.
    pub async fn next_submit(&self) -> (CommandId, Vec<ContentBlock>) {
        tokio::time::timeout(super::STEP, self.submits_rx.lock().await.recv())
            .await
            .expect("timed out waiting for submit")
            .expect("submit channel closed")
    }

    /// Emits an event to every subscriber.
    pub fn emit(
        &self,
        kind: EventKind,
        class: EventClass,
        visibility: Visibility,
        command: Option<&CommandId>,
        at: Option<(&str, &str)>,
    ) {
        let seq = self.seq.fetch_add(1, Ordering::SeqCst);
        let event = make_event(&self.id, seq, kind, class, visibility, command, at);
        self.subscribers.lock().unwrap().retain(|tx| tx.send(event.clone()).is_ok());
    }

    /// A public ephemeral event in the given turn.
    pub fn live(&self, at: (&str, &str), kind: EventKind) {
        self.emit(kind, EventClass::Ephemeral, Visibility::Public, None, Some(at));
    }

    /// An internal ephemeral event in the given turn.
    pub fn internal(&self, at: (&str, &str), kind: EventKind) {
        self.emit(kind, EventClass::Ephemeral, Visibility::Internal, None, Some(at));
    }

    /// A public enduring event in the given turn.
    pub fn durable(&self, at: (&str, &str), kind: EventKind) {
        self.emit(kind, EventClass::Enduring, Visibility::Public, None, Some(at));
    }

    /// `TurnStarted` for `command` at `at`.
    pub fn start_turn(&self, command: &CommandId, at: (&str, &str)) {
        self.emit(
            EventKind::TurnStarted { message: acp_facade::harness::UserMessage::default() },
            EventClass::Enduring,
            Visibility::Public,
            Some(command),
            Some(at),
        );
    }

    /// Waits until `interrupt` has been called at least `n` times in all.
    pub async fn wait_interrupts(&self, n: usize) {
        tokio::time::timeout(super::STEP, async {
            while self.interrupts.load(Ordering::SeqCst) < n {
                tokio::time::sleep(std::time::Duration::from_millis(1)).await;
            }
        })
        .await
        .expect("timed out waiting for interrupt");
    }

    /// The next submitted prompt, or `None` if `stop` resolves first.
    pub async fn next_submit_or(
        &self,
        stop: impl std::future::Future<Output = ()>,
    ) -> Option<(CommandId, Vec<ContentBlock>)> {
        let mut rx = self.submits_rx.lock().await;
        tokio::select! {
            biased;
            submit = rx.recv() => Some(submit.expect("submit channel closed")),
            () = stop => None,
        }
    }

    /// Ends every subscription (their streams end).
    pub fn drop_subscribers(&self) {
        self.subscribers.lock().unwrap().clear();
    }

    pub fn subscriber_count(&self) -> usize {
        self.subscribers.lock().unwrap().len()
    }
}

#[async_trait]
impl LiveSession for ScriptedSession {
    fn id(&self) -> SessionId {
        self.id.clone()
    }

    fn subscribe_events(&self) -> HostResult<EventStream> {
        let (tx, rx) = mpsc::unbounded_channel();
        self.subscribers.lock().unwrap().push(tx);
        Ok(Box::pin(futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|e| (e, rx)) })))
    }

    async fn submit(&self, prompt: Vec<ContentBlock>) -> HostResult<CommandId> {
        assert!(!self.panic_on_submit.load(Ordering::SeqCst), "scripted session panic in submit");
        if let Some(e) = self.fail_submit.lock().unwrap().clone() {
            return Err(e);
        }
        let n = self.commands.fetch_add(1, Ordering::SeqCst) + 1;
        let command = CommandId::new(format!("{}-c{n}", self.id));
        let _ = self.submits_tx.send((command.clone(), prompt));
        Ok(command)
    }

    async fn interrupt(&self) -> HostResult<()> {
        self.interrupts.fetch_add(1, Ordering::SeqCst);
        self.interrupted.notify_waiters();
        if self.fail_interrupt.load(Ordering::SeqCst) {
            return Err(acp_facade::Error::new(-32603, "scripted interrupt failure"));
        }
        let ends = self.interrupt_ends.lock().unwrap().clone();
        if let Some((l, t)) = ends {
            self.durable((&l, &t), EventKind::TurnInterrupted {});
        }
        Ok(())
    }

    async fn respond_gate(&self, gate_id: GateId, response: GateResponse) -> HostResult<()> {
        self.gate_answers.lock().unwrap().push((gate_id, response));
        self.gate_answered.notify_waiters();
        Ok(())
    }

    fn closer(&self) -> Option<&dyn SessionCloser> {
        if self.has_closer.load(Ordering::SeqCst) { Some(self) } else { None }
    }
}

#[async_trait]
impl SessionCloser for ScriptedSession {
    async fn shutdown(&self) -> HostResult<()> {
        self.shutdowns.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}
