//! `session/new`: `Setup` validation (absolute, canonical `cwd`), MCP servers passed through to the
//! host, and the bounded live-session registry.

use crate::common;

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;

use acp_facade::Options;
use common::host::ScriptedHost;
use common::{TestClient, assert_serving, code};
use serde_json::{Value, json};

/// A fresh directory under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> Self {
        let unique = format!(
            "acp-facade-{tag}-{}-{}",
            std::process::id(),
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos()
        );
        let path = std::env::temp_dir().join(unique);
        std::fs::create_dir_all(&path).unwrap();
        Self(path)
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[tokio::test]
async fn a_relative_cwd_is_invalid_params_and_never_reaches_the_host() {
    let host = ScriptedHost::new();
    let mut client = TestClient::initialized(Options::new(host.clone())).await;
    for cwd in ["relative/dir", ".", "", "./tmp", "../etc", "~/work"] {
        let error = client.call_err("session/new", json!({"cwd": cwd, "mcpServers": []})).await;
        assert_eq!(code(&error), -32602, "cwd {cwd:?}: {error}");
        assert!(error["message"].as_str().unwrap().contains("cwd"), "{error}");
    }
    assert!(host.setups.lock().unwrap().is_empty());
    assert_serving(&mut client).await;
    client.hang_up().await;
}

#[tokio::test]
async fn the_cwd_reaches_the_host_canonicalized() {
    let dir = TempDir::new("canon");
    let real = dir.path().join("real");
    std::fs::create_dir_all(real.join("sub")).unwrap();
    let link = dir.path().join("link");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let canonical = std::fs::canonicalize(&real).unwrap();

    let host = ScriptedHost::new();
    let mut client = TestClient::initialized(Options::new(host.clone())).await;
    let cases = [
        link.clone(),
        link.join("sub").join(".."),
        real.join("sub").join(".."),
        real.join(".").join("sub").join("..").join("."),
    ];
    for cwd in &cases {
        client.call_ok("session/new", json!({"cwd": cwd, "mcpServers": []})).await;
    }
    let setups = host.setups.lock().unwrap().clone();
    assert_eq!(setups.len(), cases.len());
    for (setup, sent) in setups.iter().zip(&cases) {
        assert_eq!(setup.cwd(), canonical.as_path(), "sent {}", sent.display());
    }
    // A path through a symlink to a subdirectory resolves to that subdirectory.
    client.call_ok("session/new", json!({"cwd": link.join("sub"), "mcpServers": []})).await;
    assert_eq!(host.setups.lock().unwrap().last().unwrap().cwd(), canonical.join("sub").as_path());
    client.hang_up().await;
}

#[tokio::test]
async fn mcp_servers_are_passed_through_to_the_host() {
    let host = ScriptedHost::new();
    let mut client = TestClient::initialized(Options::new(host.clone())).await;
    let servers = json!([
        {"name": "files", "command": "/usr/bin/mcp-files", "args": ["--root", "/tmp"],
         "env": [{"name": "TOKEN", "value": "abc"}, {"name": "MODE", "value": "ro"}]},
        {"name": "search", "command": "/opt/search/bin/server", "args": [], "env": []},
    ]);
    client.call_ok("session/new", json!({"cwd": "/tmp", "mcpServers": servers})).await;
    client.call_ok("session/new", json!({"cwd": "/tmp", "mcpServers": []})).await;
    let setups = host.setups.lock().unwrap().clone();
    let first = serde_json::to_value(setups[0].mcp_servers()).unwrap();
    assert_eq!(first, servers);
    assert!(setups[1].mcp_servers().is_empty());
    client.hang_up().await;
}

#[tokio::test]
async fn each_session_gets_its_own_id_from_the_host() {
    let host = ScriptedHost::new();
    let mut client = TestClient::initialized(Options::new(host.clone())).await;
    let mut ids = Vec::new();
    for _ in 0..5 {
        ids.push(client.new_session().await);
    }
    assert_eq!(ids, ["s1", "s2", "s3", "s4", "s5"]);
    client.hang_up().await;
}

async fn new_session(client: &mut TestClient) -> Value {
    let id = client.send_request("session/new", json!({"cwd": "/tmp", "mcpServers": []})).await;
    client.response(&id).await
}

