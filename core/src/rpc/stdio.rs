//! The stdio transport: the process's stdin and stdout.
//!
//! Architecture invariant: this is the only module that touches stdout, and it only hands it to
//! the connection's writer task, the single writer of protocol messages.

/// The process's stdin and stdout as a transport pair.
#[allow(clippy::print_stdout, reason = "stdout is the protocol channel; only the writer task uses it")]
pub fn transport() -> (tokio::io::Stdin, tokio::io::Stdout) {
    (tokio::io::stdin(), tokio::io::stdout())
}
