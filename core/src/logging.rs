//! How an agent's logs look on stderr: plain text unless a person is watching.
//!
//! Stdout is the protocol channel, so logs go to stderr (see the crate docs). Stderr is often not
//! a terminal: an editor keeps its agent's stderr in a log view, a supervisor writes it to a file.
//! ANSI colour codes there are noise (`\x1b[2m…\x1b[0m` around every field), so every subscriber
//! this project sets up — the demo agent, the Python and Node bindings — colours its output only
//! when [`stderr_ansi`] says so. A product installing its own `tracing` subscriber can do the same:
//!
//! ```no_run
//! tracing_subscriber::fmt().with_writer(std::io::stderr).with_ansi(acp_facade::logging::stderr_ansi()).init();
//! ```
//!
//! A ground-floor module: it reads the process's stderr and environment, nothing of the crate.

use std::io::IsTerminal as _;

/// Whether log lines written to stderr may carry ANSI colour codes: only when stderr is a terminal
/// and `NO_COLOR` is unset or empty (<https://no-color.org>).
pub fn stderr_ansi() -> bool {
    ansi_for(std::io::stderr().is_terminal(), std::env::var_os("NO_COLOR").as_deref())
}

/// The rule of [`stderr_ansi`]: a terminal, and no non-empty `NO_COLOR`.
fn ansi_for(terminal: bool, no_color: Option<&std::ffi::OsStr>) -> bool {
    terminal && no_color.is_none_or(std::ffi::OsStr::is_empty)
}

#[cfg(test)]
mod tests {
    use super::ansi_for;
    use std::ffi::OsStr;

    #[test]
    fn colours_only_on_a_terminal_without_no_color() {
        assert!(ansi_for(true, None));
        assert!(ansi_for(true, Some(OsStr::new(""))), "an empty NO_COLOR does not count");
        assert!(!ansi_for(true, Some(OsStr::new("1"))));
        assert!(!ansi_for(false, None), "a pipe or a file gets plain text");
        assert!(!ansi_for(false, Some(OsStr::new("1"))));
    }
}
