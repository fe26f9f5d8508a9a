//! `--listen`, `--token`, `--allow-origin`: the demo served remotely. Bad command lines exit 2
//! with one line on stderr; a listening demo prints exactly one `listening on URL` line, answers
//! `initialize` over HTTP, and ends with status 0 on SIGTERM. (The official SDK's remote clients
//! drive it in bindings-node/test/remote_sdk.test.mjs.)

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};

use common::DEMO;

#[test]
fn bad_remote_command_lines_exit_2_with_one_line_on_stderr() {
    for args in [
        &["--listen"][..],
        &["--listen", "no-port"],
        &["--token", "alice:s3cret"],
        &["--allow-origin", "https://editor.example"],
        &["--listen", "127.0.0.1:0", "--token", "no-colon"],
        &["--listen", "127.0.0.1:0", "--token", ":secret"],
        &["--listen", "0.0.0.0:0"],
    ] {
        let out = Command::new(DEMO).args(["--store", ":memory:"]).args(args).stdin(Stdio::null()).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(out.stdout.is_empty(), "{args:?}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
    }
}

#[test]
fn the_usage_names_the_remote_options() {
    let out = Command::new(DEMO).arg("--help").output().unwrap();
    let usage = String::from_utf8(out.stdout).unwrap();
    for option in ["--listen HOST:PORT", "--token NAME:SECRET", "--allow-origin ORIGIN"] {
        assert!(usage.contains(option), "{option} in {usage}");
    }
}

#[test]
fn a_listening_demo_answers_initialize_over_http_and_ends_gracefully_on_sigterm() {
    let mut child = Command::new(DEMO)
        .args(["--store", ":memory:", "--listen", "127.0.0.1:0", "--token", "alice:s3cret"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env_remove("ACP_FACADE_LOG")
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    let url = line.trim_end().strip_prefix("listening on ").unwrap_or_else(|| panic!("the ready line: {line:?}"));
    let authority =
        url.strip_prefix("http://").and_then(|rest| rest.strip_suffix("/acp")).expect("http://HOST:PORT/acp");
    assert!(authority.starts_with("127.0.0.1:") && !authority.ends_with(":0"), "{authority}");

    let body = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}"#;
    let post = |token: &str| {
        let mut stream = TcpStream::connect(authority).unwrap();
        write!(
            stream,
            "POST /acp HTTP/1.1\r\nHost: {authority}\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).unwrap();
        response
    };
    let refused = post("wrong");
    assert!(refused.starts_with("HTTP/1.1 401"), "{refused}");
    let answered = post("s3cret");
    assert!(answered.starts_with("HTTP/1.1 200"), "{answered}");
    assert!(answered.to_ascii_lowercase().contains("acp-connection-id: "), "{answered}");
    assert!(answered.contains(r#""name":"acp-facade-demo""#), "{answered}");

    let killed = Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    assert!(killed.success());
    let status = child.wait().unwrap();
    let mut rest = String::new();
    stderr.read_to_string(&mut rest).unwrap();
    assert_eq!(status.code(), Some(0), "{rest}");
    assert_eq!(rest, "", "nothing more on stderr after the ready line");
    let mut stdout = String::new();
    child.stdout.take().unwrap().read_to_string(&mut stdout).unwrap();
    assert_eq!(stdout, "", "nothing on stdout");
}
