//! `initialize` (version negotiation, `agentInfo`, the capability table derived from the host parts)
//! and `authenticate` / `logout` through an optional [`Authenticator`].

use crate::common;

use std::sync::Arc;
use std::sync::atomic::Ordering;

use acp_facade::Options;
use acp_facade::acp::{PromptCapabilities, SessionId};
use acp_facade::host::{
    HostResult, LiveSession, LoadedSession, SessionCatalog, SessionCatalogEntry, SessionDeleter, SessionLoader,
    SessionResumer, Setup,
};
use async_trait::async_trait;
use common::auth::TestAuth;
use common::host::ScriptedHost;
use common::{TestClient, assert_serving, code};
use serde_json::{Value, json};

// ---------------------------------------------------------------------------------------------
// Version negotiation and agentInfo
// ---------------------------------------------------------------------------------------------

async fn negotiated(client_version: u64) -> Value {
    let mut client = TestClient::start(Options::new(ScriptedHost::new()));
    let result =
        client.call_ok("initialize", json!({"protocolVersion": client_version, "clientCapabilities": {}})).await;
    // Initialized either way: the connection serves.
    assert_serving(&mut client).await;
    client.hang_up().await;
    result["protocolVersion"].clone()
}

#[tokio::test]
async fn the_clients_version_is_echoed_when_supported() {
    assert_eq!(negotiated(1).await, json!(1));
}

#[tokio::test]
async fn an_unsupported_version_gets_the_newest_supported_one_and_never_an_error() {
    for version in [0, 2, 3, 999, 65535] {
        assert_eq!(negotiated(version).await, json!(1), "client version {version}");
    }
}

#[tokio::test]
async fn initialize_without_client_capabilities_or_info_is_fine() {
    let mut client = TestClient::start(Options::new(ScriptedHost::new()));
    let result = client.call_ok("initialize", json!({"protocolVersion": 1})).await;
    assert_eq!(result["protocolVersion"], json!(1));
    let mut client2 = TestClient::start(Options::new(ScriptedHost::new()));
    let result = client2
        .call_ok(
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": "garbage", "clientInfo": {"name": "zed", "version": "1"}}),
        )
        .await;
    assert_eq!(result["protocolVersion"], json!(1));
    assert_serving(&mut client2).await;
    client.hang_up().await;
    client2.hang_up().await;
}

#[tokio::test]
async fn agent_info_comes_from_the_options() {
    let mut client = TestClient::start(Options::new(ScriptedHost::new()).agent_info("my-agent", "3.1.4"));
    let result = client.initialize().await;
    assert_eq!(result["agentInfo"]["name"], json!("my-agent"));
    assert_eq!(result["agentInfo"]["version"], json!("3.1.4"));
    client.hang_up().await;

    let mut client = TestClient::start(Options::new(ScriptedHost::new()));
    let result = client.initialize().await;
    assert_eq!(result["agentInfo"]["name"], json!("acp-facade"));
    assert!(result["agentInfo"]["version"].is_string());
    client.hang_up().await;
}

// ---------------------------------------------------------------------------------------------
// The capability table
// ---------------------------------------------------------------------------------------------

struct Stub;

#[async_trait]
impl SessionLoader for Stub {
    async fn load_session(&self, _: SessionId, _: Setup) -> HostResult<LoadedSession> {
        Err(acp_facade::Error::internal_error())
    }
}

#[async_trait]
impl SessionResumer for Stub {
    async fn resume_session(&self, _: SessionId, _: Setup) -> HostResult<Arc<dyn LiveSession>> {
        Err(acp_facade::Error::internal_error())
    }
}

#[async_trait]
impl SessionCatalog for Stub {
    async fn list_sessions(&self) -> HostResult<Vec<SessionCatalogEntry>> {
        Ok(Vec::new())
    }
}

#[async_trait]
impl SessionDeleter for Stub {
    async fn delete_session(&self, _: SessionId) -> HostResult<()> {
        Ok(())
    }
}

#[derive(Debug, Clone, Copy)]
enum Auth {
    None,
    WithoutLogout,
    WithLogout,
}

#[derive(Debug, Clone, Copy)]
#[allow(clippy::struct_excessive_bools, reason = "one flag per optional host part")]
struct Parts {
    loader: bool,
    resumer: bool,
    catalog: bool,
    deleter: bool,
    auth: Auth,
    close: bool,
}

fn options(parts: Parts) -> Options {
    let stub = Arc::new(Stub);
    let mut o = Options::new(ScriptedHost::new()).close(parts.close);
    if parts.loader {
        o = o.loader(stub.clone());
    }
    if parts.resumer {
        o = o.resumer(stub.clone());
    }
    if parts.catalog {
        o = o.catalog(stub.clone());
    }
    if parts.deleter {
        o = o.deleter(stub);
    }
    match parts.auth {
        Auth::None => o,
        Auth::WithoutLogout => o.authenticator(TestAuth::new(false)),
        Auth::WithLogout => o.authenticator(TestAuth::new(true)),
    }
}

