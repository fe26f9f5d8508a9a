//! The facade's integration tests, driven through the wire by the in-memory schema-validating
//! client of `common/` (the fuzz crate includes parts of it by path, so it stays one level up).
//!
//! They are one test binary with a module per concern, not a binary per file: each binary links
//! every dependency, and twenty of them cost a fresh build some 700 MB of disk and twenty links.
//! Run one concern with `cargo test -p acp-facade --test integration cancellation::`.

#[path = "../common/mod.rs"]
mod common;

mod agent_changes;
mod authentication;
mod bad_input;
mod cancellation;
mod client_elicitation;
mod client_fs;
mod client_session;
mod client_terminal;
mod close;
mod compact;
mod config;
mod correlation;
mod delete;
mod extensions;
mod fleet;
mod fuzz_properties;
mod gate_elicitation;
mod history;
mod idempotency;
mod initialize;
mod load_replay;
mod mcp_servers;
mod meta;
mod pagination;
mod permission_gate;
mod plans;
mod postgres;
mod postgres_tls;
mod principals;
mod prompt_content;
mod protocol_v2;
mod reattach;
mod remote;
mod remote_resume;
mod replay_order;
mod resume;
mod runner;
mod runner_questions;
mod schema_validators;
mod session_info;
mod session_new;
mod slash_commands;
mod smoke;
mod stable_additions;
mod store;
mod store_failure;
mod stress;
mod stress_lifecycle;
mod system_prompt;
mod tool_calls;
mod turn_ops;
mod visibility;
