//! Host-initiated changes of a live session, kept in order with its turn's updates.
//!
//! A host changes its session itself through a [`SessionControl`](crate::host::SessionControl)
//! (a mode, a config option, its slash commands). While a prompt of the session is in flight the
//! client must see such a change where the host made it: after every event the turn published
//! before, and before the prompt's response. The prompt's drain is what forwards those events, so
//! the change is handed to the drain, which applies it when it has caught up with its event
//! stream (no event queued), in arrival order.
//!
//! Invariants:
//! - While a prompt is in flight (from just before the host's `submit_prompt` to just before the
//!   response), every change is queued and applied by that prompt: while `submit_prompt` still
//!   runs (the turn's events cannot be told apart yet), and after it, each time no event is
//!   waiting; the rest when the turn has ended, before the response.
//! - Otherwise a change is applied at once, by its caller.
//! - A change never waits for a prompt that has ended: the queue is emptied, its changes applied,
//!   when the drain stops; one dropped with its prompt (the prompt's future dropped) fails.

use std::collections::VecDeque;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::task::Poll;

use futures::future::BoxFuture;
use futures::task::AtomicWaker;
use tokio::sync::oneshot;

use crate::error::{Error, ErrorExt};

/// A queued change: its work, answering its caller when done.
type Job = BoxFuture<'static, ()>;

#[derive(Default)]
struct Queued {
    /// Whether a prompt's drain takes the changes.
    draining: bool,
    jobs: VecDeque<Job>,
}

/// One session's queue of host-initiated changes.
#[derive(Default)]
pub(crate) struct ControlQueue {
    queued: Mutex<Queued>,
    /// Set when a change was queued and not yet taken; wakes the drain.
    pending: AtomicBool,
    waker: AtomicWaker,
}

impl ControlQueue {
    fn lock(&self) -> MutexGuard<'_, Queued> {
        self.queued.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Applies `change` in order with the session's prompt in flight, if any (see the module doc);
    /// returns its result.
    pub(crate) async fn apply<T: Send + 'static>(
        &self,
        change: impl Future<Output = Result<T, Error>> + Send + 'static,
    ) -> Result<T, Error> {
        let (tx, answer) = oneshot::channel();
        let job: Job = Box::pin(async move {
            let _ = tx.send(change.await);
        });
        if let Some(job) = self.queue(job) {
            // No prompt in flight: applied at once.
            job.await;
        } else {
            self.pending.store(true, Ordering::Release);
            self.waker.wake();
        }
        answer
            .await
            .unwrap_or_else(|_| Err(Error::internal_msg("the session's prompt ended before the change was made")))
    }

    /// Queues `job` for the prompt's drain; hands it back when no prompt is in flight.
    fn queue(&self, job: Job) -> Option<Job> {
        let mut queued = self.lock();
        if queued.draining {
            queued.jobs.push_back(job);
            None
        } else {
            Some(job)
        }
    }

    /// Starts routing changes to a prompt's drain, until the returned guard is finished or dropped.
    pub(crate) fn begin(&self) -> Draining<'_> {
        self.lock().draining = true;
        Draining { queue: self }
    }
}

/// A prompt's hold on its session's [`ControlQueue`].
pub(crate) struct Draining<'a> {
    queue: &'a ControlQueue,
}

impl Draining<'_> {
    /// Resolves when changes are waiting (take them with [`Draining::take`]).
    pub(crate) fn ready(&self) -> impl Future<Output = ()> + '_ {
        std::future::poll_fn(|cx| {
            self.queue.waker.register(cx.waker());
            if self.queue.pending.swap(false, Ordering::AcqRel) { Poll::Ready(()) } else { Poll::Pending }
        })
    }

    /// The changes waiting, in arrival order.
    pub(crate) fn take(&self) -> VecDeque<Job> {
        std::mem::take(&mut self.queue.lock().jobs)
    }

    /// Applies the waiting changes, in order.
    pub(crate) async fn apply_waiting(&self) {
        for job in self.take() {
            job.await;
        }
    }

    /// Stops routing changes to the prompt, then applies those still waiting.
    pub(crate) async fn finish(self) {
        let rest = {
            let mut queued = self.queue.lock();
            queued.draining = false;
            std::mem::take(&mut queued.jobs)
        };
        for job in rest {
            job.await;
        }
    }
}

impl Drop for Draining<'_> {
    fn drop(&mut self) {
        // Finished, or dropped with its prompt: changes apply at once from now on; any still
        // queued are dropped (their callers get an error).
        let rest = {
            let mut queued = self.queue.lock();
            queued.draining = false;
            std::mem::take(&mut queued.jobs)
        };
        drop(rest);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    #[tokio::test]
    async fn changes_apply_at_once_without_a_drain_and_in_order_with_one() {
        let queue = Arc::new(ControlQueue::default());
        assert_eq!(queue.apply(async { Ok(1) }).await.unwrap(), 1);
        let draining = queue.begin();
        let (q1, q2) = (queue.clone(), queue.clone());
        let first = tokio::spawn(async move { q1.apply(async { Ok("first") }).await });
        let second = tokio::spawn(async move { q2.apply(async { Ok("second") }).await });
        tokio::task::yield_now().await;
        draining.ready().await;
        tokio::task::yield_now().await;
        // Both are queued by now on the current-thread runtime; the drain applies them in order.
        draining.apply_waiting().await;
        draining.finish().await;
        assert_eq!(first.await.unwrap().unwrap(), "first");
        assert_eq!(second.await.unwrap().unwrap(), "second");
        // The drain is gone: at once again.
        assert_eq!(queue.apply(async { Ok(2) }).await.unwrap(), 2);
    }

    #[tokio::test]
    async fn a_change_queued_when_the_drain_is_dropped_fails_and_does_not_hang() {
        let queue = Arc::new(ControlQueue::default());
        let draining = queue.begin();
        let q = queue.clone();
        let change = tokio::spawn(async move { q.apply(async { Ok(()) }).await });
        tokio::task::yield_now().await;
        drop(draining);
        assert!(change.await.unwrap().is_err());
        assert!(queue.apply(async { Ok(()) }).await.is_ok());
    }
}
