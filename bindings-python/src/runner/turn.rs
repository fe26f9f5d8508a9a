//! `Turn`: the native half of a running turn (wrapped by `acp_facade.Turn`).
//!
//! The core's [`Turn`] is borrowed by `run_turn` for the duration of the turn, so the Python
//! handle drives it through the core's turn-operation queue ([`acp_facade_runner::binding::ops`]): each
//! method converts its arguments and pushes one [`TurnOp`], which [`run`] applies in call order
//! while the product's `run_turn` coroutine runs. The operations that answer nothing (`text`,
//! `thought`, tool progress and updates, `usage`, `end_step`, `plan`, the response's `_meta`)
//! return whether the caller should await `drained` (back-pressure, see [`crate::pace`]), as the
//! Node binding's do: waiting for each to be applied cost two hand-overs between the threads
//! (ARCHITECTURE.md, "The bindings' threads") and ordered nothing that the queue does not. The
//! other calls carry the id of a Python future that their answer completes through the bridge.
//! Cancelling the turn cancels the Python task.
//!
//! The turn's handle on the client (`client`) is a [`PyClient`] over the core turn's
//! [`Client`] whose calls go through the same queue (see [`crate::client`]).
//!
//! The updates ACP gates behind a client capability (`notice`, the plans with ids, subagents) are
//! queued like the others; what the core's method answers — whether the client receives the
//! update as such — is the client's capability, which these methods read here, as the core does.
//! A subagent is named by its session id between operations (the core's `Subagent` borrows the
//! turn, which only the queue holds).

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use acp_facade::Error;
use acp_facade::acp::{
    ContentBlock, ErrorCode, McpServer, MessageId, Meta, Notice, PlanId, SessionId, StopReason, SystemPrompt,
    SystemPromptMode,
};
use acp_facade::client::Client;
use acp_facade::harness::{ApprovalAction, SlashCommand, ToolCallId};
use acp_facade_runner::binding::ops::{self, PermissionRequest, Reply, TurnEnded, TurnOp, TurnOps};
use acp_facade_runner::{PermissionAnswer, Reply as UserReply, ToolCallFields, Turn};
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use tokio_util::sync::CancellationToken;

use crate::bridge::{self, MakeValue};
use crate::client::{PyClient, capabilities_to_py};
use crate::harness::{decode, encode, extract, json_to_py};
use crate::host::{Target, args};

/// What a Python caller is told when it calls a turn that is over.
const OVER: &str = "the turn is over";

fn stop_reason(value: &Bound<'_, PyAny>) -> Result<StopReason, Error> {
    if value.is_none() {
        return Ok(StopReason::EndTurn);
    }
    decode(value, "stop reason")
}

/// Runs one turn on the adapter's `run_turn` coroutine: builds the handle, applies its calls in
/// order and returns what the coroutine returned (`None` is `end_turn`).
pub(crate) async fn run(target: &Target, turn: &Turn, config_ids: &[String]) -> Result<StopReason, Error> {
    let (ops, queue) = ops::channel();
    let handle = PyTurn {
        ops,
        cancel: turn.cancellation().clone(),
        step_text: Mutex::default(),
        session_id: turn.session_id().0.to_string(),
        cwd: turn.cwd().to_string_lossy().into_owned(),
        prompt: turn.prompt().to_vec(),
        client: turn.client().clone(),
        config: config_ids.iter().filter_map(|id| turn.config_value(id).map(|v| (id.clone(), v))).collect(),
        command: turn.command().cloned(),
        meta: turn.meta().cloned(),
        mcp_servers: turn.mcp_servers().to_vec(),
        system_prompt: turn.system_prompt().cloned(),
        client_system_text: turn.compose_system_prompt(""),
    };
    let mut call = bridge::call(target, "run_turn", move |py| args(py, (Bound::new(py, handle)?,)), stop_reason);
    // Operations queued before the coroutine returned still belong to the turn.
    let outcome = queue
        .apply_until(turn, async {
            tokio::select! {
                biased;
                result = &mut call => return result,
                () = turn.cancelled() => call.cancel_task(),
            }
            call.await
        })
        .await;
    match outcome {
        Err(e) if e.code == ErrorCode::RequestCancelled => Ok(StopReason::Cancelled),
        other => other,
    }
}

