//! Handing calls to the JS thread without holding Node's threadsafe-function lock while it wakes.
//!
//! Node's `napi_call_threadsafe_function` queues the call and wakes the event loop
//! (`uv_async_send`, an `eventfd` write) while holding the function's mutex, which the woken JS
//! thread takes first thing. When the two threads share a CPU, the woken JS thread preempts the
//! core's worker right at that write, inside the lock: it then blocks on the lock, the worker
//! runs again to release it, and the JS thread preempts it once more — two context switches more
//! per call. Measured on the Node demo's echo turn pinned to one CPU (`perf` on `sched_switch`,
//! 2,000 turns): the worker was preempted inside `napi_call_threadsafe_function` at 94% of the
//! turns and the JS thread blocked on that mutex at 73%.
//!
//! So a call made off the JS thread goes through this thread's [`Relay`] instead: the job joins a
//! queue (a lock held only for the push) and the loop is woken through a libuv async handle of our
//! own, outside any lock the JS thread wants; on the JS thread the job then makes the
//! threadsafe-function call itself, which wakes no other thread (libuv's `uv_async_send` still
//! writes the loop's eventfd, so the loop's next poll returns at once and turns once more for
//! nothing — seen with `strace -f` on the Node demo). Calls keep their order: every call of a
//! [`crate::callback::JsMethod`] goes through the relay, which runs its jobs in push order, and so
//! does every settle of [`crate::settle`].
//!
//! The order of the handles: libuv runs the callbacks of a loop's pending async handles in the
//! order the handles were opened, so a threadsafe function opened after the relay has the calls
//! the relay's jobs just queued run in the same wake-up, and one opened before it only at the
//! next turn of the loop. So whatever feeds a threadsafe function through the relay gets the
//! relay ([`Relay::local`]) before it makes the function.
//!
//! libuv's functions are looked up in the process (Node exports them for addons); where they are
//! not found, or `ACP_FACADE_NO_UV_RELAY=1` ([`switches::uv_relay`]), there is no relay and calls
//! go to the threadsafe function directly: the same order and results, other wake-ups. The
//! handle is unreferenced (it never keeps the event loop alive, like the weak threadsafe functions
//! it feeds) and closed when the environment is torn down; jobs queued then are dropped, which
//! their callers read as the host gone.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::ffi::{CStr, c_int, c_void};
use std::sync::{Arc, Mutex, OnceLock, PoisonError, RwLock};

use acp_facade::binding::switches;
use napi::sys;

/// A call to make on the JS thread.
pub type Job = Box<dyn FnOnce() + Send>;

/// Storage for a `uv_async_t` (128 bytes on 64-bit Linux; more is harmless). Its first field is
/// libuv's `void *data`.
#[repr(C, align(16))]
struct UvAsync([u8; 256]);

type AsyncCb = unsafe extern "C" fn(*mut UvAsync);
type AsyncInit = unsafe extern "C" fn(*mut sys::uv_loop_s, *mut UvAsync, Option<AsyncCb>) -> c_int;
type AsyncSend = unsafe extern "C" fn(*mut UvAsync) -> c_int;
type Close = unsafe extern "C" fn(*mut UvAsync, Option<AsyncCb>);
type Unref = unsafe extern "C" fn(*mut UvAsync);

/// The libuv functions the relay uses (libuv's stable ABI).
struct Uv {
    async_init: AsyncInit,
    async_send: AsyncSend,
    close: Close,
    unref: Unref,
}

/// libuv's functions, looked up once in the process; none when the relay is switched off.
fn uv() -> Option<&'static Uv> {
    static UV: OnceLock<Option<Uv>> = OnceLock::new();
    UV.get_or_init(|| {
        if !switches::uv_relay() {
            return None;
        }
        let find = |name: &CStr| {
            // SAFETY: `dlsym` over the process's global symbols with a C string.
            let address = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) };
            (!address.is_null()).then_some(address)
        };
        let (init, send, close, unref) =
            (find(c"uv_async_init")?, find(c"uv_async_send")?, find(c"uv_close")?, find(c"uv_unref")?);
        // SAFETY: these are libuv's functions of these names, with these signatures.
        unsafe {
            Some(Uv {
                async_init: std::mem::transmute::<*mut c_void, AsyncInit>(init),
                async_send: std::mem::transmute::<*mut c_void, AsyncSend>(send),
                close: std::mem::transmute::<*mut c_void, Close>(close),
                unref: std::mem::transmute::<*mut c_void, Unref>(unref),
            })
        }
    })
    .as_ref()
}

/// The async handle, while its environment lives.
struct Handle(*mut UvAsync);

// SAFETY: `uv_async_send` may be called from any thread; everything else is done on the JS thread.
unsafe impl Send for Handle {}
// SAFETY: as above.
unsafe impl Sync for Handle {}

/// One JS thread's queue of jobs and the async handle that wakes it (see the module doc).
pub struct Relay {
    jobs: Mutex<VecDeque<Job>>,
    /// `None` once the environment is torn down. Read-locked while a job is pushed and the loop
    /// woken, write-locked only at the tear-down: the JS thread never waits on it otherwise.
    handle: RwLock<Option<Handle>>,
}

