//! The bridge between the Tokio runtime and the caller's asyncio loop (binding plumbing; it has
//! no core counterpart).
//!
//! Tokio threads never touch the interpreter. A call into Python ([`call`]) is queued here as plain
//! Rust data and the loop is woken through a file descriptor that it watches with
//! `loop.add_reader` ([`Wake`]: an eventfd on Linux, a socket pair elsewhere or with
//! `ACP_FACADE_NO_EVENTFD=1`). The loop then drains
//! the queue on its own thread with one call (`bridge_drain`), which delivers every item in queue
//! order: a call is handed to the dispatcher, which runs the host's coroutine as an asyncio task
//! and answers with a synchronous call (`bridge_reply`, `bridge_reply_error`,
//! `bridge_reply_cancelled`) that converts the result and completes a oneshot channel; a resolved
//! future is completed right there, without a Python-level step per answer. Dropping a [`Call`] before it completes
//! (the core gave up on it: cancellation, a grace period, a closed connection) cancels the
//! asyncio task. Completions of Python futures that wait on Rust work travel the same way
//! ([`resolve`]).

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::io::{ErrorKind, Read, Write};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::task::{Context, Poll};

use acp_facade::Error;
use acp_facade::binding::switches;
use acp_facade::error::ErrorExt;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};
use tokio::sync::oneshot;

/// Builds a call's Python arguments, on the loop's thread.
pub(crate) type MakeArgs = Box<dyn for<'py> FnOnce(Python<'py>) -> PyResult<Bound<'py, PyTuple>> + Send>;
/// Builds a resolved future's Python value, on the loop's thread.
pub(crate) type MakeValue = Box<dyn for<'py> FnOnce(Python<'py>) -> PyResult<Bound<'py, PyAny>> + Send>;
/// Converts a call's Python result and completes the waiting Rust future.
type Complete = Box<dyn for<'py> FnOnce(Python<'py>, Result<Bound<'py, PyAny>, Completion>) + Send>;

/// How a call ended without a value.
enum Completion {
    Raised(PyErr),
    Cancelled,
}

enum Item {
    Call { id: u64, target: Arc<Py<PyAny>>, method: &'static str, args: MakeArgs },
    Cancel { id: u64 },
    Resolve { future: u64, value: Result<MakeValue, Error> },
}

/// What wakes the loop: readable once signalled, until cleared.
///
/// On Linux an eventfd: one signal and one clear cost about a third of a byte sent and received
/// over a Unix socket (no socket buffer is allocated per wake-up), once per hand-over to the loop,
/// so about once per host call. Elsewhere, or with `ACP_FACADE_NO_EVENTFD=1`
/// ([`switches::eventfd`]), a non-blocking socket pair carrying one byte: the plain path, with
/// the same wake-ups.
enum Wake {
    #[cfg(target_os = "linux")]
    Event(std::fs::File),
    Pair {
        tx: UnixStream,
        rx: UnixStream,
    },
}

impl Wake {
    fn new() -> std::io::Result<Self> {
        #[cfg(target_os = "linux")]
        if switches::eventfd() {
            return Self::eventfd();
        }
        Self::pair()
    }

    #[cfg(target_os = "linux")]
    #[allow(unsafe_code, reason = "eventfd has no safe wrapper in std")]
    fn eventfd() -> std::io::Result<Self> {
        use std::os::fd::{FromRawFd, OwnedFd};
        // SAFETY: `eventfd` takes no pointers; the descriptor it returns is new and ours alone.
        let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: `fd` is a valid descriptor that nothing else owns.
        let event = std::fs::File::from(unsafe { OwnedFd::from_raw_fd(fd) });
        Ok(Self::Event(event))
    }

    fn pair() -> std::io::Result<Self> {
        let (tx, rx) = UnixStream::pair()?;
        tx.set_nonblocking(true)?;
        rx.set_nonblocking(true)?;
        Ok(Self::Pair { tx, rx })
    }

