//! The client handle: the agent calling the editor — files through its buffers (`fs/*`), commands
//! in its terminals (`terminal/*`), questions to the user (`elicitation/*`).
//!
//! One handle per session ([`Client`], from [`Setup::client`](crate::host::Setup::client)), and
//! one per runner turn (`acp_facade_runner::Turn::client`), tied to that turn's
//! cancellation. A floor below the facade and the runner: it uses only the connection
//! (the connection's peer) and the ACP types.
//!
//! Invariants (each file states its part):
//! - A call needing a capability the client did not advertise fails at once with
//!   [`ClientError::Unsupported`]; nothing reaches the wire. Relative paths fail at once too.
//! - A call is cancelled with its scope — the runner turn, or the prompt in flight for the
//!   session's own handle — and with its session (close, the client going away): the request is
//!   abandoned with `$/cancel_request`, the call fails [`ClientError::Cancelled`], and the
//!   scope's terminals that may still run are killed and released before the caller hears of it.
//! - The client's JSON-RPC error is [`ClientError::Rejected`] with its code, message and data; a
//!   result that does not decode is [`ClientError::Protocol`]. Neither ends a turn by itself.
//! - Every terminal is released exactly once: on [`Terminal::release`], when dropped, when its
//!   turn ends, when its session closes — whichever comes first (`link`).

mod capabilities;
mod elicitation;
mod error;
mod fs;
mod handle;
pub(crate) mod link;
pub mod method;
mod terminal;

pub use capabilities::Capabilities;
pub use elicitation::{ElicitationAnswer, UrlElicitation};
pub(crate) use elicitation::{check_form_answer, check_url, fresh_elicitation_id};
pub use error::ClientError;
pub use handle::{Client, PublishedSeq};
pub use terminal::Terminal;
