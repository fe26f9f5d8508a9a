//! The rich lines of the demo contract (docs/DEMO.md) over the real
//! binary's stdio: `plan N`, `switch MODE`, `mcp`, `/shout TEXT`, prompts whose first block is an
//! image, audio, an embedded resource or a resource link, `_meta.traceparent` echoed on the
//! prompt's response, `_demo/echo`; and what the demo advertises for them (promptCapabilities
//! image, audio, embeddedContext; mcpCapabilities.http, not sse; `_demo/echo`). Every message is
//! validated against the pinned ACP schema.

mod common;

use common::{Demo, chunk_texts, code, stop_reason, update_kinds, updates};
use serde_json::{Value, json};

const TRACEPARENT: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

fn rich() -> Demo {
    Demo::in_memory()
}

fn session_with(demo: &mut Demo, servers: &Value) -> String {
    let created = demo.call_ok("session/new", json!({"cwd": "/tmp", "mcpServers": servers}));
    created["sessionId"].as_str().expect("sessionId").to_owned()
}

fn prompt_blocks(demo: &mut Demo, sid: &str, blocks: &Value, meta: Option<Value>) -> (Value, Vec<Value>) {
    let mut params = json!({"sessionId": sid, "prompt": blocks});
    if let Some(meta) = meta {
        params["_meta"] = meta;
    }
    let id = demo.send_request("session/prompt", params);
    demo.response_with_preceding(&id)
}

/// The turn ended `end_turn` with exactly `chunks` and a `usage_update` last.
fn assert_turn(response: &Value, before: &[Value], chunks: &[&str]) {
    assert_eq!(stop_reason(response), "end_turn", "{response}");
    assert_eq!(chunk_texts(before, "agent_message_chunk"), chunks);
    assert_eq!(updates(before).last().unwrap()["sessionUpdate"], "usage_update");
}

fn statuses(update: &Value) -> Vec<String> {
    update["entries"].as_array().unwrap().iter().map(|e| e["status"].as_str().unwrap().to_owned()).collect()
}

#[test]
fn initialize_advertises_prompt_content_http_mcp_and_the_extension() {
    let mut demo = Demo::start(&["--store", ":memory:"]);
    let caps = demo.initialize()["agentCapabilities"].clone();
    assert_eq!(caps["promptCapabilities"], json!({"image": true, "audio": true, "embeddedContext": true}));
    assert_eq!(caps["mcpCapabilities"], json!({"http": true, "sse": false}));
    assert_eq!(caps["_meta"], json!({"_demo/echo": {}}));
}

#[test]
fn plan_sends_the_whole_plan_then_one_per_completed_step() {
    let mut demo = rich();
    let sid = demo.new_session();
    let (response, before) = demo.prompt_done(&sid, "plan 3");
    assert_turn(&response, &before, &["planned"]);
    let plans: Vec<Value> = updates(&before).into_iter().filter(|u| u["sessionUpdate"] == "plan").collect();
    let progress: Vec<Vec<String>> = plans.iter().map(statuses).collect();
    assert_eq!(
        progress,
        [
            ["pending", "pending", "pending"],
            ["completed", "pending", "pending"],
            ["completed", "completed", "pending"],
            ["completed", "completed", "completed"],
        ]
    );
    assert_eq!(plans[0]["entries"][2], json!({"content": "step 3", "priority": "medium", "status": "pending"}));
    // The latest plan comes back on load, once, last.
    demo.call_ok("session/close", json!({"sessionId": sid}));
    let id = demo.send_request("session/load", json!({"sessionId": sid, "cwd": "/tmp", "mcpServers": []}));
    let (_, replayed) = demo.response_with_preceding(&id);
    let kinds = update_kinds(&replayed);
    assert_eq!(kinds.iter().filter(|k| *k == "plan").count(), 1, "{kinds:?}");
    assert_eq!(kinds.last().map(String::as_str), Some("plan"));
    assert_eq!(statuses(updates(&replayed).last().unwrap()), ["completed", "completed", "completed"]);
}

#[test]
fn shout_is_advertised_beside_compact_and_runs() {
    let mut demo = rich();
    let sid = demo.new_session();
    let (response, before) = demo.prompt_done(&sid, "/shout hello world");
    assert_turn(&response, &before, &["HELLO WORLD"]);
    let advert = updates(&before).into_iter().find(|u| u["sessionUpdate"] == "available_commands_update").unwrap();
    assert_eq!(
        advert["availableCommands"],
        json!([
            {"name": "compact", "description": "Compact the conversation to free context"},
            {"name": "shout", "description": "Repeat the input in capitals", "input": {"hint": "text"}},
        ])
    );
    let (response, before) = demo.prompt_done(&sid, "  /shout  straße ");
    assert_turn(&response, &before, &["STRASSE"]);
}