    /// Makes the descriptor readable. Nothing can go wrong here that the next signal would not
    /// retry: a full eventfd counter or socket buffer is readable already.
    fn signal(&self) {
        let _ = match self {
            #[cfg(target_os = "linux")]
            Self::Event(event) => (&*event).write(&1u64.to_ne_bytes()),
            Self::Pair { tx, .. } => (&*tx).write(&[1]),
        };
    }

    /// Makes the descriptor unreadable again (whatever signals came before).
    fn clear(&self) {
        match self {
            #[cfg(target_os = "linux")]
            Self::Event(event) => {
                // One read takes the whole count.
                let mut count = [0u8; 8];
                while let Err(e) = (&*event).read(&mut count) {
                    if e.kind() != ErrorKind::Interrupted {
                        break;
                    }
                }
            }
            Self::Pair { rx, .. } => {
                let mut sink = [0u8; 256];
                loop {
                    match (&*rx).read(&mut sink) {
                        // Less than asked for: the socket is empty now (one byte, usually: a push
                        // signals only while `woken` is clear), so no second read to hear
                        // `WouldBlock`.
                        Ok(n) if n < sink.len() => break,
                        Ok(_) => {}
                        Err(e) if e.kind() == ErrorKind::Interrupted => {}
                        Err(_) => break,
                    }
                }
            }
        }
    }

    /// The descriptor the loop watches.
    fn fd(&self) -> RawFd {
        match self {
            #[cfg(target_os = "linux")]
            Self::Event(event) => event.as_raw_fd(),
            Self::Pair { rx, .. } => rx.as_raw_fd(),
        }
    }
}

struct Bridge {
    queue: Mutex<VecDeque<Item>>,
    pending: Mutex<HashMap<u64, Complete>>,
    next_id: AtomicU64,
    woken: AtomicBool,
    wake: Wake,
}

static BRIDGE: OnceLock<Bridge> = OnceLock::new();

fn bridge() -> Option<&'static Bridge> {
    BRIDGE.get()
}

impl Bridge {
    fn new() -> std::io::Result<Self> {
        Ok(Self {
            queue: Mutex::default(),
            pending: Mutex::default(),
            next_id: AtomicU64::new(1),
            woken: AtomicBool::new(false),
            wake: Wake::new()?,
        })
    }

    fn push(&self, item: Item) {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner).push_back(item);
        if !self.woken.swap(true, Ordering::AcqRel) {
            self.wake.signal();
        }
    }

    fn take_pending(&self, id: u64) -> Option<Complete> {
        self.pending.lock().unwrap_or_else(PoisonError::into_inner).remove(&id)
    }
}

/// A call into Python in flight. Resolves to the converted result; dropping it early cancels the
/// host's asyncio task.
pub(crate) struct Call<T> {
    id: u64,
    rx: oneshot::Receiver<Result<T, Error>>,
    done: bool,
}

impl<T> Call<T> {
    /// Asks the loop to cancel the call's task, and keeps waiting for its answer.
    pub(crate) fn cancel_task(&self) {
        if let Some(bridge) = bridge() {
            bridge.push(Item::Cancel { id: self.id });
        }
    }
}

impl<T> Future for Call<T> {
    type Output = Result<T, Error>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match Pin::new(&mut self.rx).poll(cx) {
            Poll::Ready(result) => {
                self.done = true;
                Poll::Ready(result.unwrap_or_else(|_| Err(Error::internal_msg("the Python host went away"))))
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

impl<T> Drop for Call<T> {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        if let Some(bridge) = bridge()
            && bridge.take_pending(self.id).is_some()
        {
            bridge.push(Item::Cancel { id: self.id });
        }
    }
}

/// Calls `target.method(*args)` on the asyncio loop (awaiting it when it returns an awaitable) and
/// converts its result with `convert`, on the loop's thread.
pub(crate) fn call<T: Send + 'static>(
    target: &Arc<Py<PyAny>>,
    method: &'static str,
    args: impl for<'py> FnOnce(Python<'py>) -> PyResult<Bound<'py, PyTuple>> + Send + 'static,
    convert: impl for<'py> FnOnce(&Bound<'py, PyAny>) -> Result<T, Error> + Send + 'static,
) -> Call<T> {
    let (tx, rx) = oneshot::channel();
    let Some(bridge) = bridge() else {
        let _ = tx.send(Err(Error::internal_msg("the Python bridge is not initialized")));
        return Call { id: 0, rx, done: false };
    };
    let id = bridge.next_id.fetch_add(1, Ordering::Relaxed);
    let complete: Complete = Box::new(move |py, result| {
        let answer = match result {
            Ok(value) => convert(&value),
            Err(Completion::Raised(err)) => Err(crate::error::from_py_err(py, &err, method)),
            Err(Completion::Cancelled) => Err(Error::cancelled_msg(format!("`{method}` was cancelled"))),
        };
        let _ = tx.send(answer);
    });
    bridge.pending.lock().unwrap_or_else(PoisonError::into_inner).insert(id, complete);
    bridge.push(Item::Call { id, target: target.clone(), method, args: Box::new(args) });
    Call { id, rx, done: false }
}

