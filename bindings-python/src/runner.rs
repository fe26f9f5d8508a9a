//! The batteries-included runner with a Python turn runner.
//!
//! [`PyRunner`] wraps the core [`Runner`] over a [`PySqliteStore`] or [`PyMemoryStore`];
//! [`PyTurnRunner`] implements the core [`TurnRunner`] by calling the package's adapter object
//! (`acp_facade.runner`), which runs the product's `async def run_turn(turn)` as an asyncio task.
//!
//! The turn API from Python is a set of cheap synchronous calls on [`PyTurn`]: each queues one
//! operation, in order, on an unbounded channel that a worker inside the core's `run_turn` future
//! applies to the core [`Turn`] (text goes through `try_text` first and falls back to the awaiting
//! form, so a slow client slows the worker). Operations with an answer carry the id of a Python
//! future, which the worker completes through the bridge. When too many operations are queued,
//! `text` asks the caller to await a barrier: that is the back-pressure Python sees. Cancelling the
//! turn cancels the Python task.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use acp_facade::Error;
use acp_facade::acp::{ContentBlock, ErrorCode, SessionConfigOption, StopReason, ToolCallStatus, ToolKind};
use acp_facade::harness::{ApprovalAction, ToolCallId};
use acp_facade::runner::{MemoryStore, Permission, Runner, RunnerSession, SqliteStore, Store, Turn, TurnRunner};
use async_trait::async_trait;
use pyo3::exceptions::{PyRuntimeError, PyTypeError};
use pyo3::prelude::*;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::agent::{PyAgent, PyOptions};
use crate::bridge;
use crate::harness::{decode, encode, extract, json_to_py};
use crate::host::{Target, args};

/// How many queued turn operations make `text` ask its caller to await.
const HIGH_WATER: usize = 1024;

/// The core's `SQLite` store (a file, or `:memory:`).
#[pyclass(name = "SqliteStore", module = "acp_facade._native", frozen)]
pub struct PySqliteStore {
    store: Arc<SqliteStore>,
}

#[pymethods]
impl PySqliteStore {
    #[new]
    fn new(py: Python<'_>, path: &str) -> PyResult<Self> {
        let store =
            py.detach(|| SqliteStore::open(path)).map_err(|e| pyo3::exceptions::PyOSError::new_err(e.to_string()))?;
        Ok(Self { store: Arc::new(store) })
    }
}

/// An in-process store; nothing survives the process.
#[pyclass(name = "MemoryStore", module = "acp_facade._native", frozen)]
pub struct PyMemoryStore {
    store: Arc<MemoryStore>,
}

#[pymethods]
impl PyMemoryStore {
    #[new]
    fn new() -> Self {
        Self { store: Arc::new(MemoryStore::new()) }
    }
}

/// The runner: every host part over a store and a Python turn runner.
#[pyclass(name = "Runner", module = "acp_facade._native", frozen)]
pub struct PyRunner {
    runner: Runner,
}

#[pymethods]
impl PyRunner {
    /// `adapter` is the package's turn-runner adapter; `config_options`, `has_title` and
    /// `compaction` describe the product's turn runner (read once, here).
    #[new]
    fn new(
        store: &Bound<'_, PyAny>,
        adapter: Py<PyAny>,
        config_options: &Bound<'_, PyAny>,
        has_title: bool,
        compaction: bool,
    ) -> PyResult<Self> {
        let store: Arc<dyn Store> = if let Ok(s) = store.cast::<PySqliteStore>() {
            s.get().store.clone()
        } else if let Ok(s) = store.cast::<PyMemoryStore>() {
            s.get().store.clone()
        } else {
            return Err(PyTypeError::new_err("store must be a SqliteStore or a MemoryStore"));
        };
        let config: Vec<SessionConfigOption> = extract(config_options, "config options")?;
        let turns = PyTurnRunner { target: Arc::new(adapter), config, has_title, compaction };
        Ok(Self { runner: Runner::new(store, Arc::new(turns)) })
    }

    /// Options with every host part of the runner set.
    fn options(&self) -> PyOptions {
        PyOptions { inner: self.runner.options() }
    }

    /// An agent with these options.
    fn agent(&self, options: &PyOptions) -> PyAgent {
        PyAgent { agent: self.runner.agent(options.inner.clone()) }
    }
}

/// The core [`TurnRunner`] over the package's adapter object.
struct PyTurnRunner {
    target: Target,
    config: Vec<SessionConfigOption>,
    has_title: bool,
    compaction: bool,
}

fn stop_reason(value: &Bound<'_, PyAny>) -> Result<StopReason, Error> {
    if value.is_none() {
        return Ok(StopReason::EndTurn);
    }
    decode(value, "stop reason")
}

