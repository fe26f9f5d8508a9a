//! `SqliteStore`: the core's `SQLite` store.

use std::sync::Arc;

use acp_facade_runner::SqliteStore;
use pyo3::prelude::*;

/// The core's `SQLite` store (a file, or `:memory:`).
#[pyclass(name = "SqliteStore", module = "acp_facade._native", frozen)]
pub struct PySqliteStore {
    pub(crate) store: Arc<SqliteStore>,
}

#[pymethods]
impl PySqliteStore {
    #[new]
    fn new(py: Python<'_>, path: &str) -> PyResult<Self> {
        let store =
            py.detach(|| SqliteStore::open(path)).map_err(|e| pyo3::exceptions::PyOSError::new_err(e.to_string()))?;
        Ok(Self { store: Arc::new(store) })
    }
}
