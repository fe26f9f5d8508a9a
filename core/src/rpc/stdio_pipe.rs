//! Stdin and stdout as pipes driven by the runtime's reactor: the stdio transport's fast path.
//!
//! Invariant: a [`StdinPipe`] or [`StdoutPipe`] exists only where the stream is a pipe registered
//! with the runtime's reactor, so reading and writing it need no thread handoff per message. Such
//! a pipe takes a write of at most `PIPE_BUF` bytes whole or not at all (POSIX), which is what
//! lets a producer write one line directly ([`WholeLineWrite`](super::outlet::WholeLineWrite), `rpc/outlet.rs`).
//!
//! Unix: stdin and stdout are taken as pipes when they are pipes (the normal case: an editor
//! starts the agent with piped stdio). Fallback: when a stream is not a pipe (a terminal, a file),
//! and always on Windows (whose anonymous pipes cannot be registered with the reactor), [`stdin`]
//! and [`stdout`] return `None`, and the stdio transport serves that stream with a thread
//! (`rpc/stdio.rs`); there both types are uninhabited.

pub(crate) use imp::{StdinPipe, StdoutPipe, stdin, stdout};

#[cfg(unix)]
mod imp {
    use std::io;
    use std::pin::Pin;
    use std::task::{Context, Poll};

    use tokio::io::AsyncWrite;
    use tokio::net::unix::pipe;

    use super::super::outlet::WholeLineWrite;

    /// The longest write a pipe takes whole or not at all.
    const PIPE_BUF: usize = libc::PIPE_BUF;

    /// Stdin as a pipe registered with the reactor.
    pub(crate) type StdinPipe = pipe::Receiver;

    /// Stdin as a pipe registered with the runtime's reactor, or `None` when it is not a pipe.
    /// Must be called inside a tokio runtime.
    pub(crate) fn stdin() -> io::Result<Option<StdinPipe>> {
        use std::os::fd::AsFd;
        let stdin = std::fs::File::from(io::stdin().as_fd().try_clone_to_owned()?);
        Ok(pipe::Receiver::from_file(stdin).ok())
    }

    /// `protocol` (the real stdout) as a pipe registered with the runtime's reactor, or `None`
    /// when it is not a pipe. Must be called inside a tokio runtime.
    pub(crate) fn stdout(protocol: &std::fs::File) -> io::Result<Option<StdoutPipe>> {
        Ok(pipe::Sender::from_file(protocol.try_clone()?).ok().map(StdoutPipe::new))
    }

    /// Stdout as a pipe registered with the reactor, written by the connection's writer and, a
    /// whole line at a time, by a producer writing directly (see `rpc/outlet.rs`).
    #[derive(Debug)]
    pub struct StdoutPipe(pipe::Sender);

    impl StdoutPipe {
        /// Stdout's pipe, registered with the runtime's reactor.
        pub(crate) fn new(pipe: pipe::Sender) -> Self {
            Self(pipe)
        }
    }

    impl WholeLineWrite for StdoutPipe {
        fn write_whole(&self, line: &[u8]) -> io::Result<bool> {
            // POSIX: a write of at most PIPE_BUF bytes to a non-blocking pipe writes all of them,
            // or none (EAGAIN); a longer one may be cut anywhere.
            if line.len() > PIPE_BUF {
                return Ok(false);
            }
            match self.0.try_write(line) {
                Ok(n) if n == line.len() => Ok(true),
                Ok(n) => Err(io::Error::other(format!("a pipe took {n} of {} bytes of an atomic write", line.len()))),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(false),
                Err(e) => Err(e),
            }
        }
    }

    impl AsyncWrite for &StdoutPipe {
        fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
            loop {
                std::task::ready!(self.0.poll_write_ready(cx))?;
                match self.0.try_write(buf) {
                    // Readiness was cleared: the next poll waits for the pipe to drain.
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                    written => return Poll::Ready(written),
                }
            }
        }

        fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }

        fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
    }
}

#[cfg(windows)]
mod imp {
    use std::io;
    use std::pin::Pin;
    use std::task::{Context, Poll};

    use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

    use super::super::outlet::WholeLineWrite;

    /// Never made on Windows: stdin is always read by a thread.
    #[derive(Debug)]
    pub(crate) enum StdinPipe {}

    /// Never made on Windows: stdout is always written by a thread.
    #[derive(Debug)]
    pub enum StdoutPipe {}

    /// Always `None` on Windows (see the module doc).
    #[allow(clippy::unnecessary_wraps, reason = "the same signature as on Unix, where it can fail")]
    pub(crate) fn stdin() -> io::Result<Option<StdinPipe>> {
        Ok(None)
    }

    /// Always `None` on Windows (see the module doc).
    #[allow(clippy::unnecessary_wraps, reason = "the same signature as on Unix, where it can fail")]
    pub(crate) fn stdout(_protocol: &std::fs::File) -> io::Result<Option<StdoutPipe>> {
        Ok(None)
    }

    impl WholeLineWrite for StdoutPipe {
        fn write_whole(&self, _line: &[u8]) -> io::Result<bool> {
            match *self {}
        }
    }

    impl AsyncWrite for &StdoutPipe {
        fn poll_write(self: Pin<&mut Self>, _cx: &mut Context<'_>, _buf: &[u8]) -> Poll<io::Result<usize>> {
            match **self {}
        }

        fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            match **self {}
        }

        fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            match **self {}
        }
    }

    impl AsyncRead for StdinPipe {
        fn poll_read(self: Pin<&mut Self>, _cx: &mut Context<'_>, _buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
            match *self {}
        }
    }
}
