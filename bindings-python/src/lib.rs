//! `acp_facade._native`: the Python binding of acp-facade.
//!
//! Only conversion and callback plumbing lives here; every piece of protocol logic stays in the
//! `acp-facade` core. One file per core module it wraps ([`agent`], [`error`], [`harness`],
//! [`host`], [`hub`], [`pace`], [`runner`]), plus [`bridge`], the binding's own plumbing between the one process-wide
//! Tokio runtime and the caller's asyncio loop.
//!
//! Architecture invariant: Tokio threads never touch the interpreter. A call into Python is
//! queued in Rust and the asyncio loop is woken through a socket it watches; the loop drains the
//! queue, runs the host's coroutines as tasks, and answers with plain synchronous calls.

// These docs are for the binding's maintainers (its users read the Python API), so they may point
// at private items.
#![allow(rustdoc::private_intra_doc_links)]

use std::sync::OnceLock;

use pyo3::prelude::*;

pub mod agent;
pub mod bridge;
pub mod error;
pub mod harness;
pub mod host;
pub mod hub;
pub mod pace;
pub mod runner;

/// The one process-wide Tokio runtime of the binding.
pub(crate) fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        // A runtime that cannot start leaves the binding unusable: there is nothing to fall back on.
        #[allow(clippy::expect_used)]
        tokio::runtime::Builder::new_multi_thread()
            .thread_name("acp-facade")
            .enable_all()
            .build()
            .expect("cannot start the Tokio runtime")
    })
}

fn init_logging() {
    // Logs go to stderr only: stdout is the protocol channel.
    let filter = tracing_subscriber::EnvFilter::try_from_env("ACP_FACADE_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt().with_writer(std::io::stderr).with_env_filter(filter).try_init();
}

/// The native module.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    init_logging();
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    bridge::register(m)?;
    hub::register(m)?;
    runner::register(m)?;
    agent::register(m)?;
    host::register(m)?;
    Ok(())
}
