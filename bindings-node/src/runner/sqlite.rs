//! `SqliteStore`: sessions in an `SQLite` file, shared safely between processes.

use std::sync::Arc;

use acp_facade_runner::Store;
use napi_derive::napi;

use crate::error::{Code, Result, js_error};

/// A session store in an `SQLite` database file (or `:memory:`).
#[napi]
pub struct SqliteStore {
    store: Arc<acp_facade_runner::SqliteStore>,
}

#[napi]
impl SqliteStore {
    /// Opens (creating if needed, with missing parent directories) the database at `path`, or a
    /// private in-memory database for `":memory:"`. Throws `ERR_ACP_STORE` when it cannot.
    #[napi(factory)]
    pub fn open(path: String) -> Result<Self> {
        acp_facade_runner::SqliteStore::open(&path)
            .map(|store| Self { store: Arc::new(store) })
            .map_err(|e| js_error(Code::Store, e.to_string()))
    }
}

impl SqliteStore {
    /// The core store.
    pub fn store(&self) -> Arc<dyn Store> {
        self.store.clone()
    }
}
