//! The host traits implemented by Python objects.
//!
//! Each adapter holds the package's pure-Python adapter object (`acp_facade.host`), which turns the
//! plain data passed here into typed objects, calls the product's `async def` methods and hands back
//! plain data. Every call goes through the [`bridge`]: queued in Rust, run as an
//! asyncio task, answered synchronously. Capabilities follow the methods the product's objects
//! define: the Python side reports them when an object is adapted. The facade's control of a live
//! session, handed to its `set_control`, is [`control`]'s.
//!
//! A session-opening call hands the host the session's handle on the client (`Setup.client`, a
//! [`PyClient`]) beside the setup, ordered after the session's own updates: its calls wait until
//! the facade has forwarded what the session published to its hub before them
//! (the core's [`session_order`](acp_facade::binding::session_order), told which hub once the host
//! returned the session).

mod control;

use std::path::PathBuf;
use std::sync::Arc;

use acp_facade::Error;
use acp_facade::acp::{
    AuthMethod, AuthMethodId, AvailableCommand, ContentBlock, SessionConfigId, SessionConfigOption,
    SessionConfigOptionValue, SessionId,
};
use acp_facade::binding::session_order::{HubSlot, session_client};
use acp_facade::client::Client;
use acp_facade::error::ErrorExt;
use acp_facade::harness::{CommandId, Event, GateId, GateResponse, Prompt};
use acp_facade::host::{
    Authenticator, Compactor, EventStream, HostResult, LiveSession, LoadedSession, RuntimeConfig, SessionCatalog,
    SessionCatalogEntry, SessionCloser, SessionControl, SessionDeleter, SessionHost, SessionLoader, SessionResumer,
    Setup,
};
use acp_facade::hub::EventHub;
use async_trait::async_trait;
use pyo3::prelude::*;
use pyo3::types::PyTuple;

use crate::bridge;
use crate::client::PyClient;
use crate::harness::{decode, encode};
use crate::hub::PyEventHub;

/// A Python object the core calls through the bridge.
pub(crate) type Target = Arc<Py<PyAny>>;

pub(crate) fn args<'py, T>(py: Python<'py>, values: T) -> PyResult<Bound<'py, PyTuple>>
where
    T: IntoPyObject<'py, Target = PyTuple, Output = Bound<'py, PyTuple>>,
    T::Error: Into<PyErr>,
{
    values.into_pyobject(py).map_err(Into::into)
}

/// The Python adapter of the product's host object.
pub(crate) struct PyHost {
    pub(crate) target: Target,
}

impl PyHost {
    pub(crate) fn new(target: Py<PyAny>) -> Self {
        Self { target: Arc::new(target) }
    }
}

/// The arguments of a session-opening call: `([session_id,] setup, client)`, the setup in the
/// core's form for other languages (`cwd`, `additionalDirectories`, `mcpServers`, then `meta` and
/// `systemPrompt` when present: see the core `Setup`'s `Serialize`), which `acp_facade.Setup.from_json`
/// reads.
fn setup_args<'py>(
    py: Python<'py>,
    session_id: Option<SessionId>,
    setup: &Setup,
    client: Client,
) -> PyResult<Bound<'py, PyTuple>> {
    let setup = encode(py, setup)?;
    let client = Bound::new(py, PyClient::session(client))?;
    match session_id {
        Some(id) => args(py, (id.0.to_string(), setup, client)),
        None => args(py, (setup, client)),
    }
}

/// The optional parts of a live session, as the Python side reports them
/// (`acp_facade.host._LiveParts`, read by attribute).
#[derive(FromPyObject)]
#[allow(clippy::struct_excessive_bools, reason = "one flag per optional part, as the Python side detected them")]
struct LiveParts {
    /// `shutdown` (graceful `session/close`).
    shutdown: bool,
    /// `compact` (`/compact`).
    compact: bool,
    /// `config_options` and `set_config_option`, both.
    config_options: bool,
    /// `submit_prompt` (the whole prompt rather than its content).
    submit_prompt: bool,
    /// `set_control` (the facade's control of the session).
    set_control: bool,
}

