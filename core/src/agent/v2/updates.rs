//! The v2 rewriter: every line the agent writes on a v2 connection, in v2's form (see the module
//! doc of [`super`] for the rules). It runs on the connection's writer task, in order, so it keeps
//! each session's message ids without locks.

use std::collections::HashMap;

use serde_json::{Map, Value, json};

use super::Dialect;
use super::requests::config_options;
use crate::rpc::LineRewriter;

/// The rewriter of one connection.
pub(in super::super) struct Rewriter {
    dialect: Dialect,
    /// Each session's message ids, by session id.
    messages: HashMap<String, Messages>,
}

impl Rewriter {
    pub(in super::super) fn new(dialect: Dialect) -> Self {
        Self { dialect, messages: HashMap::new() }
    }
}

impl LineRewriter for Rewriter {
    fn rewrite(&mut self, line: Vec<u8>, out: &mut Vec<Vec<u8>>) {
        if !self.dialect.is_v2() {
            out.push(line);
            return;
        }
        // The hot path: a streamed text chunk as the translator writes it needs only its id.
        let line = match self.text_chunk(line) {
            Ok(rewritten) => {
                out.push(rewritten);
                return;
            }
            Err(line) => line,
        };
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

/// The start of every `session/update` line the translator writes directly.
const UPDATE_HEAD: &[u8] = br#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":""#;
/// Between the session id and the update's kind in such a line.
const UPDATE_TAG: &[u8] = br#"","update":{"sessionUpdate":""#;

impl Rewriter {
    /// A text chunk line as the translator writes it directly (`agent_message_chunk` or
    /// `agent_thought_chunk`, without a `messageId`), with its message id put in without parsing
    /// the line: `Ok` with the new line, or `Err` with the line untouched when it is anything else.
    fn text_chunk(&mut self, line: Vec<u8>) -> Result<Vec<u8>, Vec<u8>> {
        let Some(rest) = line.strip_prefix(UPDATE_HEAD) else { return Err(line) };
        let Some(end) = memchr::memmem::find(rest, UPDATE_TAG) else { return Err(line) };
        let session = &rest[..end];
        let after = &rest[end + UPDATE_TAG.len()..];
        let kind = if after.starts_with(br#"agent_message_chunk","content":"#) {
            "agent_message_chunk"
        } else if after.starts_with(br#"agent_thought_chunk","content":"#) {
            "agent_thought_chunk"
        } else {
            return Err(line);
        };
        // An escaped session id, or a chunk that has an id, takes the general path.
        if session.contains(&b'\\') || memchr::memmem::find(after, br#""messageId""#).is_some() {
            return Err(line);
        }
        let Ok(session) = std::str::from_utf8(session) else { return Err(line) };
        if !self.messages.contains_key(session) {
            self.messages.insert(session.to_owned(), Messages::new(session));
        }
        let Some(messages) = self.messages.get_mut(session) else { return Err(line) };
        let id = messages.chunk(kind);
        // `"sessionUpdate":"<kind>",` then the id, then the rest of the line as it was.
        let at = UPDATE_HEAD.len() + end + UPDATE_TAG.len() + kind.len() + 2;
        let mut rewritten = Vec::with_capacity(line.len() + id.len() + 16);
        rewritten.extend_from_slice(&line[..at]);
        rewritten.extend_from_slice(br#""messageId":"#);
        let _ = serde_json::to_writer(&mut rewritten, &id);
        rewritten.push(b',');
        rewritten.extend_from_slice(&line[at..]);
        Ok(rewritten)
    }

    /// Rewrites a `session/update` in place; `false` when v2 has no such update.
    fn update(&mut self, message: &mut Value) -> bool {
        let Some(params) = message.get_mut("params").and_then(Value::as_object_mut) else { return true };
        let session = params.get("sessionId").and_then(Value::as_str).unwrap_or_default().to_owned();
        let Some(update) = params.get_mut("update").and_then(Value::as_object_mut) else { return true };
        let kind = update.get("sessionUpdate").and_then(Value::as_str).unwrap_or_default().to_owned();
        let messages = self.messages.entry(session.clone()).or_insert_with(|| Messages::new(&session));
        match kind.as_str() {
            "user_message" => {
                if let Some(id) = update.get("messageId").and_then(Value::as_str) {
                    messages.turn(id);
                }
            }
            "user_message_chunk" | "agent_message_chunk" | "agent_thought_chunk"
                if update.get("messageId").is_none_or(Value::is_null) =>
            {
                update.insert("messageId".to_owned(), json!(messages.chunk(&kind)));
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

/// A session's message ids: v2 requires one on every chunk, and a new one starts a new message.
/// The chunks of one kind in a row are one message; a tool call or a plan between them ends it.
struct Messages {
    /// The current turn's user message id (the base of its messages' ids).
    base: String,
    /// The kind and id of the message being streamed.
    current: Option<(String, String)>,
    next: u64,
}

impl Messages {
    fn new(session: &str) -> Self {
        Self { base: format!("{session}/agent"), current: None, next: 0 }
    }

    /// A new turn, whose user message is `id`.
    fn turn(&mut self, id: &str) {
        id.clone_into(&mut self.base);
        self.current = None;
        self.next = 0;
    }

    /// The message a chunk of `kind` belongs to.
    fn chunk(&mut self, kind: &str) -> String {
        if let Some((current, id)) = &self.current
            && current == kind
        {
            return id.clone();
        }
        self.next += 1;
        let tag = match kind {
            "agent_thought_chunk" => "thought",
            "user_message_chunk" => "user",
            _ => "reply",
        };
        let id = format!("{}/{tag}-{}", self.base, self.next);
        self.current = Some((kind.to_owned(), id.clone()));
        id
    }

    /// Something else came between: the next chunk starts a new message.
    fn interrupt(&mut self) {
        self.current = None;
    }
}

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

    #[test]
    fn chunks_of_one_kind_in_a_row_are_one_message_and_a_tool_call_ends_it() {
        let mut messages = Messages::new("s");
        messages.turn("s/u1");
        let a = messages.chunk("agent_message_chunk");
        assert_eq!(messages.chunk("agent_message_chunk"), a);
        let thought = messages.chunk("agent_thought_chunk");
        assert_ne!(thought, a);
        messages.interrupt();
        let b = messages.chunk("agent_message_chunk");
        assert!(b != a && b.starts_with("s/u1/"), "{b}");
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
    fn a_directly_written_chunk_gets_the_id_the_general_path_would_give() {
        use crate::agent::translate::{UpdateHead, text_chunk_line};
        use crate::harness::TokenChannel;
        let (mut fast, mut general) = (v2(), v2());
        for rewriter in [&mut fast, &mut general] {
            rewrite(rewriter, &update(json!({"sessionUpdate": "user_message", "messageId": "u1", "content": []})));
        }
        for (channel, text) in
            [(TokenChannel::Message, "a \"b\""), (TokenChannel::Message, "c"), (TokenChannel::Thought, "t")]
        {
            let line = text_chunk_line(&UpdateHead::new("s"), channel, text);
            let mut out = Vec::new();
            fast.rewrite(line.clone(), &mut out);
            let fast: Value = serde_json::from_slice(&out[0]).unwrap();
            let slow = rewrite(&mut general, &serde_json::from_slice(&line).unwrap()).remove(0);
            assert_eq!(fast, slow);
            assert!(fast["params"]["update"]["messageId"].as_str().unwrap().starts_with("u1/"));
        }
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
