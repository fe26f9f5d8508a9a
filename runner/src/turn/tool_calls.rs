//! The turn's tool calls: announcing one (`tool_call`) with any of its fields — kind, title,
//! status, content (content blocks, diffs, terminals), locations, raw input and output — and
//! changing any subset of them (`tool_call_update`); a change to `completed` or `failed` finishes
//! the call, which is then journaled as it ended and replayed so by `session/load` (less its
//! terminals, which only the live turn's client has; see `agent/replay/mod.rs`).
//!
//! The primary form is plain data: [`Turn::start_tool`] with a [`ToolCallSpec`] announces a call,
//! [`Turn::update_tool`] with ACP's [`ToolCallUpdateFields`] changes it (the same two calls as
//! Python's `start_tool` / `update_tool` and Node's `startTool` / `updateTool`). Everything else
//! here is a shorthand of those two, documented with what it stands for:
//!
//! - the builders [`Turn::tool_call`] (… [`ToolCallBuilder::start`]) and
//!   [`Turn::tool_call_update`] (… [`ToolCallUpdateBuilder::send`], `complete`, `fail`) build the
//!   spec or the fields step by step, for code that reads top to bottom;
//! - [`Turn::start_tool_call`], [`Turn::tool_progress`], [`Turn::complete_tool_call`] and
//!   [`Turn::fail_tool_call`] cover the common cases in one call.

use std::path::PathBuf;

use serde_json::Value;

use crate::turn::Turn;
use crate::turn::tool_state::ToolCallSpec;
use acp_facade::acp::{
    ContentBlock, Diff, ToolCallContent, ToolCallLocation, ToolCallStatus, ToolCallUpdateFields, ToolKind,
};
use acp_facade::harness::{EventClass, ToolCallId};

impl Turn {
    /// Announces a tool call (`tool_call`) with everything in `spec`; returns its id.
    pub async fn start_tool(&self, spec: ToolCallSpec) -> ToolCallId {
        let call_id = self.tool_call_id();
        let (request, event) =
            self.tools.lock().unwrap_or_else(std::sync::PoisonError::into_inner).announce(&call_id, spec);
        self.lock_step().tool_calls.push(request);
        self.emit(EventClass::Ephemeral, event).await;
        call_id
    }

    /// Changes a tool call (`tool_call_update`): every field set in `fields` replaces the
    /// call's (content and locations as whole lists). A status of `completed` or `failed`
    /// finishes the call: it is recorded with the current step as it ended.
    pub async fn update_tool(&self, call_id: &ToolCallId, fields: ToolCallUpdateFields) {
        let change = self.tools.lock().unwrap_or_else(std::sync::PoisonError::into_inner).update(call_id, fields);
        if let Some(result) = change.result {
            self.lock_step().results.push(result);
        }
        self.emit(EventClass::Ephemeral, change.event).await;
    }

