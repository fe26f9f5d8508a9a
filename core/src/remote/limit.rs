//! How many ACP connections one server holds open at once
//! ([`RemoteConfig::max_connections`](super::RemoteConfig::max_connections)).
//!
//! Invariants: every ACP connection (an HTTP connection from its `initialize` until its agent
//! ended, a WebSocket from its upgrade until it closed) holds one [`Slot`]; a slot is taken
//! before the connection's agent starts and given back when it is dropped, so the slots taken
//! never exceed the limit, whatever the races between requests. A request that would make a
//! connection while every slot is taken is answered `503` with `Retry-After` by the middleware
//! [`check`] before its body is read.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;

use super::Shared;
use super::bridge::CONNECTION_ID;
use super::guard::refuse;

/// The slots of one server.
#[derive(Debug, Default)]
pub(crate) struct Slots(Arc<AtomicUsize>);

/// One connection's slot, given back when dropped.
#[derive(Debug)]
pub(crate) struct Slot(Arc<AtomicUsize>);

impl Slots {
    /// A slot, unless `max` are taken.
    pub(crate) fn take(&self, max: usize) -> Option<Slot> {
        self.0.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |taken| (taken < max).then_some(taken + 1)).ok()?;
        Some(Slot(self.0.clone()))
    }

    /// Whether a slot is free now.
    pub(crate) fn has_room(&self, max: usize) -> bool {
        self.0.load(Ordering::SeqCst) < max
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The answer to a connection over the limit: `503`, try again in a second.
pub(crate) fn full() -> Response {
    let mut response = refuse(StatusCode::SERVICE_UNAVAILABLE, "too many open ACP connections");
    response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    response
}

/// Whether a request would make a new ACP connection: a POST naming none (an `initialize`; any
/// other message is refused for lacking it anyway) or a WebSocket upgrade.
fn makes_a_connection(request: &Request) -> bool {
    let headers = request.headers();
    match *request.method() {
        Method::POST => !headers.contains_key(CONNECTION_ID),
        Method::GET => headers
            .get(header::UPGRADE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.eq_ignore_ascii_case("websocket")),
        _ => false,
    }
}

/// The limit, as axum middleware, after the guard: nothing of a refused request is read.
pub(crate) async fn check(State(shared): State<Arc<Shared>>, request: Request, next: Next) -> Response {
    if makes_a_connection(&request) && !shared.slots.has_room(shared.config.max_connections) {
        tracing::warn!(limit = shared.config.max_connections, "refused a connection: too many open");
        return full();
    }
    next.run(request).await
}
