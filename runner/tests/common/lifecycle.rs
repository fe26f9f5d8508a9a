//! Test doubles for the session lifecycle: a host whose sessions wrap [`ScriptedSession`] and add
//! the optional per-session capabilities (shutdown, runtime config, compaction), plus a store that
//! loads, resumes, lists and deletes sessions — every call recorded.

#![allow(dead_code, clippy::missing_panics_doc, clippy::must_use_candidate)]

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use acp_facade::acp::{
    ContentBlock, SessionConfigId, SessionConfigOption, SessionConfigOptionCategory, SessionConfigOptionValue,
    SessionConfigSelectOption, SessionId,
};
use acp_facade::error::{Error, ErrorExt};
use acp_facade::harness::{
    Cause, CommandId, Coordinates, Event, EventClass, EventHeader, EventId, EventKind, GateId, GateResponse, LoopId,
    TurnId, Visibility,
};
use acp_facade::host::{
    Compactor, EventStream, HostResult, LiveSession, LoadedSession, RuntimeConfig, SessionCatalog, SessionCatalogEntry,
    SessionCloser, SessionDeleter, SessionHistory, SessionHost, SessionLoader, SessionResumer, Setup,
};
use async_trait::async_trait;
use futures::StreamExt;
use serde_json::Value;
use tokio::sync::{Notify, Semaphore, mpsc};

use super::STEP;
use super::host::ScriptedSession;

/// An ordered log of host calls shared by every session of a host.
#[derive(Clone, Default)]
pub struct Log(Arc<Mutex<Vec<String>>>);

impl Log {
    pub fn push(&self, entry: impl Into<String>) {
        self.0.lock().unwrap().push(entry.into());
    }

    pub fn entries(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }

    /// The position of the first entry equal to `entry`.
    pub fn position(&self, entry: &str) -> Option<usize> {
        self.entries().iter().position(|e| e == entry)
    }
}

/// How a session's shutdown hook behaves.
#[derive(Clone)]
pub enum Shutdown {
    /// The session has no shutdown hook.
    Absent,
    /// Returns at once.
    Immediate,
    /// Never returns.
    Never,
    /// Waits for a permit of the semaphore (the test adds one to release it).
    Held(Arc<Semaphore>),
}

/// Called (synchronously) after a submit, with the session and the command id.
pub type SubmitHook = Arc<dyn Fn(&Arc<ScriptedSession>, &CommandId, &[ContentBlock]) + Send + Sync>;
/// Called (synchronously) after a gate was answered.
pub type GateHook = Arc<dyn Fn(&Arc<ScriptedSession>, &GateId, &GateResponse) + Send + Sync>;

/// What the sessions a [`RichHost`] creates look like.
#[derive(Clone)]
pub struct SessionSpec {
    pub shutdown: Shutdown,
    pub config: bool,
    pub compactor: bool,
    pub on_submit: Option<SubmitHook>,
    pub on_gate: Option<GateHook>,
    /// The runtime config's snapshot fails.
    pub broken_config: bool,
}

impl Default for SessionSpec {
    fn default() -> Self {
        Self {
            shutdown: Shutdown::Immediate,
            config: false,
            compactor: false,
            on_submit: None,
            on_gate: None,
            broken_config: false,
        }
    }
}

/// A scripted session plus the optional capabilities, recording every call in the host's log.
pub struct RichSession {
    pub inner: Arc<ScriptedSession>,
    pub log: Log,
    shutdown: Shutdown,
    pub shutdowns: AtomicUsize,
    active_subscriptions: Arc<AtomicUsize>,
    /// How many event subscriptions were open when `shutdown` was called.
    pub subscriptions_at_shutdown: Mutex<Option<usize>>,
    pub config: Option<TestConfig>,
    pub compactor: Option<TestCompactor>,
    on_submit: Option<SubmitHook>,
    on_gate: Option<GateHook>,
    /// When set, the session tells this as its durable history (it offers `SessionHistory`).
    pub history: Mutex<Option<Vec<Event>>>,
}

