//! The demo agent's behaviour (`docs/DEMO.md`), over the real binary's stdio: every prompt of the
//! script, usage reporting, config options and modes, titles, and every session capability.
//! Every message the agent writes is validated against the pinned ACP schema.

mod common;

use common::{Demo, chunk_texts, code, stop_reason, update_kinds, updates};
use serde_json::{Value, json};

fn selected(option: &str) -> Value {
    json!({"outcome": {"outcome": "selected", "optionId": option}})
}

/// The updates of a finished `end_turn` prompt end with exactly one `usage_update`.
fn assert_usage_last(before: &[Value], what: &str) {
    let ups = updates(before);
    let last = ups.last().unwrap_or_else(|| panic!("{what}: no update at all"));
    assert_eq!(last["sessionUpdate"], "usage_update", "{what}: the last update is the usage: {ups:?}");
    assert!(last["used"].as_u64().is_some_and(|u| u > 0), "{what}: {last}");
    assert_eq!(last["size"], 200_000, "{what}: {last}");
    let count = ups.iter().filter(|u| u["sessionUpdate"] == "usage_update").count();
    assert_eq!(count, 1, "{what}: one usage_update per turn: {ups:?}");
}

/// The updates of `before` without the advertisement and title, which only a session's first
/// prompt carries.
fn turn_kinds(before: &[Value]) -> Vec<String> {
    update_kinds(before)
        .into_iter()
        .filter(|k| k != "available_commands_update" && k != "session_info_update")
        .collect()
}

#[test]
fn initialize_advertises_every_session_capability() {
    let mut demo = Demo::start(&["--store", ":memory:"]);
    let init = demo.initialize();
    assert_eq!(init["protocolVersion"], 1, "{init}");
    let caps = &init["agentCapabilities"];
    assert_eq!(caps["loadSession"], true, "{init}");
    for capability in ["list", "resume", "close", "delete"] {
        assert!(caps["sessionCapabilities"][capability].is_object(), "{capability} is advertised: {init}");
    }
    assert_eq!(init["agentInfo"]["name"], "acp-facade-demo", "{init}");
    // EOF ends the agent cleanly.
    assert!(demo.hang_up(), "the demo exits 0 on EOF");
}

#[test]
fn stream_sends_n_chunks_in_order_then_end_turn() {
    let mut demo = Demo::in_memory();
    let sid = demo.new_session();
    let (response, before) = demo.prompt_done(&sid, "stream 300");
    assert_eq!(stop_reason(&response), "end_turn");
    let expected: Vec<String> = (1..=300).map(|i| format!("t{i} ")).collect();
    assert_eq!(chunk_texts(&before, "agent_message_chunk"), expected);
    let kinds = turn_kinds(&before);
    assert!(kinds[..300].iter().all(|k| k == "agent_message_chunk"), "{kinds:?}");
    assert_eq!(kinds.len(), 301, "{kinds:?}");
    assert_usage_last(&before, "stream");
    // Surrounding whitespace is trimmed.
    let (response, before) = demo.prompt_done(&sid, "  stream 2 \n");
    assert_eq!(stop_reason(&response), "end_turn");
    assert_eq!(chunk_texts(&before, "agent_message_chunk"), ["t1 ", "t2 "]);
    assert_usage_last(&before, "stream 2");
}

#[test]
fn think_sends_a_thought_then_a_message() {
    let mut demo = Demo::in_memory();
    let sid = demo.new_session();
    let (response, before) = demo.prompt_done(&sid, "think about the problem");
    assert_eq!(stop_reason(&response), "end_turn");
    assert_eq!(turn_kinds(&before), ["agent_thought_chunk", "agent_message_chunk", "usage_update"]);
    assert_eq!(chunk_texts(&before, "agent_thought_chunk"), ["about the problem"]);
    assert!(!chunk_texts(&before, "agent_message_chunk")[0].is_empty());
    assert_usage_last(&before, "think");
}

#[test]
fn anything_else_is_echoed_word_by_word() {
    let mut demo = Demo::in_memory();
    let sid = demo.new_session();
    let (response, before) = demo.prompt_done(&sid, "hello  big\tworld");
    assert_eq!(stop_reason(&response), "end_turn");
    let chunks = chunk_texts(&before, "agent_message_chunk");
    assert_eq!(chunks.len(), 3, "one chunk per word: {chunks:?}");
    let words: Vec<&str> = chunks.iter().map(|c| c.trim()).collect();
    assert_eq!(words, ["hello", "big", "world"]);
    assert_usage_last(&before, "echo");
}

