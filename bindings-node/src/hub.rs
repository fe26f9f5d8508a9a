//! `EventHub`: the event queue a JS live session publishes to, and the back-pressure signal
//! shared with the turn API.
//!
//! Publishing is a cheap call: the event is converted and queued for a Rust pump that delivers
//! it to the core's [`EventHub`] in order. The call returns `null` while the backlog is short and
//! a Promise that resolves once it has drained when it is long; awaiting the result (which is
//! cheap either way) is how a producer follows the client's pace.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use acp_facade::harness::Event;
use acp_facade::hub::EventHub;
use napi::Env;
use napi::bindgen_prelude::PromiseRaw;
use napi_derive::napi;
use tokio::sync::{Notify, mpsc};

use crate::error::{Code, Result, js_error, recode};
use crate::harness::event_from_json;

/// Queued items above which a producer is handed a Promise to await.
pub const HIGH_WATER: usize = 1024;
/// Queued items below which that Promise resolves.
pub const LOW_WATER: usize = 256;

/// How many queued items a Rust consumer has not taken yet.
#[derive(Debug, Default)]
pub struct Backlog {
    depth: AtomicUsize,
    drained: Notify,
}

impl Backlog {
    /// Counts one item about to be queued (count it before queueing: the consumer may take it
    /// at once); whether the producer should wait.
    pub fn added(&self) -> bool {
        self.depth.fetch_add(1, Ordering::AcqRel).saturating_add(1) >= HIGH_WATER
    }

    /// Uncounts an item that could not be queued after all.
    pub fn not_added(&self) {
        self.depth.fetch_sub(1, Ordering::AcqRel);
    }

    /// Counts one taken item.
    pub fn took(&self) {
        let left = self.depth.fetch_sub(1, Ordering::AcqRel).wrapping_sub(1);
        // The depth falls one by one, so it passes the low-water mark exactly here; a waiter
        // that arrives later sees the short backlog itself.
        if left == LOW_WATER {
            self.drained.notify_waiters();
        }
    }

    /// Resolves once the backlog is short again.
    pub async fn drained(&self) {
        loop {
            let notified = self.drained.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.depth.load(Ordering::Acquire) <= LOW_WATER {
                return;
            }
            notified.await;
        }
    }

    /// `null`, or a Promise for [`Backlog::drained`] when the producer should wait.
    pub fn pace<'env>(self: &Arc<Self>, env: &'env Env, wait: bool) -> Result<Option<PromiseRaw<'env, ()>>> {
        if !wait {
            return Ok(None);
        }
        let backlog = self.clone();
        env.spawn_future(async move {
            backlog.drained().await;
            Ok(())
        })
        .map(Some)
        .map_err(recode)
    }
}

/// The events of one live session. Publish harness events to it; the agent subscribes to it.
#[napi(js_name = "EventHub")]
pub struct JsEventHub {
    hub: Arc<EventHub>,
    tx: mpsc::UnboundedSender<Event>,
    backlog: Arc<Backlog>,
}

#[napi]
impl JsEventHub {
    /// A hub whose subscribers each queue at most `capacity` events.
    /// @default 256
    #[napi(constructor)]
    pub fn new(capacity: Option<u32>) -> Self {
        let hub =
            Arc::new(EventHub::new(capacity.map_or(acp_facade::hub::DEFAULT_SUBSCRIBER_CAPACITY, |c| c as usize)));
        let (tx, mut rx) = mpsc::unbounded_channel::<Event>();
        let backlog = Arc::new(Backlog::default());
        let pump_hub = hub.clone();
        let pump_backlog = backlog.clone();
        napi::bindgen_prelude::spawn(async move {
            while let Some(event) = rx.recv().await {
                pump_backlog.took();
                pump_hub.publish(event).await;
            }
        });
        Self { hub, tx, backlog }
    }

    /// Publishes one event, in order. Returns `null`, or a Promise to await when the client
    /// reads slower than the host publishes.
    #[napi(ts_args_type = "event: HarnessEvent", ts_return_type = "Promise<void> | null")]
    pub fn publish<'env>(&self, env: &'env Env, event: serde_json::Value) -> Result<Option<PromiseRaw<'env, ()>>> {
        let event = event_from_json(event).map_err(|e| js_error(Code::InvalidArg, e))?;
        let wait = self.backlog.added();
        if self.tx.send(event).is_err() {
            self.backlog.not_added();
            return Err(js_error(Code::Internal, "the event hub is closed"));
        }
        self.backlog.pace(env, wait)
    }

    /// How many subscriptions are alive.
    #[napi(getter)]
    pub fn subscriber_count(&self) -> u32 {
        u32::try_from(self.hub.subscriber_count()).unwrap_or(u32::MAX)
    }
}

impl JsEventHub {
    /// The core hub.
    pub fn hub(&self) -> Arc<EventHub> {
        self.hub.clone()
    }
}
