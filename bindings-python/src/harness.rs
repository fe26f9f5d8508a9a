//! The runtime model's values (events, content, gates, ids) across the boundary.
//!
//! Python holds them as the typed classes of `acp_facade.harness` (dataclass-like, keyword
//! constructors, reprs), which convert to and from the core's serde form (`to_json` /
//! `from_json`). This file is the one converter between Python values and JSON values, plus the
//! typed decode/encode helpers built on it; the core's own serde types do the validation.

use acp_facade::Error;
use acp_facade::error::ErrorExt;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

/// A Python value as JSON: `None`, `bool`, `int`, `float`, `str`, lists, tuples, dicts with string
/// keys, and objects with a `to_json()` method (the typed classes of the package).
pub(crate) fn py_to_json(obj: &Bound<'_, PyAny>) -> PyResult<Value> {
    if obj.is_none() {
        return Ok(Value::Null);
    }
    if let Ok(b) = obj.cast::<PyBool>() {
        return Ok(Value::Bool(b.is_true()));
    }
    if obj.is_instance_of::<PyInt>() {
        if let Ok(n) = obj.extract::<i64>() {
            return Ok(Value::from(n));
        }
        return Ok(Value::from(obj.extract::<u64>()?));
    }
    if let Ok(f) = obj.cast::<PyFloat>() {
        return serde_json::Number::from_f64(f.value())
            .map(Value::Number)
            .ok_or_else(|| PyValueError::new_err("a float that is not finite has no JSON form"));
    }
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(Value::String(s.to_str()?.to_owned()));
    }
    if let Ok(list) = obj.cast::<PyList>() {
        return list.iter().map(|item| py_to_json(&item)).collect::<PyResult<Vec<_>>>().map(Value::Array);
    }
    if let Ok(tuple) = obj.cast::<PyTuple>() {
        return tuple.iter().map(|item| py_to_json(&item)).collect::<PyResult<Vec<_>>>().map(Value::Array);
    }
    if let Ok(dict) = obj.cast::<PyDict>() {
        let mut map = Map::with_capacity(dict.len());
        for (key, value) in dict.iter() {
            let key = key
                .cast::<PyString>()
                .map_err(|_| PyTypeError::new_err("JSON object keys must be strings"))?
                .to_str()?
                .to_owned();
            map.insert(key, py_to_json(&value)?);
        }
        return Ok(Value::Object(map));
    }
    if let Ok(to_json) = obj.getattr("to_json") {
        return py_to_json(&to_json.call0()?);
    }
    Err(PyTypeError::new_err(format!(
        "cannot convert a {} to JSON",
        obj.get_type().name().map(|n| n.to_string()).unwrap_or_default()
    )))
}

/// A JSON value as plain Python data (dicts, lists, str, int, float, bool, None).
pub(crate) fn json_to_py<'py>(py: Python<'py>, value: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match value {
        Value::Null => py.None().into_bound(py),
        Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                i.into_pyobject(py)?.into_any()
            } else if let Some(u) = n.as_u64() {
                u.into_pyobject(py)?.into_any()
            } else {
                n.as_f64().unwrap_or(f64::NAN).into_pyobject(py)?.into_any()
            }
        }
        Value::String(s) => PyString::new(py, s).into_any(),
        Value::Array(items) => {
            let list = PyList::empty(py);
            for item in items {
                list.append(json_to_py(py, item)?)?;
            }
            list.into_any()
        }
        Value::Object(map) => {
            let dict = PyDict::new(py);
            for (key, item) in map {
                dict.set_item(key, json_to_py(py, item)?)?;
            }
            dict.into_any()
        }
    })
}

/// Decodes a host's Python value into a core type; `what` names it in the error.
pub(crate) fn decode<T: DeserializeOwned>(obj: &Bound<'_, PyAny>, what: &str) -> Result<T, Error> {
    let value =
        py_to_json(obj).map_err(|e| Error::internal_msg(format!("the host returned an invalid {what}: {e}")))?;
    serde_json::from_value(value).map_err(|e| Error::internal_msg(format!("the host returned an invalid {what}: {e}")))
}

/// Decodes an argument from Python into a core type, raising `ValueError` when it is invalid.
pub(crate) fn extract<T: DeserializeOwned>(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<T> {
    let value = py_to_json(obj)?;
    serde_json::from_value(value).map_err(|e| PyValueError::new_err(format!("invalid {what}: {e}")))
}

/// Encodes a core value as plain Python data.
pub(crate) fn encode<'py, T: Serialize>(py: Python<'py>, value: &T) -> PyResult<Bound<'py, PyAny>> {
    let value = serde_json::to_value(value).map_err(|e| PyValueError::new_err(e.to_string()))?;
    json_to_py(py, &value)
}
