//! The opt-in wire trace: every message in and out, as JSON lines with a timestamp and direction.
//!
//! Enabled by naming a file in the `ACP_FACADE_WIRE_TRACE` environment variable (or
//! [`ConnectionOptions::wire_trace`](super::ConnectionOptions)). Each line of the file is
//! `{"ts":"2026-11-30T11:20:00.123Z","dir":"in"|"out","msg":<the message>}`; a line that was not
//! JSON is recorded as a string. Tracing never affects the protocol: a failing trace file is
//! logged once and then ignored.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};

use serde_json::value::RawValue;

/// The environment variable naming the trace file.
pub(crate) const WIRE_TRACE_ENV: &str = "ACP_FACADE_WIRE_TRACE";

/// Direction of a traced message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Direction {
    /// From the client.
    In,
    /// To the client.
    Out,
}

/// An open wire trace.
#[derive(Debug)]
pub(crate) struct WireTrace {
    out: Mutex<BufWriter<File>>,
    failed: AtomicBool,
}

impl WireTrace {
    /// Creates (truncates) the trace file.
    pub(crate) fn create(path: &Path) -> std::io::Result<Self> {
        Ok(Self { out: Mutex::new(BufWriter::new(File::create(path)?)), failed: AtomicBool::new(false) })
    }

    /// Records one message (`line` without its newline).
    pub(crate) fn record(&self, direction: Direction, line: &[u8]) {
        if self.failed.load(Ordering::Relaxed) {
            return;
        }
        let line = line.strip_suffix(b"\n").unwrap_or(line);
        let dir = match direction {
            Direction::In => "in",
            Direction::Out => "out",
        };
        let mut entry = format!("{{\"ts\":\"{}\",\"dir\":\"{dir}\",\"msg\":", crate::time::now_rfc3339());
        match std::str::from_utf8(line).ok().filter(|s| serde_json::from_str::<&RawValue>(s).is_ok()) {
            Some(json) => entry.push_str(json),
            None => entry.push_str(&serde_json::Value::String(String::from_utf8_lossy(line).into_owned()).to_string()),
        }
        entry.push_str("}\n");
        let mut out = self.out.lock().unwrap_or_else(PoisonError::into_inner);
        if let Err(e) = out.write_all(entry.as_bytes()).and_then(|()| out.flush()) {
            self.failed.store(true, Ordering::Relaxed);
            tracing::warn!(error = %e, "the wire trace failed; tracing stops");
        }
    }
}
