//! The agent: [`PyOptions`] (the host parts and limits) and [`PyAgent`], served over stdio or
//! over a pair of caller-supplied asyncio streams.
//!
//! Serving runs on the binding's Tokio runtime; its end completes a Python future through the
//! bridge, so `await agent.serve_stdio()` is an ordinary coroutine in the caller's loop.
//! Cancelling that coroutine aborts the serve task. `start_stdio` starts serving before any loop
//! exists (Python's `Agent.run_stdio`, which answers `initialize` while asyncio is still being
//! imported); its handle's `wait` completes a future once a loop has attached. Extension
//! methods: [`extensions`]; serving over HTTP and WebSocket: [`remote`].

mod extensions;
mod remote;

use std::sync::Arc;
use std::time::Duration;

use acp_facade::error::ErrorExt;
use acp_facade::{Agent, Options};
use pyo3::exceptions::{PyOSError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::bridge;
use crate::harness::extract;
use crate::host::{PyAuthenticator, PyHost, args};

/// The optional host parts a host object implements, as the Python side detected them
/// (`acp_facade.host._HostParts`, read by attribute).
#[derive(FromPyObject, Clone, Copy)]
#[allow(clippy::struct_excessive_bools, reason = "one flag per optional part, as the Python side detected them")]
struct HostParts {
    /// `load_session` (`loadSession`).
    load_session: bool,
    /// `resume_session` (`sessionCapabilities.resume`).
    resume_session: bool,
    /// `list_sessions` (`sessionCapabilities.list`).
    list_sessions: bool,
    /// `delete_session` (`sessionCapabilities.delete`).
    delete_session: bool,
}

/// The authentication part of a host or authenticator (`acp_facade.host._AuthParts`, read by
/// attribute): the advertised methods (ACP `AuthMethod`s in their wire form) and whether it has
/// `logout`.
#[derive(FromPyObject)]
struct AuthParts<'py> {
    methods: Bound<'py, PyAny>,
    logout: bool,
}

/// The host parts and settings of an agent (the core `Options`).
#[pyclass(name = "Options", module = "acp_facade._native", frozen)]
pub struct PyOptions {
    pub(crate) inner: Options,
}

fn duration(seconds: f64, what: &str) -> PyResult<Duration> {
    Duration::try_from_secs_f64(seconds)
        .map_err(|_| PyValueError::new_err(format!("{what} must be a non-negative number of seconds")))
}

#[pymethods]
impl PyOptions {
    /// Options over one host adapter object that serves every part `parts` switches on; `auth`,
    /// when given, is the host's authentication part.
    #[staticmethod]
    #[pyo3(signature = (host, parts, auth=None))]
    fn for_host(host: Py<PyAny>, parts: HostParts, auth: Option<AuthParts<'_>>) -> PyResult<Self> {
        let host = Arc::new(PyHost::new(host));
        let mut options = Options::new(host.clone());
        if let Some(auth) = auth {
            options =
                options.authenticator(Arc::new(PyAuthenticator::new(host.target.clone(), &auth.methods, auth.logout)?));
        }
        if parts.load_session {
            options = options.loader(host.clone());
        }
        if parts.resume_session {
            options = options.resumer(host.clone());
        }
        if parts.list_sessions {
            options = options.catalog(host.clone());
        }
        if parts.delete_session {
            options = options.deleter(host);
        }
        Ok(Self { inner: options })
    }

    /// A copy whose authentication is served by `adapter` (a host adapter over the product's
    /// authenticator), with its authentication part `auth`.
    fn with_authenticator(&self, adapter: Py<PyAny>, auth: AuthParts<'_>) -> PyResult<Self> {
        let AuthParts { methods, logout } = auth;
        let authenticator = PyAuthenticator::new(Arc::new(adapter), &methods, logout)?;
        Ok(Self { inner: self.inner.clone().authenticator(Arc::new(authenticator)) })
    }