impl RichSession {
    pub fn new(id: &str, spec: &SessionSpec, log: Log) -> Arc<Self> {
        Arc::new(Self {
            inner: ScriptedSession::new(id),
            log,
            shutdown: spec.shutdown.clone(),
            shutdowns: AtomicUsize::new(0),
            active_subscriptions: Arc::default(),
            subscriptions_at_shutdown: Mutex::default(),
            config: (spec.config || spec.broken_config).then(|| {
                let config = TestConfig::new();
                config.broken.store(spec.broken_config, Ordering::SeqCst);
                config
            }),
            compactor: spec.compactor.then(|| TestCompactor::new(id)),
            on_submit: spec.on_submit.clone(),
            on_gate: spec.on_gate.clone(),
            history: Mutex::default(),
        })
    }

    pub fn id_str(&self) -> &str {
        &self.inner.id.0
    }

    /// Event subscriptions currently open (a prompt's drain holds one).
    pub fn active_subscriptions(&self) -> usize {
        self.active_subscriptions.load(Ordering::SeqCst)
    }

    pub fn shutdown_count(&self) -> usize {
        self.shutdowns.load(Ordering::SeqCst)
    }

    pub fn interrupt_count(&self) -> usize {
        self.inner.interrupts.load(Ordering::SeqCst)
    }

    pub fn gate_answers(&self) -> Vec<(GateId, GateResponse)> {
        self.inner.gate_answers.lock().unwrap().clone()
    }

    /// Makes `interrupt` end the turn at `at` with `TurnInterrupted`.
    pub fn interrupt_ends(&self, at: (&str, &str)) {
        *self.inner.interrupt_ends.lock().unwrap() = Some((at.0.to_owned(), at.1.to_owned()));
    }
}

struct SubscriptionGuard(Arc<AtomicUsize>);

impl Drop for SubscriptionGuard {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

#[async_trait]
impl LiveSession for RichSession {
    fn id(&self) -> SessionId {
        self.inner.id.clone()
    }

    fn subscribe_events(&self) -> HostResult<EventStream> {
        let events = self.inner.subscribe_events()?;
        self.active_subscriptions.fetch_add(1, Ordering::SeqCst);
        let guard = SubscriptionGuard(self.active_subscriptions.clone());
        Ok(Box::pin(events.map(move |event| {
            let _keep = &guard;
            event
        })))
    }

    async fn submit(&self, prompt: Vec<ContentBlock>) -> HostResult<CommandId> {
        let command = self.inner.submit(prompt.clone()).await?;
        self.log.push(format!("{}:submit", self.id_str()));
        if let Some(hook) = &self.on_submit {
            hook(&self.inner, &command, &prompt);
        }
        Ok(command)
    }

    async fn interrupt(&self) -> HostResult<()> {
        self.log.push(format!("{}:interrupt", self.id_str()));
        self.inner.interrupt().await
    }

    async fn respond_gate(&self, gate_id: GateId, response: GateResponse) -> HostResult<()> {
        self.log.push(format!("{}:gate:{gate_id}:{response:?}", self.id_str()));
        self.inner.respond_gate(gate_id.clone(), response.clone()).await?;
        if let Some(hook) = &self.on_gate {
            hook(&self.inner, &gate_id, &response);
        }
        Ok(())
    }

    fn closer(&self) -> Option<&dyn SessionCloser> {
        match self.shutdown {
            Shutdown::Absent => None,
            _ => Some(self),
        }
    }

    fn compactor(&self) -> Option<&dyn Compactor> {
        self.compactor.as_ref().map(|c| c as &dyn Compactor)
    }

    fn config(&self) -> Option<&dyn RuntimeConfig> {
        self.config.as_ref().map(|c| c as &dyn RuntimeConfig)
    }

