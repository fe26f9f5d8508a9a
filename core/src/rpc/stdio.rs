//! The stdio transport: the process's stdin and stdout.
//!
//! Architecture invariant: this is the only module that touches stdout, and it only hands it to
//! the connection's writer task ([`StdioWriter`]), the single writer of protocol messages — and,
//! for a pipe, to the connection's outlet (`rpc/outlet.rs`), through which a whole line may be
//! written under the writer's lock when nothing of the writer's is pending.
//!
//! **Stdout guard.** [`transport`] keeps the real stdout for the protocol and points the process's
//! standard output at stderr (`rpc/stdout_guard.rs`, per platform). A stray `println!`, Python
//! `print()` or `console.log` in host code therefore lands on stderr and can never corrupt the
//! protocol stream.
//!
//! Pipes (the normal case on Unix: an editor starts the agent with piped stdio) are registered
//! with the runtime's reactor and need no thread (`rpc/stdio_pipe.rs`); a pipe also takes a line
//! of at most `PIPE_BUF` bytes whole or not at all, so a producer may write one directly (the
//! connection's outlet, `rpc/outlet.rs`). Otherwise (a terminal, a file; on Windows always),
//! why threads: tokio's own `Stdin` and `Stdout` perform every read and write on the blocking
//! pool, a thread handoff per operation. [`ThreadStdin`] is one thread reading stdin in large
//! chunks into a bounded channel. [`ThreadStdout`] queues the writer's (already batched) buffers on
//! a bounded channel to one thread that owns stdout; a flush returns once its bytes are queued, and
//! shutdown waits until the thread has written and flushed everything. The channel is bounded, so
//! a client that stops reading stalls the writer task (and, through it, the producers) instead of
//! growing memory.

use std::io::{Read, Write};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::PollSender;

use super::outlet::WholeLineWrite;
use super::stdio_pipe::{self, StdinPipe, StdoutPipe};
use super::stdout_guard::guard_stdout;

/// Buffers in flight between the writer task and the stdout thread.
const STDOUT_QUEUE: usize = 16;

/// The process's stdin and stdout as a transport pair.
///
/// Installs the stdout guard: from now on the process's standard output is stderr, and only the
/// returned writer writes to the real stdout. When stdin and stdout are pipes (as when an editor
/// starts the agent on Unix) both are driven by the runtime's reactor directly — no thread handoff
/// per message; otherwise (a terminal, a file; Windows) a dedicated thread serves each. Must be called inside a tokio runtime.
pub(crate) fn transport() -> std::io::Result<(StdioReader, StdioWriter)> {
    let protocol = guard_stdout()?;
    let writer = match stdio_pipe::stdout(&protocol)? {
        Some(pipe) => StdioWriter::Pipe(Arc::new(pipe)),
        None => StdioWriter::Thread(ThreadStdout::spawn(protocol)?),
    };
    let reader = match stdio_pipe::stdin()? {
        Some(pipe) => StdioReader::Pipe(pipe),
        None => StdioReader::Thread(ThreadStdin::spawn()?),
    };
    Ok((reader, writer))
}

/// The reading half of the stdio transport.
#[derive(Debug)]
pub(crate) enum StdioReader {
    /// Stdin is a pipe, read through the reactor.
    Pipe(StdinPipe),
    /// Stdin is something else, read by a thread.
    Thread(ThreadStdin),
}

/// The writing half of the stdio transport (the real stdout).
#[derive(Debug)]
pub(crate) enum StdioWriter {
    /// Stdout is a pipe, written through the reactor.
    Pipe(Arc<StdoutPipe>),
    /// Stdout is something else, written by a thread.
    Thread(ThreadStdout),
}

impl StdioWriter {
    /// The transport for direct writes of whole lines (a pipe), shared with this writer.
    pub(crate) fn direct(&self) -> Option<Arc<dyn WholeLineWrite>> {
        match self {
            Self::Pipe(pipe) => Some(pipe.clone()),
            Self::Thread(_) => None,
        }
    }
}

impl AsyncRead for StdioReader {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Self::Pipe(pipe) => Pin::new(pipe).poll_read(cx, buf),
            Self::Thread(thread) => Pin::new(thread).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for StdioWriter {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        match self.get_mut() {
            Self::Pipe(pipe) => Pin::new(&mut &**pipe).poll_write(cx, buf),
            Self::Thread(thread) => Pin::new(thread).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Self::Pipe(pipe) => Pin::new(&mut &**pipe).poll_flush(cx),
            Self::Thread(thread) => Pin::new(thread).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Self::Pipe(pipe) => Pin::new(&mut &**pipe).poll_shutdown(cx),
            Self::Thread(thread) => Pin::new(thread).poll_shutdown(cx),
        }
    }
}