    /// A copy with the given settings changed (`None` keeps a setting); extension handlers, as
    /// `(name, adapter)` pairs, are added to those registered.
    #[pyo3(signature = (*, agent_name=None, agent_version=None, compaction=None, system_prompt=None, protocol_v2=None, replay_order=None, close=None, prompt_capabilities=None,
        mcp_capabilities=None, extension_methods=None, extension_notifications=None,
        max_sessions=None, max_page_size=None, close_grace=None, cancel_grace=None, max_message_size=None))]
    #[allow(clippy::too_many_arguments)]
    fn replace(
        &self,
        agent_name: Option<String>,
        agent_version: Option<String>,
        compaction: Option<bool>,
        system_prompt: Option<bool>,
        protocol_v2: Option<bool>,
        replay_order: Option<&str>,
        close: Option<bool>,
        prompt_capabilities: Option<&Bound<'_, PyAny>>,
        mcp_capabilities: Option<&Bound<'_, PyAny>>,
        extension_methods: Option<Vec<(String, Py<PyAny>)>>,
        extension_notifications: Option<Vec<(String, Py<PyAny>)>>,
        max_sessions: Option<usize>,
        max_page_size: Option<usize>,
        close_grace: Option<f64>,
        cancel_grace: Option<f64>,
        max_message_size: Option<usize>,
    ) -> PyResult<Self> {
        let mut options = self.inner.clone();
        if agent_name.is_some() || agent_version.is_some() {
            let name = agent_name.unwrap_or_else(|| options.agent_info.name.clone());
            let version = agent_version.unwrap_or_else(|| options.agent_info.version.clone());
            options = options.agent_info(name, version);
        }
        if let Some(on) = compaction {
            options = options.compaction(on);
        }
        if let Some(on) = system_prompt {
            options = options.system_prompt(on);
        }
        if let Some(on) = protocol_v2 {
            options = options.protocol_v2(on);
        }
        if let Some(name) = replay_order {
            let order = name.parse().map_err(|e| PyValueError::new_err(format!("replay_order: {e}")))?;
            options = options.replay_order(order);
        }
        if let Some(on) = close {
            options = options.close(on);
        }
        if let Some(capabilities) = prompt_capabilities {
            options = options.prompt_capabilities(extract(capabilities, "prompt capabilities")?);
        }
        if let Some(capabilities) = mcp_capabilities {
            options = options.mcp_capabilities(extract(capabilities, "MCP capabilities")?);
        }
        if extension_methods.is_some() || extension_notifications.is_some() {
            let extensions = extensions::with_handlers(
                options.extensions.clone(),
                extension_methods.unwrap_or_default(),
                extension_notifications.unwrap_or_default(),
            )?;
            options = options.extensions(extensions);
        }
        if let Some(max) = max_sessions {
            options = options.max_sessions(max);
        }
        if let Some(max) = max_page_size {
            options = options.max_page_size(max);
        }
        if let Some(grace) = close_grace {
            options = options.close_grace(duration(grace, "close_grace")?);
        }
        if let Some(grace) = cancel_grace {
            options = options.cancel_grace(duration(grace, "cancel_grace")?);
        }
        if let Some(max) = max_message_size {
            options = options.max_message_size(max);
        }
        Ok(Self { inner: options })
    }

    fn __repr__(&self) -> String {
        format!("{:?}", self.inner)
    }
}

/// An ACP agent serving one connection at a time on behalf of a host.
#[pyclass(name = "Agent", module = "acp_facade._native", frozen)]
pub struct PyAgent {
    pub(crate) agent: Agent,
    /// What the agent was made from: each remote connection's agent is made from a clone.
    pub(crate) options: Options,
}

/// A running serve task.
#[pyclass(name = "ServeHandle", module = "acp_facade._native", frozen)]
pub struct PyServeHandle {
    abort: tokio::task::AbortHandle,
    /// The task of a serve started before any event loop ([`PyAgent::start_stdio`]), until
    /// [`PyServeHandle::wait`] takes it.
    started: std::sync::Mutex<Option<tokio::task::JoinHandle<std::io::Result<()>>>>,
}

impl PyServeHandle {
    fn new(abort: tokio::task::AbortHandle) -> Self {
        Self { abort, started: std::sync::Mutex::new(None) }
    }
}

#[pymethods]
impl PyServeHandle {
    /// Stops serving at once.
    fn abort(&self) {
        self.abort.abort();
    }

    /// Completes `future` when a serve started by `start_stdio` ends (at once if it has); a
    /// `RuntimeError` when there is no such serve or it is already awaited.
    fn wait(&self, future: u64) -> PyResult<()> {
        let task = self.started.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take();
        let task = task.ok_or_else(|| PyRuntimeError::new_err("this serve is not waitable, or already awaited"))?;
        crate::runtime().spawn(async move {
            let result = task.await.unwrap_or_else(|e| {
                Err(std::io::Error::other(if e.is_cancelled() {
                    "serving was aborted".to_owned()
                } else {
                    e.to_string()
                }))
            });
            finish(future, result);
        });
        Ok(())
    }
}

