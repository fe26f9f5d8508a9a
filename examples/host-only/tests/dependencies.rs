//! A host-only product compiles neither database nor an HTTP stack: the dependency tree cargo
//! resolves for this binary (normal and build dependencies, the features of this package alone)
//! has the facade and none of them; and the binary it builds serves ACP.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

/// What a host-only build must not compile.
const FORBIDDEN: &[&str] = &[
    "rusqlite",
    "libsqlite3-sys",
    "tokio-postgres",
    "deadpool-postgres",
    "postgres-protocol",
    "acp-facade-runner",
    "hyper",
    "axum",
    "tokio-tungstenite",
    "rustls",
];

/// The package names in this binary's resolved dependency tree.
fn compiled_packages() -> Vec<String> {
    let output = Command::new(env!("CARGO"))
        .args(["tree", "--locked", "-p", env!("CARGO_PKG_NAME"), "-e", "normal,build", "--prefix", "none"])
        .args(["--format", "{p}"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run cargo tree");
    assert!(output.status.success(), "cargo tree failed: {}", String::from_utf8_lossy(&output.stderr));
    let tree = String::from_utf8(output.stdout).expect("cargo tree prints UTF-8");
    tree.lines().filter_map(|line| line.split_whitespace().next()).map(str::to_owned).collect()
}

#[test]
fn a_host_only_binary_compiles_no_database_and_no_http_stack() {
    let packages = compiled_packages();
    assert!(packages.iter().any(|p| p == "acp-facade"), "the facade is in the tree: {packages:?}");
    assert!(packages.iter().any(|p| p == "tokio"), "its runtime too: {packages:?}");
    let found: Vec<&String> = packages.iter().filter(|p| FORBIDDEN.contains(&p.as_str())).collect();
    assert!(found.is_empty(), "a host-only build compiles {found:?}");
}

#[test]
fn the_host_only_binary_serves_a_prompt() {
    let mut agent = Command::new(env!("CARGO_BIN_EXE_acp-facade-host-only"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the host-only agent");
    let mut stdin = agent.stdin.take().expect("stdin");
    let mut lines = BufReader::new(agent.stdout.take().expect("stdout")).lines();
    let mut send = |value: serde_json::Value| writeln!(stdin, "{value}").expect("write a message");
    let mut next = move || -> serde_json::Value {
        serde_json::from_str(&lines.next().expect("a message").expect("read a line")).expect("JSON")
    };

    send(serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}));
    assert_eq!(next()["result"]["protocolVersion"], 1);
    send(serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "session/new",
        "params": {"cwd": "/", "mcpServers": []}}));
    let session = next()["result"]["sessionId"].as_str().expect("a session id").to_owned();
    send(serde_json::json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
        "params": {"sessionId": session, "prompt": [{"type": "text", "text": "hello host"}]}}));
    let mut echoed = String::new();
    let stop = loop {
        let message = next();
        if message["id"] == 3 {
            break message["result"]["stopReason"].clone();
        }
        if message["params"]["update"]["sessionUpdate"] == "agent_message_chunk" {
            echoed.push_str(message["params"]["update"]["content"]["text"].as_str().unwrap_or_default());
        }
    };
    assert_eq!(stop, "end_turn");
    assert_eq!(echoed, "hello host");
    drop(stdin);
    assert!(agent.wait().expect("the agent exits").success(), "the agent exits cleanly when stdin closes");
}