/// A reply that completes the Python future `future` with the answer, built on the loop's thread;
/// a turn that ended first raises `RuntimeError` there.
fn answer<T: Send + 'static>(
    future: u64,
    value: impl for<'py> FnOnce(Python<'py>, T) -> PyResult<Bound<'py, PyAny>> + Send + 'static,
) -> Reply<T> {
    Reply::new(move |answer: Result<T, TurnEnded>| {
        let make: MakeValue = match answer {
            Ok(answer) => Box::new(move |py| value(py, answer)),
            Err(TurnEnded) => Box::new(|_| Err(PyRuntimeError::new_err(OVER))),
        };
        bridge::resolve(future, Ok(make));
    })
}

/// A reply that completes the Python future `future` with an operation's value as plain data, or
/// raises its error (the matching `AcpError`).
fn outcome<T: serde::Serialize + Send + 'static>(future: u64) -> Reply<Result<T, Error>> {
    answer(future, |py, outcome: Result<T, Error>| match outcome {
        Ok(value) => encode(py, &value),
        Err(error) => Err(crate::error::to_py_err(py, &error)),
    })
}

/// The native half of a running turn (wrapped by `acp_facade.Turn`).
#[pyclass(name = "Turn", module = "acp_facade._native", frozen)]
pub struct PyTurn {
    ops: TurnOps,
    cancel: CancellationToken,
    /// The reply text of the current step, mirrored as operations are queued (`step_text` must
    /// see text the queue has not applied yet).
    step_text: Mutex<String>,
    session_id: String,
    cwd: String,
    prompt: Vec<ContentBlock>,
    /// The core turn's handle on the client (cancelled with the turn, ordered after its events).
    client: Client,
    config: HashMap<String, String>,
    command: Option<SlashCommand>,
    meta: Option<Meta>,
    mcp_servers: Vec<McpServer>,
    /// The client's system prompt for the session, if any.
    system_prompt: Option<SystemPrompt>,
    /// The core's composition of the client's system prompt with an empty own one: the client's
    /// text, after a newline when it is appended (see `compose_system_prompt`).
    client_system_text: String,
}