#[tokio::test]
async fn the_registry_is_bounded_and_closing_makes_room() {
    let host = ScriptedHost::new();
    let mut client = TestClient::initialized(Options::new(host.clone()).max_sessions(2)).await;
    let a = client.new_session().await;
    let b = client.new_session().await;

    let error = client.call_err("session/new", json!({"cwd": "/tmp", "mcpServers": []})).await;
    assert!(code(&error) < 0 && code(&error) != -32603, "{error}");
    let message = error["message"].as_str().unwrap();
    assert!(message.contains("session") && message.contains('2'), "not a clear message: {error}");
    assert_eq!(host.sessions.lock().unwrap().len(), 2, "the host was asked for a third session");

    client.call_ok("session/close", json!({"sessionId": a})).await;
    let c = client.new_session().await;
    assert_ne!(c, a);
    assert!(new_session(&mut client).await.get("error").is_some());

    client.call_ok("session/close", json!({"sessionId": b})).await;
    client.call_ok("session/close", json!({"sessionId": c})).await;
    client.new_session().await;
    client.new_session().await;
    assert!(new_session(&mut client).await.get("error").is_some());
    client.hang_up().await;
}

#[tokio::test]
async fn failed_creations_do_not_use_up_the_registry() {
    let host = ScriptedHost::new();
    let mut client = TestClient::initialized(Options::new(host.clone()).max_sessions(2)).await;
    *host.fail_with.lock().unwrap() = Some(acp_facade::Error::internal_error());
    for _ in 0..5 {
        assert!(new_session(&mut client).await.get("error").is_some());
    }
    *host.fail_with.lock().unwrap() = None;
    host.panic.store(true, Ordering::SeqCst);
    for _ in 0..3 {
        assert_eq!(code(&new_session(&mut client).await["error"]), -32603);
    }
    host.panic.store(false, Ordering::SeqCst);
    // Bad params are rejected before a slot is taken.
    for _ in 0..3 {
        let error = client.call_err("session/new", json!({"cwd": "nope", "mcpServers": []})).await;
        assert_eq!(code(&error), -32602);
    }
    client.new_session().await;
    client.new_session().await;
    assert!(new_session(&mut client).await.get("error").is_some());
    client.hang_up().await;
}

#[tokio::test]
async fn concurrent_creations_never_exceed_the_limit() {
    let host = ScriptedHost::new();
    let mut client = TestClient::initialized(Options::new(host.clone()).max_sessions(3)).await;
    let mut ids = Vec::new();
    for _ in 0..10 {
        ids.push(client.send_request("session/new", json!({"cwd": "/tmp", "mcpServers": []})).await);
    }
    let mut ok = 0;
    for id in &ids {
        if client.response(id).await.get("result").is_some() {
            ok += 1;
        }
    }
    assert_eq!(ok, 3);
    assert_eq!(host.sessions.lock().unwrap().len(), 3);
    client.hang_up().await;
}

/// A host that hands back a session with a malformed id: the request fails with
/// `-32603` naming the problem, the session is shut down again (never leaked), nothing is
/// registered, and the agent keeps serving — for `session/new`, `load` and `resume` alike.
#[tokio::test]
async fn a_malformed_session_id_from_the_host_is_an_internal_error_and_the_session_is_discarded() {
    use common::lifecycle::{RichHost, SessionSpec};
    let host = RichHost::new(SessionSpec::default());
    host.store("stored", Vec::new());
    let options = Options::new(host.clone()).loader(host.clone()).resumer(host.clone());
    let mut client = TestClient::initialized(options).await;
    let agent_sessions = |host: &RichHost| host.all_sessions().iter().map(|s| s.shutdown_count()).collect::<Vec<_>>();

    for bad in ["", "line\nbreak", &"x".repeat(300)] {
        *host.create_as.lock().unwrap() = Some(bad.to_owned());
        let error = client.call_err("session/new", json!({"cwd": "/tmp", "mcpServers": []})).await;
        assert_eq!(code(&error), -32603, "{error}");
        assert!(error["message"].as_str().unwrap().contains("bad session id"), "{error}");
    }
    *host.reopen_as.lock().unwrap() = Some("bad\u{7}id".to_owned());
    for method in ["session/load", "session/resume"] {
        let error = client.call_err(method, json!({"sessionId": "stored", "cwd": "/tmp", "mcpServers": []})).await;
        assert_eq!(code(&error), -32603, "{method}: {error}");
    }
    assert_eq!(agent_sessions(&host), [1, 1, 1, 1, 1], "every session the host opened was shut down once");
    *host.create_as.lock().unwrap() = None;
    *host.reopen_as.lock().unwrap() = None;
    client.call_ok("session/new", json!({"cwd": "/tmp", "mcpServers": []})).await;
    client.call_ok("session/resume", json!({"sessionId": "stored", "cwd": "/tmp", "mcpServers": []})).await;
    assert_serving(&mut client).await;
    client.hang_up().await;
}
