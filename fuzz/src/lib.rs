//! Shared code of the fuzz targets: the very host, wire harness and framing model that the core's
//! property and stress tests use (`core/tests/common/`), included by path so the two can never
//! drift apart.

#![allow(missing_docs)]

#[path = "../../core/tests/common/event.rs"]
pub mod event;

#[path = "../../core/tests/common/chaos.rs"]
pub mod chaos;

#[path = "../../core/tests/common/framing_model.rs"]
pub mod framing_model;