    fn history(&self) -> Option<&dyn SessionHistory> {
        self.history.lock().unwrap().is_some().then_some(self as &dyn SessionHistory)
    }
}

#[async_trait]
impl SessionHistory for RichSession {
    async fn history(&self) -> HostResult<Vec<Event>> {
        self.log.push(format!("{}:history", self.id_str()));
        Ok(self.history.lock().unwrap().clone().unwrap_or_default())
    }
}

#[async_trait]
impl SessionCloser for RichSession {
    async fn shutdown(&self) -> HostResult<()> {
        self.shutdowns.fetch_add(1, Ordering::SeqCst);
        *self.subscriptions_at_shutdown.lock().unwrap() = Some(self.active_subscriptions());
        self.log.push(format!("{}:shutdown", self.id_str()));
        match &self.shutdown {
            Shutdown::Absent | Shutdown::Immediate => {}
            Shutdown::Never => std::future::pending::<()>().await,
            Shutdown::Held(permits) => drop(permits.acquire().await),
        }
        self.log.push(format!("{}:shutdown-done", self.id_str()));
        Ok(())
    }
}

/// A runtime config with `mode` (ask/code), `model` (fast/smart) and the boolean `verbose`.
pub struct TestConfig {
    state: Mutex<(String, String, bool)>,
    /// Every controller call, in order.
    pub sets: Mutex<Vec<(String, SessionConfigOptionValue)>>,
    /// When set, `snapshot` fails.
    pub broken: std::sync::atomic::AtomicBool,
    /// When set, `set_option` signals [`TestConfig::setting`] and waits for a permit before
    /// applying the change (a controller that takes its time).
    pub hold: Mutex<Option<Arc<Semaphore>>>,
    /// Signalled (one permit) when a held `set_option` starts waiting.
    pub setting: Notify,
}

impl TestConfig {
    pub fn new() -> Self {
        Self {
            state: Mutex::new(("ask".into(), "fast".into(), false)),
            sets: Mutex::default(),
            broken: std::sync::atomic::AtomicBool::new(false),
            hold: Mutex::default(),
            setting: Notify::new(),
        }
    }

    /// The options as the host sees them now.
    pub fn options(&self) -> Vec<SessionConfigOption> {
        let (mode, model, verbose) = self.state.lock().unwrap().clone();
        vec![
            SessionConfigOption::select(
                "mode",
                "Mode",
                mode,
                vec![
                    SessionConfigSelectOption::new("ask", "Ask").description("Ask before editing"),
                    SessionConfigSelectOption::new("code", "Code"),
                ],
            )
            .category(SessionConfigOptionCategory::Mode),
            SessionConfigOption::select(
                "model",
                "Model",
                model,
                vec![SessionConfigSelectOption::new("fast", "Fast"), SessionConfigSelectOption::new("smart", "Smart")],
            )
            .category(SessionConfigOptionCategory::Model),
            SessionConfigOption::boolean("verbose", "Verbose", verbose),
        ]
    }

    /// Changes a select option's value behind the facade's back (the host decided it).
    pub fn set_directly(&self, id: &str, value: &str) {
        let mut state = self.state.lock().unwrap();
        match id {
            "mode" => value.clone_into(&mut state.0),
            "model" => value.clone_into(&mut state.1),
            other => panic!("no select option {other}"),
        }
    }

    pub fn controller_calls(&self) -> usize {
        self.sets.lock().unwrap().len()
    }
}

impl Default for TestConfig {
    fn default() -> Self {
        Self::new()
    }
}

#[async_trait]
impl RuntimeConfig for TestConfig {
    async fn snapshot(&self) -> HostResult<Vec<SessionConfigOption>> {
        if self.broken.load(Ordering::SeqCst) {
            return Err(Error::internal_msg("the config store is unavailable"));
        }
        Ok(self.options())
    }

    async fn set_option(&self, config_id: SessionConfigId, value: SessionConfigOptionValue) -> HostResult<()> {
        let hold = self.hold.lock().unwrap().clone();
        if let Some(permits) = hold {
            self.setting.notify_one();
            permits.acquire().await.expect("semaphore open").forget();
        }
        self.sets.lock().unwrap().push((config_id.0.to_string(), value.clone()));
        let mut state = self.state.lock().unwrap();
        match (&*config_id.0, &value) {
            ("mode", SessionConfigOptionValue::ValueId { value }) => state.0 = value.0.to_string(),
            ("model", SessionConfigOptionValue::ValueId { value }) => state.1 = value.0.to_string(),
            ("verbose", SessionConfigOptionValue::Boolean { value }) => state.2 = *value,
            _ => return Err(Error::invalid_params_msg("the controller got a bad option")),
        }
        Ok(())
    }
}

/// A compactor that hands out command ids `<session>-compact<n>` and reports each call.
pub struct TestCompactor {
    session: String,
    counter: AtomicUsize,
    tx: mpsc::UnboundedSender<CommandId>,
    rx: tokio::sync::Mutex<mpsc::UnboundedReceiver<CommandId>>,
}

impl TestCompactor {
    pub fn new(session: &str) -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        Self { session: session.to_owned(), counter: AtomicUsize::new(0), tx, rx: tokio::sync::Mutex::new(rx) }
    }

