//! Promises settled from the core's threads through one threadsafe function per JS thread, reached
//! through the thread's relay.
//!
//! napi-rs's own future-to-Promise bridge (`Env::spawn_future`) creates, for every Promise, a
//! threadsafe function of its own (a libuv async handle, opened and closed again, with an
//! environment clean-up hook), spawns two Tokio tasks from the JS thread (each a wake-up of the
//! core's worker) and settles under a lock the woken JS thread then waits for. A turn's client
//! call does not need any of that: its answer arrives in a callback on the worker (the
//! operation's `Reply`), which can settle the Promise directly.
//!
//! So a [`Deferred`] is a plain N-API deferred plus the JS thread's one settling threadsafe
//! function: [`Deferred::settle`] queues a closure that converts the answer and resolves or
//! rejects on the JS thread, and one libuv wake-up runs every settle queued by then (Node runs up
//! to 1,000 calls of a threadsafe function per wake-up). The function is weak, except while
//! Promises made here are pending: like napi-rs's own, a pending Promise keeps the event loop
//! alive until it settles.
//!
//! The settle closures reach that function through the JS thread's [`Relay`], as host calls do
//! (see [`crate::relay`]): called from the worker, `napi_call_threadsafe_function` wakes the loop
//! holding the function's mutex, and on a shared CPU the woken JS thread preempted the worker
//! inside it, then blocked on it. The relay's job makes the call on the JS thread, where it wakes
//! nobody. Settles keep their order — the order in which their `Reply`s were answered: every
//! settle of a JS thread takes the same route (the relay when the thread has one, else the
//! function directly), and both run what they are given in order.

use std::cell::{Cell, RefCell};
use std::sync::Arc;

use napi::bindgen_prelude::{Function, PromiseRaw, ToNapiValue, Unknown};
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::{Env, Status, sys};

use crate::relay::Relay;

/// Runs on the JS thread: converts an answer and settles its Promise.
type Settle = Box<dyn FnOnce(&Env) + Send>;

type Tsfn = ThreadsafeFunction<Settle, Unknown<'static>, (), Status, false, true>;

/// The JS thread's settling function and the relay its calls go through (`None`: directly).
struct Settler {
    tsfn: Tsfn,
    relay: Option<Arc<Relay>>,
}

impl Settler {
    /// On the JS thread: the relay first, so that its handle comes before the function's (see
    /// [`crate::relay`] on the order of the handles).
    fn new(env: &Env) -> napi::Result<Self> {
        let relay = Relay::local(env.raw());
        Ok(Self { tsfn: settler(env)?, relay })
    }
}

/// The JS thread's settler and its count of pending Promises.
struct Local {
    settler: Arc<Settler>,
    pending: usize,
}

thread_local! {
    /// The settling function of this JS thread (one per Node environment: main or worker).
    static LOCAL: RefCell<Option<Local>> = const { RefCell::new(None) };
    /// Set while a Promise's operation is pushed (see [`pushing`]).
    static PUSHING: Cell<bool> = const { Cell::new(false) };
}

/// An N-API deferred as a value that may cross threads; only the JS thread uses it.
#[derive(Clone, Copy)]
struct Raw(sys::napi_deferred);

// SAFETY: the pointer is only dereferenced by N-API on the JS thread that created it (in the
// settle closure run by the threadsafe function); other threads only move it.
unsafe impl Send for Raw {}

/// The settling half of a Promise made by [`deferred`]; settles it from any thread, once.
/// Dropped unsettled, it rejects the Promise.
pub struct Deferred {
    raw: Option<Raw>,
    settler: Arc<Settler>,
}

/// A new pending Promise (on the JS thread) and the [`Deferred`] that settles it.
pub fn deferred<V>(env: &Env) -> napi::Result<(Deferred, PromiseRaw<'_, V>)> {
    let settler = LOCAL.with_borrow_mut(|local| -> napi::Result<Arc<Settler>> {
        let local = match local {
            Some(local) => local,
            None => local.insert(Local { settler: Arc::new(Settler::new(env)?), pending: 0 }),
        };
        if local.pending == 0 {
            // SAFETY: on the JS thread that owns the threadsafe function.
            let status = unsafe { sys::napi_ref_threadsafe_function(env.raw(), local.settler.tsfn.raw()) };
            napi::check_status!(status)?;
        }
        local.pending += 1;
        Ok(local.settler.clone())
    })?;
    let mut raw = std::ptr::null_mut();
    let mut promise = std::ptr::null_mut();
    // SAFETY: on the JS thread, with out-pointers to locals.
    let status = unsafe { sys::napi_create_promise(env.raw(), &raw mut raw, &raw mut promise) };
    if let Err(e) = napi::check_status!(status) {
        settled(env);
        return Err(e);
    }
    Ok((Deferred { raw: Some(Raw(raw)), settler }, PromiseRaw::new(env.raw(), promise)))
}