/// A live session as a session-opening call returns it (`acp_facade.host._LiveReturn`, read by
/// attribute): its id, hub, adapter, optional parts and slash commands.
#[derive(FromPyObject)]
struct LiveReturn<'py> {
    id: String,
    hub: Bound<'py, PyEventHub>,
    adapter: Py<PyAny>,
    parts: LiveParts,
    commands: Bound<'py, PyAny>,
}

/// What `load_session` returns (`acp_facade.host._LoadedReturn`, read by attribute): the live
/// session and its history in wire form.
#[derive(FromPyObject)]
struct LoadedReturn<'py> {
    live: Bound<'py, PyAny>,
    history: Bound<'py, PyAny>,
}

/// Adapts the live session a session-opening call returns ([`LiveReturn`]); its hub goes in
/// `slot`.
fn live_from_py(value: &Bound<'_, PyAny>, slot: &HubSlot) -> Result<Arc<dyn LiveSession>, Error> {
    let invalid = |e: PyErr| Error::internal_msg(format!("the host returned an invalid live session: {e}"));
    let LiveReturn { id, hub, adapter, parts, commands } = value.extract().map_err(invalid)?;
    let hub = hub.get().hub();
    slot.set(&hub);
    Ok(Arc::new(PyLiveSession {
        id: SessionId::new(id),
        hub,
        target: Arc::new(adapter),
        closer: parts.shutdown,
        compactor: parts.compact,
        config: parts.config_options,
        submit_prompt: parts.submit_prompt,
        set_control: parts.set_control,
        commands: decode(&commands, "command list")?,
    }))
}

#[async_trait]
impl SessionHost for PyHost {
    async fn new_session(&self, setup: Setup) -> HostResult<Arc<dyn LiveSession>> {
        let (client, slot) = session_client(&setup);
        bridge::call(
            &self.target,
            "new_session",
            move |py| setup_args(py, None, &setup, client),
            move |value| live_from_py(value, &slot),
        )
        .await
    }
}

#[async_trait]
impl SessionLoader for PyHost {
    async fn load_session(&self, session_id: SessionId, setup: Setup) -> HostResult<LoadedSession> {
        let (client, slot) = session_client(&setup);
        bridge::call(
            &self.target,
            "load_session",
            move |py| setup_args(py, Some(session_id), &setup, client),
            move |value| {
                let LoadedReturn { live, history } = value
                    .extract()
                    .map_err(|e| Error::internal_msg(format!("the host returned an invalid loaded session: {e}")))?;
                let session = live_from_py(&live, &slot)?;
                let history: Vec<Event> = decode(&history, "history")?;
                Ok(LoadedSession { session, history })
            },
        )
        .await
    }
}

#[async_trait]
impl SessionResumer for PyHost {
    async fn resume_session(&self, session_id: SessionId, setup: Setup) -> HostResult<Arc<dyn LiveSession>> {
        let (client, slot) = session_client(&setup);
        bridge::call(
            &self.target,
            "resume_session",
            move |py| setup_args(py, Some(session_id), &setup, client),
            move |value| live_from_py(value, &slot),
        )
        .await
    }
}

#[async_trait]
impl SessionCatalog for PyHost {
    async fn list_sessions(&self) -> HostResult<Vec<SessionCatalogEntry>> {
        bridge::call(
            &self.target,
            "list_sessions",
            |py| Ok(PyTuple::empty(py)),
            |value| {
                let entries: Vec<serde_json::Value> = decode(value, "session list")?;
                entries.iter().map(catalog_entry).collect()
            },
        )
        .await
    }
}