fn finish(future: u64, result: std::io::Result<()>) {
    bridge::resolve(
        future,
        Ok(Box::new(move |py| match result {
            Ok(()) => Ok(py.None().into_bound(py)),
            Err(e) => Err(PyOSError::new_err(e.to_string())),
        })),
    );
}

#[pymethods]
impl PyAgent {
    #[new]
    fn new(options: &PyOptions) -> Self {
        Self { agent: Agent::new(options.inner.clone()), options: options.inner.clone() }
    }

    /// Serves over the process's stdin and stdout; completes `future` when the client hangs up.
    fn serve_stdio(&self, future: u64) -> PyServeHandle {
        let agent = self.agent.clone();
        let task = crate::runtime().spawn(async move { finish(future, agent.serve_stdio().await) });
        PyServeHandle::new(task.abort_handle())
    }

    /// Starts serving over the process's stdin and stdout at once, before any event loop exists:
    /// what needs no host code (`initialize`) is answered meanwhile, and calls into the host wait
    /// in the bridge until a loop attaches. `ServeHandle.wait(future)` completes when the client
    /// hangs up.
    fn start_stdio(&self) -> PyServeHandle {
        let agent = self.agent.clone();
        let task = crate::runtime().spawn(async move { agent.serve_stdio().await });
        let handle = PyServeHandle::new(task.abort_handle());
        *handle.started.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(task);
        handle
    }

    /// Serves over `streams`, an object with `async read() -> bytes` (empty at the end),
    /// `async write(data)` and `async close()`; completes `future` when the input ends.
    fn serve_streams(&self, streams: Py<PyAny>, future: u64) -> PyServeHandle {
        let agent = self.agent.clone();
        let streams = Arc::new(streams);
        let task = crate::runtime().spawn(async move { finish(future, serve_streams(agent, streams).await) });
        PyServeHandle::new(task.abort_handle())
    }

    /// Serves over Streamable HTTP and WebSocket as `settings` say (an object read by attribute:
    /// `address`, a numeric `(ip, port)`, then `path`, `token_verifier`, `allowed_origins`,
    /// `max_body_size`, `shutdown_grace`, `idle_timeout`), each connection an agent made from a
    /// clone of this one's options; completes `future` with a `RemoteServer` once bound.
    fn serve_http(&self, settings: remote::RemoteSettings, future: u64) -> PyResult<()> {
        remote::start(self.options.clone(), settings, future)
    }

    /// How many sessions are live.
    fn live_sessions(&self) -> usize {
        self.agent.live_sessions()
    }
}

async fn serve_streams(agent: Agent, streams: Arc<Py<PyAny>>) -> std::io::Result<()> {
    let (agent_side, pump_side) = tokio::io::duplex(64 * 1024);
    let (agent_read, agent_write) = tokio::io::split(agent_side);
    let (mut pump_read, mut pump_write) = tokio::io::split(pump_side);
    let input = streams.clone();
    let reader = tokio::spawn(async move {
        loop {
            let chunk = bridge::call(
                &input,
                "read",
                |py| Ok(PyTuple::empty(py)),
                |value| {
                    value
                        .cast::<PyBytes>()
                        .map(|b| b.as_bytes().to_vec())
                        .map_err(|_| acp_facade::Error::internal_msg("`read` must return bytes"))
                },
            )
            .await;
            match chunk {
                Ok(chunk) if !chunk.is_empty() => {
                    if pump_write.write_all(&chunk).await.is_err() {
                        break;
                    }
                }
                _ => break,
            }
        }
        let _ = pump_write.shutdown().await;
    });
    let output = streams.clone();
    let writer = tokio::spawn(async move {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = match pump_read.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            let data = buf[..n].to_vec();
            let written =
                bridge::call(&output, "write", move |py| args(py, (PyBytes::new(py, &data),)), |_| Ok(())).await;
            if written.is_err() {
                break;
            }
        }
        let _ = bridge::call(&output, "close", |py| Ok(PyTuple::empty(py)), |_| Ok(())).await;
    });
    let result = agent.serve(agent_read, agent_write).await;
    reader.abort();
    let _ = tokio::time::timeout(Duration::from_secs(5), writer).await;
    result
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyOptions>()?;
    m.add_class::<PyAgent>()?;
    m.add_class::<PyServeHandle>()?;
    remote::register(m)?;
    Ok(())
}