#[test]
fn switch_changes_the_mode_itself() {
    let mut demo = rich();
    let sid = demo.new_session();
    demo.prompt_done(&sid, "hello");
    let (response, before) = demo.prompt_done(&sid, "switch code");
    assert_turn(&response, &before, &["mode: code"]);
    assert_eq!(
        update_kinds(&before),
        ["current_mode_update", "config_option_update", "agent_message_chunk", "usage_update"]
    );
    let ups = updates(&before);
    assert_eq!(ups[0]["currentModeId"], "code");
    let current: Vec<&str> =
        ups[1]["configOptions"].as_array().unwrap().iter().map(|o| o["currentValue"].as_str().unwrap()).collect();
    assert_eq!(current, ["code", "fast"]);
    for (prompt, chunk) in [("switch code", "mode: code"), ("switch yolo", "unknown mode yolo")] {
        let (response, before) = demo.prompt_done(&sid, prompt);
        assert_turn(&response, &before, &[chunk]);
        assert_eq!(update_kinds(&before), ["agent_message_chunk", "usage_update"], "{prompt}");
    }
    // The client sees the switched mode.
    let reply =
        demo.call_ok("session/set_config_option", json!({"sessionId": sid, "configId": "model", "value": "smart"}));
    assert_eq!(reply["configOptions"][0]["currentValue"], "code");
}

#[test]
fn mcp_lists_the_servers_and_sse_is_refused() {
    let mut demo = rich();
    let sid = demo.new_session();
    let (response, before) = demo.prompt_done(&sid, "mcp");
    assert_turn(&response, &before, &["mcp: none"]);
    let servers = json!([
        {"name": "fs", "command": "/usr/bin/mcp-fs", "args": [], "env": []},
        {"type": "http", "name": "web", "url": "https://example.com/mcp", "headers": []},
    ]);
    let sid = session_with(&mut demo, &servers);
    let (response, before) = demo.prompt_done(&sid, "mcp");
    assert_turn(&response, &before, &["mcp: fs(stdio) web(http)"]);
    let sse = json!([{"type": "sse", "name": "old", "url": "https://example.com/sse", "headers": []}]);
    let error = demo.call_err("session/new", json!({"cwd": "/tmp", "mcpServers": sse}));
    assert_eq!(code(&error), -32602, "{error}");
    for method in ["session/load", "session/resume"] {
        let error = demo.call_err(method, json!({"sessionId": sid, "cwd": "/tmp", "mcpServers": sse}));
        assert_eq!(code(&error), -32602, "{method}: {error}");
    }
}

#[test]
fn a_prompt_whose_first_block_is_not_text_is_described() {
    let mut demo = rich();
    let sid = demo.new_session();
    for (block, chunk) in [
        (json!({"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo="}), "image image/png 8"),
        (json!({"type": "audio", "mimeType": "audio/wav", "data": "UklGRg=="}), "audio audio/wav 4"),
        (
            json!({"type": "resource", "resource": {"uri": "file:///tmp/n.md", "text": "héllo ✓", "mimeType": "text/markdown"}}),
            "resource file:///tmp/n.md 7",
        ),
        (json!({"type": "resource_link", "uri": "file:///tmp/a.rs", "name": "a.rs"}), "link file:///tmp/a.rs"),
    ] {
        let (response, before) =
            prompt_blocks(&mut demo, &sid, &json!([block, {"type": "text", "text": "stream 3"}]), None);
        assert_turn(&response, &before, &[chunk]);
    }
    // Text first: the script, whatever follows.
    let (response, before) = prompt_blocks(
        &mut demo,
        &sid,
        &json!([{"type": "text", "text": "stream 2"}, {"type": "image", "mimeType": "image/png", "data": "AA=="}]),
        None,
    );
    assert_turn(&response, &before, &["t1 ", "t2 "]);
    // Data that is not canonical base64 counts 0 bytes; a blob resource 0 characters.
    for (block, chunk) in [
        (json!({"type": "image", "mimeType": "image/png", "data": "not base64!"}), "image image/png 0"),
        (json!({"type": "audio", "mimeType": "audio/wav", "data": "AB=="}), "audio audio/wav 0"),
        (
            json!({"type": "resource", "resource": {"uri": "file:///tmp/b.bin", "blob": "AAEC"}}),
            "resource file:///tmp/b.bin 0",
        ),
    ] {
        let (response, before) = prompt_blocks(&mut demo, &sid, &json!([block]), None);
        assert_turn(&response, &before, &[chunk]);
    }
}

#[test]
fn traceparent_comes_back_on_the_response_and_demo_echo_answers_its_params() {
    let mut demo = rich();
    let sid = demo.new_session();
    let meta = json!({"traceparent": TRACEPARENT, "other": 1});
    let (response, _) = prompt_blocks(&mut demo, &sid, &json!([{"type": "text", "text": "hello"}]), Some(meta));
    assert_eq!(response["result"], json!({"stopReason": "end_turn", "_meta": {"traceparent": TRACEPARENT}}));
    let (response, _) = demo.prompt_done(&sid, "hello");
    assert_eq!(response["result"], json!({"stopReason": "end_turn"}), "no `_meta` without a traceparent");

    let params = json!({"a": [1, {"b": "é"}], "n": null});
    assert_eq!(demo.call_ok("_demo/echo", params.clone()), params);
    assert_eq!(code(&demo.call_err("_demo/other", json!({}))), -32601);
    assert!(demo.hang_up(), "the demo exits 0 on EOF");
}
