//! The JSON-RPC 2.0 peer: newline-delimited framing, concurrent request dispatch, ordered
//! notifications, one ordered writer, our own outgoing requests, and `$/cancel_request` both ways.
//!
//! It works over any `AsyncRead + AsyncWrite` pair: [`stdio`] for a real agent process, an
//! in-memory [`tokio::io::duplex`] pair for tests and embedding. See [`connection`] for the
//! concurrency contract.

pub(crate) mod connection;
pub(crate) mod framing;
pub(crate) mod message;
pub(crate) mod outlet;
pub(crate) mod peer;
pub(crate) mod stdio;
pub(crate) mod stdio_pipe;
mod stdout_guard;
mod strict;
pub(crate) mod trace;

pub(crate) use connection::{ConnectionOptions, Handler, LineRewriter, RequestContext};
pub(crate) use framing::DEFAULT_MAX_MESSAGE_SIZE;
pub(crate) use message::{Answer, IncomingNotification, Params};
pub(crate) use peer::{Peer, RequestError};
