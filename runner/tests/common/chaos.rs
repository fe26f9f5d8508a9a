//! A host with every optional part, whose turns are scripted by the prompt's text and whose every
//! callback can be made to fail or panic, plus a wire harness that feeds an agent arbitrary input
//! over an in-memory pipe and checks the connection's invariants.
//!
//! Shared by the property tests (`fuzz_properties.rs`), the stress tests (`stress.rs`) and the fuzz
//! targets (`fuzz/`, which include this file by path): it depends on nothing but `acp_facade`,
//! `tokio`, `tokio_util`, `futures`, `serde_json` and `async_trait`.
//!
//! Turn scripts (the first word of the prompt's text):
//!
//! | prompt | the turn |
//! |---|---|
//! | `wait` | streams `wait`, then runs until interrupted |
//! | `gate` | a tool call and a permission gate (approve, approve always, deny); the answer completes or fails the call, then `end_turn` |
//! | `ask` | an ask-user gate (no ACP form), then runs until interrupted |
//! | `fail` / `secretfail` | a public / internal `TurnFailed` |
//! | `nostart` | never starts a turn (the prompt ends only at the cancel grace period) |
//! | `end` | starts, then ends the event stream |
//! | `decoy` | events of other loops, turns and commands around a normal turn |
//! | `stream N` | N message chunks, then `end_turn` |
//! | `stop R` | `end_turn`, `max_tokens`, `max_turn_requests`, `refusal` or `cancelled` |
//! | anything else | a thought, one chunk per word, a tool call, usage, a step, `end_turn` |
//!
//! Every scripted turn checks for an interrupt between two events and then ends `TurnInterrupted`.

#![allow(dead_code, clippy::missing_panics_doc, clippy::must_use_candidate, clippy::too_many_lines)]

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use acp_facade::acp::{
    AuthMethod, AuthMethodAgent, AuthMethodId, ContentBlock, RequestId, SessionConfigId, SessionConfigOption,
    SessionConfigOptionCategory, SessionConfigOptionValue, SessionConfigSelectOption, SessionId, StopReason, ToolKind,
};
use acp_facade::error::{Error, ErrorExt};
use acp_facade::fuzzing::{Frame, LineReader};
use acp_facade::fuzzing::{Incoming, Malformed, classify};
use acp_facade::harness::content::{plain_text, text_block};
use acp_facade::harness::{
    AiMessage, ApprovalAction, Cause, CommandId, Coordinates, Event, EventClass, EventHeader, EventId, EventKind, Gate,
    GateId, GateKind, GateResolver, GateResponse, LoopId, Message, TokenChannel, ToolCallId, ToolCallRequest,
    ToolResultMessage, TurnId, UserMessage, Visibility,
};
use acp_facade::host::{
    Authenticator, Compactor, EventStream, HostResult, LiveSession, LoadedSession, RuntimeConfig, SessionCatalog,
    SessionCatalogEntry, SessionCloser, SessionDeleter, SessionHost, SessionLoader, SessionResumer, Setup,
};
use acp_facade::{Agent, Options};
use async_trait::async_trait;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

// ---- faults --------------------------------------------------------------------------------------

/// Every host callback a fault can be injected into.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Callback {
    NewSession,
    Load,
    Resume,
    List,
    Delete,
    Submit,
    Interrupt,
    RespondGate,
    Shutdown,
    Compact,
    ConfigSnapshot,
    ConfigSet,
    Authenticate,
}

impl Callback {
    pub const ALL: [Callback; 13] = [
        Callback::NewSession,
        Callback::Load,
        Callback::Resume,
        Callback::List,
        Callback::Delete,
        Callback::Submit,
        Callback::Interrupt,
        Callback::RespondGate,
        Callback::Shutdown,
        Callback::Compact,
        Callback::ConfigSnapshot,
        Callback::ConfigSet,
        Callback::Authenticate,
    ];
}

/// How a callback misbehaves.
#[derive(Debug, Clone)]
pub enum Fault {
    /// It returns this error.
    Error(Error),
    /// It panics.
    Panic,
}

/// The faults in force, and how often each callback was called.
#[derive(Default)]
pub struct Faults {
    faults: Mutex<HashMap<Callback, Fault>>,
    calls: Mutex<HashMap<Callback, usize>>,
}

impl Faults {
    pub fn set(&self, callback: Callback, fault: Option<Fault>) {
        let mut faults = self.faults.lock().unwrap();
        match fault {
            Some(fault) => faults.insert(callback, fault),
            None => faults.remove(&callback),
        };
    }

    pub fn clear(&self) {
        self.faults.lock().unwrap().clear();
    }

    pub fn calls(&self, callback: Callback) -> usize {
        self.calls.lock().unwrap().get(&callback).copied().unwrap_or(0)
    }

    /// Counts the call, then fails or panics as configured.
    pub fn check(&self, callback: Callback) -> HostResult<()> {
        *self.calls.lock().unwrap().entry(callback).or_default() += 1;
        let fault = self.faults.lock().unwrap().get(&callback).cloned();
        match fault {
            None => Ok(()),
            Some(Fault::Error(e)) => Err(e),
            Some(Fault::Panic) => panic!("chaos host: {callback:?} panicked on purpose"),
        }
    }
}

// ---- the host ------------------------------------------------------------------------------------

/// Creates, loads, resumes, lists and deletes [`ChaosSession`]s; authenticates.
pub struct ChaosHost {
    pub faults: Arc<Faults>,
    counter: AtomicUsize,
    /// Every session the host opened, in order (also those the facade discarded).
    pub sessions: Mutex<Vec<Arc<ChaosSession>>>,
    /// Stored sessions: id → cwd as the catalog reports it.
    pub stored: Mutex<BTreeMap<String, Option<PathBuf>>>,
    /// Whether `session/new` needs `authenticate` first.
    pub auth_required: AtomicBool,
    /// Session ids passed to `delete_session`, in order.
    pub deletes: Mutex<Vec<String>>,
    /// Turn-script steps are separated by this many `yield_now`s (0: none).
    pub yields: AtomicUsize,
}

