//! Support for this project's own language bindings (Python through pyo3, Node through napi-rs).
//!
//! **Not a stable API.** Hidden from the documentation and changed without notice: a Rust host
//! has no use for it. It holds what every binding needs and must behave the same in each, so that
//! it is written once, here:
//!
//! - [`pace`]: the back-pressure policy of every queue a caller that cannot await feeds (soft
//!   mark, hard limit);
//! - [`publisher`]: in-order publishing into an [`EventHub`](crate::hub::EventHub) for such
//!   callers;
//! - [`runtime`]: the Tokio runtime a binding runs the core on, beside the host language's loop;
//! - [`switches`]: the one reading of each performance mechanism's off switch
//!   (`ACP_FACADE_NO_…=1`);
//! - [`session_order`]: a host's client calls ordered after the updates of what its session
//!   published, for hosts whose hub is known only once they returned the session.

pub mod pace;
pub mod publisher;
pub mod runtime;
pub mod session_order;
pub mod switches;
