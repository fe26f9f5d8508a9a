//! The tool calls of one turn as they stand: what each was announced with, and what it shows
//! now, so that every change becomes the right event and a finished call is journaled as it
//! ended (what `session/load` replays).
//!
//! The JSON form the bindings' hosts write a call or a change in is [`ToolCallFields`](crate::ToolCallFields)'s.

use std::collections::HashMap;

use serde_json::Value;

use acp_facade::acp::{ToolCall, ToolCallContent, ToolCallLocation, ToolCallStatus, ToolCallUpdateFields, ToolKind};
use acp_facade::harness::{
    EventKind, ToolCallChanges, ToolCallDetails, ToolCallId, ToolCallRequest, ToolResultMessage,
};

/// A tool call to announce (`tool_call`): everything but its id, which the turn assigns.
///
/// ```
/// use acp_facade::acp::{ToolCallStatus, ToolKind};
/// use acp_facade_runner::ToolCallSpec;
///
/// let spec = ToolCallSpec::new("Edit src/main.rs")
///     .kind(ToolKind::Edit)
///     .status(ToolCallStatus::InProgress)
///     .location("/work/src/main.rs", Some(12))
///     .diff("/work/src/main.rs", Some("old\n".into()), "new\n");
/// assert_eq!(spec.locations.len(), 1);
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ToolCallSpec {
    /// Human-readable title.
    pub title: String,
    /// Programmatic name (`name`, beside the title: the tool as the model calls it), if any.
    pub name: Option<String>,
    /// Kind of tool (picks the client's icon); `other` by default.
    pub kind: ToolKind,
    /// The status it starts in; `pending` by default.
    pub status: ToolCallStatus,
    /// Content: content blocks, diffs, terminals.
    pub content: Vec<ToolCallContent>,
    /// The files (and lines) it works on.
    pub locations: Vec<ToolCallLocation>,
    /// Raw input (`rawInput`); `null` (left out on the wire) by default.
    pub raw_input: Value,
    /// Raw output (`rawOutput`), if any yet.
    pub raw_output: Option<Value>,
}

impl ToolCallSpec {
    /// A pending call of kind `other` titled `title`, with nothing else.
    pub fn new(title: impl Into<String>) -> Self {
        Self {
            title: title.into(),
            name: None,
            kind: ToolKind::Other,
            status: ToolCallStatus::Pending,
            content: Vec::new(),
            locations: Vec::new(),
            raw_input: Value::Null,
            raw_output: None,
        }
    }

    /// Sets the programmatic name (`name` on the wire).
    #[must_use]
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Sets the kind.
    #[must_use]
    pub fn kind(mut self, kind: ToolKind) -> Self {
        self.kind = kind;
        self
    }

    /// Sets the initial status.
    #[must_use]
    pub fn status(mut self, status: ToolCallStatus) -> Self {
        self.status = status;
        self
    }

    /// Adds content (a content block, a [`Diff`](acp_facade::acp::Diff), a terminal's
    /// [`Terminal::content`](acp_facade::client::Terminal::content), …).
    #[must_use]
    pub fn content(mut self, content: impl Into<ToolCallContent>) -> Self {
        self.content.push(content.into());
        self
    }

    /// Adds a text block.
    #[must_use]
    pub fn text(self, text: impl Into<String>) -> Self {
        self.content(acp_facade::acp::ContentBlock::from(text.into()))
    }

    /// Adds a diff of the file at `path` (absolute): `old_text` `None` for a new file.
    #[must_use]
    pub fn diff(
        self,
        path: impl Into<std::path::PathBuf>,
        old_text: Option<String>,
        new_text: impl Into<String>,
    ) -> Self {
        self.content(acp_facade::acp::Diff::new(path, new_text).old_text(old_text))
    }

    /// Adds a location: a file (absolute) and optionally a 1-based line.
    #[must_use]
    pub fn location(mut self, path: impl Into<std::path::PathBuf>, line: Option<u32>) -> Self {
        self.locations.push(ToolCallLocation::new(path).line(line));
        self
    }

    /// Sets the raw input.
    #[must_use]
    pub fn raw_input(mut self, raw_input: Value) -> Self {
        self.raw_input = raw_input;
        self
    }