impl ChaosHost {
    pub fn new() -> Arc<Self> {
        let stored = BTreeMap::from([
            ("stored-1".to_owned(), Some(PathBuf::from("/tmp"))),
            ("stored-2".to_owned(), None),
            ("stored-3".to_owned(), Some(PathBuf::from("relative/dir"))),
            ("stored-4".to_owned(), Some(PathBuf::from("/"))),
        ]);
        Arc::new(Self {
            faults: Arc::default(),
            counter: AtomicUsize::new(0),
            sessions: Mutex::default(),
            stored: Mutex::new(stored),
            auth_required: AtomicBool::new(false),
            deletes: Mutex::default(),
            yields: AtomicUsize::new(1),
        })
    }

    /// Options with every host part present, compaction on, and short grace periods.
    pub fn options(self: &Arc<Self>) -> Options {
        Options::new(self.clone())
            .loader(self.clone())
            .resumer(self.clone())
            .catalog(self.clone())
            .deleter(self.clone())
            .authenticator(self.clone())
            .compaction(true)
            .max_page_size(2)
            .cancel_grace(Duration::from_millis(500))
            .close_grace(Duration::from_millis(500))
    }

    pub fn all_sessions(&self) -> Vec<Arc<ChaosSession>> {
        self.sessions.lock().unwrap().clone()
    }

    /// The most recently opened session with this id.
    pub fn session(&self, id: &str) -> Arc<ChaosSession> {
        self.sessions
            .lock()
            .unwrap()
            .iter()
            .rev()
            .find(|s| &*s.id.0 == id)
            .cloned()
            .unwrap_or_else(|| panic!("no session {id}"))
    }

    /// Sessions whose shutdown hook did not run exactly once, as `(id, count)`.
    pub fn shutdown_anomalies(&self) -> Vec<(String, usize)> {
        self.all_sessions()
            .iter()
            .map(|s| (s.id.0.to_string(), s.shutdowns.load(Ordering::SeqCst)))
            .filter(|(_, n)| *n != 1)
            .collect()
    }

    fn open(&self, id: &str, cwd: Option<PathBuf>) -> Arc<ChaosSession> {
        let session = ChaosSession::new(id, self.faults.clone(), self.yields.load(Ordering::Relaxed));
        self.sessions.lock().unwrap().push(session.clone());
        self.stored.lock().unwrap().entry(id.to_owned()).or_insert(cwd);
        session
    }

    fn reopen(&self, id: &SessionId, setup: &Setup) -> HostResult<Arc<ChaosSession>> {
        if !self.stored.lock().unwrap().contains_key(&*id.0) {
            return Err(Error::unknown_session(&id.0));
        }
        Ok(self.open(&id.0, Some(setup.cwd().to_path_buf())))
    }
}

/// A short stored history for `session/load` replay.
pub fn history_of(id: &str) -> Vec<Event> {
    let at = Some((LoopId::new("main"), TurnId::new(format!("{id}-old"))));
    let call = ToolCallRequest::new(ToolCallId::new("old-call"), "Read", ToolKind::Read, json!({"path": "/x"}));
    let kinds = vec![
        (EventKind::TurnStarted { message: UserMessage::new(vec![text_block("hello")]) }, Visibility::Public),
        (
            EventKind::StepDone {
                messages: vec![
                    Message::Ai(AiMessage {
                        content: vec![text_block("hi there")],
                        thoughts: vec![text_block("hmm")],
                        tool_calls: vec![call],
                    }),
                    Message::ToolResult(ToolResultMessage::new(
                        ToolCallId::new("old-call"),
                        vec![text_block("contents").into()],
                        false,
                    )),
                ],
            },
            Visibility::Public,
        ),
        (EventKind::TurnStarted { message: UserMessage::new(vec![text_block(INTERNAL)]) }, Visibility::Internal),
        (EventKind::ContextMeasured { used: 10, size: 100, cost: None }, Visibility::Public),
        (EventKind::TurnDone { message: None, stop: None }, Visibility::Public),
    ];
    kinds
        .into_iter()
        .enumerate()
        .map(|(seq, (kind, visibility))| Event {
            header: EventHeader {
                id: EventId::new(format!("{id}-h{seq}")),
                seq: seq as u64,
                class: EventClass::Enduring,
                visibility,
                cause: Cause::default(),
                coordinates: Coordinates {
                    loop_id: at.as_ref().map(|a| a.0.clone()),
                    turn_id: at.as_ref().map(|a| a.1.clone()),
                },
            },
            kind,
        })
        .collect()
}

#[async_trait]
impl SessionHost for ChaosHost {
    async fn new_session(&self, setup: Setup) -> HostResult<Arc<dyn LiveSession>> {
        self.faults.check(Callback::NewSession)?;
        let n = self.counter.fetch_add(1, Ordering::SeqCst) + 1;
        Ok(self.open(&format!("f{n}"), Some(setup.cwd().to_path_buf())))
    }
}

#[async_trait]
impl SessionLoader for ChaosHost {
    async fn load_session(&self, session_id: SessionId, setup: Setup) -> HostResult<LoadedSession> {
        self.faults.check(Callback::Load)?;
        // Cancel-safe, as a host must be: the facade drops this future when the client cancels
        // the request, so nothing is opened before the last await.
        tokio::task::yield_now().await;
        let session = self.reopen(&session_id, &setup)?;
        Ok(LoadedSession { history: history_of(&session_id.0), session })
    }
}

