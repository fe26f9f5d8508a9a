//! The client vanishing mid-turn, against the real binary over stdio: when stdin closes with turns
//! in every busy state (sleeping, waiting for a permission answer, waiting on an ask-user gate,
//! streaming), the agent closes every session and exits 0 — and the store it leaves behind still
//! lists and loads them.

mod common;

use common::{Demo, TempDir};
use serde_json::{Value, json};

#[test]
fn stdin_closing_mid_turn_closes_every_session_and_exits_zero() {
    let dir = TempDir::new("vanish");
    let store = dir.path().join("store.sqlite");
    let store = store.to_str().expect("utf-8 path");
    let mut demo = Demo::initialized(&["--store", store]);
    let mut sessions = Vec::new();
    for (n, text) in
        ["sleep 3600000", "tool rm", "ask what now", "sleep 3600000", "tool ls", "stream 200"].iter().enumerate()
    {
        let sid = demo.new_session();
        demo.prompt(&sid, text);
        sessions.push((sid, n));
    }
    // Every turn is under way: the permission requests were asked, the sleepers announced titles.
    let mut asked = 0;
    let mut titled = 0;
    while asked < 2 || titled < 5 {
        let message = demo.next();
        if message.get("method").and_then(Value::as_str) == Some("session/request_permission") {
            asked += 1;
        }
        if message.pointer("/params/update/sessionUpdate") == Some(&json!("session_info_update")) {
            titled += 1;
        }
    }
    assert!(demo.hang_up(), "the agent exits 0 when stdin closes mid-turn");

    // The sessions were closed, not lost: a new process lists them all.
    let mut again = Demo::initialized(&["--store", store]);
    let listed = again.call_ok("session/list", json!({}));
    let ids: Vec<&str> =
        listed["sessions"].as_array().expect("sessions").iter().filter_map(|s| s["sessionId"].as_str()).collect();
    for (sid, _) in &sessions {
        assert!(ids.contains(&sid.as_str()), "{sid} listed after the hang-up: {listed}");
    }
    assert!(again.hang_up(), "clean exit");
}
