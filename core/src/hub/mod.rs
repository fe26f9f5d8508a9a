//! The event hub: one per session, many subscribers, each with a bounded queue.
//!
//! Any host can use it to publish a [`LiveSession`](crate::host::LiveSession)'s events (the
//! runner's sessions do, and so do the bindings' host sessions); the facade subscribes to it.
//!
//! Invariants:
//! - Events are numbered (`seq`) and delivered to every subscriber in publish order; publishers
//!   are serialised by one async lock, so concurrent publishers cannot interleave a delivery.
//! - No event is ever dropped for a live subscriber: [`EventHub::publish`] waits for room in every
//!   subscriber's queue, so a slow subscriber slows the producer and memory stays bounded by
//!   `capacity` events per subscriber. A subscriber whose stream was dropped is forgotten.
//! - [`EventHub::try_publish`] never blocks: it reports [`HubFull`] (delivering to nobody) when
//!   any queue lacks room.
//! - Hosts that cannot await (the bindings' `EventHub.publish`) publish through the bindings' publisher (`binding::publisher`):
//!   in order, without waiting, with the bounded back-pressure of [`pace`](crate::binding::pace).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::mpsc;

use crate::harness::Event;
use crate::host::EventStream;

/// The default queue length per subscriber.
pub const DEFAULT_SUBSCRIBER_CAPACITY: usize = 256;

/// A subscriber's queue had no room; nothing was delivered. Carries the event back.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("a subscriber's queue is full")]
pub struct HubFull(pub Box<Event>);

/// Fan-out of one session's events.
pub struct EventHub {
    /// Serialises publishers so delivery order is publish order.
    order: tokio::sync::Mutex<u64>,
    /// The `seq` the next event will get (a lock-free copy of `order`'s, for [`EventHub::published`]).
    next_seq: AtomicU64,
    /// Copy-on-write list of subscriber queues.
    subscribers: Mutex<Arc<Vec<mpsc::Sender<Event>>>>,
    capacity: usize,
}

impl std::fmt::Debug for EventHub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventHub")
            .field("subscribers", &self.subscriber_count())
            .field("capacity", &self.capacity)
            .finish_non_exhaustive()
    }
}

impl Default for EventHub {
    fn default() -> Self {
        Self::new(DEFAULT_SUBSCRIBER_CAPACITY)
    }
}

impl EventHub {
    /// A hub whose subscribers each queue at most `capacity` events.
    pub fn new(capacity: usize) -> Self {
        Self::continuing(capacity, 0)
    }

    /// Like [`EventHub::new`], numbering the first event `next_seq`: a session reopened from its
    /// journal continues its numbering where the journal ends.
    pub fn continuing(capacity: usize, next_seq: u64) -> Self {
        Self {
            order: tokio::sync::Mutex::new(next_seq),
            next_seq: AtomicU64::new(next_seq),
            subscribers: Mutex::new(Arc::new(Vec::new())),
            capacity: capacity.max(1),
        }
    }

    /// A new subscription receiving every event published from now on.
    pub fn subscribe(&self) -> EventStream {
        let (tx, rx) = mpsc::channel(self.capacity);
        let mut subscribers = self.subscribers.lock().unwrap_or_else(PoisonError::into_inner);
        // The list is copied here anyway: subscriptions dropped since (the last prompt's) go now,
        // rather than costing the next delivery a clone of its event and a second copy.
        let subscribers = Arc::make_mut(&mut subscribers);
        subscribers.retain(|tx| !tx.is_closed());
        subscribers.push(tx);
        Box::pin(ReceiverStream(rx))
    }

    /// The `seq` the next event will get: every event numbered so far has a smaller one. Lets a
    /// host order its calls to the client after the updates of what it published (see
    /// [`Client::in_order_with`](crate::client::Client::in_order_with)).
    pub fn published(&self) -> u64 {
        self.next_seq.load(Ordering::Acquire)
    }