#[async_trait]
impl SessionResumer for ChaosHost {
    async fn resume_session(&self, session_id: SessionId, setup: Setup) -> HostResult<Arc<dyn LiveSession>> {
        self.faults.check(Callback::Resume)?;
        tokio::task::yield_now().await;
        let session = self.reopen(&session_id, &setup)?;
        Ok(session)
    }
}

#[async_trait]
impl SessionCatalog for ChaosHost {
    async fn list_sessions(&self) -> HostResult<Vec<SessionCatalogEntry>> {
        self.faults.check(Callback::List)?;
        Ok(self
            .stored
            .lock()
            .unwrap()
            .iter()
            .rev()
            .map(|(id, cwd)| SessionCatalogEntry {
                session_id: SessionId::new(id.as_str()),
                cwd: cwd.clone(),
                additional_directories: Vec::new(),
                title: Some(format!("title of {id}")),
                updated_at: Some("2026-11-30T12:00:00Z".into()),
            })
            .collect())
    }
}

#[async_trait]
impl SessionDeleter for ChaosHost {
    async fn delete_session(&self, session_id: SessionId) -> HostResult<()> {
        self.faults.check(Callback::Delete)?;
        self.deletes.lock().unwrap().push(session_id.0.to_string());
        self.stored.lock().unwrap().remove(&*session_id.0);
        Ok(())
    }
}

#[async_trait]
impl Authenticator for ChaosHost {
    fn methods(&self) -> Vec<AuthMethod> {
        vec![AuthMethod::Agent(AuthMethodAgent::new("token", "API token"))]
    }

    fn requires_authentication(&self) -> bool {
        self.auth_required.load(Ordering::SeqCst)
    }

    async fn authenticate(&self, _method_id: AuthMethodId) -> HostResult<()> {
        self.faults.check(Callback::Authenticate)
    }

    fn supports_logout(&self) -> bool {
        true
    }

    async fn logout(&self) -> HostResult<()> {
        Ok(())
    }
}

// ---- the sessions --------------------------------------------------------------------------------

/// Command numbers, unique in the process: a session reopened under the same id never reuses
/// the turn ids of its earlier life.
static COMMANDS: AtomicU64 = AtomicU64::new(0);

/// The running turn of a session.
struct TurnCtl {
    interrupted: CancellationToken,
    gates: Mutex<HashMap<GateId, oneshot::Sender<GateResponse>>>,
}

/// A live session whose turns follow the prompt's script (see the module docs).
pub struct ChaosSession {
    pub id: SessionId,
    me: Weak<ChaosSession>,
    faults: Arc<Faults>,
    yields: usize,
    subscribers: Mutex<Vec<mpsc::UnboundedSender<Event>>>,
    seq: AtomicU64,
    current: Mutex<Option<Arc<TurnCtl>>>,
    compacting: Mutex<Vec<CancellationToken>>,
    pub submits: AtomicUsize,
    pub interrupts: AtomicUsize,
    pub shutdowns: AtomicUsize,
    pub gate_answers: Mutex<Vec<(GateId, GateResponse)>>,
    config: Mutex<(String, String, bool)>,
}

impl ChaosSession {
    pub fn new(id: &str, faults: Arc<Faults>, yields: usize) -> Arc<Self> {
        Arc::new_cyclic(|me| Self {
            id: SessionId::new(id),
            me: me.clone(),
            faults,
            yields,
            subscribers: Mutex::default(),
            seq: AtomicU64::new(0),
            current: Mutex::default(),
            compacting: Mutex::default(),
            submits: AtomicUsize::new(0),
            interrupts: AtomicUsize::new(0),
            shutdowns: AtomicUsize::new(0),
            gate_answers: Mutex::default(),
            config: Mutex::new(("ask".into(), "fast".into(), false)),
        })
    }

    fn emit(&self, kind: EventKind, visibility: Visibility, command: Option<&CommandId>, at: Option<(&str, &str)>) {
        let seq = self.seq.fetch_add(1, Ordering::SeqCst);
        let class = match kind {
            EventKind::TokenDelta { .. } | EventKind::ToolCallProgress { .. } => EventClass::Ephemeral,
            _ => EventClass::Enduring,
        };
        let event = super::event::make_event(&self.id, seq, kind, class, visibility, command, at);
        self.subscribers.lock().unwrap().retain(|tx| tx.send(event.clone()).is_ok());
    }

