//! The client handle (`acp_facade.Client`, `acp_facade.Terminal`): the core's [`client`]
//! module, for Python.
//!
//! A [`PyClient`] wraps a core [`Client`]: the session's handle (`Setup.client`, calls made at
//! once) or a runner turn's (`Turn.client`, whose calls are operations of the turn's queue, see
//! [`acp_facade_runner::binding::ops`], so that each goes out after everything the turn did before it).
//! A turn's handle used after its turn ended calls the client at once, as the session's does.
//! A [`PyTerminal`] wraps a core [`Terminal`] the same way.
//!
//! Every call completes a Python future through the bridge: with the converted answer, or with
//! the exception of its [`ClientError`] ([`crate::error::client_error_to_py`]; a cancelled call
//! raises `asyncio.CancelledError`). Nothing here decides anything: the checks (capabilities,
//! absolute paths), the cancellation and the release of terminals — on `release`, when the
//! Python object is garbage-collected (dropping the core [`Terminal`]), when the turn ends, when
//! the session closes — are the core's.
//!
//! [`client`]: acp_facade::client

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;

use acp_facade::acp::{ElicitationId, ElicitationSchema, EnvVariable, TerminalExitStatus, TerminalOutputResponse};
use acp_facade::client::{Capabilities, Client, ClientError, ElicitationAnswer, Terminal, UrlElicitation};
use acp_facade_runner::binding::ops::{Reply, TerminalCall, TerminalRequest, TurnEnded, TurnOp, TurnOps};
use futures::future::BoxFuture;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};

use crate::bridge::{self, MakeValue};
use crate::harness::{encode, extract};

/// What a Python caller is told when the turn ended between its call and the call's turn in
/// the queue.
const OVER: &str = "the turn is over";

/// Converts a call's answer into its Python value, on the loop's thread.
trait ToPy<T>: for<'py> FnOnce(Python<'py>, T) -> PyResult<Bound<'py, PyAny>> + Send + 'static {}

impl<T, F: for<'py> FnOnce(Python<'py>, T) -> PyResult<Bound<'py, PyAny>> + Send + 'static> ToPy<T> for F {}

/// A closure as a [`ToPy`] (so that its signature is inferred as one for every `'py`).
fn to_py<T, F: for<'py> FnOnce(Python<'py>, T) -> PyResult<Bound<'py, PyAny>> + Send + 'static>(f: F) -> F {
    f
}

/// Completes the Python future `future` with a call's outcome.
fn settle<T: Send + 'static>(future: u64, outcome: Result<Result<T, ClientError>, TurnEnded>, to_py: impl ToPy<T>) {
    let make: MakeValue = match outcome {
        Ok(Ok(value)) => Box::new(move |py| to_py(py, value)),
        Ok(Err(error)) => Box::new(move |py| Err(crate::error::client_error_to_py(py, &error))),
        Err(TurnEnded) => Box::new(|_| Err(PyRuntimeError::new_err(OVER))),
    };
    bridge::resolve(future, Ok(make));
}

/// The turn's queue, while the turn runs, for a handle that has one; `None`: call at once.
fn route(ops: Option<&TurnOps>) -> Option<&TurnOps> {
    ops.filter(|ops| !ops.is_closed())
}

/// Queues one call (`op` builds the operation around its reply); its outcome completes `future`.
fn queue<T: Send + 'static>(
    ops: &TurnOps,
    future: u64,
    to_py: impl ToPy<T>,
    op: impl FnOnce(Reply<Result<T, ClientError>>) -> TurnOp,
) -> PyResult<()> {
    let reply = Reply::new(move |outcome| settle(future, outcome, to_py));
    crate::pace::should_wait(ops.push(op(reply)), OVER).map(|_| ())
}

/// The turn's queue for a file call, unless it is begun on this thread ([`started`]): the handle
/// has no turn, the turn is over, or the core says so ([`TurnOps::queues_file_call`]).
fn queue_for<'a>(ops: Option<&'a TurnOps>, client: &Client) -> Option<&'a TurnOps> {
    route(ops).filter(|ops| ops.queues_file_call(client))
}

/// One call begun on this thread (its request written from here on a quiet connection, see
/// `Client::start_read_text_file`); the checks' refusal or the answer completes `future`.
fn started<T: Send + 'static>(
    future: u64,
    to_py: impl ToPy<T>,
    call: Result<BoxFuture<'static, Result<T, ClientError>>, ClientError>,
) -> PyResult<()> {
    direct(future, to_py, async move { call?.await })
}

/// Runs one call at once, on the binding's runtime; its outcome completes `future`.
#[allow(clippy::unnecessary_wraps, reason = "the other half of `queue`, which can be refused")]
fn direct<T: Send + 'static>(
    future: u64,
    to_py: impl ToPy<T>,
    call: impl Future<Output = Result<T, ClientError>> + Send + 'static,
) -> PyResult<()> {
    drop(crate::runtime().spawn(async move { settle(future, Ok(call.await), to_py) }));
    Ok(())
}

/// `None`: what a call that answers nothing completes its future with.
fn none() -> impl ToPy<()> {
    to_py(|py, ()| Ok(py.None().into_bound(py)))
}

