//! The serve loop: one reader, one ordered notification worker, one task per request, one writer.
//!
//! Concurrency contract (implemented by construction):
//! - The reader never waits on a handler. It classifies each line, runs the handler's synchronous
//!   [`Handler::accept`] step (cheap bookkeeping such as "this prompt is now in flight") and polls
//!   the returned future once: a request answered without waiting is done then, and one that waits
//!   goes on in a task of its own; responses to our own requests are routed straight to their
//!   waiters. A handler that awaits the client (a permission request inside `session/prompt`)
//!   therefore never occupies anything the reader needs to deliver the client's answer.
//! - Notifications get the same two steps: [`Handler::notification`] runs on the reader, in arrival
//!   order (its synchronous part — e.g. `session/cancel` cancelling the prompt in flight — takes
//!   effect before the next line is read, so a cancel can never leak onto a prompt sent after it),
//!   and the futures it returns are awaited one at a time, in arrival order, by a single worker.
//! - Every request gets exactly one response: its handler's result, `-32800` when it was cancelled
//!   with `$/cancel_request` (unless the method answers cancellation itself, as `session/prompt`
//!   does with a `cancelled` stop reason), `-32603` when its handler panicked, `-32600` for a
//!   duplicate of a live id.
//! - When the incoming stream ends, our pending requests are failed, the handler's
//!   [`Handler::disconnected`] runs (the agent closes its sessions), in-flight requests finish and
//!   are answered, and the writer flushes before [`serve`] returns.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use futures::FutureExt;
use futures::future::BoxFuture;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, BufWriter};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::Instrument;

use super::framing::{Frame, LineReader};
use super::message::{Answer, Incoming, IncomingNotification, IncomingRequest, Params, classify, response_line};
use super::outlet::{Locked, Outlet, WholeLineWrite};
use super::peer::{OUTGOING_QUEUE, Peer};
use super::trace::{Direction, WireTrace};
use crate::acp::RequestId;
use crate::error::{Error, ErrorExt};
use crate::panic::panic_message;

/// What a connection needs from the code serving it.
pub(crate) trait Handler: Send + Sync + 'static {
    /// Runs on the reader, in arrival order, for each request (`method` with `params`); returns
    /// the future that answers it, which the reader polls once and which runs concurrently with
    /// everything else from its first wait on. Neither may block.
    fn accept(
        self: Arc<Self>,
        method: &str,
        params: Params,
        cx: RequestContext,
    ) -> BoxFuture<'static, Result<Answer, Error>>;

    /// Whether `method` answers `$/cancel_request` itself (by watching
    /// [`RequestContext::cancelled`]) instead of being answered `-32800`.
    fn answers_cancellation(&self, method: &str) -> bool {
        let _ = method;
        false
    }

    /// Whether `method` is answered before the next message is read (for `initialize`, whose
    /// response must precede everything else the agent sends). Such a handler must be quick.
    fn answers_inline(&self, method: &str) -> bool {
        let _ = method;
        false
    }

    /// Runs on the reader, in arrival order, for each notification; must not block. Whatever it
    /// does synchronously takes effect before the next message is read; the returned future is
    /// then awaited on the notification worker, one at a time, in arrival order.
    fn notification(self: Arc<Self>, notification: IncomingNotification) -> BoxFuture<'static, ()>;

    /// The peer's incoming stream ended; runs before in-flight requests are awaited.
    fn disconnected(self: Arc<Self>) -> BoxFuture<'static, ()> {
        Box::pin(async {})
    }
}

/// Rewrites the lines a connection writes, in order, on the writer task: how a protocol dialect
/// negotiated on the connection (ACP v2) reaches the wire while the agent speaks one vocabulary.
/// Lines written directly by their producers (see [`super::outlet`]) skip it, so a rewriter that
/// starts changing lines must first stop those ([`Peer::forbid_direct_writes`]).
pub(crate) trait LineRewriter: Send + 'static {
    /// Appends to `out` what to write for `line` (`line` itself, others, or nothing).
    fn rewrite(&mut self, line: Vec<u8>, out: &mut Vec<Vec<u8>>);
}

/// Per-request context handed to [`Handler::accept`].
#[derive(Debug, Clone)]
pub(crate) struct RequestContext {
    /// Fires when the peer sends `$/cancel_request` for this request.
    pub cancelled: CancellationToken,
    /// Values kept alive until the response has been queued (see [`RequestContext::keep_until_answered`]).
    kept: Arc<Mutex<Vec<Box<dyn std::any::Any + Send>>>>,
    /// The request's id.
    id: RequestId,
    /// Set once the handler answered early ([`RequestContext::answer_now`]).
    answered: Arc<AtomicBool>,
}