/// A marker capability: present as `{}` when supported, absent (or null) otherwise.
fn marker(value: Option<&Value>, supported: bool, what: &str, parts: Parts) {
    if supported {
        assert_eq!(value, Some(&json!({})), "{what} must be advertised as {{}} for {parts:?}");
    } else {
        assert!(
            value.is_none() || value == Some(&Value::Null),
            "{what} must not be advertised for {parts:?}: {value:?}"
        );
    }
}

fn check_capabilities(result: &Value, parts: Parts) {
    let caps = &result["agentCapabilities"];
    assert!(caps.is_object(), "agentCapabilities missing: {result}");
    assert_eq!(
        caps.get("loadSession").and_then(Value::as_bool).unwrap_or(false),
        parts.loader,
        "loadSession for {parts:?}: {caps}"
    );
    let session = caps.get("sessionCapabilities").cloned().unwrap_or(json!({}));
    marker(session.get("list"), parts.catalog, "sessionCapabilities.list", parts);
    marker(session.get("delete"), parts.deleter, "sessionCapabilities.delete", parts);
    marker(session.get("resume"), parts.resumer, "sessionCapabilities.resume", parts);
    marker(session.get("close"), parts.close, "sessionCapabilities.close", parts);
    marker(session.get("additionalDirectories"), false, "sessionCapabilities.additionalDirectories", parts);
    for key in session.as_object().unwrap().keys() {
        assert!(
            ["list", "delete", "resume", "close", "_meta"].contains(&key.as_str()),
            "unexpected session capability {key} for {parts:?}: {caps}"
        );
    }
    let auth = caps.get("auth").cloned().unwrap_or(json!({}));
    marker(auth.get("logout"), matches!(parts.auth, Auth::WithLogout), "auth.logout", parts);
    // No prompt content beyond text and links unless configured; no http/sse MCP.
    for flag in ["image", "audio", "embeddedContext"] {
        assert!(
            !caps.pointer(&format!("/promptCapabilities/{flag}")).and_then(Value::as_bool).unwrap_or(false),
            "promptCapabilities.{flag} for {parts:?}"
        );
    }
    for flag in ["http", "sse"] {
        assert!(
            !caps.pointer(&format!("/mcpCapabilities/{flag}")).and_then(Value::as_bool).unwrap_or(false),
            "mcpCapabilities.{flag}"
        );
    }
    let methods: Vec<&str> = result
        .get("authMethods")
        .and_then(Value::as_array)
        .map(|a| a.iter().map(|m| m["id"].as_str().unwrap()).collect())
        .unwrap_or_default();
    match parts.auth {
        Auth::None => assert!(methods.is_empty(), "authMethods without an authenticator: {result}"),
        _ => assert_eq!(methods, ["token", "broken"], "{result}"),
    }
}

/// Exercises every gated method so that advertisement and dispatch agree: an un-advertised
/// method is `-32601`; an advertised one is anything else.
async fn check_dispatch(client: &mut TestClient, parts: Parts) {
    let gated: [(&str, Value, bool); 5] = [
        ("session/load", json!({"sessionId": "gone", "cwd": "/tmp", "mcpServers": []}), parts.loader),
        ("session/resume", json!({"sessionId": "gone", "cwd": "/tmp"}), parts.resumer),
        ("session/list", json!({}), parts.catalog),
        ("session/delete", json!({"sessionId": "gone"}), parts.deleter),
        ("session/close", json!({"sessionId": "gone"}), parts.close),
    ];
    for (method, params, advertised) in gated {
        let id = client.send_request(method, params).await;
        let response = client.response(&id).await;
        let not_found = response.get("error").is_some_and(|e| code(e) == -32601);
        assert_eq!(!not_found, advertised, "{method} for {parts:?}: {response}");
    }
}

#[tokio::test]
async fn capabilities_are_derived_exactly_from_the_host_parts() {
    let mut combinations = 0;
    for bits in 0..32u32 {
        for auth in [Auth::None, Auth::WithoutLogout, Auth::WithLogout] {
            let parts = Parts {
                loader: bits & 1 != 0,
                resumer: bits & 2 != 0,
                catalog: bits & 4 != 0,
                deleter: bits & 8 != 0,
                close: bits & 16 != 0,
                auth,
            };
            let mut client = TestClient::start(options(parts));
            let result = client.initialize().await;
            check_capabilities(&result, parts);
            check_dispatch(&mut client, parts).await;
            client.hang_up().await;
            combinations += 1;
        }
    }
    assert_eq!(combinations, 96);
}

