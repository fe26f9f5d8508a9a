//! # acp-facade
//!
//! A complete [Agent Client Protocol](https://agentclientprotocol.com) (ACP) **agent** that product
//! code drives through a handful of host interfaces. The product owns its agent runtime (model calls,
//! tools, storage); acp-facade owns everything ACP: the JSON-RPC connection, capability
//! advertisement, session identity, prompt-to-turn correlation, live streaming of runtime events as
//! `session/update`, permission round trips, cancellation and close orchestration, history replay,
//! authenticated pagination, config options and modes, and the `/compact` command.
//!
//! It speaks ACP `protocolVersion` 1 at the newest stable schema, and ACP v2 (Preview) to a client
//! that asks for it when [`Options::protocol_v2`] is on; wire types come from
//! [`agent_client_protocol_schema`] =1.20.0 (its v1 types re-exported as [`acp`]), and the facade
//! translates to v2 itself.
//!
//! ## Layers
//!
//! - `rpc` (internal): the JSON-RPC 2.0 peer (framing, dispatch, outgoing calls, `$/cancel_request`).
//! - [`client`]: the agent's calls to the editor (files, terminals, elicitation), gated by what
//!   the client advertised and cancelled with their turn.
//! - [`harness`]: the runtime model a host speaks: sessions, loops, turns and their events.
//! - [`host`]: the traits a product implements; [`hub`]: the event fan-out a host publishes to.
//! - [`agent`]: the facade that turns host events into ACP and ACP requests into host calls.
//!
//! ## Architecture invariants
//!
//! - The connection's writer task is the only writer to the transport (stdout when serving stdio).
//! - Every request gets exactly one response, also when cancelled, when its handler panics, or when
//!   the connection closes underneath it.
//! - No `session/update` of a turn is written after that turn's `session/prompt` response.
//! - Only `Public` harness events ever reach the client.
//! - Nothing is asked of the client that it did not advertise; a call to the client is cancelled
//!   with its turn; every terminal is released exactly once (see [`client`]).

#![deny(missing_docs)]
#![deny(unreachable_pub)]

pub mod agent;
#[doc(hidden)]
pub mod binding;
pub mod client;
pub mod error;
pub mod harness;
pub mod host;
pub mod hub;
pub mod logging;
pub mod panic;
#[cfg(feature = "remote")]
pub mod remote;
mod rpc;

/// The inner pieces that the project's fuzz targets and property tests drive directly: the
/// connection's framing reader and message classifier, and the `session/list` cursor codec. Only with the `fuzzing` feature; not
/// a stable API.
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing {
    pub use crate::agent::cursor::InvalidCursor;
    pub use crate::agent::cursor::fuzzing::{decode_cursor, encode_cursor};
    /// The remote transports' decoding of a POST body and a WebSocket message.
    #[cfg(feature = "remote")]
    pub use crate::remote::decode::{Refusal, WebSocketText, post_body, websocket_text};
    pub use crate::rpc::framing::{DEFAULT_MAX_MESSAGE_SIZE, Frame, LineReader};
    pub use crate::rpc::message::{Incoming, Malformed, classify};
}
pub mod time;

/// The pinned ACP wire types (`agent-client-protocol-schema` 1.20.0, protocol v1), re-exported
/// for hosts.
pub use agent_client_protocol_schema::v1 as acp;

pub use agent::{Agent, Options};
pub use error::{Error, ErrorCode};

/// The crate README's example (the README crates.io shows), compiled as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct CrateReadme;