    fn options(&self) -> Vec<SessionConfigOption> {
        let (mode, model, verbose) = self.config.lock().unwrap().clone();
        vec![
            SessionConfigOption::select(
                "mode",
                "Mode",
                mode,
                vec![SessionConfigSelectOption::new("ask", "Ask"), SessionConfigSelectOption::new("code", "Code")],
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

    async fn pause(&self) {
        for _ in 0..self.yields {
            tokio::task::yield_now().await;
        }
    }
}

/// Text of events that must never reach the client: of other turns, loops or commands.
pub const DECOY: &str = "DECOY";
/// Text of `Internal` events, which must never reach the client.
pub const INTERNAL: &str = "INTERNAL";

/// The turn (command id) a `session/update` of a scripted turn belongs to, when it says.
pub fn turn_of(update: &Value) -> Option<String> {
    let update = update.pointer("/params/update").unwrap_or(update);
    if let Some(text) = update.pointer("/content/text").and_then(Value::as_str) {
        return text.rsplit_once('@').map(|(_, turn)| turn.to_owned());
    }
    let id = update.get("toolCallId").and_then(Value::as_str)?;
    id.strip_suffix("-call").or_else(|| id.strip_suffix("-read")).map(str::to_owned)
}

/// One scripted turn. Returns when the turn ended (or never started).
async fn run_turn(session: Arc<ChaosSession>, ctl: Arc<TurnCtl>, command: CommandId, text: String) {
    let turn = command.to_string();
    let at = Some(("main", turn.as_str()));
    let public = Visibility::Public;
    let (verb, rest) = text.trim().split_once(' ').unwrap_or((text.trim(), ""));
    // Every streamed text carries its turn (`text@turn`; tool call ids start with the turn), so a
    // client can tell which prompt an update belongs to (see [`turn_of`]).
    let delta = |text: &str| EventKind::TokenDelta { text: format!("{text}@{turn}"), channel: TokenChannel::Message };
    session.pause().await;
    if verb == "nostart" {
        ctl.interrupted.cancelled().await;
        return;
    }
    if verb == "decoy" {
        let other = CommandId::new(format!("{turn}-other"));
        session.emit(
            EventKind::TurnStarted { message: UserMessage::default() },
            public,
            Some(&other),
            Some(("side", "t0")),
        );
        session.emit(delta(DECOY), public, None, Some(("side", "t0")));
        session.emit(EventKind::TurnDone { message: None, stop: None }, public, None, Some(("side", "t0")));
    }
    session.emit(
        EventKind::TurnStarted { message: UserMessage::new(vec![text_block(text.clone())]) },
        public,
        Some(&command),
        at,
    );
    // Emits one event unless the turn was interrupted, which ends it.
    macro_rules! step {
        ($kind:expr) => {{
            session.pause().await;
            if ctl.interrupted.is_cancelled() {
                session.emit(EventKind::TurnInterrupted {}, public, None, at);
                return;
            }
            session.emit($kind, public, None, at);
        }};
    }
    match verb {
        "wait" => {
            step!(delta("wait"));
            ctl.interrupted.cancelled().await;
            session.emit(EventKind::TurnInterrupted {}, public, None, at);
        }
        "ask" => {
            step!(EventKind::GateOpened {
                gate: Box::new(Gate {
                    id: GateId::new(format!("{turn}-ask")),
                    kind: GateKind::AskUser,
                    resolver: GateResolver::Loop,
                    tool_call_id: None,
                    title: "what now?".into(),
                    controls: Vec::new(),
                    options: Vec::new(),
                    schema: None,
                    url: None,
                }),
            });
            ctl.interrupted.cancelled().await;
            session.emit(EventKind::TurnInterrupted {}, public, None, at);
        }
        "gate" => {
            let call_id = ToolCallId::new(format!("{turn}-call"));
            let gate_id = GateId::new(format!("{turn}-gate"));
            let (tx, rx) = oneshot::channel();
            ctl.gates.lock().unwrap().insert(gate_id.clone(), tx);
            step!(EventKind::tool_call_started(call_id.clone(), "Run", ToolKind::Execute, json!({"command": "ls"})));
            step!(EventKind::GateOpened {
                gate: Box::new(Gate {
                    id: gate_id,
                    kind: GateKind::Permission,
                    resolver: GateResolver::Loop,
                    tool_call_id: Some(call_id.clone()),
                    title: "run ls?".into(),
                    controls: vec![ApprovalAction::Approve, ApprovalAction::ApproveAlways, ApprovalAction::Deny],
                    options: Vec::new(),
                    schema: None,
                    url: None,
                }),
            });
            let answer = tokio::select! {
                () = ctl.interrupted.cancelled() => None,
                answer = rx => answer.ok(),
            };
            let Some(answer) = answer else {
                session.emit(EventKind::TurnInterrupted {}, public, None, at);
                return;
            };
            let denied = answer == GateResponse::Approval(ApprovalAction::Deny);
            step!(EventKind::tool_call_completed(
                call_id,
                vec![text_block(if denied { "denied" } else { "done" }).into()],
                denied
            ));
            step!(EventKind::TurnDone { message: None, stop: None });
        }
        "fail" => step!(EventKind::TurnFailed { error: "the scripted turn failed".into() }),
        "secretfail" => {
            session.pause().await;
            session.emit(EventKind::TurnFailed { error: "secret".into() }, Visibility::Internal, None, at);
        }
        "end" => {
            step!(delta("ending"));
            session.subscribers.lock().unwrap().clear();
        }
        "stream" => {
            let n: usize = rest.trim().parse().unwrap_or(3).min(10_000);
            for i in 0..n {
                step!(delta(&format!("t{i} ")));
            }
            step!(EventKind::TurnDone { message: None, stop: None });
        }
        "stop" => {
            let stop = match rest.trim() {
                "max_tokens" => Some(StopReason::MaxTokens),
                "max_turn_requests" => Some(StopReason::MaxTurnRequests),
                "refusal" => Some(StopReason::Refusal),
                "cancelled" => Some(StopReason::Cancelled),
                "end_turn" => Some(StopReason::EndTurn),
                _ => None,
            };
            step!(EventKind::TurnDone { message: None, stop });
        }
        _ => {
            step!(EventKind::TokenDelta { text: format!("thinking@{turn}"), channel: TokenChannel::Thought });
            for word in text.split_whitespace().take(16) {
                step!(delta(word));
            }
            // Internal events and events of other turns are never forwarded.
            session.emit(
                EventKind::TurnFailed { error: "not this turn".into() },
                public,
                None,
                Some(("main", "other")),
            );
            session.emit(delta(DECOY), public, None, Some(("other", turn.as_str())));
            session.emit(delta(INTERNAL), Visibility::Internal, None, at);
            let call_id = ToolCallId::new(format!("{turn}-read"));
            step!(EventKind::tool_call_started(call_id.clone(), "Read", ToolKind::Read, json!({})));
            step!(EventKind::tool_call_progress(
                call_id.clone(),
                Some(acp_facade::acp::ToolCallStatus::InProgress),
                Some(vec![text_block("…").into()])
            ));
            step!(EventKind::tool_call_completed(call_id, vec![text_block("read").into()], false));
            step!(EventKind::ContextMeasured { used: 42, size: 1000, cost: None });
            step!(EventKind::SessionMetaChanged { title: Some(format!("about {verb}")), updated_at: None });
            step!(EventKind::StepDone {
                messages: vec![Message::Ai(AiMessage {
                    content: vec![text_block(text.clone())],
                    ..AiMessage::default()
                })]
            });
            step!(EventKind::TurnDone { message: None, stop: None });
        }
    }
}

#[async_trait]
impl LiveSession for ChaosSession {
    fn id(&self) -> SessionId {
        self.id.clone()
    }

    fn subscribe_events(&self) -> HostResult<EventStream> {
        let (tx, rx) = mpsc::unbounded_channel();
        self.subscribers.lock().unwrap().push(tx);
        Ok(Box::pin(futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|e| (e, rx)) })))
    }