fn catalog_entry(value: &serde_json::Value) -> Result<SessionCatalogEntry, Error> {
    let text = |key: &str| value.get(key).and_then(serde_json::Value::as_str).map(str::to_owned);
    let session_id = text("sessionId").ok_or_else(|| Error::internal_msg("a session list entry has no `sessionId`"))?;
    let additional_directories = value
        .get("additionalDirectories")
        .and_then(serde_json::Value::as_array)
        .map(|dirs| dirs.iter().filter_map(serde_json::Value::as_str).map(PathBuf::from).collect())
        .unwrap_or_default();
    Ok(SessionCatalogEntry {
        session_id: SessionId::new(session_id),
        cwd: text("cwd").map(PathBuf::from),
        additional_directories,
        title: text("title"),
        updated_at: text("updatedAt"),
    })
}

#[async_trait]
impl SessionDeleter for PyHost {
    async fn delete_session(&self, session_id: SessionId) -> HostResult<()> {
        bridge::call(&self.target, "delete_session", move |py| args(py, (session_id.0.to_string(),)), |_| Ok(())).await
    }
}

/// The product's authenticator, through the host adapter: `requires_authentication` is a sync
/// hook answered through the bridge; `authenticate` and `logout` are `async def`.
pub(crate) struct PyAuthenticator {
    target: Target,
    methods: Vec<AuthMethod>,
    logout: bool,
}

impl PyAuthenticator {
    /// An authenticator calling `target` (a host adapter object), advertising `methods` (ACP
    /// `AuthMethod`s in their wire form: agent methods, and `type: "terminal"` ones with their
    /// `args` and `env`).
    pub(crate) fn new(target: Target, methods: &Bound<'_, PyAny>, logout: bool) -> PyResult<Self> {
        let methods: Vec<AuthMethod> = crate::harness::extract(methods, "auth methods")?;
        Ok(Self { target, methods, logout })
    }
}

#[async_trait]
impl Authenticator for PyAuthenticator {
    fn methods(&self) -> Vec<AuthMethod> {
        self.methods.clone()
    }

    fn requires_authentication(&self) -> bool {
        let answer = bridge::call_blocking(
            &self.target,
            "requires_authentication",
            |py| Ok(PyTuple::empty(py)),
            |value| {
                value.extract::<bool>().map_err(|_| Error::internal_msg("`requires_authentication` must return a bool"))
            },
        );
        match answer {
            Ok(required) => required,
            Err(e) => {
                // Failing closed: a broken hook keeps sessions behind authentication.
                tracing::warn!(error = %e.message, "the host's `requires_authentication` failed");
                true
            }
        }
    }

    async fn authenticate(&self, method_id: AuthMethodId) -> HostResult<()> {
        bridge::call(&self.target, "authenticate", move |py| args(py, (method_id.0.to_string(),)), |_| Ok(())).await
    }

    fn supports_logout(&self) -> bool {
        self.logout
    }

    async fn logout(&self) -> HostResult<()> {
        if !self.logout {
            return Err(Error::method_not_found_msg("logout"));
        }
        bridge::call(&self.target, "logout", |py| Ok(PyTuple::empty(py)), |_| Ok(())).await
    }
}

/// A live session run by Python: its events come from its [`EventHub`], its methods are called
/// through the bridge.
#[allow(clippy::struct_excessive_bools, reason = "one flag per optional part, as the Python side detected them")]
pub(crate) struct PyLiveSession {
    id: SessionId,
    hub: Arc<EventHub>,
    target: Target,
    closer: bool,
    compactor: bool,
    config: bool,
    /// Whether the session takes the whole prompt (`submit_prompt`) rather than its content.
    submit_prompt: bool,
    /// Whether the session takes the facade's control (`set_control`).
    set_control: bool,
    /// The host-defined slash commands it starts with (read when it was adapted).
    commands: Vec<AvailableCommand>,
}

fn command_id(value: &Bound<'_, PyAny>) -> Result<CommandId, Error> {
    value
        .extract::<String>()
        .map(CommandId::new)
        .map_err(|_| Error::internal_msg("the host returned an invalid command id (expected a str)"))
}

