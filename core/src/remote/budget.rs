//! How many bytes of an agent's messages may wait for one connection's client
//! ([`RemoteConfig::max_buffered_bytes`](super::RemoteConfig::max_buffered_bytes)), and how a
//! client that stopped reading is told from one that reads slowly.
//!
//! Every message the agent writes takes a [`Credit`] for its length before it is queued towards
//! the client; the credit is given back when the message leaves the server (handed to the
//! socket: an SSE event taken by the response body, a WebSocket frame sent) or is dropped.
//!
//! Invariants:
//! - the bytes held by credits never exceed the bound, except for one message larger than the
//!   whole bound, let through only when nothing else waits;
//! - a message that does not fit waits for room ([`Budget::reserve`] awaits), so the agent's
//!   writer is slowed down to its client's pace and nothing is dropped for a client that reads;
//! - a wait ends in [`Stalled`] only when no credit at all was given back for the stall timeout:
//!   the client took nothing while its buffer was full. Any message taken restarts the wait.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::Notify;

/// The bytes waiting for one connection's client.
#[derive(Debug)]
pub(crate) struct Budget {
    max: usize,
    queued: Mutex<usize>,
    room: Notify,
}

/// A message's share of a [`Budget`], given back when dropped.
#[derive(Debug)]
pub(crate) struct Credit {
    budget: Arc<Budget>,
    bytes: usize,
}

/// The client took nothing for the whole stall timeout while its buffer was full.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stalled;

impl Budget {
    /// A budget of `max` bytes.
    pub(crate) fn new(max: usize) -> Arc<Self> {
        Arc::new(Self { max, queued: Mutex::new(0), room: Notify::new() })
    }

    /// The bound.
    pub(crate) fn max(&self) -> usize {
        self.max
    }

    /// Takes `bytes` of the budget, waiting for room; [`Stalled`] when no credit was given back
    /// for `stall` while waiting.
    pub(crate) async fn reserve(self: &Arc<Self>, bytes: usize, stall: Duration) -> Result<Credit, Stalled> {
        loop {
            let notified = self.room.notified();
            tokio::pin!(notified);
            // Registered before the check, so a credit given back in between is not missed.
            notified.as_mut().enable();
            {
                let mut queued = self.queued.lock().unwrap_or_else(PoisonError::into_inner);
                if *queued == 0 || queued.saturating_add(bytes) <= self.max {
                    *queued += bytes;
                    return Ok(Credit { budget: self.clone(), bytes });
                }
            }
            if tokio::time::timeout(stall, notified).await.is_err() {
                return Err(Stalled);
            }
        }
    }

    fn release(&self, bytes: usize) {
        let mut queued = self.queued.lock().unwrap_or_else(PoisonError::into_inner);
        *queued = queued.saturating_sub(bytes);
        drop(queued);
        self.room.notify_waiters();
    }

    /// The bytes held by credits now.
    #[cfg(test)]
    fn queued(&self) -> usize {
        *self.queued.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Drop for Credit {
    fn drop(&mut self) {
        self.budget.release(self.bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STALL: Duration = Duration::from_secs(30);

    #[tokio::test(start_paused = true)]
    async fn a_message_that_does_not_fit_waits_for_room_and_any_progress_restarts_the_stall_timer() {
        let budget = Budget::new(10);
        let first = budget.reserve(6, STALL).await.unwrap();
        let second = budget.reserve(4, STALL).await.unwrap();
        assert_eq!(budget.queued(), 10);
        let waiting = tokio::spawn({
            let budget = budget.clone();
            async move { budget.reserve(5, STALL).await.map(|credit| credit.bytes) }
        });
        tokio::time::sleep(STALL / 2).await;
        assert!(!waiting.is_finished(), "no room yet");
        // Progress (4 bytes taken, still not room for 5) restarts the stall timer.
        drop(second);
        tokio::time::sleep(STALL * 3 / 4).await;
        assert!(!waiting.is_finished(), "the client took something a moment ago");
        drop(first);
        assert_eq!(waiting.await.unwrap(), Ok(5));
        assert_eq!(budget.queued(), 0, "every credit given back");
    }

    #[tokio::test(start_paused = true)]
    async fn a_full_budget_with_nothing_taken_for_the_stall_timeout_is_stalled() {
        let budget = Budget::new(10);
        let _held = budget.reserve(10, STALL).await.unwrap();
        assert_eq!(budget.reserve(1, STALL).await.unwrap_err(), Stalled);
    }

    #[tokio::test(start_paused = true)]
    async fn one_message_larger_than_the_bound_passes_alone() {
        let budget = Budget::new(10);
        let big = budget.reserve(100, STALL).await.unwrap();
        assert_eq!(budget.reserve(1, STALL).await.unwrap_err(), Stalled, "nothing passes it");
        drop(big);
        assert!(budget.reserve(1, STALL).await.is_ok());
    }
}
