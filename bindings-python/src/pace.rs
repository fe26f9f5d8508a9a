//! The core's [`pace`](acp_facade::pace) policy as Python sees it: a streaming call returns
//! `True` when its caller should await (the package's wrapper then hands out an awaitable that
//! [`resolve_when_drained`] completes), and raises `RuntimeError` when its caller never awaited
//! and the queue reached its hard bound.

use std::cell::RefCell;
use std::future::Future;

use acp_facade::pace::{LOW_WATER, Pace, Refused};
use acp_facade::runner::ops::{TurnOp, TurnOps};
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

use crate::bridge;

/// Whether the caller should await; `closed` is what a closed queue means to the caller.
pub(crate) fn should_wait(result: Result<Pace, Refused>, closed: &str) -> PyResult<bool> {
    match result {
        Ok(pace) => Ok(pace.should_wait()),
        Err(Refused::Closed) => Err(PyRuntimeError::new_err(closed.to_owned())),
        Err(refused @ Refused::Full(_)) => Err(PyRuntimeError::new_err(refused.to_string())),
    }
}

/// Completes the Python future `future` once `drained` resolves.
pub(crate) fn resolve_when_drained(drained: impl Future<Output = ()> + Send + 'static, future: u64) {
    crate::runtime().spawn(async move {
        drained.await;
        bridge::resolve_none(future);
    });
}

/// Operations pushed on the loop's thread while it handles a wake-up of the bridge, held back
/// until the end of that burst (see [`push`]).
struct Staged {
    ops: TurnOps,
    op: TurnOp,
}

/// The most operations held back at once; one more flushes them first.
const STAGED_MAX: usize = 64;

thread_local! {
    /// `Some` while the loop's thread is inside a burst ([`begin_burst`] … [`end_burst`]).
    static STAGED: RefCell<Option<Vec<Staged>>> = const { RefCell::new(None) };
}

/// A drain of the bridge (on the loop's thread) starts a burst: the host code it resumes — the
/// futures it completes, the calls it starts — runs before the loop's next wait, and the
/// operations that code pushes are handed to the Tokio worker together at [`end_burst`], one
/// wake-up of the worker for all of them instead of one for each that finds it asleep.
pub(crate) fn begin_burst() {
    STAGED.with(|staged| {
        let mut staged = staged.borrow_mut();
        if staged.is_none() {
            *staged = Some(Vec::new());
        }
    });
}

/// Ends the burst: queues what it held back, in push order.
pub(crate) fn end_burst() {
    let held = STAGED.with(|staged| staged.borrow_mut().take());
    if let Some(held) = held {
        push_all(held);
    }
}

/// Queues what the burst holds so far and goes on holding back: before anything that must not
/// pass it (an operation queued at once, the answer to the host's `run_turn`).
pub(crate) fn flush() {
    let held = STAGED.with(|staged| staged.borrow_mut().as_mut().map(std::mem::take));
    if let Some(held) = held {
        push_all(held);
    }
}

fn push_all(held: Vec<Staged>) {
    for Staged { ops, op } in held {
        // Held back only while far below every mark (see `push`), so neither `Wait` nor `Full`
        // can come back here; `Closed` cannot either, the queue closing only once the host's
        // `run_turn` was answered, which flushes first (`bridge_reply`). Should one come back
        // all the same, the operation is dropped and its reply answered "turn ended".
        let _ = ops.push(op);
    }
}

/// Queues `op` on a running turn and says whether the caller should await (`closed`: what a
/// closed queue means to the caller).
///
/// Inside a burst on the loop's thread, and while the queue is short, the operation is held
/// back until the burst ends (at the latest once the loop has run what the drain made ready,
/// before it waits again); otherwise, and always behind what is held back, it is queued at once.
/// Held or not, operations reach the queue in push order, so the core applies them in call
/// order. A held-back operation is counted by the queue only when the burst ends, so it is held
/// only while the queue and the held-back ones together are below the low-water mark: the
/// answer is then the same as queueing at once would have given (`False`), and the bounds stay.
pub(crate) fn push(ops: &TurnOps, op: TurnOp, closed: &str) -> PyResult<bool> {
    let now = STAGED.with(|staged| {
        let mut staged = staged.borrow_mut();
        let Some(held) = staged.as_mut() else { return Some(op) };
        if ops.is_closed() || held.len() >= STAGED_MAX || ops.queued() + held.len() >= LOW_WATER {
            return Some(op);
        }
        held.push(Staged { ops: ops.clone(), op });
        None
    });
    match now {
        None => Ok(false),
        Some(op) => {
            flush();
            should_wait(ops.push(op), closed)
        }
    }
}
