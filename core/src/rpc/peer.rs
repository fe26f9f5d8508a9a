//! The sending half of a connection: one ordered writer and the table of our pending requests.
//!
//! Every outgoing message — responses, notifications, our own requests — is serialised by its
//! producer and queued on one bounded channel that a single writer task drains in order, so
//! per-session updates keep their emission order and a slow reader on the other end slows the
//! producers down instead of growing a queue (memory stays bounded).
//!
//! One exception to the queue: a request of ours made while the connection is quiet — no line
//! unwritten, no other request of ours awaiting its answer — is written by its producer itself
//! when the transport allows it (the connection's outlet, `rpc/outlet.rs`): the client gets it
//! without a hand-over to the writer's thread, and there was nothing to batch it with.
//!
//! Our own requests wait in one pending table keyed by the id we allocated. When the peer's
//! incoming side ends, `Peer::fail_pending` fails every waiter with "connection closed" instead
//! of leaving it hanging. A waiter dropped before its answer arrives (its caller was cancelled)
//! removes itself and tells the peer with `$/cancel_request`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use super::message::{Answer, Params, notification_line, request_line, response_line};
use super::outlet::Outlet;
use crate::acp::RequestId;
use crate::error::{Error, ErrorExt};

/// How many serialised messages may wait for the writer before producers are slowed down.
pub(crate) const OUTGOING_QUEUE: usize = 512;

type Waiter = oneshot::Sender<Result<Params, Error>>;

/// The connection was closed: nothing more can be sent or received.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("connection closed")]
pub struct ConnectionClosed;

/// Why one of our requests got no result.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(crate) enum RequestError {
    /// The peer answered with this error object.
    #[error("the peer answered an error ({}): {}", i32::from(.0.code), .0.message)]
    Rejected(Error),
    /// The connection closed before an answer came (or before the request could be sent).
    #[error("connection closed")]
    Closed(#[from] ConnectionClosed),
}

impl From<ConnectionClosed> for Error {
    fn from(_: ConnectionClosed) -> Self {
        Error::internal_msg("connection closed")
    }
}

/// A handle for sending to the peer. Cheap to clone.
#[derive(Clone)]
pub(crate) struct Peer {
    inner: Arc<PeerInner>,
}

struct PeerInner {
    tx: mpsc::Sender<Vec<u8>>,
    /// Set once a line someone waits on is queued — a response, or a request of ours; the writer
    /// takes it (see `write_loop`).
    awaited: Arc<AtomicBool>,
    /// Where the writer's lines go; counts what is queued (see `rpc/outlet.rs`).
    outlet: Arc<Outlet>,
    pending: Mutex<HashMap<i64, Waiter>>,
    next_id: AtomicI64,
    incoming_closed: AtomicBool,
}

impl std::fmt::Debug for Peer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Peer").finish_non_exhaustive()
    }
}

impl Peer {
    /// A peer queueing its lines on `tx` for the writer of `outlet`, raising `awaited` after each
    /// response and each request of ours it queues.
    pub(crate) fn new(tx: mpsc::Sender<Vec<u8>>, awaited: Arc<AtomicBool>, outlet: Arc<Outlet>) -> Self {
        Self {
            inner: Arc::new(PeerInner {
                tx,
                awaited,
                outlet,
                pending: Mutex::new(HashMap::new()),
                next_id: AtomicI64::new(0),
                incoming_closed: AtomicBool::new(false),
            }),
        }
    }

    /// From now on every line goes through the writer (the connection's lines are rewritten).
    pub(crate) fn forbid_direct_writes(&self) {
        self.inner.outlet.forbid_direct();
    }

    /// Queues one pre-serialised line, waiting while the writer's queue is full.
    pub(crate) async fn send_line(&self, line: Vec<u8>) -> Result<(), ConnectionClosed> {
        // Room is almost always there: taking it directly is much cheaper than the waiting send.
        // (Waiting senders get freed room first, so this never overtakes one.)
        let line = match self.try_send_line(line) {
            Ok(()) => return Ok(()),
            Err(None) => return Err(ConnectionClosed),
            Err(Some(line)) => line,
        };
        // Counted while it waits: a direct write must not overtake it (see `super::outlet`).
        let counted = Counted::new(&self.inner.outlet);
        self.inner.tx.send(line).await.map_err(|_| ConnectionClosed)?;
        counted.keep();
        Ok(())
    }

    /// Tells the writer that everything is answered: it writes what is queued, refuses more and
    /// stops. The mark is an empty line, which no message is (each ends with `\n`).
    pub(crate) async fn end_output(&self) {
        let _ = self.send_line(Vec::new()).await;
    }

