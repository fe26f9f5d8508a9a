//! `PostgresStore`: the core's `PostgreSQL` store, shared by every process using one database.

use std::sync::Arc;

use acp_facade_runner::{PostgresStore, StoreError, StoreErrorKind};
use pyo3::prelude::*;

/// The core's `PostgreSQL` store: sessions shared by every process using the same database.
#[pyclass(name = "PostgresStore", module = "acp_facade._native", frozen)]
pub struct PyPostgresStore {
    pub(crate) store: Arc<PostgresStore>,
}

/// `ConnectionError` when the database cannot be reached, `OSError` for any other failure.
fn store_error(e: &StoreError) -> PyErr {
    match e.kind() {
        StoreErrorKind::Unavailable => pyo3::exceptions::PyConnectionError::new_err(e.to_string()),
        _ => pyo3::exceptions::PyOSError::new_err(e.to_string()),
    }
}

#[pymethods]
impl PyPostgresStore {
    /// Connects (blocking, without the interpreter) and prepares the database: schema, cursor
    /// key, this process's lease (renewed on the binding's runtime from then on).
    #[new]
    fn new(py: Python<'_>, url: &str) -> PyResult<Self> {
        let store =
            py.detach(|| crate::runtime().block_on(PostgresStore::connect(url))).map_err(|e| store_error(&e))?;
        Ok(Self { store: Arc::new(store) })
    }

    /// Frees every session this process still owns and stops renewing its lease (blocking).
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let store = self.store.clone();
        py.detach(|| crate::runtime().block_on(async move { store.close().await })).map_err(|e| store_error(&e))
    }
}
