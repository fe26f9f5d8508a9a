//! The core's [`pace`](acp_facade::binding::pace) policy as JavaScript sees it: a streaming call returns
//! `null`, or a Promise to await when the client reads slower than the caller writes, and throws
//! `ERR_ACP_QUEUE_FULL` when its caller never awaited and the queue reached its hard bound.

use std::future::Future;

use acp_facade::binding::pace::{Pace, Refused};
use napi::Env;
use napi::bindgen_prelude::PromiseRaw;

use crate::error::{Code, Result, js_error, recode};

/// `null`, or (on [`Pace::Wait`]) a Promise for the future `drained` makes.
pub fn promise<F: Future<Output = ()> + Send + 'static>(
    env: &Env,
    pace: Pace,
    drained: impl FnOnce() -> F,
) -> Result<Option<PromiseRaw<'_, ()>>> {
    if !pace.should_wait() {
        return Ok(None);
    }
    let drained = drained();
    env.spawn_future(async move {
        drained.await;
        Ok(())
    })
    .map(Some)
    .map_err(recode)
}

/// The error a refused call throws; `closed` is what a closed queue means to the caller.
pub fn refused(refused: Refused, closed: impl FnOnce() -> napi::Error<Code>) -> napi::Error<Code> {
    match refused {
        Refused::Closed => closed(),
        Refused::Full(_) => js_error(Code::QueueFull, refused.to_string()),
    }
}