thread_local! {
    /// This JS thread's relay, with the environment it belongs to.
    static LOCAL: RefCell<Option<(sys::napi_env, Option<Arc<Relay>>)>> = const { RefCell::new(None) };
}

impl Relay {
    /// The relay of `env`'s JS thread (on that thread); `None` where libuv cannot be reached or
    /// the relay is switched off.
    pub fn local(env: sys::napi_env) -> Option<Arc<Self>> {
        LOCAL.with_borrow_mut(|local| match local {
            Some((owner, relay)) if *owner == env => relay.clone(),
            _ => {
                let relay = Self::new(env);
                *local = Some((env, relay.clone()));
                relay
            }
        })
    }

    fn new(env: sys::napi_env) -> Option<Arc<Self>> {
        let uv = uv()?;
        let mut event_loop = std::ptr::null_mut();
        // SAFETY: on the JS thread of `env`, with an out-pointer to a local.
        if unsafe { sys::napi_get_uv_event_loop(env, &raw mut event_loop) } != sys::Status::napi_ok
            || event_loop.is_null()
        {
            return None;
        }
        let relay = Arc::new(Self { jobs: Mutex::new(VecDeque::new()), handle: RwLock::new(None) });
        let handle = Box::into_raw(Box::new(UvAsync([0; 256])));
        // SAFETY: `handle` is ours and zeroed; `uv_async_init` runs on the loop's thread. The
        // handle's `data` holds a strong reference to the relay, released by `closed`.
        unsafe {
            if (uv.async_init)(event_loop, handle, Some(wake)) != 0 {
                drop(Box::from_raw(handle));
                return None;
            }
            handle.cast::<*const Self>().write(Arc::into_raw(relay.clone()));
            (uv.unref)(handle);
        }
        *relay.handle.write().unwrap_or_else(PoisonError::into_inner) = Some(Handle(handle));
        let hook = Arc::into_raw(relay.clone());
        // SAFETY: on the JS thread of `env`; `tear_down` takes back the reference it is given.
        if unsafe { sys::napi_add_env_cleanup_hook(env, Some(tear_down), hook.cast_mut().cast()) }
            != sys::Status::napi_ok
        {
            // SAFETY: the hook was not registered, so this reference is still ours.
            unsafe { tear_down(hook.cast_mut().cast()) };
            return None;
        }
        Some(relay)
    }

    /// Runs `job` on the JS thread, after the jobs pushed before it; drops it instead when the
    /// environment is gone.
    pub fn push(&self, job: Job) {
        let refused = {
            let handle = self.handle.read().unwrap_or_else(PoisonError::into_inner);
            match (handle.as_ref(), uv()) {
                (Some(handle), Some(uv)) => {
                    self.jobs.lock().unwrap_or_else(PoisonError::into_inner).push_back(job);
                    // SAFETY: the handle is open while the read lock is held (`tear_down`
                    // closes it under the write lock); `uv_async_send` is thread-safe.
                    unsafe { (uv.async_send)(handle.0) };
                    return;
                }
                _ => job,
            }
        };
        // Dropped outside the lock: what it holds may push again as it goes.
        drop(refused);
    }
}

/// The handle's callback (on the JS thread): runs the jobs queued by now.
unsafe extern "C" fn wake(handle: *mut UvAsync) {
    // SAFETY: `data` holds the relay's strong reference until `closed`.
    let relay = unsafe { &*handle.cast::<*const Relay>().read() };
    let jobs = std::mem::take(&mut *relay.jobs.lock().unwrap_or_else(PoisonError::into_inner));
    for job in jobs {
        job();
    }
}

/// The environment's clean-up hook (on the JS thread): closes the handle and drops what is queued.
unsafe extern "C" fn tear_down(arg: *mut c_void) {
    // SAFETY: the reference `Relay::new` leaked for this hook.
    let relay = unsafe { Arc::from_raw(arg.cast_const().cast::<Relay>()) };
    let handle = relay.handle.write().unwrap_or_else(PoisonError::into_inner).take();
    if let (Some(handle), Some(uv)) = (handle, uv()) {
        // SAFETY: an open handle of this thread's loop, closed once.
        unsafe { (uv.close)(handle.0, Some(closed)) };
    }
    let jobs = std::mem::take(&mut *relay.jobs.lock().unwrap_or_else(PoisonError::into_inner));
    drop(jobs);
}

/// The handle's close callback: frees it and its reference to the relay.
unsafe extern "C" fn closed(handle: *mut UvAsync) {
    // SAFETY: the reference `Relay::new` stored in `data`, and the box it allocated.
    unsafe {
        drop(Arc::from_raw(handle.cast::<*const Relay>().read()));
        drop(Box::from_raw(handle));
    }
}

/// Whether calls and settles of this JS thread go through its relay (`false`: to the threadsafe
/// functions directly, where libuv cannot be reached or `ACP_FACADE_NO_UV_RELAY=1`). For the
/// tests, which check that the switch is honoured; not part of the API.
#[napi_derive::napi(skip_typescript, js_name = "__usesUvRelay")]
pub fn uses_uv_relay(env: napi::Env) -> bool {
    Relay::local(env.raw()).is_some()
}