    /// How many subscriptions are alive.
    pub fn subscriber_count(&self) -> usize {
        self.snapshot().iter().filter(|tx| !tx.is_closed()).count()
    }

    fn snapshot(&self) -> Arc<Vec<mpsc::Sender<Event>>> {
        self.subscribers.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    fn forget_closed(&self) {
        let mut subscribers = self.subscribers.lock().unwrap_or_else(PoisonError::into_inner);
        if subscribers.iter().any(mpsc::Sender::is_closed) {
            Arc::make_mut(&mut subscribers).retain(|tx| !tx.is_closed());
        }
    }

    /// Numbers `event` (its `header.seq`) and delivers it to every subscriber, waiting for room.
    pub async fn publish(&self, mut event: Event) {
        // As `number` then `Numbered::deliver`, without moving the event through a `Numbered`:
        // this is the path of every streamed token.
        let mut seq = match self.order.try_lock() {
            Ok(seq) => seq,
            Err(_) => self.order.lock().await,
        };
        self.stamp(&mut seq, &mut event);
        self.deliver_all(event).await;
        drop(seq);
    }

    /// Delivers a numbered event to every subscriber, waiting for room (the caller holds the
    /// publish order).
    async fn deliver_all(&self, event: Event) {
        let subscribers = self.snapshot();
        let mut saw_closed = false;
        if let Some((last, others)) = subscribers.split_last() {
            for tx in others {
                saw_closed |= deliver(tx, event.clone()).await;
            }
            saw_closed |= deliver(last, event).await;
        }
        if saw_closed {
            self.forget_closed();
        }
    }

    /// Numbers `event` and holds the publish order until the returned [`Numbered`] is delivered
    /// (or dropped): a durable host (the runner) journals the numbered event, and may still change it, before
    /// anyone receives it. What happens between numbering and delivery is therefore in publish
    /// order too. Dropping a [`Numbered`] delivers nothing; its `seq` stays used.
    pub async fn number(&self, event: Event) -> Numbered<'_> {
        // Uncontended (the usual case): no lock future to build.
        match self.try_number(event) {
            Ok(numbered) => numbered,
            Err(mut event) => {
                let mut seq = self.order.lock().await;
                self.stamp(&mut seq, &mut event);
                Numbered { hub: self, _order: seq, event }
            }
        }
    }

    /// Like [`EventHub::number`] but never waits: hands the event back, unnumbered, while another
    /// publish is in progress.
    #[allow(clippy::result_large_err, reason = "`Ok` holds the event as well: boxing `Err` saves no room")]
    pub fn try_number(&self, mut event: Event) -> Result<Numbered<'_>, Event> {
        let Ok(mut seq) = self.order.try_lock() else { return Err(event) };
        self.stamp(&mut seq, &mut event);
        Ok(Numbered { hub: self, _order: seq, event })
    }

    /// Like [`EventHub::publish`] but never waits: fails with [`HubFull`], delivering to nobody,
    /// when another publish is in progress or any subscriber's queue is full.
    pub fn try_publish(&self, mut event: Event) -> Result<(), HubFull> {
        let Ok(mut seq) = self.order.try_lock() else {
            return Err(HubFull(Box::new(event)));
        };
        let subscribers = self.snapshot();
        if !has_room(&subscribers) {
            return Err(HubFull(Box::new(event)));
        }
        self.stamp(&mut seq, &mut event);
        self.send_all(&subscribers, event);
        Ok(())
    }

    /// Gives `event` the next `seq`, `seq` being the publish order's count (held by the caller).
    fn stamp(&self, seq: &mut u64, event: &mut Event) {
        event.header.seq = *seq;
        *seq += 1;
        self.next_seq.store(*seq, Ordering::Release);
    }

    /// Sends a numbered event to every subscriber without waiting (the caller holds the publish
    /// order and has seen room in every live queue).
    fn send_all(&self, subscribers: &[mpsc::Sender<Event>], event: Event) {
        let mut saw_closed = false;
        if let Some((last, others)) = subscribers.split_last() {
            for tx in others {
                saw_closed |= tx.try_send(event.clone()).is_err();
            }
            saw_closed |= last.try_send(event).is_err();
        }
        if saw_closed {
            self.forget_closed();
        }
    }
}

