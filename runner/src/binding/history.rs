//! The wire form of a turn's history for the bindings: each [`HistoryEntry`] as one JSON object
//! tagged by `type`, the shape Node's `HistoryEntry` declares and Python's entry classes are
//! built from.
//!
//! - `{"type": "user", "text", "content": [ContentBlock]}`
//! - `{"type": "assistant", "text"}`, `{"type": "thought", "text"}`, `{"type": "summary", "text"}`
//! - `{"type": "tool_call", "id", "name" (string or null), "title", "kind", "status", "input",
//!   "output" (any JSON, null when absent), "content": [ToolCallContent], "text"}`
//!
//! Content blocks, tool call content, kinds and statuses are in their ACP wire form.

use serde_json::{Value, json};

use crate::history::HistoryEntry;

/// `entries` in the wire form (see the module doc).
pub fn history_json(entries: &[HistoryEntry]) -> Value {
    Value::Array(entries.iter().map(entry_json).collect())
}

fn entry_json(entry: &HistoryEntry) -> Value {
    match entry {
        HistoryEntry::User { text, content } => json!({"type": "user", "text": text, "content": content}),
        HistoryEntry::Assistant { text } => json!({"type": "assistant", "text": text}),
        HistoryEntry::Thought { text } => json!({"type": "thought", "text": text}),
        HistoryEntry::Summary { text } => json!({"type": "summary", "text": text}),
        HistoryEntry::ToolCall(call) => json!({
            "type": "tool_call",
            "id": call.id,
            "name": call.name,
            "title": call.title,
            "kind": call.kind,
            "status": call.status,
            "input": call.input,
            "output": call.output,
            "content": call.content,
            "text": call.text(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use acp_facade::harness::content::text_block;

    #[test]
    fn entries_take_their_tagged_wire_form() {
        let entries = [
            HistoryEntry::User { text: "hi".into(), content: vec![text_block("hi")] },
            HistoryEntry::Summary { text: "so far".into() },
        ];
        assert_eq!(
            history_json(&entries),
            json!([
                {"type": "user", "text": "hi", "content": [{"type": "text", "text": "hi"}]},
                {"type": "summary", "text": "so far"},
            ])
        );
    }
}