    async fn submit(&self, prompt: Vec<ContentBlock>) -> HostResult<CommandId> {
        self.faults.check(Callback::Submit)?;
        self.submits.fetch_add(1, Ordering::SeqCst);
        let n = COMMANDS.fetch_add(1, Ordering::SeqCst) + 1;
        let command = CommandId::new(format!("{}-c{n}", self.id));
        let ctl = Arc::new(TurnCtl { interrupted: CancellationToken::new(), gates: Mutex::default() });
        // A new turn replaces one that never ended (its interrupt was lost to a fault).
        if let Some(old) = self.current.lock().unwrap().replace(ctl.clone()) {
            old.interrupted.cancel();
        }
        let me = self.me.upgrade().expect("the session is alive while it is called");
        tokio::spawn(run_turn(me, ctl, command.clone(), plain_text(&prompt)));
        Ok(command)
    }

    async fn interrupt(&self) -> HostResult<()> {
        self.faults.check(Callback::Interrupt)?;
        self.interrupts.fetch_add(1, Ordering::SeqCst);
        if let Some(turn) = self.current.lock().unwrap().as_ref() {
            turn.interrupted.cancel();
        }
        for compaction in self.compacting.lock().unwrap().drain(..) {
            compaction.cancel();
        }
        Ok(())
    }

    async fn respond_gate(&self, gate_id: GateId, response: GateResponse) -> HostResult<()> {
        self.faults.check(Callback::RespondGate)?;
        self.gate_answers.lock().unwrap().push((gate_id.clone(), response.clone()));
        let waiter = self.current.lock().unwrap().as_ref().and_then(|t| t.gates.lock().unwrap().remove(&gate_id));
        if let Some(waiter) = waiter {
            let _ = waiter.send(response);
        }
        Ok(())
    }

    fn closer(&self) -> Option<&dyn SessionCloser> {
        Some(self)
    }

    fn compactor(&self) -> Option<&dyn Compactor> {
        Some(self)
    }

    fn config(&self) -> Option<&dyn RuntimeConfig> {
        Some(self)
    }
}

#[async_trait]
impl SessionCloser for ChaosSession {
    async fn shutdown(&self) -> HostResult<()> {
        self.shutdowns.fetch_add(1, Ordering::SeqCst);
        self.faults.check(Callback::Shutdown)
    }
}

#[async_trait]
impl Compactor for ChaosSession {
    async fn compact(&self) -> HostResult<CommandId> {
        self.faults.check(Callback::Compact)?;
        let n = COMMANDS.fetch_add(1, Ordering::SeqCst) + 1;
        let command = CommandId::new(format!("{}-k{n}", self.id));
        let interrupted = CancellationToken::new();
        self.compacting.lock().unwrap().push(interrupted.clone());
        let me = self.me.upgrade().expect("the session is alive while it is called");
        let reply = command.clone();
        tokio::spawn(async move {
            me.pause().await;
            let kind = if interrupted.is_cancelled() {
                EventKind::CompactWaiterRejected { reason: "interrupted".into() }
            } else {
                EventKind::CompactWaiterResolved {}
            };
            me.emit(kind, Visibility::Public, Some(&reply), None);
        });
        Ok(command)
    }
}

#[async_trait]
impl RuntimeConfig for ChaosSession {
    async fn snapshot(&self) -> HostResult<Vec<SessionConfigOption>> {
        self.faults.check(Callback::ConfigSnapshot)?;
        Ok(self.options())
    }

    async fn set_option(&self, config_id: SessionConfigId, value: SessionConfigOptionValue) -> HostResult<()> {
        self.faults.check(Callback::ConfigSet)?;
        let mut state = self.config.lock().unwrap();
        match (&*config_id.0, &value) {
            ("mode", SessionConfigOptionValue::ValueId { value }) => state.0 = value.0.to_string(),
            ("model", SessionConfigOptionValue::ValueId { value }) => state.1 = value.0.to_string(),
            ("verbose", SessionConfigOptionValue::Boolean { value }) => state.2 = *value,
            _ => return Err(Error::invalid_params_msg("the controller got a bad option")),
        }
        Ok(())
    }
}

// ---- params for every method ---------------------------------------------------------------------

/// Every method a client can send, plus an unknown one.
pub const METHODS: [&str; 15] = [
    "initialize",
    "authenticate",
    "logout",
    "session/new",
    "session/load",
    "session/resume",
    "session/list",
    "session/delete",
    "session/close",
    "session/set_mode",
    "session/set_config_option",
    "session/prompt",
    "session/cancel",
    "$/cancel_request",
    "x/unknown",
];

