//! MCP servers of `session/new`, `load` and `resume`: stdio always; `http` and `sse` only when
//! `mcpCapabilities` advertises them — any other is refused (`-32602`, naming the server) before
//! any host call, also when the client re-attaches to a live session. What passes reaches the
//! host's `Setup` and the runner's `Turn` as given, in order.

use crate::common;

use acp_facade::Options;
use acp_facade::acp::{McpCapabilities, McpServer};
use common::host::ScriptedHost;
use common::lifecycle::{RichHost, SessionSpec};
use common::rich::{rich_client, rich_runner};
use common::{TestClient, code, updates};
use serde_json::{Value, json};

fn stdio(name: &str) -> Value {
    json!({"name": name, "command": "/usr/bin/mcp-server", "args": ["--stdio"], "env": [{"name": "K", "value": "v"}]})
}

fn http(name: &str) -> Value {
    json!({"type": "http", "name": name, "url": "https://example.com/mcp", "headers": []})
}

fn sse(name: &str) -> Value {
    json!({"type": "sse", "name": name, "url": "https://example.com/sse", "headers": []})
}

fn names(servers: &[McpServer]) -> Vec<String> {
    servers
        .iter()
        .map(|s| match s {
            McpServer::Stdio(s) => format!("{}(stdio)", s.name),
            McpServer::Http(s) => format!("{}(http)", s.name),
            McpServer::Sse(s) => format!("{}(sse)", s.name),
            _ => "other".to_owned(),
        })
        .collect()
}

async fn refused(client: &mut TestClient, method: &str, params: Value, index: usize, transport: &str) {
    let error = client.call_err(method, params).await;
    assert_eq!(code(&error), -32602, "{method}: {error}");
    let message = error["message"].as_str().unwrap();
    assert!(message.contains(&format!("mcpServers[{index}]")) && message.contains(transport), "{message}");
}

#[tokio::test]
async fn transports_not_advertised_are_refused_before_the_host_is_called() {
    let host = ScriptedHost::new();
    let mut client = TestClient::start(Options::new(host.clone()));
    let caps = client.initialize().await["agentCapabilities"].clone();
    assert_eq!(caps["mcpCapabilities"], json!({"http": false, "sse": false}));
    for (servers, index, transport) in [(json!([http("web")]), 0, "http"), (json!([stdio("fs"), sse("old")]), 1, "sse")]
    {
        refused(&mut client, "session/new", json!({"cwd": "/tmp", "mcpServers": servers}), index, transport).await;
    }
    assert!(host.setups.lock().unwrap().is_empty(), "no session/new reached the host");
    // Stdio servers always pass, as given.
    client.call_ok("session/new", json!({"cwd": "/tmp", "mcpServers": [stdio("fs"), stdio("git")]})).await;
    assert_eq!(names(host.setups.lock().unwrap()[0].mcp_servers()), ["fs(stdio)", "git(stdio)"]);
}

#[tokio::test]
async fn advertised_transports_pass_in_order_and_the_rest_are_still_refused() {
    let host = ScriptedHost::new();
    let options = Options::new(host.clone()).mcp_capabilities(McpCapabilities::new().http(true));
    let mut client = TestClient::start(options);
    let caps = client.initialize().await["agentCapabilities"].clone();
    assert_eq!(caps["mcpCapabilities"], json!({"http": true, "sse": false}));
    client.call_ok("session/new", json!({"cwd": "/tmp", "mcpServers": [http("web"), stdio("fs")]})).await;
    assert_eq!(names(host.setups.lock().unwrap()[0].mcp_servers()), ["web(http)", "fs(stdio)"]);
    refused(&mut client, "session/new", json!({"cwd": "/tmp", "mcpServers": [http("web"), sse("old")]}), 1, "sse")
        .await;
    assert_eq!(host.setups.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn load_resume_and_reattach_refuse_before_any_host_call() {
    let host = RichHost::new(SessionSpec::default());
    host.store("stored", Vec::new());
    let options = Options::new(host.clone()).loader(host.clone()).resumer(host.clone());
    let mut client = TestClient::initialized(options).await;
    for method in ["session/load", "session/resume"] {
        let params = json!({"sessionId": "stored", "cwd": "/tmp", "mcpServers": [stdio("fs"), sse("old")]});
        refused(&mut client, method, params, 1, "sse").await;
    }
    assert!(host.loads.lock().unwrap().is_empty() && host.resumes.lock().unwrap().is_empty());
    // The session live on this connection: a re-attach is refused too, and nothing is replayed.
    client.call_ok("session/load", json!({"sessionId": "stored", "cwd": "/tmp", "mcpServers": [stdio("fs")]})).await;
    assert_eq!(names(host.setups.lock().unwrap()[0].1.mcp_servers()), ["fs(stdio)"]);
    let id = client
        .send_request("session/load", json!({"sessionId": "stored", "cwd": "/tmp", "mcpServers": [http("web")]}))
        .await;
    let (response, before) = client.response_with_preceding(&id).await;
    assert_eq!(code(&response["error"]), -32602, "{response}");
    assert!(updates(&before).is_empty(), "nothing replayed for a refused re-attach: {before:?}");
    assert_eq!(host.loads.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn the_runner_turn_sees_the_sessions_servers() {
    let (runner, turns) = rich_runner();
    let mut client = rich_client(&runner, |o| o.mcp_capabilities(McpCapabilities::new().http(true))).await;
    let created = client.call_ok("session/new", json!({"cwd": "/tmp", "mcpServers": [stdio("fs"), http("web")]})).await;
    let sid = created["sessionId"].as_str().unwrap().to_owned();
    let id = client.prompt(&sid, "hello").await;
    client.response(&id).await;
    assert_eq!(names(&turns.seen()[0].mcp_servers), ["fs(stdio)", "web(http)"]);
    // A session reopened by `session/resume` gets the servers of that request.
    client.call_ok("session/close", json!({"sessionId": sid})).await;
    client.call_ok("session/resume", json!({"sessionId": sid, "cwd": "/tmp", "mcpServers": [http("other")]})).await;
    let id = client.prompt(&sid, "again").await;
    client.response(&id).await;
    assert_eq!(names(&turns.seen()[1].mcp_servers), ["other(http)"]);
}
