//! Calling JavaScript from Rust.
//!
//! A host method is held as a [`JsMethod`]: the function bound to its object (so `this` is the
//! host), wrapped in a threadsafe function that is **weak** (it never keeps the Node event loop
//! alive) and **not callee-handled** (the JS function receives plain arguments, not an
//! `(err, value)` pair). A call queues the method on the JS thread, where its arguments are built;
//! a throw is caught there and becomes an error, never a process-wide exception; the returned
//! value may be a Promise (awaited through one JS helper per thread, see [`Awaiter`]) or a plain
//! value.
//!
//! A threadsafe function is a libuv async handle, and libuv looks at every async handle of the
//! loop each time one of them wakes it. So only a handful per agent get their own (the host's
//! methods, the turn runner's); the methods of objects that come and go by the thousand — live
//! sessions, turns' abort controllers — are called through one [`Invoker`] per host (or turn
//! runner), each object held by a [`SharedObject`] (a reference, not a handle per method).
//!
//! A [`JsMethod`]'s calls reach their threadsafe function through the JS thread's
//! [`Relay`], which wakes the loop outside Node's lock (see that module).

use std::cell::RefCell;
use std::sync::{Arc, Mutex, PoisonError};

use acp_facade::error::{Error as AcpError, ErrorExt};
use napi::bindgen_prelude::{
    FnArgs, Function, FunctionRef, JsObjectValue, JsValuesTupleIntoVec, Object, ObjectRef, Unknown,
};
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::{Env, JsValue, Status, ValueType, sys};
use tokio::sync::oneshot;

use crate::error;
use crate::relay::Relay;

/// Builds a call's arguments on the JS thread.
pub type BuildArgs = Box<dyn FnOnce(&Env) -> napi::Result<Vec<sys::napi_value>> + Send>;

/// Converts a call's settled value on the JS thread.
pub type Convert<T> = Box<dyn FnOnce(&Env, Unknown<'_>) -> Result<T, AcpError> + Send>;

/// Arguments already converted to JS values.
pub struct JsArgs(Vec<sys::napi_value>);

impl JsValuesTupleIntoVec for JsArgs {
    fn into_vec(self, _env: sys::napi_env) -> napi::Result<Vec<sys::napi_value>> {
        Ok(self.0)
    }
}

type Tsfn = ThreadsafeFunction<BuildArgs, Unknown<'static>, JsArgs, Status, false, true>;

/// A JS function (usually a method bound to its object), callable from any thread.
#[derive(Clone)]
pub struct JsMethod {
    route: Route,
    name: Arc<str>,
    /// The JS thread's relay, through which calls are queued (see [`crate::relay`]).
    relay: Option<Arc<Relay>>,
}

/// How a [`JsMethod`] reaches its function.
#[derive(Clone)]
enum Route {
    /// Its own threadsafe function.
    Own(Arc<Tsfn>),
    /// `object[name]`, looked up at each call, through the object's [`Invoker`].
    Shared(Arc<SharedObject>),
}

/// The JS side of an [`Invoker`]: calls `target[name](...args)`; with no name it does nothing
/// (how a [`SharedObject`]'s reference is released on the JS thread).
const INVOKE: &str =
    "(function (target, name, ...args) { return name === undefined ? undefined : target[name](...args); })";

/// One threadsafe function through which the methods of many objects are called (see the
/// module doc). Weak, like every [`JsMethod`]: it never keeps the Node event loop alive.
#[derive(Clone)]
pub struct Invoker(Arc<Tsfn>, Option<Arc<Relay>>);

impl Invoker {
    /// A new invoker (on the JS thread).
    pub fn new(env: &Env) -> napi::Result<Self> {
        // The relay first: see [`crate::relay`] on the order of the handles.
        let relay = Relay::local(env.raw());
        let invoke: Function<'_, Unknown<'static>, Unknown<'static>> = env.run_script(INVOKE)?;
        Ok(Self(Arc::new(threadsafe(&invoke)?), relay))
    }
}

/// A JS object whose methods are called through an [`Invoker`]: holds a strong reference to it
/// until the last of its [`JsMethod`]s is dropped, then releases it on the JS thread.
pub struct SharedObject {
    object: Mutex<Option<ObjectRef<false>>>,
    invoker: Invoker,
}

impl SharedObject {
    /// Holds `object` (on the JS thread).
    pub fn new(invoker: &Invoker, object: &Object<'_>) -> napi::Result<Arc<Self>> {
        Ok(Arc::new(Self { object: Mutex::new(Some(object.create_ref::<false>()?)), invoker: invoker.clone() }))
    }

    /// `object[name]`, when it is a function now (`object` is the one held, on the JS thread).
    pub fn method(self: &Arc<Self>, object: &Object<'_>, name: &str) -> napi::Result<Option<JsMethod>> {
        let value: Unknown<'_> = object.get_named_property(name)?;
        if value.get_type()? != ValueType::Function {
            return Ok(None);
        }
        Ok(Some(JsMethod { route: Route::Shared(self.clone()), name: name.into(), relay: self.invoker.1.clone() }))
    }

    fn value(&self, env: &Env) -> napi::Result<sys::napi_value> {
        let object = self.object.lock().unwrap_or_else(PoisonError::into_inner);
        match object.as_ref() {
            Some(reference) => Ok(reference.get_value(env)?.raw()),
            None => Err(napi::Error::new(Status::GenericFailure, "the object was released")),
        }
    }
}

impl Drop for SharedObject {
    fn drop(&mut self) {
        let Some(reference) = self.object.lock().unwrap_or_else(PoisonError::into_inner).take() else {
            return;
        };
        let release: BuildArgs = Box::new(move |env| {
            reference.unref(env)?;
            Ok(Vec::new())
        });
        // When the environment is already gone, so is the object: nothing is left to release.
        let _ = self.invoker.0.call(release, ThreadsafeFunctionCallMode::NonBlocking);
    }
}

/// A weak, not callee-handled threadsafe function over `function`, whose calls build their
/// arguments on the JS thread.
fn threadsafe(function: &Function<'_, Unknown<'static>, Unknown<'static>>) -> napi::Result<Tsfn> {
    function
        .build_threadsafe_function::<BuildArgs>()
        .callee_handled::<false>()
        .weak::<true>()
        .build_callback(|ctx| (ctx.value)(&ctx.env).map(JsArgs))
}

impl std::fmt::Debug for JsMethod {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JsMethod").field("name", &self.name).finish_non_exhaustive()
    }
}