impl RequestContext {
    /// Answers the request now, before its handler's future completes (ACP v2's `session/prompt`
    /// acknowledges, then the turn goes on). The handler's eventual result is then not sent: it
    /// must report its outcome another way. Every request still gets exactly one response.
    ///
    /// The handler queues more lines right behind the response: the writer is not told that the
    /// peer waits, so it does not flush the response alone; the handler queues the last of those
    /// lines with [`Peer::send_awaited_line`], which flushes them all.
    pub(crate) async fn answer_now(&self, peer: &Peer, answer: Answer) {
        if !self.answered.swap(true, Ordering::AcqRel) {
            let _ = peer.send_line(response_line(&self.id, &Ok(answer))).await;
        }
    }

    /// Keeps `value` alive until this request's response is queued on the writer, then drops it.
    /// A handler uses it for state whose release others wait on — e.g. "a prompt is in flight",
    /// which `session/close` waits for — so that the release can never overtake the response.
    pub(crate) fn keep_until_answered(&self, value: impl std::any::Any + Send) {
        self.kept.lock().unwrap_or_else(PoisonError::into_inner).push(Box::new(value));
    }
}

/// Connection settings.
#[derive(Debug, Clone)]
pub(crate) struct ConnectionOptions {
    /// The largest incoming message, in bytes; longer lines are skipped and answered `-32600`.
    pub max_message_size: usize,
    /// Where to record every message in and out (see [`super::trace`]); `None`: no trace.
    pub wire_trace: Option<std::path::PathBuf>,
    /// The bytes read from and written to the transport at a time: large for a pipe to another
    /// process (fewer system calls), small for an in-memory pipe, where a connection's buffers
    /// are most of what an idle connection costs.
    pub io_buffer: usize,
}

/// [`ConnectionOptions::io_buffer`] for a pipe to another process (stdio).
pub(crate) const PROCESS_IO_BUFFER: usize = 64 * 1024;

/// [`ConnectionOptions::io_buffer`] for an in-memory pipe (a remote connection's bridge).
#[cfg(feature = "remote")]
pub(crate) const MEMORY_IO_BUFFER: usize = 4 * 1024;

impl Default for ConnectionOptions {
    fn default() -> Self {
        Self {
            max_message_size: super::framing::DEFAULT_MAX_MESSAGE_SIZE,
            wire_trace: std::env::var_os(super::trace::WIRE_TRACE_ENV).filter(|v| !v.is_empty()).map(Into::into),
            io_buffer: PROCESS_IO_BUFFER,
        }
    }
}

type InFlight = Arc<Mutex<HashMap<RequestId, CancellationToken>>>;

