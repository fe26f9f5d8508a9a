//! A server under measurement: one process started with `--listen 127.0.0.1:0`, ready once it
//! printed `listening on http://HOST:PORT/PATH` on stderr (the demos' and the fixtures' line).
//!
//! Invariants: the process is killed when its [`Server`] is dropped (no server outlives its
//! measurement); its stderr is drained by a thread for as long as it runs, so a chatty server
//! never blocks on a full pipe; a server that exits or stays silent before its line is an `Err`
//! quoting its last stderr lines.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use super::wire::{Endpoint, Result};

/// How long a server may take to print its listening line.
const READY_TIMEOUT: Duration = Duration::from_secs(60);

/// A running server process.
pub(crate) struct Server {
    child: Child,
    pub(crate) endpoint: Endpoint,
}

impl Server {
    /// Starts `command` (split on whitespace) with `--listen 127.0.0.1:0` and waits for its line.
    pub(crate) fn start(command: &str) -> Result<Self> {
        let mut parts = command.split_whitespace();
        let program = parts.next().ok_or("an empty server command")?;
        let mut child = Command::new(program)
            .args(parts)
            .args(["--listen", "127.0.0.1:0"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start {command}: {e}"))?;
        let stderr = child.stderr.take().expect("stderr piped");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                // Nobody listens once the server is ready: the rest is drained and dropped.
                let _ = tx.send(line);
            }
        });
        let mut last = Vec::new();
        let deadline = std::time::Instant::now() + READY_TIMEOUT;
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match rx.recv_timeout(left) {
                Ok(line) => {
                    if let Some(url) = line.split("listening on ").nth(1) {
                        let endpoint = Endpoint::parse(url.trim())?;
                        return Ok(Self { child, endpoint });
                    }
                    if last.len() < 50 {
                        last.push(line);
                    }
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    let status = child.wait().map_or_else(|e| e.to_string(), |s| s.to_string());
                    return Err(format!("it exited ({status}) without listening: {}", why(&last)));
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(format!("no listening line within {READY_TIMEOUT:?}: {}", why(&last)));
                }
            }
        }
    }

    /// The process's resident set (`VmRSS` of /proc/PID/status), in KiB.
    pub(crate) fn rss_kib(&self) -> u64 {
        crate::status_kib(self.child.id(), "VmRSS:")
    }
}

/// The line of a server's stderr that says why it stopped: the first with an error message
/// (`Error: …`, `error: …`, as Node, Python and the Rust demos print one) or naming an unknown
/// argument, else the last non-blank one.
fn why(lines: &[String]) -> String {
    lines
        .iter()
        .find(|l| l.contains("Error:") || l.contains("error:") || l.contains("unknown"))
        .or_else(|| lines.iter().rev().find(|l| !l.trim().is_empty()))
        .map_or_else(|| "nothing on stderr".to_owned(), |l| l.trim().to_owned())
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Raises this process's soft limit of open files to its hard limit (the servers it starts
/// inherit it): the idle benchmark holds 10,000 sockets on each side. Returns the new limit.
#[allow(unsafe_code, reason = "getrlimit/setrlimit: plain system calls on a local struct")]
pub(crate) fn raise_open_files_limit() -> u64 {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: `limit` is a valid, writable `rlimit` for the duration of the call.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &raw mut limit) } != 0 {
        return 0;
    }
    limit.rlim_cur = limit.rlim_max;
    // SAFETY: `limit` is a valid `rlimit`; raising the soft limit up to the hard one is allowed.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raw const limit) } != 0 {
        return 0;
    }
    limit.rlim_cur
}
