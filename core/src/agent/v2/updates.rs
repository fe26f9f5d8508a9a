//! The v2 rewriter: the lines the agent writes on a v2 connection in v1's form, in v2's (see the
//! module doc of [`super`] for the rules). It runs on the connection's writer task, in order.
//!
//! The frequent lines are not its business: their producers write them in v2's form (the drain a
//! turn's chunks with their message ids, [`super::lifecycle`] the acknowledgement, the
//! `user_message` and the `state_update`s), and every line v2 shares with v1 (responses, usage,
//! session info, …) is already right. It tells those from the lines it rewrites by their first
//! bytes ([`shape`]) and passes them on unparsed; only the rare rest (tool calls, plans, modes,
//! commands, config options, permission requests — and a chunk written without an id by anything
//! but the drain) is parsed and rewritten.

use std::collections::HashMap;

use serde_json::{Map, Value, json};

use super::Dialect;
use super::message_ids::{ChunkKind, MessageIds};
use super::requests::config_options;
use crate::rpc::LineRewriter;

/// The rewriter of one connection.
pub(in super::super) struct Rewriter {
    dialect: Dialect,
    /// The message ids of each session's chunks written without one (not the drain's: it writes
    /// its chunks with their ids), by session id; each follows the session's turns.
    messages: HashMap<String, MessageIds>,
}

impl Rewriter {
    pub(in super::super) fn new(dialect: Dialect) -> Self {
        Self { dialect, messages: HashMap::new() }
    }

    /// The message ids of `session`'s chunks.
    fn messages(&mut self, session: &str) -> &mut MessageIds {
        self.messages.entry(session.to_owned()).or_insert_with(|| MessageIds::before_any_turn(session))
    }
}

impl LineRewriter for Rewriter {
    fn rewrite(&mut self, line: Vec<u8>, out: &mut Vec<Vec<u8>>) {
        if !self.dialect.is_v2() {
            out.push(line);
            return;
        }
        match shape(&line) {
            Shape::Final => {
                out.push(line);
                return;
            }
            Shape::UserMessage { session, id } => {
                // The start of a turn: the ids of chunks written without one follow it.
                if let Some(messages) = self.messages.get_mut(session) {
                    messages.start_turn_escaped(id);
                } else {
                    let mut messages = MessageIds::before_any_turn(session);
                    messages.start_turn_escaped(id);
                    self.messages.insert(session.to_owned(), messages);
                }
                out.push(line);
                return;
            }
            Shape::Other => {}
        }
        let Ok(mut message) = serde_json::from_slice::<Value>(&line) else {
            out.push(line);
            return;
        };
        let keep = match message.get("method").and_then(Value::as_str) {
            Some("session/update") => self.update(&mut message),
            Some("session/request_permission") => {
                permission_request(&mut message);
                true
            }
            _ => {
                out.push(line);
                return;
            }
        };
        if keep {
            let mut line = serde_json::to_vec(&message).unwrap_or(line);
            if line.last() != Some(&b'\n') {
                line.push(b'\n');
            }
            out.push(line);
        }
    }
}

/// What a line is to the rewriter, told from its first bytes.
#[derive(Debug, PartialEq, Eq)]
enum Shape<'a> {
    /// Already in v2's form: written as it is.
    Final,
    /// A turn's `user_message` (already in v2's form), of `session`, with message `id` (as it is
    /// written in the line, escapes included).
    UserMessage { session: &'a str, id: &'a [u8] },
    /// Anything else: parsed, and rewritten if v2's form differs.
    Other,
}

/// The start of every `session/update` line (see `translate::UpdateHead`).
const UPDATE_HEAD: &[u8] = br#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":""#;
/// Between the session id and the update's tag in such a line.
const UPDATE_TAG: &[u8] = br#"","update":{"sessionUpdate":""#;
/// The start of every notification line.
const NOTIFICATION_HEAD: &[u8] = br#"{"jsonrpc":"2.0","method":"#;
/// The start of every request and response line.
const WITH_ID_HEAD: &[u8] = br#"{"jsonrpc":"2.0","id":"#;