/// Prompt texts covering every turn script.
pub const PROMPTS: [&str; 13] = [
    "hello there",
    "wait",
    "gate",
    "ask why",
    "fail",
    "secretfail",
    "end",
    "decoy",
    "stream 5",
    "stop max_tokens",
    "stop refusal",
    "/compact",
    "nostart",
];

/// Session ids a message may name: the host's first sessions, stored ones, and bad ones.
pub fn session_name(n: u8) -> String {
    match n % 12 {
        0..=4 => format!("f{}", n % 12 + 1),
        5..=8 => format!("stored-{}", n % 12 - 4),
        9 => String::new(),
        10 => "bad\u{7}id".into(),
        _ => "x".repeat(300),
    }
}

/// Well-formed params for `method`, varied by `pick`.
pub fn valid_params(method: &str, session: &str, pick: u8) -> Value {
    let cwd = match pick % 5 {
        0 | 1 => "/tmp",
        2 => "/",
        3 => "relative",
        _ => "/no/such/dir",
    };
    match method {
        "initialize" => json!({
            "protocolVersion": if pick % 4 == 3 { 99 } else { 1 },
            "clientCapabilities": {"session": {"configOptions": {"boolean": {}}}},
        }),
        "authenticate" => json!({"methodId": if pick % 3 == 2 { "nope" } else { "token" }}),
        "logout" => json!({}),
        "session/new" => json!({"cwd": cwd, "mcpServers": []}),
        "session/load" | "session/resume" => json!({"sessionId": session, "cwd": cwd, "mcpServers": []}),
        "session/list" => match pick % 4 {
            0 => json!({}),
            1 => json!({"cwd": "/tmp"}),
            2 => json!({"cursor": "eyJhZnRlciI6ImYxIiwiY3dkIjpudWxsfQ.AAAA"}),
            _ => json!({"cursor": "garbage"}),
        },
        "session/delete" | "session/close" | "session/cancel" => json!({"sessionId": session}),
        "session/set_mode" => {
            let mode = ["ask", "code", "nope"][usize::from(pick % 3)];
            json!({"sessionId": session, "modeId": mode})
        }
        "session/set_config_option" => match pick % 5 {
            0 => json!({"sessionId": session, "configId": "model", "value": "smart"}),
            1 => json!({"sessionId": session, "configId": "mode", "value": "code"}),
            2 => json!({"sessionId": session, "configId": "verbose", "type": "boolean", "value": true}),
            3 => json!({"sessionId": session, "configId": "nope", "value": "x"}),
            _ => json!({"sessionId": session, "configId": "model", "value": "fast"}),
        },
        "session/prompt" => {
            let text = PROMPTS[usize::from(pick) % PROMPTS.len()];
            let mut prompt = vec![json!({"type": "text", "text": text})];
            if pick >= 200 {
                prompt.push(json!({"type": "image", "data": "AAAA", "mimeType": "image/png"}));
            } else if pick >= 180 {
                prompt.push(json!({"type": "resource_link", "uri": "file:///x", "name": "x"}));
            }
            json!({"sessionId": session, "prompt": prompt})
        }
        "$/cancel_request" => json!({"requestId": i64::from(pick % 16)}),
        _ => json!({"anything": pick}),
    }
}

/// Replaces the value at one of `params`'s fields (chosen by `which`, recursively into objects and
/// arrays) with `replacement`; adds a field when `params` is an empty object.
pub fn mutate(params: &mut Value, which: usize, replacement: Value) {
    mutate_path(params, which, replacement);
}

fn mutate_path(value: &mut Value, which: usize, replacement: Value) {
    // Counts nodes in pre-order and replaces the `which`-th (modulo the count).
    fn count(value: &Value) -> usize {
        1 + match value {
            Value::Object(map) => map.values().map(count).sum(),
            Value::Array(items) => items.iter().map(count).sum(),
            _ => 0,
        }
    }
    fn replace(value: &mut Value, mut index: usize, replacement: &mut Option<Value>) -> usize {
        if index == 0 {
            *value = replacement.take().unwrap_or(Value::Null);
            return usize::MAX;
        }
        index -= 1;
        let children: Vec<&mut Value> = match value {
            Value::Object(map) => map.values_mut().collect(),
            Value::Array(items) => items.iter_mut().collect(),
            _ => Vec::new(),
        };
        for child in children {
            let size = count(child);
            if index < size {
                replace(child, index, replacement);
                return usize::MAX;
            }
            index -= size;
        }
        index
    }
    let total = count(value);
    let mut replacement = Some(replacement);
    if total == 1
        && let Value::Object(map) = value
    {
        map.insert("extra".into(), replacement.take().unwrap_or(Value::Null));
        return;
    }
    replace(value, which % total, &mut replacement);
}

// ---- the wire harness ----------------------------------------------------------------------------

/// One thing the test client does.
#[derive(Debug, Clone)]
pub enum Step {
    /// A request with the next numeric id.
    Request { method: String, params: Value },
    /// A request with a chosen id (duplicates, strings, null, bad ids).
    RequestWithId { id: Value, method: String, params: Value },
    /// A notification.
    Notify { method: String, params: Value },
    /// Raw bytes; a `\n` is appended.
    Raw(Vec<u8>),
    /// `$/cancel_request` for the request sent `back` numeric requests ago.
    CancelRequest { back: usize },
    /// Answers the oldest unanswered `session/request_permission` seen so far, if any.
    Answer(Answer),
    /// Lets the agent run until it is idle (with a paused clock) or for a moment.
    Settle,
}

/// An answer to a permission request.
#[derive(Debug, Clone)]
pub enum Answer {
    Selected(String),
    Cancelled,
    Error,
    Garbage(Value),
}

