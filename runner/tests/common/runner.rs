//! Test doubles for the batteries-included runner: a [`TurnRunner`] whose turns are picked by the
//! prompt's first word, with a [`Probe`] recording what the turns saw (permission answers,
//! cancellations, gate answers, compactions), plus helpers to start a runner-backed agent.

#![allow(dead_code, clippy::missing_panics_doc, clippy::must_use_candidate)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use acp_facade::acp::{
    SessionConfigOption, SessionConfigOptionCategory, SessionConfigSelectOption, SessionId, StopReason, ToolCallStatus,
    ToolKind,
};
use acp_facade::error::{Error, ErrorExt};
use acp_facade::harness::content::text_block;
use acp_facade::harness::{ApprovalAction, Event, EventClass, EventKind};
use acp_facade_runner::{Permission, Runner, RunnerSession, Store, Turn, TurnRunner};
use async_trait::async_trait;
use serde_json::{Value, json};
use tokio::sync::Notify;

use super::TestClient;

/// What the turns of a [`TestTurns`] observed.
#[derive(Default)]
pub struct Probe {
    /// Every answer `request_permission` returned, in order.
    pub permissions: Mutex<Vec<Permission>>,
    /// Every answer `ask_user` returned, in order.
    pub asked: Mutex<Vec<Option<Value>>>,
    /// How many turns saw their cancellation signal fire.
    pub cancellations: AtomicUsize,
    /// Signalled (one permit) when a turn is parked (waiting for cancellation, a gate, …).
    pub parked: Notify,
    /// `(session id, prompt text, cwd)` of every turn, in order.
    pub turns: Mutex<Vec<(String, String, String)>>,
    /// Session ids `compact` was called for.
    pub compactions: Mutex<Vec<String>>,
    /// Config values (`mode`, `model`) seen by `config` turns.
    pub config_seen: Mutex<Vec<(Option<String>, Option<String>)>>,
}

impl Probe {
    pub fn permissions(&self) -> Vec<Permission> {
        self.permissions.lock().unwrap().clone()
    }

    pub fn cancellations(&self) -> usize {
        self.cancellations.load(Ordering::SeqCst)
    }
}

/// How a [`TestTurns`] is configured.
#[derive(Clone, Default)]
pub struct TurnsSpec {
    /// Offer `mode` (`ask`/`code`) and `model` (`fast`/`smart`) config options.
    pub config: bool,
    /// Titles: the first prompt's first 12 characters.
    pub titles: bool,
    /// `/compact` support; `compact` fails with this message when set.
    pub compaction: bool,
    pub compact_fails: Option<String>,
}

/// A scripted [`TurnRunner`]. The prompt's first word picks the turn:
///
/// | prompt | the turn |
/// |---|---|
/// | `stream N` | N chunks of `text`, `t0 `, `t1 `, … |
/// | `say W1 W2 …` | `text` of each word (with a trailing space but the last) |
/// | `think T` | `thought(T)`, then `text("ok")` |
/// | `tool` | a `Read` tool call: `tool_progress` in_progress with content, then `complete_tool_call` |
/// | `toolfail` | an `Execute` tool call then `fail_tool_call` |
/// | `permit [once]` | a tool call + `request_permission` (all three controls, or approve/deny with `once`); the answer is recorded and streamed as text (`Allowed`, …), the call completed/failed |
/// | `usage` | `text("a")`, `usage(10, 100)`, `text("b")`, `usage(20, 100)` |
/// | `try` | `try_text("x")` and `try_thought("y")` (room in the queue: both succeed) |
/// | `wait` | parks until cancelled, records it, returns `end_turn` (the runner must still end it interrupted) |
/// | `ask Q` | `ask_user(Q)`, recording and streaming the answer |
/// | `error` | returns `Err` (-32603 `boom: the turn failed`) |
/// | `panic` | panics |
/// | `config` | records and streams the current `mode` and `model` values |
/// | `stop S` | returns stop reason S (`max_tokens`, `refusal`, …) |
/// | anything else | `text(prompt)` |
pub struct TestTurns {
    pub probe: Arc<Probe>,
    pub spec: TurnsSpec,
}

fn stop_reason(name: &str) -> StopReason {
    match name {
        "max_tokens" => StopReason::MaxTokens,
        "max_turn_requests" => StopReason::MaxTurnRequests,
        "refusal" => StopReason::Refusal,
        "cancelled" => StopReason::Cancelled,
        _ => StopReason::EndTurn,
    }
}

