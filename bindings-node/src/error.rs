//! Errors in both directions.
//!
//! JS → Rust: a host method that throws or rejects with an `AcpError` (an `Error` whose `name` is
//! `"AcpError"` and whose `code` is an integer) answers the request with that code, message and
//! `data`; any other throw or rejection answers `-32603` with its message ([`from_js`]).
//!
//! Rust → JS: every error this binding throws carries a stable string `code` ([`Code`]).
//!
//! A failed call to the client ([`ClientError`]) rejects with the `ClientError` subclass of its
//! kind (`UnsupportedError`, `RelativePathError`, `InvalidArgumentError`, `NotEstablishedError`,
//! `RejectedError`, `ProtocolError`, `ReleasedError`): an `AcpError` whose numeric `code` is the one
//! the core gives the kind (`From<ClientError> for Error`: the client's own for a rejection), with
//! `kind`, `method` and the kind's details. A cancelled call rejects with an `AbortError`
//! (`name` `"AbortError"`, `code` `"ABORT_ERR"`, as Node's own cancellations). The classes are
//! JavaScript's (`index.js`), which hands this binding their factory once
//! ([`register_env`]); thrown back from a host method, a `ClientError` answers with its
//! code like any `AcpError`.

use acp_facade::client::ClientError;
use acp_facade::error::{Error as AcpError, ErrorExt};
use napi::bindgen_prelude::{Function, FunctionRef, JsObjectValue, Object, ObjectRef, PromiseRaw, Unknown};
use napi::{Env, JsValue, ValueType, sys};
use napi_derive::napi;
use serde_json::{Value, json};

/// The stable `code` of an error thrown to JavaScript.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Code {
    /// An argument had the wrong type or value: `ERR_ACP_INVALID_ARG`.
    InvalidArg,
    /// The session store failed: `ERR_ACP_STORE`.
    Store,
    /// The transport failed while serving: `ERR_ACP_IO`.
    Io,
    /// A turn API call after the turn ended: `ERR_ACP_TURN_ENDED`.
    TurnEnded,
    /// A streaming call (`turn.text`, `events.publish`, …) whose caller never awaited the Promises
    /// it was handed, refused at the hard bound of its queue: `ERR_ACP_QUEUE_FULL`.
    QueueFull,
    /// The agent answered an ACP error (see the message): `ERR_ACP_PROTOCOL`.
    Protocol,
    /// Anything else: `ERR_ACP_INTERNAL`.
    Internal,
}

impl AsRef<str> for Code {
    fn as_ref(&self) -> &str {
        match self {
            Self::InvalidArg => "ERR_ACP_INVALID_ARG",
            Self::Store => "ERR_ACP_STORE",
            Self::Io => "ERR_ACP_IO",
            Self::TurnEnded => "ERR_ACP_TURN_ENDED",
            Self::QueueFull => "ERR_ACP_QUEUE_FULL",
            Self::Protocol => "ERR_ACP_PROTOCOL",
            Self::Internal => "ERR_ACP_INTERNAL",
        }
    }
}

impl From<napi::Status> for Code {
    fn from(status: napi::Status) -> Self {
        match status {
            napi::Status::InvalidArg
            | napi::Status::ObjectExpected
            | napi::Status::StringExpected
            | napi::Status::NameExpected
            | napi::Status::FunctionExpected
            | napi::Status::NumberExpected
            | napi::Status::BooleanExpected
            | napi::Status::ArrayExpected
            | napi::Status::BigintExpected => Self::InvalidArg,
            _ => Self::Internal,
        }
    }
}

/// The result type of exported functions (named `Result` so that napi-derive recognises it).
pub type Result<T, E = napi::Error<Code>> = std::result::Result<T, E>;

/// An error for JavaScript with a stable code.
pub fn js_error(code: Code, message: impl Into<String>) -> napi::Error<Code> {
    napi::Error::new(code, message.into())
}

/// Re-codes a plain napi error (a failed conversion, mostly).
pub fn recode(error: napi::Error) -> napi::Error<Code> {
    napi::Error::new(Code::from(error.status), error.reason.clone())
}

