//! Extension methods: registered `_` requests are answered by their handler (errors with their
//! code, a panic with `-32603`), registered `_` notifications reach theirs, both advertised under
//! `agentCapabilities._meta`; unregistered ones stay `-32601` (notifications ignored); none is
//! gated by authentication, all wait for `initialize`.

use crate::common;

use std::sync::{Arc, Mutex};

use acp_facade::agent::{ExtensionMethod, ExtensionNotification, Extensions};
use acp_facade::host::HostResult;
use acp_facade::{Error, Options};
use async_trait::async_trait;
use common::auth::TestAuth;
use common::host::ScriptedHost;
use common::{TestClient, assert_serving, code};
use serde_json::{Value, json};
use tokio::sync::Notify;

struct Echo;

#[async_trait]
impl ExtensionMethod for Echo {
    async fn call(&self, params: Value) -> HostResult<Value> {
        Ok(params)
    }
}

struct Fails;

#[async_trait]
impl ExtensionMethod for Fails {
    async fn call(&self, _params: Value) -> HostResult<Value> {
        Err(Error::new(-32010, "not today"))
    }
}

struct Panics;

#[async_trait]
impl ExtensionMethod for Panics {
    async fn call(&self, _params: Value) -> HostResult<Value> {
        panic!("the extension panicked on purpose")
    }
}

#[derive(Default)]
struct Pings {
    got: Mutex<Vec<Value>>,
    arrived: Notify,
}

#[async_trait]
impl ExtensionNotification for Pings {
    async fn notify(&self, params: Value) {
        self.got.lock().unwrap().push(params);
        self.arrived.notify_one();
    }
}

fn extensions(pings: Arc<Pings>) -> Extensions {
    let mut extensions = Extensions::new();
    extensions.method("_test/echo", Arc::new(Echo)).unwrap();
    extensions.method("_test/fail", Arc::new(Fails)).unwrap();
    extensions.method("_test/panic", Arc::new(Panics)).unwrap();
    extensions.notification("_test/ping", pings).unwrap();
    extensions
}

#[tokio::test]
async fn registered_extensions_are_served_and_advertised_and_the_rest_are_unknown() {
    let pings = Arc::new(Pings::default());
    let mut client = TestClient::start(Options::new(ScriptedHost::new()).extensions(extensions(pings.clone())));
    // Before initialize too, like every method.
    assert_eq!(client.call_ok("_test/echo", json!({"early": true})).await, json!({"early": true}));
    let init = client.initialize().await;
    assert_eq!(
        init["agentCapabilities"]["_meta"],
        json!({"_test/echo": {}, "_test/fail": {}, "_test/panic": {}, "_test/ping": {}})
    );
    let params = json!({"a": [1, 2, {"b": null}], "s": "é"});
    assert_eq!(client.call_ok("_test/echo", params.clone()).await, params);
    let error = client.call_err("_test/fail", json!({})).await;
    assert_eq!((code(&error), error["message"].as_str()), (-32010, Some("not today")));
    assert_eq!(code(&client.call_err("_test/panic", json!({})).await), -32603);
    assert_eq!(code(&client.call_err("_test/other", json!({})).await), -32601);
    // Absent params reach the handler as null.
    let id = json!("no-params");
    client.send_raw(r#"{"jsonrpc":"2.0","id":"no-params","method":"_test/echo"}"#).await;
    assert_eq!(client.response(&id).await["result"], Value::Null);
    client.notify("_test/ping", json!({"n": 1})).await;
    client.notify("_test/unknown", json!({"n": 2})).await;
    tokio::time::timeout(common::STEP, pings.arrived.notified()).await.expect("the notification arrived");
    assert_eq!(*pings.got.lock().unwrap(), [json!({"n": 1})]);
    assert_serving(&mut client).await;
}

#[tokio::test]
async fn extensions_are_not_gated_by_authentication() {
    let pings = Arc::new(Pings::default());
    let options =
        Options::new(ScriptedHost::new()).authenticator(TestAuth::new(true)).extensions(extensions(pings.clone()));
    let mut client = TestClient::initialized(options).await;
    assert_eq!(code(&client.call_err("session/new", json!({"cwd": "/tmp", "mcpServers": []})).await), -32000);
    assert_eq!(client.call_ok("_test/echo", json!({"x": 1})).await, json!({"x": 1}));
    client.notify("_test/ping", json!(null)).await;
    tokio::time::timeout(common::STEP, pings.arrived.notified()).await.expect("the notification arrived");
}

#[tokio::test]
async fn names_must_begin_with_an_underscore_and_nothing_registered_advertises_nothing() {
    let mut extensions = Extensions::new();
    for bad in ["echo", "_", "", "session/new"] {
        assert!(extensions.method(bad, Arc::new(Echo)).is_err(), "{bad:?}");
        assert!(extensions.notification(bad, Arc::new(Pings::default())).is_err(), "{bad:?}");
    }
    assert!(extensions.is_empty());
    let mut client = TestClient::start(Options::new(ScriptedHost::new()));
    assert!(client.initialize().await["agentCapabilities"].get("_meta").is_none());
}