/// Serves one connection until the peer's incoming stream ends and every request is answered.
/// `on_peer` is called once with the connection's [`Peer`] before the first message is read.
/// `direct` (when given) is `writer`'s transport taking whole lines from any thread: a request of ours on a quiet connection is then written by its producer (see
/// [`super::outlet`]).
pub(crate) async fn serve_with<R, W, H>(
    reader: R,
    writer: W,
    direct: Option<Arc<dyn WholeLineWrite>>,
    handler: Arc<H>,
    options: ConnectionOptions,
    rewriter: Option<Box<dyn LineRewriter>>,
    on_peer: impl FnOnce(&Peer),
) -> std::io::Result<()>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
    H: Handler + ?Sized,
{
    let (tx, rx) = mpsc::channel::<Vec<u8>>(OUTGOING_QUEUE);
    let awaited = Arc::new(AtomicBool::new(false));
    let trace = options.wire_trace.as_deref().and_then(|path| match WireTrace::create(path) {
        Ok(trace) => Some(Arc::new(trace)),
        Err(e) => {
            tracing::warn!(path = %path.display(), error = %e, "cannot open the wire trace");
            None
        }
    });
    let outlet = Arc::new(Outlet::new(direct, trace.clone()));
    let peer = Peer::new(tx, awaited.clone(), outlet.clone());
    on_peer(&peer);
    let writer_task =
        tokio::spawn(write_loop(Locked::new(writer, outlet.clone()), rx, awaited, outlet, rewriter, options.io_buffer));

    let (notify_tx, notify_rx) = mpsc::channel::<(String, BoxFuture<'static, ()>)>(OUTGOING_QUEUE);
    let notification_task = tokio::spawn(notification_loop(notify_rx));

    let tasks = TaskTracker::new();
    let in_flight: InFlight = Arc::default();
    let mut lines = LineReader::new(BufReader::with_capacity(options.io_buffer, reader), options.max_message_size);
    let read_result = loop {
        let frame = match lines.next_frame().await {
            Ok(frame) => frame,
            Err(e) => break Err(e),
        };
        let line = match frame {
            Frame::Eof => break Ok(()),
            Frame::Oversize { len } => {
                tracing::warn!(len, limit = options.max_message_size, "dropped an over-size message");
                let error = Error::invalid_request_msg(format!(
                    "message of {len} bytes exceeds the limit of {} bytes",
                    options.max_message_size
                ));
                let _ = peer.respond(&RequestId::Null, &Err(error)).await;
                continue;
            }
            Frame::Line(line) => {
                if let Some(trace) = &trace {
                    trace.record(Direction::In, &line);
                }
                line
            }
        };
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match classify(&line) {
            Err(malformed) => {
                if let Some(error) = malformed.error {
                    tracing::warn!(code = i32::from(error.code), message = %error.message, "malformed message");
                    let _ = peer.respond(&malformed.id, &Err(error)).await;
                }
            }
            Ok(Incoming::Response { id, outcome }) => peer.complete(&id, outcome),
            Ok(Incoming::Notification(n)) if n.method == "$/cancel_request" => {
                cancel_incoming(&in_flight, &n.params.into_value());
            }
            Ok(Incoming::Notification(n)) => {
                let method = n.method.clone();
                match std::panic::catch_unwind(AssertUnwindSafe(|| handler.clone().notification(n))) {
                    Ok(applied) => {
                        if notify_tx.send((method, applied)).await.is_err() {
                            tracing::error!("notification worker stopped");
                        }
                    }
                    Err(panic) => {
                        tracing::error!(method, panic = panic_message(&*panic), "a notification handler panicked");
                    }
                }
            }
            Ok(Incoming::Request(request)) => {
                dispatch(&handler, request, &peer, &in_flight, &tasks).await;
            }
        }
    };
    if let Err(e) = &read_result {
        tracing::warn!(error = %e, "reading from the peer failed; closing");
    }

    // The peer will answer nothing more: release everyone waiting for it.
    peer.fail_pending();
    drop(notify_tx);
    let _ = notification_task.await;
    handler.clone().disconnected().await;
    tasks.close();
    tasks.wait().await;
    // Everything is answered: let the writer drain what is queued, refuse the rest, and stop.
    peer.end_output().await;
    drop(peer);
    match writer_task.await {
        Ok(write_result) => read_result.and(write_result),
        Err(join) => Err(std::io::Error::other(join)),
    }
}

async fn dispatch<H: Handler + ?Sized>(
    handler: &Arc<H>,
    request: IncomingRequest,
    peer: &Peer,
    in_flight: &InFlight,
    tasks: &TaskTracker,
) {
    let IncomingRequest { id, method, params } = request;
    let token = CancellationToken::new();
    let duplicate = match in_flight.lock().unwrap_or_else(PoisonError::into_inner).entry(id.clone()) {
        Entry::Occupied(_) => true,
        Entry::Vacant(entry) => {
            entry.insert(token.clone());
            false
        }
    };
    if duplicate {
        let error = Error::invalid_request_msg(format!("request id {id} is already in flight"));
        let _ = peer.respond(&id, &Err(error)).await;
        return;
    }
    let self_cancelling = handler.answers_cancellation(&method);
    let inline = handler.answers_inline(&method);
    let span = tracing::debug_span!("request", method = %method, id = %id);
    let kept: Arc<Mutex<Vec<Box<dyn std::any::Any + Send>>>> = Arc::default();
    let answered = Arc::new(AtomicBool::new(false));
    let cx =
        RequestContext { cancelled: token.clone(), kept: kept.clone(), id: id.clone(), answered: answered.clone() };
    let future = match std::panic::catch_unwind(AssertUnwindSafe(|| handler.clone().accept(&method, params, cx))) {
        Ok(future) => future,
        Err(panic) => {
            let error = panic_error(&method, &panic_message(&*panic));
            Box::pin(async move { Err(error) })
        }
    };
    let peer = peer.clone();
    let in_flight = in_flight.clone();
    let answer = async move {
        // Written in a block: only the line waits for the send below, not the outcome.
        let line = {
            let guarded = AssertUnwindSafe(future).catch_unwind();
            let outcome = tokio::select! {
                biased;
                outcome = guarded => outcome.unwrap_or_else(|panic| {
                    Err(panic_error(&method, &panic_message(&*panic)))
                }),
                () = token.cancelled(), if !self_cancelling => {
                    Err(Error::cancelled_msg(format!("`{method}` was cancelled")))
                }
            };
            in_flight.lock().unwrap_or_else(PoisonError::into_inner).remove(&id);
            if answered.load(Ordering::Acquire) {
                // Answered early: the outcome was reported another way.
                if let Err(e) = &outcome {
                    tracing::debug!(%id, error = %e.message, "a request answered early ended with an error");
                }
                None
            } else {
                Some(response_line(&id, &outcome))
            }
        };
        if let Some(line) = line {
            let _ = peer.send_awaited_line(line).await;
        }
        // Only now may whatever the handler kept (e.g. its in-flight marker) go.
        drop(std::mem::take(&mut *kept.lock().unwrap_or_else(PoisonError::into_inner)));
    };
    if inline {
        answer.instrument(span).await;
        return;
    }
    // The answer runs here, on the reader, until it first waits, and on a task of its own from
    // then on: a request answered without waiting (a prompt whose turn never waits, a lookup)
    // costs no task — no task cell, no scheduling round — and one that waits (for the host, the
    // client, a full writer queue) never holds the reader. The first poll's waker drops its
    // wake-up; the spawned task polls again at once and registers its own. Boxed: a box moves a
    // pointer on the way into the task's cell, not the whole future.
    let mut answer = Box::pin(answer.instrument(span));
    if answer.as_mut().now_or_never().is_none() {
        tasks.spawn(answer);
    }
}

/// Writes one line (recorded in the wire trace first).
async fn write_line<W: AsyncWrite + Unpin>(
    out: &mut BufWriter<W>,
    outlet: &Outlet,
    line: &[u8],
) -> std::io::Result<()> {
    if let Some(trace) = outlet.trace() {
        trace.record(Direction::Out, line);
    }
    out.write_all(line).await.inspect_err(|e| tracing::warn!(error = %e, "writing to the peer failed"))
}

fn panic_error(method: &str, message: &str) -> Error {
    tracing::error!(method, panic = message, "a handler panicked");
    Error::internal_msg(format!("internal error while handling `{method}`: {message}"))
}

fn cancel_incoming(in_flight: &InFlight, params: &Value) {
    let Some(id) = params.get("requestId").cloned() else {
        tracing::debug!("`$/cancel_request` without a requestId; ignored");
        return;
    };
    let Ok(id) = serde_json::from_value::<RequestId>(id) else {
        return;
    };
    let token = in_flight.lock().unwrap_or_else(PoisonError::into_inner).get(&id).cloned();
    if let Some(token) = token {
        token.cancel();
    } else {
        tracing::debug!(%id, "`$/cancel_request` for an unknown or finished request; ignored");
    }
}

async fn notification_loop(mut rx: mpsc::Receiver<(String, BoxFuture<'static, ()>)>) {
    while let Some((method, applied)) = rx.recv().await {
        if let Err(panic) = AssertUnwindSafe(applied).catch_unwind().await {
            tracing::error!(method, panic = panic_message(&*panic), "a notification handler panicked");
        }
    }
}

/// Unflushed lines that mark the writer's producers as streaming (see [`write_loop`]).
const STREAMING_LINES: usize = 16;
/// Scheduler rounds a streaming writer waits for more lines before it flushes.
const STREAMING_ROUNDS: usize = 3;

/// Writes the queued lines in order until [`Peer::end_output`]'s mark (or until every sender is
/// gone), then refuses new lines, writes those already queued, and flushes.
///
/// When the queue runs dry it flushes — at once if a line someone waits on was queued since the
/// last look (`awaited`, raised by [`Peer::send_awaited_line`]: a response completes its
/// request's output, and a request's producer waits for the answer), otherwise after giving the
/// producers a scheduler round or a few to queue more.
async fn write_loop<W: AsyncWrite + Unpin>(
    writer: W,
    rx: mpsc::Receiver<Vec<u8>>,
    awaited: Arc<AtomicBool>,
    outlet: Arc<Outlet>,
    rewriter: Option<Box<dyn LineRewriter>>,
    io_buffer: usize,
) -> std::io::Result<()> {
    let written = write_lines(writer, rx, &awaited, &outlet, rewriter, io_buffer).await;
    outlet.close();
    written
}

/// [`write_loop`]'s loop; every line it flushes is uncounted from the outlet (see
/// [`super::outlet`]), the end mark excepted.
async fn write_lines<W: AsyncWrite + Unpin>(
    writer: W,
    mut rx: mpsc::Receiver<Vec<u8>>,
    awaited: &AtomicBool,
    outlet: &Outlet,
    mut rewriter: Option<Box<dyn LineRewriter>>,
    io_buffer: usize,
) -> std::io::Result<()> {
    let mut out = BufWriter::with_capacity(io_buffer, writer);
    let mut rewritten = Vec::new();
    let mut batch = Vec::with_capacity(64);
    let mut ended = false;
    // Lines written since the last flush: how busy the producers are.
    let mut unflushed = 0usize;
    loop {
        let received = rx.recv_many(&mut batch, if ended { 1024 } else { 64 }).await;
        if received == 0 {
            break;
        }
        for line in batch.drain(..) {
            if line.is_empty() {
                // The end mark. Senders kept elsewhere (a host's handle) now fail instead of
                // waiting forever; what they queued before is still written.
                rx.close();
                ended = true;
                continue;
            }
            match rewriter.as_mut() {
                None => write_line(&mut out, outlet, &line).await?,
                Some(rewriter) => {
                    rewriter.rewrite(line, &mut rewritten);
                    for line in rewritten.drain(..) {
                        write_line(&mut out, outlet, &line).await?;
                    }
                }
            }
            // Counted per queued line, as the outlet counted them.
            unflushed += 1;
        }
        if !ended && rx.is_empty() {
            // Give producers a chance to queue more before paying for a flush (a write and the
            // peer's wake-up). A notification or two is flushed after one scheduler round; a
            // stream gets a few, since its lines pass through more than one task on their way
            // here. A response ends its request's lines, and a request of ours is followed by
            // nothing of its producer's until the peer answers: one side waits for the other,
            // and a round spent waiting (a poll of the I/O driver, a system call) would gather
            // nothing more of theirs.
            let rounds = if awaited.swap(false, Ordering::AcqRel) {
                0
            } else if unflushed >= STREAMING_LINES {
                STREAMING_ROUNDS
            } else {
                1
            };
            for _ in 0..rounds {
                tokio::task::yield_now().await;
                if !rx.is_empty() {
                    break;
                }
            }
            if rx.is_empty() {
                out.flush().await?;
                outlet.written(unflushed);
                unflushed = 0;
            }
        }
    }
    out.flush().await?;
    outlet.written(unflushed);
    if let Err(e) = out.shutdown().await {
        // Stdout cannot always be shut down; what matters is that it was flushed.
        tracing::debug!(error = %e, "shutting the writer down failed");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::pin::Pin;
    use std::task::{Context, Poll};

    use super::*;

    /// A transport that keeps what was flushed to it (the writer's buffer reaches it on flush).
    #[derive(Clone, Default)]
    struct Recorder {
        written: Arc<Mutex<Vec<u8>>>,
        flushed: Arc<Mutex<Vec<u8>>>,
    }

    impl Recorder {
        fn flushed(&self) -> Vec<u8> {
            self.flushed.lock().unwrap_or_else(PoisonError::into_inner).clone()
        }
    }

    impl AsyncWrite for Recorder {
        fn poll_write(self: Pin<&mut Self>, _: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
            self.written.lock().unwrap_or_else(PoisonError::into_inner).extend_from_slice(buf);
            Poll::Ready(Ok(buf.len()))
        }

        fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
            let written = self.written.lock().unwrap_or_else(PoisonError::into_inner).clone();
            *self.flushed.lock().unwrap_or_else(PoisonError::into_inner) = written;
            Poll::Ready(Ok(()))
        }

        fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
            Poll::Ready(Ok(()))
        }
    }

    /// Lines are held for a scheduler round so producers can add to the batch, but a line someone
    /// waits on — a response (its request's output complete), a request of ours (its producer
    /// waits for the answer) — is flushed as soon as the queue is dry, with what came before it.
    #[tokio::test]
    async fn an_awaited_line_is_flushed_without_waiting_a_round() {
        let (tx, rx) = mpsc::channel(16);
        let awaited = Arc::new(AtomicBool::new(false));
        let outlet = Arc::new(Outlet::new(None, None));
        let peer = Peer::new(tx, awaited.clone(), outlet.clone());
        let out = Recorder::default();
        let writer = tokio::spawn(write_loop(out.clone(), rx, awaited, outlet, None, PROCESS_IO_BUFFER));

        peer.send_line(b"{\"n\":1}\n".to_vec()).await.expect("queued");
        tokio::task::yield_now().await;
        assert!(out.flushed().is_empty(), "a notification waits a round for company");
        peer.send_awaited_line(b"{\"r\":1}\n".to_vec()).await.expect("queued");
        tokio::task::yield_now().await;
        assert_eq!(out.flushed(), b"{\"n\":1}\n{\"r\":1}\n", "the response goes out in the writer's first look");

        peer.send_line(b"{\"n\":2}\n".to_vec()).await.expect("queued");
        tokio::task::yield_now().await;
        assert_eq!(out.flushed(), b"{\"n\":1}\n{\"r\":1}\n", "the next notification waits again");

        let params = serde_json::json!({});
        let mut request = Box::pin(peer.request_value("x/y", &params));
        assert!(futures::poll!(&mut request).is_pending(), "the request is queued, its answer awaited");
        tokio::task::yield_now().await;
        let expected =
            b"{\"n\":1}\n{\"r\":1}\n{\"n\":2}\n{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"x/y\",\"params\":{}}\n";
        assert_eq!(out.flushed(), expected, "a request goes out in the writer's first look");
        peer.fail_pending();
        assert!(matches!(request.await, Err(crate::rpc::RequestError::Closed(_))));
        drop(peer);
        writer.await.expect("writer task").expect("writer");
        assert_eq!(out.flushed(), expected);
    }

    /// Answers `quick` at once and `slow` once `release` fires.
    struct QuickOrSlow {
        release: tokio::sync::Notify,
    }

    impl Handler for QuickOrSlow {
        fn accept(
            self: Arc<Self>,
            method: &str,
            _: Params,
            _: RequestContext,
        ) -> BoxFuture<'static, Result<Answer, Error>> {
            let slow = method == "slow";
            Box::pin(async move {
                if slow {
                    self.release.notified().await;
                }
                Ok(Answer::from(Value::Null))
            })
        }

        fn notification(self: Arc<Self>, _: IncomingNotification) -> BoxFuture<'static, ()> {
            Box::pin(async {})
        }
    }

    /// A request answered without waiting is answered by the reader itself — its response queued
    /// when `dispatch` returns, no task left behind; one that waits goes on in a task of its own,
    /// and the reader is free meanwhile.
    #[tokio::test]
    async fn a_request_runs_on_the_reader_until_it_first_waits() {
        let (peer, receiver, writer) = pipe_connection().await;
        let receiver = blocking_end(receiver);
        let handler = Arc::new(QuickOrSlow { release: tokio::sync::Notify::new() });
        let in_flight = InFlight::default();
        let tasks = TaskTracker::new();
        let incoming = |id: i64, method: &str| IncomingRequest {
            id: RequestId::Number(id),
            method: method.to_owned(),
            params: Params::from(Value::Null),
        };
        let answer = |id: i64| format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":null}}\n");
        // The writer's rounds (no task of a request runs in them: each test step checks first).
        let written = || async {
            for _ in 0..4 {
                tokio::task::yield_now().await;
            }
            drain(&receiver)
        };

        dispatch(&handler, incoming(1, "quick"), &peer, &in_flight, &tasks).await;
        assert_eq!(tasks.len(), 0, "no task for a request answered at once");
        assert!(in_flight.lock().expect("lock").is_empty(), "answered: no longer in flight");
        assert_eq!(written().await, answer(1));

        dispatch(&handler, incoming(2, "slow"), &peer, &in_flight, &tasks).await;
        assert_eq!(tasks.len(), 1, "a request that waits has a task of its own");
        assert_eq!(written().await, "");
        dispatch(&handler, incoming(3, "quick"), &peer, &in_flight, &tasks).await;
        assert_eq!(tasks.len(), 1);
        assert_eq!(written().await, answer(3), "the reader went on meanwhile");

        handler.release.notify_one();
        tasks.close();
        tasks.wait().await;
        assert_eq!(written().await, answer(2));
        finish(&peer, writer).await;
    }

    /// A connection whose transport is a real pipe taking direct writes, as stdio is when an
    /// editor starts the agent: the peer, the pipe's reading end and the writer task.
    async fn pipe_connection() -> (Peer, tokio::net::unix::pipe::Receiver, tokio::task::JoinHandle<std::io::Result<()>>)
    {
        let (sender, receiver) = tokio::net::unix::pipe::pipe().expect("pipe");
        // The reactor learns that the new pipe is writable (as it has long known of stdout's once
        // the agent has answered `initialize`).
        sender.writable().await.expect("writable");
        let pipe = Arc::new(super::super::stdio_pipe::StdoutPipe::new(sender));
        let (tx, rx) = mpsc::channel(OUTGOING_QUEUE);
        let awaited = Arc::new(AtomicBool::new(false));
        let direct: Arc<dyn WholeLineWrite> = pipe.clone();
        let outlet = Arc::new(Outlet::new(Some(direct), None));
        let peer = Peer::new(tx, awaited.clone(), outlet.clone());
        let writer = tokio::spawn(write_loop(
            Locked::new(PipeWriter(pipe), outlet.clone()),
            rx,
            awaited,
            outlet,
            None,
            PROCESS_IO_BUFFER,
        ));
        (peer, receiver, writer)
    }

    /// The writer's end of [`pipe_connection`]'s pipe, as `StdioWriter::Pipe` holds it.
    struct PipeWriter(Arc<super::super::stdio_pipe::StdoutPipe>);

    impl AsyncWrite for PipeWriter {
        fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
            Pin::new(&mut &*self.0).poll_write(cx, buf)
        }

        fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
            Pin::new(&mut &*self.0).poll_flush(cx)
        }

        fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
            Pin::new(&mut &*self.0).poll_shutdown(cx)
        }
    }

    /// Whatever the pipe holds now, without waiting (read past the reactor, which would only
    /// learn of the bytes at its next turn).
    fn drain(receiver: &std::fs::File) -> String {
        use std::io::Read as _;
        let mut got = Vec::new();
        let mut buf = vec![0u8; 65536];
        loop {
            match (&*receiver).read(&mut buf) {
                Ok(0) => break,
                Ok(n) => got.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) => panic!("reading the pipe: {e}"),
            }
        }
        String::from_utf8(got).expect("utf-8")
    }

    /// Ends the connection's output and waits for its writer, which must end cleanly.
    async fn finish(peer: &Peer, writer: tokio::task::JoinHandle<std::io::Result<()>>) {
        peer.end_output().await;
        writer.await.expect("writer task").expect("writer");
    }

    /// The pipe's reading end as a plain (non-blocking) file.
    fn blocking_end(receiver: tokio::net::unix::pipe::Receiver) -> std::fs::File {
        std::fs::File::from(receiver.into_nonblocking_fd().expect("fd"))
    }

    fn request(id: i64, method: &str) -> String {
        format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"{method}\",\"params\":{{}}}}\n")
    }

    /// On a quiet connection a request of ours is in the pipe when `begin_request` returns: its
    /// producer wrote it, the writer task never ran.
    #[tokio::test]
    async fn a_request_on_a_quiet_connection_is_written_by_its_producer() {
        let (peer, receiver, writer) = pipe_connection().await;
        let receiver = blocking_end(receiver);
        let pending = peer.begin_request("fs/read_text_file", &serde_json::json!({})).expect("sent");
        assert_eq!(drain(&receiver), request(0, "fs/read_text_file"));
        drop(pending);
        finish(&peer, writer).await;
    }

    /// A line queued before a request is written before it: the request does not skip the queue
    /// while anything in it is unwritten.
    #[tokio::test]
    async fn a_request_never_overtakes_a_line_queued_before_it() {
        let (peer, receiver, writer) = pipe_connection().await;
        let receiver = blocking_end(receiver);
        peer.try_send_line(b"{\"n\":1}\n".to_vec()).expect("queued");
        let pending = peer.begin_request("fs/read_text_file", &serde_json::json!({})).expect("sent");
        assert_eq!(drain(&receiver), "", "nothing skipped the queue");
        for _ in 0..4 {
            tokio::task::yield_now().await;
        }
        assert_eq!(drain(&receiver), format!("{{\"n\":1}}\n{}", request(0, "fs/read_text_file")));
        // The queue is written: the connection is quiet again, and the next request goes at once.
        peer.complete(&RequestId::Number(0), Ok(Params::from(Value::Null)));
        assert!(pending.answer().await.is_ok());
        let next = peer.begin_request("fs/write_text_file", &serde_json::json!({})).expect("sent");
        assert_eq!(drain(&receiver), request(1, "fs/write_text_file"));
        drop(next);
        finish(&peer, writer).await;
    }

    /// With a request of ours awaiting its answer the next one joins the writer's batch (many
    /// calls in flight cost one `write`, not one each); so does a line a pipe cannot take whole.
    #[tokio::test]
    async fn requests_in_flight_and_long_lines_go_through_the_writer() {
        let (peer, receiver, writer) = pipe_connection().await;
        let receiver = blocking_end(receiver);
        let first = peer.begin_request("a/first", &serde_json::json!({})).expect("sent");
        let second = peer.begin_request("a/second", &serde_json::json!({})).expect("sent");
        assert_eq!(drain(&receiver), request(0, "a/first"), "the second waits for the writer");
        tokio::task::yield_now().await;
        assert_eq!(drain(&receiver), request(1, "a/second"));
        drop((first, second));
        for _ in 0..4 {
            tokio::task::yield_now().await;
        }
        let cancels = drain(&receiver);
        assert_eq!(cancels.lines().filter(|l| l.contains("$/cancel_request")).count(), 2, "{cancels}");

        let long = "x".repeat(libc::PIPE_BUF);
        let pending = peer.begin_request("a/long", &serde_json::json!({ "text": long })).expect("sent");
        assert_eq!(drain(&receiver), "", "more than PIPE_BUF bytes might be cut: the writer writes it");
        tokio::task::yield_now().await;
        assert!(drain(&receiver).contains(&long));
        drop(pending);
        finish(&peer, writer).await;
    }

    /// Once the writer ends, nothing is written directly any more, and a peer handle that
    /// outlives the connection does not keep the transport open: the client sees the end.
    #[tokio::test]
    async fn the_transport_closes_with_the_writer_whatever_handles_live_on() {
        let (peer, receiver, writer) = pipe_connection().await;
        finish(&peer, writer).await;
        assert!(peer.begin_request("a/late", &serde_json::json!({})).is_err(), "the connection is closed");
        let mut buf = [0u8; 16];
        // Readable at once when the write end is closed; a pipe kept open never is.
        let ready = tokio::time::timeout(std::time::Duration::from_secs(5), receiver.readable()).await;
        ready.expect("the write end is closed").expect("readable");
        assert_eq!(receiver.try_read(&mut buf).expect("end of file"), 0, "the write end is closed");
        drop(peer);
    }

    /// Producers on many threads — notifications queued, requests written directly whenever the
    /// connection is quiet — while the client reads: every line arrives whole, and each
    /// producer's lines arrive in the order it sent them.
    #[test]
    fn direct_writes_and_the_writer_never_interleave_or_reorder() {
        const THREADS: usize = 4;
        const ROUNDS: usize = 300;
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("rt");
        let (peer, receiver, writer) = runtime.block_on(pipe_connection());
        let reader = runtime.spawn(async move {
            let mut got = Vec::new();
            let mut buf = vec![0u8; 65536];
            loop {
                receiver.readable().await.expect("readable");
                match receiver.try_read(&mut buf) {
                    Ok(0) => break got,
                    Ok(n) => got.extend_from_slice(&buf[..n]),
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                    Err(e) => panic!("reading: {e}"),
                }
            }
        });
        std::thread::scope(|scope| {
            for thread in 0..THREADS {
                let peer = peer.clone();
                scope.spawn(move || {
                    for round in 0..ROUNDS {
                        // Every few rounds a line larger than the pipe: the writer writes it in
                        // parts, which no direct write may land between.
                        let pad = if round % 8 == 0 { "p".repeat(96 * 1024) } else { String::new() };
                        let notification = format!("{{\"t\":{thread},\"r\":{round},\"k\":\"n\",\"pad\":\"{pad}\"}}\n");
                        futures::executor::block_on(peer.send_line(notification.into_bytes())).expect("queued");
                        let params = serde_json::json!({ "t": thread, "r": round, "k": "q" });
                        let request = peer.begin_request("x/y", &params).expect("sent");
                        // Answered at once, as by a quick client: the connection turns quiet again.
                        peer.complete(&RequestId::Number(request.number()), Ok(Params::from(Value::Null)));
                        futures::executor::block_on(request.answer()).expect("answered");
                    }
                });
            }
        });
        runtime.block_on(finish(&peer, writer));
        drop(peer);
        let got = runtime.block_on(reader).expect("reader");
        let text = String::from_utf8(got).expect("utf-8");
        let mut next = [(0usize, 'n'); THREADS];
        let mut lines = 0;
        for line in text.lines() {
            let value: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("a cut line {line:?}: {e}"));
            let fields = value.get("params").unwrap_or(&value);
            let thread = usize::try_from(fields["t"].as_u64().expect("t")).expect("thread");
            let round = usize::try_from(fields["r"].as_u64().expect("r")).expect("round");
            let kind = fields["k"].as_str().expect("k").chars().next().expect("kind");
            assert_eq!((round, kind), next[thread], "thread {thread}'s lines out of order");
            next[thread] = if kind == 'n' { (round, 'q') } else { (round + 1, 'n') };
            lines += 1;
        }
        assert_eq!(lines, THREADS * ROUNDS * 2);
    }
}
