//! `acp_facade._native`: the Python binding of acp-facade.
//!
//! Only conversion and callback plumbing lives here; every piece of protocol logic stays in the
//! `acp-facade` core. One file per core module it wraps ([`agent`], [`client`], [`error`], [`harness`],
//! [`host`], [`hub`], [`pace`], [`runner`]), plus [`bridge`], the binding's own plumbing between the one process-wide
//! Tokio runtime and the caller's asyncio loop.
//!
//! Architecture invariant: Tokio threads never touch the interpreter. A call into Python is
//! queued in Rust and the asyncio loop is woken through a file descriptor it watches; the loop
//! drains the queue, runs the host's coroutines as tasks, and answers with plain synchronous calls.

// These docs are for the binding's maintainers (its users read the Python API), so they may point
// at private items.
#![allow(rustdoc::private_intra_doc_links)]

use std::sync::OnceLock;

use pyo3::prelude::*;

pub mod agent;
pub mod bridge;
pub mod client;
pub mod error;
pub mod harness;
pub mod host;
pub mod hub;
pub mod pace;
pub mod runner;

/// The one process-wide Tokio runtime of the binding: the core's
/// [`binding_runtime`](acp_facade::binding::runtime), one worker thread in `SCHED_BATCH` (unless
/// `ACP_FACADE_NO_SCHED_BATCH=1`; ARCHITECTURE.md, "The bindings' threads").
pub(crate) fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        // A runtime that cannot start leaves the binding unusable: there is nothing to fall back on.
        #[allow(clippy::expect_used)]
        acp_facade::binding::runtime::binding_runtime().expect("cannot start the Tokio runtime")
    })
}

fn init_logging() {
    use tracing_subscriber::Layer as _;
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    // Logs go to stderr only: stdout is the protocol channel. `ACP_FACADE_LOG` holds
    // `target=level` directives (e.g. `acp_facade=debug`) or a level; default `warn`.
    let filter = std::env::var("ACP_FACADE_LOG")
        .ok()
        .and_then(|directives| directives.parse::<tracing_subscriber::filter::Targets>().ok())
        .unwrap_or_else(|| tracing_subscriber::filter::Targets::new().with_default(tracing::Level::WARN));
    // Colours only for a person at a terminal: not in an editor's agent log or a file.
    let stderr = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(acp_facade::logging::stderr_ansi())
        .with_filter(filter);
    let _ = tracing_subscriber::registry().with(stderr).try_init();
}

/// The native module.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    init_logging();
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    bridge::register(m)?;
    hub::register(m)?;
    client::register(m)?;
    runner::register(m)?;
    agent::register(m)?;
    host::register(m)?;
    Ok(())
}
