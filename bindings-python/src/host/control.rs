//! `SessionControl`: the native half of the facade's control of a live session (wrapped by
//! `acp_facade.SessionControl`), handed to a Python live session's `set_control`.
//!
//! Each method converts its arguments, runs the core's [`SessionControl`] call on the binding's
//! runtime and completes the caller's Python future through the bridge, with the result or the
//! core's error as the matching `AcpError`. The ordering and the client's updates are the core's.

use std::future::Future;
use std::sync::Arc;

use acp_facade::Error;
use acp_facade::acp::{
    AvailableCommand, SessionConfigId, SessionConfigOptionValue, SessionConfigValueId, SessionModeId,
};
use acp_facade::host::SessionControl;
use pyo3::prelude::*;
use pyo3::types::PyBool;
use serde::Serialize;

use crate::bridge::{self, MakeValue};
use crate::harness::{encode, extract};

/// The facade's control of one live session.
#[pyclass(name = "SessionControl", module = "acp_facade._native", frozen)]
pub struct PySessionControl {
    control: Arc<dyn SessionControl>,
}

impl PySessionControl {
    pub(crate) fn new(control: Arc<dyn SessionControl>) -> Self {
        Self { control }
    }
}

/// Runs `call` on the runtime; completes `future` with its value (as plain data) or its error.
fn complete<T: Serialize + Send + 'static>(future: u64, call: impl Future<Output = Result<T, Error>> + Send + 'static) {
    crate::runtime().spawn(async move {
        let value = call.await.map(|value| -> MakeValue { Box::new(move |py| encode(py, &value)) });
        bridge::resolve(future, value);
    });
}

#[pymethods]
impl PySessionControl {
    #[getter]
    fn session_id(&self) -> String {
        self.control.session_id().0.to_string()
    }

    /// Sets the current mode; completes `future` with `None`.
    fn set_mode(&self, mode_id: String, future: u64) {
        let control = self.control.clone();
        complete(future, async move { control.set_mode(SessionModeId::new(mode_id)).await });
    }

    /// Sets a config option to `value` (a value id, or a bool for a boolean option); completes
    /// `future` with the complete state, as ACP config options.
    fn set_config_option(&self, config_id: String, value: &Bound<'_, PyAny>, future: u64) -> PyResult<()> {
        let value = if let Ok(flag) = value.cast::<PyBool>() {
            SessionConfigOptionValue::boolean(flag.is_true())
        } else {
            SessionConfigOptionValue::value_id(SessionConfigValueId::new(value.extract::<String>()?))
        };
        let control = self.control.clone();
        complete(future, async move { control.set_config_option(SessionConfigId::new(config_id), value).await });
        Ok(())
    }

    /// Replaces the session's host-defined slash commands; completes `future` with `None`.
    fn set_commands(&self, commands: &Bound<'_, PyAny>, future: u64) -> PyResult<()> {
        let commands: Vec<AvailableCommand> = extract(commands, "commands")?;
        let control = self.control.clone();
        complete(future, async move { control.set_commands(commands).await });
        Ok(())
    }
}
