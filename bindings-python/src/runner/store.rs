//! `MemoryStore`: the core's in-process store.

use std::sync::Arc;

use acp_facade_runner::MemoryStore;
use pyo3::prelude::*;

/// An in-process store; nothing survives the process.
#[pyclass(name = "MemoryStore", module = "acp_facade._native", frozen)]
pub struct PyMemoryStore {
    pub(crate) store: Arc<MemoryStore>,
}

#[pymethods]
impl PyMemoryStore {
    #[new]
    fn new() -> Self {
        Self { store: Arc::new(MemoryStore::new()) }
    }
}
