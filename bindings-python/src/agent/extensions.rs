//! Extension methods served by Python handlers (the core's
//! [`acp_facade::agent::Extensions`]).
//!
//! The package hands each handler over wrapped in an adapter object (`acp_facade.extensions`)
//! whose `async def call(params)` / `async def notify(params)` run the product's coroutine; they
//! are called through the [`bridge`], like every host method. The core checks the names, routes
//! the calls and advertises them.

use std::sync::Arc;

use acp_facade::agent::{ExtensionMethod, ExtensionNotification, Extensions};
use acp_facade::host::HostResult;
use async_trait::async_trait;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use serde_json::Value;

use crate::bridge;
use crate::harness::{decode, json_to_py};
use crate::host::{Target, args};

/// One Python handler (its adapter object).
struct PyExtension {
    target: Target,
}

#[async_trait]
impl ExtensionMethod for PyExtension {
    async fn call(&self, params: Value) -> HostResult<Value> {
        bridge::call(
            &self.target,
            "call",
            move |py| args(py, (json_to_py(py, &params)?,)),
            |result| decode(result, "extension method result"),
        )
        .await
    }
}

#[async_trait]
impl ExtensionNotification for PyExtension {
    async fn notify(&self, params: Value) {
        let handled =
            bridge::call(&self.target, "notify", move |py| args(py, (json_to_py(py, &params)?,)), |_| Ok(())).await;
        if let Err(e) = handled {
            tracing::warn!(error = %e.message, "an extension notification handler failed");
        }
    }
}

/// `extensions` with the `(name, adapter)` handlers added; `ValueError` for a name that does not
/// begin with `_`.
pub(crate) fn with_handlers(
    mut extensions: Extensions,
    methods: Vec<(String, Py<PyAny>)>,
    notifications: Vec<(String, Py<PyAny>)>,
) -> PyResult<Extensions> {
    let invalid = |e: acp_facade::Error| PyValueError::new_err(e.message);
    for (name, adapter) in methods {
        extensions.method(name, Arc::new(PyExtension { target: Arc::new(adapter) })).map_err(invalid)?;
    }
    for (name, adapter) in notifications {
        extensions.notification(name, Arc::new(PyExtension { target: Arc::new(adapter) })).map_err(invalid)?;
    }
    Ok(extensions)
}