#[test]
fn tool_allowed_completes_and_rejected_fails() {
    let mut demo = Demo::in_memory();
    let sid = demo.new_session();
    for (option, status, text) in [
        ("allow_once", "completed", "grep: done"),
        ("allow_always", "completed", "grep: done"),
        ("reject_once", "failed", "grep: denied"),
    ] {
        let id = demo.prompt(&sid, "tool grep");
        let request = demo.permission_request();
        let params = &request["params"];
        assert_eq!(params["sessionId"], sid.as_str());
        let offered: Vec<(&str, &str)> = params["options"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| (o["optionId"].as_str().unwrap(), o["kind"].as_str().unwrap()))
            .collect();
        assert_eq!(
            offered,
            [("allow_once", "allow_once"), ("allow_always", "allow_always"), ("reject_once", "reject_once")]
        );
        demo.respond(&request["id"], selected(option));
        let (response, before) = demo.response_with_preceding(&id);
        assert_eq!(stop_reason(&response), "end_turn", "{option}");
        let ups: Vec<Value> = updates(&before)
            .into_iter()
            .filter(|u| {
                u["sessionUpdate"] != "available_commands_update" && u["sessionUpdate"] != "session_info_update"
            })
            .collect();
        let kinds: Vec<&str> = ups.iter().map(|u| u["sessionUpdate"].as_str().unwrap()).collect();
        assert_eq!(kinds, ["tool_call", "tool_call_update", "agent_message_chunk", "usage_update"], "{option}");
        // The tool call is announced pending (`status` may be omitted: pending is its default).
        assert!(ups[0].get("status").is_none_or(|s| s == "pending"), "{}", ups[0]);
        assert_eq!(params["toolCall"]["toolCallId"], ups[0]["toolCallId"], "the request names the tool call");
        assert_eq!(ups[1]["toolCallId"], ups[0]["toolCallId"]);
        assert_eq!(ups[1]["status"], status, "{option}");
        assert_eq!(ups[2]["content"]["text"], text, "{option}");
        // The request was sent after the tool call was announced.
        let t = &demo.transcript;
        let request_at = t.iter().position(|m| m.get("method").is_some() && m.get("id") == Some(&request["id"]));
        let tool_call_at = t.iter().position(|m| {
            m["params"]["update"]["sessionUpdate"] == "tool_call"
                && m["params"]["update"]["toolCallId"] == ups[0]["toolCallId"]
        });
        assert!(tool_call_at.unwrap() < request_at.unwrap());
    }
}

#[test]
fn tool_cancelled_ends_the_turn_cancelled() {
    let mut demo = Demo::in_memory();
    let sid = demo.new_session();
    let id = demo.prompt(&sid, "tool rm");
    let request = demo.permission_request();
    // The protocol's order: the client cancels the turn, then answers its pending requests
    // `cancelled`.
    demo.notify("session/cancel", json!({"sessionId": sid}));
    demo.respond(&request["id"], json!({"outcome": {"outcome": "cancelled"}}));
    let (response, before) = demo.response_with_preceding(&id);
    assert_eq!(stop_reason(&response), "cancelled");
    assert!(!chunk_texts(&before, "agent_message_chunk").iter().any(|t| t.contains("rm: done")), "{before:?}");
    // The session goes on.
    let (response, _) = demo.prompt_done(&sid, "stream 1");
    assert_eq!(stop_reason(&response), "end_turn");
}

#[test]
fn tool_answered_cancelled_without_session_cancel_ends_the_turn_cancelled() {
    let mut demo = Demo::in_memory();
    let sid = demo.new_session();
    let id = demo.prompt(&sid, "tool rm");
    let request = demo.permission_request();
    // The user dismissed the permission prompt: docs/DEMO.md says the turn ends `cancelled`.
    demo.respond(&request["id"], json!({"outcome": {"outcome": "cancelled"}}));
    let (response, before) = demo.response_with_preceding(&id);
    assert_eq!(stop_reason(&response), "cancelled");
    assert!(chunk_texts(&before, "agent_message_chunk").is_empty(), "{before:?}");
    let (response, _) = demo.prompt_done(&sid, "stream 1");
    assert_eq!(stop_reason(&response), "end_turn");
}

#[test]
fn sleep_waits_then_answers_slept() {
    let mut demo = Demo::in_memory();
    let sid = demo.new_session();
    let (response, before) = demo.prompt_done(&sid, "sleep 20");
    assert_eq!(stop_reason(&response), "end_turn");
    assert_eq!(chunk_texts(&before, "agent_message_chunk"), ["slept"]);
    assert_usage_last(&before, "sleep");
}