    /// Sends a notification.
    pub(crate) async fn notify<P: Serialize>(&self, method: &str, params: &P) -> Result<(), ConnectionClosed> {
        self.send_line(notification_line(method, params)).await
    }

    /// Sends a response to one of the peer's requests.
    pub(crate) async fn respond(
        &self,
        id: &RequestId,
        outcome: &Result<Answer, Error>,
    ) -> Result<(), ConnectionClosed> {
        self.send_awaited_line(response_line(id, outcome)).await
    }

    /// Queues a line (as [`Peer::send_line`]) that someone now waits on — the peer for our
    /// response (its request's output is complete), or we for the peer's answer to our request —
    /// and tells the writer so: nothing more is coming from that producer until then, and the
    /// writer flushes once its queue is dry instead of waiting a scheduler round for more.
    pub(crate) async fn send_awaited_line(&self, line: Vec<u8>) -> Result<(), ConnectionClosed> {
        self.send_line(line).await?;
        self.inner.awaited.store(true, Ordering::Release);
        Ok(())
    }

    /// Sends a request and waits for its answer, decoded as `R`.
    ///
    /// Fails with the peer's error, with "connection closed" when the connection ends first, or
    /// with `-32603` when the answer does not decode. Dropping the returned future before the answer
    /// arrives sends `$/cancel_request` for it.
    pub(crate) async fn request<P: Serialize, R: DeserializeOwned>(
        &self,
        method: &str,
        params: &P,
    ) -> Result<R, Error> {
        let result = self.request_params(method, params).await.map_err(|e| match e {
            RequestError::Rejected(error) => error,
            RequestError::Closed(closed) => closed.into(),
        })?;
        // Straight from the text when the connection checked it; a failure is decided again from
        // the value, so the message is the same either way.
        if let Some(decoded) = result.decode_checked() {
            return Ok(decoded);
        }
        serde_json::from_value(result.into_value())
            .map_err(|e| Error::internal_msg(format!("malformed `{method}` response from the client: {e}")))
    }

    /// Sends a request and waits for its raw result, telling the peer's error answer apart from
    /// the connection closing. Dropping the returned future before the answer arrives sends
    /// `$/cancel_request` for it.
    pub(crate) async fn request_value<P: Serialize>(&self, method: &str, params: &P) -> Result<Value, RequestError> {
        self.request_params(method, params).await.map(Params::into_value)
    }

    /// [`Peer::request_value`] with the result as the connection read it: its checked text when
    /// the line took the fast path of [`classify`](super::message::classify), so that a typed
    /// decoding parses it once.
    pub(crate) async fn request_params<P: Serialize>(&self, method: &str, params: &P) -> Result<Params, RequestError> {
        self.begin_request(method, params)?.answer().await
    }

    /// Sends a request now, on the calling thread, and returns the request to await its answer
    /// with. On a quiet connection — nothing queued for the writer unwritten, no other request
    /// of ours awaiting its answer — the line is written to the transport at once when the
    /// transport allows it (see `rpc/outlet.rs`); otherwise it is queued, or, when the queue is
    /// full, kept for [`OutgoingRequest::answer`] to queue with back-pressure.
    pub(crate) fn begin_request<P: Serialize>(
        &self,
        method: &str,
        params: &P,
    ) -> Result<OutgoingRequest, ConnectionClosed> {
        let number = self.inner.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        let quiet = {
            let mut pending = self.lock_pending();
            if self.inner.incoming_closed.load(Ordering::Acquire) {
                return Err(ConnectionClosed);
            }
            let quiet = pending.is_empty();
            pending.insert(number, tx);
            quiet
        };
        let mut guard = PendingGuard { peer: self.clone(), number, sent: false, answered: false };
        let line = request_line(&RequestId::Number(number), method, params);
        let unsent = if quiet && self.inner.outlet.write_now(&line) {
            None
        } else {
            match self.try_send_line(line) {
                Ok(()) => {
                    self.inner.awaited.store(true, Ordering::Release);
                    None
                }
                Err(Some(line)) => Some(line),
                Err(None) => return Err(ConnectionClosed),
            }
        };
        guard.sent = unsent.is_none();
        Ok(OutgoingRequest { guard, unsent, rx })
    }

    /// A request line with a fresh id whose answer nobody will await: when it comes it is dropped
    /// (logged at debug). For clean-up calls that must go out exactly once whatever happens next —
    /// also while the connection is closing, when the peer may still read what we write but
    /// answers nothing more. Queue it with [`Peer::send_line`] or [`Peer::try_send_line`].
    pub(crate) fn unawaited_request_line<P: Serialize>(&self, method: &str, params: &P) -> Vec<u8> {
        let number = self.inner.next_id.fetch_add(1, Ordering::Relaxed);
        request_line(&RequestId::Number(number), method, params)
    }

