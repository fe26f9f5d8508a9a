//! The demo's prompts that call the client (docs/DEMO.md: `read`, `write`, `run`, `ask` with
//! elicitation, `open`, and `edit`), over the real binary's stdio, with a client that serves files
//! from the real file system and runs terminal commands as real processes. Every message is
//! validated against the pinned schema, and nothing is ever sent for a capability the client did
//! not advertise.

mod common;

use common::editor::Editor;
use common::{Demo, TempDir, chunk_texts, stop_reason, updates};
use serde_json::{Value, json};

/// Every client capability of the schema up to v1.21.0 (fs, terminals, elicitation, terminal
/// authentication).
fn everything() -> Value {
    json!({
        "fs": {"readTextFile": true, "writeTextFile": true},
        "terminal": true,
        "elicitation": {"form": {}, "url": {}},
    })
}

/// A demo initialized advertising `capabilities`, with a session in a fresh directory.
fn start(capabilities: Value) -> (Demo, String, TempDir) {
    let made = TempDir::new("client");
    let cwd = std::fs::canonicalize(made.path()).unwrap();
    // The same directory under its canonical name (as the agent sees it), removed once.
    std::mem::forget(made);
    let mut demo = Demo::start(&["--store", ":memory:"]);
    demo.initialize_with(capabilities);
    let sid =
        demo.call_ok("session/new", json!({"cwd": cwd, "mcpServers": []}))["sessionId"].as_str().unwrap().to_owned();
    (demo, sid, TempDir(cwd))
}

/// The agent's requests and notifications among `messages` (not `session/update`), in order.
fn calls(messages: &[Value]) -> Vec<String> {
    messages
        .iter()
        .filter_map(|m| m.get("method").and_then(Value::as_str))
        .filter(|m| *m != "session/update")
        .map(str::to_owned)
        .collect()
}

/// The updates of a turn without the advertisement and title (a session's first prompt's).
fn turn_updates(before: &[Value]) -> Vec<Value> {
    updates(before)
        .into_iter()
        .filter(|u| u["sessionUpdate"] != "available_commands_update" && u["sessionUpdate"] != "session_info_update")
        .collect()
}

fn chunks(before: &[Value]) -> Vec<String> {
    chunk_texts(before, "agent_message_chunk")
}

fn request<'a>(before: &'a [Value], method: &str) -> &'a Value {
    before
        .iter()
        .find(|m| m["method"] == method && m.get("id").is_some())
        .unwrap_or_else(|| panic!("no `{method}` request in {before:#?}"))
}

#[test]
fn read_sends_the_files_content_and_takes_relative_paths_from_the_cwd() {
    let (mut demo, sid, dir) = start(everything());
    let mut editor = Editor::default();
    std::fs::write(dir.path().join("notes.txt"), "first line\nsecond line\n").unwrap();
    for path in [dir.path().join("notes.txt").display().to_string(), "notes.txt".to_owned(), "./notes.txt".to_owned()] {
        let (response, before) = editor.prompt(&mut demo, &sid, &format!("read {path}"));
        assert_eq!(stop_reason(&response), "end_turn", "{path}");
        let read = request(&before, "fs/read_text_file");
        assert_eq!(
            read["params"],
            json!({"sessionId": sid, "path": dir.path().join("notes.txt")}),
            "sent absolute: {path}"
        );
        assert_eq!(chunks(&before), ["first line\nsecond line\n"], "{path}");
        let kinds: Vec<Value> = turn_updates(&before).iter().map(|u| u["sessionUpdate"].clone()).collect();
        assert_eq!(kinds, ["agent_message_chunk", "usage_update"], "{path}");
    }
}

#[test]
fn write_writes_the_rest_of_the_line() {
    let (mut demo, sid, dir) = start(everything());
    let mut editor = Editor::default();
    let (response, before) = editor.prompt(&mut demo, &sid, "write out.txt hello  big world");
    assert_eq!(stop_reason(&response), "end_turn");
    let write = request(&before, "fs/write_text_file");
    assert_eq!(
        write["params"],
        json!({"sessionId": sid, "path": dir.path().join("out.txt"), "content": "hello  big world"})
    );
    assert_eq!(std::fs::read_to_string(dir.path().join("out.txt")).unwrap(), "hello  big world");
    assert_eq!(chunks(&before), ["write: ok"]);
}

#[test]
fn a_client_error_is_reported_and_the_turn_ends_normally() {
    let (mut demo, sid, dir) = start(everything());
    let mut editor = Editor::default();
    let (response, before) = editor.prompt(&mut demo, &sid, "read missing.txt");
    assert_eq!(stop_reason(&response), "end_turn");
    let chunk = &chunks(&before)[0];
    assert!(chunk.starts_with("read: error -32002 Resource not found"), "{chunk}");
    editor.fail_next = Some(("fs/write_text_file".into(), json!({"code": -32603, "message": "disk full"})));
    let (response, before) = editor.prompt(&mut demo, &sid, "write out.txt x");
    assert_eq!(stop_reason(&response), "end_turn");
    assert_eq!(chunks(&before), ["write: error -32603 disk full"]);
    assert!(!dir.path().join("out.txt").exists());
    editor.fail_next = Some(("terminal/create".into(), json!({"code": -32000, "message": "no shell"})));
    let (response, before) = editor.prompt(&mut demo, &sid, "run ls");
    assert_eq!(stop_reason(&response), "end_turn");
    assert_eq!(chunks(&before), ["run: error -32000 no shell"]);
}