/// Whether every live subscriber's queue has room for one more event. Only publishers, serialised
/// by the publish order, fill queues: room seen while holding it stays.
fn has_room(subscribers: &[mpsc::Sender<Event>]) -> bool {
    subscribers.iter().all(|tx| tx.is_closed() || tx.capacity() > 0)
}

/// A numbered event not yet delivered; holds the hub's publish order (see [`EventHub::number`]).
pub struct Numbered<'h> {
    hub: &'h EventHub,
    _order: tokio::sync::MutexGuard<'h, u64>,
    event: Event,
}

impl Numbered<'_> {
    /// The event, carrying its `seq`.
    pub fn event(&self) -> &Event {
        &self.event
    }

    /// Replaces the event's kind (keeping its header, `seq` included).
    pub fn set_kind(&mut self, kind: crate::harness::EventKind) {
        self.event.kind = kind;
    }

    /// Delivers the event to every subscriber, waiting for room, and releases the publish order.
    pub async fn deliver(self) {
        self.hub.deliver_all(self.event).await;
    }

    /// Like [`Numbered::deliver`] but never waits: when a subscriber's queue is full it delivers
    /// to nobody and hands the numbered event back (still holding the publish order).
    #[allow(clippy::result_large_err, reason = "returned straight to the caller, who delivers it at once")]
    pub fn try_deliver(self) -> Result<(), Self> {
        let subscribers = self.hub.snapshot();
        if !has_room(&subscribers) {
            return Err(self);
        }
        self.hub.send_all(&subscribers, self.event);
        Ok(())
    }
}

/// Sends one event, waiting for room only when the queue is full; true if the subscriber is gone.
async fn deliver(tx: &mpsc::Sender<Event>, event: Event) -> bool {
    match tx.try_send(event) {
        Ok(()) => false,
        Err(mpsc::error::TrySendError::Closed(_)) => true,
        Err(mpsc::error::TrySendError::Full(event)) => tx.send(event).await.is_err(),
    }
}

/// A bounded receiver as a stream.
struct ReceiverStream(mpsc::Receiver<Event>);