#[async_trait]
impl TurnRunner for PyTurnRunner {
    async fn run_turn(&self, turn: &Turn) -> Result<StopReason, Error> {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let queued = Arc::new(AtomicUsize::new(0));
        let config =
            self.config.iter().filter_map(|o| turn.config_value(&o.id.0).map(|v| (o.id.0.to_string(), v))).collect();
        let handle = PyTurn {
            ops: tx,
            queued: queued.clone(),
            cancel: turn.cancellation().clone(),
            step_text: Mutex::default(),
            session_id: turn.session_id().0.to_string(),
            cwd: turn.cwd().to_string_lossy().into_owned(),
            prompt: turn.prompt().to_vec(),
            config,
        };
        let mut call =
            bridge::call(&self.target, "run_turn", move |py| args(py, (Bound::new(py, handle)?,)), stop_reason);
        let mut cancel_sent = false;
        let outcome = loop {
            tokio::select! {
                biased;
                Some(op) = rx.recv() => {
                    apply(turn, op).await;
                    queued.fetch_sub(1, Ordering::AcqRel);
                }
                result = &mut call => break result,
                () = turn.cancelled(), if !cancel_sent => {
                    cancel_sent = true;
                    call.cancel_task();
                }
            }
        };
        // Operations queued before the coroutine returned still belong to the turn.
        rx.close();
        while let Ok(op) = rx.try_recv() {
            apply(turn, op).await;
        }
        match outcome {
            Err(e) if e.code == ErrorCode::RequestCancelled => Ok(StopReason::Cancelled),
            other => other,
        }
    }

    fn config_options(&self) -> Vec<SessionConfigOption> {
        self.config.clone()
    }

    fn title(&self, first_prompt: &str) -> Option<String> {
        if !self.has_title {
            return None;
        }
        let prompt = first_prompt.to_owned();
        let title = bridge::call_blocking(
            &self.target,
            "title",
            move |py| args(py, (prompt,)),
            |value| {
                value
                    .extract::<Option<String>>()
                    .map_err(|_| acp_facade::error::ErrorExt::internal_msg("`title` must return a str or None"))
            },
        );
        match title {
            Ok(title) => title.filter(|t| !t.is_empty()),
            Err(e) => {
                tracing::warn!(error = %e.message, "the turn runner's `title` failed");
                None
            }
        }
    }

    fn supports_compaction(&self) -> bool {
        self.compaction
    }

    async fn compact(&self, session: &RunnerSession) -> Result<(), Error> {
        let session_id = acp_facade::host::LiveSession::id(session).0.to_string();
        bridge::call(&self.target, "compact", move |py| args(py, (session_id,)), |_| Ok(())).await
    }
}

/// One queued turn operation; `future` is the Python future its answer completes.
enum Op {
    Text(String),
    Thought(String),
    Barrier(u64),
    StartToolCall {
        title: String,
        kind: ToolKind,
        input: Value,
        future: u64,
    },
    ToolProgress {
        call_id: ToolCallId,
        status: Option<ToolCallStatus>,
        content: Option<Vec<ContentBlock>>,
        future: u64,
    },
    FinishToolCall {
        call_id: ToolCallId,
        output: Vec<ContentBlock>,
        failed: bool,
        future: u64,
    },
    RequestPermission {
        call_id: ToolCallId,
        title: String,
        controls: Vec<ApprovalAction>,
        future: u64,
    },
    AskUser {
        question: String,
        future: u64,
    },
    Usage {
        used: u64,
        size: u64,
        future: u64,
    },
    EndStep {
        future: u64,
    },
}

fn resolve_str(future: u64, text: String) {
    bridge::resolve(future, Ok(Box::new(move |py| Ok(pyo3::types::PyString::new(py, &text).into_any()))));
}

async fn apply(turn: &Turn, op: Op) {
    match op {
        Op::Text(text) => {
            if let Err(text) = turn.try_text(text) {
                turn.text(text).await;
            }
        }
        Op::Thought(text) => {
            if let Err(text) = turn.try_thought(text) {
                turn.thought(text).await;
            }
        }
        Op::Barrier(future) => bridge::resolve_none(future),
        Op::StartToolCall { title, kind, input, future } => {
            let id = turn.start_tool_call(title, kind, input).await;
            resolve_str(future, id.to_string());
        }
        Op::ToolProgress { call_id, status, content, future } => {
            turn.tool_progress(&call_id, status, content).await;
            bridge::resolve_none(future);
        }
        Op::FinishToolCall { call_id, output, failed, future } => {
            if failed {
                turn.fail_tool_call(&call_id, output).await;
            } else {
                turn.complete_tool_call(&call_id, output).await;
            }
            bridge::resolve_none(future);
        }
        Op::RequestPermission { call_id, title, controls, future } => {
            let answer = match turn.request_permission(&call_id, title, &controls).await {
                Permission::Allowed => "allowed",
                Permission::AllowedAlways => "allowed_always",
                Permission::Denied => "denied",
                Permission::Cancelled => "cancelled",
            };
            resolve_str(future, answer.to_owned());
        }
        Op::AskUser { question, future } => {
            let answer = turn.ask_user(question).await;
            bridge::resolve(
                future,
                Ok(Box::new(move |py| match answer {
                    Some(value) => json_to_py(py, &value),
                    None => Ok(py.None().into_bound(py)),
                })),
            );
        }
        Op::Usage { used, size, future } => {
            turn.usage(used, size).await;
            bridge::resolve_none(future);
        }
        Op::EndStep { future } => {
            turn.end_step().await;
            bridge::resolve_none(future);
        }
    }
}