#[tokio::test]
async fn prompt_capabilities_come_from_the_options() {
    let host = ScriptedHost::new();
    let caps = PromptCapabilities::new().image(true).embedded_context(true);
    let mut client = TestClient::start(Options::new(host).prompt_capabilities(caps));
    let result = client.initialize().await;
    let prompt = &result["agentCapabilities"]["promptCapabilities"];
    assert_eq!(prompt["image"], json!(true), "{result}");
    assert_eq!(prompt["embeddedContext"], json!(true), "{result}");
    assert!(!prompt.get("audio").and_then(Value::as_bool).unwrap_or(false), "{result}");
    client.hang_up().await;
}

// ---------------------------------------------------------------------------------------------
// authenticate / logout
// ---------------------------------------------------------------------------------------------

const NEW: fn() -> Value = || json!({"cwd": "/tmp", "mcpServers": []});

#[tokio::test]
async fn session_new_requires_authentication_until_authenticate_succeeds() {
    let auth = TestAuth::new(true);
    let host = ScriptedHost::new();
    let mut client = TestClient::initialized(Options::new(host.clone()).authenticator(auth.clone())).await;

    let error = client.call_err("session/new", NEW()).await;
    assert_eq!(code(&error), -32000, "{error}");
    assert!(host.sessions.lock().unwrap().is_empty(), "the host was called before authentication");

    let error = client.call_err("authenticate", json!({"methodId": "nope"})).await;
    assert_eq!(code(&error), -32602, "{error}");
    assert!(error["message"].as_str().unwrap().contains("nope"), "{error}");
    assert_eq!(code(&client.call_err("session/new", NEW()).await), -32000);

    // A failing login answers the authenticator's error and leaves the agent unauthenticated.
    let error = client.call_err("authenticate", json!({"methodId": "broken"})).await;
    assert_eq!(code(&error), -32050, "{error}");
    assert_eq!(error["message"], json!("the login server refused"));
    assert_eq!(code(&client.call_err("session/new", NEW()).await), -32000);

    let result = client.call_ok("authenticate", json!({"methodId": "token"})).await;
    assert_eq!(result, json!({}));
    assert_eq!(auth.logins.load(Ordering::SeqCst), 1);
    let session = client.call_ok("session/new", NEW()).await;
    assert!(session["sessionId"].is_string());

    // logout re-requires authentication for new sessions.
    let result = client.call_ok("logout", json!({})).await;
    assert_eq!(result, json!({}));
    assert_eq!(auth.logouts.load(Ordering::SeqCst), 1);
    assert_eq!(code(&client.call_err("session/new", NEW()).await), -32000);
    client.call_ok("authenticate", json!({"methodId": "token"})).await;
    client.call_ok("session/new", NEW()).await;
    assert_eq!(host.sessions.lock().unwrap().len(), 2);
    client.hang_up().await;
}

#[tokio::test]
async fn an_authenticator_that_requires_nothing_lets_sessions_through() {
    let mut client =
        TestClient::initialized(Options::new(ScriptedHost::new()).authenticator(TestAuth::optional())).await;
    client.call_ok("session/new", NEW()).await;
    client.call_ok("authenticate", json!({"methodId": "token"})).await;
    client.call_ok("logout", json!({})).await;
    client.call_ok("session/new", NEW()).await;
    client.hang_up().await;
}

#[tokio::test]
async fn logout_is_method_not_found_unless_advertised() {
    let auth = TestAuth::new(false);
    let mut client = TestClient::initialized(Options::new(ScriptedHost::new()).authenticator(auth.clone())).await;
    let error = client.call_err("logout", json!({})).await;
    assert_eq!(code(&error), -32601, "{error}");
    client.call_ok("authenticate", json!({"methodId": "token"})).await;
    let error = client.call_err("logout", json!({})).await;
    assert_eq!(code(&error), -32601, "{error}");
    assert_eq!(auth.logouts.load(Ordering::SeqCst), 0);
    // Still authenticated.
    client.call_ok("session/new", NEW()).await;
    client.hang_up().await;

    let mut client = TestClient::initialized(Options::new(ScriptedHost::new())).await;
    let error = client.call_err("logout", json!({})).await;
    assert_eq!(code(&error), -32601, "{error}");
    client.hang_up().await;
}

#[tokio::test]
async fn authenticate_without_an_authenticator_is_invalid_params() {
    let mut client = TestClient::initialized(Options::new(ScriptedHost::new())).await;
    let error = client.call_err("authenticate", json!({"methodId": "token"})).await;
    assert_eq!(code(&error), -32602, "{error}");
    assert_serving(&mut client).await;
    client.hang_up().await;
}
