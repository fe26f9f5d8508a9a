//! The facade's integration tests, driven through the wire by the in-memory schema-validating
//! client of `common/` (the fuzz crate includes parts of it by path, so it stays one level up).
//!
//! They are one test binary with a module per concern, not a binary per file: each binary links
//! every dependency, and twenty of them cost a fresh build some 700 MB of disk and twenty links.
//! Run one concern with `cargo test -p acp-facade --test integration cancellation::`.

#[path = "../common/mod.rs"]
mod common;

mod authentication;
mod bad_input;
mod cancellation;
mod close;
mod compact;
mod config;
mod correlation;
mod delete;
mod fuzz_properties;
mod initialize;
mod load_replay;
mod pagination;
mod permission_gate;
mod reattach;
mod resume;
mod runner;
mod session_new;
mod smoke;
mod stress;
mod stress_lifecycle;
mod turn_ops;
mod visibility;
