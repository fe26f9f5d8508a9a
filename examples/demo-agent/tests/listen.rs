//! `--listen`, `--token`, `--allow-origin`: the demo served remotely. Bad command lines exit 2
//! with one line on stderr; a listening demo prints exactly one `listening on URL` line, answers
//! `initialize` over HTTP, and ends with status 0 on SIGTERM. (The official SDK's remote clients
//! drive it in bindings-node/test/remote_sdk.test.mjs.)

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;

use common::{DEMO, Demo, STEP};
use serde_json::{Value, json};

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
        &["--listen", "127.0.0.1:0", "--tls-cert", "cert.pem"],
        &["--listen", "127.0.0.1:0", "--tls-key", "key.pem"],
        &["--tls-cert", "cert.pem", "--tls-key", "key.pem"],
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
    for option in
        ["--listen HOST:PORT", "--token NAME:SECRET", "--allow-origin ORIGIN", "--tls-cert FILE --tls-key FILE"]
    {
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

/// Starts a listening demo with `args`; returns it, its stderr, and the URL of its ready line.
fn listening(args: &[&str]) -> (Child, BufReader<std::process::ChildStderr>, String) {
    let mut child = Command::new(DEMO)
        .args(args)
        .args(["--listen", "127.0.0.1:0"])
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
    (child, stderr, url.to_owned())
}

/// One HTTP/1.1 request on a fresh connection (`Connection: close`): the whole response.
fn http(authority: &str, method: &str, headers: &[(&str, &str)], body: &str) -> String {
    let mut stream = TcpStream::connect(authority).unwrap();
    let mut request = format!("{method} /acp HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n");
    for (name, value) in headers {
        request.push_str(&[name, ": ", value, "\r\n"].concat());
    }
    request.push_str(
        &["Content-Type: application/json\r\nContent-Length: ", &body.len().to_string(), "\r\n\r\n", body].concat(),
    );
    stream.write_all(request.as_bytes()).unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    response
}

/// An SSE stream of the demo, read on its own thread: each event's JSON, in order.
fn events(authority: &str, headers: &[(&str, &str)]) -> mpsc::Receiver<Value> {
    let mut stream = TcpStream::connect(authority).unwrap();
    let mut request = format!("GET /acp HTTP/1.1\r\nHost: {authority}\r\nAccept: text/event-stream\r\n");
    for (name, value) in headers {
        request.push_str(&[name, ": ", value, "\r\n"].concat());
    }
    request.push_str("\r\n");
    stream.write_all(request.as_bytes()).unwrap();
    let (sender, receiver) = mpsc::channel();
    std::thread::spawn(move || {
        // Chunked transfer: the chunk sizes are lines of their own, the events' `data:` lines whole.
        for line in BufReader::new(stream).lines() {
            let Ok(line) = line else { return };
            if let Some(data) = line.strip_prefix("data:")
                && sender.send(serde_json::from_str(data.trim_start()).expect("an event's data is JSON")).is_err()
            {
                return;
            }
        }
    });
    receiver
}

/// The next event of `events` that `done` accepts.
fn wait_event(events: &mpsc::Receiver<Value>, done: impl Fn(&Value) -> bool) -> Value {
    loop {
        let event = events.recv_timeout(STEP).expect("an event in time");
        if done(&event) {
            return event;
        }
    }
}

#[test]
fn sigterm_during_a_turn_answers_it_exits_0_and_the_turn_is_recorded() {
    let dir = std::env::temp_dir().join(format!("acp-demo-sigterm-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let store = dir.join("demo.sqlite");
    let store = store.to_str().unwrap();
    let (mut child, mut stderr, url) = listening(&["--store", store]);
    let authority = url.strip_prefix("http://").and_then(|rest| rest.strip_suffix("/acp")).unwrap().to_owned();

    let initialize = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}});
    let answer = http(&authority, "POST", &[], &initialize.to_string());
    let connection = answer
        .lines()
        .find_map(|line| line.to_ascii_lowercase().strip_prefix("acp-connection-id: ").map(str::to_owned))
        .unwrap_or_else(|| panic!("{answer}"));
    let connection_events = events(&authority, &[("Acp-Connection-Id", &connection)]);
    let new = json!({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/tmp", "mcpServers": []}});
    assert!(
        http(&authority, "POST", &[("Acp-Connection-Id", &connection)], &new.to_string()).starts_with("HTTP/1.1 202")
    );
    let session = wait_event(&connection_events, |e| e["id"] == 1)["result"]["sessionId"].as_str().unwrap().to_owned();
    let session_events = events(&authority, &[("Acp-Connection-Id", &connection), ("Acp-Session-Id", &session)]);
    let chunks = 20_000;
    let prompt = json!({"jsonrpc": "2.0", "id": 2, "method": "session/prompt",
        "params": {"sessionId": session, "prompt": [{"type": "text", "text": format!("stream {chunks}")}]}});
    let headers = [("Acp-Connection-Id", connection.as_str()), ("Acp-Session-Id", session.as_str())];
    assert!(http(&authority, "POST", &headers, &prompt.to_string()).starts_with("HTTP/1.1 202"));
    // The turn is running: SIGTERM now.
    wait_event(&session_events, |e| e["params"]["update"]["sessionUpdate"] == "agent_message_chunk");
    assert!(Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap().success());
    let answer = wait_event(&session_events, |e| e["id"] == 2 && e.get("method").is_none());
    let stop = answer["result"]["stopReason"].as_str().unwrap_or_else(|| panic!("{answer}")).to_owned();
    assert!(stop == "end_turn" || stop == "cancelled", "{answer}");
    let status = child.wait().unwrap();
    let mut rest = String::new();
    stderr.read_to_string(&mut rest).unwrap();
    assert_eq!(status.code(), Some(0), "{rest}");

    // A new process on the same store loads the session, the turn in it.
    let mut demo = Demo::initialized(&["--store", store]);
    let id = demo.send_request("session/load", json!({"sessionId": session, "cwd": "/tmp", "mcpServers": []}));
    let (loaded, replay) = demo.response_with_preceding(&id);
    assert!(loaded.get("result").is_some(), "{loaded}");
    let said: String = replay
        .iter()
        .filter(|m| m["params"]["update"]["sessionUpdate"] == "agent_message_chunk")
        .map(|m| m["params"]["update"]["content"]["text"].as_str().unwrap())
        .collect();
    let recorded = said.split_terminator(' ').count();
    assert!(recorded > 0, "the turn's chunks are recorded");
    let expected: String = (1..=recorded).map(|i| ["t", &i.to_string(), " "].concat()).collect();
    assert_eq!(said, expected, "every chunk up to the last recorded, in order");
    if stop == "end_turn" {
        assert_eq!(recorded, chunks, "a turn that ended is recorded whole");
    }
    assert!(demo.hang_up());
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_demo_given_a_certificate_and_key_listens_on_https() {
    let dir = std::env::temp_dir().join(format!("acp-demo-tls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let generated = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    std::fs::write(&cert, generated.cert.pem()).unwrap();
    std::fs::write(&key, generated.signing_key.serialize_pem()).unwrap();
    let args = ["--store", ":memory:", "--tls-cert", cert.to_str().unwrap(), "--tls-key", key.to_str().unwrap()];
    let (mut child, mut stderr, url) = listening(&args);
    assert!(url.starts_with("https://127.0.0.1:") && url.ends_with("/acp"), "{url}");
    assert!(Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap().success());
    let status = child.wait().unwrap();
    let mut rest = String::new();
    stderr.read_to_string(&mut rest).unwrap();
    assert_eq!(status.code(), Some(0), "{rest}");
    std::fs::remove_dir_all(dir).unwrap();
}
