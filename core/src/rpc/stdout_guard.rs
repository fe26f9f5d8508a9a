//! The stdout guard: while an agent serves over stdio, the process's standard output is stderr,
//! and only the protocol writes to the real stdout.
//!
//! Invariant: after [`guard_stdout`] the returned file is the only way to the real stdout, and the
//! process's standard output points at stderr, so a stray `println!`, Python `print()` or
//! `console.log` in host code lands on stderr and can never corrupt the protocol stream.
//! Whatever was buffered for stdout before is flushed first: it belongs to the stream's prefix.
//!
//! - Unix: the real stdout is kept on a duplicate descriptor and fd 1 becomes a copy of stderr
//!   (`dup2`), which covers every writer of fd 1, C code included.
//! - Windows: the real stdout is kept on a duplicate handle and the process's standard output
//!   handle becomes stderr's (`SetStdHandle`). Fallback: this covers writers that look the handle
//!   up when they write (Rust's `std::io::stdout`, which is what `println!` uses); a C runtime's
//!   descriptor 1 opened before keeps the handle it had, and such output can still reach the
//!   protocol stream.

use std::io::Write;

/// Flushes stdout, moves the real stdout to a new descriptor (Unix) or handle (Windows), and points
/// the process's standard output at stderr; returns the real stdout.
pub(crate) fn guard_stdout() -> std::io::Result<std::fs::File> {
    std::io::stdout().flush()?;
    imp::guard()
}

#[cfg(unix)]
mod imp {
    use std::os::fd::AsFd;

    pub(super) fn guard() -> std::io::Result<std::fs::File> {
        let real = std::io::stdout().as_fd().try_clone_to_owned()?;
        redirect_stdout_to_stderr()?;
        Ok(std::fs::File::from(real))
    }

    #[allow(
        unsafe_code,
        reason = "dup2 has no safe wrapper in std; both descriptors are valid and owned by the process"
    )]
    fn redirect_stdout_to_stderr() -> std::io::Result<()> {
        // SAFETY: dup2 on the process's own standard descriptors, which stay open for its lifetime.
        if unsafe { libc::dup2(libc::STDERR_FILENO, libc::STDOUT_FILENO) } < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    }
}

#[cfg(windows)]
mod imp {
    use std::os::windows::io::{AsHandle, AsRawHandle};

    use windows_sys::Win32::System::Console::{STD_OUTPUT_HANDLE, SetStdHandle};

    pub(super) fn guard() -> std::io::Result<std::fs::File> {
        let real = std::io::stdout().as_handle().try_clone_to_owned()?;
        redirect_stdout_to_stderr()?;
        Ok(std::fs::File::from(real))
    }

    #[allow(unsafe_code, reason = "SetStdHandle has no safe wrapper in std")]
    fn redirect_stdout_to_stderr() -> std::io::Result<()> {
        let stderr = std::io::stderr().as_raw_handle();
        // SAFETY: stderr's handle is the process's own and stays open for its lifetime;
        // SetStdHandle only records it as the standard output handle.
        if unsafe { SetStdHandle(STD_OUTPUT_HANDLE, stderr) } == 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    }
}
