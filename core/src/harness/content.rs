//! Conversation content: the messages a turn consumes and produces.
//!
//! Content blocks are the ACP [`ContentBlock`] type itself, so nothing is
//! lost or guessed between a host's content and the wire.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::ids::ToolCallId;
use super::tool_call::ToolCallChanges;
use crate::acp::{ContentBlock, ToolCallContent, ToolCallLocation, ToolKind};

/// A user's message: the prompt of a turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct UserMessage {
    /// The prompt's content blocks, as the client sent them.
    pub content: Vec<ContentBlock>,
    /// The id the client knows the message by ([`Prompt::message_id`](super::Prompt)), when it
    /// was told one; a replay shows the message under it (else under its event's id).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
}

impl UserMessage {
    /// A message of `content`, with no id of its own.
    pub fn new(content: Vec<ContentBlock>) -> Self {
        Self { content, id: None }
    }

    /// The same message known by `id`.
    #[must_use]
    pub fn with_id(mut self, id: Option<String>) -> Self {
        self.id = id;
        self
    }
}

/// A model's message: the text of one step and the tool calls it asked for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct AiMessage {
    /// Reply content, in order.
    pub content: Vec<ContentBlock>,
    /// Reasoning content, in order (replayed as thought chunks).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub thoughts: Vec<ContentBlock>,
    /// The tool calls this step asked for.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCallRequest>,
}

/// One tool call a model asked for, as it was announced.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCallRequest {
    /// The call's id.
    pub call_id: ToolCallId,
    /// A human-readable title (the tool's name or a description of the action).
    pub name: String,
    /// The kind of tool, used by clients to pick an icon.
    pub kind: ToolKind,
    /// The raw input.
    #[serde(default)]
    pub input: Value,
    /// The files (and lines) it works on.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub locations: Vec<ToolCallLocation>,
    /// Its programmatic name (`name` on the wire, beside the title), if it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_name: Option<String>,
}

impl ToolCallRequest {
    /// A request with no locations and no programmatic name.
    pub fn new(call_id: impl Into<ToolCallId>, name: impl Into<String>, kind: ToolKind, input: Value) -> Self {
        Self { call_id: call_id.into(), name: name.into(), kind, input, locations: Vec::new(), tool_name: None }
    }
}

/// The result of one tool call: how it ended, and what it showed last (what `session/load`
/// replays). Fields that did not change from the [`ToolCallRequest`] stay absent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolResultMessage {
    /// The call this answers.
    pub call_id: ToolCallId,
    /// Its final content: content blocks, diffs, terminals (older journals hold bare blocks).
    #[serde(with = "super::tool_content::list")]
    pub output: Vec<ToolCallContent>,
    /// Whether the call failed.
    pub is_error: bool,
    /// Its final title, kind, locations, raw input and output, where they changed since it was
    /// announced — written inline.
    #[serde(flatten)]
    pub changes: Box<ToolCallChanges>,
}

impl ToolResultMessage {
    /// A result with `output` and nothing else changed.
    pub fn new(call_id: impl Into<ToolCallId>, output: Vec<ToolCallContent>, is_error: bool) -> Self {
        Self { call_id: call_id.into(), output, is_error, changes: Box::default() }
    }
}

/// One message of a conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    /// From the user.
    User(UserMessage),
    /// From the model.
    Ai(AiMessage),
    /// A tool's result.
    ToolResult(ToolResultMessage),
}

/// A text content block.
pub fn text_block(text: impl Into<String>) -> ContentBlock {
    ContentBlock::Text(crate::acp::TextContent::new(text))
}

/// The concatenated text of the text blocks in `content`.
pub fn plain_text(content: &[ContentBlock]) -> String {
    let mut out = String::new();
    for block in content {
        if let ContentBlock::Text(t) = block {
            out.push_str(&t.text);
        }
    }
    out
}