    /// Starts building a tool call titled `title`; [`ToolCallBuilder::start`] announces it.
    /// A shorthand of [`Turn::start_tool`]: it builds the [`ToolCallSpec`] step by step.
    ///
    /// ```no_run
    /// # async fn demo(turn: &acp_facade_runner::Turn) {
    /// use acp_facade::acp::{ToolCallStatus, ToolKind};
    /// use serde_json::json;
    ///
    /// let call = turn
    ///     .tool_call("edit src/lib.rs")
    ///     .kind(ToolKind::Edit)
    ///     .status(ToolCallStatus::InProgress)
    ///     .location("/work/src/lib.rs", Some(1))
    ///     .diff("/work/src/lib.rs", Some("old\n".into()), "new\n")
    ///     .start()
    ///     .await;
    /// turn.tool_call_update(&call).raw_output(json!({"ok": true})).complete().await;
    /// # }
    /// ```
    pub fn tool_call(&self, title: impl Into<String>) -> ToolCallBuilder<'_> {
        ToolCallBuilder { turn: self, spec: ToolCallSpec::new(title) }
    }

    /// Starts building a change of tool call `call_id`; [`ToolCallUpdateBuilder::send`] sends it.
    /// A shorthand of [`Turn::update_tool`]: it builds the [`ToolCallUpdateFields`] step by step.
    pub fn tool_call_update(&self, call_id: &ToolCallId) -> ToolCallUpdateBuilder<'_> {
        ToolCallUpdateBuilder { turn: self, call_id: call_id.clone(), fields: ToolCallUpdateFields::new() }
    }

    /// Announces a tool call (`tool_call`, status pending) titled `title`, of `kind`, with raw
    /// input `input`; returns its id. A shorthand of
    /// `start_tool(ToolCallSpec::new(title).kind(kind).raw_input(input))`.
    pub async fn start_tool_call(&self, title: impl Into<String>, kind: ToolKind, input: Value) -> ToolCallId {
        self.start_tool(ToolCallSpec::new(title).kind(kind).raw_input(input)).await
    }

    /// Reports progress of a tool call (`tool_call_update`): a new status and/or new content
    /// blocks (replacing earlier content). A shorthand of [`Turn::update_tool`] with
    /// `ToolCallUpdateFields::new().status(status).content(content)`.
    pub async fn tool_progress(
        &self,
        call_id: &ToolCallId,
        status: Option<ToolCallStatus>,
        content: Option<Vec<ContentBlock>>,
    ) {
        let content = content.map(|blocks| blocks.into_iter().map(ToolCallContent::from).collect::<Vec<_>>());
        self.update_tool(call_id, ToolCallUpdateFields::new().status(status).content(content)).await;
    }

    /// Finishes a tool call successfully (`tool_call_update`, status completed), with `output`
    /// as its content when not empty. A shorthand of [`Turn::update_tool`] with status
    /// `Completed` (and `output` as the content).
    pub async fn complete_tool_call(&self, call_id: &ToolCallId, output: Vec<ContentBlock>) {
        self.finish_tool_call(call_id, output, ToolCallStatus::Completed).await;
    }

    /// Finishes a tool call as failed (`tool_call_update`, status failed), with `output` as its
    /// content when not empty. A shorthand of [`Turn::update_tool`] with status `Failed` (and
    /// `output` as the content).
    pub async fn fail_tool_call(&self, call_id: &ToolCallId, output: Vec<ContentBlock>) {
        self.finish_tool_call(call_id, output, ToolCallStatus::Failed).await;
    }

    async fn finish_tool_call(&self, call_id: &ToolCallId, output: Vec<ContentBlock>, status: ToolCallStatus) {
        let mut fields = ToolCallUpdateFields::new().status(status);
        if !output.is_empty() {
            fields = fields.content(output.into_iter().map(ToolCallContent::from).collect::<Vec<_>>());
        }
        self.update_tool(call_id, fields).await;
    }
}

/// A tool call being built; see [`Turn::tool_call`]. Its setters are [`ToolCallSpec`]'s.
#[must_use = "a tool call is announced by `start`"]
pub struct ToolCallBuilder<'t> {
    turn: &'t Turn,
    spec: ToolCallSpec,
}

impl std::fmt::Debug for ToolCallBuilder<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolCallBuilder").field("spec", &self.spec).finish_non_exhaustive()
    }
}

