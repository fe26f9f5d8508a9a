//! [`Publisher`]: in-order publishing into an [`EventHub`] for hosts that cannot await (the
//! bindings' `EventHub.publish`, a synchronous call from Python or JavaScript).
//!
//! A publish delivers at once when nothing is queued and every subscriber has room (the common
//! case: the client keeps up). Otherwise the event joins a queue that a pump task delivers in
//! order, waiting for room, so a slow client slows the pump; the pump runs only while the queue
//! is not empty and is started by the publish that makes it non-empty.
//!
//! Back-pressure is the [`pace`](crate::binding::pace) policy: a publish answers [`Pace::Wait`] above the
//! soft mark (the binding hands its caller [`Publisher::drained`] to await) and is refused with
//! [`Refused::Full`] at the hard limit, so the queue is bounded for every caller, awaiting or not.
//!
//! Invariants:
//! - Events reach subscribers in publish order: the fast path is taken only when the queue is
//!   empty and the pump idle (the count is lowered only after an event has been delivered).
//! - The count is raised and the event queued under one lock, and the pump lowers the count under
//!   it, so there is exactly one pump while the count is above zero.

use std::collections::VecDeque;
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use futures::future::BoxFuture;

use crate::binding::pace::{Backlog, Pace, Refused};
use crate::harness::Event;
use crate::hub::{EventHub, HubFull};

/// How a [`Publisher`] starts its pump: the binding's way to spawn a task on its runtime.
pub type Spawn = Box<dyn Fn(BoxFuture<'static, ()>) + Send + Sync>;

/// Publishes into a hub in order without awaiting; see the module doc.
pub struct Publisher {
    shared: Arc<Shared>,
}

struct Shared {
    hub: Arc<EventHub>,
    queue: Mutex<VecDeque<Event>>,
    backlog: Backlog,
    spawn: Spawn,
}

impl Shared {
    fn lock_queue(&self) -> MutexGuard<'_, VecDeque<Event>> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl std::fmt::Debug for Publisher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Publisher").field("queued", &self.queued()).finish_non_exhaustive()
    }
}

impl Publisher {
    /// A publisher into `hub`, whose pump `spawn` starts.
    pub fn new(hub: Arc<EventHub>, spawn: impl Fn(BoxFuture<'static, ()>) + Send + Sync + 'static) -> Self {
        Self {
            shared: Arc::new(Shared {
                hub,
                queue: Mutex::default(),
                backlog: Backlog::default(),
                spawn: Box::new(spawn),
            }),
        }
    }

    /// The hub published into.
    pub fn hub(&self) -> &Arc<EventHub> {
        &self.shared.hub
    }

    /// Publishes `event` after every event published before it. Refused (and dropped) when the
    /// queue is full.
    pub fn publish(&self, mut event: Event) -> Result<Pace, Refused> {
        let shared = &self.shared;
        if shared.backlog.depth() == 0 {
            match shared.hub.try_publish(event) {
                Ok(()) => return Ok(Pace::Go),
                Err(HubFull(back)) => event = *back,
            }
        }
        let depth = {
            let mut queue = shared.lock_queue();
            let depth = shared.backlog.add()?;
            queue.push_back(event);
            depth
        };
        if depth == 1 {
            (shared.spawn)(Box::pin(pump(shared.clone())));
        }
        Ok(Backlog::pace(depth))
    }

    /// Resolves once the queue is short again: what a caller told [`Pace::Wait`] awaits.
    pub fn drained(&self) -> impl Future<Output = ()> + Send + 'static {
        let shared = self.shared.clone();
        async move { shared.backlog.drained().await }
    }

    /// How many events are queued and not yet delivered.
    pub fn queued(&self) -> usize {
        self.shared.backlog.depth()
    }
}

/// Delivers the queue in order; ends when it is empty.
async fn pump(shared: Arc<Shared>) {
    loop {
        let Some(event) = shared.lock_queue().pop_front() else { return };
        shared.hub.publish(event).await;
        let left = {
            let _queue = shared.lock_queue();
            shared.backlog.done()
        };
        if left == 0 {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use futures::StreamExt;

    use super::*;
    use crate::binding::pace::{HARD_LIMIT, HIGH_WATER};
    use crate::hub::tests::{event, used};

    fn publisher(capacity: usize) -> Publisher {
        Publisher::new(Arc::new(EventHub::new(capacity)), |pump| {
            tokio::spawn(pump);
        })
    }

    #[tokio::test]
    async fn delivers_in_order_across_the_fast_path_and_the_queue() {
        let publisher = publisher(4);
        let mut sub = publisher.hub().subscribe();
        for n in 0..20 {
            assert_eq!(publisher.publish(event(n)), Ok(Pace::Go));
        }
        assert_eq!(publisher.queued(), 16, "four fit in the subscriber's queue, the rest wait");
        for n in 0..20 {
            assert_eq!(used(&sub.next().await.unwrap()), n);
        }
        publisher.drained().await;
        assert_eq!(publisher.queued(), 0);
        // Drained: the fast path again, then the pump again.
        for n in 20..30 {
            assert_eq!(publisher.publish(event(n)), Ok(Pace::Go));
        }
        for n in 20..30 {
            assert_eq!(used(&sub.next().await.unwrap()), n);
        }
    }

    #[tokio::test]
    async fn a_producer_that_never_waits_is_refused_at_the_hard_limit_and_loses_nothing() {
        let publisher = publisher(1);
        let mut stalled = publisher.hub().subscribe();
        let mut accepted = 0u64;
        let mut first_wait = None;
        let refused = loop {
            match publisher.publish(event(accepted)) {
                Ok(pace) => {
                    if pace == Pace::Wait && first_wait.is_none() {
                        first_wait = Some(publisher.queued());
                    }
                    accepted += 1;
                    assert!(publisher.queued() <= HARD_LIMIT);
                }
                Err(refused) => break refused,
            }
            assert!(accepted < 10 * HARD_LIMIT as u64, "never refused");
        };
        assert_eq!(refused, Refused::Full(HARD_LIMIT));
        assert_eq!(first_wait, Some(HIGH_WATER + 1));
        assert_eq!(publisher.queued(), HARD_LIMIT);
        for n in 0..accepted {
            assert_eq!(used(&stalled.next().await.unwrap()), n);
        }
        publisher.drained().await;
        assert_eq!(publisher.queued(), 0);
    }

    #[tokio::test]
    async fn events_queued_when_the_publisher_is_dropped_are_still_delivered() {
        let publisher = publisher(1);
        let mut sub = publisher.hub().subscribe();
        for n in 0..10 {
            let _ = publisher.publish(event(n)).unwrap();
        }
        let hub = publisher.hub().clone();
        drop(publisher);
        for n in 0..10 {
            assert_eq!(used(&sub.next().await.unwrap()), n);
        }
        drop(hub);
    }
}