#[async_trait]
impl LiveSession for PyLiveSession {
    fn id(&self) -> SessionId {
        self.id.clone()
    }

    fn subscribe_events(&self) -> HostResult<EventStream> {
        Ok(self.hub.subscribe())
    }

    async fn submit(&self, prompt: Vec<ContentBlock>) -> HostResult<CommandId> {
        bridge::call(&self.target, "submit", move |py| args(py, (encode(py, &prompt)?,)), command_id).await
    }

    async fn submit_prompt(&self, prompt: Prompt) -> HostResult<CommandId> {
        if !self.submit_prompt {
            return self.submit(prompt.content).await;
        }
        bridge::call(&self.target, "submit_prompt", move |py| args(py, (encode(py, &prompt)?,)), command_id).await
    }

    fn commands(&self) -> Vec<AvailableCommand> {
        self.commands.clone()
    }

    fn set_control(&self, control: Arc<dyn SessionControl>) {
        if !self.set_control {
            return;
        }
        let target = self.target.clone();
        // Handed over on the loop, without blocking the facade (`set_control` must not block).
        crate::runtime().spawn(async move {
            let control = control::PySessionControl::new(control);
            let handed =
                bridge::call(&target, "set_control", move |py| args(py, (Bound::new(py, control)?,)), |_| Ok(()));
            if let Err(e) = handed.await {
                tracing::warn!(error = %e.message, "the live session's `set_control` failed");
            }
        });
    }

    async fn interrupt(&self) -> HostResult<()> {
        bridge::call(&self.target, "interrupt", |py| Ok(PyTuple::empty(py)), |_| Ok(())).await
    }

    async fn respond_gate(&self, gate_id: GateId, response: GateResponse) -> HostResult<()> {
        bridge::call(
            &self.target,
            "respond_gate",
            move |py| args(py, (gate_id.as_str(), encode(py, &response)?)),
            |_| Ok(()),
        )
        .await
    }

    fn closer(&self) -> Option<&dyn SessionCloser> {
        self.closer.then_some(self as &dyn SessionCloser)
    }

    fn compactor(&self) -> Option<&dyn Compactor> {
        self.compactor.then_some(self as &dyn Compactor)
    }

    fn config(&self) -> Option<&dyn RuntimeConfig> {
        self.config.then_some(self as &dyn RuntimeConfig)
    }
}

#[async_trait]
impl SessionCloser for PyLiveSession {
    async fn shutdown(&self) -> HostResult<()> {
        bridge::call(&self.target, "shutdown", |py| Ok(PyTuple::empty(py)), |_| Ok(())).await
    }
}

#[async_trait]
impl Compactor for PyLiveSession {
    async fn compact(&self) -> HostResult<CommandId> {
        bridge::call(&self.target, "compact", |py| Ok(PyTuple::empty(py)), command_id).await
    }
}

#[async_trait]
impl RuntimeConfig for PyLiveSession {
    async fn snapshot(&self) -> HostResult<Vec<SessionConfigOption>> {
        bridge::call(
            &self.target,
            "config_options",
            |py| Ok(PyTuple::empty(py)),
            |value| decode(value, "config option list"),
        )
        .await
    }

    async fn set_option(&self, config_id: SessionConfigId, value: SessionConfigOptionValue) -> HostResult<()> {
        bridge::call(
            &self.target,
            "set_config_option",
            move |py| {
                let value = match value {
                    SessionConfigOptionValue::Boolean { value } => serde_json::Value::Bool(value),
                    other => {
                        serde_json::to_value(&other).ok().and_then(|v| v.get("value").cloned()).unwrap_or_default()
                    }
                };
                args(py, (config_id.0.to_string(), crate::harness::json_to_py(py, &value)?))
            },
            |_| Ok(()),
        )
        .await
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<control::PySessionControl>()
}
