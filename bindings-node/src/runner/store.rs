//! `MemoryStore`: sessions kept in this process only.

use std::sync::Arc;

use acp_facade_runner::Store;
use napi_derive::napi;

/// An in-process session store: nothing survives the process.
#[napi]
pub struct MemoryStore {
    pub(crate) store: Arc<acp_facade_runner::MemoryStore>,
}

#[napi]
impl MemoryStore {
    /// An empty store.
    #[napi(constructor)]
    pub fn new() -> Self {
        Self { store: Arc::new(acp_facade_runner::MemoryStore::new()) }
    }
}

impl Default for MemoryStore {
    fn default() -> Self {
        Self::new()
    }
}

impl MemoryStore {
    /// The core store.
    pub fn store(&self) -> Arc<dyn Store> {
        self.store.clone()
    }
}