impl futures::Stream for ReceiverStream {
    type Item = Event;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Event>> {
        self.0.poll_recv(cx)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use futures::StreamExt;

    use super::*;
    use crate::harness::{Cause, Coordinates, EventClass, EventHeader, EventId, EventKind, Visibility};

    /// An event carrying `n` (as its `used`), for the hub's tests and its publisher's.
    pub(crate) fn event(n: u64) -> Event {
        Event {
            header: EventHeader {
                id: EventId::new(n.to_string()),
                seq: 0,
                class: EventClass::Ephemeral,
                visibility: Visibility::Public,
                cause: Cause::default(),
                coordinates: Coordinates::default(),
            },
            kind: EventKind::ContextMeasured { used: n, size: 0, cost: None },
        }
    }

    /// The `n` of an [`event`].
    pub(crate) fn used(e: &Event) -> u64 {
        match e.kind {
            EventKind::ContextMeasured { used, .. } => used,
            _ => unreachable!(),
        }
    }

    #[tokio::test]
    async fn every_subscriber_gets_every_event_in_order() {
        let hub = Arc::new(EventHub::new(4));
        let mut a = hub.subscribe();
        let mut b = hub.subscribe();
        let producer = {
            let hub = hub.clone();
            tokio::spawn(async move {
                for n in 0..100 {
                    hub.publish(event(n)).await;
                }
            })
        };
        for n in 0..100 {
            let ea = a.next().await.unwrap();
            assert_eq!((used(&ea), ea.header.seq), (n, n));
            assert_eq!(used(&b.next().await.unwrap()), n);
        }
        producer.await.unwrap();
    }

    #[tokio::test]
    async fn a_slow_subscriber_blocks_the_producer_without_loss() {
        let hub = Arc::new(EventHub::new(2));
        let mut slow = hub.subscribe();
        hub.publish(event(0)).await;
        hub.publish(event(1)).await;
        let blocked = {
            let hub = hub.clone();
            tokio::spawn(async move { hub.publish(event(2)).await })
        };
        tokio::task::yield_now().await;
        assert!(!blocked.is_finished(), "publish must wait for room");
        assert!(matches!(hub.try_publish(event(9)), Err(HubFull(_))));
        assert_eq!(used(&slow.next().await.unwrap()), 0);
        blocked.await.unwrap();
        assert_eq!(used(&slow.next().await.unwrap()), 1);
        assert_eq!(used(&slow.next().await.unwrap()), 2);
    }

    #[tokio::test]
    async fn a_continuing_hub_numbers_from_where_it_was_told() {
        let hub = EventHub::continuing(4, 7);
        let mut sub = hub.subscribe();
        hub.publish(event(0)).await;
        assert!(hub.try_publish(event(1)).is_ok());
        let numbered = hub.number(event(2)).await;
        let seen = [numbered.event().header.seq];
        assert!(hub.try_publish(event(3)).is_err(), "the numbered event holds the publish order");
        numbered.deliver().await;
        let seqs: Vec<u64> =
            [sub.next().await, sub.next().await, sub.next().await].into_iter().map(|e| e.unwrap().header.seq).collect();
        assert_eq!(seqs, [7, 8, 9]);
        assert_eq!(seen, [9], "the hook sees the event numbered");
    }

    #[tokio::test]
    async fn numbering_and_delivering_without_waiting_keep_the_publish_order() {
        let hub = Arc::new(EventHub::new(1));
        let mut sub = hub.subscribe();
        let first = hub.try_number(event(0)).expect("the order is free");
        assert!(hub.try_number(event(9)).is_err(), "the first event holds the order");
        assert!(first.try_deliver().is_ok(), "the queue has room");
        let second = hub.try_number(event(1)).expect("delivered: the order is free again");
        let second = second.try_deliver().expect_err("the queue is full: nothing delivered");
        assert!(hub.try_number(event(9)).is_err(), "handed back, it still holds the order");
        let third = tokio::spawn({
            let hub = hub.clone();
            async move { hub.publish(event(2)).await }
        });
        assert_eq!(used(&sub.next().await.unwrap()), 0);
        second.deliver().await;
        let rest = [sub.next().await.unwrap(), sub.next().await.unwrap()];
        assert_eq!(rest.iter().map(|e| (used(e), e.header.seq)).collect::<Vec<_>>(), [(1, 1), (2, 2)]);
        third.await.unwrap();
    }

    #[tokio::test]
    async fn dropped_subscribers_are_forgotten() {
        let hub = EventHub::new(1);
        let kept = hub.subscribe();
        drop(hub.subscribe());
        hub.publish(event(0)).await;
        assert_eq!(hub.subscriber_count(), 1);
        assert!(hub.try_publish(event(1)).is_err(), "the kept subscriber is full");
        drop(kept);
        assert!(hub.try_publish(event(2)).is_ok(), "no live subscriber: nothing to wait for");
    }

    #[tokio::test]
    async fn a_new_subscription_clears_the_ended_ones_out() {
        // One prompt's subscription ends, the next prompt's begins: the first delivery after it
        // must not find (and clone its event for) the ended one.
        let hub = EventHub::new(4);
        drop(hub.subscribe());
        let mut next = hub.subscribe();
        assert_eq!(hub.snapshot().len(), 1, "only the live subscription is listed");
        hub.publish(event(0)).await;
        assert_eq!(used(&next.next().await.unwrap()), 0);
    }
}
