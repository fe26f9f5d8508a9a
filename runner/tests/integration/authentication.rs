//! Authentication everywhere: while the host requires authentication, every session
//! method — new, load, resume, list, delete, prompt, close, `set_mode`, `set_config_option` — answers
//! `-32000` before touching anything (params are not even read, the host is not called), until
//! `authenticate` succeeds, and again after `logout`. `initialize`, `authenticate`, `logout` and
//! extension methods are not gated.

use crate::common;

use std::sync::Arc;
use std::sync::atomic::Ordering;

use acp_facade::Options;
use acp_facade::harness::EventKind;
use common::auth::TestAuth;
use common::lifecycle::{RichHost, SessionSpec};
use common::{TestClient, code};
use serde_json::{Value, json};

const CWD: &str = "/tmp";

/// One well-formed request per session method, for session `sid`.
fn session_methods(sid: &str) -> Vec<(&'static str, Value)> {
    vec![
        ("session/new", json!({"cwd": CWD, "mcpServers": []})),
        ("session/load", json!({"sessionId": "stored", "cwd": CWD, "mcpServers": []})),
        ("session/resume", json!({"sessionId": "stored", "cwd": CWD, "mcpServers": []})),
        ("session/list", json!({})),
        ("session/delete", json!({"sessionId": "stored"})),
        ("session/prompt", json!({"sessionId": sid, "prompt": [{"type": "text", "text": "hi"}]})),
        ("session/set_mode", json!({"sessionId": sid, "modeId": "code"})),
        ("session/set_config_option", json!({"sessionId": sid, "configId": "mode", "value": "code"})),
        ("session/close", json!({"sessionId": sid})),
    ]
}

async fn assert_all_refused(client: &mut TestClient, sid: &str, when: &str) {
    for (method, params) in session_methods(sid) {
        let error = client.call_err(method, params).await;
        assert_eq!(code(&error), -32000, "{when}: {method}: {error}");
        // Garbage params too: authentication is checked before they are read.
        let error = client.call_err(method, json!({"garbage": true})).await;
        assert_eq!(code(&error), -32000, "{when}: {method} with garbage params: {error}");
    }
}

fn host_calls(host: &RichHost) -> usize {
    host.loads.lock().unwrap().len()
        + host.resumes.lock().unwrap().len()
        + host.deletes().len()
        + host.lists.load(Ordering::SeqCst)
        + host.all_sessions().len()
}

#[tokio::test]
async fn every_session_method_answers_auth_required_until_authenticate_and_again_after_logout() {
    let host = RichHost::new(SessionSpec { config: true, ..SessionSpec::default() });
    host.store("stored", Vec::new());
    let auth = TestAuth::new(true);
    let options = Options::new(host.clone())
        .loader(host.clone())
        .resumer(host.clone())
        .catalog(host.clone())
        .deleter(host.clone())
        .authenticator(auth.clone());
    let mut client = TestClient::initialized(options).await;

    assert_all_refused(&mut client, "nobody", "before authenticate").await;
    assert_eq!(host_calls(&host), 0, "the host was touched before authentication");
    // A failed login changes nothing.
    assert_eq!(code(&client.call_err("authenticate", json!({"methodId": "broken"})).await), -32050);
    assert_all_refused(&mut client, "nobody", "after a failed authenticate").await;
    assert_eq!(host_calls(&host), 0);
    // Not gated: an extension method is still unknown, not unauthenticated.
    assert_eq!(code(&client.call_err("_vendor/op", json!({})).await), -32601);

    client.call_ok("authenticate", json!({"methodId": "token"})).await;
    let sid = client.new_session().await;
    client.call_ok("session/set_mode", json!({"sessionId": sid, "modeId": "code"})).await;
    client.call_ok("session/list", json!({})).await;

    client.call_ok("logout", json!({})).await;
    let submits_before = host.log.entries().iter().filter(|e| e.ends_with(":submit")).count();
    assert_all_refused(&mut client, &sid, "after logout").await;
    let submits_after = host.log.entries().iter().filter(|e| e.ends_with(":submit")).count();
    assert_eq!(submits_after, submits_before, "no prompt reached the host after logout");
    assert_eq!(host.session(&sid).shutdown_count(), 0, "close was refused: still live");
    assert_eq!(host.lists.load(Ordering::SeqCst), 1);

    // Authenticated again: the live session answers once more.
    client.call_ok("authenticate", json!({"methodId": "token"})).await;
    let s = host.session(&sid);
    let prompt = client.prompt(&sid, "again").await;
    let (command, _) = s.inner.next_submit().await;
    s.inner.start_turn(&command, ("l", "t"));
    s.inner.durable(("l", "t"), EventKind::TurnDone { message: None, stop: None });
    assert_eq!(client.response(&prompt).await["result"]["stopReason"], "end_turn");
    client.call_ok("session/close", json!({"sessionId": sid})).await;
    assert_eq!(auth.logins.load(Ordering::SeqCst), 2);
    client.hang_up().await;
}

