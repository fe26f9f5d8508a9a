//! Decoding a request's params and encoding its answer, the same way for every handler.
//!
//! A decoding failure is always `-32602` with a message naming the offending field; an answer
//! that cannot be serialised is `-32603`.

use futures::future::BoxFuture;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::{Error, ErrorExt};
use crate::rpc::{Answer, Params};

/// What a handler returns: the future that answers its request.
pub(crate) type Reply = BoxFuture<'static, Result<Answer, Error>>;

/// A reply that is already known.
pub(crate) fn ready(result: Result<Answer, Error>) -> Reply {
    Box::pin(async move { result })
}

/// Decodes a request's params, naming the offending field on failure.
pub(crate) fn decode<T: DeserializeOwned>(params: Value) -> Result<T, Error> {
    let params = if params.is_null() { Value::Object(serde_json::Map::new()) } else { params };
    serde_path_to_error::deserialize(params).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        if path == "." {
            Error::invalid_params_msg(format!("invalid params: {inner}"))
        } else {
            Error::invalid_params_msg(format!("invalid params at `{path}`: {inner}"))
        }
    })
}

/// Decodes a request's params like [`decode`], straight from their text when the connection
/// checked it ([`Params::decode_checked`]): the same result for far less work. Any failure (and
/// `null` params, which [`decode`] reads as an empty object) is decided by [`decode`], so error
/// messages are unchanged.
///
/// Only for types that do not capture raw JSON text (`RawValue`) nor use 128-bit integers: those
/// decode differently from text and from a parsed value.
pub(crate) fn decode_params<T: DeserializeOwned>(params: Params) -> Result<T, Error> {
    if let Some(decoded) = params.decode_checked() {
        return Ok(decoded);
    }
    decode(params.into_value())
}

/// Serialises a response.
pub(crate) fn encode<T: Serialize>(value: &T) -> Result<Answer, Error> {
    serde_json::to_value(value).map(Answer::from).map_err(|e| encode_error(&e))
}

/// The error for a response that could not be serialised.
pub(crate) fn encode_error(e: &serde_json::Error) -> Error {
    Error::internal_msg(format!("could not encode the response: {e}"))
}
