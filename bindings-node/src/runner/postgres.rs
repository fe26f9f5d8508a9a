//! `PostgresStore`: sessions in a `PostgreSQL` database, shared by every process using it.

use std::sync::Arc;

use acp_facade_runner::Store;
use napi::Env;
use napi::bindgen_prelude::PromiseRaw;
use napi_derive::napi;

use crate::error::{Code, Result, js_error, recode};

/// A session store in a `PostgreSQL` database, shared by every process that uses the same
/// database (each session live in one process at a time).
#[napi]
pub struct PostgresStore {
    store: Arc<acp_facade_runner::PostgresStore>,
}

#[napi]
impl PostgresStore {
    /// Connects to the database at `url` (`postgres://user:password@host:port/dbname`, or
    /// `postgres://user@/dbname?host=/run/postgresql` for a Unix socket; TLS as its `sslmode` and
    /// `sslrootcert` ask, with libpq's meanings: see the README) and prepares it (schema, cursor
    /// key, this process's lease), blocking until done: a constructor cannot wait for a promise,
    /// and an agent has nothing to serve before its store is open. Throws `ERR_ACP_STORE` when the
    /// database cannot be reached or used (the message names the server, never the password).
    #[napi(constructor)]
    pub fn new(url: String) -> Result<Self> {
        napi::bindgen_prelude::block_on(acp_facade_runner::PostgresStore::connect(&url))
            .map(|store| Self { store: Arc::new(store) })
            .map_err(|e| js_error(Code::Store, e.to_string()))
    }

    /// Frees every session this process still owns at once and stops renewing its lease (without
    /// it, they are free when the lease expires); waits at most 3 s. Rejects with
    /// `ERR_ACP_STORE` when it cannot.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn close<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, ()>> {
        let store = self.store.clone();
        env.spawn_future(async move {
            store
                .close()
                .await
                .map_err(|e| napi::Error::new(napi::Status::GenericFailure, format!("ERR_ACP_STORE: {e}")))
        })
        .map_err(recode)
    }
}

impl PostgresStore {
    /// The core store.
    pub fn store(&self) -> Arc<dyn Store> {
        self.store.clone()
    }
}