#[tokio::test]
async fn without_a_required_login_nothing_is_gated() {
    let host = RichHost::new(SessionSpec::default());
    let options = Options::new(host.clone()).catalog(host.clone()).authenticator(TestAuth::optional());
    let mut client = TestClient::initialized(options).await;
    client.call_ok("session/list", json!({})).await;
    let sid = client.new_session().await;
    client.call_ok("session/close", json!({"sessionId": sid})).await;
    client.hang_up().await;
    let _: &Arc<RichHost> = &host;
}

/// An authenticator with an agent method and a terminal method (schema v1.21.0).
struct TerminalAuth;

#[async_trait::async_trait]
impl acp_facade::host::Authenticator for TerminalAuth {
    fn methods(&self) -> Vec<acp_facade::acp::AuthMethod> {
        use acp_facade::acp::{AuthMethod, AuthMethodAgent, AuthMethodTerminal};
        let env = std::collections::HashMap::from([("DEMO_LOGIN".to_owned(), "1".to_owned())]);
        vec![
            AuthMethod::Agent(AuthMethodAgent::new("token", "API token")),
            AuthMethod::Terminal(
                AuthMethodTerminal::new("browser-login", "Log in with a browser")
                    .description("Runs the agent's login flow in a terminal".to_owned())
                    .args(vec!["--login".into()])
                    .env(env),
            ),
        ]
    }

    fn requires_authentication(&self) -> bool {
        true
    }

    async fn authenticate(&self, method_id: acp_facade::acp::AuthMethodId) -> acp_facade::host::HostResult<()> {
        assert_eq!(&*method_id.0, "token", "a terminal method is never authenticated");
        Ok(())
    }
}

#[tokio::test]
async fn terminal_methods_are_listed_only_to_a_client_that_can_run_them() {
    let options = || Options::new(RichHost::new(SessionSpec::default())).authenticator(Arc::new(TerminalAuth));
    // A client without `auth.terminal` (v1.20.0 or not interested): only the agent method.
    for capabilities in [json!({}), json!({"auth": {"terminal": false}}), json!({"auth": null})] {
        let mut client = TestClient::start(options());
        let init = client.initialize_with(capabilities.clone()).await;
        let ids: Vec<&str> =
            init["authMethods"].as_array().unwrap().iter().map(|m| m["id"].as_str().unwrap()).collect();
        assert_eq!(ids, ["token"], "{capabilities}: {init}");
        client.hang_up().await;
    }
    let mut client = TestClient::start(options());
    let init = client.initialize_with(json!({"auth": {"terminal": true}})).await;
    assert_eq!(
        init["authMethods"],
        json!([
            {"id": "token", "name": "API token"},
            {
                "type": "terminal",
                "id": "browser-login",
                "name": "Log in with a browser",
                "description": "Runs the agent's login flow in a terminal",
                "args": ["--login"],
                "env": {"DEMO_LOGIN": "1"},
            },
        ])
    );
    // The client runs a terminal method itself: `authenticate` with it is refused, nothing changes.
    let error = client.call_err("authenticate", json!({"methodId": "browser-login"})).await;
    assert_eq!(code(&error), -32602, "{error}");
    let error = client.call_err("session/new", json!({"cwd": CWD, "mcpServers": []})).await;
    assert_eq!(code(&error), -32000, "still unauthenticated: {error}");
    client.call_ok("authenticate", json!({"methodId": "token"})).await;
    client.call_ok("session/new", json!({"cwd": CWD, "mcpServers": []})).await;
    client.hang_up().await;
}
