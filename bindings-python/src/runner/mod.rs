//! The batteries-included runner with a Python turn runner.
//!
//! [`PyRunner`] wraps the core [`Runner`] over a [`PySqliteStore`], a [`PyPostgresStore`] or a
//! [`PyMemoryStore`];
//! [`PyTurnRunner`] implements the core [`TurnRunner`] by calling the package's adapter object
//! (`acp_facade.runner`), which runs the product's `async def run_turn(turn)` as an asyncio task
//! with a [`turn::PyTurn`] handle.

pub mod postgres;
pub mod sqlite;
pub mod store;
pub mod turn;

use std::sync::Arc;

use acp_facade::Error;
use acp_facade::acp::{AvailableCommand, SessionConfigOption, StopReason};
use acp_facade_runner::{Runner, RunnerSession, Store, Turn, TurnRunner};
use async_trait::async_trait;
use postgres::PyPostgresStore;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use sqlite::PySqliteStore;
use store::PyMemoryStore;

use crate::agent::{PyAgent, PyOptions};
use crate::bridge;
use crate::harness::extract;
use crate::host::{Target, args};

/// The runner: every host part over a store and a Python turn runner.
#[pyclass(name = "Runner", module = "acp_facade._native", frozen)]
pub struct PyRunner {
    runner: Runner,
}

#[pymethods]
impl PyRunner {
    /// `adapter` is the package's turn-runner adapter; `config_options`, `has_title`,
    /// `compaction`, `system_prompt` and `commands` describe the product's turn runner (read once,
    /// here); the flags are keyword-only, so that a call site names them.
    #[new]
    #[pyo3(signature = (store, adapter, config_options, *, has_title, compaction, system_prompt=false, commands=None))]
    fn new(
        store: &Bound<'_, PyAny>,
        adapter: Py<PyAny>,
        config_options: &Bound<'_, PyAny>,
        has_title: bool,
        compaction: bool,
        system_prompt: bool,
        commands: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let store: Arc<dyn Store> = if let Ok(s) = store.cast::<PySqliteStore>() {
            s.get().store.clone()
        } else if let Ok(s) = store.cast::<PyPostgresStore>() {
            s.get().store.clone()
        } else if let Ok(s) = store.cast::<PyMemoryStore>() {
            s.get().store.clone()
        } else {
            return Err(PyTypeError::new_err("store must be a SqliteStore, a PostgresStore or a MemoryStore"));
        };
        let config: Vec<SessionConfigOption> = extract(config_options, "config options")?;
        let config_ids = config.iter().map(|o| o.id.0.to_string()).collect();
        let commands: Vec<AvailableCommand> = commands.map(|c| extract(c, "commands")).transpose()?.unwrap_or_default();
        let turns = PyTurnRunner {
            target: Arc::new(adapter),
            config,
            config_ids,
            has_title,
            compaction,
            system_prompt,
            commands,
        };
        Ok(Self { runner: Runner::new(store, Arc::new(turns)) })
    }

    /// Options with every host part of the runner set.
    fn options(&self) -> PyOptions {
        PyOptions { inner: self.runner.options() }
    }

    /// An agent with these options.
    fn agent(&self, options: &PyOptions) -> PyAgent {
        PyAgent { agent: self.runner.agent(options.inner.clone()), options: options.inner.clone() }
    }
}

/// The core [`TurnRunner`] over the package's adapter object.
struct PyTurnRunner {
    target: Target,
    config: Vec<SessionConfigOption>,
    /// The ids of `config`, for the turn handle's `config_value`.
    config_ids: Vec<String>,
    has_title: bool,
    compaction: bool,
    /// Whether the turns take the client's system prompt (`accepts_system_prompt`).
    system_prompt: bool,
    /// The host-defined slash commands every session starts with.
    commands: Vec<AvailableCommand>,
}

#[async_trait]
impl TurnRunner for PyTurnRunner {
    async fn run_turn(&self, turn: &Turn) -> Result<StopReason, Error> {
        turn::run(&self.target, turn, &self.config_ids).await
    }

    fn config_options(&self) -> Vec<SessionConfigOption> {
        self.config.clone()
    }

    fn commands(&self) -> Vec<AvailableCommand> {
        self.commands.clone()
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

    fn accepts_system_prompt(&self) -> bool {
        self.system_prompt
    }

    /// The product's `compact` returns the compaction's summary, a `str`, or `None`.
    async fn compact(&self, session: &RunnerSession) -> Result<Option<String>, Error> {
        let session_id = acp_facade::host::LiveSession::id(session).0.to_string();
        bridge::call(
            &self.target,
            "compact",
            move |py| args(py, (session_id,)),
            |value| {
                value.extract::<Option<String>>().map_err(|_| {
                    acp_facade::error::ErrorExt::internal_msg(format!(
                        "`compact` must return the summary (a str) or None, not {}",
                        value.get_type().name().map(|n| n.to_string()).unwrap_or_default()
                    ))
                })
            },
        )
        .await
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PySqliteStore>()?;
    m.add_class::<PyPostgresStore>()?;
    m.add_class::<PyMemoryStore>()?;
    m.add_class::<PyRunner>()?;
    m.add_class::<turn::PyTurn>()?;
    Ok(())
}
