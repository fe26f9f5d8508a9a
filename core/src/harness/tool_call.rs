//! The parts of a tool call beyond its id, title and kind — kept apart (and boxed in events) so
//! that the events of the streaming path stay as small as they were.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::acp::{ToolCallContent, ToolCallLocation, ToolCallStatus, ToolKind};

/// What a tool call is announced with besides its id, title and kind.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ToolCallDetails {
    /// Raw input (`rawInput`; `null` is left out on the wire). Always written, as before the
    /// other fields existed.
    #[serde(default)]
    pub input: Value,
    /// Its programmatic name (`name`, beside the human-readable title), if the host gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_name: Option<String>,
    /// The status it starts in; `pending` when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<ToolCallStatus>,
    /// Its content so far: content blocks, diffs, terminals.
    #[serde(default, skip_serializing_if = "Vec::is_empty", with = "super::tool_content::list")]
    pub content: Vec<ToolCallContent>,
    /// The files (and lines) it works on.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub locations: Vec<ToolCallLocation>,
    /// Raw output (`rawOutput`), if any yet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_output: Option<Value>,
}

/// Fields of a tool call that changed; each one present replaces the call's (`locations` as a
/// whole list). Status and content, which changed before this existed, live beside it.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ToolCallChanges {
    /// The new title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The new programmatic name (`name`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_name: Option<String>,
    /// The new kind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<ToolKind>,
    /// The new locations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub locations: Option<Vec<ToolCallLocation>>,
    /// The new raw input.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_input: Option<Value>,
    /// The new raw output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_output: Option<Value>,
}

impl ToolCallChanges {
    /// Whether nothing changed.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}