/// Runs `push`, the queueing of an operation whose reply settles a [`Deferred`] of the caller's.
/// A refused push drops the operation, and with it the reply, on this thread before returning:
/// the Promise is never handed out then (the caller throws instead), so its settle resolves it
/// quietly rather than leaving an unhandled rejection behind.
pub fn pushing<R>(push: impl FnOnce() -> R) -> R {
    PUSHING.set(true);
    let result = push();
    PUSHING.set(false);
    result
}

/// The weak threadsafe function that runs settle closures (on the JS thread).
fn settler(env: &Env) -> napi::Result<Tsfn> {
    let noop: Function<'_, (), Unknown<'static>> = env.run_script("(function () {})")?;
    noop.build_threadsafe_function::<Settle>().callee_handled::<false>().weak::<true>().build_callback(|ctx| {
        (ctx.value)(&ctx.env);
        Ok(())
    })
}

/// One Promise made by [`deferred`] has settled (on the JS thread): the last one lets the event
/// loop exit again.
fn settled(env: &Env) {
    LOCAL.with_borrow_mut(|local| {
        if let Some(local) = local {
            local.pending -= 1;
            if local.pending == 0 {
                // SAFETY: on the JS thread that owns the threadsafe function.
                let _ = unsafe { sys::napi_unref_threadsafe_function(env.raw(), local.settler.tsfn.raw()) };
            }
        }
    });
}

impl Deferred {
    /// Settles the Promise on the JS thread with what `outcome` returns there: resolved with the
    /// value, rejected with the error. Never blocks.
    pub fn settle(mut self, outcome: impl FnOnce(&Env) -> napi::Result<sys::napi_value> + Send + 'static) {
        if let Some(raw) = self.raw.take() {
            self.queue(raw, outcome);
        }
    }

    fn queue(&self, raw: Raw, outcome: impl FnOnce(&Env) -> napi::Result<sys::napi_value> + Send + 'static) {
        if PUSHING.get() {
            // Refused while pushed (see [`pushing`]): nobody holds the Promise.
            self.queue_settle(raw, resolve_undefined);
        } else {
            self.queue_settle(raw, outcome);
        }
    }

    fn queue_settle(&self, raw: Raw, outcome: impl FnOnce(&Env) -> napi::Result<sys::napi_value> + Send + 'static) {
        let settle: Settle = Box::new(move |env| {
            let raw = raw;
            let status = match outcome(env) {
                // SAFETY: on the JS thread; the deferred is settled once (`raw` was taken).
                Ok(value) => unsafe { sys::napi_resolve_deferred(env.raw(), raw.0, value) },
                Err(error) => match unsafe { ToNapiValue::to_napi_value(env.raw(), error) } {
                    // SAFETY: as above.
                    Ok(error) => unsafe { sys::napi_reject_deferred(env.raw(), raw.0, error) },
                    Err(e) => {
                        tracing::warn!(error = %e, "could not build a Promise's rejection");
                        // SAFETY: as above; the Promise must still settle.
                        unsafe {
                            sys::napi_reject_deferred(env.raw(), raw.0, resolve_undefined(env).unwrap_or_default())
                        }
                    }
                },
            };
            if status != sys::Status::napi_ok {
                tracing::warn!(status, "could not settle a Promise");
            }
            settled(env);
        });
        // Refused (or, relayed, dropped) only while the environment shuts down: then the Promise
        // is gone with it.
        let settler = self.settler.clone();
        let call = move || {
            let _ = settler.tsfn.call(settle, ThreadsafeFunctionCallMode::NonBlocking);
        };
        match &self.settler.relay {
            Some(relay) => relay.push(Box::new(call)),
            None => call(),
        }
    }
}

impl Drop for Deferred {
    fn drop(&mut self) {
        if let Some(raw) = self.raw.take() {
            self.queue(raw, |_| Err(napi::Error::new(Status::GenericFailure, "the call was dropped unanswered")));
        }
    }
}

/// `undefined`, as a raw value.
fn resolve_undefined(env: &Env) -> napi::Result<sys::napi_value> {
    // SAFETY: `()` converts to `undefined` on the JS thread.
    unsafe { ToNapiValue::to_napi_value(env.raw(), ()) }
}

/// `value` as a raw JS value (on the JS thread).
pub fn js<V: ToNapiValue>(env: &Env, value: V) -> napi::Result<sys::napi_value> {
    // SAFETY: `env` is the JS thread's live environment.
    unsafe { ToNapiValue::to_napi_value(env.raw(), value) }
}
