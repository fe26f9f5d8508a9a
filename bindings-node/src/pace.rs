//! The core's [`pace`](acp_facade::binding::pace) policy as JavaScript sees it: a streaming call
//! always returns a Promise — already resolved, or (when the client reads slower than the caller
//! writes) resolved once the backlog is down — and throws `ERR_ACP_QUEUE_FULL` when its caller
//! never awaited and the queue reached its hard bound.

use std::future::Future;

use acp_facade::binding::pace::{Pace, Refused};
use napi::bindgen_prelude::{PromiseRaw, ToNapiValue};
use napi::{Env, sys};

use crate::error::{Code, Result, js_error, recode};

/// A resolved Promise, or (on [`Pace::Wait`]) a Promise for the future `drained` makes.
pub fn promise<F: Future<Output = ()> + Send + 'static>(
    env: &Env,
    pace: Pace,
    drained: impl FnOnce() -> F,
) -> Result<PromiseRaw<'_, ()>> {
    if !pace.should_wait() {
        return resolved(env).map_err(recode);
    }
    let drained = drained();
    env.spawn_future(async move {
        drained.await;
        Ok(())
    })
    .map_err(recode)
}

/// A Promise of `value`: resolved at once, or (on [`Pace::Wait`]) once the future `drained` makes
/// is done. For a paced call that also answers something known when it is made.
pub fn promise_of<T, F>(env: &Env, pace: Pace, drained: impl FnOnce() -> F, value: T) -> Result<PromiseRaw<'_, T>>
where
    T: ToNapiValue + Send + 'static,
    F: Future<Output = ()> + Send + 'static,
{
    if pace.should_wait() {
        let drained = drained();
        return env
            .spawn_future(async move {
                drained.await;
                Ok(value)
            })
            .map_err(recode);
    }
    let mut deferred = std::ptr::null_mut();
    let mut promise = std::ptr::null_mut();
    // SAFETY: on the JS thread (`env` is its live environment), with out-pointers to locals; the
    // deferred is resolved once, here.
    unsafe {
        napi::check_status!(sys::napi_create_promise(env.raw(), &raw mut deferred, &raw mut promise))
            .map_err(recode)?;
        let value = ToNapiValue::to_napi_value(env.raw(), value).map_err(recode)?;
        napi::check_status!(sys::napi_resolve_deferred(env.raw(), deferred, value)).map_err(recode)?;
    }
    Ok(PromiseRaw::new(env.raw(), promise))
}

/// The environment's one resolved Promise (`Promise.resolve()`, registered by `index.js`): a
/// call that need not wait returns it rather than a new Promise, which cost the Node demo's
/// `stream` over a third of its rate and left garbage behind every streamed chunk.
fn resolved(env: &Env) -> napi::Result<PromiseRaw<'_, ()>> {
    Ok(PromiseRaw::new(env.raw(), crate::error::resolved_promise(env)?))
}

/// The error a refused call throws; `closed` is what a closed queue means to the caller.
pub fn refused(refused: Refused, closed: impl FnOnce() -> napi::Error<Code>) -> napi::Error<Code> {
    match refused {
        Refused::Closed => closed(),
        Refused::Full(_) => js_error(Code::QueueFull, refused.to_string()),
    }
}
