//! Shared code of the fuzz targets: the very host, wire harness and framing model that the core's
//! property and stress tests use (`runner/tests/common/`), included by path so the two can never
//! drift apart.

#![allow(missing_docs)]

#[path = "../../runner/tests/common/event.rs"]
pub mod event;

#[path = "../../runner/tests/common/chaos.rs"]
pub mod chaos;

#[path = "../../runner/tests/common/framing_model.rs"]
pub mod framing_model;