/// A `str`.
fn string() -> impl ToPy<String> {
    to_py(|py, text: String| Ok(PyString::new(py, &text).into_any()))
}

/// An elicitation answer as `(action, values, other)`: `("accept", {…}, None)`,
/// `("decline", None, None)`, `("cancel", None, None)` or `("other", None, name)`.
fn answer_to_py<'py>(py: Python<'py>, answer: &ElicitationAnswer) -> PyResult<Bound<'py, PyAny>> {
    let (action, values, other) = match answer {
        ElicitationAnswer::Accept(values) => ("accept", encode(py, values)?, None),
        ElicitationAnswer::Decline => ("decline", py.None().into_bound(py), None),
        ElicitationAnswer::Cancel => ("cancel", py.None().into_bound(py), None),
        ElicitationAnswer::Other(name) => ("other", py.None().into_bound(py), Some(name.as_str())),
        _ => ("other", py.None().into_bound(py), Some("unknown")),
    };
    Ok((action, values, other).into_pyobject(py)?.into_any())
}

/// The client's advertised capabilities as a dict of the `acp_facade.ClientCapabilities` fields.
pub(crate) fn capabilities_to_py<'py>(py: Python<'py>, capabilities: &Capabilities) -> PyResult<Bound<'py, PyAny>> {
    let dict = PyDict::new(py);
    dict.set_item("read_text_file", capabilities.read_text_file())?;
    dict.set_item("write_text_file", capabilities.write_text_file())?;
    dict.set_item("terminal", capabilities.terminal())?;
    dict.set_item("elicitation_form", capabilities.elicitation_form())?;
    dict.set_item("elicitation_url", capabilities.elicitation_url())?;
    dict.set_item("auth_terminal", capabilities.auth_terminal())?;
    dict.set_item("notices", capabilities.notices())?;
    dict.set_item("compaction", capabilities.compaction())?;
    dict.set_item("subagents", capabilities.subagents())?;
    dict.set_item("plan_operations", capabilities.plan_operations())?;
    let meta = match capabilities.meta() {
        Some(meta) => encode(py, meta)?,
        None => py.None().into_bound(py),
    };
    dict.set_item("meta", meta)?;
    Ok(dict.into_any())
}

/// The agent's handle on the client (wrapped by `acp_facade.Client`).
#[pyclass(name = "Client", module = "acp_facade._native", frozen)]
pub struct PyClient {
    client: Client,
    /// The turn's queue, for a runner turn's handle.
    ops: Option<TurnOps>,
}

impl PyClient {
    /// The session's handle.
    pub(crate) fn session(client: Client) -> Self {
        Self { client, ops: None }
    }

    /// A runner turn's handle, whose calls go through the turn's queue.
    pub(crate) fn turn(client: Client, ops: TurnOps) -> Self {
        Self { client, ops: Some(ops) }
    }
}

