//! Tool-call content in events and journals: the ACP [`ToolCallContent`] list, in a serde form
//! that journals written before it existed still decode.
//!
//! Earlier versions kept tool output as bare content blocks (`{"type": "text", …}`); tool-call
//! content wraps them (`{"type": "content", "content": {…}}`) beside `diff` and `terminal`. The two
//! tag sets are disjoint, so an item decodes by its `type`: a content block becomes
//! [`ToolCallContent::Content`], a tool-call content item is taken as it is. Plain wrapped blocks
//! (no `_meta`) are written back bare, so what older versions wrote reads back byte for byte, and
//! older versions can read what is written now unless it holds a diff or a terminal.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use crate::acp::{ContentBlock, ToolCallContent};

/// The `type`s of tool-call content (every other `type` is a content block's).
const TOOL_CALL_CONTENT_TYPES: [&str; 3] = ["content", "diff", "terminal"];

/// One item, written as the older bare block when it is a plain wrapped block.
#[derive(Serialize)]
#[serde(untagged)]
enum Item<'a> {
    Block(&'a ContentBlock),
    Content(&'a ToolCallContent),
}

impl<'a> From<&'a ToolCallContent> for Item<'a> {
    fn from(content: &'a ToolCallContent) -> Self {
        match content {
            ToolCallContent::Content(wrapped) if wrapped.meta.is_none() => Item::Block(&wrapped.content),
            other => Item::Content(other),
        }
    }
}

fn decode_item<E: serde::de::Error>(value: Value) -> Result<ToolCallContent, E> {
    let is_tool_content =
        value.get("type").and_then(Value::as_str).is_some_and(|t| TOOL_CALL_CONTENT_TYPES.contains(&t));
    if is_tool_content {
        serde_json::from_value(value).map_err(E::custom)
    } else {
        serde_json::from_value::<ContentBlock>(value).map(ToolCallContent::from).map_err(E::custom)
    }
}

/// `#[serde(with = "tool_content::list")]` for `Vec<ToolCallContent>`.
pub mod list {
    use super::{Deserialize, Deserializer, Item, Serializer, ToolCallContent, Value, decode_item};

    /// Writes the list, plain blocks bare.
    pub fn serialize<S: Serializer>(items: &[ToolCallContent], serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(items.iter().map(Item::from))
    }

    /// Reads a list of content blocks and tool-call content items.
    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<ToolCallContent>, D::Error> {
        Vec::<Value>::deserialize(deserializer)?.into_iter().map(decode_item).collect()
    }
}

/// `#[serde(with = "tool_content::option")]` for `Option<Vec<ToolCallContent>>` (`null` and an
/// absent field are `None`; use it with `#[serde(default)]`).
pub mod option {
    use super::{Deserialize, Deserializer, Item, Serialize, Serializer, ToolCallContent, Value, decode_item};

    /// Writes `null` or the list, plain blocks bare.
    pub fn serialize<S: Serializer>(items: &Option<Vec<ToolCallContent>>, serializer: S) -> Result<S::Ok, S::Error> {
        items.as_ref().map(|items| items.iter().map(Item::from).collect::<Vec<_>>()).serialize(serializer)
    }

    /// Reads `null` or a list of content blocks and tool-call content items.
    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Vec<ToolCallContent>>, D::Error> {
        Option::<Vec<Value>>::deserialize(deserializer)?
            .map(|items| items.into_iter().map(decode_item).collect())
            .transpose()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::acp::{Diff, Terminal};

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Holder {
        #[serde(with = "list")]
        items: Vec<ToolCallContent>,
        #[serde(default, with = "option")]
        maybe: Option<Vec<ToolCallContent>>,
    }

    #[test]
    fn older_bare_blocks_read_as_content_and_are_written_back_bare() {
        let old = json!({"items": [{"type": "text", "text": "hi"}], "maybe": [{"type": "text", "text": "x"}]});
        let holder: Holder = serde_json::from_value(old.clone()).unwrap();
        assert_eq!(holder.items, vec![ToolCallContent::from(ContentBlock::from("hi"))]);
        assert_eq!(serde_json::to_value(&holder).unwrap(), old);
        let absent: Holder = serde_json::from_value(json!({"items": []})).unwrap();
        assert_eq!(absent.maybe, None);
        let null: Holder = serde_json::from_value(json!({"items": [], "maybe": null})).unwrap();
        assert_eq!(null.maybe, None);
    }

    #[test]
    fn every_kind_of_tool_call_content_round_trips() {
        let items = vec![
            ToolCallContent::from(ContentBlock::from("plain")),
            ToolCallContent::Content(
                crate::acp::Content::new("with meta").meta(serde_json::Map::from_iter([("k".to_owned(), json!(1))])),
            ),
            ToolCallContent::Diff(Diff::new("/a/b.rs", "new\n").old_text("old\n".to_owned())),
            ToolCallContent::Terminal(Terminal::new("term-1")),
        ];
        let holder = Holder { items: items.clone(), maybe: Some(items) };
        let text = serde_json::to_value(&holder).unwrap();
        assert_eq!(text["items"][0], json!({"type": "text", "text": "plain"}));
        assert_eq!(text["items"][1]["type"], "content");
        assert_eq!(
            text["items"][2],
            json!({"type": "diff", "path": "/a/b.rs", "oldText": "old\n", "newText": "new\n"})
        );
        assert_eq!(text["items"][3], json!({"type": "terminal", "terminalId": "term-1"}));
        assert_eq!(serde_json::from_value::<Holder>(text).unwrap(), holder);
    }

    #[test]
    fn a_malformed_item_is_an_error() {
        assert!(serde_json::from_value::<Holder>(json!({"items": [{"type": "diff"}]})).is_err());
        assert!(serde_json::from_value::<Holder>(json!({"items": [{"type": "nonsense"}]})).is_err());
        assert!(serde_json::from_value::<Holder>(json!({"items": [7]})).is_err());
    }
}