#[async_trait]
impl TurnRunner for TestTurns {
    async fn run_turn(&self, turn: &Turn) -> Result<StopReason, Error> {
        let text = turn.prompt_text();
        self.probe.turns.lock().unwrap().push((
            turn.session_id().0.to_string(),
            text.clone(),
            turn.cwd().display().to_string(),
        ));
        let (verb, rest) = text.split_once(' ').unwrap_or((text.as_str(), ""));
        match verb {
            "say" => {
                let words: Vec<&str> = rest.split(' ').collect();
                for (i, word) in words.iter().enumerate() {
                    let chunk = if i + 1 < words.len() { format!("{word} ") } else { (*word).to_owned() };
                    turn.text(chunk).await;
                }
            }
            "stream" => {
                let chunks: usize = rest.parse().expect("stream N");
                for i in 0..chunks {
                    turn.text(format!("t{i} ")).await;
                }
            }
            "think" => {
                turn.thought(rest).await;
                turn.text("ok").await;
            }
            "tool" => {
                let call = turn.start_tool_call("Read file", ToolKind::Read, json!({"path": "/tmp/a.txt"})).await;
                turn.tool_progress(&call, Some(ToolCallStatus::InProgress), Some(vec![text_block("reading")])).await;
                turn.complete_tool_call(&call, vec![text_block("file contents")]).await;
                turn.text("read it").await;
            }
            "toolfail" => {
                let call = turn.start_tool_call("Run rm", ToolKind::Execute, json!({"cmd": "rm -rf /"})).await;
                turn.fail_tool_call(&call, vec![text_block("refused")]).await;
            }
            "permit" => {
                let call = turn.start_tool_call("Edit file", ToolKind::Edit, json!({"path": "/tmp/b.txt"})).await;
                let controls: &[ApprovalAction] = if rest == "once" {
                    &[ApprovalAction::Approve, ApprovalAction::Deny]
                } else {
                    &[ApprovalAction::Approve, ApprovalAction::ApproveAlways, ApprovalAction::Deny]
                };
                let answer = turn.request_permission(&call, "Edit /tmp/b.txt", controls).await;
                self.probe.permissions.lock().unwrap().push(answer);
                match answer {
                    Permission::Cancelled => {
                        self.probe.cancellations.fetch_add(1, Ordering::SeqCst);
                        return Ok(StopReason::Cancelled);
                    }
                    a if a.is_allowed() => turn.complete_tool_call(&call, vec![text_block("edited")]).await,
                    _ => turn.fail_tool_call(&call, vec![text_block("denied")]).await,
                }
                turn.text(format!("{answer:?}")).await;
            }
            "usage" => {
                turn.text("a").await;
                turn.usage(10, 100).await;
                turn.text("b").await;
                turn.usage(20, 100).await;
            }
            "try" => {
                turn.try_text("x".to_owned()).expect("room for a message chunk");
                turn.try_thought("y".to_owned()).expect("room for a thought chunk");
            }
            "wait" => {
                self.probe.parked.notify_one();
                turn.cancelled().await;
                assert!(turn.is_cancelled());
                self.probe.cancellations.fetch_add(1, Ordering::SeqCst);
            }
            "ask" => {
                self.probe.parked.notify_one();
                let answer = turn.ask_user(rest).await;
                self.probe.asked.lock().unwrap().push(answer.clone());
                let Some(value) = answer else {
                    self.probe.cancellations.fetch_add(1, Ordering::SeqCst);
                    return Ok(StopReason::Cancelled);
                };
                turn.text(value.to_string()).await;
            }
            "error" => {
                turn.text("partial").await;
                return Err(Error::internal_msg("boom: the turn failed"));
            }
            "panic" => panic!("the test turn panicked on purpose"),
            "config" => {
                let seen = (turn.config_value("mode"), turn.config_value("model"));
                turn.text(format!("{seen:?}")).await;
                self.probe.config_seen.lock().unwrap().push(seen);
            }
            "stop" => return Ok(stop_reason(rest)),
            _ => turn.text(text.clone()).await,
        }
        Ok(StopReason::EndTurn)
    }