#[pymethods]
impl PyClient {
    /// What the client advertised, as a dict of `ClientCapabilities` fields.
    fn capabilities<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        capabilities_to_py(py, self.client.capabilities())
    }

    #[getter]
    fn session_id(&self) -> Option<String> {
        self.client.session_id().map(|id| id.0.to_string())
    }

    fn is_cancelled(&self) -> bool {
        self.client.is_cancelled()
    }

    // The paths arrive as `str` (the package's wrapper converts them): taken as a `String`, they
    // skip the `os.fspath` round and the bytes object that extracting a `PathBuf` costs.
    #[pyo3(signature = (path, line, limit, future))]
    fn read_text_file(&self, path: String, line: Option<u32>, limit: Option<u32>, future: u64) -> PyResult<()> {
        let path = PathBuf::from(path);
        if let Some(ops) = queue_for(self.ops.as_ref(), &self.client) {
            queue(ops, future, string(), |reply| TurnOp::ReadTextFile { request: Box::new((path, line, limit)), reply })
        } else {
            started(future, string(), self.client.start_read_text_file(path, line, limit))
        }
    }

    fn write_text_file(&self, path: String, content: String, future: u64) -> PyResult<()> {
        let path = PathBuf::from(path);
        if let Some(ops) = queue_for(self.ops.as_ref(), &self.client) {
            queue(ops, future, none(), |reply| TurnOp::WriteTextFile { request: Box::new((path, content)), reply })
        } else {
            started(future, none(), self.client.start_write_text_file(path, content))
        }
    }

    #[pyo3(signature = (command, args, env, cwd, output_byte_limit, future))]
    fn create_terminal(
        &self,
        command: String,
        args: Vec<String>,
        env: Vec<(String, String)>,
        cwd: Option<PathBuf>,
        output_byte_limit: Option<u64>,
        future: u64,
    ) -> PyResult<()> {
        let env: Vec<EnvVariable> = env.into_iter().map(|(name, value)| EnvVariable::new(name, value)).collect();
        let ops = self.ops.clone();
        let to_py = to_py(move |py, terminal: Terminal| {
            Ok(Bound::new(py, PyTerminal { terminal: Arc::new(terminal), ops })?.into_any())
        });
        if let Some(queued) = route(self.ops.as_ref()) {
            queue(queued, future, to_py, |reply| TurnOp::CreateTerminal {
                request: Box::new(TerminalRequest { command, args, env, cwd, output_byte_limit }),
                reply,
            })
        } else {
            let client = self.client.clone();
            direct(
                future,
                to_py,
                async move { client.create_terminal(command, args, env, cwd, output_byte_limit).await },
            )
        }
    }

    fn elicit_form(&self, message: String, schema: &Bound<'_, PyAny>, future: u64) -> PyResult<()> {
        let schema: ElicitationSchema = extract(schema, "elicitation schema")?;
        let to_py = to_py(|py, answer: ElicitationAnswer| answer_to_py(py, &answer));
        if let Some(ops) = route(self.ops.as_ref()) {
            queue(ops, future, to_py, |reply| TurnOp::ElicitForm { request: Box::new((message, schema)), reply })
        } else {
            let client = self.client.clone();
            direct(future, to_py, async move { client.elicit_form(message, schema).await })
        }
    }

    fn elicit_url(&self, message: String, url: String, future: u64) -> PyResult<()> {
        let to_py = to_py(|py, opened: UrlElicitation| {
            Ok((opened.elicitation_id.0.to_string(), answer_to_py(py, &opened.answer)?).into_pyobject(py)?.into_any())
        });
        if let Some(ops) = route(self.ops.as_ref()) {
            queue(ops, future, to_py, |reply| TurnOp::ElicitUrl { request: Box::new((message, url)), reply })
        } else {
            let client = self.client.clone();
            direct(future, to_py, async move { client.elicit_url(message, url).await })
        }
    }

    fn complete_elicitation(&self, elicitation_id: String, future: u64) -> PyResult<()> {
        let elicitation_id = ElicitationId::new(elicitation_id);
        if let Some(ops) = route(self.ops.as_ref()) {
            queue(ops, future, none(), |reply| TurnOp::CompleteElicitation { elicitation_id, reply })
        } else {
            let client = self.client.clone();
            direct(future, none(), async move { client.complete_elicitation(&elicitation_id).await })
        }
    }

    fn release_terminals(&self, future: u64) -> PyResult<()> {
        if let Some(ops) = route(self.ops.as_ref()) {
            let reply = Reply::new(move |outcome: Result<(), TurnEnded>| settle(future, outcome.map(Ok), none()));
            crate::pace::should_wait(ops.push(TurnOp::ReleaseTerminals { reply }), OVER).map(|_| ())
        } else {
            let client = self.client.clone();
            direct(future, none(), async move {
                client.release_terminals().await;
                Ok(())
            })
        }
    }
}

/// A terminal the client runs for the agent (wrapped by `acp_facade.Terminal`). Dropping it —
/// when Python collects the object — drops the core [`Terminal`], which releases it unless it
/// already was.
#[pyclass(name = "Terminal", module = "acp_facade._native", frozen)]
pub struct PyTerminal {
    terminal: Arc<Terminal>,
    /// The turn's queue, for a terminal of a runner turn's handle.
    ops: Option<TurnOps>,
}

impl PyTerminal {
    /// Starts a call on the terminal: through the turn's queue while it runs (`call` names it),
    /// else at once (`now` runs it).
    fn call<T: Send + 'static, F: Future<Output = Result<T, ClientError>> + Send + 'static>(
        &self,
        future: u64,
        to_py: impl ToPy<T>,
        call: impl FnOnce(Reply<Result<T, ClientError>>) -> TerminalCall,
        now: impl FnOnce(Arc<Terminal>) -> F,
    ) -> PyResult<()> {
        let terminal = self.terminal.clone();
        if let Some(ops) = route(self.ops.as_ref()) {
            queue(ops, future, to_py, |reply| TurnOp::Terminal { terminal, call: call(reply) })
        } else {
            direct(future, to_py, now(terminal))
        }
    }
}

#[pymethods]
impl PyTerminal {
    #[getter]
    fn id(&self) -> String {
        self.terminal.id().0.to_string()
    }

    /// `{"type": "terminal", "terminalId": id}`: tool-call content embedding the terminal.
    fn content<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        encode(py, &self.terminal.content())
    }

    fn is_released(&self) -> bool {
        self.terminal.is_released()
    }

    fn output(&self, future: u64) -> PyResult<()> {
        let to_py = to_py(|py, output: TerminalOutputResponse| encode(py, &output));
        self.call(future, to_py, TerminalCall::Output, |t| async move { t.output().await })
    }

    fn wait_for_exit(&self, future: u64) -> PyResult<()> {
        let to_py = to_py(|py, status: TerminalExitStatus| encode(py, &status));
        self.call(future, to_py, TerminalCall::WaitForExit, |t| async move { t.wait_for_exit().await })
    }

    fn kill(&self, future: u64) -> PyResult<()> {
        self.call(future, none(), TerminalCall::Kill, |t| async move { t.kill().await })
    }

    fn release(&self, future: u64) -> PyResult<()> {
        self.call(future, none(), TerminalCall::Release, |t| async move { t.release().await })
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyClient>()?;
    m.add_class::<PyTerminal>()
}
