//! What a call to the client can fail with: one closed set of kinds, each carrying what a host
//! needs to react (and a binding needs to raise its language's error).

use std::path::PathBuf;

use crate::error::{Error, ErrorCode, ErrorExt};

/// Why a call to the client failed.
///
/// The first four kinds are decided before anything is sent: [`ClientError::Unsupported`],
/// [`ClientError::RelativePath`], [`ClientError::InvalidArgument`] and
/// [`ClientError::NotEstablished`] never reach the wire. None of
/// them ends the turn by itself: a host may carry on (a turn that returns it with `?` fails, as any
/// other error would).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// The client did not advertise the capability the call needs; nothing was sent.
    #[error("`{method}` is not supported by the client: it did not advertise `{capability}`")]
    Unsupported {
        /// The ACP method that would have been called (`fs/read_text_file`, …).
        method: &'static str,
        /// The client capability it needs (`fs.readTextFile`, `terminal`, `elicitation.form`, …).
        capability: &'static str,
    },
    /// A path was not absolute (ACP paths are); nothing was sent.
    #[error("`{field}` must be an absolute path, got {}", path.display())]
    RelativePath {
        /// Which argument (`path`, `cwd`).
        field: &'static str,
        /// The path as given.
        path: PathBuf,
    },
    /// An argument is not valid for the call (a URL that is not absolute, …); nothing was sent.
    #[error("invalid `{field}`: {reason}")]
    InvalidArgument {
        /// Which argument.
        field: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// The handle's session is not established yet (a call made while `session/new` was still
    /// running in the host): the client would not know the session. Nothing was sent.
    #[error("`{method}` was called before the session was established")]
    NotEstablished {
        /// The ACP method that would have been called.
        method: &'static str,
    },
    /// The call was cancelled: its turn was cancelled (`session/cancel`, `$/cancel_request` of
    /// the prompt), its session closed, or the client went away. A request already sent was
    /// abandoned with `$/cancel_request`.
    #[error("`{method}` was cancelled")]
    Cancelled {
        /// The ACP method that was cancelled.
        method: &'static str,
    },
    /// The client answered with a JSON-RPC error (code, message and data as it sent them).
    #[error("the client answered `{method}` with error {}: {}", i32::from(.error.code), .error.message)]
    Rejected {
        /// The ACP method.
        method: &'static str,
        /// The client's error object.
        error: Error,
    },
    /// The client's result does not match the pinned schema (or a form answer does not match the
    /// schema that was asked for).
    #[error("malformed `{method}` result from the client: {detail}")]
    Protocol {
        /// The ACP method.
        method: &'static str,
        /// What was wrong.
        detail: String,
    },
    /// The terminal was already released (by [`Terminal::release`](super::Terminal::release), at
    /// the end of its turn, or when its session closed); nothing was sent.
    #[error("terminal {terminal_id} was already released")]
    Released {
        /// The terminal's id.
        terminal_id: String,
    },
}

impl ClientError {
    /// A stable name of the kind, for bindings and logs: `unsupported`, `relative_path`,
    /// `invalid_argument`, `not_established`, `cancelled`, `rejected`, `protocol` or `released`.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Unsupported { .. } => "unsupported",
            Self::RelativePath { .. } => "relative_path",
            Self::InvalidArgument { .. } => "invalid_argument",
            Self::NotEstablished { .. } => "not_established",
            Self::Cancelled { .. } => "cancelled",
            Self::Rejected { .. } => "rejected",
            Self::Protocol { .. } => "protocol",
            Self::Released { .. } => "released",
        }
    }

    /// The client's error object, for [`ClientError::Rejected`].
    pub fn rejection(&self) -> Option<&Error> {
        match self {
            Self::Rejected { error, .. } => Some(error),
            _ => None,
        }
    }

    /// Whether the call was cancelled.
    pub fn is_cancelled(&self) -> bool {
        matches!(self, Self::Cancelled { .. })
    }
}

/// So that a turn can return a client error with `?`: the client's own error keeps its code,
/// a cancellation is `-32800`, an unsupported call `-32601`, bad arguments `-32602`, a released
/// terminal `-32600`, anything else `-32603`; the message is the error's text.
impl From<ClientError> for Error {
    fn from(error: ClientError) -> Self {
        let message = error.to_string();
        match error {
            ClientError::Rejected { error, .. } => error,
            ClientError::Cancelled { .. } => Error::cancelled_msg(message),
            ClientError::Unsupported { .. } => Error::new(ErrorCode::MethodNotFound.into(), message),
            ClientError::RelativePath { .. } | ClientError::InvalidArgument { .. } => {
                Error::invalid_params_msg(message)
            }
            ClientError::Released { .. } => Error::invalid_request_msg(message),
            ClientError::NotEstablished { .. } | ClientError::Protocol { .. } => Error::internal_msg(message),
        }
    }
}