/// How the agent under test is set up.
#[derive(Debug, Clone)]
pub struct WireSetup {
    pub max_message_size: usize,
    pub auth_required: bool,
    pub compaction: bool,
    pub close: bool,
}

impl Default for WireSetup {
    fn default() -> Self {
        Self { max_message_size: 4096, auth_required: false, compaction: true, close: true }
    }
}

/// What a run produced.
pub struct Report {
    /// Every line the client wrote, in order, exactly as written.
    pub input: Vec<u8>,
    /// Every message the agent wrote, in order.
    pub output: Vec<Value>,
    /// Lines the agent wrote that were not JSON.
    pub garbage: Vec<String>,
    pub serve: Result<(), String>,
    pub host: Arc<ChaosHost>,
    pub live_after: usize,
}

impl Report {
    /// The ids the agent must answer, with how often each was sent, computed from the input
    /// exactly as the agent frames and classifies it: requests, and invalid requests whose id
    /// could be read.
    pub fn sent_requests(&self, max: usize) -> HashMap<RequestId, usize> {
        futures::executor::block_on(async {
            let mut reader = LineReader::new(&self.input[..], max);
            let mut ids: HashMap<RequestId, usize> = HashMap::new();
            loop {
                match reader.next_frame().await.expect("reading memory cannot fail") {
                    Frame::Eof => return ids,
                    Frame::Oversize { .. } => {}
                    Frame::Line(line) => {
                        if line.iter().all(u8::is_ascii_whitespace) {
                            continue;
                        }
                        match classify(&line) {
                            Ok(Incoming::Request(request)) => *ids.entry(request.id).or_default() += 1,
                            // An invalid request whose id could be read is answered with that id.
                            Err(Malformed { id, error: Some(_) }) => *ids.entry(id).or_default() += 1,
                            _ => {}
                        }
                    }
                }
            }
        })
    }

    /// Checks the connection's invariants; returns every violation.
    pub fn violations(&self, max: usize) -> Vec<String> {
        let mut problems = Vec::new();
        if let Err(e) = &self.serve {
            problems.push(format!("serve failed: {e}"));
        }
        for line in &self.garbage {
            problems.push(format!("the agent wrote a line that is not JSON: {line:?}"));
        }
        let sent = self.sent_requests(max);
        let mut answered: HashMap<RequestId, usize> = HashMap::new();
        for message in &self.output {
            if message.get("jsonrpc") != Some(&json!("2.0")) {
                problems.push(format!("bad envelope: {message}"));
            }
            let method = message.get("method").and_then(Value::as_str);
            match (method, message.get("id")) {
                (Some("session/update"), None) => {
                    let text = message.to_string();
                    if text.contains(DECOY) || text.contains(INTERNAL) {
                        problems
                            .push(format!("an event of another turn or an internal one reached the client: {message}"));
                    }
                }
                (Some("session/request_permission"), Some(_)) | (Some("$/cancel_request"), None) => {}
                (Some(other), _) => problems.push(format!("unexpected message `{other}` from the agent: {message}")),
                (None, Some(id)) => {
                    if message.get("result").is_some() == message.get("error").is_some() {
                        problems.push(format!("a response needs exactly one of result/error: {message}"));
                    }
                    match serde_json::from_value::<RequestId>(id.clone()) {
                        Ok(RequestId::Null) => {}
                        Ok(id) => *answered.entry(id).or_default() += 1,
                        Err(_) => problems.push(format!("response with a bad id: {message}")),
                    }
                }
                (None, None) => problems.push(format!("neither request, notification nor response: {message}")),
            }
        }
        for (id, count) in &sent {
            if *id == RequestId::Null {
                continue;
            }
            let got = answered.get(id).copied().unwrap_or(0);
            if got != *count {
                problems.push(format!("request {id} was sent {count} times and answered {got} times"));
            }
        }
        for id in answered.keys() {
            if !sent.contains_key(id) {
                problems.push(format!("a response to {id}, which was never sent"));
            }
        }
        if self.live_after != 0 {
            problems.push(format!("{} sessions still live after serve returned", self.live_after));
        }
        if self.host.faults.faults.lock().unwrap().is_empty() {
            for (id, count) in self.host.shutdown_anomalies() {
                problems.push(format!("session {id} was shut down {count} times"));
            }
        }
        problems
    }

    /// Panics with every violation and the exchange, if there is any.
    pub fn assert_ok(&self, max: usize) {
        let problems = self.violations(max);
        assert!(
            problems.is_empty(),
            "{}\n--- input ---\n{}\n--- output ---\n{}",
            problems.join("\n"),
            String::from_utf8_lossy(&self.input),
            self.output.iter().map(Value::to_string).collect::<Vec<_>>().join("\n")
        );
    }
}

/// The hang guard: far longer than any run needs (grace periods included).
pub const HANG_GUARD: Duration = Duration::from_secs(600);

/// A single-threaded runtime whose clock is paused: idle time (grace periods, `Settle`) passes
/// at once, runs are deterministic, and a deadlock trips the hang guard at once.
pub fn paused_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .expect("a current-thread runtime")
}

fn agent_for(setup: &WireSetup) -> (Arc<ChaosHost>, Agent) {
    let host = ChaosHost::new();
    host.auth_required.store(setup.auth_required, Ordering::SeqCst);
    let options =
        host.options().compaction(setup.compaction).close(setup.close).max_message_size(setup.max_message_size);
    (host, Agent::new(options))
}

/// Runs `steps` against a fresh agent on a paused clock; panics on a hang.
pub fn run_steps(setup: &WireSetup, steps: &[Step]) -> Report {
    paused_runtime().block_on(async {
        tokio::time::timeout(HANG_GUARD, drive(setup, steps))
            .await
            .unwrap_or_else(|_| panic!("hang: the exchange did not finish\nsteps: {steps:#?}"))
    })
}