/// Like [`call`], for the core's synchronous hooks: parks this Tokio worker (without touching the
/// interpreter) until the loop answers.
pub(crate) fn call_blocking<T: Send + 'static>(
    target: &Arc<Py<PyAny>>,
    method: &'static str,
    args: impl for<'py> FnOnce(Python<'py>) -> PyResult<Bound<'py, PyTuple>> + Send + 'static,
    convert: impl for<'py> FnOnce(&Bound<'py, PyAny>) -> Result<T, Error> + Send + 'static,
) -> Result<T, Error> {
    let pending = call(target, method, args, convert);
    match tokio::runtime::Handle::try_current() {
        Ok(handle) if handle.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(|| futures::executor::block_on(pending))
        }
        _ => futures::executor::block_on(pending),
    }
}

/// Completes the Python future registered under `future` with a value built on the loop's
/// thread, or with an exception.
pub(crate) fn resolve(future: u64, value: Result<MakeValue, Error>) {
    if let Some(bridge) = bridge() {
        bridge.push(Item::Resolve { future, value });
    }
}

/// Completes the Python future `future` with `None`.
pub(crate) fn resolve_none(future: u64) {
    resolve(future, Ok(Box::new(|py| Ok(py.None().into_bound(py)))));
}

fn get() -> PyResult<&'static Bridge> {
    bridge().ok_or_else(|| pyo3::exceptions::PyRuntimeError::new_err("the bridge is not initialized"))
}

/// The file descriptor the asyncio loop watches; readable when the queue has items.
#[pyfunction]
fn bridge_fileno() -> PyResult<i32> {
    Ok(get()?.wake.fd())
}

/// Delivers every queued item, in queue order, on the loop's thread: a call to
/// `start(id, target, method, args)`, a cancellation to `cancel(id)`, and a resolved future
/// straight to the future that `futures` (the dispatcher's futures by id) holds, which is taken
/// out of it: `set_result` or `set_exception`, nothing when the future is done already (its
/// waiter was cancelled). One call from the loop for however many items arrived since the last
/// wake-up, and no Python object per resolved future beyond its value. Returns the exceptions
/// that `start` or `cancel` raised (the dispatcher logs them), or `None`: one item's failure
/// never stops the others.
#[pyfunction]
fn bridge_drain<'py>(
    py: Python<'py>,
    futures: &Bound<'py, PyDict>,
    start: &Bound<'py, PyAny>,
    cancel: &Bound<'py, PyAny>,
) -> PyResult<Option<Bound<'py, PyList>>> {
    let bridge = get()?;
    // Clear the wake-up first, THEN clear `woken`, then take the queue. The other order loses
    // wake-ups: a push between clearing `woken` and clearing the wake-up sets `woken` again and
    // signals a wake-up that this clear then discards, so every later push sees `woken` set,
    // signals nothing, and the loop is never woken again (host calls hang; seen with 64
    // concurrent `session/new` in the callback benchmark). In this order a push after the clear
    // always signals a wake-up that is still there for the next drain, and its item is in this
    // drain or the next.
    bridge.wake.clear();
    bridge.woken.store(false, Ordering::Release);
    let items = std::mem::take(&mut *bridge.queue.lock().unwrap_or_else(PoisonError::into_inner));
    let mut failed: Option<Bound<'py, PyList>> = None;
    for item in items {
        let outcome = match item {
            Item::Call { id, target, method, args } => match args(py) {
                Ok(args) => start.call1((id, target.clone_ref(py), method, args)).map(drop),
                Err(err) => {
                    if let Some(complete) = bridge.take_pending(id) {
                        complete(py, Err(Completion::Raised(err)));
                    }
                    Ok(())
                }
            },
            Item::Cancel { id } => cancel.call1((id,)).map(drop),
            Item::Resolve { future, value } => {
                settle_future(py, futures, future, value);
                Ok(())
            }
        };
        if let Err(err) = outcome {
            failed.get_or_insert_with(|| PyList::empty(py)).append(err.into_value(py))?;
        }
    }
    Ok(failed)
}

