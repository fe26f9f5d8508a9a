//! Conversation content: the messages a turn consumes and produces.
//!
//! Content blocks are the ACP [`ContentBlock`] type itself, so nothing is
//! lost or guessed between a host's content and the wire.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::ids::ToolCallId;
use crate::acp::{ContentBlock, ToolKind};

/// A user's message: the prompt of a turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct UserMessage {
    /// The prompt's content blocks, as the client sent them.
    pub content: Vec<ContentBlock>,
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

/// One tool call a model asked for.
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
}

/// The result of one tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolResultMessage {
    /// The call this answers.
    pub call_id: ToolCallId,
    /// Output content.
    pub output: Vec<ContentBlock>,
    /// Whether the call failed.
    pub is_error: bool,
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
