//! ACP v2 (Preview) from the same host code: a connection whose client asks for protocol version 2
//! or more, on an agent whose options enable v2, is served in v2 while everything behind the
//! facade — hosts, runner turns, the journal — stays as it is. The translation lives here alone:
//!
//! - [`initialize`]: the v2 handshake (`info` and `capabilities` both ways). What a v2 client may
//!   receive without advertising it (notices, compaction, subagents, plans with ids) counts as
//!   advertised; it has no client file system and no terminals, so the session's client handle
//!   reports them unsupported, as for a v1 client that did not advertise them.
//! - [`requests`]: the client's requests in v1 terms — `auth/login` is `authenticate`,
//!   `auth/logout` is `logout`, `session/resume` with `replayFrom` is `session/load` (then a
//!   `replay_complete` marker), MCP servers in v2's form — and the answers of the session
//!   methods in v2's (config options keyed `configId`, no `modes`). Methods v2 removed
//!   (`session/load`, `session/set_mode`, `authenticate`, `logout`) are unknown.
//! - [`lifecycle`]: the prompt. Its response acknowledges, with the user message's id, as soon
//!   as the prompt is accepted; the turn then runs as before and ends with an idle
//!   `state_update` carrying the stop reason (`error` for a turn that failed after acceptance).
//!   These lines are written directly in v2's form, one of each every turn.
//! - [`message_ids`]: the `messageId` v2 requires on every chunk. A live turn's chunks are written
//!   with it by the prompt's drain, which owns the turn's ids (no lookup, no lock per chunk), as
//!   v1's chunk lines are written (`translate::text_chunk_line`); a tool call or a plan the drain
//!   sends between chunks ends a message.
//! - [`updates`]: the rest of what the agent writes, rewritten on the writer task: `tool_call`
//!   becomes a `tool_call_update` upsert, a whole `plan` a `plan_update` of the session's one
//!   plan, `current_mode_update` is dropped (the mode is a config option, whose update is sent
//!   beside it), diffs take v2's form, a permission request gets its `title` and `subject`, and a
//!   chunk written without an id (by anything but the drain) gets one. Lines already in v2's form
//!   (the two kinds above) and those v2 shares with v1 are told by their first bytes and passed
//!   on unparsed.
//!
//! Invariants: a v1 connection is never touched (no rewriter is installed unless v2 is enabled,
//! and an enabled one passes v1 lines through after one flag check; the drain and the lifecycle
//! write v2's form only when the connection speaks v2); every request still gets exactly one
//! response (the prompt's is its acknowledgement); nothing the turn sends follows its idle
//! `state_update`; a message's chunks share one id, stable for the turn, and a new message never
//! reuses one (each turn numbers its messages under its own user message's id).

pub(super) mod initialize;
pub(super) mod lifecycle;
pub(super) mod message_ids;
pub(super) mod requests;
pub(super) mod updates;

pub(crate) use super::dialect::Dialect;
