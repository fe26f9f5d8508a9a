//! Logs on stderr carry ANSI colour codes only for a person at a terminal: an editor's agent log,
//! a file or a pipe gets plain text (`acp_facade::logging::stderr_ansi`), and `NO_COLOR` turns the
//! colours off on a terminal too.

mod common;

use std::process::{Command, Stdio};

use common::DEMO;
use serde_json::json;

/// The start of every ANSI escape sequence the log formatter writes.
const ESC: &str = "\x1b[";

/// A store that cannot be opened: a file below `/dev/null`.
const BAD_STORE: &str = "/dev/null/demo.sqlite";

#[test]
fn a_store_error_reaches_a_pipe_without_colour_codes() {
    let out = Command::new(DEMO)
        .args(["--store", BAD_STORE])
        .stdin(Stdio::null())
        .env_remove("NO_COLOR")
        .env_remove("ACP_FACADE_LOG")
        .output()
        .expect("run the demo");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("cannot open the session store"), "the error is logged: {stderr:?}");
    assert!(!stderr.contains(ESC), "no colour codes in a pipe: {stderr:?}");
}

/// The demo's stderr (a pipe) after it served `initialize`, received a response to a request it
/// never sent (a warning) and made a session (an info line in a request's span), with
/// `ACP_FACADE_LOG` set to `log` or unset.
fn serve_with_a_stray_response(log: Option<&str>) -> String {
    let mut command = Command::new(DEMO);
    command.args(["--store", ":memory:"]).env_remove("NO_COLOR");
    match log {
        Some(filter) => command.env("ACP_FACADE_LOG", filter),
        None => command.env_remove("ACP_FACADE_LOG"),
    };
    let mut child =
        command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("start the demo");
    {
        use std::io::Write as _;
        let mut stdin = child.stdin.take().expect("stdin");
        let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}});
        writeln!(stdin, "{initialize}").expect("write");
        writeln!(stdin, r#"{{"jsonrpc":"2.0","id":"never-sent","result":{{}}}}"#).expect("write");
        let new =
            json!({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": "/tmp", "mcpServers": []}});
        writeln!(stdin, "{new}").expect("write");
    } // stdin closed: the demo ends.
    let out = child.wait_with_output().expect("run the demo");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    assert!(String::from_utf8_lossy(&out.stdout).contains(r#""id":1"#), "initialize was answered");
    stderr
}

#[test]
fn a_warning_while_serving_reaches_a_pipe_without_colour_codes() {
    let stderr = serve_with_a_stray_response(None);
    assert!(stderr.contains("WARN") && stderr.contains("never sent"), "the warning is logged: {stderr:?}");
    assert!(!stderr.contains(ESC), "no colour codes in a pipe: {stderr:?}");
}

#[test]
fn debug_logs_reach_a_pipe_without_colour_codes() {
    let stderr = serve_with_a_stray_response(Some("debug"));
    assert!(stderr.contains("INFO") && stderr.contains("request{method=session/new"), "spans and fields: {stderr:?}");
    assert!(!stderr.contains(ESC), "no colour codes in a pipe: {stderr:?}");
}

/// The demo's stderr on a terminal (`script` from util-linux runs it on a pseudo-terminal), with
/// `NO_COLOR` set to `no_color` or unset.
fn store_error_on_a_terminal(no_color: Option<&str>) -> String {
    let mut command = Command::new("script");
    command
        .args(["--quiet", "--return", "--command", &format!("{DEMO} --store {BAD_STORE}"), "/dev/null"])
        .env_remove("ACP_FACADE_LOG")
        .stdin(Stdio::null());
    match no_color {
        Some(value) => command.env("NO_COLOR", value),
        None => command.env_remove("NO_COLOR"),
    };
    let out = command.output().expect("script (util-linux) runs the demo on a pseudo-terminal");
    let shown = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(shown.contains("cannot open the session store"), "{shown:?}");
    shown
}

#[test]
fn a_terminal_gets_colours_unless_no_color_is_set() {
    assert!(store_error_on_a_terminal(None).contains(ESC), "a person at a terminal sees colours");
    assert!(store_error_on_a_terminal(Some("")).contains(ESC), "an empty NO_COLOR does not count");
    let plain = store_error_on_a_terminal(Some("1"));
    assert!(!plain.contains(ESC), "NO_COLOR=1 turns them off: {plain:?}");
}
