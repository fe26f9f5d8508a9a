//! The demo's prompts that call the client (docs/DEMO.md, "the agent calls the client" and
//! `edit`): `read`, `write`, `run`, `open` through the turn's client handle, and `edit`'s tool call
//! with a diff; and `readloop`, the benchmark's helper (docs/DEMO.md).
//!
//! A client that did not advertise the capability gets no request: the turn says
//! `VERB: not supported by the client`. A client error: `VERB: error CODE MESSAGE`. Both end the
//! turn `end_turn`. A cancelled call ends it `cancelled` (`None` here).

use std::path::{Path, PathBuf};

use acp_facade::acp::{StopReason, ToolCallStatus, ToolKind};
use acp_facade::client::{ClientError, ElicitationAnswer};
use acp_facade_runner::Turn;
use serde_json::json;

/// `path` as the client must see it: absolute, relative ones taken from the session's cwd.
fn absolute(turn: &Turn, path: &str) -> PathBuf {
    let path = Path::new(path);
    if path.is_absolute() { path.to_path_buf() } else { turn.cwd().join(path).components().collect() }
}

/// Says why a call of `verb` failed; `None` when it was cancelled (the turn ends `cancelled`).
async fn failed(turn: &Turn, verb: &str, error: ClientError) -> Option<StopReason> {
    match error {
        ClientError::Cancelled { .. } => return None,
        ClientError::Unsupported { .. } => turn.text(format!("{verb}: not supported by the client")).await,
        other => {
            let error = acp_facade::Error::from(other);
            turn.text(format!("{verb}: error {} {}", i32::from(error.code), error.message)).await;
        }
    }
    Some(StopReason::EndTurn)
}

/// `read PATH`: the file's content through the client, as one message chunk.
pub async fn read(turn: &Turn, path: &str) -> Option<StopReason> {
    match turn.client().read_text_file(absolute(turn, path), None, None).await {
        Ok(content) => {
            turn.text(content).await;
            Some(StopReason::EndTurn)
        }
        Err(e) => failed(turn, "read", e).await,
    }
}

/// `write PATH TEXT…`: the rest of the line written to PATH through the client.
pub async fn write(turn: &Turn, rest: &str) -> Option<StopReason> {
    let (path, content) = rest.split_once(char::is_whitespace).map_or((rest, ""), |(p, c)| (p, c.trim_start()));
    match turn.client().write_text_file(absolute(turn, path), content).await {
        Ok(()) => {
            turn.text("write: ok").await;
            Some(StopReason::EndTurn)
        }
        Err(e) => failed(turn, "write", e).await,
    }
}

/// `run CMD ARG…`: the command in a client terminal (cwd the session's), shown in an `execute`
/// tool call; its exit code as a message chunk. Cancelled while it runs: the handle kills and
/// releases the terminal.
pub async fn run(turn: &Turn, line: &str, command: &str) -> Option<StopReason> {
    let mut words = command.split_whitespace();
    let program = words.next().unwrap_or_default();
    let args = words.map(str::to_owned).collect();
    let client = turn.client();
    let terminal = match client.create_terminal(program, args, Vec::new(), Some(turn.cwd().to_path_buf()), None).await {
        Ok(terminal) => terminal,
        Err(e) => return failed(turn, "run", e).await,
    };
    let call = turn
        .tool_call(line)
        .kind(ToolKind::Execute)
        .status(ToolCallStatus::InProgress)
        .content(terminal.content())
        .start()
        .await;
    let exited = match terminal.wait_for_exit().await {
        Ok(status) => status,
        Err(e) => {
            if !e.is_cancelled() {
                turn.tool_call_update(&call).fail().await;
            }
            return failed(turn, "run", e).await;
        }
    };
    if let Err(e) = terminal.output().await {
        turn.tool_call_update(&call).fail().await;
        return failed(turn, "run", e).await;
    }
    let code =
        exited.exit_code.map_or_else(|| exited.signal.clone().unwrap_or_else(|| "unknown".into()), |c| c.to_string());
    if exited.exit_code == Some(0) {
        turn.tool_call_update(&call).complete().await;
    } else {
        turn.tool_call_update(&call).fail().await;
    }
    turn.text(format!("exit: {code}")).await;
    if let Err(e) = terminal.release().await {
        tracing::warn!(error = %e, "the client failed to release a terminal");
    }
    Some(StopReason::EndTurn)
}

/// `readloop N PATH [PARALLEL]`: `fs/read_text_file` of PATH N times, at most PARALLEL (1 when
/// absent or 0) in flight at once; then the chunk `readloop: N`.
pub async fn read_loop(turn: &Turn, rest: &str) -> Option<StopReason> {
    let mut words = rest.split_whitespace();
    let count: u64 = words.next().and_then(|n| n.parse().ok()).unwrap_or(0);
    let path = absolute(turn, words.next().unwrap_or_default());
    let parallel: u64 = words.next().and_then(|n| n.parse().ok()).filter(|p| *p > 0).unwrap_or(1);
    let mut in_flight = tokio::task::JoinSet::new();
    let mut started = 0;
    loop {
        while started < count && (in_flight.len() as u64) < parallel {
            let (client, path) = (turn.client().clone(), path.clone());
            in_flight.spawn(async move { client.read_text_file(path, None, None).await });
            started += 1;
        }
        let Some(done) = in_flight.join_next().await else { break };
        match done {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => return failed(turn, "readloop", e).await,
            Err(_) => return None,
        }
    }
    turn.text(format!("readloop: {count}")).await;
    Some(StopReason::EndTurn)
}

/// `open URL`: a URL elicitation; accepted, it is completed at once (`elicitation/complete`).
pub async fn open(turn: &Turn, url: &str) -> Option<StopReason> {
    let client = turn.client();
    let opened = match client.elicit_url(format!("Open {url}"), url).await {
        Ok(opened) => opened,
        Err(e) => return failed(turn, "open", e).await,
    };
    match opened.answer {
        ElicitationAnswer::Accept(_) => {
            if let Err(e) = client.complete_elicitation(&opened.elicitation_id).await {
                return failed(turn, "open", e).await;
            }
            turn.text("opened").await;
        }
        ElicitationAnswer::Decline => turn.text("declined").await,
        _ => return None,
    }
    Some(StopReason::EndTurn)
}

/// `edit PATH`: an `edit` tool call proposing a diff of PATH, completed with a raw output.
pub async fn edit(turn: &Turn, path: &str) {
    let file = absolute(turn, path);
    let call = turn
        .tool_call(format!("edit {path}"))
        .kind(ToolKind::Edit)
        .status(ToolCallStatus::InProgress)
        .location(file.clone(), Some(1))
        .diff(file, Some("old\n".to_owned()), "new\n")
        .start()
        .await;
    turn.tool_call_update(&call).raw_output(json!({"ok": true})).complete().await;
    turn.text(format!("edited {path}")).await;
}