/// A Promise rejected at once with a `TypeError` (its `code` `ERR_ACP_INVALID_ARG`): how a call
/// that answers with a Promise refuses an argument it was asked to reject rather than throw for.
pub fn rejected_type_error<T>(env: &Env, message: impl Into<String>) -> Result<PromiseRaw<'_, T>> {
    let error = napi::JsTypeError::from(js_error(Code::InvalidArg, message));
    let mut deferred = std::ptr::null_mut();
    let mut promise = std::ptr::null_mut();
    // SAFETY: on the JS thread (`env` is its live environment), with out-pointers to locals; the
    // deferred is settled once, here.
    unsafe {
        napi::check_status!(sys::napi_create_promise(env.raw(), &raw mut deferred, &raw mut promise))
            .map_err(recode)?;
        let value = error.into_value(env.raw());
        napi::check_status!(sys::napi_reject_deferred(env.raw(), deferred, value)).map_err(recode)?;
    }
    Ok(PromiseRaw::new(env.raw(), promise))
}

/// The JSON-RPC error a JavaScript throw or rejection answers with.
pub fn from_js(env: &Env, value: &Unknown<'_>) -> AcpError {
    match value.get_type() {
        Ok(ValueType::Object | ValueType::Function) => {
            // SAFETY: the value was just checked to be an object.
            let Ok(object) = (unsafe { value.cast::<Object<'_>>() }) else {
                return AcpError::internal_msg("the Node host failed");
            };
            let message = string_property(&object, "message").unwrap_or_else(|| "the Node host failed".to_owned());
            let is_acp = string_property(&object, "name").is_some_and(|name| ACP_ERROR_NAMES.contains(&name.as_str()));
            let code = object
                .get_named_property::<Unknown<'_>>("code")
                .ok()
                .filter(|c| c.get_type().ok() == Some(ValueType::Number))
                // SAFETY: checked to be a number.
                .and_then(|c| unsafe { c.cast::<f64>() }.ok())
                .filter(|c| c.fract() == 0.0 && *c >= f64::from(i32::MIN) && *c <= f64::from(i32::MAX));
            match code {
                #[allow(clippy::cast_possible_truncation)]
                Some(code) if is_acp => {
                    let mut error = AcpError::new(code as i32, message);
                    if let Some(data) = object
                        .get_named_property::<Unknown<'_>>("data")
                        .ok()
                        .filter(|d| !matches!(d.get_type(), Ok(ValueType::Undefined)))
                        .and_then(|d| env.from_js_value::<serde_json::Value, _>(d).ok())
                    {
                        error = error.data(data);
                    }
                    error
                }
                _ => AcpError::internal_msg(message),
            }
        }
        Ok(ValueType::String) => AcpError::internal_msg(
            // SAFETY: checked to be a string.
            unsafe { value.cast::<String>() }.unwrap_or_else(|_| "the Node host failed".to_owned()),
        ),
        _ => AcpError::internal_msg(
            value
                .coerce_to_string()
                .and_then(napi::JsString::into_utf8)
                .and_then(napi::JsStringUtf8::into_owned)
                .unwrap_or_else(|_| "the Node host failed".to_owned()),
        ),
    }
}

/// The `name`s of the `AcpError` classes (`AcpError` and the `ClientError` family of `index.js`):
/// thrown from a host method, they answer with their own code.
const ACP_ERROR_NAMES: [&str; 9] = [
    "AcpError",
    "ClientError",
    "UnsupportedError",
    "RelativePathError",
    "InvalidArgumentError",
    "NotEstablishedError",
    "RejectedError",
    "ProtocolError",
    "ReleasedError",
];

/// What `index.js` registers once in each environment: the factory of client errors (`({ kind,
/// code, message, data, method, ...details }) => Error`) and one resolved Promise, which every
/// paced call that need not wait returns (see [`crate::pace`]): one object for all, not one per
/// call.
struct EnvData {
    client_errors: FunctionRef<Value, Unknown<'static>>,
    resolved: ObjectRef<false>,
}

/// Registers the factory of client errors and the shared resolved Promise (called once by
/// `index.js` in each environment, with `Promise.resolve()`).
#[napi(skip_typescript, js_name = "__registerEnv")]
pub fn register_env(env: Env, factory: Function<'_, Value, Unknown<'static>>, resolved: Object<'_>) -> Result<()> {
    let data = EnvData {
        client_errors: factory.create_ref().map_err(recode)?,
        resolved: resolved.create_ref::<false>().map_err(recode)?,
    };
    env.set_instance_data(data, (), |_| {}).map_err(recode)
}

/// The resolved Promise `index.js` registered in this environment.
pub fn resolved_promise(env: &Env) -> napi::Result<sys::napi_value> {
    let data = env
        .get_instance_data::<EnvData>()?
        .ok_or_else(|| napi::Error::from_reason("acp-facade: index.js did not register its environment"))?;
    Ok(data.resolved.get_value(env)?.raw())
}

/// A failed call to the client as the JavaScript error of its kind (see the module doc).
pub fn client_error(env: &Env, error: &ClientError) -> napi::Error {
    let rpc = AcpError::from(error.clone());
    let mut details = json!({
        "kind": error.kind(),
        "code": i32::from(rpc.code),
        "message": rpc.message,
        "data": rpc.data,
    });
    let more = match error {
        ClientError::Unsupported { method, capability } => json!({"method": method, "capability": capability}),
        ClientError::RelativePath { field, path } => json!({"field": field, "path": path}),
        ClientError::InvalidArgument { field, reason } => json!({"field": field, "reason": reason}),
        ClientError::NotEstablished { method }
        | ClientError::Cancelled { method }
        | ClientError::Rejected { method, .. } => {
            json!({"method": method})
        }
        ClientError::Protocol { method, detail } => json!({"method": method, "detail": detail}),
        ClientError::Released { terminal_id } => json!({"terminalId": terminal_id}),
        _ => json!({}),
    };
    if let (Some(details), Value::Object(more)) = (details.as_object_mut(), more) {
        details.extend(more);
    }
    let built = || -> napi::Result<napi::Error> {
        let factory = env
            .get_instance_data::<EnvData>()?
            .ok_or_else(|| napi::Error::from_reason("the client errors were not registered"))?;
        let value = factory.client_errors.borrow_back(env)?.call(details)?;
        Ok(napi::Error::from(value))
    };
    built().unwrap_or_else(|e| {
        tracing::warn!(error = %e.reason, "could not build a client error");
        napi::Error::new(napi::Status::GenericFailure, error.to_string())
    })
}

/// The JSON-RPC error for a failure captured by napi (a throw out of a threadsafe call, or a
/// conversion that failed).
pub fn from_napi(env: &Env, error: napi::Error) -> AcpError {
    if error.status == napi::Status::PendingException {
        let value = napi::JsError::from(error).into_unknown(*env);
        return from_js(env, &value);
    }
    AcpError::internal_msg(format!("the Node host failed: {}", error.reason))
}

fn string_property(object: &Object<'_>, name: &str) -> Option<String> {
    let value = object.get_named_property::<Unknown<'_>>(name).ok()?;
    if value.get_type().ok()? != ValueType::String {
        return None;
    }
    // SAFETY: checked to be a string.
    unsafe { value.cast::<String>() }.ok()
}

/// An ACP error surfaced to JavaScript (`ERR_ACP_PROTOCOL`, the JSON-RPC code in the message).
pub fn acp_to_js(error: &AcpError) -> napi::Error<Code> {
    js_error(Code::Protocol, format!("{} ({})", error.message, i32::from(error.code)))
}

/// An ACP error rejecting a Promise (`ERR_ACP_PROTOCOL: <message> (<code>)` as its message: a
/// Promise settled from Rust cannot carry a custom `code`).
pub fn acp_rejection(error: &AcpError) -> napi::Error {
    napi::Error::new(
        napi::Status::GenericFailure,
        format!("{}: {} ({})", Code::Protocol.as_ref(), error.message, i32::from(error.code)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_stable() {
        assert_eq!(Code::TurnEnded.as_ref(), "ERR_ACP_TURN_ENDED");
        assert_eq!(Code::QueueFull.as_ref(), "ERR_ACP_QUEUE_FULL");
        assert_eq!(Code::from(napi::Status::StringExpected), Code::InvalidArg);
        assert_eq!(Code::from(napi::Status::GenericFailure), Code::Internal);
    }
}
