//! The JSON-RPC 2.0 peer: newline-delimited framing, concurrent request dispatch, ordered
//! notifications, one ordered writer, our own outgoing requests, and `$/cancel_request` both ways.
//!
//! It works over any `AsyncRead + AsyncWrite` pair: [`stdio`] for a real agent process, an
//! in-memory [`tokio::io::duplex`] pair for tests and embedding. See [`connection`] for the
//! concurrency contract.

pub mod connection;
pub mod framing;
pub mod message;
pub(crate) mod outlet;
pub mod peer;
pub mod stdio;
mod strict;
pub mod trace;

pub use connection::{ConnectionOptions, Handler, RequestContext, serve};
pub use framing::DEFAULT_MAX_MESSAGE_SIZE;
pub use message::{Answer, IncomingNotification, IncomingRequest, Params};
pub use peer::{ConnectionClosed, Peer, RequestError};