/// An [`AsyncRead`] fed by a dedicated thread reading the process's stdin.
///
/// The thread stays blocked in `read` after the connection is done with it; it ends with the
/// process, or when stdin reaches end of file.
pub(crate) struct ThreadStdin {
    rx: mpsc::Receiver<std::io::Result<Vec<u8>>>,
    chunk: Vec<u8>,
    pos: usize,
}

impl std::fmt::Debug for ThreadStdin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ThreadStdin").finish_non_exhaustive()
    }
}

impl ThreadStdin {
    /// Starts the stdin thread.
    pub(crate) fn spawn() -> std::io::Result<Self> {
        let (tx, rx) = mpsc::channel(STDOUT_QUEUE);
        std::thread::Builder::new().name("acp-stdin".into()).spawn(move || {
            let stdin = std::io::stdin();
            let mut input = stdin.lock();
            loop {
                let mut buf = vec![0u8; 64 * 1024];
                match input.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => {
                        buf.truncate(n);
                        if tx.blocking_send(Ok(buf)).is_err() {
                            break;
                        }
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) => {
                        let _ = tx.blocking_send(Err(e));
                        break;
                    }
                }
            }
        })?;
        Ok(Self { rx, chunk: Vec::new(), pos: 0 })
    }
}

impl AsyncRead for ThreadStdin {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        if self.pos == self.chunk.len() {
            match self.rx.poll_recv(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(None) => return Poll::Ready(Ok(())),
                Poll::Ready(Some(Err(e))) => return Poll::Ready(Err(e)),
                Poll::Ready(Some(Ok(chunk))) => {
                    self.chunk = chunk;
                    self.pos = 0;
                }
            }
        }
        let n = buf.remaining().min(self.chunk.len() - self.pos);
        let start = self.pos;
        buf.put_slice(&self.chunk[start..start + n]);
        self.pos += n;
        Poll::Ready(Ok(()))
    }
}

/// An [`AsyncWrite`] whose bytes a dedicated thread writes to the process's stdout.
pub(crate) struct ThreadStdout {
    tx: Option<PollSender<Vec<u8>>>,
    done: Option<oneshot::Receiver<std::io::Result<()>>>,
}

impl std::fmt::Debug for ThreadStdout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ThreadStdout").finish_non_exhaustive()
    }
}

impl ThreadStdout {
    /// Starts the thread writing to `out` (the real stdout, or any file).
    pub(crate) fn spawn(out: std::fs::File) -> std::io::Result<Self> {
        let (tx, mut rx) = mpsc::channel::<Vec<u8>>(STDOUT_QUEUE);
        let (done_tx, done_rx) = oneshot::channel();
        std::thread::Builder::new().name("acp-stdout".into()).spawn(move || {
            #[allow(clippy::print_stdout, reason = "the one place that writes the protocol to stdout")]
            let result = (|| {
                let mut out = out;
                while let Some(buf) = rx.blocking_recv() {
                    out.write_all(&buf)?;
                    if rx.is_empty() {
                        out.flush()?;
                    }
                }
                out.flush()
            })();
            let _ = done_tx.send(result);
        })?;
        Ok(Self { tx: Some(PollSender::new(tx)), done: Some(done_rx) })
    }
}

fn closed() -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::BrokenPipe, "the stdout thread stopped")
}

impl AsyncWrite for ThreadStdout {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        let Some(tx) = self.tx.as_mut() else {
            return Poll::Ready(Err(closed()));
        };
        match tx.poll_reserve(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Err(_)) => Poll::Ready(Err(closed())),
            Poll::Ready(Ok(())) => match tx.send_item(buf.to_vec()) {
                Ok(()) => Poll::Ready(Ok(buf.len())),
                Err(_) => Poll::Ready(Err(closed())),
            },
        }
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        // Queued bytes are written by the thread, which flushes whenever its queue runs dry.
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        self.tx = None;
        let Some(done) = self.done.as_mut() else {
            return Poll::Ready(Ok(()));
        };
        match Pin::new(done).poll(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(result) => {
                self.done = None;
                Poll::Ready(result.unwrap_or_else(|_| Err(closed())))
            }
        }
    }
}

use std::future::Future as _;
