//! # acp-facade for Node.js
//!
//! The napi-rs binding of [`acp_facade`]: Rust owns the tokio runtime and the whole protocol; this
//! crate only converts values and plumbs callbacks. Its modules mirror the core's:
//!
//! - [`error`]: `AcpError` in both directions and the stable `code` of errors surfaced to JS.
//! - [`callback`]: calling JavaScript host methods from Rust (weak, non-callee-handled
//!   threadsafe functions, `this` bound to the host object, Promise or plain return values).
//! - [`client`]: the agent's handle on the client (`Client`, `Terminal`): files, terminals,
//!   elicitation.
//! - [`host`]: JS objects implementing the host interfaces.
//! - [`hub`]: the `EventHub` a JS live session publishes to.
//! - [`number`]: JS numbers checked into Rust integers.
//! - [`pace`]: the core's back-pressure as JS sees it (`null` or a Promise; `ERR_ACP_QUEUE_FULL`).
//! - [`harness`]: conversion of harness events and gate answers.
//! - [`agent`]: the `Agent` class, its options, and serving over stdio or caller-supplied streams.
//! - [`remote`]: `agent.serveHttp`, the agent served over Streamable HTTP and WebSocket.
//! - [`runner`]: the batteries-included runner: stores, the JS turn runner and the `Turn` handle.
//! - [`settle`]: Promises settled from the core's threads through one threadsafe function.
//!
//! Nothing here writes to stdout: stdout is the protocol channel. Logs go to stderr, filtered by
//! `ACP_FACADE_LOG` (default `warn`).

// napi-derive's generated glue is `unsafe` FFI; the hand-written code keeps its few `unsafe`
// blocks next to a SAFETY comment.
#![allow(unsafe_code)]
// The exported items are documented for JS (their `///` docs become JSDoc); napi-derive also
// generates undocumented registration items.
#![allow(missing_docs)]
// Exported functions take owned arguments (`String`, `Buffer`): napi-derive converts into them.
#![allow(clippy::needless_pass_by_value)]
// These docs are for the binding's maintainers (its users read the TypeScript API), so they may
// point at private items.
#![allow(rustdoc::private_intra_doc_links)]
// napi values (`Env`, `Unknown`) are small `Copy` handles, passed by reference like other values.
#![allow(clippy::trivially_copy_pass_by_ref)]

pub mod agent;
pub mod callback;
pub mod client;
pub mod error;
pub mod harness;
pub mod host;
pub mod hub;
pub mod number;
pub mod pace;
pub mod relay;
pub mod remote;
pub mod rpc;
pub mod runner;
pub mod settle;

use napi_derive::module_init;

#[module_init]
fn init() {
    // The runtime the core runs on (napi-rs's own would start one worker per CPU): see
    // ARCHITECTURE.md, "The bindings' threads". A runtime that cannot start leaves napi-rs to
    // start its default one.
    if let Ok(runtime) = acp_facade::binding::runtime::binding_runtime() {
        napi::bindgen_prelude::create_custom_tokio_runtime(runtime);
    }
    use tracing_subscriber::Layer as _;
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    // Diagnostics go to stderr only. A host that installed its own subscriber keeps it.
    // `ACP_FACADE_LOG` holds `target=level` directives (e.g. `acp_facade=debug`) or a level.
    let filter = std::env::var("ACP_FACADE_LOG")
        .ok()
        .and_then(|directives| directives.parse::<tracing_subscriber::filter::Targets>().ok())
        .unwrap_or_else(|| tracing_subscriber::filter::Targets::new().with_default(tracing::Level::WARN));
    let stderr = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        // Colours only for a person at a terminal: not in an editor's agent log or a file.
        .with_ansi(acp_facade::logging::stderr_ansi())
        .with_filter(filter);
    let _ = tracing_subscriber::registry().with(stderr).try_init();
}
