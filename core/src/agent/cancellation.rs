//! A request's cancellation: what the client asked (`session/cancel`, `$/cancel_request`,
//! `session/close`) and the grace period a cancelled turn gets to end on its own.
//!
//! Shared by every handler that waits on a host while the client may cancel: the prompt's drain,
//! permission round trips, `/compact`, and the host calls of session establishment.

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::error::{Error, ErrorExt};

/// Watches the prompt's two cancellation sources and the grace deadline.
pub(crate) struct Cancellation<'a> {
    prompt: &'a CancellationToken,
    request: &'a CancellationToken,
    deadline: Option<Instant>,
    grace: std::time::Duration,
}

impl<'a> Cancellation<'a> {
    pub(crate) fn new(
        prompt: &'a CancellationToken,
        request: &'a CancellationToken,
        grace: std::time::Duration,
    ) -> Self {
        Self { prompt, request, deadline: None, grace }
    }

    /// Whether cancellation was requested (and noticed).
    pub(crate) fn requested(&self) -> bool {
        self.deadline.is_some() || self.prompt.is_cancelled() || self.request.is_cancelled()
    }

    /// Resolves when a not-yet-noticed cancellation arrives.
    pub(crate) async fn arrives(&self) {
        tokio::select! {
            // Either will do: no need to pay for picking one at random.
            biased;
            () = self.prompt.cancelled() => {}
            () = self.request.cancelled() => {}
        }
    }

    /// Notes the cancellation and starts the grace period.
    pub(crate) fn notice(&mut self) {
        if self.deadline.is_none() {
            self.deadline = Some(Instant::now() + self.grace);
        }
    }

    pub(crate) fn noticed(&self) -> bool {
        self.deadline.is_some()
    }

    /// Resolves when the cancellation needs attention: when it arrives, until it is noticed; then
    /// when the grace period is over. One future for both (only one can be awaited at a time), so
    /// that a select on it stays small.
    pub(crate) async fn attention(&self) -> Attention {
        if self.noticed() {
            self.expired().await;
            Attention::Expired
        } else {
            self.arrives().await;
            Attention::Arrived
        }
    }

    /// Resolves when the grace period is over (never, before cancellation).
    pub(crate) async fn expired(&self) {
        match self.deadline {
            Some(deadline) => tokio::time::sleep_until(deadline).await,
            None => std::future::pending().await,
        }
    }
}

/// What [`Cancellation::attention`] resolved with.
pub(crate) enum Attention {
    /// A cancellation arrived (not noticed yet).
    Arrived,
    /// The grace period after the noticed cancellation is over.
    Expired,
}

/// Awaits a host call that the client may cancel with `$/cancel_request`: `-32800` (the host's
/// future dropped) when the cancellation comes first. Host calls must therefore be cancel-safe.
pub(crate) async fn cancellable<T>(
    cancelled: &CancellationToken,
    method: &str,
    call: impl std::future::Future<Output = Result<T, Error>>,
) -> Result<T, Error> {
    tokio::select! {
        biased;
        () = cancelled.cancelled() => Err(Error::cancelled_msg(format!("`{method}` was cancelled"))),
        result = call => result,
    }
}
