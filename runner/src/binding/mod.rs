//! Support for this project's own language bindings (Python through pyo3, Node through napi-rs).
//!
//! **Not a stable API.** Hidden from the documentation and changed without notice: a Rust
//! product uses [`Turn`](crate::Turn) directly.
//!
//! - [`history`]: the JSON form of a turn's history the bindings hand their languages.
//! - [`ops`]: the operation queue through which code that cannot borrow the running turn (a
//!   binding's `Turn` object, called synchronously from Python or JavaScript) drives it.

pub mod history;
pub mod ops;
