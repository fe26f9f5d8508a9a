//! JavaScript numbers as Rust integers. A JS `number` arrives as an `f64`; an integer argument is
//! checked here — finite, whole, not negative, at most `Number.MAX_SAFE_INTEGER` — instead of
//! being truncated or wrapped by a cast.

use crate::error::{Code, Result, js_error};

/// The largest integer a JS `number` holds exactly (`Number.MAX_SAFE_INTEGER`).
const MAX_SAFE_INTEGER: f64 = 9_007_199_254_740_991.0;

/// `value` as a `u64`, or `ERR_ACP_INVALID_ARG` naming the argument `what`.
pub(crate) fn u64_arg(what: &str, value: f64) -> Result<u64> {
    if value.is_finite() && value >= 0.0 && value.fract() == 0.0 && value <= MAX_SAFE_INTEGER {
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss, reason = "checked just above")]
        Ok(value as u64)
    } else {
        Err(js_error(Code::InvalidArg, format!("`{what}` must be a non-negative integer")))
    }
}
