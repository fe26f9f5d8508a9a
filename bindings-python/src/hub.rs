//! The core's event hub, for Python hosts that implement the host interfaces themselves: a live
//! session publishes its events here, through the core's [`Publisher`] (in order, without
//! awaiting; bounded back-pressure, see [`crate::pace`]), and the facade subscribes.

use std::sync::Arc;

use acp_facade::binding::publisher::Publisher;
use acp_facade::hub::EventHub;
use pyo3::prelude::*;

use crate::harness::extract;

/// A session's event fan-out, for hosts that implement the host interfaces themselves: publish
/// events here; the facade subscribes.
#[pyclass(name = "EventHub", module = "acp_facade._native", frozen)]
pub struct PyEventHub {
    publisher: Publisher,
}

impl PyEventHub {
    /// The core hub.
    pub(crate) fn hub(&self) -> Arc<EventHub> {
        self.publisher.hub().clone()
    }
}

#[pymethods]
impl PyEventHub {
    #[new]
    #[pyo3(signature = (capacity = 256))]
    fn new(capacity: usize) -> Self {
        let publisher = Publisher::new(Arc::new(EventHub::new(capacity)), |pump| {
            crate::runtime().spawn(pump);
        });
        Self { publisher }
    }

    /// Publishes after every event published before; `True` asks the caller to await `drained`
    /// (back-pressure).
    fn publish(&self, event: &Bound<'_, PyAny>) -> PyResult<bool> {
        let event = extract(event, "event")?;
        crate::pace::should_wait(self.publisher.publish(event), "the event hub is closed")
    }

    /// Completes the Python future `future` once the backlog is short again.
    fn drained(&self, future: u64) {
        crate::pace::resolve_when_drained(self.publisher.drained(), future);
    }

    /// How many subscriptions are alive.
    fn subscriber_count(&self) -> usize {
        self.publisher.hub().subscriber_count()
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyEventHub>()
}
