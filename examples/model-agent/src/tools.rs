//! The tools the model may call, each run through the editor as an ACP tool call:
//! `read_file` (the editor's buffer, `fs/read_text_file`), `write_file` and `edit_file` (shown as
//! a diff, written with `fs/write_text_file` only once the user allowed it) and `run_command` (with
//! permission, in a terminal of the editor, embedded in the tool call).
//!
//! Each returns what the model is told: the result, or an error it can act on (a missing file,
//! a rejected change); `None` only when the user cancelled the turn while asked.

use std::path::PathBuf;

use acp_facade::acp::{ToolCallStatus, ToolKind};
use acp_facade::client::ClientError;
use acp_facade::harness::ApprovalAction;
use acp_facade_runner::{Permission, Turn};
use serde_json::{Value, json};

/// The tools' declarations, as the model is offered them.
pub fn declarations() -> Value {
    let function = |name: &str, description: &str, params: &[(&str, &str)]| {
        let properties: serde_json::Map<String, Value> =
            params.iter().map(|(p, d)| ((*p).to_owned(), json!({"type": "string", "description": d}))).collect();
        let required: Vec<&str> = params.iter().map(|(p, _)| *p).collect();
        json!({"type": "function", "function": {"name": name, "description": description,
            "parameters": {"type": "object", "properties": properties, "required": required}}})
    };
    json!([
        function("read_file", "Read a text file.", &[("path", "absolute, or relative to the project")]),
        function(
            "write_file",
            "Create or overwrite a text file.",
            &[("path", "the file"), ("content", "its new text")]
        ),
        function(
            "edit_file",
            "Replace text in a file.",
            &[("path", "the file"), ("old_text", "text to find"), ("new_text", "its new text")]
        ),
        function("run_command", "Run a shell command in the project directory.", &[("command", "the command line")]),
    ])
}

/// Runs the tool call `name(arguments)`: what the model is told, `None` if the turn was cancelled.
pub async fn run(turn: &Turn, name: &str, arguments: &str) -> Option<String> {
    let args: Value = match serde_json::from_str(if arguments.is_empty() { "{}" } else { arguments }) {
        Ok(args @ Value::Object(_)) => args,
        _ => return Some(format!("error: the arguments of {name} are not a JSON object: {arguments}")),
    };
    let text = |field: &str| args[field].as_str().unwrap_or_default().to_owned();
    let path = turn.cwd().join(text("path"));
    match name {
        "read_file" => Some(read_file(turn, path, &args).await),
        "write_file" | "edit_file" => change_file(turn, name, path, &args).await,
        "run_command" => run_command(turn, &text("command"), &args).await,
        _ => Some(format!("error: there is no tool {name}")),
    }
}

async fn read_file(turn: &Turn, path: PathBuf, args: &Value) -> String {
    let title = format!("Read {}", path.display());
    let call = turn.tool_call(title).name("read_file").kind(ToolKind::Read).raw_input(args.clone()).start().await;
    match turn.client().read_text_file(&path, None, None).await {
        Ok(content) => {
            turn.tool_call_update(&call).text(content.clone()).complete().await;
            content
        }
        // A missing file, or the editor refused: the model is told.
        Err(e) => {
            turn.tool_call_update(&call).text(format!("error: {e}")).fail().await;
            format!("error: {e}")
        }
    }
}

/// `write_file` / `edit_file`: the change shown as a diff, written only when allowed.
async fn change_file(turn: &Turn, name: &str, path: PathBuf, args: &Value) -> Option<String> {
    let old = turn.client().read_text_file(&path, None, None).await.ok(); // `None`: a new file
    let new = if name == "write_file" {
        args["content"].as_str().unwrap_or_default().to_owned()
    } else {
        let find = args["old_text"].as_str().unwrap_or_default();
        match &old {
            Some(old) if !find.is_empty() && old.contains(find) => {
                old.replacen(find, args["new_text"].as_str().unwrap_or_default(), 1)
            }
            _ => return Some(format!("error: the text to replace is not in {}", path.display())),
        }
    };
    let call = turn
        .tool_call(format!("Edit {}", path.display()))
        .name(name)
        .kind(ToolKind::Edit)
        .diff(&path, old.clone(), new.clone())
        .raw_input(args.clone())
        .start()
        .await;
    let choices = [ApprovalAction::Approve, ApprovalAction::Deny];
    let update = || turn.tool_call_update(&call).diff(&path, old.clone(), new.clone());
    match turn.request_permission(&call, format!("Write {}?", path.display()), &choices).await {
        Permission::Cancelled => return None,
        answer if !answer.is_allowed() => {
            update().text("rejected by the user").fail().await;
            return Some("The user rejected this change: the file was not written.".to_owned());
        }
        _ => {}
    }
    Some(match turn.client().write_text_file(&path, new.clone()).await {
        Ok(()) => {
            update().text(format!("wrote {}", path.display())).complete().await;
            format!("wrote {}", path.display())
        }
        Err(e) => {
            update().text(format!("error: {e}")).fail().await;
            format!("error: {e}")
        }
    })
}

/// `run_command`: with permission, in a terminal of the editor shown in the tool call.
async fn run_command(turn: &Turn, command: &str, args: &Value) -> Option<String> {
    let call =
        turn.tool_call(command).name("run_command").kind(ToolKind::Execute).raw_input(args.clone()).start().await;
    let choices = [ApprovalAction::Approve, ApprovalAction::Deny];
    match turn.request_permission(&call, format!("Run `{command}`?"), &choices).await {
        Permission::Cancelled => return None,
        answer if !answer.is_allowed() => {
            turn.tool_call_update(&call).text("rejected by the user").fail().await;
            return Some("The user rejected this command: it did not run.".to_owned());
        }
        _ => {}
    }
    let shell_args = vec!["-c".to_owned(), command.to_owned()];
    let cwd = Some(turn.cwd().to_path_buf());
    let terminal = match turn.client().create_terminal("sh", shell_args, Vec::new(), cwd, Some(64_000)).await {
        Ok(terminal) => terminal,
        Err(e) if e.is_cancelled() => return None,
        Err(e) => {
            turn.tool_call_update(&call).text(format!("error: {e}")).fail().await;
            return Some(format!("error: {e}"));
        }
    };
    turn.tool_call_update(&call).status(ToolCallStatus::InProgress).content(terminal.content()).send().await;
    // Cancelled with the turn: the terminal is then killed and released by the runner.
    let ran = async { Ok::<_, ClientError>((terminal.wait_for_exit().await?, terminal.output().await?.output)) };
    let (status, output) = match ran.await {
        Ok(ran) => ran,
        Err(e) if e.is_cancelled() => return None,
        Err(e) => {
            turn.tool_call_update(&call).text(format!("error: {e}")).fail().await;
            return Some(format!("error: {e}"));
        }
    };
    let _ = terminal.release().await;
    let ended = match (status.exit_code, &status.signal) {
        (Some(code), _) => format!("exit code {code}"),
        (None, Some(signal)) => format!("killed by {signal}"),
        (None, None) => "exit unknown".to_owned(),
    };
    let result = format!("$ {command}\n{output}\n({ended})");
    let update = turn.tool_call_update(&call).content(terminal.content()).text(result.clone());
    if status.exit_code == Some(0) {
        update.complete().await;
    } else {
        update.fail().await;
    }
    Some(result)
}
