//! The raw baseline: writes the same JSON-RPC lines the demo agent writes for `stream N`, with
//! `serde_json` and nothing else — no protocol, no runtime, no queues.
//!
//! Protocol with the bench driver: prints one line at start (the "initialize response"), waits for
//! one line on stdin, then writes N `session/update` notifications and one final response line.

#![allow(clippy::print_stdout, reason = "the baseline's whole job is writing JSON lines to stdout")]

use std::io::{BufRead, BufWriter, Write};

use serde::Serialize;

#[derive(Serialize)]
struct Notification<'a> {
    jsonrpc: &'static str,
    method: &'static str,
    params: Params<'a>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Params<'a> {
    session_id: &'a str,
    update: Update<'a>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Update<'a> {
    session_update: &'static str,
    content: Text<'a>,
}

#[derive(Serialize)]
struct Text<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    text: &'a str,
}

fn main() -> std::io::Result<()> {
    let n: u64 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(100_000);
    let stdout = std::io::stdout();
    let mut out = BufWriter::with_capacity(64 * 1024, stdout.lock());
    out.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":{\"protocolVersion\":1}}\n")?;
    out.flush()?;
    let mut go = String::new();
    std::io::stdin().lock().read_line(&mut go)?;
    let mut token = String::new();
    for i in 1..=n {
        token.clear();
        std::fmt::Write::write_fmt(&mut token, format_args!("t{i} ")).expect("writing to a String");
        let line = Notification {
            jsonrpc: "2.0",
            method: "session/update",
            params: Params {
                session_id: "sess_0123456789abcdef0",
                update: Update { session_update: "agent_message_chunk", content: Text { kind: "text", text: &token } },
            },
        };
        serde_json::to_writer(&mut out, &line)?;
        out.write_all(b"\n")?;
    }
    out.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"stopReason\":\"end_turn\"}}\n")?;
    out.flush()
}
