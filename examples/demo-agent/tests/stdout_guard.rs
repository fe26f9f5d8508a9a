//! The stdout guard: host code printing to stdout never reaches the protocol stream.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};

#[test]
fn prints_from_host_code_go_to_stderr_not_the_protocol_stream() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_noisy_agent"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn the noisy agent");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let mut read = |wanted: &str| -> Vec<serde_json::Value> {
        let mut seen = Vec::new();
        loop {
            let mut line = String::new();
            assert!(stdout.read_line(&mut line).expect("read") > 0, "the agent closed stdout");
            let value: serde_json::Value =
                serde_json::from_str(&line).unwrap_or_else(|e| panic!("non-protocol line on stdout {line:?}: {e}"));
            let done =
                value.get("id").and_then(serde_json::Value::as_i64).map(|id| id.to_string()).as_deref() == Some(wanted);
            seen.push(value);
            if done {
                return seen;
            }
        }
    };
    writeln!(stdin, r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"protocolVersion":1}}}}"#).unwrap();
    read("1");
    writeln!(stdin, r#"{{"jsonrpc":"2.0","id":2,"method":"session/new","params":{{"cwd":"/tmp","mcpServers":[]}}}}"#)
        .unwrap();
    let session = read("2").last().unwrap()["result"]["sessionId"].as_str().unwrap().to_owned();
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{{"sessionId":"{session}","prompt":[{{"type":"text","text":"hello"}}]}}}}"#
    )
    .unwrap();
    let turn = read("3");
    assert_eq!(turn.last().unwrap()["result"]["stopReason"], "end_turn");
    assert!(turn.iter().any(|m| m.pointer("/params/update/content/text") == Some(&"hello".into())));
    drop(stdin);
    let mut rest = String::new();
    stdout.read_to_string(&mut rest).unwrap();
    assert!(rest.trim().is_empty(), "nothing but protocol after the last response: {rest:?}");
    assert!(child.wait().unwrap().success());
    let mut stderr = String::new();
    child.stderr.take().unwrap().read_to_string(&mut stderr).unwrap();
    assert!(stderr.contains("STRAY OUTPUT from a host: hello"), "stray prints land on stderr: {stderr:?}");
    assert!(stderr.contains("MORE STRAY OUTPUT"));
}