/// Writes `input` to a fresh agent in pieces of `chunk` bytes, then hangs up; panics on a hang.
pub fn run_raw(setup: &WireSetup, input: &[u8], chunk: usize) -> Report {
    paused_runtime().block_on(async {
        tokio::time::timeout(HANG_GUARD, drive_raw(setup, input, chunk.max(1))).await.unwrap_or_else(|_| {
            panic!("hang: the exchange did not finish\ninput: {:?}", String::from_utf8_lossy(input))
        })
    })
}

struct Client {
    writer: tokio::io::WriteHalf<tokio::io::DuplexStream>,
    messages: mpsc::UnboundedReceiver<Result<Value, String>>,
    reader: tokio::task::JoinHandle<()>,
    serve: tokio::task::JoinHandle<std::io::Result<()>>,
    input: Vec<u8>,
    output: Vec<Value>,
    garbage: Vec<String>,
}

impl Client {
    fn start(agent: Agent) -> Self {
        let (client_side, agent_side) = tokio::io::duplex(64 * 1024);
        let (agent_read, agent_write) = tokio::io::split(agent_side);
        let serve = tokio::spawn(async move { agent.serve(agent_read, agent_write).await });
        let (read, writer) = tokio::io::split(client_side);
        let (tx, messages) = mpsc::unbounded_channel();
        let reader = tokio::spawn(async move {
            let mut lines = BufReader::new(read).split(b'\n');
            while let Ok(Some(line)) = lines.next_segment().await {
                let parsed =
                    serde_json::from_slice::<Value>(&line).map_err(|_| String::from_utf8_lossy(&line).into_owned());
                if tx.send(parsed).is_err() {
                    return;
                }
            }
        });
        Self { writer, messages, reader, serve, input: Vec::new(), output: Vec::new(), garbage: Vec::new() }
    }

    fn take(&mut self, message: Result<Value, String>) {
        match message {
            Ok(value) => self.output.push(value),
            Err(line) => self.garbage.push(line),
        }
    }

    /// Takes every message that already arrived.
    fn poll(&mut self) {
        while let Ok(message) = self.messages.try_recv() {
            self.take(message);
        }
    }

    async fn write(&mut self, bytes: &[u8]) {
        self.input.extend_from_slice(bytes);
        // The agent may have stopped reading only once it returned; then the bytes are lost.
        let _ = self.writer.write_all(bytes).await;
    }

    async fn finish(mut self, host: Arc<ChaosHost>, agent: &Agent) -> Report {
        let _ = self.writer.shutdown().await;
        let serve = match self.serve.await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(e.to_string()),
            Err(e) => Err(format!("serve panicked: {e}")),
        };
        let _ = self.reader.await;
        let (mut output, mut garbage) = (self.output, self.garbage);
        while let Some(message) = self.messages.recv().await {
            match message {
                Ok(value) => output.push(value),
                Err(line) => garbage.push(line),
            }
        }
        Report { input: self.input, output, garbage, serve, host, live_after: agent.live_sessions() }
    }
}

async fn drive_raw(setup: &WireSetup, input: &[u8], chunk: usize) -> Report {
    let (host, agent) = agent_for(setup);
    let mut client = Client::start(agent.clone());
    for piece in input.chunks(chunk) {
        client.write(piece).await;
        tokio::task::yield_now().await;
    }
    client.finish(host, &agent).await
}

async fn drive(setup: &WireSetup, steps: &[Step]) -> Report {
    let (host, agent) = agent_for(setup);
    let mut client = Client::start(agent.clone());
    let mut next_id: i64 = 1;
    let mut answered = 0usize;
    for step in steps {
        client.poll();
        let line = match step {
            Step::Request { method, params } => {
                let id = next_id;
                next_id += 1;
                json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string().into_bytes()
            }
            Step::RequestWithId { id, method, params } => {
                json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string().into_bytes()
            }
            Step::Notify { method, params } => {
                json!({"jsonrpc": "2.0", "method": method, "params": params}).to_string().into_bytes()
            }
            Step::Raw(bytes) => bytes.clone(),
            Step::CancelRequest { back } => {
                let id = (next_id - 1 - i64::try_from(*back).unwrap_or(0)).max(0);
                json!({"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": id}})
                    .to_string()
                    .into_bytes()
            }
            Step::Answer(answer) => {
                let asked: Vec<Value> = client
                    .output
                    .iter()
                    .filter(|m| m.get("method").and_then(Value::as_str) == Some("session/request_permission"))
                    .filter_map(|m| m.get("id").cloned())
                    .collect();
                let Some(id) = asked.get(answered).cloned() else { continue };
                answered += 1;
                let message = match answer {
                    Answer::Selected(option) => {
                        json!({"jsonrpc": "2.0", "id": id, "result": {"outcome": {"outcome": "selected", "optionId": option}}})
                    }
                    Answer::Cancelled => {
                        json!({"jsonrpc": "2.0", "id": id, "result": {"outcome": {"outcome": "cancelled"}}})
                    }
                    Answer::Error => {
                        json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32603, "message": "client failed"}})
                    }
                    Answer::Garbage(value) => json!({"jsonrpc": "2.0", "id": id, "result": value}),
                };
                message.to_string().into_bytes()
            }
            Step::Settle => {
                tokio::time::sleep(Duration::from_millis(5)).await;
                continue;
            }
        };
        let mut line = line;
        line.push(b'\n');
        client.write(&line).await;
        tokio::task::yield_now().await;
    }
    client.poll();
    client.finish(host, &agent).await
}