impl JsMethod {
    /// `object[name]` bound to `object`, when it is a function.
    pub fn get(object: &Object<'_>, name: &str) -> napi::Result<Option<Self>> {
        let value: Unknown<'_> = object.get_named_property(name)?;
        if value.get_type()? != ValueType::Function {
            return Ok(None);
        }
        // SAFETY: checked to be a function.
        let function: Function<'_, Unknown<'static>, Unknown<'static>> = unsafe { value.cast() }?;
        let bound = function.bind(object)?;
        Self::from_function(&bound, name).map(Some)
    }

    /// A callable for a JS function (`this` as the function has it bound, else `undefined`).
    pub fn from_function(
        function: &Function<'_, Unknown<'static>, Unknown<'static>>,
        name: &str,
    ) -> napi::Result<Self> {
        // The relay first: see [`crate::relay`] on the order of the handles.
        let relay = Relay::local(function.value().env);
        Ok(Self { route: Route::Own(Arc::new(threadsafe(function)?)), name: name.into(), relay })
    }

    /// The method's name, for messages.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Calls the function; resolves with the converted (awaited) result. A throw, a rejection or
    /// a failed conversion becomes the JSON-RPC error the host meant (see [`error::from_js`]).
    pub async fn call<T: Send + 'static>(&self, args: BuildArgs, convert: Convert<T>) -> Result<T, AcpError> {
        let (tx, rx) = oneshot::channel();
        self.queue(args, convert, tx)?;
        rx.await.unwrap_or_else(|_| Err(self.gone()))
    }

    /// Calls the function from a thread that must have the answer synchronously (the core's few
    /// synchronous hooks). Runs inside `block_in_place`, so other tasks keep running; the JS
    /// thread is never blocked by this.
    pub fn call_blocking<T: Send + 'static>(&self, args: BuildArgs, convert: Convert<T>) -> Result<T, AcpError> {
        let (tx, rx) = oneshot::channel();
        self.queue(args, convert, tx)?;
        let wait = move || rx.blocking_recv();
        let answer = match tokio::runtime::Handle::try_current() {
            Ok(handle) if handle.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
                tokio::task::block_in_place(wait)
            }
            _ => wait(),
        };
        answer.unwrap_or_else(|_| Err(self.gone()))
    }

    /// The threadsafe function to queue a call on, and the call's arguments as it takes them.
    fn dispatch(&self, args: BuildArgs) -> (Arc<Tsfn>, BuildArgs) {
        match &self.route {
            Route::Own(tsfn) => (tsfn.clone(), args),
            Route::Shared(object) => {
                let (target, name) = (object.clone(), self.name.clone());
                let args: BuildArgs = Box::new(move |env| {
                    let mut all = vec![target.value(env)?, env.create_string(&name)?.raw()];
                    all.extend(args(env)?);
                    Ok(all)
                });
                (object.invoker.0.clone(), args)
            }
        }
    }

    /// Calls the function and forgets the result (a throw is logged).
    pub fn call_detached(&self, args: BuildArgs) {
        let name = self.name.clone();
        let (tsfn, args) = self.dispatch(args);
        let call = move || {
            let thrown = name.clone();
            let status = tsfn.call_with_return_value(args, ThreadsafeFunctionCallMode::NonBlocking, move |ret, env| {
                if let Err(e) = ret {
                    tracing::warn!(method = &*thrown, error = %error::from_napi(&env, e).message, "a Node callback threw");
                }
                Ok(())
            });
            if status != Status::Ok {
                tracing::debug!(method = &*name, ?status, "a Node callback could not be queued");
            }
        };
        match &self.relay {
            Some(relay) => relay.push(Box::new(call)),
            None => call(),
        }
    }

    fn queue<T: Send + 'static>(
        &self,
        args: BuildArgs,
        convert: Convert<T>,
        tx: oneshot::Sender<Result<T, AcpError>>,
    ) -> Result<(), AcpError> {
        let (tsfn, args) = self.dispatch(args);
        let call = move || {
            tsfn.call_with_return_value(args, ThreadsafeFunctionCallMode::NonBlocking, move |ret, env| {
                match ret {
                    Ok(value) => settle(&env, value, convert, tx),
                    Err(e) => {
                        let _ = tx.send(Err(error::from_napi(&env, e)));
                    }
                }
                // Never an error here: an error returned from this callback would be raised as an
                // uncaught exception, ending the process.
                Ok(())
            })
        };
        match &self.relay {
            Some(relay) => {
                // A refused call (or a job dropped with its environment) drops the callback and
                // `tx` with it, which the caller reads as the host gone.
                relay.push(Box::new(move || {
                    let _ = call();
                }));
                Ok(())
            }
            None if call() == Status::Ok => Ok(()),
            None => Err(self.gone()),
        }
    }

    fn gone(&self) -> AcpError {
        AcpError::internal_msg(format!(
            "the Node host's `{}` cannot answer: the JavaScript environment is shutting down",
            self.name
        ))
    }
}