#[test]
fn without_the_capability_nothing_is_sent() {
    // The demo's client checks every message against what it advertised: a request for anything
    // else fails the test.
    let cases = [
        (json!({}), "read a.txt", "read: not supported by the client"),
        (json!({"fs": {"writeTextFile": true}}), "read a.txt", "read: not supported by the client"),
        (json!({"fs": {"readTextFile": true}}), "write a.txt x", "write: not supported by the client"),
        (json!({"fs": {"readTextFile": true, "writeTextFile": true}}), "run ls", "run: not supported by the client"),
        (json!({"elicitation": {"form": {}}}), "open https://example.com", "open: not supported by the client"),
        (json!({}), "open https://example.com", "open: not supported by the client"),
    ];
    for (capabilities, prompt, said) in cases {
        let (mut demo, sid, _dir) = start(capabilities.clone());
        let (response, before) = demo.prompt_done(&sid, prompt);
        assert_eq!(stop_reason(&response), "end_turn", "{prompt} with {capabilities}");
        assert_eq!(calls(&before), Vec::<String>::new(), "{prompt} with {capabilities}");
        assert_eq!(chunks(&before), [said], "{prompt} with {capabilities}");
    }
}

#[test]
fn run_runs_the_command_in_a_client_terminal_shown_in_a_tool_call() {
    let (mut demo, sid, dir) = start(everything());
    let mut editor = Editor::default();
    std::fs::write(dir.path().join("here.txt"), "").unwrap();
    let (response, before) = editor.prompt(&mut demo, &sid, "run ls -1");
    assert_eq!(stop_reason(&response), "end_turn");
    assert_eq!(
        calls(&before),
        ["terminal/create", "terminal/wait_for_exit", "terminal/output", "terminal/release"],
        "{before:#?}"
    );
    let create = request(&before, "terminal/create");
    assert_eq!(create["params"], json!({"sessionId": sid, "command": "ls", "args": ["-1"], "cwd": dir.path()}));
    let ups = turn_updates(&before);
    let kinds: Vec<&str> = ups.iter().map(|u| u["sessionUpdate"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["tool_call", "tool_call_update", "agent_message_chunk", "usage_update"]);
    assert_eq!(
        ups[0],
        json!({"sessionUpdate": "tool_call", "toolCallId": ups[0]["toolCallId"], "title": "run ls -1",
               "kind": "execute", "status": "in_progress", "content": [{"type": "terminal", "terminalId": "term-1"}]})
    );
    assert_eq!(
        ups[1],
        json!({"sessionUpdate": "tool_call_update", "toolCallId": ups[0]["toolCallId"], "status": "completed"})
    );
    assert_eq!(ups[2]["content"]["text"], "exit: 0");
    // The order of DEMO.md: the tool call after the terminal exists, the update after its output,
    // the exit code, then the release.
    let at = |pred: &dyn Fn(&Value) -> bool| before.iter().position(pred).unwrap();
    let created = at(&|m| m["method"] == "terminal/create");
    let announced = at(&|m| m["params"]["update"]["sessionUpdate"] == "tool_call");
    let output = at(&|m| m["method"] == "terminal/output");
    let updated = at(&|m| m["params"]["update"]["sessionUpdate"] == "tool_call_update");
    let exit = at(&|m| m["params"]["update"]["content"]["text"] == "exit: 0");
    let released = at(&|m| m["method"] == "terminal/release");
    let order = [created, announced, output, updated, exit, released];
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{order:?}: {before:#?}");
    assert!(!editor.has_terminal("term-1"), "released");

    // A failing command: the tool call fails, the code is reported.
    let (response, before) = editor.prompt(&mut demo, &sid, "run false");
    assert_eq!(stop_reason(&response), "end_turn");
    let ups = turn_updates(&before);
    assert_eq!(ups[1]["status"], "failed");
    assert_eq!(chunks(&before), ["exit: 1"]);
    assert!(!editor.has_terminal("term-2"));
}

#[test]
fn cancel_while_a_command_runs_kills_and_releases_its_terminal() {
    let (mut demo, sid, _dir) = start(everything());
    let mut editor = Editor::default();
    editor.hold_waits = true;
    let id = demo.prompt(&sid, "run sleep 30");
    loop {
        let message = demo.next();
        if let Some(method) = message["method"].as_str()
            && message.get("id").is_some()
            && Editor::serves(method)
        {
            editor.serve(&mut demo, &message);
            if method == "terminal/wait_for_exit" {
                break;
            }
        }
    }
    demo.notify("session/cancel", json!({"sessionId": sid}));
    let (response, before) = editor.until_response(&mut demo, &id);
    assert_eq!(stop_reason(&response), "cancelled");
    assert_eq!(calls(&before), ["$/cancel_request", "terminal/kill", "terminal/release"], "{before:#?}");
    let served: Vec<&str> = editor.terminal_log.iter().map(|(m, _)| m.as_str()).collect();
    assert_eq!(served, ["terminal/create", "terminal/wait_for_exit", "terminal/kill", "terminal/release"]);
    assert!(!editor.has_terminal("term-1"), "the process was killed and reaped");
    // The session carries on.
    let (response, _) = editor.prompt(&mut demo, &sid, "hello");
    assert_eq!(stop_reason(&response), "end_turn");
}

#[test]
fn ask_is_a_form_elicitation_when_the_client_has_one() {
    let (mut demo, sid, _dir) = start(json!({"elicitation": {"form": {}}}));
    let mut editor = Editor::default();
    editor.elicitations.extend([
        json!({"action": "accept", "content": {"answer": "blue"}}),
        json!({"action": "decline"}),
        json!({"action": "cancel"}),
    ]);
    let (response, before) = editor.prompt(&mut demo, &sid, "ask what is your favourite colour?");
    assert_eq!(stop_reason(&response), "end_turn");
    let asked = request(&before, "elicitation/create");
    assert_eq!(
        asked["params"],
        json!({
            "sessionId": sid,
            "mode": "form",
            "message": "what is your favourite colour?",
            "requestedSchema": {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]},
        })
    );
    assert_eq!(chunks(&before), ["answer: blue"]);
    let (response, before) = editor.prompt(&mut demo, &sid, "ask really?");
    assert_eq!(stop_reason(&response), "end_turn");
    assert_eq!(chunks(&before), ["declined"]);
    let (response, before) = editor.prompt(&mut demo, &sid, "ask still there?");
    assert_eq!(stop_reason(&response), "cancelled");
    assert_eq!(chunks(&before), Vec::<String>::new());
}

#[test]
fn open_is_a_url_elicitation_completed_once_accepted() {
    let (mut demo, sid, _dir) = start(json!({"elicitation": {"url": {}}}));
    let mut editor = Editor::default();
    editor.elicitations.extend([json!({"action": "accept"}), json!({"action": "decline"})]);
    let (response, before) = editor.prompt(&mut demo, &sid, "open https://example.com/docs");
    assert_eq!(stop_reason(&response), "end_turn");
    let asked = request(&before, "elicitation/create");
    let params = &asked["params"];
    assert_eq!(params["mode"], "url");
    assert_eq!(params["url"], "https://example.com/docs");
    assert_eq!(params["sessionId"], sid.as_str());
    let complete = before.iter().find(|m| m["method"] == "elicitation/complete").expect("completed");
    assert_eq!(complete["params"], json!({"elicitationId": params["elicitationId"]}));
    assert_eq!(chunks(&before), ["opened"]);
    let first = params["elicitationId"].clone();
    let (response, before) = editor.prompt(&mut demo, &sid, "open https://example.com/docs");
    assert_eq!(stop_reason(&response), "end_turn");
    assert_ne!(request(&before, "elicitation/create")["params"]["elicitationId"], first, "a fresh id");
    assert_eq!(calls(&before), ["elicitation/create"]);
    assert_eq!(chunks(&before), ["declined"]);
}

#[test]
fn edit_shows_a_diff_at_its_location_and_completes() {
    let (mut demo, sid, dir) = start(json!({}));
    let (response, before) = demo.prompt_done(&sid, "edit src/main.rs");
    assert_eq!(stop_reason(&response), "end_turn");
    let ups = turn_updates(&before);
    let file = dir.path().join("src/main.rs");
    let id = ups[0]["toolCallId"].clone();
    assert_eq!(
        ups[..3],
        [
            json!({"sessionUpdate": "tool_call", "toolCallId": id, "title": "edit src/main.rs", "kind": "edit",
                   "status": "in_progress", "locations": [{"path": file, "line": 1}],
                   "content": [{"type": "diff", "path": file, "oldText": "old\n", "newText": "new\n"}]}),
            json!({"sessionUpdate": "tool_call_update", "toolCallId": id, "status": "completed", "rawOutput": {"ok": true}}),
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "edited src/main.rs"}}),
        ]
    );
    assert_eq!(ups[3]["sessionUpdate"], "usage_update");
    // Replayed by load (of the live session, re-attached) with its diff.
    let id_load = demo.send_request("session/load", json!({"sessionId": sid, "cwd": dir.path(), "mcpServers": []}));
    let (loaded, before) = demo.response_with_preceding(&id_load);
    assert!(loaded.get("result").is_some(), "{loaded}");
    let replayed: Vec<Value> = updates(&before).into_iter().filter(|u| u["sessionUpdate"] == "tool_call").collect();
    assert_eq!(
        replayed,
        [json!({"sessionUpdate": "tool_call", "toolCallId": id, "title": "edit src/main.rs", "kind": "edit",
                "status": "completed", "locations": [{"path": file, "line": 1}],
                "content": [{"type": "diff", "path": file, "oldText": "old\n", "newText": "new\n"}],
                "rawOutput": {"ok": true}})]
    );
}