    /// Queues one pre-serialised line without waiting; a full queue hands it back.
    pub(crate) fn try_send_line(&self, line: Vec<u8>) -> Result<(), Option<Vec<u8>>> {
        // Counted before the writer can see it (see `super::outlet`).
        let counted = Counted::new(&self.inner.outlet);
        match self.inner.tx.try_send(line) {
            Ok(()) => {
                counted.keep();
                Ok(())
            }
            Err(mpsc::error::TrySendError::Full(line)) => Err(Some(line)),
            Err(mpsc::error::TrySendError::Closed(_)) => Err(None),
        }
    }

    /// Routes a response from the peer to its waiter. Unknown ids are logged and dropped.
    pub(crate) fn complete(&self, id: &RequestId, outcome: Result<Params, Error>) {
        let waiter = match id {
            RequestId::Number(n) => self.lock_pending().remove(n),
            _ => None,
        };
        if let Some(waiter) = waiter {
            let _ = waiter.send(outcome);
        } else if matches!(id, RequestId::Number(n) if (0..self.inner.next_id.load(Ordering::Relaxed)).contains(n)) {
            // Ours, but no longer awaited: typically a late answer to a request we cancelled.
            tracing::debug!(%id, "response to a finished request; dropped");
        } else {
            tracing::warn!(%id, "response to a request never sent; dropped");
        }
    }

    /// Fails every waiter with "connection closed" (by dropping it) and refuses new requests.
    pub(crate) fn fail_pending(&self) {
        let drained: Vec<Waiter> = {
            let mut pending = self.lock_pending();
            self.inner.incoming_closed.store(true, Ordering::Release);
            pending.drain().map(|(_, w)| w).collect()
        };
        drop(drained);
    }

    /// Whether the peer's incoming side has ended (it will answer nothing more).
    pub(crate) fn is_closed(&self) -> bool {
        self.inner.incoming_closed.load(Ordering::Acquire)
    }

    /// How many of our requests await an answer.
    pub(crate) fn pending_requests(&self) -> usize {
        self.lock_pending().len()
    }

    fn lock_pending(&self) -> std::sync::MutexGuard<'_, HashMap<i64, Waiter>> {
        self.inner.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A request of ours on its way ([`Peer::begin_request`]). Dropping it before its answer arrives
/// sends `$/cancel_request` for it.
#[must_use = "dropping the request abandons it"]
pub(crate) struct OutgoingRequest {
    guard: PendingGuard,
    /// The line, when the writer's queue was full: queued by [`OutgoingRequest::answer`].
    unsent: Option<Vec<u8>>,
    rx: oneshot::Receiver<Result<Params, Error>>,
}

impl OutgoingRequest {
    /// The request's id.
    #[cfg(test)]
    pub(crate) fn number(&self) -> i64 {
        self.guard.number
    }

    /// Waits for the answer (queueing the line first if it is not queued yet).
    pub(crate) async fn answer(mut self) -> Result<Params, RequestError> {
        if let Some(line) = self.unsent.take() {
            self.guard.peer.send_awaited_line(line).await?;
            self.guard.sent = true;
        }
        // A dropped sender is the connection closing (see `fail_pending`).
        let outcome = (&mut self.rx).await.map_err(|_| RequestError::Closed(ConnectionClosed))?;
        self.guard.answered = true;
        outcome.map_err(RequestError::Rejected)
    }
}

/// Removes an abandoned waiter and tells the peer, when it was sent the request, that we no
/// longer need the answer.
struct PendingGuard {
    peer: Peer,
    number: i64,
    sent: bool,
    answered: bool,
}

impl Drop for PendingGuard {
    fn drop(&mut self) {
        if self.answered || self.peer.lock_pending().remove(&self.number).is_none() || !self.sent {
            return;
        }
        let line = notification_line("$/cancel_request", &serde_json::json!({ "requestId": self.number }));
        // Best effort and never blocking in a destructor: a full queue means the peer is not
        // reading, and the cancellation is advisory.
        let _ = self.peer.try_send_line(line);
    }
}

/// A line counted as queued for the writer ([`Outlet::queueing`]) until [`Counted::keep`]:
/// uncounted again when it could not be queued after all (a refusal, or a waiting send dropped).
struct Counted<'a> {
    outlet: &'a Outlet,
    kept: bool,
}

impl<'a> Counted<'a> {
    fn new(outlet: &'a Outlet) -> Self {
        outlet.queueing();
        Self { outlet, kept: false }
    }

    /// The line is queued: the writer uncounts it once flushed.
    fn keep(mut self) {
        self.kept = true;
    }
}

impl Drop for Counted<'_> {
    fn drop(&mut self) {
        if !self.kept {
            self.outlet.written(1);
        }
    }
}
