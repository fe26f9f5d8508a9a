//! The server's sockets: every accepted TCP connection is wrapped in a [`StallGuard`], so a
//! client that stopped reading cannot hold a connection (and what waits to be written on it) for
//! ever.
//!
//! Invariant: a write (or flush) that has made no progress for the stall timeout (two keepalive
//! intervals, see [`RemoteConfig::max_buffered_bytes`](super::RemoteConfig::max_buffered_bytes))
//! fails with [`io::ErrorKind::TimedOut`]; the HTTP server then drops the connection — an SSE
//! response or a WebSocket on it ends. Any byte written restarts the wait; reading is not
//! limited (an idle client is the idle timeout's and the keepalive's concern).

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::Sleep;

/// A socket whose writes may not wait longer than the stall timeout.
pub(crate) struct StallGuard<S> {
    inner: S,
    stall: Duration,
    /// Running while a write waits; `None` while writes go through.
    waiting: Option<Pin<Box<Sleep>>>,
}

impl<S> StallGuard<S> {
    pub(crate) fn new(inner: S, stall: Duration) -> Self {
        Self { inner, stall, waiting: None }
    }

    /// The inner socket's answer, unless it has been `Pending` for the whole stall timeout.
    fn guard<T>(&mut self, cx: &mut Context<'_>, polled: Poll<io::Result<T>>) -> Poll<io::Result<T>> {
        if polled.is_ready() {
            self.waiting = None;
            return polled;
        }
        let stall = self.stall;
        let waiting = self.waiting.get_or_insert_with(|| Box::pin(tokio::time::sleep(stall)));
        ready!(waiting.as_mut().poll(cx));
        self.waiting = None;
        Poll::Ready(Err(io::Error::new(
            io::ErrorKind::TimedOut,
            format!("the client read nothing for {stall:?} while a write waited"),
        )))
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for StallGuard<S> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for StallGuard<S> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.guard(cx, polled)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.guard(cx, polled)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let polled = Pin::new(&mut self.inner).poll_flush(cx);
        self.guard(cx, polled)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let polled = Pin::new(&mut self.inner).poll_shutdown(cx);
        self.guard(cx, polled)
    }
}

/// The plain-TCP listener given to axum: each connection guarded.
pub(crate) struct GuardedListener {
    pub(crate) listener: TcpListener,
    pub(crate) stall: Duration,
}

impl axum::serve::Listener for GuardedListener {
    type Io = StallGuard<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            match self.listener.accept().await {
                Ok((stream, addr)) => return (StallGuard::new(accepted(stream), self.stall), addr),
                Err(e) => accept_failed(&e).await,
            }
        }
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        self.listener.local_addr()
    }
}

/// A socket just accepted, made ready to serve: every ACP message is a small write (an SSE event,
/// a WebSocket frame), and with Nagle's algorithm a second one waits for the client's delayed ACK,
/// about 40 ms a round trip on loopback, so `TCP_NODELAY` is set.
pub(crate) fn accepted(stream: TcpStream) -> TcpStream {
    if let Err(error) = stream.set_nodelay(true) {
        tracing::debug!(%error, "TCP_NODELAY not set");
    }
    stream
}

/// An accept that failed (too many open files, a connection reset before it was accepted):
/// logged, and the next one tried a moment later, as axum's own listener does.
pub(crate) async fn accept_failed(error: &io::Error) {
    tracing::warn!(error = %error, "accepting a connection failed");
    tokio::time::sleep(Duration::from_millis(50)).await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt as _;

    #[tokio::test(start_paused = true)]
    async fn a_write_that_waits_for_the_stall_timeout_fails_and_one_that_progresses_does_not() {
        let (near, mut far) = tokio::io::duplex(8);
        let mut guarded = StallGuard::new(near, Duration::from_secs(30));
        guarded.write_all(b"12345678").await.unwrap();
        // The far end reads a little, then nothing.
        let reader = tokio::spawn(async move {
            let mut buf = [0u8; 8];
            tokio::time::sleep(Duration::from_secs(20)).await;
            tokio::io::AsyncReadExt::read_exact(&mut far, &mut buf).await.unwrap();
            far
        });
        guarded.write_all(b"abcdefgh").await.expect("progress within the stall timeout");
        let _far = reader.await.unwrap();
        let error = guarded.write_all(b"more").await.unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::TimedOut);
    }
}