#[test]
fn sleep_is_cancelled_at_once() {
    let mut demo = Demo::in_memory();
    let sid = demo.new_session();
    // An hour: only cancellation can end it within the hang guard.
    let id = demo.prompt(&sid, "sleep 3600000");
    // The title update follows the turn's start, so the turn is surely running.
    demo.wait_for(|m| m["params"]["update"]["sessionUpdate"] == "session_info_update");
    demo.notify("session/cancel", json!({"sessionId": sid}));
    let (response, before) = demo.response_with_preceding(&id);
    assert_eq!(stop_reason(&response), "cancelled");
    assert!(chunk_texts(&before, "agent_message_chunk").is_empty(), "{before:?}");
}

#[test]
fn ask_waits_for_cancel_and_sends_no_permission_request() {
    let mut demo = Demo::in_memory();
    let sid = demo.new_session();
    let id = demo.prompt(&sid, "ask what is your favourite colour?");
    demo.wait_for(|m| m["params"]["update"]["sessionUpdate"] == "session_info_update");
    // Prove the turn is parked and the connection free: another request is answered meanwhile.
    let list = demo.call_ok("session/list", json!({}));
    assert_eq!(list["sessions"].as_array().unwrap().len(), 1);
    demo.notify("session/cancel", json!({"sessionId": sid}));
    let response = demo.response(&id);
    assert_eq!(stop_reason(&response), "cancelled");
    assert!(
        !demo.transcript.iter().any(|m| m.get("method").and_then(Value::as_str) == Some("session/request_permission")),
        "an ask-user gate is never a permission request"
    );
}

#[test]
fn fail_answers_internal_error() {
    let mut demo = Demo::in_memory();
    let sid = demo.new_session();
    let (response, _) = demo.prompt_done(&sid, "fail");
    assert_eq!(code(&response), -32603, "{response}");
    assert!(response["error"]["message"].as_str().is_some_and(|m| !m.is_empty()), "{response}");
    // The session and the agent go on.
    let (response, _) = demo.prompt_done(&sid, "stream 1");
    assert_eq!(stop_reason(&response), "end_turn");
}

#[test]
fn compact_is_advertised_once_and_ends_end_turn() {
    let mut demo = Demo::in_memory();
    let sid = demo.new_session();
    let (response, before) = demo.prompt_done(&sid, "hello");
    assert_eq!(stop_reason(&response), "end_turn");
    let adverts: Vec<Value> =
        updates(&before).into_iter().filter(|u| u["sessionUpdate"] == "available_commands_update").collect();
    assert_eq!(adverts.len(), 1, "{before:?}");
    let names: Vec<&str> =
        adverts[0]["availableCommands"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["compact", "shout"]);
    let (response, before) = demo.prompt_done(&sid, "/compact");
    assert_eq!(stop_reason(&response), "end_turn", "{response}");
    assert!(!update_kinds(&before).contains(&"available_commands_update".to_owned()), "advertised once: {before:?}");
    let (response, _) = demo.prompt_done(&sid, "/compact");
    assert_eq!(stop_reason(&response), "end_turn");
    let total = demo
        .transcript
        .iter()
        .filter(|m| m["params"]["update"]["sessionUpdate"] == "available_commands_update")
        .count();
    assert_eq!(total, 1);

    // `/compact` as a session's very first prompt.
    let other = demo.new_session();
    let (response, before) = demo.prompt_done(&other, "/compact");
    assert_eq!(stop_reason(&response), "end_turn");
    assert_eq!(update_kinds(&before).iter().filter(|k| *k == "available_commands_update").count(), 1);
}