/// What is done with a settled Promise's outcome (its value, or what it rejected with), on the JS
/// thread.
type Settled = Box<dyn FnOnce(&Env, Result<Unknown<'_>, Unknown<'_>>)>;

/// The JS side of [`Awaiter`]: `await(promise, pending)` calls `done(pending, fulfilled, value)`
/// once `promise` settles.
const AWAIT: &str = "(function (done) { return function (promise, pending) { \
     promise.then((value) => done(pending, true, value), (reason) => done(pending, false, reason)) } })";

/// `await(promise, pending)`.
type Attach<'env> = Function<'env, FnArgs<(Unknown<'static>, sys::napi_value)>, Unknown<'static>>;
/// `done(pending, fulfilled, value)`.
type Done<'env> = Function<'env, FnArgs<(sys::napi_value, bool, Unknown<'static>)>, ()>;

/// Awaits the Promises host methods return, on one JS thread: one JS function made once, through
/// which each Promise gets its two reactions as plain JS closures — where `then`/`catch` with Rust
/// closures would make two N-API functions (each a callback bundle, a reference and a finalizer)
/// and a second Promise per call. What to do once it settles rides along in an N-API external
/// held by those closures, so a Promise that never settles and is collected drops it (and with it
/// the caller's channel, which then reads as the host gone) instead of leaving it behind.
struct Awaiter {
    attach: FunctionRef<FnArgs<(Unknown<'static>, sys::napi_value)>, Unknown<'static>>,
}

thread_local! {
    static AWAITER: RefCell<Option<Awaiter>> = const { RefCell::new(None) };
}

impl Awaiter {
    fn new(env: &Env) -> napi::Result<Self> {
        let make: Function<'_, Done<'_>, Attach<'_>> = env.run_script(AWAIT)?;
        let done = env.create_function_from_closure::<FnArgs<(sys::napi_value, bool, Unknown<'static>)>, (), _>(
            "done",
            |ctx| {
                let pending: Unknown<'_> = ctx.get(0)?;
                let fulfilled: bool = ctx.get(1)?;
                let value: Unknown<'_> = ctx.get(2)?;
                let mut data = std::ptr::null_mut();
                // SAFETY: `done` is only reachable from the closures `AWAIT` makes, whose first
                // argument is always an external made by `await_promise`.
                napi::check_status!(unsafe {
                    sys::napi_get_value_external(ctx.env.raw(), pending.raw(), &raw mut data)
                })?;
                // SAFETY: that external's data is a live `Option<Settled>` until its finalizer.
                let settled = unsafe { &mut *data.cast::<Option<Settled>>() }.take();
                if let Some(settled) = settled {
                    settled(ctx.env, if fulfilled { Ok(value) } else { Err(value) });
                }
                Ok(())
            },
        )?;
        let attach = make.call(done)?;
        Ok(Self { attach: attach.create_ref()? })
    }
}

/// Frees a pending Promise's [`Settled`] once its external is collected.
unsafe extern "C" fn drop_settled(_env: sys::napi_env, data: *mut std::ffi::c_void, _hint: *mut std::ffi::c_void) {
    // SAFETY: `data` is the box `await_promise` leaked into the external, freed only here.
    drop(unsafe { Box::from_raw(data.cast::<Option<Settled>>()) });
}

/// Runs `settled` with `promise`'s outcome once it settles (on the JS thread).
fn await_promise(env: &Env, promise: Unknown<'_>, settled: Settled) -> napi::Result<()> {
    let attach = AWAITER.with_borrow_mut(|awaiter| -> napi::Result<_> {
        let awaiter = match awaiter {
            Some(awaiter) => awaiter,
            None => awaiter.insert(Awaiter::new(env)?),
        };
        awaiter.attach.borrow_back(env)
    })?;
    let data = Box::into_raw(Box::new(Some(settled)));
    let mut pending = std::ptr::null_mut();
    // SAFETY: on the JS thread; on success the external owns `data` (freed by `drop_settled`).
    let status = unsafe {
        sys::napi_create_external(env.raw(), data.cast(), Some(drop_settled), std::ptr::null_mut(), &raw mut pending)
    };
    if let Err(e) = napi::check_status!(status) {
        // SAFETY: not handed to N-API.
        drop(unsafe { Box::from_raw(data) });
        return Err(e);
    }
    // SAFETY: a value of this env, used within the call that received it.
    let promise: Unknown<'static> = unsafe { std::mem::transmute::<Unknown<'_>, Unknown<'static>>(promise) };
    attach.call(FnArgs::from((promise, pending))).map(|_| ())
}

/// Converts a settled value, awaiting it first when it is a Promise (on the JS thread).
fn settle<T: Send + 'static>(
    env: &Env,
    value: Unknown<'_>,
    convert: Convert<T>,
    tx: oneshot::Sender<Result<T, AcpError>>,
) {
    if !value.is_promise().unwrap_or(false) {
        let _ = tx.send(convert(env, value));
        return;
    }
    let settled: Settled = Box::new(move |env, outcome| {
        let _ = tx.send(match outcome {
            Ok(value) => convert(env, value),
            Err(reason) => Err(error::from_js(env, &reason)),
        });
    });
    if let Err(e) = await_promise(env, value, settled) {
        tracing::warn!(error = %e, "could not await a Promise of the Node host");
    }
}

/// Converts a settled value with serde (`undefined` reads as `null`).
pub fn serde_convert<T: serde::de::DeserializeOwned + Send + 'static>(what: &'static str) -> Convert<T> {
    Box::new(move |env, value| {
        let json = if matches!(value.get_type(), Ok(ValueType::Undefined)) {
            serde_json::Value::Null
        } else {
            env.from_js_value::<serde_json::Value, _>(value)
                .map_err(|e| AcpError::internal_msg(format!("the Node host returned an invalid {what}: {e}")))?
        };
        serde_json::from_value(json)
            .map_err(|e| AcpError::internal_msg(format!("the Node host returned an invalid {what}: {e}")))
    })
}

/// Ignores the settled value.
pub fn ignore() -> Convert<()> {
    Box::new(|_, _| Ok(()))
}

/// Arguments converted with serde.
pub fn serde_args(values: Vec<serde_json::Value>) -> BuildArgs {
    Box::new(move |env| values.iter().map(|v| env.to_js_value(v).map(|u| u.raw())).collect())
}

/// No arguments.
pub fn no_args() -> BuildArgs {
    Box::new(|_| Ok(Vec::new()))
}