/// The native half of a running turn (wrapped by `acp_facade.Turn`).
#[pyclass(name = "Turn", module = "acp_facade._native", frozen)]
pub struct PyTurn {
    ops: mpsc::UnboundedSender<Op>,
    queued: Arc<AtomicUsize>,
    cancel: CancellationToken,
    /// The reply text of the current step, mirrored as operations are queued.
    step_text: Mutex<String>,
    session_id: String,
    cwd: String,
    prompt: Vec<ContentBlock>,
    config: HashMap<String, String>,
}

impl PyTurn {
    fn send(&self, op: Op) -> PyResult<bool> {
        // Counted before sending, so the worker's decrement never comes first.
        let queued = self.queued.fetch_add(1, Ordering::AcqRel).saturating_add(1);
        if self.ops.send(op).is_err() {
            self.queued.fetch_sub(1, Ordering::AcqRel);
            return Err(PyRuntimeError::new_err("the turn is over"));
        }
        Ok(queued > HIGH_WATER)
    }

    fn step(&self) -> std::sync::MutexGuard<'_, String> {
        self.step_text.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[pymethods]
impl PyTurn {
    /// Queues reply text; `True` asks the caller to await a barrier (back-pressure).
    fn text(&self, text: String) -> PyResult<bool> {
        self.step().push_str(&text);
        self.send(Op::Text(text))
    }

    /// Queues reasoning text; like `text`.
    fn thought(&self, text: String) -> PyResult<bool> {
        self.send(Op::Thought(text))
    }

    /// Completes `future` once every operation queued before it is applied.
    fn barrier(&self, future: u64) -> PyResult<()> {
        self.send(Op::Barrier(future)).map(|_| ())
    }

    fn start_tool_call(
        &self,
        title: String,
        kind: &Bound<'_, PyAny>,
        input: &Bound<'_, PyAny>,
        future: u64,
    ) -> PyResult<()> {
        let kind = extract(kind, "tool kind")?;
        let input = crate::harness::py_to_json(input)?;
        self.send(Op::StartToolCall { title, kind, input, future }).map(|_| ())
    }

    #[pyo3(signature = (call_id, status, content, future))]
    fn tool_progress(
        &self,
        call_id: String,
        status: Option<&Bound<'_, PyAny>>,
        content: Option<&Bound<'_, PyAny>>,
        future: u64,
    ) -> PyResult<()> {
        let status = status.map(|s| extract(s, "tool call status")).transpose()?;
        let content = content.map(|c| extract(c, "content")).transpose()?;
        self.send(Op::ToolProgress { call_id: ToolCallId::new(call_id), status, content, future }).map(|_| ())
    }

    fn finish_tool_call(&self, call_id: String, output: &Bound<'_, PyAny>, failed: bool, future: u64) -> PyResult<()> {
        let output = extract(output, "content")?;
        self.send(Op::FinishToolCall { call_id: ToolCallId::new(call_id), output, failed, future }).map(|_| ())
    }

    fn request_permission(
        &self,
        call_id: String,
        title: String,
        controls: &Bound<'_, PyAny>,
        future: u64,
    ) -> PyResult<()> {
        let controls = extract(controls, "approval controls")?;
        self.send(Op::RequestPermission { call_id: ToolCallId::new(call_id), title, controls, future }).map(|_| ())
    }

    fn ask_user(&self, question: String, future: u64) -> PyResult<()> {
        self.send(Op::AskUser { question, future }).map(|_| ())
    }

    fn usage(&self, used: u64, size: u64, future: u64) -> PyResult<()> {
        self.step().clear();
        self.send(Op::Usage { used, size, future }).map(|_| ())
    }

    fn end_step(&self, future: u64) -> PyResult<()> {
        self.step().clear();
        self.send(Op::EndStep { future }).map(|_| ())
    }

    /// Completes `future` when the turn is cancelled.
    fn cancelled(&self, future: u64) {
        let cancel = self.cancel.clone();
        crate::runtime().spawn(async move {
            cancel.cancelled().await;
            bridge::resolve_none(future);
        });
    }

    fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    #[getter]
    fn session_id(&self) -> &str {
        &self.session_id
    }

    #[getter]
    fn cwd(&self) -> &str {
        &self.cwd
    }

    /// The prompt's content blocks, in their ACP JSON form.
    fn prompt<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        encode(py, &self.prompt)
    }

    fn prompt_text(&self) -> String {
        acp_facade::harness::content::plain_text(&self.prompt)
    }

    fn config_value(&self, config_id: &str) -> Option<String> {
        self.config.get(config_id).cloned()
    }

    fn step_text(&self) -> String {
        self.step().clone()
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PySqliteStore>()?;
    m.add_class::<PyMemoryStore>()?;
    m.add_class::<PyRunner>()?;
    m.add_class::<PyTurn>()?;
    Ok(())
}
