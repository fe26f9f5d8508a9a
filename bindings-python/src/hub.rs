//! The core's event hub, for Python hosts that implement the host interfaces themselves: a live
//! session publishes its events here and the facade subscribes.

use std::sync::Arc;

use acp_facade::hub::EventHub;
use pyo3::prelude::*;

use crate::bridge;
use crate::harness::extract;

/// A session's event fan-out, for hosts that implement the host interfaces themselves: publish
/// events here; the facade subscribes.
#[pyclass(name = "EventHub", module = "acp_facade._native", frozen)]
pub struct PyEventHub {
    pub(crate) hub: Arc<EventHub>,
}

#[pymethods]
impl PyEventHub {
    #[new]
    #[pyo3(signature = (capacity = 256))]
    fn new(capacity: usize) -> Self {
        Self { hub: Arc::new(EventHub::new(capacity)) }
    }

    /// Publishes without waiting; `False` (nothing delivered) when a subscriber's queue is full.
    fn try_publish(&self, event: &Bound<'_, PyAny>) -> PyResult<bool> {
        let event = extract(event, "event")?;
        Ok(self.hub.try_publish(event).is_ok())
    }

    /// Publishes, waiting for room; completes the Python future `future` when delivered.
    fn publish(&self, event: &Bound<'_, PyAny>, future: u64) -> PyResult<()> {
        let event = extract(event, "event")?;
        let hub = self.hub.clone();
        crate::runtime().spawn(async move {
            hub.publish(event).await;
            bridge::resolve_none(future);
        });
        Ok(())
    }

    /// How many subscriptions are alive.
    fn subscriber_count(&self) -> usize {
        self.hub.subscriber_count()
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyEventHub>()
}