    fn config_options(&self) -> Vec<SessionConfigOption> {
        if !self.spec.config {
            return Vec::new();
        }
        vec![
            SessionConfigOption::select(
                "mode",
                "Mode",
                "ask",
                vec![SessionConfigSelectOption::new("ask", "Ask"), SessionConfigSelectOption::new("code", "Code")],
            )
            .category(SessionConfigOptionCategory::Mode),
            SessionConfigOption::select(
                "model",
                "Model",
                "fast",
                vec![SessionConfigSelectOption::new("fast", "Fast"), SessionConfigSelectOption::new("smart", "Smart")],
            )
            .category(SessionConfigOptionCategory::Model),
        ]
    }

    fn title(&self, first_prompt: &str) -> Option<String> {
        self.spec.titles.then(|| first_prompt.chars().take(12).collect())
    }

    fn supports_compaction(&self) -> bool {
        self.spec.compaction
    }

    async fn compact(&self, session: &RunnerSession) -> Result<Option<String>, Error> {
        use acp_facade::host::LiveSession;
        self.probe.compactions.lock().unwrap().push(session.id().0.to_string());
        match &self.spec.compact_fails {
            Some(reason) => Err(Error::internal_msg(reason.clone())),
            None => Ok(None),
        }
    }
}

/// The stores every runner test runs against (see [`super::stores::runner_stores`]).
pub async fn stores() -> Vec<(&'static str, Arc<dyn Store>)> {
    super::stores::runner_stores().await
}

/// A runner over `store` with a fresh probe.
pub fn runner(store: Arc<dyn Store>, spec: TurnsSpec) -> (Runner, Arc<Probe>) {
    let probe = Arc::new(Probe::default());
    let runner = Runner::new(store, Arc::new(TestTurns { probe: probe.clone(), spec }));
    (runner, probe)
}

/// An initialized client on `runner`'s agent (options from `runner.options()`).
pub async fn client(runner: &Runner) -> TestClient {
    let agent = runner.agent(runner.options());
    let mut client = TestClient::start_agent(agent);
    client.initialize().await;
    client
}

/// The `(class, kind name)` of each event, for journal assertions.
pub fn kind_name(kind: &EventKind) -> &'static str {
    match kind {
        EventKind::TurnStarted { .. } => "TurnStarted",
        EventKind::TokenDelta { .. } => "TokenDelta",
        EventKind::ToolCallStarted { .. } => "ToolCallStarted",
        EventKind::ToolCallProgress { .. } => "ToolCallProgress",
        EventKind::ToolCallCompleted { .. } => "ToolCallCompleted",
        EventKind::StepDone { .. } => "StepDone",
        EventKind::ContextMeasured { .. } => "ContextMeasured",
        EventKind::GateOpened { .. } => "GateOpened",
        EventKind::GateResolved { .. } => "GateResolved",
        EventKind::TurnDone { .. } => "TurnDone",
        EventKind::TurnFailed { .. } => "TurnFailed",
        EventKind::TurnInterrupted {} => "TurnInterrupted",
        EventKind::CompactWaiterResolved {} => "CompactWaiterResolved",
        EventKind::CompactWaiterRejected { .. } => "CompactWaiterRejected",
        EventKind::SessionMetaChanged { .. } => "SessionMetaChanged",
        _ => "Other",
    }
}

/// The journal of `id`: every event's kind name, after checking that all are Enduring.
pub async fn journal_kinds(store: &Arc<dyn Store>, id: &str) -> Vec<&'static str> {
    let events = journal(store, id).await;
    events.iter().map(|e| kind_name(&e.kind)).collect()
}

/// The journal of `id`, asserting every event is Enduring, the `seq`s (the session's live
/// numbering) strictly increase and no event id repeats (across restarts too).
pub async fn journal(store: &Arc<dyn Store>, id: &str) -> Vec<Event> {
    let events = store.events(&SessionId::new(id)).await.expect("read the journal");
    for e in &events {
        assert_eq!(e.header.class, EventClass::Enduring, "an Ephemeral event was journaled: {e:?}");
    }
    let seqs: Vec<u64> = events.iter().map(|e| e.header.seq).collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "journaled seqs out of order: {seqs:?}");
    let ids: std::collections::HashSet<&str> = events.iter().map(|e| e.header.id.as_str()).collect();
    assert_eq!(ids.len(), events.len(), "journaled event ids repeat: {events:?}");
    events
}