    /// Waits for the next `compact` call; returns its command id.
    pub async fn next_call(&self) -> CommandId {
        tokio::time::timeout(STEP, self.rx.lock().await.recv())
            .await
            .expect("timed out waiting for compact")
            .expect("compact channel closed")
    }

    pub fn calls(&self) -> usize {
        self.counter.load(Ordering::SeqCst)
    }
}

#[async_trait]
impl Compactor for TestCompactor {
    async fn compact(&self) -> HostResult<CommandId> {
        let n = self.counter.fetch_add(1, Ordering::SeqCst) + 1;
        let command = CommandId::new(format!("{}-compact{n}", self.session));
        let _ = self.tx.send(command.clone());
        Ok(command)
    }
}

/// A host of [`RichSession`]s that also loads, resumes, lists and deletes stored sessions.
#[derive(Default)]
pub struct RichHost {
    spec: Mutex<SessionSpec>,
    counter: AtomicUsize,
    pub log: Log,
    pub sessions: Mutex<Vec<Arc<RichSession>>>,
    /// Stored sessions: id → durable history.
    pub stored: Mutex<HashMap<String, Vec<Event>>>,
    /// What `list_sessions` returns.
    pub catalog: Mutex<Vec<SessionCatalogEntry>>,
    pub loads: Mutex<Vec<String>>,
    pub resumes: Mutex<Vec<String>>,
    pub deletes: Mutex<Vec<String>>,
    pub setups: Mutex<Vec<(String, Setup)>>,
    /// When set, `load_session` and `resume_session` each wait for (and use up) a permit.
    pub hold_opening: Mutex<Option<Arc<Semaphore>>>,
    /// When set, `delete_session` signals [`RichHost::deleting`] and waits for a permit first.
    pub hold_delete: Mutex<Option<Arc<Semaphore>>>,
    /// Signalled (one permit) when a held `delete_session` starts waiting.
    pub deleting: Notify,
    /// When set, `load_session` and `resume_session` open a session with this id instead.
    pub reopen_as: Mutex<Option<String>>,
    /// When set, `new_session` creates a session with this id instead of a fresh one.
    pub create_as: Mutex<Option<String>>,
    /// How many times `list_sessions` was called.
    pub lists: AtomicUsize,
}

impl RichHost {
    pub fn new(spec: SessionSpec) -> Arc<Self> {
        Arc::new(Self { spec: Mutex::new(spec), ..Self::default() })
    }

    pub fn set_spec(&self, spec: SessionSpec) {
        *self.spec.lock().unwrap() = spec;
    }

    /// Stores a session that can be loaded or resumed.
    pub fn store(&self, id: &str, history: Vec<Event>) {
        self.stored.lock().unwrap().insert(id.to_owned(), history);
    }

    pub fn session(&self, id: &str) -> Arc<RichSession> {
        self.sessions
            .lock()
            .unwrap()
            .iter()
            .find(|s| s.id_str() == id)
            .cloned()
            .unwrap_or_else(|| panic!("no session {id}"))
    }

    pub fn all_sessions(&self) -> Vec<Arc<RichSession>> {
        self.sessions.lock().unwrap().clone()
    }

    pub fn deletes(&self) -> Vec<String> {
        self.deletes.lock().unwrap().clone()
    }

    fn open(&self, id: &str, setup: Setup) -> Arc<RichSession> {
        let spec = self.spec.lock().unwrap().clone();
        let session = RichSession::new(id, &spec, self.log.clone());
        self.sessions.lock().unwrap().push(session.clone());
        self.setups.lock().unwrap().push((id.to_owned(), setup));
        session
    }

    async fn reopen(&self, id: &SessionId, setup: Setup) -> HostResult<Arc<RichSession>> {
        let hold = self.hold_opening.lock().unwrap().clone();
        if let Some(permits) = hold {
            permits.acquire().await.expect("semaphore open").forget();
        }
        self.stored_history(id)?;
        let actual = self.reopen_as.lock().unwrap().clone().unwrap_or_else(|| id.0.to_string());
        Ok(self.open(&actual, setup))
    }

    fn stored_history(&self, id: &SessionId) -> HostResult<Vec<Event>> {
        self.stored.lock().unwrap().get(&*id.0).cloned().ok_or_else(|| Error::unknown_session(&id.0))
    }
}

