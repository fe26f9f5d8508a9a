//! A host's calls to the client ordered after the updates of what its session published, when the
//! session's hub is known only once the host returned the session.
//!
//! A session-opening call ([`SessionHost::new_session`](crate::host::SessionHost::new_session),
//! `load_session`, `resume_session`) hands the host the session's handle on the client before the
//! session exists; a binding's host makes the session's [`EventHub`] itself and hands it back
//! with the session. So the handle the binding gives the host is ordered
//! ([`Client::in_order_with`]) after a hub that is filled in later: [`session_client`] makes the
//! handle and an empty [`HubSlot`], and the binding puts the hub in the slot
//! ([`HubSlot::set`]) when it adapts the returned session. Until then — and once the hub is gone —
//! the host has published nothing the handle waits for.
//!
//! Here rather than in the public API: only the bindings need it. A Rust host makes its hub
//! before it hands the handle out, so it passes the hub's
//! [`published`](EventHub::published) to [`Client::in_order_with`] itself.

use std::sync::{Arc, OnceLock, Weak};

use crate::client::Client;
use crate::host::Setup;
use crate::hub::EventHub;

/// Where a session-opening call's session will have its hub: what the handle of
/// [`session_client`] orders its calls after (see the module doc). Holds the hub weakly: the
/// session owns it.
#[derive(Debug, Default)]
pub struct HubSlot(Arc<OnceLock<Weak<EventHub>>>);

impl HubSlot {
    /// The hub the returned session publishes to: from now on the handle's calls wait for the
    /// updates of what it published before them. Only the first hub set counts.
    pub fn set(&self, hub: &Arc<EventHub>) {
        let _ = self.0.set(Arc::downgrade(hub));
    }

    /// The `seq` the hub's next event will get; 0 before it is set and once it is gone.
    fn published(&self) -> u64 {
        self.0.get().and_then(Weak::upgrade).map_or(0, |hub| hub.published())
    }
}

/// The session's handle on the client to hand a host with `setup`, its calls ordered after the
/// hub that goes in the returned slot (see the module doc).
pub fn session_client(setup: &Setup) -> (Client, HubSlot) {
    let slot = HubSlot::default();
    let hub = HubSlot(slot.0.clone());
    let published = Arc::new(move || hub.published());
    (setup.client().in_order_with(published), slot)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_slot_reads_nothing_published_until_set_and_after_the_hub_is_gone() {
        let slot = HubSlot::default();
        let published = || slot.published();
        assert_eq!(published(), 0);
        let hub = Arc::new(EventHub::continuing(4, 7));
        slot.set(&hub);
        assert_eq!(published(), 7);
        slot.set(&Arc::new(EventHub::continuing(4, 9)));
        assert_eq!(published(), 7, "the first hub set counts");
        drop(hub);
        assert_eq!(published(), 0);
    }
}
