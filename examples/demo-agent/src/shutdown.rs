//! What ends a remote demo gracefully: the platform's requests to stop.
//!
//! Invariant: the handlers are installed by [`Shutdown::install`], before the server is awaited,
//! and [`Shutdown::requested`] returns at the first request after that.
//!
//! - Unix: SIGTERM (what a service manager or `kill` sends) or Ctrl-C (SIGINT).
//! - Windows: Ctrl-C, or the console being closed (`CTRL_CLOSE_EVENT`). Fallback: there is no
//!   SIGTERM there; a process ended by `TerminateProcess` stops without shutting down.

/// The installed handlers of the requests to stop.
pub(crate) struct Shutdown {
    #[cfg(unix)]
    terminate: tokio::signal::unix::Signal,
    #[cfg(unix)]
    interrupt: tokio::signal::unix::Signal,
    #[cfg(windows)]
    ctrl_c: tokio::signal::windows::CtrlC,
    #[cfg(windows)]
    close: tokio::signal::windows::CtrlClose,
}

impl Shutdown {
    /// Installs the handlers. Must be called inside a tokio runtime.
    #[cfg(unix)]
    pub(crate) fn install() -> std::io::Result<Self> {
        use tokio::signal::unix::{SignalKind, signal};
        Ok(Self { terminate: signal(SignalKind::terminate())?, interrupt: signal(SignalKind::interrupt())? })
    }

    /// Installs the handlers. Must be called inside a tokio runtime.
    #[cfg(windows)]
    pub(crate) fn install() -> std::io::Result<Self> {
        use tokio::signal::windows::{ctrl_c, ctrl_close};
        Ok(Self { ctrl_c: ctrl_c()?, close: ctrl_close()? })
    }

    /// Waits for the first request to stop.
    pub(crate) async fn requested(&mut self) {
        #[cfg(unix)]
        tokio::select! {
            _ = self.terminate.recv() => {}
            _ = self.interrupt.recv() => {}
        }
        #[cfg(windows)]
        tokio::select! {
            _ = self.ctrl_c.recv() => {}
            _ = self.close.recv() => {}
        }
    }
}
