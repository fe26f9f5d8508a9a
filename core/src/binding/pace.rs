//! Pacing: the back-pressure of a queue whose producer cannot await (a binding's synchronous call
//! from Python or JavaScript) and whose consumer is an async Rust task.
//!
//! A [`Backlog`] counts the items a producer has queued and the consumer has not finished yet, and
//! applies one policy to every such queue (the runner's turn operations, `acp_facade_runner::binding::ops`; the events of
//! [`Publisher`](super::publisher::Publisher)):
//!
//! - **Soft bound.** Up to [`HIGH_WATER`] queued items a call answers [`Pace::Go`]; above it,
//!   [`Pace::Wait`]: the binding hands its caller something to await (a Python awaitable, a JS
//!   Promise) that completes once the backlog is down to [`LOW_WATER`] ([`Backlog::drained`]). A
//!   producer that awaits what it is given therefore never has more than `HIGH_WATER + 1` items
//!   queued, and moves at the pace of the client.
//! - **Hard bound.** A producer that never awaits is refused with [`Refused::Full`] once
//!   [`HARD_LIMIT`] items are queued: the call fails (a Python exception, a thrown JS error) and
//!   queues nothing. The queue never holds more than [`HARD_LIMIT`] items, whoever calls.
//!
//! Why refuse rather than block the caller's thread until the consumer catches up: the consumer's
//! progress can depend on that very thread. The output of an agent served over caller-supplied
//! streams (`Agent.serve` in Python and Node) is written by host callbacks on the host's event
//! loop, and an in-process client reads on it too; blocking that thread would stop the pipe the
//! queue drains into, for good. A refusal never waits, so it cannot deadlock, and it is loud: the
//! caller learns at once that it ignored back-pressure, with nothing accepted and then lost.
//!
//! Invariant: the count is raised before an item becomes visible to the consumer and lowered after
//! the consumer is done with it, one at a time; so it falls through [`LOW_WATER`] exactly once per
//! drain, where [`Backlog::drained`] waiters are woken.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use tokio::sync::Notify;

/// Queued items above which a producer is asked to wait.
pub const HIGH_WATER: usize = 1024;
/// Queued items at or below which a waiting producer may go on.
pub const LOW_WATER: usize = 256;
/// Queued items at which a producer that did not wait is refused.
pub const HARD_LIMIT: usize = 16 * HIGH_WATER;

/// What a producer should do after queueing an item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use]
pub enum Pace {
    /// Go on.
    Go,
    /// Await [`Backlog::drained`] before queueing more.
    Wait,
}

impl Pace {
    /// Whether the producer should wait.
    pub fn should_wait(self) -> bool {
        self == Self::Wait
    }
}

/// Why an item was not queued.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    /// The consumer is gone (the turn ended, the hub was dropped).
    #[error("the queue is closed")]
    Closed,
    /// The producer ignored back-pressure: [`HARD_LIMIT`] items are queued.
    #[error(
        "{0} calls are queued and the client reads slower than they are made: await what each \
         call returns (back-pressure) before making more"
    )]
    Full(usize),
}

/// The count of a queue's unfinished items, with the pacing policy (see the module doc).
#[derive(Debug, Default)]
pub struct Backlog {
    depth: AtomicUsize,
    closed: AtomicBool,
    drained: Notify,
}

impl Backlog {
    /// Counts one item the producer is about to queue (before the consumer can see it); fails,
    /// counting nothing, when [`HARD_LIMIT`] items are counted already. Returns how many items
    /// are counted now.
    pub fn add(&self) -> Result<usize, Refused> {
        let before = self.depth.fetch_add(1, Ordering::AcqRel);
        if before >= HARD_LIMIT {
            self.depth.fetch_sub(1, Ordering::AcqRel);
            return Err(Refused::Full(before));
        }
        Ok(before + 1)
    }

    /// Uncounts an item that [`Backlog::add`] counted but that could not be queued after all.
    pub fn unadd(&self) {
        self.done();
    }

    /// Counts one item the consumer is done with; returns how many are left.
    pub fn done(&self) -> usize {
        let left = self.depth.fetch_sub(1, Ordering::AcqRel).wrapping_sub(1);
        // The count falls one by one, so it passes the low-water mark exactly here; a waiter
        // that arrives later sees the short backlog itself.
        if left == LOW_WATER {
            self.drained.notify_waiters();
        }
        left
    }

    /// The pace for a producer that just made the count `depth`.
    pub fn pace(depth: usize) -> Pace {
        if depth > HIGH_WATER { Pace::Wait } else { Pace::Go }
    }

    /// How many items are counted.
    pub fn depth(&self) -> usize {
        self.depth.load(Ordering::Acquire)
    }

    /// Marks the consumer gone and releases every [`Backlog::drained`] waiter.
    pub fn close(&self) {
        self.closed.store(true, Ordering::Release);
        self.drained.notify_waiters();
    }

    /// Whether [`Backlog::close`] was called.
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Resolves once at most [`LOW_WATER`] items are counted, or the consumer is gone.
    pub async fn drained(&self) {
        loop {
            let notified = self.drained.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.depth() <= LOW_WATER || self.is_closed() {
                return;
            }
            notified.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    #[test]
    fn the_soft_mark_asks_to_wait_and_the_hard_limit_refuses() {
        let backlog = Backlog::default();
        for n in 1..=HIGH_WATER {
            assert_eq!(Backlog::pace(backlog.add().unwrap()), Pace::Go, "item {n}");
        }
        assert_eq!(Backlog::pace(backlog.add().unwrap()), Pace::Wait);
        while backlog.depth() < HARD_LIMIT {
            backlog.add().unwrap();
        }
        assert_eq!(backlog.add(), Err(Refused::Full(HARD_LIMIT)));
        assert_eq!(backlog.depth(), HARD_LIMIT, "a refusal counts nothing");
        backlog.done();
        assert_eq!(backlog.add(), Ok(HARD_LIMIT));
    }

    #[tokio::test]
    async fn drained_resolves_at_the_low_water_mark() {
        let backlog = Arc::new(Backlog::default());
        for _ in 0..=HIGH_WATER {
            backlog.add().unwrap();
        }
        let waiter = tokio::spawn({
            let backlog = backlog.clone();
            async move { backlog.drained().await }
        });
        while backlog.depth() > LOW_WATER + 1 {
            backlog.done();
        }
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished(), "still above the low-water mark");
        backlog.done();
        waiter.await.unwrap();
        backlog.drained().await;
    }

    #[tokio::test]
    async fn closing_releases_waiters() {
        let backlog = Arc::new(Backlog::default());
        for _ in 0..=HIGH_WATER {
            backlog.add().unwrap();
        }
        let waiter = tokio::spawn({
            let backlog = backlog.clone();
            async move { backlog.drained().await }
        });
        tokio::task::yield_now().await;
        backlog.close();
        waiter.await.unwrap();
    }
}
