//! Errors: the one conversion in each direction between the core's [`Error`] and the package's
//! exception hierarchy (`acp_facade.errors`: `AcpError` with `code`, `message`, `data`, and one
//! subclass per well-known code).
//!
//! The classes themselves are declared in Python: under the stable ABI for Python 3.10 a `pyo3`
//! class cannot subclass `Exception`. A core error raised into Python becomes the subclass of its
//! code ([`to_py_err`]); an exception raised by a host coroutine becomes a JSON-RPC error
//! ([`from_py_err`]): an `AcpError` keeps its code, message and data, anything else answers
//! `-32603` with the exception's text.
//!
//! A failed call to the client ([`ClientError`]) raises the subclass of `ClientError` (itself an
//! `AcpError`) of its kind, built by `acp_facade.errors.client_error`
//! ([`client_error_to_py`]), with the code the core gives it (`From<ClientError> for Error`: the
//! client's own for `RejectedError`); a cancelled call raises `asyncio.CancelledError`, the
//! language's cancellation.

use acp_facade::Error;
use acp_facade::client::ClientError;
use acp_facade::error::ErrorExt;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyType;

static ACP_ERROR: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static ERROR_FOR_CODE: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
static CLIENT_ERROR: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

const MODULE: &str = "acp_facade.errors";

/// A core error as the matching Python exception.
pub(crate) fn to_py_err(py: Python<'_>, error: &Error) -> PyErr {
    let build = || -> PyResult<PyErr> {
        let data = match &error.data {
            Some(data) => crate::harness::json_to_py(py, data)?,
            None => py.None().into_bound(py),
        };
        let factory = ERROR_FOR_CODE.import(py, MODULE, "error_for_code")?;
        let code: i32 = error.code.into();
        Ok(PyErr::from_value(factory.call1((code, error.message.as_str(), data))?))
    };
    build().unwrap_or_else(|e| e)
}

/// The JSON-RPC error a Python exception answers with; `method` names the host method in logs.
pub(crate) fn from_py_err(py: Python<'_>, err: &PyErr, method: &str) -> Error {
    let value = err.value(py);
    let is_acp = ACP_ERROR.import(py, MODULE, "AcpError").is_ok_and(|ty| value.is_instance(ty).unwrap_or(false));
    if is_acp {
        let code = value.getattr("code").and_then(|c| c.extract::<i32>());
        let message = value.getattr("message").and_then(|m| m.extract::<String>());
        if let (Ok(code), Ok(message)) = (code, message) {
            let mut error = Error::new(code, message);
            let data =
                value.getattr("data").ok().and_then(|d| crate::harness::py_to_json(&d).ok()).filter(|d| !d.is_null());
            if let Some(data) = data {
                error = error.data(data);
            }
            return error;
        }
    }
    let text = value.str().map(|s| s.to_string()).unwrap_or_default();
    let kind = value.get_type().name().map_or_else(|_| "Exception".to_owned(), |n| n.to_string());
    tracing::warn!(method, exception = %kind, "a host method raised: {text}");
    Error::internal_msg(if text.is_empty() { kind } else { text })
}

/// A failed call to the client as the Python exception of its kind (see the module doc).
pub(crate) fn client_error_to_py(py: Python<'_>, error: &ClientError) -> PyErr {
    if error.is_cancelled() {
        return pyo3::exceptions::asyncio::CancelledError::new_err(error.to_string());
    }
    let build = || -> PyResult<PyErr> {
        let details = pyo3::types::PyDict::new(py);
        match error {
            ClientError::Unsupported { method, capability } => {
                details.set_item("method", *method)?;
                details.set_item("capability", *capability)?;
            }
            ClientError::RelativePath { field, path } => {
                details.set_item("field", *field)?;
                details.set_item("path", path.to_string_lossy())?;
            }
            ClientError::InvalidArgument { field, reason } => {
                details.set_item("field", *field)?;
                details.set_item("reason", reason)?;
            }
            ClientError::NotEstablished { method } | ClientError::Rejected { method, .. } => {
                details.set_item("method", *method)?;
            }
            ClientError::Protocol { method, detail } => {
                details.set_item("method", *method)?;
                details.set_item("detail", detail)?;
            }
            ClientError::Released { terminal_id } => details.set_item("terminal_id", terminal_id)?,
            _ => {}
        }
        let rpc = Error::from(error.clone());
        let data = match &rpc.data {
            Some(data) => crate::harness::json_to_py(py, data)?,
            None => py.None().into_bound(py),
        };
        let factory = CLIENT_ERROR.import(py, MODULE, "client_error")?;
        let code: i32 = rpc.code.into();
        Ok(PyErr::from_value(factory.call1((error.kind(), code, rpc.message.as_str(), data, details))?))
    };
    build().unwrap_or_else(|e| e)
}
