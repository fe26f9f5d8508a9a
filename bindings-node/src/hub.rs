//! `EventHub`: the core's [`EventHub`] a JS live session publishes to, through the core's
//! [`Publisher`] (in order, without awaiting; bounded back-pressure, see [`crate::pace`]).
//!
//! `publish` converts the event and hands it to the publisher. It returns a Promise, already
//! resolved while the client keeps up, resolved once the backlog has drained when it does not;
//! awaiting it is how a producer follows the client's pace.

use std::sync::Arc;

use acp_facade::binding::publisher::Publisher;
use acp_facade::hub::EventHub;
use napi::Env;
use napi::bindgen_prelude::PromiseRaw;
use napi_derive::napi;

use crate::error::{Code, Result, js_error};
use crate::harness::event_from_json;

/// The events of one live session. Publish harness events to it; the agent subscribes to it.
#[napi(js_name = "EventHub")]
pub struct JsEventHub {
    publisher: Publisher,
}

#[napi]
impl JsEventHub {
    /// A hub whose subscribers each queue at most `capacity` events.
    /// @default 256
    #[napi(constructor)]
    pub fn new(capacity: Option<u32>) -> Self {
        let capacity = capacity.map_or(acp_facade::hub::DEFAULT_SUBSCRIBER_CAPACITY, |c| c as usize);
        let publisher = Publisher::new(Arc::new(EventHub::new(capacity)), |pump| {
            napi::bindgen_prelude::spawn(pump);
        });
        Self { publisher }
    }

    /// Publishes one event, in order. Returns a Promise: already resolved, or resolved once the
    /// backlog is down when the client reads slower than the host publishes; `await` it. A
    /// caller that never awaits is refused (throws `ERR_ACP_QUEUE_FULL`) at 16384 queued events.
    #[napi(ts_args_type = "event: HarnessEvent", ts_return_type = "Promise<void>")]
    pub fn publish<'env>(&self, env: &'env Env, event: serde_json::Value) -> Result<PromiseRaw<'env, ()>> {
        let event = event_from_json(event).map_err(|e| js_error(Code::InvalidArg, e))?;
        let pace = self
            .publisher
            .publish(event)
            .map_err(|e| crate::pace::refused(e, || js_error(Code::Internal, "the event hub is closed")))?;
        crate::pace::promise(env, pace, || self.publisher.drained())
    }

    /// How many subscriptions are alive.
    #[napi(getter)]
    pub fn subscriber_count(&self) -> u32 {
        u32::try_from(self.publisher.hub().subscriber_count()).unwrap_or(u32::MAX)
    }
}

impl JsEventHub {
    /// The core hub.
    pub fn hub(&self) -> Arc<EventHub> {
        self.publisher.hub().clone()
    }
}
