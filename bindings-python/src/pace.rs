//! The core's [`pace`](acp_facade::binding::pace) policy as Python sees it: a streaming call returns
//! `True` when its caller should await (the package's wrapper then hands out an awaitable that
//! [`resolve_when_drained`] completes), and raises `RuntimeError` when its caller never awaited
//! and the queue reached its hard bound.

use std::future::Future;

use acp_facade::binding::pace::{Pace, Refused};
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

use crate::bridge;

/// Whether the caller should await; `closed` is what a closed queue means to the caller.
pub(crate) fn should_wait(result: Result<Pace, Refused>, closed: &str) -> PyResult<bool> {
    match result {
        Ok(pace) => Ok(pace.should_wait()),
        Err(Refused::Closed) => Err(PyRuntimeError::new_err(closed.to_owned())),
        Err(refused @ Refused::Full(_)) => Err(PyRuntimeError::new_err(refused.to_string())),
    }
}

/// Completes the Python future `future` once `drained` resolves.
pub(crate) fn resolve_when_drained(drained: impl Future<Output = ()> + Send + 'static, future: u64) {
    crate::runtime().spawn(async move {
        drained.await;
        bridge::resolve_none(future);
    });
}