/// Completes the future registered under `id` in `futures` (and forgets it) with `value`; a
/// future that is gone or done (its waiter was cancelled) is left alone.
fn settle_future<'py>(py: Python<'py>, futures: &Bound<'py, PyDict>, id: u64, value: Result<MakeValue, Error>) {
    let Ok(Some(future)) = futures.get_item(id) else { return };
    let _ = futures.del_item(id);
    let done = future.call_method0(intern!(py, "done")).and_then(|done| done.is_truthy());
    if !matches!(done, Ok(false)) {
        return;
    }
    let (method, argument) = match value.map(|make| make(py)) {
        Ok(Ok(value)) => (intern!(py, "set_result"), value),
        Ok(Err(err)) => (intern!(py, "set_exception"), err.into_value(py).into_bound(py).into_any()),
        Err(error) => {
            (intern!(py, "set_exception"), crate::error::to_py_err(py, &error).into_value(py).into_bound(py).into_any())
        }
    };
    // It was not done, and nothing else has run on this thread since: this does not fail.
    let _ = future.call_method1(method, (argument,));
}

/// Answers call `id` with the host's return value.
#[pyfunction]
fn bridge_reply(py: Python<'_>, id: u64, value: Bound<'_, PyAny>) -> PyResult<()> {
    if let Some(complete) = get()?.take_pending(id) {
        complete(py, Ok(value));
    }
    Ok(())
}

/// Answers call `id` with the exception the host raised.
#[pyfunction]
fn bridge_reply_error(py: Python<'_>, id: u64, error: Bound<'_, PyAny>) -> PyResult<()> {
    if let Some(complete) = get()?.take_pending(id) {
        complete(py, Err(Completion::Raised(PyErr::from_value(error))));
    }
    Ok(())
}

/// Answers call `id`: the host's task was cancelled.
#[pyfunction]
fn bridge_reply_cancelled(py: Python<'_>, id: u64) -> PyResult<()> {
    if let Some(complete) = get()?.take_pending(id) {
        complete(py, Err(Completion::Cancelled));
    }
    Ok(())
}

/// Fails every call still waiting for the loop (the loop is going away).
#[pyfunction]
fn bridge_fail_pending(py: Python<'_>) -> PyResult<usize> {
    let bridge = get()?;
    let pending: Vec<Complete> =
        bridge.pending.lock().unwrap_or_else(PoisonError::into_inner).drain().map(|(_, complete)| complete).collect();
    let count = pending.len();
    for complete in pending {
        complete(py, Err(Completion::Cancelled));
    }
    Ok(count)
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    if BRIDGE.get().is_none() {
        let bridge = Bridge::new().map_err(|e| pyo3::exceptions::PyOSError::new_err(e.to_string()))?;
        let _ = BRIDGE.set(bridge);
    }
    m.add_function(wrap_pyfunction!(bridge_fileno, m)?)?;
    m.add_function(wrap_pyfunction!(bridge_drain, m)?)?;
    m.add_function(wrap_pyfunction!(bridge_reply, m)?)?;
    m.add_function(wrap_pyfunction!(bridge_reply_error, m)?)?;
    m.add_function(wrap_pyfunction!(bridge_reply_cancelled, m)?)?;
    m.add_function(wrap_pyfunction!(bridge_fail_pending, m)?)?;
    Ok(())
}