impl ToolCallBuilder<'_> {
    fn map(mut self, f: impl FnOnce(ToolCallSpec) -> ToolCallSpec) -> Self {
        self.spec = f(self.spec);
        self
    }

    /// Sets the programmatic name (`name`, beside the title).
    pub fn name(self, name: impl Into<String>) -> Self {
        self.map(|s| s.name(name))
    }

    /// Sets the kind.
    pub fn kind(self, kind: ToolKind) -> Self {
        self.map(|s| s.kind(kind))
    }

    /// Sets the initial status (`pending` by default).
    pub fn status(self, status: ToolCallStatus) -> Self {
        self.map(|s| s.status(status))
    }

    /// Adds content: a content block, a [`Diff`], a terminal's
    /// [`Terminal::content`](acp_facade::client::Terminal::content).
    pub fn content(self, content: impl Into<ToolCallContent>) -> Self {
        self.map(|s| s.content(content))
    }

    /// Adds a text block.
    pub fn text(self, text: impl Into<String>) -> Self {
        self.map(|s| s.text(text))
    }

    /// Adds a diff of the file at `path` (absolute); `old_text` `None` for a new file.
    pub fn diff(self, path: impl Into<PathBuf>, old_text: Option<String>, new_text: impl Into<String>) -> Self {
        self.map(|s| s.diff(path, old_text, new_text))
    }

    /// Adds a location: a file (absolute), optionally a 1-based line.
    pub fn location(self, path: impl Into<PathBuf>, line: Option<u32>) -> Self {
        self.map(|s| s.location(path, line))
    }

    /// Sets the raw input.
    pub fn raw_input(self, raw_input: Value) -> Self {
        self.map(|s| s.raw_input(raw_input))
    }

    /// Sets the raw output.
    pub fn raw_output(self, raw_output: Value) -> Self {
        self.map(|s| s.raw_output(raw_output))
    }

    /// Announces the call; returns its id.
    pub async fn start(self) -> ToolCallId {
        self.turn.start_tool(self.spec).await
    }
}

/// A change of a tool call being built; see [`Turn::tool_call_update`]. Only the fields set are
/// sent; content and locations replace the call's whole lists.
#[must_use = "a change is sent by `send`, `complete` or `fail`"]
pub struct ToolCallUpdateBuilder<'t> {
    turn: &'t Turn,
    call_id: ToolCallId,
    fields: ToolCallUpdateFields,
}

impl std::fmt::Debug for ToolCallUpdateBuilder<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolCallUpdateBuilder")
            .field("call_id", &self.call_id)
            .field("fields", &self.fields)
            .finish_non_exhaustive()
    }
}

impl ToolCallUpdateBuilder<'_> {
    /// Sets the title.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.fields.title = Some(title.into());
        self
    }

    /// Sets the programmatic name.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.fields.name = Some(name.into());
        self
    }

    /// Sets the kind.
    pub fn kind(mut self, kind: ToolKind) -> Self {
        self.fields.kind = Some(kind);
        self
    }

    /// Sets the status.
    pub fn status(mut self, status: ToolCallStatus) -> Self {
        self.fields.status = Some(status);
        self
    }

    /// Adds to the new content (which replaces the call's).
    pub fn content(mut self, content: impl Into<ToolCallContent>) -> Self {
        self.fields.content.get_or_insert_with(Vec::new).push(content.into());
        self
    }

    /// Adds a text block to the new content.
    pub fn text(self, text: impl Into<String>) -> Self {
        self.content(ContentBlock::from(text.into()))
    }

    /// Adds a diff to the new content.
    pub fn diff(self, path: impl Into<PathBuf>, old_text: Option<String>, new_text: impl Into<String>) -> Self {
        self.content(Diff::new(path, new_text).old_text(old_text))
    }

    /// Clears the call's content.
    pub fn no_content(mut self) -> Self {
        self.fields.content = Some(Vec::new());
        self
    }

    /// Adds to the new locations (which replace the call's).
    pub fn location(mut self, path: impl Into<PathBuf>, line: Option<u32>) -> Self {
        self.fields.locations.get_or_insert_with(Vec::new).push(ToolCallLocation::new(path).line(line));
        self
    }

    /// Sets the raw input.
    pub fn raw_input(mut self, raw_input: Value) -> Self {
        self.fields.raw_input = Some(raw_input);
        self
    }

    /// Sets the raw output.
    pub fn raw_output(mut self, raw_output: Value) -> Self {
        self.fields.raw_output = Some(raw_output);
        self
    }

    /// Sends the change.
    pub async fn send(self) {
        self.turn.update_tool(&self.call_id, self.fields).await;
    }

    /// Sends the change with status `completed`: the call is finished.
    pub async fn complete(self) {
        self.status(ToolCallStatus::Completed).send().await;
    }

    /// Sends the change with status `failed`: the call is finished.
    pub async fn fail(self) {
        self.status(ToolCallStatus::Failed).send().await;
    }
}
