//! A tool call's fields as code in another language writes them: one plain object in ACP's wire
//! form (`title`, `name`, `kind`, `status`, `content`, `locations`, `rawInput`, `rawOutput`), read
//! strictly — an unknown field or an invalid value is an error naming it, never dropped — then
//! turned into a [`ToolCallSpec`] to announce a call or into ACP's [`ToolCallUpdateFields`] to
//! change one. The bindings' `Turn` objects use it, so that both read the same object the same way.
//!
//! (ACP's own `ToolCallUpdateFields` deserialises leniently, as a client must: a misspelt kind
//! would silently become "unchanged". A host's mistake should be told instead.)

use serde::Deserialize;
use serde_json::Value;

use crate::turn::tool_state::ToolCallSpec;
use acp_facade::acp::{ToolCallContent, ToolCallLocation, ToolCallStatus, ToolCallUpdateFields, ToolKind};

/// The fields of a tool call, each optional, in ACP's wire form (camelCase).
///
/// ```
/// use acp_facade_runner::ToolCallFields;
/// use serde_json::json;
///
/// let fields: ToolCallFields = serde_json::from_value(json!({
///     "title": "edit a.rs", "kind": "edit", "status": "in_progress",
///     "locations": [{"path": "/w/a.rs", "line": 1}],
///     "content": [{"type": "diff", "path": "/w/a.rs", "oldText": "old\n", "newText": "new\n"}],
/// }))
/// .unwrap();
/// let spec = fields.into_spec().unwrap();
/// assert_eq!((spec.locations.len(), spec.content.len()), (1, 1));
/// assert!(serde_json::from_value::<ToolCallFields>(json!({"kind": "edti"})).is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[non_exhaustive]
pub struct ToolCallFields {
    /// Human-readable title (required to announce a call).
    #[serde(default)]
    pub title: Option<String>,
    /// Programmatic name (the tool as the model calls it), shown beside the title.
    #[serde(default)]
    pub name: Option<String>,
    /// Kind of tool.
    #[serde(default, deserialize_with = "known_kind")]
    pub kind: Option<ToolKind>,
    /// Status.
    #[serde(default)]
    pub status: Option<ToolCallStatus>,
    /// Content: content blocks (bare, or wrapped as `{"type": "content", "content": block}`),
    /// diffs, terminals; a change replaces the whole list.
    #[serde(default, with = "acp_facade::harness::tool_content::option")]
    pub content: Option<Vec<ToolCallContent>>,
    /// The files (and lines) it works on; a change replaces the whole list.
    #[serde(default)]
    pub locations: Option<Vec<ToolCallLocation>>,
    /// Raw input.
    #[serde(default)]
    pub raw_input: Option<Value>,
    /// Raw output.
    #[serde(default)]
    pub raw_output: Option<Value>,
}

/// A tool kind ACP names: ACP's `ToolKind` reads any other string as `other`, which would hide a
/// host's typo.
fn known_kind<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<ToolKind>, D::Error> {
    let Some(name) = Option::<String>::deserialize(deserializer)? else { return Ok(None) };
    let kind: ToolKind = serde_json::from_value(Value::String(name.clone())).map_err(serde::de::Error::custom)?;
    if serde_json::to_value(kind).ok().as_ref().and_then(Value::as_str) == Some(name.as_str()) {
        Ok(Some(kind))
    } else {
        Err(serde::de::Error::custom(format_args!("unknown tool kind `{name}`")))
    }
}

impl ToolCallFields {
    /// The call to announce; absent fields take [`ToolCallSpec::new`]'s defaults. Fails when
    /// there is no title.
    pub fn into_spec(self) -> Result<ToolCallSpec, &'static str> {
        let Self { title, name, kind, status, content, locations, raw_input, raw_output } = self;
        let mut spec = ToolCallSpec::new(title.ok_or("a tool call needs a `title`")?);
        spec.name = name;
        spec.kind = kind.unwrap_or(spec.kind);
        spec.status = status.unwrap_or(spec.status);
        spec.content = content.unwrap_or_default();
        spec.locations = locations.unwrap_or_default();
        spec.raw_input = raw_input.unwrap_or(Value::Null);
        spec.raw_output = raw_output;
        Ok(spec)
    }

    /// The change to send: every field present replaces the call's.
    pub fn into_update(self) -> ToolCallUpdateFields {
        let Self { title, name, kind, status, content, locations, raw_input, raw_output } = self;
        ToolCallUpdateFields::new()
            .title(title)
            .name(name)
            .kind(kind)
            .status(status)
            .content(content)
            .locations(locations)
            .raw_input(raw_input)
            .raw_output(raw_output)
    }
}