#[test]
fn config_options_and_modes_converge() {
    let mut demo = Demo::in_memory();
    let result = demo.new_session_result();
    let sid = result["sessionId"].as_str().unwrap().to_owned();
    let options = result["configOptions"].as_array().expect("configOptions");
    let summary: Vec<(&str, &str, Vec<&str>)> = options
        .iter()
        .map(|o| {
            let values = o["options"].as_array().unwrap().iter().map(|v| v["value"].as_str().unwrap()).collect();
            (o["id"].as_str().unwrap(), o["currentValue"].as_str().unwrap(), values)
        })
        .collect();
    assert_eq!(summary, [("mode", "ask", vec!["ask", "code"]), ("model", "fast", vec!["fast", "smart"])]);
    assert_eq!(result["modes"]["currentModeId"], "ask");
    let modes: Vec<&str> =
        result["modes"]["availableModes"].as_array().unwrap().iter().map(|m| m["id"].as_str().unwrap()).collect();
    assert_eq!(modes, ["ask", "code"]);

    let current = |options: &Value| -> Vec<String> {
        options.as_array().unwrap().iter().map(|o| o["currentValue"].as_str().unwrap().to_owned()).collect()
    };

    // set_mode → the mode option changes (one config_option_update with the full state).
    let id = demo.send_request("session/set_mode", json!({"sessionId": sid, "modeId": "code"}));
    let (response, before) = demo.response_with_preceding(&id);
    assert_eq!(response["result"], json!({}), "{response}");
    assert_eq!(update_kinds(&before), ["config_option_update"]);
    assert_eq!(current(&updates(&before)[0]["configOptions"]), ["code", "fast"]);

    // set_config_option on `mode` is the same setting.
    let id =
        demo.send_request("session/set_config_option", json!({"sessionId": sid, "configId": "mode", "value": "ask"}));
    let (response, before) = demo.response_with_preceding(&id);
    assert_eq!(current(&response["result"]["configOptions"]), ["ask", "fast"]);
    assert_eq!(update_kinds(&before), ["config_option_update"]);

    let id = demo
        .send_request("session/set_config_option", json!({"sessionId": sid, "configId": "model", "value": "smart"}));
    let (response, _) = demo.response_with_preceding(&id);
    assert_eq!(current(&response["result"]["configOptions"]), ["ask", "smart"]);

    // The same mode again: success, no notification.
    let id = demo.send_request("session/set_mode", json!({"sessionId": sid, "modeId": "ask"}));
    let (response, before) = demo.response_with_preceding(&id);
    assert_eq!(response["result"], json!({}));
    assert!(before.is_empty(), "{before:?}");

    // Unknown modes and values are refused.
    assert_eq!(code(&demo.call_err("session/set_mode", json!({"sessionId": sid, "modeId": "yolo"}))), -32602);
    let error =
        demo.call_err("session/set_config_option", json!({"sessionId": sid, "configId": "model", "value": "x"}));
    assert_eq!(code(&error), -32602);
}

#[test]
fn the_title_is_the_first_prompt_and_announced_once() {
    let mut demo = Demo::in_memory();
    let sid = demo.new_session();
    let first = "   Please refactor the parser module so that it streams its input   ";
    let (response, before) = demo.prompt_done(&sid, first);
    assert_eq!(stop_reason(&response), "end_turn");
    let infos: Vec<Value> =
        updates(&before).into_iter().filter(|u| u["sessionUpdate"] == "session_info_update").collect();
    assert_eq!(infos.len(), 1, "{before:?}");
    let expected: String = first.trim().chars().take(40).collect();
    assert_eq!(infos[0]["title"], expected.as_str());
    let (_, before) = demo.prompt_done(&sid, "and another thing");
    assert!(!update_kinds(&before).contains(&"session_info_update".to_owned()), "{before:?}");
    let list = demo.call_ok("session/list", json!({}));
    assert_eq!(list["sessions"][0]["title"], expected.as_str(), "{list}");
}

#[test]
fn close_then_prompt_fails_and_delete_needs_a_closed_session() {
    let mut demo = Demo::in_memory();
    let sid = demo.new_session();
    demo.prompt_done(&sid, "hello");
    // Delete of a live session is refused.
    let error = demo.call_err("session/delete", json!({"sessionId": sid}));
    assert_eq!(code(&error), -32600, "{error}");
    assert_eq!(demo.call_ok("session/close", json!({"sessionId": sid})), json!({}));
    let (response, _) = demo.prompt_done(&sid, "hello again");
    assert!(response.get("error").is_some(), "a closed session takes no prompt: {response}");
    assert_eq!(demo.call_ok("session/delete", json!({"sessionId": sid})), json!({}));
    let list = demo.call_ok("session/list", json!({}));
    assert!(list["sessions"].as_array().unwrap().is_empty(), "{list}");
    // Gone: neither loadable nor resumable.
    let error = demo.call_err("session/load", json!({"sessionId": sid, "cwd": "/tmp", "mcpServers": []}));
    assert_eq!(code(&error), -32002, "{error}");
}

