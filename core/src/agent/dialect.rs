//! Which protocol version a connection speaks: decided by its first `initialize`, read by the
//! handlers and by the writer's rewriter (see `v2`).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Whether the connection speaks v2: decided by the first `initialize`, read by the handlers and
/// by the writer's rewriter.
#[derive(Debug, Clone, Default)]
pub(crate) struct Dialect(Arc<AtomicBool>);

impl Dialect {
    /// Whether the connection speaks v2.
    pub(crate) fn is_v2(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }

    /// The connection speaks v2 from now on.
    pub(crate) fn switch_to_v2(&self) {
        self.0.store(true, Ordering::Release);
    }
}
