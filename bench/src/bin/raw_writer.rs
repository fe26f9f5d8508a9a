//! The raw baseline: writes the same JSON-RPC lines the demo agent writes for `stream N`, with
//! `serde_json` and nothing else — no protocol, no runtime, no queues.
//!
//! Protocol with the bench driver: prints one line at start (the "initialize response"), waits for
//! one line on stdin, then writes N `session/update` notifications and one final response line.
//!
//! With `--echo` it is instead the floor of an echo turn: for each request line it reads, it
//! parses the line with `serde_json` (the least an agent must do to find the id and the prompt)
//! and answers with the lines the demo agent sends for that turn — one `agent_message_chunk` per
//! word, a `usage_update`, the response — in one write, and nothing else: no sessions, no store,
//! no runtime.

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

/// The echo floor (`--echo`): answers `initialize`, `session/new` and `session/prompt` lines until
/// end of input.
fn echo() -> std::io::Result<()> {
    const SESSION: &str = "sess_0123456789abcdef0";
    let stdin = std::io::stdin();
    let stdout = std::io::stdout();
    let mut out = BufWriter::with_capacity(64 * 1024, stdout.lock());
    let mut line = String::new();
    while stdin.lock().read_line(&mut line)? > 0 {
        let request: serde_json::Value = serde_json::from_str(&line).map_err(std::io::Error::other)?;
        let id = &request["id"];
        match request["method"].as_str() {
            Some("session/prompt") => {
                let text = request["params"]["prompt"][0]["text"].as_str().unwrap_or_default();
                let words: Vec<&str> = text.split_whitespace().collect();
                for (i, word) in words.iter().enumerate() {
                    let chunk = if i + 1 < words.len() { format!("{word} ") } else { (*word).to_owned() };
                    let update =
                        Update { session_update: "agent_message_chunk", content: Text { kind: "text", text: &chunk } };
                    let line = Notification {
                        jsonrpc: "2.0",
                        method: "session/update",
                        params: Params { session_id: SESSION, update },
                    };
                    serde_json::to_writer(&mut out, &line)?;
                    out.write_all(b"\n")?;
                }
                let usage = serde_json::json!({"jsonrpc": "2.0", "method": "session/update", "params": {
                    "sessionId": SESSION,
                    "update": {"sessionUpdate": "usage_update", "used": text.len() * 2, "size": 200_000}}});
                serde_json::to_writer(&mut out, &usage)?;
                out.write_all(b"\n")?;
                let response = serde_json::json!({"jsonrpc": "2.0", "id": id, "result": {"stopReason": "end_turn"}});
                serde_json::to_writer(&mut out, &response)?;
            }
            Some("session/new") => {
                serde_json::to_writer(
                    &mut out,
                    &serde_json::json!({"jsonrpc": "2.0", "id": id, "result": {"sessionId": SESSION}}),
                )?;
            }
            _ => serde_json::to_writer(
                &mut out,
                &serde_json::json!({"jsonrpc": "2.0", "id": id, "result": {"protocolVersion": 1}}),
            )?,
        }
        out.write_all(b"\n")?;
        out.flush()?;
        line.clear();
    }
    Ok(())
}

fn main() -> std::io::Result<()> {
    if std::env::args().nth(1).as_deref() == Some("--echo") {
        return echo();
    }
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