    /// Sets the raw output.
    #[must_use]
    pub fn raw_output(mut self, raw_output: Value) -> Self {
        self.raw_output = Some(raw_output);
        self
    }
}

/// One call: as announced, and as it stands.
struct Tracked {
    announced: ToolCallRequest,
    now: ToolCall,
}

/// The tool calls of a turn.
#[derive(Default)]
pub(crate) struct ToolCalls {
    calls: HashMap<ToolCallId, Tracked>,
}

/// What one change of a tool call becomes.
pub(crate) struct Change {
    /// The event to publish.
    pub(crate) event: EventKind,
    /// The result to journal with the step, when the change finished the call.
    pub(crate) result: Option<ToolResultMessage>,
}

impl ToolCalls {
    /// Records a new call `id` announced with `spec`: its request (for the step) and its event.
    pub(crate) fn announce(&mut self, id: &ToolCallId, spec: ToolCallSpec) -> (ToolCallRequest, EventKind) {
        let ToolCallSpec { title, name, kind, status, content, locations, raw_input, raw_output } = spec;
        let mut announced = ToolCallRequest::new(id.clone(), title.clone(), kind, raw_input.clone());
        announced.locations.clone_from(&locations);
        announced.tool_name.clone_from(&name);
        let now = ToolCall::new(id.as_str().to_owned(), title.clone())
            .name(name.clone())
            .kind(kind)
            .status(status)
            .content(content.clone())
            .locations(locations.clone())
            .raw_input(raw_input.clone())
            .raw_output(raw_output.clone());
        self.calls.insert(id.clone(), Tracked { announced: announced.clone(), now });
        let details = ToolCallDetails {
            input: raw_input,
            tool_name: name,
            status: (status != ToolCallStatus::Pending).then_some(status),
            content,
            locations,
            raw_output,
        };
        let event = EventKind::ToolCallStarted { call_id: id.clone(), name: title, kind, details: Box::new(details) };
        (announced, event)
    }

    /// Applies `fields` to call `id`: a progress event, or — when the status becomes `completed`
    /// or `failed` — a completion event and the call's result as it ended.
    pub(crate) fn update(&mut self, id: &ToolCallId, fields: ToolCallUpdateFields) -> Change {
        let finished = matches!(fields.status, Some(ToolCallStatus::Completed | ToolCallStatus::Failed));
        if let Some(tracked) = self.calls.get_mut(id) {
            tracked.now.update(fields.clone());
        }
        let ToolCallUpdateFields { status, title, name, kind, content, locations, raw_input, raw_output, .. } = fields;
        let changes = Box::new(ToolCallChanges { title, tool_name: name, kind, locations, raw_input, raw_output });
        if !finished {
            let event = EventKind::ToolCallProgress { call_id: id.clone(), status, content, changes };
            return Change { event, result: None };
        }
        let is_error = status == Some(ToolCallStatus::Failed);
        let result = if let Some(tracked) = self.calls.get(id) {
            ended(id, tracked, is_error)
        } else {
            let mut result = ToolResultMessage::new(id.clone(), content.clone().unwrap_or_default(), is_error);
            result.changes.clone_from(&changes);
            result
        };
        let event = EventKind::ToolCallCompleted {
            call_id: id.clone(),
            output: content.unwrap_or_default(),
            is_error,
            changes,
        };
        Change { event, result: Some(result) }
    }
}

/// The result of a finished call: its content, and what changed since it was announced.
fn ended(id: &ToolCallId, tracked: &Tracked, is_error: bool) -> ToolResultMessage {
    let (announced, now) = (&tracked.announced, &tracked.now);
    let mut result = ToolResultMessage::new(id.clone(), now.content.clone(), is_error);
    let changes = &mut result.changes;
    changes.title = (now.title != announced.name).then(|| now.title.clone());
    changes.tool_name = (now.name != announced.tool_name).then(|| now.name.clone()).flatten();
    changes.kind = (now.kind != announced.kind).then_some(now.kind);
    changes.locations = (now.locations != announced.locations).then(|| now.locations.clone());
    let input = now.raw_input.clone().unwrap_or(Value::Null);
    changes.raw_input = (input != announced.input).then_some(input);
    changes.raw_output.clone_from(&now.raw_output);
    result
}
