//! The outlet: where the connection's bytes reach the transport, and the one way a line may get
//! there without waiting for the writer task.
//!
//! Every line is queued for the writer task ([`write_loop`](super::connection)), which batches
//! them into few `write` calls. A request of the agent's made on a quiet connection gains nothing
//! from the queue: nothing else is there to batch with, and handing the line over wakes the
//! writer's thread — in a binding, the core's worker, woken from the host's thread only to write
//! one line while the client waits. When the transport can take a whole line at once or nothing
//! (a pipe: writes of at most `PIPE_BUF` bytes are atomic), the producer may write such a line
//! itself, on its own thread ([`Outlet::write_now`]).
//!
//! Invariants, which keep the writer's guarantees (lines in queue order, never interleaved):
//! - `unwritten` counts every line from before it is queued until the writer has flushed it to
//!   the transport; the writer's end mark is counted and never uncounted, so nothing is written
//!   directly after [`Peer::end_output`](super::Peer).
//! - The writer's every write to the transport (through [`Locked`]) and every direct write hold
//!   the outlet's lock, and a direct write happens only when, under that lock, `unwritten` is
//!   zero: no line queued before it is still on its way, and no part of one is in the transport.
//!   A line queued while a direct write holds the lock is written after it.
//! - The direct sink is dropped when the writer ends ([`Outlet::close`]): a producer's handle,
//!   which may outlive the connection, never keeps the transport open.

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll};

use tokio::io::AsyncWrite;

use super::trace::{Direction, WireTrace};

/// A transport a whole line can be written to from any thread, without blocking.
pub(crate) trait WholeLineWrite: Send + Sync {
    /// Writes all of `line` now, or nothing: `Ok(false)` when the transport cannot take it whole
    /// at once (it is full, or `line` is too long to be written atomically).
    ///
    /// # Errors
    /// The transport failed (the client went away); nothing was written.
    fn write_whole(&self, line: &[u8]) -> io::Result<bool>;
}

/// The connection's outlet (see the module doc). Shared by the writer task and every [`Peer`](super::Peer).
pub(crate) struct Outlet {
    /// The sink for direct writes while the writer runs; the lock every write to the transport holds.
    direct: Mutex<Option<Arc<dyn WholeLineWrite>>>,
    /// Lines queued or being written by the writer and not yet flushed (see the module doc).
    unwritten: AtomicUsize,
    /// Set once the connection's lines are rewritten (see `LineRewriter`): no more direct writes.
    no_direct: std::sync::atomic::AtomicBool,
    trace: Option<Arc<WireTrace>>,
}

impl std::fmt::Debug for Outlet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Outlet").field("unwritten", &self.unwritten.load(Ordering::Relaxed)).finish_non_exhaustive()
    }
}

impl Outlet {
    /// An outlet whose lines may be written straight to `direct` (when given), recorded in `trace`.
    pub(crate) fn new(direct: Option<Arc<dyn WholeLineWrite>>, trace: Option<Arc<WireTrace>>) -> Self {
        Self {
            direct: Mutex::new(direct),
            unwritten: AtomicUsize::new(0),
            no_direct: std::sync::atomic::AtomicBool::new(false),
            trace,
        }
    }

    /// The wire trace, if any.
    pub(crate) fn trace(&self) -> Option<&WireTrace> {
        self.trace.as_deref()
    }

    /// Counts a line about to be queued for the writer.
    pub(crate) fn queueing(&self) {
        self.unwritten.fetch_add(1, Ordering::AcqRel);
    }

    /// Uncounts lines: `n` that [`Outlet::queueing`] counted and the writer has flushed, or that
    /// could not be queued after all.
    pub(crate) fn written(&self, n: usize) {
        if n > 0 {
            self.unwritten.fetch_sub(n, Ordering::AcqRel);
        }
    }

    /// Writes `line` to the transport now, on the calling thread, when the transport takes
    /// direct writes, nothing queued before is unwritten, and the transport takes the whole line
    /// at once. Returns whether it did; when not, nothing was written and the caller queues it.
    pub(crate) fn write_now(&self, line: &[u8]) -> bool {
        if self.no_direct.load(Ordering::Acquire) {
            return false;
        }
        let direct = self.lock();
        let Some(sink) = direct.as_ref() else {
            return false;
        };
        if self.unwritten.load(Ordering::Acquire) != 0 {
            return false;
        }
        match sink.write_whole(line) {
            Ok(true) => {
                if let Some(trace) = &self.trace {
                    trace.record(Direction::Out, line);
                }
                true
            }
            Ok(false) => false,
            Err(e) => {
                // The writer meets the same failure with the queued line and reports it.
                tracing::debug!(error = %e, "a direct write failed; the line is queued");
                false
            }
        }
    }

    /// Every line goes through the writer from now on (its lines are rewritten).
    pub(crate) fn forbid_direct(&self) {
        // Under the lock: a direct write in progress finishes before this returns.
        let _held = self.lock();
        self.no_direct.store(true, Ordering::Release);
    }

    /// The writer has ended: no more direct writes, and the sink is let go.
    pub(crate) fn close(&self) {
        drop(self.lock().take());
    }

    fn lock(&self) -> MutexGuard<'_, Option<Arc<dyn WholeLineWrite>>> {
        self.direct.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The writer's transport, written under the outlet's lock (see the module doc).
pub(crate) struct Locked<W> {
    inner: W,
    outlet: Arc<Outlet>,
}

impl<W> Locked<W> {
    pub(crate) fn new(inner: W, outlet: Arc<Outlet>) -> Self {
        Self { inner, outlet }
    }
}

impl<W: AsyncWrite + Unpin> AsyncWrite for Locked<W> {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let _held = this.outlet.lock();
        Pin::new(&mut this.inner).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let _held = this.outlet.lock();
        Pin::new(&mut this.inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let _held = this.outlet.lock();
        Pin::new(&mut this.inner).poll_shutdown(cx)
    }
}