#[test]
fn list_pages_follow_next_cursor() {
    let mut demo = Demo::initialized(&["--store", ":memory:", "--page-size", "2"]);
    let mut created: Vec<String> = (0..5).map(|_| demo.new_session()).collect();
    created.sort();
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = Vec::new();
    loop {
        let params = match &cursor {
            Some(c) => json!({"cursor": c}),
            None => json!({}),
        };
        let page = demo.call_ok("session/list", params);
        let ids: Vec<String> =
            page["sessions"].as_array().unwrap().iter().map(|s| s["sessionId"].as_str().unwrap().to_owned()).collect();
        for s in page["sessions"].as_array().unwrap() {
            assert_eq!(s["cwd"], "/tmp", "{s}");
        }
        pages.push(ids.len());
        seen.extend(ids);
        match page.get("nextCursor").and_then(Value::as_str) {
            Some(next) => cursor = Some(next.to_owned()),
            None => break,
        }
        assert!(pages.len() <= 5, "pagination does not end");
    }
    assert_eq!(pages, [2, 2, 1]);
    assert_eq!(seen, created, "every session once, in id order");
    let error = demo.call_err("session/list", json!({"cursor": "not-a-cursor"}));
    assert_eq!(code(&error), -32602, "{error}");
}

#[test]
fn resume_sends_nothing_and_load_replays() {
    let mut demo = Demo::in_memory();
    let sid = demo.new_session();
    demo.prompt_done(&sid, "think deeply");
    let id = demo.prompt(&sid, "tool ls");
    let request = demo.permission_request();
    demo.respond(&request["id"], selected("allow_once"));
    demo.response(&id);
    demo.prompt_done(&sid, "two words");
    demo.call_ok("session/close", json!({"sessionId": sid}));

    // Resume: the response, and nothing else (the list response is the very next message).
    let id = demo.send_request("session/resume", json!({"sessionId": sid, "cwd": "/tmp", "mcpServers": []}));
    let (response, before) = demo.response_with_preceding(&id);
    assert!(response.get("result").is_some(), "{response}");
    assert!(before.is_empty(), "resume sends no update: {before:?}");
    let list = demo.send_request("session/list", json!({}));
    assert!(common::is_response_to(&demo.next(), &list), "nothing followed the resume");
    demo.call_ok("session/close", json!({"sessionId": sid}));

    // Load: the history, in four buckets, before the response.
    let id = demo.send_request("session/load", json!({"sessionId": sid, "cwd": "/tmp", "mcpServers": []}));
    let (response, before) = demo.response_with_preceding(&id);
    assert!(response.get("result").is_some(), "{response}");
    assert_eq!(response["result"]["modes"]["currentModeId"], "ask", "{response}");
    assert_eq!(before.len(), updates(&before).len(), "only updates precede the load response");
    let kinds = update_kinds(&before);
    assert_eq!(
        kinds,
        [
            "user_message_chunk",
            "user_message_chunk",
            "user_message_chunk",
            "agent_thought_chunk",
            "agent_message_chunk",
            "agent_message_chunk",
            "agent_message_chunk",
            "tool_call",
            "usage_update",
        ]
    );
    assert_eq!(chunk_texts(&before, "user_message_chunk"), ["think deeply", "tool ls", "two words"]);
    assert_eq!(chunk_texts(&before, "agent_thought_chunk"), ["deeply"]);
    let messages = chunk_texts(&before, "agent_message_chunk");
    assert_eq!(messages[1], "ls: done");
    assert_eq!(messages[2], "two words", "the echo's words, as one message");
    let tool = &updates(&before)[7];
    assert_eq!(tool["status"], "completed", "{tool}");
    // The loaded session is live.
    let (response, _) = demo.prompt_done(&sid, "stream 1");
    assert_eq!(stop_reason(&response), "end_turn");
}

#[test]
fn a_second_prompt_while_one_runs_is_refused_and_cancel_is_prompt() {
    let mut demo = Demo::in_memory();
    let sid = demo.new_session();
    let id = demo.prompt(&sid, "sleep 3600000");
    demo.wait_for(|m| m["params"]["update"]["sessionUpdate"] == "session_info_update");
    let (second, _) = demo.prompt_done(&sid, "hello");
    assert_eq!(code(&second), -32600, "{second}");
    // Another session is not blocked.
    let other = demo.new_session();
    let (response, _) = demo.prompt_done(&other, "stream 3");
    assert_eq!(stop_reason(&response), "end_turn");
    demo.notify("session/cancel", json!({"sessionId": sid}));
    assert_eq!(stop_reason(&demo.response(&id)), "cancelled");
}

#[test]
fn stdout_carries_protocol_only_even_on_bad_input() {
    let mut demo = Demo::in_memory();
    demo.send_raw("this is not json");
    let error = demo.next();
    assert_eq!(code(&error), -32700, "{error}");
    assert_eq!(error["id"], Value::Null);
    let error = demo.call_err("session/nope", json!({}));
    assert_eq!(code(&error), -32601, "{error}");
    // Still serving.
    demo.new_session();
}