#[async_trait]
impl SessionHost for RichHost {
    async fn new_session(&self, setup: Setup) -> HostResult<Arc<dyn LiveSession>> {
        let n = self.counter.fetch_add(1, Ordering::SeqCst) + 1;
        let id = self.create_as.lock().unwrap().clone().unwrap_or_else(|| format!("r{n}"));
        Ok(self.open(&id, setup))
    }
}

#[async_trait]
impl SessionLoader for RichHost {
    async fn load_session(&self, session_id: SessionId, setup: Setup) -> HostResult<LoadedSession> {
        self.loads.lock().unwrap().push(session_id.0.to_string());
        let session = self.reopen(&session_id, setup).await?;
        Ok(LoadedSession { session, history: self.stored_history(&session_id)? })
    }
}

#[async_trait]
impl SessionResumer for RichHost {
    async fn resume_session(&self, session_id: SessionId, setup: Setup) -> HostResult<Arc<dyn LiveSession>> {
        self.resumes.lock().unwrap().push(session_id.0.to_string());
        Ok(self.reopen(&session_id, setup).await?)
    }
}

#[async_trait]
impl SessionCatalog for RichHost {
    async fn list_sessions(&self) -> HostResult<Vec<SessionCatalogEntry>> {
        self.lists.fetch_add(1, Ordering::SeqCst);
        Ok(self.catalog.lock().unwrap().clone())
    }
}

#[async_trait]
impl SessionDeleter for RichHost {
    async fn delete_session(&self, session_id: SessionId) -> HostResult<()> {
        let hold = self.hold_delete.lock().unwrap().clone();
        if let Some(permits) = hold {
            self.deleting.notify_one();
            permits.acquire().await.expect("semaphore open").forget();
        }
        self.log.push(format!("delete:{}", session_id.0));
        self.deletes.lock().unwrap().push(session_id.0.to_string());
        self.stored.lock().unwrap().remove(&*session_id.0);
        Ok(())
    }
}

/// Builds histories of events with increasing sequence numbers.
#[derive(Default)]
pub struct History {
    events: Vec<Event>,
}

impl History {
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends an event.
    pub fn push(
        &mut self,
        kind: EventKind,
        class: EventClass,
        visibility: Visibility,
        command: Option<&str>,
        at: (&str, &str),
    ) -> &mut Self {
        let seq = self.events.len() as u64;
        self.events.push(event(seq, kind, class, visibility, command, Some(at)));
        self
    }

    /// Appends an Enduring, Public event.
    pub fn durable(&mut self, at: (&str, &str), kind: EventKind) -> &mut Self {
        self.push(kind, EventClass::Enduring, Visibility::Public, None, at)
    }

    pub fn build(&mut self) -> Vec<Event> {
        std::mem::take(&mut self.events)
    }
}

/// One event.
pub fn event(
    seq: u64,
    kind: EventKind,
    class: EventClass,
    visibility: Visibility,
    command: Option<&str>,
    at: Option<(&str, &str)>,
) -> Event {
    Event {
        header: EventHeader {
            id: EventId::new(format!("h-e{seq}")),
            seq,
            class,
            visibility,
            cause: Cause { command_id: command.map(CommandId::new) },
            coordinates: Coordinates {
                loop_id: at.map(|(l, _)| LoopId::new(l)),
                turn_id: at.map(|(_, t)| TurnId::new(t)),
            },
        },
        kind,
    }
}

/// Polls `condition` until it holds, failing the test after [`STEP`].
pub async fn eventually(what: &str, condition: impl Fn() -> bool) {
    let deadline = tokio::time::Instant::now() + STEP;
    while !condition() {
        assert!(tokio::time::Instant::now() < deadline, "timed out waiting until {what}");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

/// The `session/update` notifications among `messages`.
pub fn updates(messages: &[Value]) -> Vec<Value> {
    messages.iter().filter(|m| m.get("method").and_then(Value::as_str) == Some("session/update")).cloned().collect()
}

/// The `sessionUpdate` kinds of the updates among `messages`, in order.
pub fn update_kinds(messages: &[Value]) -> Vec<String> {
    updates(messages)
        .iter()
        .filter_map(|m| m.pointer("/params/update/sessionUpdate").and_then(Value::as_str))
        .map(str::to_owned)
        .collect()
}

/// Whether `message` is a request the agent sent with `method`.
pub fn is_agent_request(message: &Value, method: &str) -> bool {
    message.get("method").and_then(Value::as_str) == Some(method) && message.get("id").is_some()
}
