//! Errors answered to the peer.
//!
//! Every failure a request can have is a JSON-RPC error object: an open integer code (unknown codes
//! round-trip unchanged), one short message and optional data. The wire type is the schema crate's
//! [`acp::Error`](crate::acp::Error); this module adds the named constructors the facade and hosts
//! use, so that the same code always means the same thing.
//!
//! Errors that end the connection (the transport failing) are not represented here: they are
//! `std::io::Error`s returned from [`Agent::serve`](crate::Agent::serve).

pub use agent_client_protocol_schema::v1::{Error, ErrorCode};

/// Named constructors for the errors the facade answers with.
///
/// Implemented for [`Error`] so call sites read `Error::unknown_session(..)`.
pub trait ErrorExt: Sized {
    /// `-32602`: the params failed to decode or broke a rule; `message` says which field.
    fn invalid_params_msg(message: impl Into<String>) -> Self;
    /// `-32600`: the request is not valid in the current state (e.g. a second prompt in flight).
    fn invalid_request_msg(message: impl Into<String>) -> Self;
    /// `-32603`: an implementation failure, with its text.
    fn internal_msg(message: impl Into<String>) -> Self;
    /// `-32601`: the method is unknown, or not advertised by this agent.
    fn method_not_found_msg(method: &str) -> Self;
    /// `-32002`: the session id is well formed but names no live session.
    fn unknown_session(session_id: &str) -> Self;
    /// `-32800`: the request was cancelled.
    fn cancelled_msg(message: impl Into<String>) -> Self;
}

impl ErrorExt for Error {
    fn invalid_params_msg(message: impl Into<String>) -> Self {
        Error::new(ErrorCode::InvalidParams.into(), message)
    }

    fn invalid_request_msg(message: impl Into<String>) -> Self {
        Error::new(ErrorCode::InvalidRequest.into(), message)
    }

    fn internal_msg(message: impl Into<String>) -> Self {
        Error::new(ErrorCode::InternalError.into(), message)
    }

    fn method_not_found_msg(method: &str) -> Self {
        Error::new(ErrorCode::MethodNotFound.into(), format!("method not found: {method}"))
    }

    fn unknown_session(session_id: &str) -> Self {
        Error::new(ErrorCode::ResourceNotFound.into(), format!("session not found: {session_id}"))
            .data(serde_json::json!({ "sessionId": session_id }))
    }

    fn cancelled_msg(message: impl Into<String>) -> Self {
        Error::new(ErrorCode::RequestCancelled.into(), message)
    }
}