/// How the user answered a question of the turn, as `(kind, value)`: `("answered", value)`,
/// `("declined", None)`, `("dismissed", None)` or `("cancelled", None)`.
fn user_reply(py: Python<'_>, reply: UserReply) -> PyResult<Bound<'_, PyAny>> {
    let (kind, value) = match reply {
        UserReply::Answered(value) => ("answered", json_to_py(py, &value)?),
        UserReply::Declined => ("declined", py.None().into_bound(py)),
        UserReply::Dismissed => ("dismissed", py.None().into_bound(py)),
        _ => ("cancelled", py.None().into_bound(py)),
    };
    Ok((kind, value).into_pyobject(py)?.into_any())
}

/// A permission answer as `(kind, value)`: `("action", "approve")`, `("selected", option_id)`
/// or `("cancelled", None)`.
fn permission_answer(py: Python<'_>, answer: PermissionAnswer) -> PyResult<Bound<'_, PyAny>> {
    let (kind, value) = match answer {
        PermissionAnswer::Action(action) => ("action", encode(py, &action)?),
        PermissionAnswer::Selected(option) => ("selected", pyo3::types::PyString::new(py, &option).into_any()),
        _ => ("cancelled", py.None().into_bound(py)),
    };
    Ok((kind, value).into_pyobject(py)?.into_any())
}

impl PyTurn {
    fn step(&self) -> std::sync::MutexGuard<'_, String> {
        self.step_text.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn push(&self, op: TurnOp) -> PyResult<bool> {
        crate::pace::should_wait(self.ops.push(op), OVER)
    }

    /// Queues an update the client receives as such only when it advertised `received`: answers
    /// `(received, wait)` (`wait`: see [`PyTurn::push`]).
    fn push_gated(&self, op: TurnOp, received: bool) -> PyResult<(bool, bool)> {
        self.push(op).map(|wait| (received, wait))
    }
}

/// A reply that completes the Python future `future` with an id (`text` of it) as a `str`.
fn id_reply<T: Send + 'static>(future: u64, text: fn(&T) -> &str) -> Reply<T> {
    answer(future, move |py, id: T| Ok(pyo3::types::PyString::new(py, text(&id)).into_any()))
}

#[pymethods]
impl PyTurn {
    /// Queues reply text; `True` asks the caller to await `drained` (back-pressure).
    fn text(&self, text: String) -> PyResult<bool> {
        let mut step = self.step();
        let before = step.len();
        step.push_str(&text);
        let pushed = self.push(TurnOp::Text(text));
        if pushed.is_err() {
            step.truncate(before);
        }
        pushed
    }

    /// Queues reasoning text; like `text`.
    fn thought(&self, text: String) -> PyResult<bool> {
        self.push(TurnOp::Thought(text))
    }

    /// Completes `future` once the queue is short again.
    fn drained(&self, future: u64) {
        crate::pace::resolve_when_drained(self.ops.drained(), future);
    }

    fn start_tool_call(
        &self,
        title: String,
        kind: &Bound<'_, PyAny>,
        input: &Bound<'_, PyAny>,
        future: u64,
    ) -> PyResult<()> {
        let kind = extract(kind, "tool kind")?;
        let input = Box::new(crate::harness::py_to_json(input)?);
        let reply = id_reply(future, ToolCallId::as_str);
        self.push(TurnOp::StartToolCall { title, kind, input, reply }).map(|_| ())
    }

    #[pyo3(signature = (call_id, status, content))]
    fn tool_progress(
        &self,
        call_id: String,
        status: Option<&Bound<'_, PyAny>>,
        content: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        let status = status.map(|s| extract(s, "tool call status")).transpose()?;
        let content = content.map(|c| extract(c, "content")).transpose()?;
        self.push(TurnOp::ToolProgress { call_id: ToolCallId::new(call_id), status, content })
    }

    fn complete_tool_call(&self, call_id: String, output: &Bound<'_, PyAny>) -> PyResult<bool> {
        let output = extract(output, "content")?;
        self.push(TurnOp::CompleteToolCall { call_id: ToolCallId::new(call_id), output })
    }

    fn fail_tool_call(&self, call_id: String, output: &Bound<'_, PyAny>) -> PyResult<bool> {
        let output = extract(output, "content")?;
        self.push(TurnOp::FailToolCall { call_id: ToolCallId::new(call_id), output })
    }

    /// Announces a tool call with any of its fields (ACP's wire form; `title` required).
    fn start_tool(&self, fields: &Bound<'_, PyAny>, future: u64) -> PyResult<()> {
        let fields: ToolCallFields = extract(fields, "tool call")?;
        let spec = Box::new(fields.into_spec().map_err(pyo3::exceptions::PyValueError::new_err)?);
        let reply = id_reply(future, ToolCallId::as_str);
        self.push(TurnOp::StartTool { spec, reply }).map(|_| ())
    }

    /// Changes any subset of a tool call's fields (ACP's wire form).
    fn update_tool(&self, call_id: String, fields: &Bound<'_, PyAny>) -> PyResult<bool> {
        let fields: ToolCallFields = extract(fields, "tool call update")?;
        let fields = Box::new(fields.into_update());
        self.push(TurnOp::UpdateTool { call_id: ToolCallId::new(call_id), fields })
    }

    fn request_permission(
        &self,
        call_id: String,
        title: String,
        controls: &Bound<'_, PyAny>,
        future: u64,
    ) -> PyResult<()> {
        let controls = extract(controls, "approval controls")?;
        let reply = answer(future, |py, answer: acp_facade_runner::Permission| {
            Ok(pyo3::types::PyString::new(py, answer.as_str()).into_any())
        });
        self.push(TurnOp::RequestPermission { call_id: ToolCallId::new(call_id), title, controls, reply }).map(|_| ())
    }

    fn ask_user(&self, question: String, future: u64) -> PyResult<()> {
        let reply = answer(future, |py, answer: Option<serde_json::Value>| match answer {
            Some(value) => json_to_py(py, &value),
            None => Ok(py.None().into_bound(py)),
        });
        self.push(TurnOp::AskUser { question, reply }).map(|_| ())
    }

    fn ask(&self, question: String, future: u64) -> PyResult<()> {
        self.push(TurnOp::Ask { question, reply: answer(future, user_reply) }).map(|_| ())
    }

    fn fill_form(&self, message: String, schema: &Bound<'_, PyAny>, future: u64) -> PyResult<()> {
        let schema = Box::new(extract(schema, "elicitation schema")?);
        self.push(TurnOp::FillForm { message, schema, reply: answer(future, user_reply) }).map(|_| ())
    }

    fn open_url(&self, message: String, url: String, future: u64) -> PyResult<()> {
        self.push(TurnOp::OpenUrl { message, url, reply: answer(future, user_reply) }).map(|_| ())
    }

    fn request_permission_with_options(
        &self,
        call_id: String,
        title: String,
        controls: &Bound<'_, PyAny>,
        options: &Bound<'_, PyAny>,
        future: u64,
    ) -> PyResult<()> {
        let controls: Vec<ApprovalAction> = extract(controls, "approval controls")?;
        let options = extract(options, "permission options")?;
        let request = Box::new(PermissionRequest { call_id: ToolCallId::new(call_id), title, controls, options });
        self.push(TurnOp::RequestPermissionWithOptions { request, reply: answer(future, permission_answer) })
            .map(|_| ())
    }

    /// The turn's handle on the client.
    fn client(&self) -> PyClient {
        PyClient::turn(self.client.clone(), self.ops.clone())
    }

    /// What the client advertised, as a dict of `ClientCapabilities` fields.
    fn client_capabilities<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        capabilities_to_py(py, self.client.capabilities())
    }

    fn usage(&self, used: u64, size: u64) -> PyResult<bool> {
        self.step().clear();
        self.push(TurnOp::Usage { used, size })
    }

    fn end_step(&self) -> PyResult<bool> {
        self.step().clear();
        self.push(TurnOp::EndStep)
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

    // ---- The rich turn: what the prompt carries beside its content, plans, the response's
    // `_meta`, costs, and the session's own changes. ----

    /// The host-defined slash command the prompt invokes, `{"name", "input"}`, or `None`.
    #[getter]
    fn command<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        encode(py, &self.command)
    }

    /// The prompt request's `_meta`, or `None`.
    #[getter]
    fn meta<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        encode(py, &self.meta)
    }

    /// The session's MCP servers, in their ACP JSON form.
    #[getter]
    fn mcp_servers<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        encode(py, &self.mcp_servers)
    }

    fn plan(&self, plan: &Bound<'_, PyAny>) -> PyResult<bool> {
        let plan = Box::new(extract(plan, "plan")?);
        self.push(TurnOp::Plan(plan))
    }

    fn set_response_meta(&self, meta: &Bound<'_, PyAny>) -> PyResult<bool> {
        let meta = Box::new(extract(meta, "_meta")?);
        self.push(TurnOp::ResponseMeta(meta))
    }

    fn usage_with_cost(&self, used: u64, size: u64, cost: &Bound<'_, PyAny>) -> PyResult<bool> {
        let cost = Box::new(extract(cost, "cost")?);
        self.step().clear();
        self.push(TurnOp::UsageWithCost { used, size, cost })
    }

    /// Completes `future` with the session's conversation before this turn (at most `limit`
    /// entries, oldest first) in the wire form of `acp_facade_runner::binding::history`; the
    /// package builds its entry classes from it.
    fn history(&self, limit: usize, future: u64) -> PyResult<()> {
        self.push(TurnOp::History { limit, reply: outcome(future) }).map(|_| ())
    }

    fn set_mode(&self, mode_id: String, future: u64) -> PyResult<()> {
        self.push(TurnOp::SetMode { mode_id, reply: outcome(future) }).map(|_| ())
    }

    fn set_config_option(&self, config_id: String, value: String, future: u64) -> PyResult<()> {
        self.push(TurnOp::SetConfigOption { config_id, value, reply: outcome(future) }).map(|_| ())
    }

    fn set_commands(&self, commands: &Bound<'_, PyAny>, future: u64) -> PyResult<()> {
        let commands = extract(commands, "commands")?;
        self.push(TurnOp::SetCommands { commands, reply: outcome(future) }).map(|_| ())
    }

    // ---- The updates ACP gates behind a client capability: each answers `(received, wait)`,
    // whether the client receives it as such and whether to await `drained`. ----

    /// Queues a notice (an ACP `Notice` in its wire form; the package checked its severity).
    fn notice(&self, notice: &Bound<'_, PyAny>) -> PyResult<(bool, bool)> {
        let notice: Notice = extract(notice, "notice")?;
        let received = acp_facade_runner::turn::session_updates::notice_received(self.client.capabilities(), &notice);
        self.push_gated(TurnOp::Notice(Box::new(notice)), received)
    }

    /// Queues the plan `plan_id` with `entries` (ACP `PlanEntry`s), whole.
    fn update_plan(&self, plan_id: String, entries: &Bound<'_, PyAny>) -> PyResult<(bool, bool)> {
        let entries = extract(entries, "plan entries")?;
        let op = TurnOp::UpdatePlan { plan_id: PlanId::new(plan_id), entries };
        self.push_gated(op, self.client.capabilities().plan_operations())
    }

    /// Queues the plan `plan_id` as a Markdown document.
    fn update_plan_markdown(&self, plan_id: String, content: String) -> PyResult<(bool, bool)> {
        let op = TurnOp::UpdatePlanMarkdown { plan_id: PlanId::new(plan_id), content };
        self.push_gated(op, self.client.capabilities().plan_operations())
    }

    /// Queues the removal of the plan `plan_id`.
    fn remove_plan(&self, plan_id: String) -> PyResult<(bool, bool)> {
        self.push_gated(TurnOp::RemovePlan(PlanId::new(plan_id)), self.client.capabilities().plan_operations())
    }

    /// Whether the client advertised `subagents` (it sees a subagent's updates).
    fn subagents_visible(&self) -> bool {
        self.client.capabilities().subagents()
    }

    /// Starts a subagent titled `title`; completes `future` with the child session's id.
    fn start_subagent(&self, title: String, future: u64) -> PyResult<()> {
        self.push(TurnOp::StartSubagent { title, reply: id_reply(future, |id: &SessionId| &id.0) }).map(|_| ())
    }

    /// A message from the turn's session to the child `session_id`; completes `future` with the
    /// message's id.
    fn subagent_send(&self, session_id: String, text: String, future: u64) -> PyResult<()> {
        let reply = id_reply(future, |id: &MessageId| &id.0);
        self.push(TurnOp::SubagentSend { session_id: SessionId::new(session_id), text, reply }).map(|_| ())
    }

    /// The child `session_id`'s reply, as `chunks`; completes `future` with the message's id.
    fn subagent_reply(&self, session_id: String, chunks: Vec<String>, future: u64) -> PyResult<()> {
        let reply = id_reply(future, |id: &MessageId| &id.0);
        self.push(TurnOp::SubagentReply { session_id: SessionId::new(session_id), chunks, reply }).map(|_| ())
    }

    /// Reports the child `session_id` idle, its work ended with `stop_reason`.
    fn subagent_finish(&self, session_id: String, stop_reason: &Bound<'_, PyAny>) -> PyResult<bool> {
        let stop = extract(stop_reason, "stop reason")?;
        self.push(TurnOp::SubagentFinish { session_id: SessionId::new(session_id), stop })
    }

    // ---- The client's system prompt. ----

    /// The client's system prompt for the session (ACP `SystemPrompt` in its wire form), or
    /// `None`.
    #[getter]
    fn system_prompt<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        encode(py, &self.system_prompt)
    }

    /// `own` with the client's system prompt applied, as the core's `compose_system_prompt`:
    /// `append` adds the client's text after a newline, `override` replaces `own` with it.
    fn compose_system_prompt(&self, own: &str) -> String {
        match &self.system_prompt {
            Some(prompt) if prompt.mode == SystemPromptMode::Override => self.client_system_text.clone(),
            _ => format!("{own}{}", self.client_system_text),
        }
    }
}