/// How [`Rewriter::rewrite`] treats `line` (see [`Shape`]); anything it cannot tell for sure is
/// [`Shape::Other`], which the general path handles as before.
fn shape(line: &[u8]) -> Shape<'_> {
    if let Some(rest) = line.strip_prefix(UPDATE_HEAD) {
        return update_shape(rest);
    }
    if let Some(rest) = line.strip_prefix(NOTIFICATION_HEAD) {
        // No notification but `session/update` is rewritten; an unusual one of those is parsed.
        return if rest.starts_with(br#""session/update""#) { Shape::Other } else { Shape::Final };
    }
    if let Some(rest) = line.strip_prefix(WITH_ID_HEAD) {
        // A response (the agent's own requests are the ones rewritten: permission requests).
        let after_id = json_id_len(rest).map(|n| &rest[n..]);
        if after_id.is_some_and(|r| r.starts_with(br#","result":"#) || r.starts_with(br#","error":"#)) {
            return Shape::Final;
        }
    }
    Shape::Other
}

/// [`shape`] of a `session/update` line: `rest` follows [`UPDATE_HEAD`].
fn update_shape(rest: &[u8]) -> Shape<'_> {
    // The session id ends at its closing quote: the first quote not escaped (a backslash before
    // it may be an escape of its own, so that case is left to the general path).
    let Some(end) = memchr::memchr(b'"', rest) else { return Shape::Other };
    if (end > 0 && rest[end - 1] == b'\\') || !rest[end..].starts_with(UPDATE_TAG) {
        return Shape::Other;
    }
    let update = &rest[end + UPDATE_TAG.len()..];
    let Some(tag_end) = memchr::memchr(b'"', update) else { return Shape::Other };
    let (tag, after) = update.split_at(tag_end);
    match tag {
        // A chunk with its id (the drain's) is v2's; one without needs an id.
        b"agent_message_chunk" | b"agent_thought_chunk" | b"user_message_chunk" => {
            if after.starts_with(br#"","messageId":""#) { Shape::Final } else { Shape::Other }
        }
        b"user_message" => user_message_shape(&rest[..end], after),
        b"tool_call"
        | b"tool_call_update"
        | b"plan"
        | b"plan_update"
        | b"plan_removed"
        | b"current_mode_update"
        | b"available_commands_update"
        | b"config_option_update" => Shape::Other,
        _ => Shape::Final,
    }
}

/// [`update_shape`] of a `user_message` of `session` (as written, escapes included): `after`
/// follows its tag. Its session id and message id are taken as they are when neither has an
/// escape (the general path reads the others).
fn user_message_shape<'a>(session: &'a [u8], after: &'a [u8]) -> Shape<'a> {
    let Some(id) = after.strip_prefix(br#"","messageId":""#) else { return Shape::Other };
    let Some(id_end) = memchr::memchr(b'"', id) else { return Shape::Other };
    let id = &id[..id_end];
    if memchr::memchr(b'\\', session).is_some() || memchr::memchr(b'\\', id).is_some() {
        return Shape::Other;
    }
    match std::str::from_utf8(session) {
        Ok(session) => Shape::UserMessage { session, id },
        Err(_) => Shape::Other,
    }
}

/// The length of the JSON request id at the start of `rest` (a number, a string or `null`).
fn json_id_len(rest: &[u8]) -> Option<usize> {
    match rest.first()? {
        b'"' => {
            let mut escaped = false;
            for (i, &b) in rest.iter().enumerate().skip(1) {
                match b {
                    _ if escaped => escaped = false,
                    b'\\' => escaped = true,
                    b'"' => return Some(i + 1),
                    _ => {}
                }
            }
            None
        }
        b'n' => rest.starts_with(b"null").then_some(4),
        _ => Some(rest.iter().take_while(|b| b.is_ascii_digit() || **b == b'-').count()).filter(|n| *n > 0),
    }
}

impl Rewriter {
    /// Rewrites a `session/update` in place; `false` when v2 has no such update.
    fn update(&mut self, message: &mut Value) -> bool {
        let Some(params) = message.get_mut("params").and_then(Value::as_object_mut) else { return true };
        let session = params.get("sessionId").and_then(Value::as_str).unwrap_or_default().to_owned();
        let Some(update) = params.get_mut("update").and_then(Value::as_object_mut) else { return true };
        let kind = update.get("sessionUpdate").and_then(Value::as_str).unwrap_or_default().to_owned();
        let messages = self.messages(&session);
        match kind.as_str() {
            "user_message" => {
                if let Some(id) = update.get("messageId").and_then(Value::as_str) {
                    messages.start_turn(id);
                }
            }
            "user_message_chunk" | "agent_message_chunk" | "agent_thought_chunk"
                if update.get("messageId").is_none_or(Value::is_null) =>
            {
                if let Some(chunk) = ChunkKind::of_tag(&kind) {
                    update.insert("messageId".to_owned(), json!(messages.chunk(chunk)));
                }
            }
            "tool_call" | "tool_call_update" => {
                messages.interrupt();
                update.insert("sessionUpdate".to_owned(), json!("tool_call_update"));
                if let Some(content) = update.get_mut("content") {
                    tool_call_content(content);
                }
            }
            "plan" => {
                messages.interrupt();
                let entries = update.remove("entries").unwrap_or_else(|| json!([]));
                let plan = json!({ "type": "items", "planId": WHOLE_PLAN_ID, "entries": entries });
                update.insert("sessionUpdate".to_owned(), json!("plan_update"));
                update.insert("plan".to_owned(), plan);
            }
            "plan_update" | "plan_removed" => messages.interrupt(),
            // The mode is a config option in v2; its `config_option_update` is sent beside it.
            "current_mode_update" => return false,
            "available_commands_update" => {
                // Each command is of type `command`, its free-text input of type `text`.
                if let Some(commands) = update.get_mut("availableCommands").and_then(Value::as_array_mut) {
                    for command in commands.iter_mut().filter_map(Value::as_object_mut) {
                        command.entry("type").or_insert_with(|| json!("command"));
                        if let Some(input) = command.get_mut("input").and_then(Value::as_object_mut) {
                            input.entry("type").or_insert_with(|| json!("text"));
                        }
                    }
                }
            }
            "config_option_update" => {
                if let Some(options) = update.get_mut("configOptions") {
                    config_options(options);
                }
            }
            _ => {}
        }
        true
    }
}

/// The id of the plan a whole v1 `plan` update stands for: a session has one such plan.
const WHOLE_PLAN_ID: &str = "plan";

/// A tool call's content in v2's form, in place: diffs as changes with a git patch; terminal
/// references dropped (v1's terminals are the client's, which v2 does not have).
fn tool_call_content(content: &mut Value) {
    let Some(items) = content.as_array_mut() else { return };
    items.retain(|item| item.get("type").and_then(Value::as_str) != Some("terminal"));
    for item in items.iter_mut() {
        if item.get("type").and_then(Value::as_str) == Some("diff")
            && let Some(diff) = item.as_object().map(v2_diff)
        {
            *item = diff;
        }
    }
}

/// A v1 diff (`path`, `oldText`, `newText`) as v2's: one change (`add` when there was no old
/// text, else `modify`) and its whole-file git patch.
fn v2_diff(v1: &Map<String, Value>) -> Value {
    let path = v1.get("path").and_then(Value::as_str).unwrap_or_default();
    let old = v1.get("oldText").and_then(Value::as_str);
    let new = v1.get("newText").and_then(Value::as_str).unwrap_or_default();
    let operation = if old.is_some() { "modify" } else { "add" };
    json!({
        "type": "diff",
        "changes": [{ "operation": operation, "path": path, "fileType": "text" }],
        "patch": { "format": "git_patch", "text": git_patch(path, old, new) },
    })
}

/// A git patch replacing the whole of `old` (none: a new file) with `new` at `path`.
fn git_patch(path: &str, old: Option<&str>, new: &str) -> String {
    use std::fmt::Write as _;
    let mut text = format!("diff --git {path} {path}\n");
    if old.is_none() {
        text.push_str("new file mode 100644\n--- /dev/null\n");
    } else {
        let _ = writeln!(text, "--- {path}");
    }
    let _ = writeln!(text, "+++ {path}");
    let old_lines: Vec<&str> = old.map(|o| o.lines().collect()).unwrap_or_default();
    let new_lines: Vec<&str> = new.lines().collect();
    let start = |n: usize| usize::from(n > 0);
    let _ = writeln!(
        text,
        "@@ -{},{} +{},{} @@",
        start(old_lines.len()),
        old_lines.len(),
        start(new_lines.len()),
        new_lines.len()
    );
    let mut hunk = |sign: char, whole: &str, lines: &[&str]| {
        for line in lines {
            text.push(sign);
            text.push_str(line);
            text.push('\n');
        }
        if !lines.is_empty() && !whole.ends_with('\n') {
            text.push_str("\\ No newline at end of file\n");
        }
    };
    hunk('-', old.unwrap_or_default(), &old_lines);
    hunk('+', new, &new_lines);
    text
}

/// A permission request in v2's form, in place: the prompt's `title` (the gate's, which the core
/// puts in; else the tool call's) and the tool call as its `subject`.
fn permission_request(message: &mut Value) {
    let Some(params) = message.get_mut("params").and_then(Value::as_object_mut) else { return };
    let Some(mut tool_call) = params.remove("toolCall") else { return };
    if let Some(content) = tool_call.get_mut("content") {
        tool_call_content(content);
    }
    if !params.contains_key("title") {
        let title = tool_call.get("title").and_then(Value::as_str).unwrap_or("Allow this tool call?").to_owned();
        params.insert("title".to_owned(), json!(title));
    }
    params.insert("subject".to_owned(), json!({ "type": "tool_call", "toolCall": tool_call }));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_whole_file_patch_marks_a_missing_final_newline() {
        assert_eq!(
            git_patch("/w/a", Some("old\n"), "new"),
            "diff --git /w/a /w/a\n--- /w/a\n+++ /w/a\n@@ -1,1 +1,1 @@\n-old\n+new\n\\ No newline at end of file\n"
        );
        assert_eq!(
            git_patch("/w/b", None, "x\ny\n"),
            "diff --git /w/b /w/b\nnew file mode 100644\n--- /dev/null\n+++ /w/b\n@@ -0,0 +1,2 @@\n+x\n+y\n"
        );
    }
}

#[cfg(test)]
#[allow(clippy::needless_pass_by_value, reason = "the tests build their messages in place")]
mod rewriting {
    use serde_json::{Value, json};

    use super::*;

    fn rewrite(rewriter: &mut Rewriter, message: &Value) -> Vec<Value> {
        let mut line = serde_json::to_vec(message).unwrap();
        line.push(b'\n');
        let mut out = Vec::new();
        rewriter.rewrite(line, &mut out);
        out.iter().map(|l| serde_json::from_slice(l).unwrap()).collect()
    }

    fn update(update: Value) -> Value {
        json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s", "update": update}})
    }

    fn v2() -> Rewriter {
        let dialect = Dialect::default();
        dialect.switch_to_v2();
        Rewriter::new(dialect)
    }

    #[test]
    fn a_v1_connection_is_not_touched() {
        let mut rewriter = Rewriter::new(Dialect::default());
        let plan = update(json!({"sessionUpdate": "plan", "entries": []}));
        assert_eq!(rewrite(&mut rewriter, &plan), [plan]);
    }

    #[test]
    fn tool_calls_plans_and_modes_take_v2s_form() {
        let mut rewriter = v2();
        let call =
            rewrite(&mut rewriter, &update(json!({"sessionUpdate": "tool_call", "toolCallId": "c", "title": "t"})));
        assert_eq!(call[0]["params"]["update"]["sessionUpdate"], "tool_call_update");
        let plan = rewrite(&mut rewriter, &update(json!({"sessionUpdate": "plan", "entries": []})));
        assert_eq!(
            plan[0]["params"]["update"],
            json!({"sessionUpdate": "plan_update", "plan": {"type": "items", "planId": "plan", "entries": []}})
        );
        assert!(
            rewrite(&mut rewriter, &update(json!({"sessionUpdate": "current_mode_update", "currentModeId": "code"})))
                .is_empty()
        );
        let commands = update(json!({"sessionUpdate": "available_commands_update", "availableCommands": [
            {"name": "shout", "description": "d", "input": {"hint": "text"}}
        ]}));
        let commands = rewrite(&mut rewriter, &commands);
        let command = &commands[0]["params"]["update"]["availableCommands"][0];
        assert_eq!(
            (&command["type"], &command["input"]),
            (&json!("command"), &json!({"hint": "text", "type": "text"}))
        );
    }

    #[test]
    fn chunks_get_message_ids_under_the_turns_user_message() {
        let mut rewriter = v2();
        rewrite(&mut rewriter, &update(json!({"sessionUpdate": "user_message", "messageId": "u1", "content": []})));
        let chunk = json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "a"}});
        let first = rewrite(&mut rewriter, &update(chunk.clone()))[0]["params"]["update"]["messageId"].clone();
        let second = rewrite(&mut rewriter, &update(chunk.clone()))[0]["params"]["update"]["messageId"].clone();
        assert_eq!(first, second);
        assert!(first.as_str().unwrap().starts_with("u1/"));
        rewrite(&mut rewriter, &update(json!({"sessionUpdate": "tool_call", "toolCallId": "c", "title": "t"})));
        let third = rewrite(&mut rewriter, &update(chunk))[0]["params"]["update"]["messageId"].clone();
        assert_ne!(third, first, "a tool call ends the message");
        let replayed = update(
            json!({"sessionUpdate": "agent_message_chunk", "messageId": "kept", "content": {"type": "text", "text": "a"}}),
        );
        assert_eq!(rewrite(&mut rewriter, &replayed)[0]["params"]["update"]["messageId"], "kept");
    }

    #[test]
    fn the_drains_chunks_pass_and_equal_what_the_general_path_makes_of_v1_chunks() {
        use crate::agent::translate::{UpdateHead, text_chunk_line};
        use crate::harness::TokenChannel;
        let (mut rewriter, mut ids) = (v2(), MessageIds::turn("u1"));
        rewrite(&mut rewriter, &update(json!({"sessionUpdate": "user_message", "messageId": "u1", "content": []})));
        for (channel, text) in
            [(TokenChannel::Message, "a \"b\""), (TokenChannel::Message, "c"), (TokenChannel::Thought, "t")]
        {
            let head = UpdateHead::new("s");
            let id = ids.chunk_json(ChunkKind::of_channel(channel));
            let direct = text_chunk_line(&head, channel, Some(id), text);
            let mut out = Vec::new();
            rewriter.rewrite(direct.clone(), &mut out);
            assert_eq!(out, std::slice::from_ref(&direct), "passed on as it is");
            let v1 = text_chunk_line(&head, channel, None, text);
            let general = rewrite(&mut rewriter, &serde_json::from_slice(&v1).unwrap()).remove(0);
            assert_eq!(serde_json::from_slice::<Value>(&direct).unwrap(), general);
        }
    }

    #[test]
    fn lines_v2_shares_with_v1_are_told_apart_without_parsing() {
        let line = |value: Value| serde_json::to_vec(&value).unwrap();
        let response = line(json!({"jsonrpc": "2.0", "id": 3, "result": {"stopReason": "end_turn"}}));
        let error = line(json!({"jsonrpc": "2.0", "id": "a\"b", "error": {"code": 1, "message": "m"}}));
        let state = line(update(json!({"sessionUpdate": "state_update", "state": "running"})));
        let usage = line(update(json!({"sessionUpdate": "usage_update", "used": 1, "size": 2})));
        let other = line(json!({"jsonrpc": "2.0", "method": "elicitation/complete", "params": {}}));
        for final_line in [response, error, state, usage, other] {
            assert_eq!(shape(&final_line), Shape::Final, "{}", String::from_utf8_lossy(&final_line));
        }
        let user = line(update(json!({"sessionUpdate": "user_message", "messageId": "s/u\"1", "content": []})));
        assert_eq!(shape(&user), Shape::Other, "an escaped id takes the general path");
        let user = line(update(json!({"sessionUpdate": "user_message", "messageId": "s/u1", "content": []})));
        assert_eq!(shape(&user), Shape::UserMessage { session: "s", id: b"s/u1" });
        let request = line(json!({"jsonrpc": "2.0", "id": 0, "method": "session/request_permission", "params": {}}));
        let call = line(update(json!({"sessionUpdate": "tool_call", "toolCallId": "c", "title": "t"})));
        let chunk =
            line(update(json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "a"}})));
        let escaped = line(json!({"jsonrpc": "2.0", "method": "session/update",
            "params": {"sessionId": "a\"b", "update": {"sessionUpdate": "usage_update", "used": 1, "size": 2}}}));
        for rewritten in [request, call, chunk, escaped] {
            assert_eq!(shape(&rewritten), Shape::Other, "{}", String::from_utf8_lossy(&rewritten));
        }
    }

    #[test]
    fn a_chunk_written_without_an_id_follows_the_turn_a_direct_user_message_started() {
        let mut rewriter = v2();
        let user = serde_json::to_vec(&update(
            json!({"sessionUpdate": "user_message", "messageId": "u9", "content": [{"type": "text", "text": "x"}]}),
        ))
        .unwrap();
        let mut out = Vec::new();
        rewriter.rewrite(user.clone(), &mut out);
        assert_eq!(out, [user]);
        let chunk = json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "a"}});
        assert_eq!(rewrite(&mut rewriter, &update(chunk))[0]["params"]["update"]["messageId"], "u9/reply-1");
    }

    #[test]
    fn a_permission_request_has_a_title_and_its_tool_call_as_subject() {
        let mut rewriter = v2();
        let request = json!({"jsonrpc": "2.0", "id": 0, "method": "session/request_permission", "params": {
            "sessionId": "s", "toolCall": {"toolCallId": "c", "title": "Run grep"}, "options": []
        }});
        let params = &rewrite(&mut rewriter, &request)[0]["params"];
        assert_eq!(params["title"], "Run grep");
        assert_eq!(
            params["subject"],
            json!({"type": "tool_call", "toolCall": {"toolCallId": "c", "title": "Run grep"}})
        );
        assert!(params.get("toolCall").is_none());
    }
}
